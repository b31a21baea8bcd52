//! The Q8_0 kernels from four activation rows, on the int8 tensor cores, with the CUDA-core
//! kernels' bits.
//!
//! # Thread mapping
//! Tiles of [`MMA_ROWS`] rows in the pipeline of [`super::run`]. Warp `w` takes blocks `n = w + 4 s` (`s = 0..8`) of every trip, one `mma.m16n8k32` a
//! block: the tile's rows are its `a`, the activation rows its `b` (columns `m..8` never stored).
//! Lane `(g, c) = (l / 4, l % 4)` feeds bytes `8c..8c + 8` of the block of weight rows `g` and
//! `g + 8` and of activation row `g` (one `k` order on both sides, so each sum is the block's),
//! and receives the exact block sums of weight rows `g`, `g + 8` against activation rows `2c`,
//! `2c + 1`. From four activation rows ([`mma_x_staged`]) the trip's activation rows are staged: a
//! warp reads a block's rows from shared memory together, where from global memory each row was a
//! line of its own. At four rows each stage holds them after the tile's; at eight a ring of their
//! own does, a trip ahead of the weights ([`mma_x_ring`]). With fewer rows a thread loads its
//! activation into registers during the trip before.
//!
//! # Floating point
//! The CUDA-core kernels' lane `l` accumulates blocks `b = l + 32 j` in ascending `j`, and an xor
//! butterfly sums the lanes. Block `b` of trip `t` sits at `n = b - 32 t = l`, so the thread holds
//! lane `l = w + 4 s`'s accumulators as `acc[s]` and applies the same
//! `acc = fma(dw * dx, (float) sumi, acc)` to them, trip after trip. The butterfly's offsets 16,
//! 8 and 4 pair accumulators of one warp (`s ^ 4`, `s ^ 2`, `s ^ 1`) and are summed in the
//! thread; offsets 2 and 1 pair warps (`w ^ 2`, `w ^ 1`), summed through shared memory. So every
//! output has the bits of the `m = 1` kernel on its row.

use super::super::outputs::Outputs;
use super::super::{
    deepens, live_rows, mma_deep_bytes, mma_shared_bytes, mma_stage_bytes, mma_stages, mma_x_ring,
    mma_x_slot_bytes, mma_x_staged, own_case, q8_0_row_bytes, BlockQ8_0, Format, MMA_DEEP_STAGES,
    MMA_MIN_BLOCKS, MMA_QUANT_ROW, MMA_RAW_ROW, MMA_ROWS, MMA_SCALE_ROW, MMA_STAGE_BYTES,
    MMA_X_QUANT_ROW, MMA_X_SCALE_ROW, Q8_0_BLOCK_BYTES, QK, WARPS_PER_BLOCK,
};
use super::{run, Activation, Cursor, Pipeline, Plane, Rows, SLOTS, THREADS, TRIP};
use crate::abi::F16;
use crate::device::*;
use crate::swiglu::swiglu1;

/// A tile row's trip in a stage: 1024 bytes of the row, then 64 more (a raw row's last two
/// blocks and a half; a planar row's scales).
const MAIN: u32 = 1024;
const TAIL: u32 = 64;

/// A tile's weight rows in one layout: how a trip is staged and how a stage is read.
trait Tile {
    /// Starts copying trip `t` of the tile at row `first` into the stage at `buf`, this
    /// thread's share. The caller commits.
    unsafe fn stage(&self, first: u32, t: u32, buf: Shared<u8>);
    /// Weight row `g`'s bytes `8c..8c + 8` of block `n` of the stage at `buf`.
    unsafe fn quants(&self, buf: Shared<u8>, g: u32, n: u32, c: u32) -> [u32; 2];
    /// The `a` fragment of block `n`: weight rows `g` and `g + 8`, bytes `8c..8c + 8` of each,
    /// in `mma`'s register order.
    #[inline(always)]
    unsafe fn fragment(&self, buf: Shared<u8>, g: u32, n: u32, c: u32) -> [u32; 4] {
        let (lo, hi) = (self.quants(buf, g, n, c), self.quants(buf, g + 8, n, c));
        [lo[0], hi[0], lo[1], hi[1]]
    }
    /// The scale of weight row `k`'s block `n` of the stage at `buf`.
    unsafe fn scale(&self, buf: Shared<u8>, k: u32, n: u32) -> f32;
}

