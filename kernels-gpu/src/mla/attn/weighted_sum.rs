//! Step 3, the weighted sum (Thread mapping in `attn`'s docs): each warp's partials over its
//! slots, then their sum in warp order.

use super::*;

/// `a + e * row` per head, each lane of `row` its own fused multiply-add (CUDA's `a.x += e *
/// row.x; ...`).
#[inline(always)]
fn fma_heads<const HB: usize>(e: [f32; HB], row: F32x4, a: &mut [F32x4; HB]) {
    unroll::<HB>(|h| {
        a[h] = F32x4 {
            x: fma(e[h], row.x, a[h].x),
            y: fma(e[h], row.y, a[h].y),
            z: fma(e[h], row.z, a[h].z),
            w: fma(e[h], row.w, a[h].w),
        }
    });
}

/// This warp's partial of step 3 for the output chunk `chunk` (if `live`): its slots
/// `warp + WARPS * j` in ascending order, `NS` rows loaded before any is used.
///
/// # Safety
/// The softmax numerators are in `sm.scores`, the slots' rows in `sm.rows`; `chunk` is a latent
/// chunk of the rows when `live`.
#[inline(always)]
unsafe fn warp_partial<const HB: usize, const NS: usize>(
    g: Gather,
    sm: Smem<HB>,
    chunk: u32,
    live: bool,
) -> [F32x4; HB] {
    let mut a = [F32x4::default(); HB];
    let mut first = thread_idx_x() / 32;
    while first < g.n_slots {
        let slot = |s: usize| first + WARPS * s as u32;
        let mut rows = [F32x4::default(); NS];
        unroll::<NS>(|s| {
            if slot(s) < g.n_slots && live {
                let row = g.row(ld_shared_u32(sm.rows + 4 * slot(s)));
                rows[s] = load_nc(row.add(chunk as usize));
            }
        });
        unroll::<NS>(|s| {
            if slot(s) < g.n_slots {
                fma_heads(ld_heads::<HB>(sm.slot(slot(s))), rows[s], &mut a);
            }
        });
        first += WARPS * NS as u32;
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
pub(super) unsafe fn weighted_sum<const HB: usize, const NS: usize>(
    g: Gather,
    sm: Smem<HB>,
    out: *mut F32x4,
    heads: u32,
    kv4: u32,
) {
    let tid = thread_idx_x();
    let (warp, lane) = (tid / 32, lane_id());
    let hb = HB as u32;
    let mut base = 0;
    while base < kv4 {
        let a = warp_partial::<HB, NS>(g, sm, base + lane, base + lane < kv4);
        unroll::<HB>(|h| {
            let at = (warp * hb + h as u32) * PASS_CHUNKS + lane;
            st_shared_v4(sm.work + 16 * at, a[h]);
        });
        sync_threads();
        let (h, c) = (tid / PASS_CHUNKS, tid % PASS_CHUNKS);
        if h < heads && base + c < kv4 {
            let part = |w: u32| ld_shared_v4(sm.work + 16 * ((w * hb + h) * PASS_CHUNKS + c));
            let mut sum = part(0);
            for w in 1..WARPS {
                let p = part(w);
                sum = F32x4 {
                    x: sum.x + p.x,
                    y: sum.y + p.y,
                    z: sum.z + p.z,
                    w: sum.w + p.w,
                };
            }
            let inv = ld_shared_f32(sm.inv + 4 * h);
            *out.add((h * kv4 + base + c) as usize) = F32x4 {
                x: sum.x * inv,
                y: sum.y * inv,
                z: sum.z * inv,
                w: sum.w * inv,
            };
        }
        sync_threads();
        base += PASS_CHUNKS;
    }
}
