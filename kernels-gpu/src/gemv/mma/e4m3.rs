//! The e4m3 kernels on the f16 tensor cores, at every `m`.
//!
//! # Thread mapping
//! Tiles of `2M` rows a set (one set, or two: [`fp8_mma_sets`]) in the pipeline of [`super::run`]
//! (a tile's rows divide the 128 rows of a scale tile, so they share their tile scales), taken by
//! each warp alone up to `ACT_ROWS = 2` and by the block's four warps above ([`fp8_mma_warps`]). Of
//! every trip's 32 blocks, spans of eight: a warp of a block takes span `w`, a warp alone all four
//! in turn. Span `v` is blocks `n = 8v + s` (`s = 0..8`), in `ACT_ROWS` pairs of `mma.m16n8k16`, `G
//! = 8 / ACT_ROWS` blocks a pair: row `a` of the pair's `a` is (tile row `a / G`, block `a % G`),
//! column `j` of its `b` (activation row `j / G`, block `j % G`), and only the products of a row
//! and a column of one block are kept (at `ACT_ROWS = 8` all of them; at `ACT_ROWS = 1` the
//! diagonal). So a pair reads 512 weight bytes at every `ACT_ROWS`, and every row and column it
//! reads is real. A second set's pairs take rows `2M` on against the same `b`, so that its
//! activation bytes and factors serve both. Lane `(g, c) = (l / 4, l % 4)` feeds bytes `8c..8c + 8`
//! of its rows' block and of its column's: bytes `8c..8c + 4` to the first `mma`, `8c + 4..8c + 8`
//! to the second, bytes 0 and 1 of each word as `k = 2c, 2c + 1` and bytes 2 and 3 as `k = 2c + 8,
//! 2c + 9` (one `k` order for both operands). A lane's activation bytes and block scales come
//! from the stage at eight rows ([`fp8_mma_x_staged`]: a warp's loads of them from global memory
//! touch a line for each row), else from its own loads a trip ahead. Block-128's tile scales come
//! from the stage at every `m` but one: in the two-set tiles at one row the warp loads a trip's
//! eight a trip ahead with the activation, one a lane, and a lane takes each block's from the lane
//! that holds it, which ran faster there than the stage's copies (perf-notes, GEMV r163, r165).

use super::super::outputs::Outputs;
use super::super::{
    fp8_mma_sets, fp8_mma_shared_bytes, fp8_mma_warps, fp8_mma_x_staged, grid_cols, grid_index,
    live_rows, mma_x_bytes, own_case, Format, BLOCK_THREADS, FP8_MMA_STAGES, FP8_SETS_MIN_BLOCKS,
    MMA_QUANT_ROW, MMA_X_QUANT_ROW, MMA_X_SCALE_ROW, MMA_X_TILES, QK, TILE, WARPS_PER_BLOCK,
};
use super::{meet, run, shared_bytes, Activation, Cursor, Pipeline, Plane, Rows, SLOTS, TRIP};
use crate::device::*;
use crate::swiglu::swiglu1;

/// Bytes a stage gives each tile row: the trip's 1024 and 32 more, so that the 8 rows or
/// blocks of a warp's fragment reads start 8 banks apart.
const ROW: u32 = MMA_QUANT_ROW;

/// Classes of a tile's sums: the blocks `32 t + n` of one `n`.
const CLASSES: u32 = TRIP;

/// Blocks of a row that one tile scale covers.
const BLOCKS_PER_TILE: u32 = TILE / QK;

/// Tile scales of a grid row that one trip's blocks take.
const TRIP_TILES: u32 = TRIP / BLOCKS_PER_TILE;
const _: () = assert!(2 * TRIP_TILES * 4 <= MMA_X_TILES && SLOTS as u32 == 2 * BLOCKS_PER_TILE);

