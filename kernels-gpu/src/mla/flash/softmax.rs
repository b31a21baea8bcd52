//! Step 3, the softmax within the chunk (Thread mapping in `flash`'s docs).

use super::*;

/// Step 3 for head `h` of the block, by its 8 threads (`q` the thread's eighth of the chunk):
/// the chunk's numerators into `num`, and its `m`, `l` to `ml` (`[nh, 2]` of this token and
/// chunk).
///
/// # Safety
/// The 32 lanes of the calling warp call it together (4 heads), after [`score_partials`].
#[inline(always)]
pub(super) unsafe fn softmax(
    b: Block,
    (work, num): (Shared<f32>, Shared<f32>),
    ml: *mut f32,
    scale: f32,
    (h, q): (u32, u32),
) {
    let w = b.heads * S_STRIDE;
    let live = b.n_slots - b.s0;
    // The thread's eight partials of each part in two `float4` loads; each score's parts added
    // in part order.
    let at = work.add(h * S_STRIDE + 8 * q);
    let part = |p: u32| -> [f32; 8] {
        let pair = at.add(p * w).cast::<F32x4>();
        let (a, b) = (pair.load(), pair.add(1).load());
        [a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w]
    };
    let mut s = part(0);
    unroll::<{ K_PARTS as usize - 1 }>(|p| {
        let v = part(p as u32 + 1);
        unroll::<8>(|i| s[i] += v[i]);
    });
    let mut m = f32::NEG_INFINITY;
    unroll::<8>(|i| {
        s[i] *= scale;
        if 8 * q + (i as u32) < live {
            m = max(m, s[i]);
        }
    });
    m = group8_max_warp(m);
    let mut e = [0.0f32; 8];
    let mut l = 0.0f32;
    unroll::<8>(|i| {
        e[i] = if 8 * q + (i as u32) < live {
            expf(s[i] - m)
        } else {
            0.0
        };
        l += e[i];
    });
    let l = group8_sum(l);
    // In the weighted sum's k order: slots 0, 2, 4, 6, then 1, 3, 5, 7 (`load_b`).
    let dst = num.add(h * P_STRIDE + 8 * q).cast::<F32x4>();
    dst.store(F32x4 {
        x: e[0],
        y: e[2],
        z: e[4],
        w: e[6],
    });
    dst.add(1).store(F32x4 {
        x: e[1],
        y: e[3],
        z: e[5],
        w: e[7],
    });
    if q == 0 && b.h0 + h < b.nh {
        let out = ml.add(2 * (b.h0 + h) as usize);
        *out = m;
        *out.add(1) = l;
    }
}
