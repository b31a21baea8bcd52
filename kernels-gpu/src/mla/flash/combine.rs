//! The combine: the chunks' sums of a token and head added into its output (its order of
//! operations is in `flash`'s docs).

use super::*;
use crate::kernel;

/// Chunks whose statistics and sums a combine thread has in flight at once.
#[cfg(target_arch = "nvptx64")]
const FOLD_BATCH: usize = 8;

#[cfg(target_arch = "nvptx64")]
crate::device::static_shared! {
    /// The combine's shared memory: each thread's batch of sums (slot `u` of thread `i` at
    /// `u * COMBINE_BLOCK + i`), then per chunk group and column a `float4` and its `l`.
    fn combine_shared = FLASH_COMBINE_SHARED: b8[(COMBINE_BLOCK * (16 * FOLD_BATCH as u32 + 20)) as usize] as F32x4
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
    let (nh, n_chunks) = (heads.get() as usize, chunks(n_slots as u32));
    // A chunk's statistics and sums are `2 nh` floats and `nh kv4` float4s after the previous one's.
    let (stat_step, part_step) = (2 * nh, nh * kv4 as usize);
    let stats = ml.add(2 * (token as usize * n_chunks as usize * nh + h as usize));
    // Past the row for a column past it, and past the workspace for a chunk past the group's
    // end: such addresses are formed, never read, hence `wrapping_add`.
    let part = o_part.wrapping_add(
        (token as usize * n_chunks as usize * nh + h as usize) * kv4 as usize + c as usize,
    );
    let per = n_chunks.div_ceil(COMBINE_GROUPS);
    let (first, end) = (group * per, n_chunks.min((group + 1) * per));
    let live_column = c < kv4;
    let shared = combine_shared();
    let staged = shared.add(thread_idx_x());
    let partials = shared.add(COMBINE_BLOCK * FOLD_BATCH as u32);
    // A batch of this group's chunks from `k`: the sums copied into the thread's slots (zeros for
    // a column past the row) and the statistics loaded, all in flight together. The sums land in
    // shared memory without passing through the thread, so a thread's state stays small and more
    // blocks fit an SM. A chunk past the group's end copies and loads nothing and adds nothing.
    let issue = |k: u32| -> ([bool; FOLD_BATCH], [f32; FOLD_BATCH], [f32; FOLD_BATCH]) {
        let live: [bool; FOLD_BATCH] = core::array::from_fn(|u| k + (u as u32) < end);
        let (stats, part) = (
            stats.wrapping_add(k as usize * stat_step),
            part.wrapping_add(k as usize * part_step),
        );
        unroll::<FOLD_BATCH>(|u| {
            if live[u] {
                cp_async_16_zfill(
                    live_column,
                    staged.add(u as u32 * COMBINE_BLOCK),
                    part.wrapping_add(u * part_step).cast(),
                );
            }
        });
        cp_async_commit();
        let ms = core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.wrapping_add(u * stat_step)));
        let ls =
            core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.wrapping_add(u * stat_step + 1)));
        (live, ms, ls)
    };
    // The first batch is in flight while M is found: one round trip for both.
    let mut batch = issue(first);
    // M: each warp's lanes take the chunks `lane + 32 i`, then the warp's maximum (no barrier:
    // every warp finds the same M).
    let mut m = f32::NEG_INFINITY;
    let mut k = lane_id();
    while k < n_chunks {
        m = max(m, ld_nc_f32(stats.add(k as usize * stat_step)));
        k += 32;
    }
    let m = warp_max(m);
    // This group's chunks in order, a batch at a time (a thread reads only its own copies).
    let (mut l, mut a) = (0.0f32, F32x4::default());
    let mut k = first;
    loop {
        let (live, ms, ls) = batch;
        cp_async_wait_group::<0>();
        unroll::<FOLD_BATCH>(|u| {
            if live[u] {
                let w = expf(ms[u] - m);
                l = fma(w, ls[u], l);
                a = staged.add(u as u32 * COMBINE_BLOCK).load().mul_add(w, a);
            }
        });
        k += FOLD_BATCH as u32;
        if k >= end {
            break;
        }
        batch = issue(k);
    }
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