/// How the matrix is scaled (a GLU's two matrices each their own way).
trait Scale: Copy {
    /// The format this scaling makes.
    const FORMAT: Format;
    /// What scales block `b` of a tile: nothing, its tile scale, or a GLU's gate and up tile
    /// scales.
    type Tile: Copy + Default;
    /// A kept column's factors of a pair: one for the tile's rows, or one for each half of a
    /// GLU's tile.
    type F: Copy + Default;
    /// Starts copying the tile scales of trip `t` of the tile at row `first` to `dst` (at most
    /// [`MMA_X_TILES`] bytes), thread `tid`'s share.
    ///
    /// # Safety
    /// `first` is a row of the matrix and `t` a trip of its rows; `dst` is the stage's room for
    /// them.
    unsafe fn stage(self, first: u32, t: u32, tid: u32, dst: Shared<u8>);
    /// What a lane loads of a trip's tile scales a trip ahead where they are not staged
    /// ([`Body::TILES_AHEAD`]).
    type Ahead: Copy + Default;
    /// Tile scale `lane % 8` of trip `t` of the tile at row `first`, from global memory (clamped
    /// into the row's tile scales: a block past the row is never kept). Only block-128's two-set
    /// tiles load ahead ([`Body::TILES_AHEAD`]); for the other scalings nothing is loaded.
    ///
    /// # Safety
    /// `first` is a row of the matrix and `t` a trip of its rows.
    #[inline(always)]
    unsafe fn tile_ahead(self, _first: u32, _t: u32, _lane: u32) -> Self::Ahead {
        Self::Ahead::default()
    }
    /// Block `n`'s tile scale of the trip, from the lane that loaded it ([`Scale::tile_ahead`]);
    /// reached only where that loads.
    ///
    /// # Safety
    /// Every lane of the warp calls it, `a` from [`Scale::tile_ahead`] of the same trip.
    #[inline(always)]
    unsafe fn shared(_a: Self::Ahead, _n: u32) -> Self::Tile {
        Self::Tile::default()
    }
    /// Block `n`'s tile scale of the trip staged at `at`.
    ///
    /// # Safety
    /// `at` holds what [`Scale::stage`] copied, and `n` is a block of the row.
    unsafe fn staged(at: Shared<u8>, n: u32) -> Self::Tile;
    /// What a block's sum is multiplied by, from the activation scale `dx` and the block's tile
    /// scale: `dx`, or `dx * g`.
    fn factor(dx: f32, g: Self::Tile) -> Self::F;
    /// The factor of the tile's rows of half `h` (0: rows `0..m`, 1: rows `m..2m`).
    fn of(f: Self::F, h: usize) -> f32;
    /// `y` of a row of half `h` from its sum.
    fn finish(self, sum: f32, h: usize) -> f32;
}

/// One scale for the tensor (a GLU's gate and up one each), applied to the row's sum.
#[derive(Clone, Copy)]
struct PerTensor([f32; 2]);

impl Scale for PerTensor {
    const FORMAT: Format = Format::E4m3;
    type Tile = ();
    type F = f32;
    type Ahead = ();

    #[inline(always)]
    unsafe fn stage(self, _: u32, _: u32, _: u32, _: Shared<u8>) {}

    #[inline(always)]
    unsafe fn staged(_: Shared<u8>, _: u32) {}

    #[inline(always)]
    fn factor(dx: f32, _: ()) -> f32 {
        dx
    }

    #[inline(always)]
    fn of(f: f32, _: usize) -> f32 {
        f
    }

    #[inline(always)]
    fn finish(self, sum: f32, h: usize) -> f32 {
        // Selected, not indexed: `h` is a lane's at the GLU's store, and an indexed array would
        // go to local memory.
        sum * if h == 0 { self.0[0] } else { self.0[1] }
    }
}

/// One scale per 128 x 128 tile, folded into each block's factor.
#[derive(Clone, Copy)]
struct Tiles {
    grid: *const f32,
    in_f: u32,
}

impl Scale for Tiles {
    const FORMAT: Format = Format::E4m3B128;
    type Tile = f32;
    type F = f32;
    type Ahead = f32;

    #[inline(always)]
    unsafe fn stage(self, first: u32, t: u32, tid: u32, dst: Shared<u8>) {
        if tid < TRIP_TILES {
            let c = TRIP_TILES * t + tid;
            let from = self
                .grid
                .wrapping_add(grid_index(first, c * TILE, self.in_f) as usize);
            cp_async_4_if(
                c < grid_cols(self.in_f),
                dst.add(4 * tid),
                from as *const u8,
            );
        }
    }

