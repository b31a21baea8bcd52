//! Step 2, the softmax (Thread mapping in `attn`'s docs).

use super::*;

/// Step 2: each head's softmax numerators `expf(s - max)` in place of its scores, and `1 /
/// sum` into `inv` (visible after the block's next barrier).
///
/// # Safety
/// All threads of the block call it; the scores are in `sm.scores`.
#[inline(always)]
pub(super) unsafe fn softmax<const HEADS_PER_BLOCK: usize>(
    sm: Smem<HEADS_PER_BLOCK>,
    n_slots: u32,
) {
    let tid = thread_idx_x();
    let (warp, lane) = (tid / 32, lane_id());
    let mut m = [f32::NEG_INFINITY; HEADS_PER_BLOCK];
    let mut i = tid;
    while i < n_slots {
        let s = ld_heads::<HEADS_PER_BLOCK>(sm.slot(i));
        unroll::<HEADS_PER_BLOCK>(|h| m[h] = max(m[h], s[h]));
        i += BLOCK;
    }
    unroll::<HEADS_PER_BLOCK>(|h| m[h] = warp_max(m[h]));
    let row = HEADS_PER_BLOCK as u32;
    if lane == 0 {
        st_heads(sm.warp_max.add(row * warp), m);
    }
    sync_threads();
    let mut m = ld_heads::<HEADS_PER_BLOCK>(sm.warp_max);
    for w in 1..WARPS {
        let other = ld_heads::<HEADS_PER_BLOCK>(sm.warp_max.add(row * w));
        unroll::<HEADS_PER_BLOCK>(|h| m[h] = max(m[h], other[h]));
    }
    let mut sum = [0.0f32; HEADS_PER_BLOCK];
    let mut i = tid;
    while i < n_slots {
        let s = ld_heads::<HEADS_PER_BLOCK>(sm.slot(i));
        let e: [f32; HEADS_PER_BLOCK] = core::array::from_fn(|h| expf(s[h] - m[h]));
        st_heads(sm.slot(i), e);
        unroll::<HEADS_PER_BLOCK>(|h| sum[h] += e[h]);
        i += BLOCK;
    }
    unroll::<HEADS_PER_BLOCK>(|h| sum[h] = warp_sum(sum[h]));
    if lane == 0 {
        st_heads(sm.warp_sum.add(row * warp), sum);
    }
    sync_threads();
    if tid < HEADS_PER_BLOCK as u32 {
        let mut total = sm.warp_sum.add(tid).load();
        for w in 1..WARPS {
            total += sm.warp_sum.add(row * w).add(tid).load();
        }
        sm.inv.add(tid).store(rcp(total));
    }
}
