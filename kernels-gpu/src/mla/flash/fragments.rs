//! The `mma.sync` m16n8k8 operands of tiles staged in shared memory, split for 3xTF32.

use super::*;

/// The A fragment of the 16 x 8 tile at `p` (`stride` floats a row, a multiple
/// of 4): rows `g`, `g + 8`, columns `c`, `c + 4`, split; one `ldmatrix` (lanes `0..16` name
/// rows `0..16` at column 0, lanes `16..32` the same rows at column 4).
///
/// # Safety
/// All 32 lanes call it together; the tile is inside the launch's shared memory, `p`
/// 16-byte aligned.
#[inline(always)]
pub(super) unsafe fn load_a(p: Shared<f32>, stride: u32) -> Split<4> {
    let lane = lane_id();
    let row = p.add(lane % 16 * stride + lane / 16 * 4);
    Split::of(ldmatrix_x4(row.cast()).map(f32::from_bits))
}

/// The B fragments (`k = c, c + 4`; `n = g`) of the two 8 x 8 tiles at `p` and `p + 8` rows,
/// stored n-major (row `n` holds `B[:, n]`: the cache rows of the scores), split; one `ldmatrix`
/// (lanes `8i..8i + 8` name rows `8 (i / 2)..` at column `4 (i % 2)`).
///
/// # Safety
/// As [`load_a`].
#[inline(always)]
pub(super) unsafe fn load_b_pair(p: Shared<f32>, stride: u32) -> [Split<2>; 2] {
    let lane = lane_id();
    let r = ldmatrix_x4(
        p.add((lane / 16 * 8 + lane % 8) * stride + lane / 8 % 2 * 4)
            .cast(),
    );
    [
        Split::of([f32::from_bits(r[0]), f32::from_bits(r[1])]),
        Split::of([f32::from_bits(r[2]), f32::from_bits(r[3])]),
    ]
}

/// The B fragment (`k = c, c + 4`; `n = g`) of the 8 x 8 tile at `p`, stored k-major (row `k`
/// holds `B[k, :]`: the rows of the weighted sum), split, with `k = c` and `c + 4` taken from
/// rows `2c` and `2c + 1`: the numerators are stored in that order ([`super::softmax()`]), and
/// the warp's loads fall in 32 banks, where rows `c` and `c + 4` put two lanes in one.
///
/// # Safety
/// The tile is inside the launch's shared memory.
#[inline(always)]
pub(super) unsafe fn load_b(p: Shared<f32>, stride: u32) -> Split<2> {
    let (g, c) = (lane_id() / 4, lane_id() % 4);
    let q = p.add(2 * c * stride + g);
    Split::of([q.load(), q.add(stride).load()])
}
