//! Step 1, the staging (Thread mapping in `flash`'s docs): the chunk's rows and the queries
//! copied into shared memory by `cp.async`.

use super::*;

/// The k-steps `start..end` of score part `part` (of [`K_PARTS`]) of rows of `stride` floats;
/// empty where the row has fewer k-steps than parts.
#[inline(always)]
pub(super) fn part_steps(stride: u32, part: u32) -> (u32, u32) {
    let ksteps = stride / 8;
    let per = ksteps.div_ceil(K_PARTS);
    let start = (part * per).min(ksteps);
    (start, ksteps.min(start + per))
}

/// The k-steps of group `i` (of [`STAGE_GROUPS`]) of the part's k-steps `start..end`.
#[inline(always)]
pub(super) fn group_steps((start, end): (u32, u32), i: u32) -> (u32, u32) {
    let each = (end - start).div_ceil(STAGE_GROUPS);
    (
        (start + i * each).min(end),
        (start + (i + 1) * each).min(end),
    )
}

/// Step 1, the rows: the k-steps of this warp's score part for the 32 rows of its slot tiles, by
/// `cp.async` in [`STAGE_GROUPS`] committed groups of k-steps, so that its scores start on the
/// first group while the others are in flight. Each lane loads one row's clamped index; a slot
/// past `n_slots` reads the last slot's index and copies nothing.
///
/// # Safety
/// All threads of the block call it; the pointers hold the kernel's extents.
#[inline(always)]
pub(super) unsafe fn stage_rows(
    (cache, idx): (*const F32x4, *const i32),
    b: Block,
    rows: u32,
    (r4, pool): (u32, i32),
) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let d4 = b.kv_rank / 4 + r4;
    let r0 = warp / K_PARTS * TILE_ROWS;
    let slot = (b.s0 + r0 + lane).min(b.n_slots - 1) as usize;
    let found = load_nc_i32(idx.add(b.token as usize * b.n_slots as usize + slot))
        .max(0)
        .min(pool - 1);
    let steps = part_steps(b.stride, warp % K_PARTS);
    let mut i = 0;
    while i < STAGE_GROUPS {
        let (k0, k1) = group_steps(steps, i);
        // `float4`s of a row in the group; none where the part or the group is empty.
        let width = NonZeroU32::new(2 * (k1 - k0));
        let mut j = lane;
        while let Some(width) = width.filter(|w| j < TILE_ROWS * w.get()) {
            let (r, k) = (j / width, 2 * k0 + j % width);
            let row = shfl_idx(found, r);
            let copy = b.s0 + r0 + r < b.n_slots && k < d4;
            let from = if copy {
                cache.add(row as usize * d4 as usize + k as usize)
            } else {
                cache
            };
            cp_async_16_zfill(copy, rows + 4 * ((r0 + r) * b.stride + 4 * k), from.cast());
            j += 32;
        }
        cp_async_commit();
        i += 1;
    }
}

/// Waits for this warp's row group `i` (of [`STAGE_GROUPS`], committed by [`stage_rows`]).
///
/// # Safety
/// All 32 lanes of the warp call it.
#[inline(always)]
pub(super) unsafe fn rows_landed(i: u32) {
    const _: () = assert!(STAGE_GROUPS == 3);
    match i {
        0 => cp_async_wait_group::<2>(),
        1 => cp_async_wait_group::<1>(),
        _ => cp_async_wait_group::<0>(),
    }
    sync_warp();
}

/// Step 1, the queries: the pass's heads into `work` by `cp.async`, not yet committed (for a
/// block's later passes, during the previous pass's weighted sum).
///
/// # Safety
/// As [`stage_rows`], with nothing left to read in `work`.
#[inline(always)]
pub(super) unsafe fn stage_queries(
    (q_lat, q_pe): (*const F32x4, *const F32x4),
    b: Block,
    work: u32,
    r4: u32,
) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let kv4 = b.kv_rank / 4;
    let d4 = kv4 + r4;
    let staged = b.stride / 4 - 1;
    let mut h = warp;
    while h < b.heads {
        let live = b.h0 + h < b.nh;
        let head = b.token as usize * b.nh as usize + (b.h0 + h) as usize;
        let dst = work + 4 * h * b.stride;
        let mut k = lane;
        while k < staged {
            let copy = live && k < d4;
            let from = if !copy {
                q_lat
            } else if k < kv4 {
                q_lat.add(head * kv4 as usize + k as usize)
            } else {
                q_pe.add(head * r4 as usize + (k - kv4) as usize)
            };
            cp_async_16_zfill(copy, dst + 16 * k, from.cast());
            k += 32;
        }
        h += WARPS;
    }
}

/// Waits for this thread's copies, then for the block's.
///
/// # Safety
/// All threads of the block call it.
#[inline(always)]
pub(super) unsafe fn staged() {
    cp_async_wait_group::<0>();
    sync_threads();
}