    #[inline(always)]
    unsafe fn tile_ahead(self, first: u32, t: u32, lane: u32) -> f32 {
        let c = (TRIP_TILES * t + lane % TRIP_TILES).min(grid_cols(self.in_f) - 1);
        ld_nc_f32(
            self.grid
                .add(grid_index(first, c * TILE, self.in_f) as usize),
        )
    }

    #[inline(always)]
    unsafe fn shared(a: f32, n: u32) -> f32 {
        shfl_idx(u32::MAX, a, n / BLOCKS_PER_TILE)
    }

    #[inline(always)]
    unsafe fn staged(at: Shared<u8>, n: u32) -> f32 {
        at.add(4 * (n / BLOCKS_PER_TILE)).cast::<f32>().load()
    }

    #[inline(always)]
    fn factor(dx: f32, g: f32) -> f32 {
        dx * g
    }

    #[inline(always)]
    fn of(f: f32, _: usize) -> f32 {
        f
    }

    #[inline(always)]
    fn finish(self, sum: f32, _: usize) -> f32 {
        sum
    }
}

/// A GLU's gate and up matrices, each with its block-128 grid: a tile's halves take their
/// rows' tile scales, both of real row `first / 2`'s tile row.
#[derive(Clone, Copy)]
struct GluTiles {
    grid: [*const f32; 2],
    in_f: u32,
}

impl Scale for GluTiles {
    const FORMAT: Format = Format::E4m3B128;
    type Tile = [f32; 2];
    type F = [f32; 2];
    type Ahead = ();

    /// The gate grid's eight, then the up grid's.
    #[inline(always)]
    unsafe fn stage(self, first: u32, t: u32, tid: u32, dst: Shared<u8>) {
        if tid < 2 * TRIP_TILES {
            let (h, c) = (tid / TRIP_TILES, TRIP_TILES * t + tid % TRIP_TILES);
            let grid = if h == 0 { self.grid[0] } else { self.grid[1] };
            let from = grid.wrapping_add(grid_index(first / 2, c * TILE, self.in_f) as usize);
            cp_async_4_if(
                c < grid_cols(self.in_f),
                dst.add(4 * tid),
                from as *const u8,
            );
        }
    }

    #[inline(always)]
    unsafe fn staged(at: Shared<u8>, n: u32) -> [f32; 2] {
        let at = at.add(4 * (n / BLOCKS_PER_TILE));
        [
            at.cast::<f32>().load(),
            at.add(4 * TRIP_TILES).cast::<f32>().load(),
        ]
    }

    #[inline(always)]
    fn factor(dx: f32, g: [f32; 2]) -> [f32; 2] {
        [dx * g[0], dx * g[1]]
    }

    #[inline(always)]
    fn of(f: [f32; 2], h: usize) -> f32 {
        f[h]
    }

    #[inline(always)]
    fn finish(self, sum: f32, _: usize) -> f32 {
        sum
    }
}

/// A pair's activation for one thread, where it is not staged: bytes `8c..8c + 8` of its
/// column's block, and the block scales of the columns whose sums it keeps (zero where it keeps
/// none).
#[derive(Clone, Copy, Default)]
struct PairX {
    q: [u32; 2],
    dx: [f32; 2],
}

/// One thread's part of its group: the `SPANS` spans `span + v` of every trip. Of the sums of
/// columns `2c + e` it receives, it keeps those of its own block, `(2c + e) % G == g % G`: at
/// `ACT_ROWS = 8` both, below at most `e = g % 2` ([`Body::KEPT`]). `acc[v][p][q][h][k]`: the sum
/// of class `8 (span + v) + pG + g % G` of tile row `g / G + (2q + h) ACT_ROWS` (set `q`) against
/// activation row `(2c + e_k) / G`.
struct Body<S, const ACT_ROWS: usize, const SPANS: usize, const GLU: bool> {
    scale: S,
    w: Plane,
    xq: *const u8,
    xd: *const f32,
    rows: Rows<GLU>,
    in_f: u32,
    nb: u32,
    /// The first of the thread's spans.
    span: u32,
    c: u32,
    /// `g % G`: the block of each pair this thread reads.
    slot: u32,
    /// `g / G`: the tile row of the thread's first `a` row (the second is `ACT_ROWS` on).
    row: u32,
    /// The columns `2c + e` whose sums the thread keeps: `e_k` for `k <` [`Body::KEPT`].
    e: [u32; 2],
    /// Whether it keeps any.
    keeps: bool,
    /// The activation's rows ([`live_rows`]): rows from it on read row `x_live - 1` and are
    /// never stored.
    x_live: u32,
    acc: [[[[[f32; 2]; 2]; MAX_SETS]; ACT_ROWS]; SPANS],
}