/// Whether raw rows' quants are read in 8-byte loads ([`Raw::quants`]): from sm_86. sm_80 keeps the
/// word loads, with which its two-row GLU entry fits [`MMA_MIN_BLOCKS`] blocks an SM without
/// spilling (perf-notes, GEMV r101 to r106).
const QUANT_PAIRS: bool = cfg!(target_feature = "sm_86");

/// Raw ggml rows. `ALIGNED` rows (16-byte aligned starts and lengths) are copied with 16-byte
/// `cp.async`; the others with 2-byte loads and stores, to the same layout.
struct Raw<const ALIGNED: bool, const GLU: bool> {
    w: Plane,
    row_bytes: u32,
    rows: Rows<GLU>,
}

impl<const ALIGNED: bool, const GLU: bool> Tile for Raw<ALIGNED, GLU> {
    #[inline(always)]
    unsafe fn stage(&self, first: u32, t: u32, buf: Shared<u8>) {
        let start = t * TRIP * Q8_0_BLOCK_BYTES;
        let len = (self.row_bytes - start).min(TRIP * Q8_0_BLOCK_BYTES);
        let src = self.w.add(start as usize);
        if ALIGNED {
            let rows = self.rows;
            rows.copy::<MAIN>(first, MMA_ROWS, src, buf, MMA_RAW_ROW, len.min(MAIN));
            let (tail, len) = (src.add(MAIN as usize), len.saturating_sub(MAIN));
            rows.copy::<TAIL>(first, MMA_ROWS, tail, buf.add(MAIN), MMA_RAW_ROW, len);
        } else {
            for r in 0..MMA_ROWS {
                let from = self.rows.at(src, first, r);
                let mut at = 2 * self.rows.tid;
                while at < len {
                    buf.add(r * MMA_RAW_ROW + at)
                        .cast::<u16>()
                        .store(ld_nc_u16(from.add(at as usize)));
                    at += 2 * THREADS;
                }
            }
        }
    }

    /// The quants sit 2-byte aligned at `34 n + 2`, `p` bytes past an 8-byte boundary (stage
    /// rows are 8-byte multiples): a lane reads the 16 bytes from there in two 8-byte loads, which
    /// a warp's lanes take on all 32 banks, and its 8 at `p` by selects and funnel shifts. A
    /// warp's blocks `n = w + 4 s` share one `p`, so each choice is warp-uniform. Without
    /// [`QUANT_PAIRS`], three aligned words (each a 2-way bank conflict at this row stride) and
    /// two funnel shifts by 0 or 16 bits.
    #[inline(always)]
    unsafe fn quants(&self, buf: Shared<u8>, g: u32, n: u32, c: u32) -> [u32; 2] {
        const { assert!(MMA_RAW_ROW.is_multiple_of(8)) };
        if !QUANT_PAIRS {
            let at = buf.add(g * MMA_RAW_ROW + n * Q8_0_BLOCK_BYTES + 2 + 8 * c);
            let (base, shift) = at.aligned_word();
            let w = [base.load(), base.add(1).load(), base.add(2).load()];
            return [
                funnel_shift_rc(w[0], w[1], shift),
                funnel_shift_rc(w[1], w[2], shift),
            ];
        }
        let p = (n * Q8_0_BLOCK_BYTES + 2) % 8;
        let base = buf.add(g * MMA_RAW_ROW + n * Q8_0_BLOCK_BYTES + 2 + 8 * c - p);
        let [w0, w1] = base.cast::<[u32; 2]>().load();
        let [w2, w3] = base.add(8).cast::<[u32; 2]>().load();
        let (x, y, z) = if p >= 4 { (w1, w2, w3) } else { (w0, w1, w2) };
        let shift = 8 * (p % 4);
        [funnel_shift_rc(x, y, shift), funnel_shift_rc(y, z, shift)]
    }

    #[inline(always)]
    unsafe fn scale(&self, buf: Shared<u8>, k: u32, n: u32) -> f32 {
        let at = buf.add(k * MMA_RAW_ROW + n * Q8_0_BLOCK_BYTES);
        f16_to_f32(at.cast::<u16>().load())
    }
}

/// Planar rows: the quant plane (rows 16-byte aligned) always by 16-byte `cp.async`; the scale
/// plane so when `ALIGNED` (its rows start 16-byte aligned: `in_f % 256 == 0`), else by 2-byte
/// loads and stores. Scales follow all rows' quants in a stage.
struct Planar<const ALIGNED: bool, const GLU: bool> {
    wq: Plane,
    wd: Plane,
    in_f: u32,
    rows: Rows<GLU>,
}

