//! The e4m3 kernels' bodies: per-tensor or block-128 scales.

use super::*;

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
    fn fp8_stages = GEMV_FP8_STAGES: b8[FP8_SHARED_BYTES]
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
        unroll_in_place!(u < U; 4 => {
            let first = group.block(t, u) - group.lane;
            unroll_in_place!(h < 2; 4 => {
                let piece = 512 * h as u32 + 16 * group.lane;
                let live = group.live(first + piece / QK);
                unroll_in_place!(k < R; 4 => {
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
    /// the larger batches' blocks would not fit the kernel's registers (perf-notes, GEMV:
    /// staged trips in one pipeline).
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
        unroll_in_place!(u < U; 4 => {
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
        unroll_in_place!(n < 8; 8 => {
            let mut w = [[0.0; 4]; R];
            unroll_in_place!(k < R; 4 => {
                w[k] = e4m3x4_to_f32x4(blk.w[k][n]);
            });
            let mut x = [[0.0; 4]; M];
            unroll_in_place!(i < M; 8 => {
                x[i] = i8x4_to_f32x4(blk.x[i].q[n]);
            });
            unroll_in_place!(k < R; 4 => {
                unroll_in_place!(i < M; 8 => {
                    unroll_in_place!(c < 4; 4 => {
                        s[k][i] = fma(w[k][c], x[i][c], s[k][i]);
                    });
                });
            });
        });
        unroll_in_place!(k < R; 4 => {
            unroll_in_place!(i < M; 8 => {
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
        unroll_in_place!(u < U; 4 => {
            if FULL || warp.live(warp.block(t, u)) {
                unroll_in_place!(k < R; 4 => {
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
pub(in crate::gemv) unsafe fn gemv_e4m3<const M: usize, const R: usize, const U: usize>(
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
pub(in crate::gemv) unsafe fn gemv_e4m3_b128<const M: usize, const R: usize, const U: usize>(
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
