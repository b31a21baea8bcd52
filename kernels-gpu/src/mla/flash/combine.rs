//! The combine: the sums of a token and head's chunks, folded in pairs, added into its output
//! (its order of operations is in `flash`'s docs).

use super::*;

/// Units whose statistics and sums a combine thread has in flight at once: four pairs either
/// way, eight of attn_flash's chunks or four of the Hopper entries' pairs.
#[cfg(target_arch = "nvptx64")]
const FOLD_BATCH: usize = 8;
#[cfg(target_arch = "nvptx64")]
const FOLD_BATCH_PAIRS: usize = 4;
/// Blocks an SM the pair entry declares: as many as its smaller state allows whole
/// (perf-notes, MLA r132).
#[cfg(target_arch = "nvptx64")]
const PAIRS_MIN_BLOCKS: u32 = 6;

#[cfg(target_arch = "nvptx64")]
crate::device::static_shared! {
    /// The combine's shared memory: each thread's batch of sums (slot `u` of thread `i` at
    /// `u * COMBINE_BLOCK + i`), then per group and column a `float4` and its `l`.
    fn combine_shared = FLASH_COMBINE_SHARED: b8[(COMBINE_BLOCK * (16 * FOLD_BATCH as u32 + 20)) as usize] as F32x4
}

#[cfg(target_arch = "nvptx64")]
crate::device::static_shared! {
    /// The same for the pair entry's batches.
    fn combine_pairs_shared = FLASH_COMBINE_PAIRS_SHARED: b8[(COMBINE_BLOCK * (16 * FOLD_BATCH_PAIRS as u32 + 20)) as usize] as F32x4
}

/// A pair of chunks' weights: the pair's maximum `m_p`, and each chunk's `expf(m - m_p)` (the
/// second 0 where the pair has one chunk). The combine's first step for attn_flash's chunks, and
/// the Hopper entries' before they store a pair: one function, so the two cannot drift apart.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) fn pair_weights(m0: f32, m1: f32, second: bool) -> (f32, f32, f32) {
    let mp = if second { max(m0, m1) } else { m0 };
    (mp, expf(m0 - mp), if second { expf(m1 - mp) } else { 0.0 })
}

/// A pair of chunks' `l` from their own and [`pair_weights`]' `w0`, `w1`: `l0 w0`, then the
/// second chunk's added with one `fma`. Shared by the combine and the Hopper entries, as
/// [`pair_weights`] is.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) fn pair_l((l0, w0): (f32, f32), (l1, w1): (f32, f32), second: bool) -> f32 {
    let lp = l0 * w0;
    if second {
        fma(w1, l1, lp)
    } else {
        lp
    }
}