impl<const ALIGNED: bool, const GLU: bool> Planar<ALIGNED, GLU> {
    const SCALES: u32 = MMA_ROWS * MMA_QUANT_ROW;
}

impl<const ALIGNED: bool, const GLU: bool> Tile for Planar<ALIGNED, GLU> {
    #[inline(always)]
    unsafe fn stage(&self, first: u32, t: u32, buf: Shared<u8>) {
        let start = t * TRIP * QK;
        let len = (self.in_f - start).min(TRIP * QK);
        let rows = self.rows;
        let quants = self.wq.add(start as usize);
        rows.copy::<MAIN>(first, MMA_ROWS, quants, buf, MMA_QUANT_ROW, len);
        let scales = self.wd.add((2 * start / QK) as usize);
        let dst = buf.add(Self::SCALES);
        if ALIGNED {
            rows.copy::<TAIL>(first, MMA_ROWS, scales, dst, MMA_SCALE_ROW, 2 * len / QK);
        } else {
            // The tile's 16 x 32 scales of a trip, four a thread.
            unroll::<{ (MMA_ROWS * TRIP / THREADS) as usize }>(|k| {
                let p = rows.tid + THREADS * k as u32;
                let (r, b) = (p / TRIP, p % TRIP);
                if b < len / QK {
                    let from = rows.at(scales, first, r).add(2 * b as usize);
                    dst.add(r * MMA_SCALE_ROW + 2 * b)
                        .cast::<u16>()
                        .store(ld_nc_u16(from));
                }
            });
        }
    }

    #[inline(always)]
    unsafe fn quants(&self, buf: Shared<u8>, g: u32, n: u32, c: u32) -> [u32; 2] {
        buf.add(g * MMA_QUANT_ROW + n * QK + 8 * c)
            .cast::<[u32; 2]>()
            .load()
    }

    #[inline(always)]
    unsafe fn scale(&self, buf: Shared<u8>, k: u32, n: u32) -> f32 {
        let at = buf.add(Self::SCALES + k * MMA_SCALE_ROW + 2 * n);
        f16_to_f32(at.cast::<u16>().load())
    }
}

/// One thread's activation rows, where it loads them itself: row `g`'s quants and rows `2c`,
/// `2c + 1`'s scales.
#[derive(Clone, Copy)]
struct ActRows {
    qs: *const u8,
    d: [*const f32; 2],
}

/// A trip's activation for one thread, each of its blocks: bytes `8c..8c + 8` of row `g` and
/// the scales of rows `2c`, `2c + 1`.
type TripX = [([u32; 2], [f32; 2]); SLOTS];

/// One thread's part of a block: the butterfly lanes `w + 4 s` of weight rows `g`, `g + 8` of
/// the tile in hand against activation rows `2c`, `2c + 1` (`acc[s][j]`: weight row
/// `g + 8 (j / 2)`, activation row `2c + j % 2`).
struct Body<T, const ACT_ROWS: usize, const GLU: bool> {
    tile: T,
    rows: Rows<GLU>,
    /// The activation, to stage; this thread's rows of it, to load; and where this thread reads
    /// its rows in a stage. Rows past the `ACT_ROWS` read the last: their sums are never stored.
    x: Activation,
    own: ActRows,
    xq_at: u32,
    xd_at: [u32; 2],
    warp: u32,
    g: u32,
    c: u32,
    nb: u32,
    acc: [[f32; 4]; SLOTS],
}

impl<T: Tile, const ACT_ROWS: usize, const GLU: bool> Body<T, ACT_ROWS, GLU> {
    const STAGED: bool = mma_x_staged(ACT_ROWS);

