//! Step 4, the weighted sum over the chunk (Thread mapping in `flash`'s docs).

use super::*;

/// Step 4: `o = e V` over the chunk, to `o_part` (`[nh, kv_rank]` of this token and chunk).
///
/// # Safety
/// All threads of the block call it, after [`softmax()`].
#[inline(always)]
pub(super) unsafe fn weighted_sum<const M_TILES: usize>(
    b: Block,
    rows: Shared<f32>,
    num: Shared<f32>,
    o_part: *mut f32,
) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let (g, c) = (lane / 4, lane % 4);
    let ntiles = b.kv_rank.div_ceil(8);
    let mut base = warp * PASS_TILES;
    while base < ntiles {
        let mut o = [[[0.0f32; 4]; PASS_TILES as usize]; M_TILES];
        // A plain loop: unrolled by a closure, its mma would be too many for LLVM to inline the
        // closure, and `o` would live in local memory. Tiles past the row repeat the last one
        // (and are not stored): a branch per tile would serialise each tile's three dependent
        // mma instead of interleaving the tiles' chains.
        let weights = |ks: u32| -> [Split<4>; M_TILES] {
            core::array::from_fn(|m| load_a(num.add(16 * m as u32 * P_STRIDE + 8 * ks), P_STRIDE))
        };
        let values = |ks: u32| -> [Split<2>; PASS_TILES as usize] {
            core::array::from_fn(|j| {
                let tile = (base + j as u32).min(ntiles - 1);
                load_b(rows.add(8 * ks * b.stride + 8 * tile), b.stride)
            })
        };
        // Each k-step's fragments are loaded during the previous one's mma.
        let (mut p, mut v) = (weights(0), values(0));
        let mut ks = 0;
        while ks < TILES {
            let next = (ks + 1).min(TILES - 1);
            let (p_next, v_next) = (weights(next), values(next));
            unroll::<M_TILES>(|m| mma_3xtf32(&mut o[m], p[m], &v));
            (p, v) = (p_next, v_next);
            ks += 1;
        }
        unroll::<M_TILES>(|m| {
            unroll::<{ PASS_TILES as usize }>(|j| {
                let col = 8 * (base + j as u32) + 2 * c;
                if base + (j as u32) < ntiles && col < b.kv_rank {
                    unroll::<2>(|half| {
                        let h = b.h0 + 16 * m as u32 + g + 8 * half as u32;
                        if h < b.nh {
                            let out = o_part.add(h as usize * b.kv_rank as usize + col as usize);
                            st_global_v2(out, o[m][j][2 * half], o[m][j][2 * half + 1]);
                        }
                    });
                }
            })
        });
        base += WARPS * PASS_TILES;
    }
}