/// Row sets a tile may have ([`fp8_mma_sets`]).
const MAX_SETS: usize = 2;

/// A trip's activation for one thread: each span's pairs.
type TripX<const ACT_ROWS: usize, const SPANS: usize> = [[PairX; ACT_ROWS]; SPANS];

impl<S: Scale, const ACT_ROWS: usize, const SPANS: usize, const GLU: bool>
    Body<S, ACT_ROWS, SPANS, GLU>
{
    /// Blocks a pair takes.
    const G: u32 = 8 / ACT_ROWS as u32;

    /// Row sets of a tile.
    const SETS: u32 = if GLU {
        1
    } else {
        fp8_mma_sets(S::FORMAT, ACT_ROWS)
    };

    /// Whether a stage holds the trip's activation rows, after the tile's.
    const X_STAGED: bool = fp8_mma_x_staged(ACT_ROWS);

    /// Whether the warp loads a trip's tile scales with its activation a trip ahead, a lane each,
    /// rather than taking them from the stage: the two-set tiles, which are block-128's at one row,
    /// where a warp takes a tile alone (the stage keeps their room, as the launcher's formula is one
    /// for both builds). The kernel table asks the same of [`fp8_mma_sets`].
    const TILES_AHEAD: bool = Self::SETS == 2;

    /// Columns whose sums a thread keeps: both at `G = 1`; one at most where `G` is even, as
    /// `2c` and `2c + 1` then lie in blocks of different parity.
    const KEPT: usize = if ACT_ROWS == 8 { 2 } else { 1 };

    /// The activation row of kept column `k`.
    #[inline(always)]
    fn column(&self, k: usize) -> u32 {
        (2 * self.c + self.e[k]) / Self::G
    }

    /// The activation row read for row `i`: from `x_live` on, row `x_live - 1`, whose sums are
    /// never stored (a constant below four rows, where `x_live` is `ACT_ROWS`).
    #[inline(always)]
    fn x_row(&self, i: u32) -> u32 {
        if ACT_ROWS > 2 {
            i.min(self.x_live - 1)
        } else {
            i
        }
    }

    /// The trip's block (`n < 32`) that pair `p` of span `v` of this thread reads.
    #[inline(always)]
    fn block(&self, v: usize, p: usize) -> u32 {
        SLOTS as u32 * (self.span + v as u32) + Self::G * p as u32 + self.slot
    }

    /// Where the tile's sum of class `n`, tile row `k` and activation row `i` meets the others.
    #[inline(always)]
    fn part(parts: Shared<f32>, n: u32, k: u32, i: u32) -> Shared<f32> {
        parts.add((n * Self::ROWS + k) * ACT_ROWS as u32 + i)
    }

    /// Where a stage holds its trip's tile scales: after the tile's rows and the activation's,
    /// where it holds those; [`MMA_X_TILES`] bytes end the stage.
    const TILES_AT: u32 = Self::ROWS * ROW
        + if Self::X_STAGED {
            mma_x_bytes(ACT_ROWS)
        } else {
            0
        };

    /// The tile scales of the stage at `buf`.
    #[inline(always)]
    fn tiles(buf: Shared<u8>) -> Shared<u8> {
        buf.add(Self::TILES_AT)
    }
}

