//! Step 3, the weighted sum (Thread mapping in `attn`'s docs): each warp's partials over its
//! slots, then their sum in warp order.

use super::*;

/// This warp's partial of step 3 for the output chunk `chunk` (if `live`): its slots
/// `warp + WARPS * j` in ascending order, `SLOTS_PER_TRIP` rows loaded before any is used.
///
/// # Safety
/// The softmax numerators are in `sm.scores`, the slots' rows in `sm.rows`; `chunk` is a latent
/// chunk of the rows when `live`.
#[inline(always)]
unsafe fn warp_partial<const HEADS_PER_BLOCK: usize, const SLOTS_PER_TRIP: usize>(
    g: Gather,
    sm: Smem<HEADS_PER_BLOCK>,
    chunk: u32,
    live: bool,
) -> [F32x4; HEADS_PER_BLOCK] {
    let mut a = [F32x4::default(); HEADS_PER_BLOCK];
    let mut first = thread_idx_x() / 32;
    while first < g.n_slots {
        let slot = |s: usize| first + WARPS * s as u32;
        let mut rows = [F32x4::default(); SLOTS_PER_TRIP];
        unroll::<SLOTS_PER_TRIP>(|s| {
            if slot(s) < g.n_slots && live {
                let row = g.row(sm.rows.add(slot(s)).load());
                rows[s] = load_nc(row.add(chunk as usize));
            }
        });
        unroll::<SLOTS_PER_TRIP>(|s| {
            if slot(s) < g.n_slots {
                let e = ld_heads::<HEADS_PER_BLOCK>(sm.slot(slot(s)));
                unroll::<HEADS_PER_BLOCK>(|h| a[h] = rows[s].mul_add(e[h], a[h]));
            }
        });
        first += WARPS * SLOTS_PER_TRIP as u32;
    }
    a
}

/// Step 3 for all `kv4` output chunks, a pass of [`PASS_CHUNKS`] at a time: every warp's
/// partials to shared memory, then one thread per (head, chunk) adds them in warp order, scales
/// by `inv` and stores.
///
/// # Safety
/// All threads of the block call it; `out` is the `[heads, kv4]` output of the block's heads.
#[inline(always)]
pub(super) unsafe fn weighted_sum<const HEADS_PER_BLOCK: usize, const SLOTS_PER_TRIP: usize>(
    g: Gather,
    sm: Smem<HEADS_PER_BLOCK>,
    out: *mut F32x4,
    heads: u32,
    kv4: u32,
) {
    let tid = thread_idx_x();
    let (warp, lane) = (tid / 32, lane_id());
    let hb = HEADS_PER_BLOCK as u32;
    let mut base = 0;
    while base < kv4 {
        let a =
            warp_partial::<HEADS_PER_BLOCK, SLOTS_PER_TRIP>(g, sm, base + lane, base + lane < kv4);
        unroll::<HEADS_PER_BLOCK>(|h| {
            let at = (warp * hb + h as u32) * PASS_CHUNKS + lane;
            sm.work.add(at).store(a[h]);
        });
        sync_threads();
        let (h, c) = (tid / PASS_CHUNKS, tid % PASS_CHUNKS);
        if h < heads && base + c < kv4 {
            let part = |w: u32| sm.work.add((w * hb + h) * PASS_CHUNKS + c).load();
            let mut sum = part(0);
            for w in 1..WARPS {
                sum += part(w);
            }
            *out.add((h * kv4 + base + c) as usize) = sum * sm.inv.add(h).load();
        }
        sync_threads();
        base += PASS_CHUNKS;
    }
}
