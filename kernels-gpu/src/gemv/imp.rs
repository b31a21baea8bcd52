//! The device bodies of the GEMV kernels. The parent module states the thread mapping and the
//! floating-point operations; the reference .cu (`reference/gemv.cu`) performs the same ones.

use super::{
    fp8_stage_bytes, grid_index, q8_0_row_bytes, takes_any_grid, tensor_cores, BlockQ8_0, Format,
    FP8_SHARED_BYTES, Q8_0_BLOCK_BYTES, Q8_0_SHARED_BYTES, Q8_0_STAGE_BLOCKS, Q8_0_STAGE_BYTES, QK,
    TILE, WARPS_PER_BLOCK,
};
use crate::abi::F16;
use crate::device::*;

/// `for $k in 0..$n { $body }` written out as `$max` guarded copies (`$max` 4 or 8, and
/// `$n <= $max` a constant): each copy sees `$k` as a constant, so arrays indexed by it stay in
/// registers whatever LLVM's unroller decides (NVCC gets the same from `#pragma unroll`). Copies
/// past `$n` are removed as dead code.
macro_rules! unroll {
    ($k:ident < $n:expr; $max:tt => $body:block) => {{
        const { assert!($n <= $max) };
        unroll!(@$max $k, $n, $body);
    }};
    (@4 $k:ident, $n:expr, $body:block) => { unroll!(@copies $k, $n, $body; 0 1 2 3); };
    (@8 $k:ident, $n:expr, $body:block) => { unroll!(@copies $k, $n, $body; 0 1 2 3 4 5 6 7); };
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

    /// Block `b` of each of the `M` activation rows.
    ///
    /// # Safety
    /// The planes hold `M` rows, and `b < in_f / 32`.
    #[inline(always)]
    unsafe fn blocks<const M: usize>(self, b: u32) -> [Block; M] {
        let mut x = [Block::default(); M];
        unroll!(i < M; 8 => {
            x[i] = self.block(i, b);
        });
        x
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
///
/// A full trip (every block of it in the row for every lane) has all its blocks in hand before
/// using any, so that their loads are in flight together; the last trip of a row may be ragged,
/// and takes its blocks one by one, which keeps the registers of the rare case from setting the
/// kernel's. Blocks are used in ascending order either way.
trait Trips {
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
        let warp = Self::first(in_f, out_f);
        warp.has_rows().then_some(warp)
    }

    /// This warp's first row group in a launch whose warps take groups in turn: group `w` for
    /// warp `w` of the launch. It has no row if `w` is past the matrix.
    #[inline(always)]
    fn first(in_f: i32, out_f: i32) -> Self {
        let warp = block_idx_x() * WARPS_PER_BLOCK + thread_idx_x() / 32;
        Warp {
            lane: lane_id(),
            first_row: warp * R as u32,
            out_f: out_f as u32,
            blocks: in_f as u32 / QK,
        }
    }

    /// Whether the group has a row of the matrix.
    #[inline(always)]
    fn has_rows(self) -> bool {
        self.first_row < self.out_f
    }

    /// Rows from one of a warp's groups to its next: the launch's warps times `R`.
    #[inline(always)]
    fn stride() -> u32 {
        grid_dim_x() * WARPS_PER_BLOCK * R as u32
    }

    /// The group `stride` rows on. Offsets stay within `u32`: `first_row < out_f < 2^31` and
    /// `stride` is the launch's warps times `R`, within the grid's limits.
    #[inline(always)]
    fn after(self, stride: u32) -> Self {
        Warp {
            first_row: self.first_row + stride,
            ..self
        }
    }

    /// The warp's trip after trip `t` of this group: the group's next, or the first of its next
    /// group (`stride` rows on; it has no rows past the matrix).
    #[inline(always)]
    fn next_trip(self, t: u32, stride: u32) -> (Self, u32) {
        if t + 1 < self.trips() {
            (self, t + 1)
        } else {
            (self.after(stride), 0)
        }
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

    /// Whether block `b` is in the row (the last trip can be ragged).
    #[inline(always)]
    fn live(self, b: u32) -> bool {
        b < self.blocks
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

/// One warp's Q8_0 weight rows, delivered a trip at a time, a row group after another.
trait Q8Row<const U: usize> {
    /// The format, whose [`takes_any_grid`] says whether the warp takes row groups in turn.
    const FORMAT: Format;
    /// Whether the rows arrive through shared-memory stages (see [`Q8::AHEAD`]).
    const STAGED: bool;
    /// Points at the row of group `warp`, whose first trip is readable at its [`Q8Row::begin`].
    unsafe fn start(&mut self, warp: Warp<1, U>);
    /// Starts delivering the first group's first trip, after its [`Q8Row::start`]. All lanes
    /// call it.
    unsafe fn prime(&mut self);
    /// Makes trip `t` of group `warp` readable; `next` is the warp's trip after it
    /// ([`Warp::next_trip`]). All lanes call it.
    unsafe fn begin(&mut self, warp: Warp<1, U>, t: u32, next: (Warp<1, U>, u32));
    /// The lane's block `u` of trip `t`, which is in the row.
    unsafe fn block(&self, warp: Warp<1, U>, t: u32, u: usize) -> Block;
    /// Called by all lanes once the trip's blocks are used.
    unsafe fn end(&mut self);
}

/// Raw ggml blocks staged through two shared-memory buffers per warp: the warp's next trip (of
/// its row, or the first of its next row) is copied while a trip is computed. `ALIGNED` rows
/// (start 16-byte aligned) are copied with 16-byte `cp.async`; others (`in_f % 256 != 0`) with
/// 2-byte loads and stores, to the same layout.
///
/// The alignment is a type parameter rather than a branch in every stage, so that the aligned
/// trip loop is straight-line code (at most [`STAGE_COPIES`] predicated copies a lane, no branch
/// per piece) and the 2-byte path's loop lives only in the unaligned kernel body.
struct Staged<const ALIGNED: bool> {
    /// The matrix, `row_bytes` a row.
    w: *const u8,
    row_bytes: u32,
    /// The row being computed.
    row: *const u8,
    /// This warp's two stages, in the shared window.
    stages: u32,
    /// The stage of the trip being computed (0 or 1); the next trip is copied into the other.
    phase: u32,
    lane: u32,
}

/// 16-byte copies a lane issues at most per stage: `ceil(2176 / 16 / 32) = 5`.
const STAGE_COPIES: usize = (Q8_0_STAGE_BYTES / 16).div_ceil(32) as usize;

static_shared! {
    /// The address of the raw Q8_0 kernels' staging array.
    fn q8_0_stages = GEMV_Q8_0_STAGES[Q8_0_SHARED_BYTES]
}

impl<const ALIGNED: bool> Staged<ALIGNED> {
    /// This warp's stages over the matrix `w` of `row_bytes` rows.
    ///
    /// # Safety
    /// Every row of `w` holds `row_bytes` readable bytes, 2-byte aligned, and 16-byte aligned
    /// with `row_bytes % 16 == 0` if `ALIGNED`.
    #[inline(always)]
    unsafe fn new(w: *const u8, row_bytes: u32) -> Self {
        Staged {
            w,
            row_bytes,
            row: w,
            stages: q8_0_stages() + thread_idx_x() / 32 * 2 * Q8_0_STAGE_BYTES,
            phase: 0,
            lane: lane_id(),
        }
    }

    /// The first byte of group `warp`'s row.
    #[inline(always)]
    fn row_of<const U: usize>(&self, warp: Warp<1, U>) -> *const u8 {
        self.w
            .wrapping_add(warp.row(0) as usize * self.row_bytes as usize)
    }

    /// Copies trip `t`'s bytes of `row` into stage `phase`, lane `l` taking pieces `l + 32 n`
    /// (at most [`STAGE_COPIES`] of 16 bytes, or a loop of 2-byte pieces), and commits them as
    /// one group (empty on the 2-byte path, whose stores are done already).
    #[inline(always)]
    unsafe fn stage(&self, row: *const u8, t: u32, phase: u32) {
        let start = t * Q8_0_STAGE_BYTES;
        let len = (self.row_bytes - start).min(Q8_0_STAGE_BYTES);
        let src = row.add(start as usize);
        let dst = self.stages + phase * Q8_0_STAGE_BYTES;
        if ALIGNED {
            unroll!(n < STAGE_COPIES; 8 => {
                let p = self.lane + 32 * n as u32;
                cp_async_16_if(p < len / 16, dst + 16 * p, src.wrapping_add(16 * p as usize));
            });
        } else {
            let mut p = self.lane;
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

impl<const ALIGNED: bool, const U: usize> Q8Row<U> for Staged<ALIGNED> {
    const FORMAT: Format = Format::Q8_0;
    const STAGED: bool = true;

    #[inline(always)]
    unsafe fn start(&mut self, warp: Warp<1, U>) {
        self.row = self.row_of(warp);
    }

    #[inline(always)]
    unsafe fn prime(&mut self) {
        self.stage(self.row, 0, 0);
    }

    #[inline(always)]
    unsafe fn begin(&mut self, warp: Warp<1, U>, t: u32, (next, next_t): (Warp<1, U>, u32)) {
        // `next_trip`'s own test rather than `next_t > 0`: the same trips, and the form whose PTX
        // the H200 measured.
        if t + 1 < warp.trips() {
            self.stage(self.row, next_t, self.phase ^ 1);
            cp_async_wait_group::<1>();
        } else if next.has_rows() {
            self.stage(self.row_of(next), 0, self.phase ^ 1);
            cp_async_wait_group::<1>();
        } else {
            cp_async_wait_group::<0>();
        }
        sync_warp();
    }

    #[inline(always)]
    unsafe fn block(&self, warp: Warp<1, U>, t: u32, u: usize) -> Block {
        let buffer = self.stages + self.phase * Q8_0_STAGE_BYTES;
        self.read(buffer, warp.block(t, u) - t * 32 * U as u32)
    }

    #[inline(always)]
    unsafe fn end(&mut self) {
        // The stage is copied into again at the next trip's start: every lane's reads first.
        sync_warp();
        self.phase ^= 1;
    }
}

/// Planar Q8_0: the row's quants (16-byte aligned) and f16 scales, loaded straight to
/// registers.
struct Planar {
    /// The planes, `in_f` quants and `in_f / 32` scales a row.
    wq: *const u8,
    wd: *const u8,
    in_f: i32,
    /// The row being computed, in each plane.
    q: *const u8,
    d: *const u8,
}

impl<const U: usize> Q8Row<U> for Planar {
    const FORMAT: Format = Format::Q8_0Planar;
    const STAGED: bool = false;

    #[inline(always)]
    unsafe fn start(&mut self, warp: Warp<1, U>) {
        let row = warp.row(0) as usize;
        self.q = self.wq.add(row * self.in_f as usize);
        self.d = self.wd.add(2 * row * (self.in_f as u32 / QK) as usize);
    }

    #[inline(always)]
    unsafe fn prime(&mut self) {}

    #[inline(always)]
    unsafe fn begin(&mut self, _: Warp<1, U>, _: u32, _: (Warp<1, U>, u32)) {}

    #[inline(always)]
    unsafe fn block(&self, warp: Warp<1, U>, t: u32, u: usize) -> Block {
        let b = warp.block(t, u);
        Block {
            q: load32(self.q.add((b * QK) as usize)),
            d: f16_to_f32(ld_nc_u16(self.d.add(2 * b as usize))),
        }
    }

    #[inline(always)]
    unsafe fn end(&mut self) {}
}

/// The Q8_0 body over one warp's row groups (one row each), from either layout.
struct Q8<W, const M: usize, const U: usize> {
    /// The row group being summed.
    warp: Warp<1, U>,
    /// [`Warp::stride`], read once.
    stride: u32,
    weights: W,
    act: Activation,
    acc: [[f32; M]; 1],
    /// The next trip's activation blocks, where [`Q8::AHEAD`].
    ahead: [[Block; M]; U],
}

impl<W: Q8Row<U>, const M: usize, const U: usize> Q8<W, M, U> {
    /// Whether a trip's activation blocks are loaded during the trip before it: staged rows at
    /// `m <= 2`. A staged trip waits for its weights; ptxas sank activation loads issued in the
    /// same trip below that wait (one more L2 round trip per trip: 0.7 us of the k/v shape's
    /// 4.2), but it cannot move a load into the next trip. At `m >= 4` the carried blocks would
    /// cost 72+ registers.
    const AHEAD: bool = W::STAGED && M <= 2;

    /// A body over the matrix `weights`, for the warp's first row group.
    #[inline(always)]
    fn new(warp: Warp<1, U>, weights: W, act: Activation) -> Self {
        Q8 {
            warp,
            stride: Warp::<1, U>::stride(),
            weights,
            act,
            acc: [[0.0; M]],
            ahead: [[Block::default(); M]; U],
        }
    }

    /// The activation blocks of trip `t`, each block index clamped to the row, so that a trip
    /// loaded ahead past the last full one reads valid (unused) blocks.
    ///
    /// # Safety
    /// The activation planes hold `M` rows.
    #[inline(always)]
    unsafe fn load_trip(&self, t: u32) -> [[Block; M]; U] {
        let mut x = [[Block::default(); M]; U];
        unroll!(u < U; 4 => {
            let b = self.warp.block(t, u);
            let b = if Self::AHEAD { b.min(self.warp.blocks - 1) } else { b };
            x[u] = self.act.blocks::<M>(b);
        });
        x
    }

    /// The block's contribution to each activation row's accumulator.
    #[inline(always)]
    fn add(&mut self, w: &Block, x: &[Block; M]) {
        unroll!(i < M; 8 => {
            self.acc[0][i] = q8_dot(w, &x[i], self.acc[0][i]);
        });
    }
}

impl<W: Q8Row<U>, const M: usize, const U: usize> Trips for Q8<W, M, U> {
    #[inline(always)]
    unsafe fn trip<const FULL: bool>(&mut self, t: u32) {
        let warp = self.warp;
        let next = if FULL {
            // The activation's loads go out before the wait for the weights, to overlap it:
            // in this trip, or at the end of the one before.
            let x = if Self::AHEAD {
                self.ahead
            } else {
                self.load_trip(t)
            };
            // After the activation's loads, which its integer work would otherwise precede.
            let next = warp.next_trip(t, self.stride);
            self.weights.begin(warp, t, next);
            let mut w = [Block::default(); U];
            unroll!(u < U; 4 => {
                w[u] = self.weights.block(warp, t, u);
            });
            unroll!(u < U; 4 => {
                self.add(&w[u], &x[u]);
            });
            next
        } else {
            let next = warp.next_trip(t, self.stride);
            self.weights.begin(warp, t, next);
            unroll!(u < U; 4 => {
                let b = warp.block(t, u);
                if warp.live(b) {
                    let x = self.act.blocks::<M>(b);
                    let w = self.weights.block(warp, t, u);
                    self.add(&w, &x);
                }
            });
            next
        };
        if Self::AHEAD && next.0.has_rows() {
            // The activation is the same for every row, whichever group the next trip is in.
            // After the warp's last trip there is none to load: loads issued there would only
            // hold the warp, and the launch, until they return.
            self.ahead = self.load_trip(next.1);
        }
        self.weights.end();
    }
}

impl<W: Q8Row<U>, const M: usize, const U: usize> Q8<W, M, U> {
    /// Runs the warp's row groups and stores each.
    ///
    /// # Safety
    /// All lanes call it; `self.warp` has rows; `y` holds `M * out_f` floats.
    #[inline(always)]
    unsafe fn run(mut self, y: *mut f32) {
        let mut warp = self.warp;
        self.weights.start(warp);
        self.weights.prime();
        if Self::AHEAD {
            self.ahead = self.load_trip(0);
        }
        loop {
            self.warp = warp;
            self.acc = [[0.0; M]];
            warp.run(&mut self);
            warp.store(y, self.acc, |sum| sum);
            warp = warp.after(self.stride);
            if !takes_any_grid(W::FORMAT, M) || !warp.has_rows() {
                break;
            }
            self.weights.start(warp);
        }
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
    if tensor_cores(Format::Q8_0, M) {
        return super::mma::gemv_q8_0::<M>(w, xq, xd, y, in_f, out_f);
    }
    let Some(warp) = Warp::<1, U>::new(in_f, out_f) else {
        return;
    };
    let row_bytes = q8_0_row_bytes(in_f as u32);
    let w = w as *const u8;
    let act = Activation::new(xq, xd, in_f);
    if (w as usize | row_bytes as usize) % 16 == 0 {
        Q8::<_, M, U>::new(warp, Staged::<true>::new(w, row_bytes), act).run(y);
    } else {
        Q8::<_, M, U>::new(warp, Staged::<false>::new(w, row_bytes), act).run(y);
    }
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
    if tensor_cores(Format::Q8_0Planar, M) {
        return super::mma::gemv_q8_0_planar::<M>(wq, wd, xq, xd, y, in_f, out_f);
    }
    let Some(warp) = Warp::<1, U>::new(in_f, out_f) else {
        return;
    };
    let weights = Planar {
        wq: wq as *const u8,
        wd: wd as *const u8,
        in_f,
        q: wq as *const u8,
        d: wd as *const u8,
    };
    Q8::<_, M, U>::new(warp, weights, Activation::new(xq, xd, in_f)).run(y);
}

// ---------------------------------------------------------------------------------------------
// e4m3: per-tensor or block-128 scales.

/// The four e4m3 weights of a word as exact f32, in memory order: `cvt.rn.f16x2.e4m3x2` per
/// byte pair, then `cvt.f32.f16` per value.
#[inline(always)]
fn e4m3x4_to_f32x4(word: u32) -> [f32; 4] {
    let lo = e4m3x2_to_f16x2(word as u16);
    let hi = e4m3x2_to_f16x2((word >> 16) as u16);
    [
        f16_to_f32(lo as u16),
        f16_to_f32((lo >> 16) as u16),
        f16_to_f32(hi as u16),
        f16_to_f32((hi >> 16) as u16),
    ]
}

/// How an e4m3 matrix is scaled.
trait Fp8Scale: Copy {
    /// What the scales of one weight row need, found per trip for the row group's first row
    /// (its rows share one row of tiles, see [`Fp8::operands`]).
    type Row: Copy;
    /// The scales of weight row `row < out_f`.
    fn row(self, row: u32) -> Self::Row;
    /// The scale of block `b < in_f / 32` of a row, loaded with the trip's other operands.
    ///
    /// # Safety
    /// `row` came from [`Fp8Scale::row`] of this scale.
    unsafe fn block(row: Self::Row, b: u32) -> f32;
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
    type Row = ();

    #[inline(always)]
    fn row(self, _: u32) {}

    #[inline(always)]
    unsafe fn block(_: (), _: u32) -> f32 {
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
    /// The row's row of tiles in the grid.
    type Row = *const f32;

    #[inline(always)]
    fn row(self, row: u32) -> *const f32 {
        self.grid
            .wrapping_add(grid_index(row, 0, self.in_f) as usize)
    }

    #[inline(always)]
    unsafe fn block(row: *const f32, b: u32) -> f32 {
        ld_nc_f32(row.add((b * QK / TILE) as usize))
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

static_shared! {
    /// The address of the e4m3 kernels' staging array.
    fn fp8_stages = GEMV_FP8_STAGES[FP8_SHARED_BYTES]
}

/// One block's operands for a warp's rows: the `R` rows' e4m3 words, their tile scale, and the
/// `M` activation blocks.
#[derive(Clone, Copy)]
struct Fp8Block<const M: usize, const R: usize> {
    w: [Words; R],
    /// The scale of every row of the group: a group's rows lie in one row of tiles (see
    /// [`Fp8::operands`]).
    g: f32,
    x: [Block; M],
}

impl<const M: usize, const R: usize> Fp8Block<M, R> {
    /// Zeros, to be filled.
    #[inline(always)]
    fn empty() -> Self {
        Fp8Block {
            w: [[0; 8]; R],
            g: 0.0,
            x: [Block::default(); M],
        }
    }
}

/// The e4m3 body over one warp's row groups (groups `w, w + W, ...` of `R` rows for warp `w` of
/// the launch's `W`), a trip at a time, as one pipeline across the groups: while a trip is
/// computed, the warp's next trip (in the row group, or the first of the next group) is copied
/// into the other of its two shared-memory stages with `cp.async`, and that trip's activation
/// blocks and tile scales are loaded into registers. A trip therefore waits only for copies
/// issued a whole trip earlier, and a warp's second group starts with its first trip in flight.
struct Fp8<S: Fp8Scale, const M: usize, const R: usize, const U: usize> {
    /// The row group being summed.
    warp: Warp<R, U>,
    /// [`Warp::stride`], read once.
    stride: u32,
    w: *const u8,
    scale: S,
    act: Activation,
    acc: [[f32; M]; R],
    /// This warp's two stages in the shared array.
    stages: u32,
    /// The stage of the trip being computed (0 or 1); the next trip is copied into the other.
    phase: u32,
    /// The activation blocks and tile scales of the trip being copied, where [`Fp8::AHEAD`].
    ahead: [Fp8Block<M, R>; U],
}

impl<S: Fp8Scale, const M: usize, const R: usize, const U: usize> Fp8<S, M, R, U> {
    const STAGE: u32 = fp8_stage_bytes(R, U);

    /// The slab of stage `phase` holding blocks `u` of row `k`'s trip: the warp's 32 blocks
    /// (1 KiB) as they lie in the row.
    #[inline(always)]
    fn slab(&self, phase: u32, u: usize, k: usize) -> u32 {
        self.stages + phase * Self::STAGE + (u * R + k) as u32 * 32 * QK
    }

    /// Starts the copies of trip `t` of row group `group` into stage `phase` and commits them as
    /// one group: each slab with two contiguous 512-byte copies (lane `l` the 16 bytes at
    /// `16 l`), pieces past the row not copied. Lanes read what other lanes copied, after the
    /// wait and a warp barrier (see [`Fp8::trip`]).
    ///
    /// # Safety
    /// All lanes call it; stage `phase` is not being read.
    #[inline(always)]
    unsafe fn stage(&self, group: Warp<R, U>, t: u32, phase: u32) {
        unroll!(u < U; 4 => {
            let first = group.block(t, u) - group.lane;
            unroll!(h < 2; 4 => {
                let piece = 512 * h as u32 + 16 * group.lane;
                let live = group.live(first + piece / QK);
                unroll!(k < R; 4 => {
                    let row = self.w.wrapping_add(group.row(k) as usize * (group.blocks * QK) as usize);
                    let src = row.wrapping_add((first * QK + piece) as usize);
                    cp_async_16_if(live, self.slab(phase, u, k) + piece, src);
                });
            });
        });
        cp_async_commit();
    }

    /// Whether a trip's activation blocks and tile scales are loaded with its copies, a trip
    /// ahead (`m <= 2`), rather than at the start of the trip itself: carried across a trip,
    /// `m = 8`'s blocks took 243 registers (ptxas, sm_90).
    const AHEAD: bool = M <= 2;

    /// The activation blocks and tile scale of trip `t` of row group `group` (weights left
    /// zero), each block index clamped to the row, so that the blocks past a ragged trip read
    /// valid, unused values.
    ///
    /// One scale serves the group's `R` rows: the group starts at a multiple of `R`, which
    /// divides the tile's 128 rows, and a surplus row reads the matrix's last row, which is in
    /// the group. So every row of it reads the same grid element the .cu reads per row.
    ///
    /// # Safety
    /// The activation planes hold `M` rows.
    #[inline(always)]
    unsafe fn operands(&self, group: Warp<R, U>, t: u32) -> [Fp8Block<M, R>; U] {
        const { assert!(TILE as usize % R == 0) };
        let mut ops = [Fp8Block::empty(); U];
        unroll!(u < U; 4 => {
            let b = group.block(t, u).min(group.blocks - 1);
            ops[u].x = self.act.blocks::<M>(b);
            ops[u].g = S::block(self.scale.row(group.row(0)), b);
        });
        ops
    }

    /// Issues trip `t` of `group` into stage `phase`: its copies, and its other loads where
    /// [`Fp8::AHEAD`].
    ///
    /// # Safety
    /// As [`Fp8::stage`] and [`Fp8::operands`].
    #[inline(always)]
    unsafe fn issue(&mut self, group: Warp<R, U>, t: u32, phase: u32) {
        self.stage(group, t, phase);
        if Self::AHEAD {
            self.ahead = self.operands(group, t);
        }
    }

    /// The block's contribution to every accumulator: the dot products `s = fma(w_c, x_c, s)`
    /// for `c = 0..32` in order, then `acc = fma(s, factor, acc)`. Word by word, the four
    /// values of each of the `R` weight rows and of each of the `M` activation rows are decoded
    /// once and feed every product that needs them, so few decoded values are live at a time.
    #[inline(always)]
    fn add(&mut self, blk: &Fp8Block<M, R>) {
        let mut s = [[0.0f32; M]; R];
        unroll!(n < 8; 8 => {
            let mut w = [[0.0; 4]; R];
            unroll!(k < R; 4 => {
                w[k] = e4m3x4_to_f32x4(blk.w[k][n]);
            });
            let mut x = [[0.0; 4]; M];
            unroll!(i < M; 8 => {
                x[i] = i8x4_to_f32x4(blk.x[i].q[n]);
            });
            unroll!(k < R; 4 => {
                unroll!(i < M; 8 => {
                    unroll!(c < 4; 4 => {
                        s[k][i] = fma(w[k][c], x[i][c], s[k][i]);
                    });
                });
            });
        });
        unroll!(k < R; 4 => {
            unroll!(i < M; 8 => {
                let factor = S::factor(blk.x[i].d, blk.g);
                self.acc[k][i] = fma(s[k][i], factor, self.acc[k][i]);
            });
        });
    }
}

impl<S: Fp8Scale, const M: usize, const R: usize, const U: usize> Trips for Fp8<S, M, R, U> {
    #[inline(always)]
    unsafe fn trip<const FULL: bool>(&mut self, t: u32) {
        let warp = self.warp;
        let mut blk = if Self::AHEAD {
            self.ahead
        } else {
            self.operands(warp, t)
        };
        let (next, next_t) = warp.next_trip(t, self.stride);
        if next.has_rows() {
            self.issue(next, next_t, self.phase ^ 1);
            cp_async_wait_group::<1>();
        } else {
            cp_async_wait_group::<0>();
        }
        sync_warp();
        unroll!(u < U; 4 => {
            if FULL || warp.live(warp.block(t, u)) {
                unroll!(k < R; 4 => {
                    let at = self.slab(self.phase, u, k) + QK * warp.lane;
                    let (lo, hi) = (ld_shared_v4(at), ld_shared_v4(at + 16));
                    blk[u].w[k] = [lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w].map(f32::to_bits);
                });
                self.add(&blk[u]);
            }
        });
        // The stage is copied into again after the next trip's wait: every lane's reads first.
        sync_warp();
        self.phase ^= 1;
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
    let mut warp = Warp::<R, U>::first(in_f, out_f);
    if !warp.has_rows() {
        return;
    }
    let mut body = Fp8::<S, M, R, U> {
        warp,
        stride: Warp::<R, U>::stride(),
        w,
        scale,
        act: Activation::new(xq, xd, in_f),
        acc: [[0.0; M]; R],
        stages: fp8_stages() + thread_idx_x() / 32 * 2 * fp8_stage_bytes(R, U),
        phase: 0,
        ahead: [Fp8Block::empty(); U],
    };
    body.issue(warp, 0, 0);
    while warp.has_rows() {
        body.warp = warp;
        body.acc = [[0.0; M]; R];
        warp.run(&mut body);
        warp.store(y, body.acc, |sum| scale.finish(sum));
        warp = warp.after(body.stride);
    }
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