impl<S: Scale, const ACT_ROWS: usize, const SPANS: usize, const GLU: bool> Pipeline
    for Body<S, ACT_ROWS, SPANS, GLU>
{
    const STAGES: u32 = FP8_MMA_STAGES;
    const ROWS: u32 = 2 * ACT_ROWS as u32 * Self::SETS;
    const STAGE: u32 = Self::TILES_AT + MMA_X_TILES;
    const PARTS: u32 = CLASSES * Self::ROWS * ACT_ROWS as u32 * 4;
    const WARPS: u32 = WARPS_PER_BLOCK / SPANS as u32;
    type Ahead = (TripX<ACT_ROWS, SPANS>, S::Ahead);

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
        let start = at.t * TRIP * QK;
        let len = (self.in_f - start).min(TRIP * QK);
        let src = self.w.add(start as usize);
        self.rows
            .copy::<{ TRIP * QK }>(at.first, Self::ROWS, src, buf, ROW, len);
    }

    #[inline(always)]
    unsafe fn stage_act(&self, at: Cursor, buf: Shared<u8>) {
        if Self::X_STAGED {
            let x = Activation {
                qs: self.xq,
                d: self.xd,
                live: self.x_live,
            };
            let xs = buf.add(Self::ROWS * ROW);
            x.stage::<ACT_ROWS>(self.nb, self.rows.tid, at.t, xs);
        }
        // Weights, but 4-byte copies, which go through L1: after the wait, as the activation's.
        if !Self::TILES_AHEAD {
            let tiles = Self::tiles(buf);
            self.scale.stage(at.first, at.t, self.rows.tid, tiles);
        }
    }

    /// Each pair's activation bytes and block scales (nothing where the activation is staged),
    /// block indices clamped to the row, so that the ragged trip reads valid (unused) blocks.
    #[inline(always)]
    unsafe fn ahead(&self, at: Cursor) -> (TripX<ACT_ROWS, SPANS>, S::Ahead) {
        let mut x = [[PairX::default(); ACT_ROWS]; SPANS];
        if Self::X_STAGED {
            return (x, S::Ahead::default());
        }
        // Pasted, not closures: LLVM leaves a closure this large un-inlined, and its operands
        // would then live in local memory.
        unroll::<SPANS>(|v| {
            unroll::<ACT_ROWS>(|p| {
                let b = (TRIP * at.t + self.block(v, p)).min(self.nb - 1);
                let row = self.x_row(self.row) as usize * self.in_f as usize;
                x[v][p].q = ld_v2_u32(self.xq.add(row + (b * QK + 8 * self.c) as usize));
                if self.keeps {
                    unroll::<2>(|k| {
                        if k < Self::KEPT {
                            let column = self.x_row(self.column(k));
                            let at_dx = column as usize * self.nb as usize + b as usize;
                            x[v][p].dx[k] = ld_f32(self.xd.add(at_dx));
                        }
                    });
                }
            });
        });
        let g = if Self::TILES_AHEAD {
            self.scale.tile_ahead(at.first, at.t, self.rows.tid % 32)
        } else {
            S::Ahead::default()
        };
        (x, g)
    }

    /// Each pair's block sums, span by span (see [`Body::span_of`]).
    #[inline(always)]
    unsafe fn trip(
        &mut self,
        at: Cursor,
        buf: Shared<u8>,
        _: Shared<u8>,
        (x, g): &(TripX<ACT_ROWS, SPANS>, S::Ahead),
    ) {
        let live = self.nb - TRIP * at.t;
        unroll::<SPANS>(|v| self.span_of(v, buf, live, &x[v], *g));
    }

    /// Each class's sums to `parts[n][k][i]`; then thread `k ACT_ROWS + i` of the group adds the 32
    /// classes of tile row `k` against activation row `i` ([`Body::classes`]) and stores.
    #[inline(always)]
    unsafe fn store(&mut self, first: u32, parts: Shared<f32>, y: Outputs) {
        if self.keeps {
            unroll::<SPANS>(|v| {
                unroll::<ACT_ROWS>(|p| {
                    let n = self.block(v, p);
                    unroll::<MAX_SETS>(|q| {
                        unroll::<2>(|h| {
                            unroll::<2>(|k| {
                                if (q as u32) < Self::SETS && k < Self::KEPT {
                                    let row = self.row + (2 * q + h) as u32 * ACT_ROWS as u32;
                                    let at = Self::part(parts, n, row, self.column(k));
                                    at.store(self.acc[v][p][q][h][k]);
                                }
                            });
                        });
                    });
                });
            });
        }
        self.acc = [[[[[0.0; 2]; 2]; MAX_SETS]; ACT_ROWS]; SPANS];
        meet::<Self>();
        let (tid, rows, m) = (self.rows.tid, self.rows, ACT_ROWS as u32);
        if !GLU && tid < Self::ROWS * m {
            // A thread a (tile row, activation row).
            let (k, i, out_f) = (tid / m, tid % m, rows.out_f);
            if first + k < out_f && (ACT_ROWS <= 2 || i < self.x_live) {
                *y.at(i, first + k) = self.scale.finish(Self::classes(parts, k, i), 0);
            }
        } else if GLU {
            // Thread 2 (k m + i) + h adds tile row k + h m (gate row k, or its up row) against
            // activation row i; each gate thread takes its up row's sum from the next lane.
            let (t, h) = (tid / 2, tid % 2);
            let sum = if tid < 2 * m * m {
                let k = t / m + h * m;
                self.scale
                    .finish(Self::classes(parts, k, t % m), h as usize)
            } else {
                0.0
            };
            let up = shfl_xor(u32::MAX, sum, 1);
            let (k, i, n) = (t / m, t % m, rows.out_f / 2);
            let row = rows.glu_row(first, k);
            if h == 0 && tid < 2 * m * m && row < n && (ACT_ROWS <= 2 || i < self.x_live) {
                *y.base().add(i as usize * n as usize + row as usize) = swiglu1(sum, up);
            }
        }
    }
}

