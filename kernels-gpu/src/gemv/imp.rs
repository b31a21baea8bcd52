//! The device bodies of the GEMV kernels. The parent module states the thread mapping and the
//! floating-point operations; the reference .cu (`reference/gemv.cu`) performs the same ones.
//!
//! Here are what the formats share (the activation, a warp's rows and trips); each format's body
//! is in a module of its own.

use super::outputs::Outputs;
use super::{
    live_rows, q8_0_row_bytes, takes_any_grid, tensor_cores, BlockQ8_0, Format, Q8_0_BLOCK_BYTES,
    Q8_0_SHARED_BYTES, Q8_0_STAGE_BLOCKS, Q8_0_STAGE_BYTES, QK, WARPS_PER_BLOCK,
};
use crate::abi::F16;
use crate::device::*;

/// 32 signed bytes (an activation block, or a Q8_0 block's quants) or 32 e4m3 bytes, as eight
/// words in memory order.
type Words = [u32; 8];

/// A block of 32 quants and its scale: a q8_1 activation block, or a Q8_0 weight block.
#[derive(Clone, Copy, Default)]
struct Block {
    q: Words,
    d: f32,
}

/// 32 bytes at a 16-byte-aligned `p`, with two 16-byte loads: `load` is [`ld_nc_v4_u32`] for
/// weights, [`ld_v4_u32`] for the activation, which a programmatic dependent reads while the
/// kernel that wrote it may still run (until its wait; ptxas may move a read-only load above it).
///
/// # Safety
/// As `load`, for 32 bytes.
#[inline(always)]
unsafe fn load32(load: unsafe fn(*const u8) -> [u32; 4], p: *const u8) -> Words {
    let [a, b, c, d] = load(p);
    let [e, f, g, h] = load(p.add(16));
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

    /// Block `b` of each of the `ACT_ROWS` activation rows.
    ///
    /// # Safety
    /// The planes hold `ACT_ROWS` rows, and `b < in_f / 32`.
    #[inline(always)]
    unsafe fn blocks<const ACT_ROWS: usize>(self, b: u32) -> [Block; ACT_ROWS] {
        let mut x = [Block::default(); ACT_ROWS];
        unroll::<ACT_ROWS>(|i| {
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
            q: load32(ld_v4_u32, self.qs.add(row + (b * QK) as usize)),
            d: ld_f32(self.d.add(row / QK as usize + b as usize)),
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

/// One warp's share of a launch: `WARP_ROWS` weight rows from `first_row`, visited `TRIP_BLOCKS` blocks per lane
/// per trip.
#[derive(Clone, Copy)]
struct Warp<const WARP_ROWS: usize, const TRIP_BLOCKS: usize> {
    lane: u32,
    first_row: u32,
    out_f: u32,
    blocks: u32,
}

impl<const WARP_ROWS: usize, const TRIP_BLOCKS: usize> Warp<WARP_ROWS, TRIP_BLOCKS> {
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
            first_row: warp * WARP_ROWS as u32,
            out_f: out_f as u32,
            blocks: in_f as u32 / QK,
        }
    }

    /// Whether the group has a row of the matrix.
    #[inline(always)]
    fn has_rows(self) -> bool {
        self.first_row < self.out_f
    }

    /// Rows from one of a warp's groups to its next: the launch's warps times `WARP_ROWS`.
    #[inline(always)]
    fn stride() -> u32 {
        grid_dim_x() * WARPS_PER_BLOCK * WARP_ROWS as u32
    }

    /// The group `stride` rows on. Offsets stay within `u32`: `first_row < out_f < 2^31` and
    /// `stride` is the launch's warps times `WARP_ROWS`, within the grid's limits.
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
        self.blocks.div_ceil(32 * TRIP_BLOCKS as u32)
    }

    /// The lane's `u`-th block of trip `t`: `b = lane + 32 j` with `j = t TRIP_BLOCKS + u`, so that the
    /// lane visits its blocks in ascending `j` whatever `TRIP_BLOCKS` is.
    #[inline(always)]
    fn block(self, t: u32, u: usize) -> u32 {
        self.lane + 32 * (t * TRIP_BLOCKS as u32 + u as u32)
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
        let full = self.blocks / (32 * TRIP_BLOCKS as u32);
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
    /// All 32 lanes call it; `y` holds the outputs of `out_f` rows.
    #[inline(always)]
    unsafe fn store<const ACT_ROWS: usize>(
        self,
        y: Outputs,
        acc: [[f32; ACT_ROWS]; WARP_ROWS],
        finish: impl Fn(f32) -> f32,
    ) {
        unroll::<WARP_ROWS>(|k| {
            let row = self.first_row + k as u32;
            unroll::<ACT_ROWS>(|i| {
                let sum = warp_sum(acc[k][i]);
                if self.lane == 0 && row < self.out_f {
                    *y.at(i as u32, row) = finish(sum);
                }
            });
        });
    }
}

mod q8_0;
pub(super) use q8_0::*;