    /// Trip `t` from the stage at `buf`, with the activation `x` loaded ahead or staged; the
    /// last, ragged trip of a row skips the blocks past it (warp-uniform).
    #[inline(always)]
    unsafe fn trip_of<const FULL: bool>(
        &mut self,
        t: u32,
        buf: Shared<u8>,
        xs: Shared<u8>,
        x: &TripX,
    ) {
        let staged = if mma_x_ring(ACT_ROWS) {
            xs
        } else {
            buf.add(MMA_STAGE_BYTES)
        };
        unroll::<SLOTS>(|s| {
            let n = self.warp + WARPS_PER_BLOCK * s as u32;
            if FULL || TRIP * t + n < self.nb {
                let (xq, dx) = if Self::STAGED {
                    let xq = staged.add(self.xq_at + QK * n).cast::<[u32; 2]>().load();
                    let d = |at: u32| staged.add(at + 4 * n).cast::<f32>().load();
                    (xq, self.xd_at.map(d))
                } else {
                    x[s]
                };
                let mut sums = [0; 4];
                mma_s8(&mut sums, self.tile.fragment(buf, self.g, n, self.c), xq);
                let dw = [
                    self.tile.scale(buf, self.g, n),
                    self.tile.scale(buf, self.g + 8, n),
                ];
                unroll::<4>(|j| {
                    let acc = &mut self.acc[s][j];
                    *acc = fma(dw[j / 2] * dx[j % 2], i32_to_f32(sums[j]), *acc);
                });
            }
        });
    }

    /// The butterfly's first three levels, in the thread.
    #[inline(always)]
    fn warp_part(&self, j: usize) -> f32 {
        let a = |s: usize| self.acc[s][j];
        ((a(0) + a(4)) + (a(2) + a(6))) + ((a(1) + a(5)) + (a(3) + a(7)))
    }
}

impl<T: Tile, const ACT_ROWS: usize, const GLU: bool> Pipeline for Body<T, ACT_ROWS, GLU> {
    const STAGES: u32 = mma_stages(ACT_ROWS);
    const ROWS: u32 = MMA_ROWS;
    const STAGE: u32 = mma_stage_bytes(ACT_ROWS);
    const PARTS: u32 = WARPS_PER_BLOCK * 8 * MMA_ROWS * 4;
    const X_SLOT: u32 = mma_x_slot_bytes(ACT_ROWS);
    const WARPS: u32 = WARPS_PER_BLOCK;
    // The launcher's rule, asked for the raw layout: both layouts deepen alike, and the body's
    // tile does not name its format.
    const DEEPENS: bool = !GLU && deepens(Format::Q8_0, ACT_ROWS);
    type Ahead = TripX;

    #[inline(always)]
    fn out_f(&self) -> u32 {
        self.rows.out_f
    }

    #[inline(always)]
    fn trips(&self) -> u32 {
        self.nb.div_ceil(TRIP)
    }

    #[inline(always)]
    unsafe fn stage(&self, at: Cursor, buf: Shared<u8>) {
        self.tile.stage(at.first, at.t, buf);
    }

    #[inline(always)]
    unsafe fn stage_act(&self, at: Cursor, buf: Shared<u8>) {
        if Self::STAGED && !mma_x_ring(ACT_ROWS) {
            let x = buf.add(MMA_STAGE_BYTES);
            self.x.stage::<ACT_ROWS>(self.nb, self.rows.tid, at.t, x);
        }
    }

    #[inline(always)]
    unsafe fn stage_x(&self, at: Cursor, buf: Shared<u8>) {
        self.x.stage::<ACT_ROWS>(self.nb, self.rows.tid, at.t, buf);
    }

    /// The trip's activation blocks where they are not staged (else nothing, which the
    /// compiler drops), each block index clamped to the row, so that the ragged trip reads
    /// valid (unused) blocks.
    #[inline(always)]
    unsafe fn ahead(&self, at: Cursor) -> TripX {
        let mut x = [([0; 2], [0.0; 2]); SLOTS];
        if !Self::STAGED {
            unroll::<SLOTS>(|s| {
                let b = (TRIP * at.t + self.warp + WARPS_PER_BLOCK * s as u32).min(self.nb - 1);
                x[s] = (
                    ld_v2_u32(self.own.qs.add((b * QK + 8 * self.c) as usize)),
                    self.own.d.map(|d| ld_f32(d.add(b as usize))),
                );
            });
        }
        x
    }

    #[inline(always)]
    unsafe fn trip(&mut self, at: Cursor, buf: Shared<u8>, xs: Shared<u8>, x: &TripX) {
        if at.t < self.nb / TRIP {
            self.trip_of::<true>(at.t, buf, xs, x);
        } else {
            self.trip_of::<false>(at.t, buf, xs, x);
        }
    }