impl<S: Scale, const ACT_ROWS: usize, const SPANS: usize, const GLU: bool>
    Body<S, ACT_ROWS, SPANS, GLU>
{
    /// The tile's 32 class sums of tile row `k` against activation row `i`, added as an xor
    /// butterfly over 32 lanes would (offsets 16, 8, 4, 2, 1).
    #[inline(always)]
    unsafe fn classes(parts: Shared<f32>, k: u32, i: u32) -> f32 {
        let mut v: [f32; CLASSES as usize] = [0.0; CLASSES as usize];
        unroll::<{ CLASSES as usize }>(|n| {
            v[n] = Self::part(parts, n as u32, k, i).load();
        });
        unroll::<5>(|level| {
            let half = CLASSES as usize >> (level + 1);
            unroll::<16>(|n| {
                if n < half {
                    v[n] += v[n + half];
                }
            });
        });
        v[0]
    }

    /// Span `v` of a trip from the stage at `buf` (`live` blocks of it in the row): each pair's
    /// block sums `d = mma(a2, b2, mma(a1, b1, 0))` for each set, then `acc = fma(d, factor, acc)`
    /// for the kept ones of blocks in the row. Reads are clamped to the row's last block in the
    /// ragged trip, so every lane issues every `mma`.
    #[inline(always)]
    unsafe fn span_of(
        &mut self,
        v: usize,
        buf: Shared<u8>,
        live: u32,
        x: &[PairX; ACT_ROWS],
        ahead: S::Ahead,
    ) {
        let (xs, tiles) = (buf.add(Self::ROWS * ROW), Self::tiles(buf));
        unroll::<ACT_ROWS>(|p| {
            let n = self.block(v, p);
            let at_block = buf.add(QK * n.min(live - 1) + 8 * self.c);
            let xq = if Self::X_STAGED {
                let at = self.row * MMA_X_QUANT_ROW + QK * n.min(live - 1) + 8 * self.c;
                xs.add(at).cast::<[u32; 2]>().load()
            } else {
                x[p].q
            };
            // Formed for every block, in the row or not (a missing block's staged scales are
            // stale, and its products are not kept), so that only the fold is conditional: a
            // select, where loads under the condition made it a branch around each pair.
            let g = if Self::TILES_AHEAD {
                S::shared(ahead, n)
            } else {
                S::staged(tiles, n)
            };
            let mut f = [S::F::default(); 2];
            unroll::<2>(|k| {
                if k < Self::KEPT {
                    let dx = if Self::X_STAGED {
                        let scales = xs.add(ACT_ROWS as u32 * MMA_X_QUANT_ROW + 4 * n);
                        scales
                            .add(self.column(k) * MMA_X_SCALE_ROW)
                            .cast::<f32>()
                            .load()
                    } else {
                        x[p].dx[k]
                    };
                    f[k] = S::factor(dx, g);
                }
            });
            unroll::<MAX_SETS>(|q| {
                if q as u32 >= Self::SETS {
                    return;
                }
                let row = self.row + 2 * q as u32 * ACT_ROWS as u32;
                let lo = at_block.add(row * ROW).cast::<[u32; 2]>().load();
                let hi = at_block
                    .add((row + ACT_ROWS as u32) * ROW)
                    .cast::<[u32; 2]>()
                    .load();
                let mut d = [0.0; 4];
                unroll::<2>(|half| {
                    let (l, h) = (lo[half], hi[half]);
                    let a = [
                        e4m3x2_to_f16x2(l as u16),
                        e4m3x2_to_f16x2(h as u16),
                        e4m3x2_to_f16x2((l >> 16) as u16),
                        e4m3x2_to_f16x2((h >> 16) as u16),
                    ];
                    mma_f16(&mut d, a, i8x4_to_f16x2x2(xq[half]));
                });
                if n < live && self.keeps {
                    Self::fold(self.e, &mut self.acc[v][p][q], &d, &f);
                }
            });
        });
    }

    /// A pair's kept block sums `d` of one set (columns `2c + e_k`) onto their classes'
    /// accumulators `acc[h][k]`, by their factors `f[k]`.
    #[inline(always)]
    fn fold(e: [u32; 2], acc: &mut [[f32; 2]; 2], d: &[f32; 4], f: &[S::F; 2]) {
        unroll::<2>(|h| {
            unroll::<2>(|k| {
                if k < Self::KEPT {
                    let sum = if e[k] == 0 { d[2 * h] } else { d[2 * h + 1] };
                    acc[h][k] = fma(sum, S::of(f[k], h), acc[h][k]);
                }
            });
        });
    }
}