/// A workspace's sums combined: `out` `[t, nh, kv_rank]` from its `o_part` and `ml`, as
/// `flash`'s docs say: thread `(group, column)` of a block folds the pairs of its group for one
/// `float4` column of one (token, head): the Hopper entries' pairs as stored where `P`
/// ([`Partials::Pairs`]), attn_flash's chunks two by two otherwise ([`Partials::Chunks`]).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn combine<const P: bool>(
    o_part: *const F32x4,
    ml: *const f32,
    out: *mut F32x4,
    nh: i32,
    kv_rank: i32,
    t: i32,
    n_slots: i32,
) {
    if P {
        launch_bounds::<COMBINE_BLOCK, PAIRS_MIN_BLOCKS>();
    }
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
    // The workspace's units (chunks, or pairs) and how many make a pair.
    let (pairs, span) = (pairs(n_slots as u32), if P { 1 } else { 2 });
    let (nh, units) = (
        heads.get() as usize,
        if P { pairs } else { chunks(n_slots as u32) },
    );
    // A unit's statistics and sums are `2 nh` floats and `nh kv4` float4s after the previous one's.
    let (stat_step, part_step) = (2 * nh, nh * kv4 as usize);
    let stats = ml.add(2 * (token as usize * units as usize * nh + h as usize));
    // Past the row for a column past it, and past the workspace for a unit past the group's
    // end: such addresses are formed, never read, hence `wrapping_add`.
    let part = o_part.wrapping_add(
        (token as usize * units as usize * nh + h as usize) * kv4 as usize + c as usize,
    );
    let per = pairs.div_ceil(COMBINE_GROUPS) * span;
    let (first, end) = (group * per, units.min((group + 1) * per));
    let live_column = c < kv4;
    let (shared, per_batch) = if P {
        (combine_pairs_shared(), FOLD_BATCH_PAIRS)
    } else {
        (combine_shared(), FOLD_BATCH)
    };
    let staged = shared.add(thread_idx_x());
    let partials = shared.add(COMBINE_BLOCK * per_batch as u32);
    // A batch of this group's units from `k`: the sums copied into the thread's slots (zeros for
    // a column past the row) and the statistics loaded, all in flight together. The sums land in
    // shared memory without passing through the thread, so a thread's state stays small and more
    // blocks fit an SM. A unit past the group's end, or past the pair entry's four a batch,
    // copies and loads nothing and adds nothing.
    let issue = |k: u32| -> ([bool; FOLD_BATCH], [f32; FOLD_BATCH], [f32; FOLD_BATCH]) {
        let live: [bool; FOLD_BATCH] =
            core::array::from_fn(|u| u < per_batch && k + (u as u32) < end);
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
    // M: each warp's lanes take the units `lane + 32 i`, then the warp's maximum (no barrier:
    // every warp finds the same M).
    let mut m = f32::NEG_INFINITY;
    let mut k = lane_id();
    while k < units {
        m = max(m, ld_nc_f32(stats.add(k as usize * stat_step)));
        k += 32;
    }
    let m = warp_max(m);
    // This group's pairs in order, a batch at a time (a thread reads only its own copies; a
    // batch holds whole pairs, as `first` and the batch are even).
    let (mut l, mut a) = (0.0f32, F32x4::default());
    let mut k = first;
    loop {
        let (live, ms, ls) = batch;
        cp_async_wait_group::<0>();
        let sum = |u: usize| staged.add(u as u32 * COMBINE_BLOCK).load();
        unroll::<FOLD_BATCH>(|u| {
            if u % span as usize != 0 || !live[u] {
                return;
            }
            let (mp, lp, op) = if P {
                (ms[u], ls[u], sum(u))
            } else {
                let second = live[u + 1];
                let (mp, w0, w1) = pair_weights(ms[u], ms[u + 1], second);
                let lp = pair_l((ls[u], w0), (ls[u + 1], w1), second);
                let op = sum(u) * w0;
                (
                    mp,
                    lp,
                    if second {
                        sum(u + 1).mul_add(w1, op)
                    } else {
                        op
                    },
                )
            };
            let w = expf(mp - m);
            l = fma(w, lp, l);
            a = op.mul_add(w, a);
        });
        k += per_batch as u32;
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

variants! {
    /// The sums of a flash workspace combined: `out` `[t, nh, kv_rank]` from its `o_part` and
    /// `ml`, as `flash`'s docs say.
    ///
    /// # Launch
    /// grid [`combine_grid`]`(t, nh, kv_rank)`, block [`COMBINE_BLOCK`], no dynamic shared
    /// memory; the same `nh`, `kv_rank`, `t` and `n_slots` as the flash launch that wrote the
    /// workspace, and the entry of what it wrote ([`Partials`]).
    ///
    /// # Safety
    /// The buffers hold the extents above, and the flash launch has finished.
    combine(
        o_part: *const F32x4,
        ml: *const f32,
        out: *mut F32x4,
        nh: i32,
        kv_rank: i32,
        t: i32,
        n_slots: i32,
    ) for Combine: Partials {
        mla_attn_flash_combine = Partials::Chunks => [false];
        mla_attn_flash_combine_pairs = Partials::Pairs => [true];
    }
}