    /// The butterfly's last two levels through shared memory: `parts[w][i][k]`.
    #[inline(always)]
    unsafe fn store(&mut self, first: u32, parts: Shared<f32>, y: Outputs) {
        let part = |w: u32, i: u32, k: u32| parts.add((w * 8 + i) * MMA_ROWS + k);
        unroll::<4>(|j| {
            let (k, i) = (self.g + 8 * (j as u32 / 2), 2 * self.c + j as u32 % 2);
            part(self.warp, i, k).store(self.warp_part(j));
        });
        self.acc = [[0.0; 4]; SLOTS];
        sync_threads();
        let (tid, rows) = (self.rows.tid, self.rows);
        let sum = |i: u32, k: u32| {
            let p = |w: u32| part(w, i, k).load();
            (p(0) + p(2)) + (p(1) + p(3))
        };
        // One matrix: a thread a (activation row, tile row). A GLU: a thread a (activation row,
        // gate row), which takes the up row `half` on.
        let (half, out_f) = (MMA_ROWS / 2, rows.out_f);
        if !GLU && tid < ACT_ROWS as u32 * MMA_ROWS {
            let (i, k) = (tid / MMA_ROWS, tid % MMA_ROWS);
            let sum = sum(i, k);
            if first + k < out_f && (ACT_ROWS <= 2 || i < self.x.live) {
                *y.at(i, first + k) = sum;
            }
        } else if GLU && tid < ACT_ROWS as u32 * half {
            let (i, k, n) = (tid / half, tid % half, out_f / 2);
            let (gate, up) = (sum(i, k), sum(i, k + half));
            let row = rows.glu_row(first, k);
            if row < n && (ACT_ROWS <= 2 || i < self.x.live) {
                *y.base().add(i as usize * n as usize + row as usize) = swiglu1(gate, up);
            }
        }
    }
}

/// The block's body around `tile`, and its run: over `out_f` rows of one matrix, or, for a
/// `GLU`, over `out_f` rows of each of two ([`Rows`]), `y[i][r] = swiglu(gate, up)`.
#[inline(always)]
unsafe fn kernel<T: Tile, const ACT_ROWS: usize, const GLU: bool>(
    tile: impl FnOnce(Rows<GLU>) -> T,
    xq: *const i8,
    xd: *const f32,
    y: Outputs,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    const { assert!(SLOTS == 8 && ACT_ROWS <= 8) };
    launch_bounds::<THREADS, MMA_MIN_BLOCKS>();
    const { assert!(super::shared_bytes::<Body<T, ACT_ROWS, GLU>>() == mma_shared_bytes(ACT_ROWS)) };
    const {
        let deep = super::shared_bytes_at::<Body<T, ACT_ROWS, GLU>>(MMA_DEEP_STAGES);
        assert!(deep == mma_deep_bytes(ACT_ROWS));
    };
    // Reduced to the block it is (the launch's), so that the copies' row guards fold away where
    // every thread's rows are in the tile, instead of a branch around each copy.
    let tid = thread_idx_x() % THREADS;
    let rows = Rows {
        out_f: if GLU { 2 * out_f as u32 } else { out_f as u32 },
        half: MMA_ROWS / 2,
        tid,
        threads: THREADS,
    };
    let (lane, nb) = (tid % 32, in_f as u32 / QK);
    let (g, c) = (lane / 4, lane % 4);
    // The mma's eight activation columns: those past ACT_ROWS read the last, and their sums are
    // never stored (nor are those from `live` on, which the staging leaves uncopied).
    let live = live_rows::<ACT_ROWS>(m);
    let row = |i: u32| i.min(ACT_ROWS as u32 - 1);
    let (x, dr) = (xq as *const u8, [row(2 * c), row(2 * c + 1)]);
    let body = Body::<T, ACT_ROWS, GLU> {
        tile: tile(rows),
        rows,
        x: Activation { qs: x, d: xd, live },
        own: ActRows {
            qs: x.add(row(g) as usize * in_f as usize),
            d: dr.map(|r| xd.add(r as usize * nb as usize)),
        },
        xq_at: row(g) * MMA_X_QUANT_ROW + 8 * c,
        xd_at: dr.map(|r| ACT_ROWS as u32 * MMA_X_QUANT_ROW + r * MMA_X_SCALE_ROW),
        warp: tid / 32,
        g,
        c,
        nb,
        acc: [[0.0; 4]; SLOTS],
    };
    run(body, y);
}