/// The body of a thread of the group that takes its tiles (the block, or its warp), and its run:
/// over `out_f` rows of one matrix, or, for a `GLU`, over `out_f` rows of each of two
/// ([`Rows`]), `y[i][r] = swiglu(gate, up)`.
///
/// # Safety
/// All threads of the block call it; the buffers hold what the entries' docs say.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn kernel<S: Scale, const ACT_ROWS: usize, const SPANS: usize, const GLU: bool>(
    w: Plane,
    scale: S,
    xq: *const i8,
    xd: *const f32,
    y: Outputs,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    const { assert!(ACT_ROWS == 1 || ACT_ROWS == 2 || ACT_ROWS == 4 || ACT_ROWS == 8) };
    const { assert!(TILE.is_multiple_of(2 * ACT_ROWS as u32) && SLOTS == 8 && WARPS_PER_BLOCK == 4) };
    const { assert!(Body::<S, ACT_ROWS, SPANS, GLU>::WARPS == fp8_mma_warps(ACT_ROWS)) };
    const { assert!(Body::<S, ACT_ROWS, SPANS, GLU>::SETS as usize <= MAX_SETS) };
    const { assert!(!Body::<S, ACT_ROWS, SPANS, GLU>::TILES_AHEAD || SPANS == 4) };
    const {
        let sets = Body::<S, ACT_ROWS, SPANS, GLU>::SETS;
        assert!(
            shared_bytes::<Body<S, ACT_ROWS, SPANS, GLU>>() == fp8_mma_shared_bytes(ACT_ROWS, sets)
        );
    };
    if Body::<S, ACT_ROWS, SPANS, GLU>::SETS > 1 {
        launch_bounds::<BLOCK_THREADS, FP8_SETS_MIN_BLOCKS>();
    }
    let (tid, warps) = (thread_idx_x(), Body::<S, ACT_ROWS, SPANS, GLU>::WARPS);
    let (lane, g) = (tid % 32, Body::<S, ACT_ROWS, SPANS, GLU>::G);
    let (r, c) = (lane / 4, lane % 4);
    let body = Body::<S, ACT_ROWS, SPANS, GLU> {
        scale,
        w,
        xq: xq as *const u8,
        xd,
        rows: Rows {
            out_f: if GLU { 2 * out_f as u32 } else { out_f as u32 },
            half: ACT_ROWS as u32,
            tid: tid % (32 * warps),
            threads: 32 * warps,
        },
        in_f: in_f as u32,
        nb: in_f as u32 / QK,
        span: if SPANS == 1 { tid / 32 } else { 0 },
        c,
        slot: r % g,
        row: r / g,
        e: if ACT_ROWS == 8 {
            [0, 1]
        } else {
            [r % 2, r % 2]
        },
        keeps: ACT_ROWS == 8 || (2 * c + r % 2) % g == r % g,
        x_live: live_rows::<ACT_ROWS>(m),
        acc: [[[[[0.0; 2]; 2]; MAX_SETS]; ACT_ROWS]; SPANS],
    };
    run(body, y);
}

