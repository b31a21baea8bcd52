//! Step 3, the softmax within the chunk (Thread mapping in `flash`'s docs).

use super::*;

/// Step 3 for head `h` of the block, by its 16 threads (`q` the thread's sixteenth of the chunk):
/// the chunk's numerators into `num`, and its `m`, `l` to `ml` (`[nh, 2]` of this token and
/// chunk).
///
/// # Safety
/// The 32 lanes of the calling warp call it together (2 heads), after [`score_partials`].
#[inline(always)]
pub(super) unsafe fn softmax(
    b: Block,
    (work, num): (Shared<f32>, Shared<f32>),
    ml: *mut f32,
    scale: f32,
    (h, q): (u32, u32),
) {
    let w = b.heads * S_STRIDE;
    // The thread's four partials of each part in one `float4` load; each score's parts added in
    // part order.
    let at = work.add(h * S_STRIDE + 4 * q);
    let part = |p: u32| -> [f32; 4] {
        let a = at.add(p * w).cast::<F32x4>().load();
        [a.x, a.y, a.z, a.w]
    };
    let mut s = part(0);
    unroll::<{ K_PARTS as usize - 1 }>(|p| {
        let v = part(p as u32 + 1);
        unroll::<4>(|i| s[i] += v[i]);
    });
    let (m, e, l) = chunk_softmax(&mut s, scale, 4 * q, b.n_slots - b.s0);
    // In the weighted sum's k order, each 8-slot group as slots 0, 2, 4, 6, then 1, 3, 5, 7
    // (`load_b`): this thread's half of its group at `2 (q % 2)` and `4 + 2 (q % 2)`.
    let dst = num.add(h * P_STRIDE + 8 * (q / 2) + 2 * (q % 2));
    dst.cast::<[f32; 2]>().store([e[0], e[2]]);
    dst.add(4).cast::<[f32; 2]>().store([e[1], e[3]]);
    if q == 0 && b.h0 + h < b.nh {
        let out = ml.add(2 * (b.h0 + h) as usize);
        *out = m;
        *out.add(1) = l;
    }
}

/// A chunk's softmax statistics for the 16 lanes of one head, this lane's scores `s` those of
/// the chunk's slots `first..first + 4`: the scores scaled, `m` their maximum over the live slots
/// (the chunk's first `live`) across the 16 lanes, `e = expf(s - m)` (0 past them), and `l` the
/// sum of `e` in slot order, then across the lanes (8, 4, 2, 1). attn_flash's step 3, and the
/// Hopper entries'.
///
/// # Safety
/// The 32 lanes of the calling warp call it together.
#[inline(always)]
pub(super) unsafe fn chunk_softmax(
    s: &mut [f32; 4],
    scale: f32,
    first: u32,
    live: u32,
) -> (f32, [f32; 4], f32) {
    let mut m = f32::NEG_INFINITY;
    unroll::<4>(|i| {
        s[i] *= scale;
        if first + (i as u32) < live {
            m = max(m, s[i]);
        }
    });
    m = group16_max_warp(m);
    let mut e = [0.0f32; 4];
    let mut l = 0.0f32;
    unroll::<4>(|i| {
        e[i] = if first + (i as u32) < live {
            expf(s[i] - m)
        } else {
            0.0
        };
        l += e[i];
    });
    (m, e, group16_sum(l))
}
