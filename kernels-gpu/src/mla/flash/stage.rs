//! Step 1, the staging (Thread mapping in `flash`'s docs): the chunk's rows and the queries
//! copied into shared memory by `cp.async`.

use super::*;

/// Step 1, the rows: the chunk's rows into `rows` by `cp.async`, not yet committed; through L1,
/// so that a row gathered many times over (padding clamped onto one row) is read from L2 once an
/// SM, not once a slot from one L2 slice.
///
/// # Safety
/// All threads of the block call it; the pointers hold the kernel's extents.
#[inline(always)]
pub(super) unsafe fn stage_rows(
    (cache, idx): (*const F32x4, *const i32),
    b: Block,
    rows: Shared<f32>,
    (r4, pool): (u32, i32),
) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let d4 = b.kv_rank / 4 + r4;
    let staged = b.stride / 4 - 1;
    // The warp's rows `warp + WARPS * i`: every index loaded before the first copy (one round
    // trip, not one a row); a slot past `n_slots` reads the last slot's index and copies nothing.
    let first = b.token as usize * b.n_slots as usize;
    let slots: [u32; ROWS_PER_WARP] = core::array::from_fn(|i| b.s0 + warp + WARPS * i as u32);
    let found: [i32; ROWS_PER_WARP] = core::array::from_fn(|i| {
        load_nc_i32(idx.add(first + slots[i].min(b.n_slots - 1) as usize))
    });
    unroll::<ROWS_PER_WARP>(|i| {
        let live = slots[i] < b.n_slots;
        let src = cache.add(found[i].max(0).min(pool - 1) as usize * d4 as usize);
        let dst = rows.add((slots[i] - b.s0) * b.stride).cast::<F32x4>();
        let mut k = lane;
        while k < staged {
            let copy = live && k < d4;
            let from = if copy { src.add(k as usize) } else { cache };
            cp_async_ca_16_zfill(copy, dst.add(k), from.cast());
            k += 32;
        }
    });
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
    work: Shared<f32>,
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
        let dst = work.add(h * b.stride).cast::<F32x4>();
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
            cp_async_16_zfill(copy, dst.add(k), from.cast());
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