/// Per-tensor e4m3 (see the entries `gemv_e4m3_m*`).
#[inline(always)]
pub(in crate::gemv) unsafe fn gemv_e4m3<const ACT_ROWS: usize, const SPANS: usize>(
    w: *const u8,
    scale: f32,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
    m: i32,
    part1: i32,
    part2: i32,
) {
    own_case::<ACT_ROWS>(
        Format::E4m3,
        (y, m, part1, part2, out_f),
        #[inline(always)]
        |m, y| {
            let (w, scale) = (Plane::one(w, in_f as u32), PerTensor([scale; 2]));
            kernel::<_, ACT_ROWS, SPANS, false>(w, scale, xq, xd, y, in_f, out_f, m);
        },
    );
}

/// Block-128 e4m3 (see the entries `gemv_e4m3_b128_m*`).
#[inline(always)]
pub(in crate::gemv) unsafe fn gemv_e4m3_b128<const ACT_ROWS: usize, const SPANS: usize>(
    w: *const u8,
    grid: *const f32,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
    m: i32,
    part1: i32,
    part2: i32,
) {
    own_case::<ACT_ROWS>(
        Format::E4m3B128,
        (y, m, part1, part2, out_f),
        #[inline(always)]
        |m, y| {
            let tiles = Tiles {
                grid,
                in_f: in_f as u32,
            };
            let w = Plane::one(w, in_f as u32);
            kernel::<_, ACT_ROWS, SPANS, false>(w, tiles, xq, xd, y, in_f, out_f, m);
        },
    );
}

/// Per-tensor e4m3 gate and up rows with the GLU (see the entries `gemv_e4m3_glu_m*`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(in crate::gemv) unsafe fn gemv_e4m3_glu<const ACT_ROWS: usize, const SPANS: usize>(
    wg: *const u8,
    gate_scale: f32,
    wu: *const u8,
    up_scale: f32,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    own_case::<ACT_ROWS>(
        Format::E4m3,
        (y, m, out_f, out_f, out_f),
        #[inline(always)]
        |m, y| {
            let (w, scale) = (
                Plane::glu(wg, wu, in_f as u32),
                PerTensor([gate_scale, up_scale]),
            );
            kernel::<_, ACT_ROWS, SPANS, true>(w, scale, xq, xd, y, in_f, out_f, m);
        },
    );
}

/// Block-128 e4m3 gate and up rows with the GLU (see the entries `gemv_e4m3_b128_glu_m*`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(in crate::gemv) unsafe fn gemv_e4m3_b128_glu<const ACT_ROWS: usize, const SPANS: usize>(
    wg: *const u8,
    gate_grid: *const f32,
    wu: *const u8,
    up_grid: *const f32,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
    m: i32,
) {
    own_case::<ACT_ROWS>(
        Format::E4m3B128,
        (y, m, out_f, out_f, out_f),
        #[inline(always)]
        |m, y| {
            let tiles = GluTiles {
                grid: [gate_grid, up_grid],
                in_f: in_f as u32,
            };
            let w = Plane::glu(wg, wu, in_f as u32);
            kernel::<_, ACT_ROWS, SPANS, true>(w, tiles, xq, xd, y, in_f, out_f, m);
        },
    );
}
