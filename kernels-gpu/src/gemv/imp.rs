//! The device bodies of the GEMV kernels. The parent module states the thread mapping and the
//! floating-point operations; the reference .cu (`reference/gemv.cu`) performs the same ones.

use super::{
    grid_index, q8_0_row_bytes, BlockQ8_0, Q8_0_BLOCK_BYTES, Q8_0_SHARED_BYTES, Q8_0_STAGE_BLOCKS,
    Q8_0_STAGE_BYTES, QK, WARPS_PER_BLOCK,
};
use crate::abi::F16;
use crate::device::*;

/// `for $k in 0..$n { $body }` written out as `$max` guarded copies (`$max` one of 2, 4, 8,
/// 32, and `$n <= $max` a constant): each copy sees `$k` as a constant, so arrays indexed by it
/// stay in registers whatever LLVM's unroller decides (NVCC gets the same from `#pragma
/// unroll`). Copies past `$n` are removed as dead code.
macro_rules! unroll {
    ($k:ident < $n:expr; $max:tt => $body:block) => {{
        const { assert!($n <= $max) };
        unroll!(@$max $k, $n, $body);
    }};
    (@2 $k:ident, $n:expr, $body:block) => { unroll!(@copies $k, $n, $body; 0 1); };
    (@4 $k:ident, $n:expr, $body:block) => { unroll!(@copies $k, $n, $body; 0 1 2 3); };
    (@8 $k:ident, $n:expr, $body:block) => { unroll!(@copies $k, $n, $body; 0 1 2 3 4 5 6 7); };
    (@32 $k:ident, $n:expr, $body:block) => {
        unroll!(@copies $k, $n, $body;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    };
    (@copies $k:ident, $n:expr, $body:block; $($i:literal)*) => {
        $(
            if $i < $n {
                let $k: usize = $i;
                $body
            }
        )*
    };
}

/// 32 signed bytes (an activation block, or a Q8_0 block's quants) or 32 e4m3 bytes, as eight
/// words in memory order.
type Words = [u32; 8];

/// A block of 32 quants and its scale: a q8_1 activation block, or a Q8_0 weight block.
#[derive(Clone, Copy, Default)]
struct Block {
    q: Words,
    d: f32,
}

/// 32 bytes at a 16-byte-aligned `p`, with two 16-byte loads.
///
/// # Safety
/// As [`ld_nc_v4_u32`], for 32 bytes.
#[inline(always)]
unsafe fn load32(p: *const u8) -> Words {
    let [a, b, c, d] = ld_nc_v4_u32(p);
    let [e, f, g, h] = ld_nc_v4_u32(p.add(16));
    [a, b, c, d, e, f, g, h]
}

/// The q8_1 activation: `m` rows of `in_f` i8 values (`qs`) and `in_f / 32` scales (`d`).
#[derive(Clone, Copy)]
struct Activation {
    qs: *const u8,
    d: *const f32,
    in_f: u32,
}

impl Activation {
    #[inline(always)]
    fn new(xq: *const i8, xd: *const f32, in_f: i32) -> Self {
        Activation {
            qs: xq as *const u8,
            d: xd,
            in_f: in_f as u32,
        }
    }

    /// Block `b` of activation row `i`.
    ///
    /// # Safety
    /// The planes hold row `i`, and `b < in_f / 32`.
    #[inline(always)]
    unsafe fn block(self, i: usize, b: u32) -> Block {
        let row = i * self.in_f as usize;
        Block {
            q: load32(self.qs.add(row + (b * QK) as usize)),
            d: ld_nc_f32(self.d.add(row / QK as usize + b as usize)),
        }
    }
}

/// A kernel's work on one warp's rows, one trip at a time.
trait Trips {
    /// Trip `t`; with `FULL` every block of the trip is in the row for every lane, so no lane
    /// tests its blocks (only the last trip of a row can be ragged).
    unsafe fn trip<const FULL: bool>(&mut self, t: u32);
}

/// One warp's share of a launch: `R` weight rows from `first_row`, visited `U` blocks per lane
/// per trip.
#[derive(Clone, Copy)]
struct Warp<const R: usize, const U: usize> {
    lane: u32,
    first_row: u32,
    out_f: u32,
    blocks: u32,
}

impl<const R: usize, const U: usize> Warp<R, U> {
    /// This warp's share, or `None` for a warp of the last thread block that has no row.
    #[inline(always)]
    fn new(in_f: i32, out_f: i32) -> Option<Self> {
        let warp = block_idx_x() * WARPS_PER_BLOCK + thread_idx_x() / 32;
        let first_row = warp * R as u32;
        (first_row < out_f as u32).then_some(Warp {
            lane: lane_id(),
            first_row,
            out_f: out_f as u32,
            blocks: in_f as u32 / QK,
        })
    }

    /// The warp's weight row `k`; the last warp's surplus rows read the last row and store
    /// nothing, so that no lane branches on its row.
    #[inline(always)]
    fn row(self, k: usize) -> u32 {
        (self.first_row + k as u32).min(self.out_f - 1)
    }

    /// Trips over a row, the same for every lane, so that warp-wide steps may sit in them.
    #[inline(always)]
    fn trips(self) -> u32 {
        self.blocks.div_ceil(32 * U as u32)
    }

    /// The lane's `u`-th block of trip `t`: `b = lane + 32 j` with `j = t U + u`, so that the
    /// lane visits its blocks in ascending `j` whatever `U` is.
    #[inline(always)]
    fn block(self, t: u32, u: usize) -> u32 {
        self.lane + 32 * (t * U as u32 + u as u32)
    }

    /// Whether block `b` is in the row (always, in a full trip).
    #[inline(always)]
    fn live<const FULL: bool>(self, b: u32) -> bool {
        FULL || b < self.blocks
    }

    /// Runs every trip: the full ones, then the ragged one if the row has it.
    ///
    /// # Safety
    /// All lanes call it.
    #[inline(always)]
    unsafe fn run(self, body: &mut impl Trips) {
        let full = self.blocks / (32 * U as u32);
        for t in 0..full {
            body.trip::<true>(t);
        }
        if full < self.trips() {
            body.trip::<false>(full);
        }
    }

    /// Sums each accumulator over the warp (xor butterfly) and lets lane 0 write
    /// `y[i][row] = finish(sum)` for the warp's real rows.
    ///
    /// # Safety
    /// All 32 lanes call it; `y` holds `M * out_f` floats.
    #[inline(always)]
    unsafe fn store<const M: usize>(
        self,
        y: *mut f32,
        acc: [[f32; M]; R],
        finish: impl Fn(f32) -> f32,
    ) {
        unroll!(k < R; 4 => {
            let row = self.first_row + k as u32;
            unroll!(i < M; 8 => {
                let sum = warp_sum(acc[k][i]);
                if self.lane == 0 && row < self.out_f {
                    *y.add(i * self.out_f as usize + row as usize) = finish(sum);
                }
            });
        });
    }

    /// The activation blocks of trip `t` (anything for blocks past the row).
    ///
    /// # Safety
    /// `act` holds `M` rows.
    #[inline(always)]
    unsafe fn activation<const M: usize, const FULL: bool>(
        self,
        act: Activation,
        t: u32,
    ) -> [[Block; U]; M] {
        let mut x = [[Block::default(); U]; M];
        unroll!(u < U; 4 => {
            let b = self.block(t, u);
            if self.live::<FULL>(b) {
                unroll!(i < M; 8 => {
                    x[i][u] = act.block(i, b);
                });
            }
        });
        x
    }
}

// ---------------------------------------------------------------------------------------------
// Q8_0: raw ggml blocks or planes, one dot product.

/// `acc = fma(dw * dx, (float) sumi, acc)`, `sumi` the exact `dp4a` sum over the block: what
/// NVCC makes of `acc += dw * dx * sumi`.
#[inline(always)]
fn q8_dot(w: &Block, x: &Block, acc: f32) -> f32 {
    let mut sumi = 0;
    unroll!(k < 8; 8 => {
        sumi = dp4a(w.q[k], x.q[k], sumi);
    });
    fma(w.d * x.d, i32_to_f32(sumi), acc)
}

/// One warp's Q8_0 weight row, delivered a trip at a time.
trait Q8Row<const U: usize> {
    /// The lane's blocks of trip `t` (anything for blocks past the row). All lanes call it.
    unsafe fn trip<const FULL: bool>(&mut self, warp: Warp<1, U>, t: u32) -> [Block; U];
    /// Called by all lanes once the trip's blocks are used.
    unsafe fn done(&mut self);
}

/// Raw ggml blocks staged through two shared-memory buffers per warp: trip `t + 1` is copied
/// while trip `t` is computed. Rows whose start is 16-byte aligned are copied with 16-byte
/// `cp.async`; others (`in_f % 256 != 0`) with 2-byte loads and stores, to the same layout.
struct Staged {
    row: *const u8,
    row_bytes: u32,
    aligned: bool,
    /// This warp's two stages, in the shared window.
    stages: u32,
    lane: u32,
}

core::arch::global_asm!(
    ".shared .align 16 .b8 GEMV_Q8_0_STAGES[{bytes}];",
    bytes = const Q8_0_SHARED_BYTES,
);

/// `mov.u32 %r, GEMV_Q8_0_STAGES` (the `__shared__` staging array of the raw Q8_0 kernels).
#[inline(always)]
fn q8_0_stages() -> u32 {
    let base: u32;
    // SAFETY: reads the address of the declared symbol.
    unsafe {
        core::arch::asm!(
            "mov.u32 {b}, GEMV_Q8_0_STAGES;",
            b = out(reg32) base,
            options(pure, nomem, nostack),
        )
    };
    base
}

impl Staged {
    /// Starts copying the first trip of weight row `row` (`row_bytes` long) into this warp's
    /// stages.
    ///
    /// # Safety
    /// All lanes call it; `row` holds `row_bytes` readable bytes, 2-byte aligned.
    #[inline(always)]
    unsafe fn new(row: *const u8, row_bytes: u32, aligned: bool) -> Self {
        let warp = thread_idx_x() / 32;
        let staged = Staged {
            row,
            row_bytes,
            aligned,
            stages: q8_0_stages() + warp * 2 * Q8_0_STAGE_BYTES,
            lane: lane_id(),
        };
        staged.stage(0);
        staged
    }

    /// The stage buffer of trip `t`.
    #[inline(always)]
    fn buffer(&self, t: u32) -> u32 {
        self.stages + t % 2 * Q8_0_STAGE_BYTES
    }

    /// Copies trip `t`'s bytes of the row into its buffer, lane `l` taking pieces `l + 32 n`,
    /// and commits them as one group (empty on the 2-byte path, whose stores are done already).
    #[inline(always)]
    unsafe fn stage(&self, t: u32) {
        let start = t * Q8_0_STAGE_BYTES;
        let len = (self.row_bytes - start).min(Q8_0_STAGE_BYTES);
        let (src, dst) = (self.row.add(start as usize), self.buffer(t));
        let mut p = self.lane;
        if self.aligned {
            while p < len / 16 {
                cp_async_16(dst + 16 * p, src.add(16 * p as usize));
                p += 32;
            }
        } else {
            while p < len / 2 {
                st_shared_u16(dst + 2 * p, ld_nc_u16(src.add(2 * p as usize)));
                p += 32;
            }
        }
        cp_async_commit();
    }

    /// Block `n` of a stage buffer: the scale with one 2-byte read, the quants (2-byte aligned
    /// at `34 n + 2`) with nine aligned word reads and eight funnel shifts by 0 or 16 bits. With
    /// a shift of 0 the ninth word is unused, and the read takes the eighth again rather than
    /// touch the next block.
    #[inline(always)]
    unsafe fn read(&self, buffer: u32, n: u32) -> Block {
        let at = buffer + n * Q8_0_BLOCK_BYTES;
        let quants = at + 2;
        let (base, shift) = (quants & !3, (quants & 3) * 8);
        let mut words = [0; 9];
        unroll!(k < 8; 8 => {
            words[k] = ld_shared_u32(base + 4 * k as u32);
        });
        words[8] = ld_shared_u32(base + 28 + shift / 4);
        let mut q = [0; 8];
        unroll!(k < 8; 8 => {
            q[k] = funnel_shift_rc(words[k], words[k + 1], shift);
        });
        Block {
            q,
            d: f16_to_f32(ld_shared_u16(at)),
        }
    }
}

impl<const U: usize> Q8Row<U> for Staged {
    #[inline(always)]
    unsafe fn trip<const FULL: bool>(&mut self, warp: Warp<1, U>, t: u32) -> [Block; U] {
        if t + 1 < warp.trips() {
            self.stage(t + 1);
            cp_async_wait_group::<1>();
        } else {
            cp_async_wait_group::<0>();
        }
        sync_warp();
        let buffer = self.buffer(t);
        let mut w = [Block::default(); U];
        unroll!(u < U; 4 => {
            let b = warp.block(t, u);
            if warp.live::<FULL>(b) {
                w[u] = self.read(buffer, b - t * 32 * U as u32);
            }
        });
        w
    }

    #[inline(always)]
    unsafe fn done(&mut self) {
        sync_warp();
    }
}

/// Planar Q8_0: the row's quants (16-byte aligned) and f16 scales, loaded straight to
/// registers.
struct Planar {
    q: *const u8,
    d: *const u8,
}

impl<const U: usize> Q8Row<U> for Planar {
    #[inline(always)]
    unsafe fn trip<const FULL: bool>(&mut self, warp: Warp<1, U>, t: u32) -> [Block; U] {
        let mut w = [Block::default(); U];
        unroll!(u < U; 4 => {
            let b = warp.block(t, u);
            if warp.live::<FULL>(b) {
                w[u] = Block {
                    q: load32(self.q.add((b * QK) as usize)),
                    d: f16_to_f32(ld_nc_u16(self.d.add(2 * b as usize))),
                };
            }
        });
        w
    }

    #[inline(always)]
    unsafe fn done(&mut self) {}
}

/// The Q8_0 body over one warp's row, from either layout.
struct Q8<W, const M: usize, const U: usize> {
    warp: Warp<1, U>,
    weights: W,
    act: Activation,
    acc: [[f32; M]; 1],
}

impl<W: Q8Row<U>, const M: usize, const U: usize> Trips for Q8<W, M, U> {
    #[inline(always)]
    unsafe fn trip<const FULL: bool>(&mut self, t: u32) {
        let x = self.warp.activation::<M, FULL>(self.act, t);
        let w = self.weights.trip::<FULL>(self.warp, t);
        unroll!(u < U; 4 => {
            if self.warp.live::<FULL>(self.warp.block(t, u)) {
                unroll!(i < M; 8 => {
                    self.acc[0][i] = q8_dot(&w[u], &x[i][u], self.acc[0][i]);
                });
            }
        });
        self.weights.done();
    }
}

impl<W: Q8Row<U>, const M: usize, const U: usize> Q8<W, M, U> {
    /// Runs the row and stores it.
    ///
    /// # Safety
    /// All lanes call it; `y` holds `M * out_f` floats.
    #[inline(always)]
    unsafe fn run(mut self, y: *mut f32) {
        self.warp.run(&mut self);
        self.warp.store(y, self.acc, |sum| sum);
    }
}

/// Raw ggml Q8_0 rows (see the entries `gemv_q8_0_m*`).
#[inline(always)]
pub(super) unsafe fn gemv_q8_0<const M: usize, const R: usize, const U: usize>(
    w: *const BlockQ8_0,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
) {
    const { assert!(R == 1 && U == Q8_0_STAGE_BLOCKS as usize) };
    let Some(warp) = Warp::<1, U>::new(in_f, out_f) else {
        return;
    };
    let row_bytes = q8_0_row_bytes(in_f as u32);
    let w = w as *const u8;
    let row = w.add(warp.row(0) as usize * row_bytes as usize);
    let aligned = (w as usize | row_bytes as usize) % 16 == 0;
    Q8::<_, M, U> {
        warp,
        weights: Staged::new(row, row_bytes, aligned),
        act: Activation::new(xq, xd, in_f),
        acc: [[0.0; M]],
    }
    .run(y);
}

/// Planar Q8_0 (see the entries `gemv_q8_0_planar_m*`).
#[inline(always)]
pub(super) unsafe fn gemv_q8_0_planar<const M: usize, const R: usize, const U: usize>(
    wq: *const i8,
    wd: *const F16,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
) {
    const { assert!(R == 1) };
    let Some(warp) = Warp::<1, U>::new(in_f, out_f) else {
        return;
    };
    let row = warp.row(0) as usize;
    let weights = Planar {
        q: (wq as *const u8).add(row * in_f as usize),
        d: (wd as *const u8).add(2 * row * (in_f as u32 / QK) as usize),
    };
    Q8::<_, M, U> {
        warp,
        weights,
        act: Activation::new(xq, xd, in_f),
        acc: [[0.0; M]],
    }
    .run(y);
}

// ---------------------------------------------------------------------------------------------
// e4m3: per-tensor or block-128 scales.

/// The 32 e4m3 weights of a block as exact f32: `cvt.rn.f16x2.e4m3x2` per byte pair, then
/// `cvt.f32.f16` per value, in memory order.
#[inline(always)]
fn e4m3_block(w: &Words) -> [f32; 32] {
    let mut v = [0.0; 32];
    unroll!(n < 8; 8 => {
        let lo = e4m3x2_to_f16x2(w[n] as u16);
        let hi = e4m3x2_to_f16x2((w[n] >> 16) as u16);
        v[4 * n] = f16_to_f32(lo as u16);
        v[4 * n + 1] = f16_to_f32((lo >> 16) as u16);
        v[4 * n + 2] = f16_to_f32(hi as u16);
        v[4 * n + 3] = f16_to_f32((hi >> 16) as u16);
    });
    v
}

/// The 32 activation values of a q8_1 block as exact f32.
#[inline(always)]
fn q8_block_f32(q: &Words) -> [f32; 32] {
    let mut v = [0.0; 32];
    unroll!(n < 8; 8 => {
        let [a, b, c, d] = i8x4_to_f32x4(q[n]);
        v[4 * n] = a;
        v[4 * n + 1] = b;
        v[4 * n + 2] = c;
        v[4 * n + 3] = d;
    });
    v
}

/// `s = fma(w_k, x_k, s)` from `s = 0`, `k` ascending (what NVCC makes of `s += w[k] * x[k]`).
#[inline(always)]
fn dot32(w: &[f32; 32], x: &[f32; 32]) -> f32 {
    let mut s = 0.0;
    unroll!(k < 32; 32 => {
        s = fma(w[k], x[k], s);
    });
    s
}

/// How an e4m3 matrix is scaled.
trait Fp8Scale: Copy {
    /// The scale of block `b` of weight row `row`, loaded with the trip's weights.
    ///
    /// # Safety
    /// `row < out_f` and `b < in_f / 32`.
    unsafe fn block(self, row: u32, b: u32) -> f32;
    /// What a block's dot product is multiplied by: the activation scale `dx`, with or without
    /// the block's scale `g`.
    fn factor(dx: f32, g: f32) -> f32;
    /// `y` from the row's sum.
    fn finish(self, sum: f32) -> f32;
}

/// One scale for the tensor, applied to the row's sum.
#[derive(Clone, Copy)]
struct PerTensor(f32);

impl Fp8Scale for PerTensor {
    #[inline(always)]
    unsafe fn block(self, _: u32, _: u32) -> f32 {
        1.0
    }

    #[inline(always)]
    fn factor(dx: f32, _: f32) -> f32 {
        dx
    }

    #[inline(always)]
    fn finish(self, sum: f32) -> f32 {
        sum * self.0
    }
}

/// One scale per 128 x 128 tile, folded into each block's factor.
#[derive(Clone, Copy)]
struct Tiles {
    grid: *const f32,
    in_f: u32,
}

impl Fp8Scale for Tiles {
    #[inline(always)]
    unsafe fn block(self, row: u32, b: u32) -> f32 {
        ld_nc_f32(self.grid.add(grid_index(row, b * QK, self.in_f) as usize))
    }

    #[inline(always)]
    fn factor(dx: f32, g: f32) -> f32 {
        dx * g
    }

    #[inline(always)]
    fn finish(self, sum: f32) -> f32 {
        sum
    }
}

/// The e4m3 body over one warp's `R` rows: every load of a trip (weights, tile scales,
/// activations) first, then per block each activation row is decoded once for all `R` rows.
struct Fp8<S, const M: usize, const R: usize, const U: usize> {
    warp: Warp<R, U>,
    w: *const u8,
    in_f: u32,
    scale: S,
    act: Activation,
    acc: [[f32; M]; R],
}

impl<S: Fp8Scale, const M: usize, const R: usize, const U: usize> Trips for Fp8<S, M, R, U> {
    #[inline(always)]
    unsafe fn trip<const FULL: bool>(&mut self, t: u32) {
        let warp = self.warp;
        let mut wq = [[[0; 8]; U]; R];
        let mut g = [[0.0; U]; R];
        unroll!(u < U; 4 => {
            let b = warp.block(t, u);
            if warp.live::<FULL>(b) {
                unroll!(k < R; 4 => {
                    let row = warp.row(k);
                    let at = row as usize * self.in_f as usize + (b * QK) as usize;
                    wq[k][u] = load32(self.w.add(at));
                    g[k][u] = self.scale.block(row, b);
                });
            }
        });
        let x = warp.activation::<M, FULL>(self.act, t);
        unroll!(u < U; 4 => {
            if warp.live::<FULL>(warp.block(t, u)) {
                let mut wf = [[0.0; 32]; R];
                unroll!(k < R; 4 => {
                    wf[k] = e4m3_block(&wq[k][u]);
                });
                unroll!(i < M; 8 => {
                    let xf = q8_block_f32(&x[i][u].q);
                    unroll!(k < R; 4 => {
                        let factor = S::factor(x[i][u].d, g[k][u]);
                        self.acc[k][i] = fma(dot32(&wf[k], &xf), factor, self.acc[k][i]);
                    });
                });
            }
        });
    }
}

/// The e4m3 kernels' common body.
///
/// # Safety
/// All lanes call it; the buffers hold what the entries' docs say.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn gemv_fp8<S: Fp8Scale, const M: usize, const R: usize, const U: usize>(
    w: *const u8,
    scale: S,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
) {
    let Some(warp) = Warp::<R, U>::new(in_f, out_f) else {
        return;
    };
    let mut body = Fp8::<S, M, R, U> {
        warp,
        w,
        in_f: in_f as u32,
        scale,
        act: Activation::new(xq, xd, in_f),
        acc: [[0.0; M]; R],
    };
    warp.run(&mut body);
    warp.store(y, body.acc, |sum| scale.finish(sum));
}

/// Per-tensor e4m3 (see the entries `gemv_e4m3_m*`).
#[inline(always)]
pub(super) unsafe fn gemv_e4m3<const M: usize, const R: usize, const U: usize>(
    w: *const u8,
    scale: f32,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
) {
    gemv_fp8::<_, M, R, U>(w, PerTensor(scale), xq, xd, y, in_f, out_f);
}

/// Block-128 e4m3 (see the entries `gemv_e4m3_b128_m*`).
#[inline(always)]
pub(super) unsafe fn gemv_e4m3_b128<const M: usize, const R: usize, const U: usize>(
    w: *const u8,
    grid: *const f32,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
) {
    let tiles = Tiles {
        grid,
        in_f: in_f as u32,
    };
    gemv_fp8::<_, M, R, U>(w, tiles, xq, xd, y, in_f, out_f);
}
