//! The combine: the chunks' sums of a token and head added into its output (its order of
//! operations is in `flash`'s docs).

use super::*;
use crate::kernel;

/// Chunks whose statistics and sums a combine thread loads at once.
#[cfg(target_arch = "nvptx64")]
const FOLD_BATCH: usize = 8;

#[cfg(target_arch = "nvptx64")]
crate::device::static_shared! {
    /// The combine's partial sums: per chunk group and column, a `float4` and its `l`.
    fn combine_partials = FLASH_COMBINE_PARTIALS: b8[(COMBINE_BLOCK * 20) as usize] as F32x4
}

/// The chunks of [`mla_attn_gathered_flash`] combined: `out` `[t, nh, kv_rank]` from its
/// `o_part` and `ml`, as `flash`'s docs say: thread `(group, column)` of a block folds the
/// chunks of its group for one `float4` column of one (token, head).
///
/// # Launch
/// grid [`combine_grid`]`(t, nh, kv_rank)`, block [`COMBINE_BLOCK`], no dynamic shared memory;
/// the same `nh`, `kv_rank`, `t` and `n_slots` as the flash launch that wrote the workspace.
///
/// # Safety
/// The buffers hold the extents above, and the flash launch has finished.
#[kernel]
pub unsafe fn mla_attn_flash_combine(
    o_part: *const F32x4,
    ml: *const f32,
    out: *mut F32x4,
    nh: i32,
    kv_rank: i32,
    t: i32,
    n_slots: i32,
) {
    // Launched as a programmatic dependent of the flash kernel: nothing of its workspace is read
    // before that kernel has finished; and the kernel after it may launch early in turn.
    crate::chain_entry();
    let kv4 = kv_rank as u32 / 4;
    // SAFETY: the launch has `kv_rank >= 4` and `nh >= 1`.
    let parts = NonZeroU32::new_unchecked(kv4.div_ceil(COMBINE_COLUMNS));
    let heads = NonZeroU32::new_unchecked(nh as u32);
    let th = block_idx_x() / parts;
    let (group, column) = (
        thread_idx_x() / COMBINE_COLUMNS,
        thread_idx_x() % COMBINE_COLUMNS,
    );
    let c = block_idx_x() % parts * COMBINE_COLUMNS + column;
    if th >= t as u32 * heads.get() {
        return;
    }
    let (token, h) = (th / heads, th % heads);
    let (nh, n_chunks) = (heads.get() as usize, chunks(n_slots as u32) as usize);
    let stats = ml.add(2 * (token as usize * n_chunks * nh + h as usize));
    // M: each warp's lanes take the chunks `lane + 32 i`, then the warp's maximum (no barrier:
    // every warp finds the same M).
    let mut m = f32::NEG_INFINITY;
    let mut k = lane_id() as usize;
    while k < n_chunks {
        m = max(m, ld_nc_f32(stats.add(2 * k * nh)));
        k += 32;
    }
    let m = warp_max(m);
    // This group's chunks in order, in batches whose loads are issued before any is used (a
    // batch past the group's end loads nothing and adds nothing).
    let per = n_chunks.div_ceil(COMBINE_GROUPS as usize);
    let (first, end) = (
        group as usize * per,
        n_chunks.min((group as usize + 1) * per),
    );
    let live_column = c < kv4;
    let part =
        o_part.add((token as usize * n_chunks * nh + h as usize) * kv4 as usize + c as usize);
    let (mut l, mut a) = (0.0f32, F32x4::default());
    let mut k = first;
    while k < end {
        let live: [bool; FOLD_BATCH] = core::array::from_fn(|u| k + u < end);
        let ms: [f32; FOLD_BATCH] =
            core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.add(2 * (k + u) * nh)));
        let ls: [f32; FOLD_BATCH] =
            core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.add(2 * (k + u) * nh + 1)));
        let os: [F32x4; FOLD_BATCH] = core::array::from_fn(|u| {
            load_nc_if(
                live[u] && live_column,
                part.add((k + u) * nh * kv4 as usize),
            )
        });
        unroll::<FOLD_BATCH>(|u| {
            if live[u] {
                let w = expf(ms[u] - m);
                l = fma(w, ls[u], l);
                a = os[u].mul_add(w, a);
            }
        });
        k += FOLD_BATCH;
    }
    let partials = combine_partials();
    let ls = partials.add(COMBINE_BLOCK).cast::<f32>();
    partials.add(thread_idx_x()).store(a);
    ls.add(thread_idx_x()).store(l);
    sync_threads();
    if group == 0 && live_column {
        unroll::<{ COMBINE_GROUPS as usize - 1 }>(|g| {
            let at = thread_idx_x() + (g as u32 + 1) * COMBINE_COLUMNS;
            a += partials.add(at).load();
            l += ls.add(at).load();
        });
        *out.add(th as usize * kv4 as usize + c as usize) = a * rcp(l);
    }
}