/// Raw ggml Q8_0 rows of `w` on the tensor cores, staged by `cp.async` where every row starts
/// 16-byte aligned.
#[inline(always)]
unsafe fn raw<const ACT_ROWS: usize, const GLU: bool>(
    w: Plane,
    xq: *const i8,
    xd: *const f32,
    y: Outputs,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    let row_bytes = w.stride;
    if w.aligned(16) {
        let tile = |rows| Raw::<true, GLU> { w, row_bytes, rows };
        kernel::<_, ACT_ROWS, GLU>(tile, xq, xd, y, in_f, out_f, m);
    } else {
        let tile = |rows| Raw::<false, GLU> { w, row_bytes, rows };
        kernel::<_, ACT_ROWS, GLU>(tile, xq, xd, y, in_f, out_f, m);
    }
}

/// Planar Q8_0 rows on the tensor cores, the scales staged by `cp.async` where every scale row
/// starts 16-byte aligned, as a GLU's must: compiled into the GLU kernel, the 2-byte path's
/// registers would be the whole kernel's, and fewer of its blocks would fit an SM.
#[inline(always)]
unsafe fn planar<const ACT_ROWS: usize, const GLU: bool>(
    wq: Plane,
    wd: Plane,
    xq: *const i8,
    xd: *const f32,
    y: Outputs,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    let in_f_u = in_f as u32;
    if wd.aligned(16) {
        let tile = |rows| Planar::<true, GLU> {
            wq,
            wd,
            in_f: in_f_u,
            rows,
        };
        kernel::<_, ACT_ROWS, GLU>(tile, xq, xd, y, in_f, out_f, m);
    } else if !GLU {
        let tile = |rows| Planar::<false, GLU> {
            wq,
            wd,
            in_f: in_f_u,
            rows,
        };
        kernel::<_, ACT_ROWS, GLU>(tile, xq, xd, y, in_f, out_f, m);
    }
}

/// Raw ggml Q8_0 rows on the tensor cores (see the entries `gemv_q8_0_m*`).
#[inline(always)]
pub(in crate::gemv) unsafe fn gemv_q8_0<const ACT_ROWS: usize>(
    w: *const BlockQ8_0,
    xq: *const i8,
    xd: *const f32,
    y: Outputs,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    let w = Plane::one(w as *const u8, q8_0_row_bytes(in_f as u32));
    raw::<ACT_ROWS, false>(w, xq, xd, y, in_f, out_f, m);
}

/// Planar Q8_0 on the tensor cores (see the entries `gemv_q8_0_planar_m*`).
#[inline(always)]
pub(in crate::gemv) unsafe fn gemv_q8_0_planar<const ACT_ROWS: usize>(
    wq: *const i8,
    wd: *const F16,
    xq: *const i8,
    xd: *const f32,
    y: Outputs,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    let in_f_u = in_f as u32;
    let wq = Plane::one(wq as *const u8, in_f_u);
    let wd = Plane::one(wd as *const u8, 2 * in_f_u / QK);
    planar::<ACT_ROWS, false>(wq, wd, xq, xd, y, in_f, out_f, m);
}

/// Raw ggml Q8_0 gate and up rows with the GLU (see the entries `gemv_q8_0_glu_m*`).
#[inline(always)]
pub(in crate::gemv) unsafe fn gemv_q8_0_glu<const ACT_ROWS: usize>(
    wg: *const BlockQ8_0,
    wu: *const BlockQ8_0,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    own_case::<ACT_ROWS>(
        Format::Q8_0,
        (y, m, out_f, out_f, out_f),
        #[inline(always)]
        |m, y| {
            let row_bytes = q8_0_row_bytes(in_f as u32);
            let w = Plane::glu(wg as *const u8, wu as *const u8, row_bytes);
            raw::<ACT_ROWS, true>(w, xq, xd, y, in_f, out_f, m);
        },
    );
}

/// Planar Q8_0 gate and up rows with the GLU (see the entries `gemv_q8_0_planar_glu_m*`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(in crate::gemv) unsafe fn gemv_q8_0_planar_glu<const ACT_ROWS: usize>(
    wgq: *const i8,
    wgd: *const F16,
    wuq: *const i8,
    wud: *const F16,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    own_case::<ACT_ROWS>(
        Format::Q8_0Planar,
        (y, m, out_f, out_f, out_f),
        #[inline(always)]
        |m, y| {
            let in_f_u = in_f as u32;
            let wq = Plane::glu(wgq as *const u8, wuq as *const u8, in_f_u);
            let wd = Plane::glu(wgd as *const u8, wud as *const u8, 2 * in_f_u / QK);
            planar::<ACT_ROWS, true>(wq, wd, xq, xd, y, in_f, out_f, m);
        },
    );
}
