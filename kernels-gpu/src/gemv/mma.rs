//! The tensor-core kernels: Q8_0 from four activation rows on the int8 `mma` (the CUDA-core
//! kernels' bits), and e4m3 at every `m` on the f16 `mma`.
//!
//! Both share one pipeline ([`run`]): a group of warps (the block's four, or each warp alone)
//! takes tiles of consecutive weight rows in turn (the last tile's surplus rows repeat the last
//! row and store nothing), 32 blocks a row at a time, a trip, its trips staged through shared
//! memory [`Pipeline::STAGES`] deep across its tiles, so that the next tile's first trips are in
//! flight during a tile's last ([`DEEP`] where a group has one tile and the launch gives the shared
//! memory: [`Pipeline::DEEPENS`]). A trip's activation is staged with it (Q8_0 at four rows, e4m3
//! at eight: [`Activation::stage`]), or in a ring of its own a trip ahead (Q8_0 at eight:
//! [`Pipeline::X_SLOT`]), or loaded into registers during the trip before. The formats' modules
//! say how a trip is computed and how a tile's sums are met.

use super::outputs::Outputs;
use super::{MMA_X_QUANT_ROW, MMA_X_SCALE_ROW, QK, WARPS_PER_BLOCK};
use crate::device::*;

mod e4m3;
mod q8_0;

pub(super) use e4m3::{gemv_e4m3, gemv_e4m3_b128, gemv_e4m3_b128_glu, gemv_e4m3_glu};
pub(super) use q8_0::{gemv_q8_0, gemv_q8_0_glu, gemv_q8_0_planar, gemv_q8_0_planar_glu};

/// Blocks of each tile row in a trip.
const TRIP: u32 = 32;

/// Blocks of a trip each warp takes.
const SLOTS: usize = (TRIP / WARPS_PER_BLOCK) as usize;

/// Threads of a block.
const THREADS: u32 = 32 * WARPS_PER_BLOCK;

/// Copies of 16 bytes a thread makes for a stage, at most.
const COPIES: usize = 8;

/// A place in a block's sequence of trips: trip `t` of the tile at row `first`. A block takes
/// the tiles `blockIdx.x + k gridDim.x` in turn, their trips one after another.
#[derive(Clone, Copy)]
struct Cursor {
    first: u32,
    t: u32,
}

impl Cursor {
    /// The trip after this one: the tile's next, or the first of the block's next tile.
    #[inline(always)]
    fn next(self, trips: u32, stride: u32) -> Self {
        if self.t + 1 < trips {
            Cursor {
                t: self.t + 1,
                ..self
            }
        } else {
            Cursor {
                first: self.first + stride,
                t: 0,
            }
        }
    }
}

/// A weight plane's rows, `stride` bytes apart: one matrix's, or a GLU's gate and up matrices'
/// (the same plane of each).
#[derive(Clone, Copy)]
struct Plane {
    gate: *const u8,
    up: *const u8,
    stride: u32,
}

impl Plane {
    /// One matrix's plane.
    #[inline(always)]
    fn one(p: *const u8, stride: u32) -> Self {
        Plane {
            gate: p,
            up: p,
            stride,
        }
    }

    /// A GLU's planes of its gate and up matrices.
    #[inline(always)]
    fn glu(gate: *const u8, up: *const u8, stride: u32) -> Self {
        Plane { gate, up, stride }
    }

    /// `bytes` into every row.
    #[inline(always)]
    fn add(self, bytes: usize) -> Self {
        Plane {
            gate: self.gate.wrapping_add(bytes),
            up: self.up.wrapping_add(bytes),
            ..self
        }
    }

    /// Whether both matrices' rows start at multiples of `n` bytes.
    #[inline(always)]
    fn aligned(self, n: usize) -> bool {
        (self.gate as usize | self.up as usize | self.stride as usize).is_multiple_of(n)
    }
}

/// The activation's planes (`xq[m][in_f]`, `xd[m][in_f / 32]`) and its rows `live`
/// ([`live_rows`](super::live_rows)).
#[derive(Clone, Copy)]
struct Activation {
    qs: *const u8,
    d: *const f32,
    live: u32,
}

impl Activation {
    /// Starts copying trip `t` of the first `ROWS` rows (`nb` blocks each) to `x`, the stage's
    /// part after the tile's rows, thread `tid`'s share of the block's: a row's quants by 16-byte
    /// copies through L1, as every block of an SM copies the same rows ([`MMA_X_QUANT_ROW`]
    /// apart), then its block scales by 4-byte ones (a row of scales starts only 4-byte aligned;
    /// [`MMA_X_SCALE_ROW`] apart). The ragged trip's missing blocks are not copied; the trip skips
    /// them. Nor are rows from `live` on: their columns hold whatever the stage held, and their sums
    /// are never stored.
    #[inline(always)]
    unsafe fn stage<const ROWS: usize>(self, nb: u32, tid: u32, t: u32, x: Shared<u8>) {
        // Unrolled for eight rows, the most; the copies past `ROWS` fold away. Sources past a
        // row's end are formed (wrapping) but not read.
        const QUANT_COPIES: u32 = TRIP * QK / 16;
        let first = TRIP * t;
        let blocks = (nb - first).min(TRIP);
        let row = |r: u32| r as usize * nb as usize;
        unroll::<{ (8 * QUANT_COPIES / THREADS) as usize }>(|k| {
            let (p, rows) = (tid + THREADS * k as u32, ROWS as u32);
            if (k as u32) < (rows * QUANT_COPIES).div_ceil(THREADS) && p < rows * QUANT_COPIES {
                let (r, at) = (p / QUANT_COPIES, 16 * (p % QUANT_COPIES));
                let from = self
                    .qs
                    .wrapping_add(QK as usize * (row(r) + first as usize) + at as usize);
                let copy = at < QK * blocks && p < self.live * QUANT_COPIES;
                cp_async_ca_16_if(copy, x.add(r * MMA_X_QUANT_ROW + at), from);
            }
        });
        let d = x.add(ROWS as u32 * MMA_X_QUANT_ROW);
        unroll::<{ (8 * TRIP / THREADS) as usize }>(|k| {
            let (p, rows) = (tid + THREADS * k as u32, ROWS as u32);
            if (k as u32) < (rows * TRIP).div_ceil(THREADS) && p < rows * TRIP {
                let (r, b) = (p / TRIP, p % TRIP);
                let from = self.d.wrapping_add(row(r) + (first + b) as usize) as *const u8;
                let copy = b < blocks && p < self.live * TRIP;
                cp_async_4_if(copy, d.add(r * MMA_X_SCALE_ROW + 4 * b), from);
            }
        });
    }
}

/// The matrix's rows, for the copies (a tile's surplus rows repeat the last), and this thread's
/// place in the warps that share a tile.
///
/// A `GLU`'s tiles take `half` rows of each matrix: tile rows `k < half` are gate rows and the
/// rest the up rows of the same indices, so that the thread storing a gate row's sum holds its
/// up row's too. Its rows are counted as one matrix of `out_f = 2n` rows, tile `t` starting at
/// row `2 half t`: real rows `half t..half (t + 1)` of each matrix.
#[derive(Clone, Copy)]
struct Rows<const GLU: bool> {
    out_f: u32,
    /// Rows of a GLU's tile from the gate matrix (unused for one matrix).
    half: u32,
    /// The thread's index among the group's threads.
    tid: u32,
    /// Threads of the group.
    threads: u32,
}

impl<const GLU: bool> Rows<GLU> {
    /// Where row `k` of the tile that starts at row `first` begins in `plane`.
    #[inline(always)]
    fn at(self, plane: Plane, first: u32, k: u32) -> *const u8 {
        if GLU {
            let (base, k) = if k < self.half {
                (plane.gate, k)
            } else {
                (plane.up, k - self.half)
            };
            let row = (first / 2 + k).min(self.out_f / 2 - 1) as usize;
            base.wrapping_add(row * plane.stride as usize)
        } else {
            let row = (first + k).min(self.out_f - 1) as usize;
            plane.gate.wrapping_add(row * plane.stride as usize)
        }
    }

    /// The output row of tile row `k < half` of a GLU's tile at `first`.
    #[inline(always)]
    fn glu_row(self, first: u32, k: u32) -> u32 {
        first / 2 + k
    }

    /// Copies `len` bytes (a multiple of 16, at most `BYTES`) of each of a tile's `rows` rows,
    /// from `src` (row `r` at [`Rows::at`], 16-byte aligned) to `dst + r * dst_row`, 16
    /// bytes a copy, at most [`COPIES`] a thread: a row's `BYTES / 16` copies by as many threads
    /// (a block's threads take `threads / (BYTES / 16)` rows at a time), or by a warp's threads
    /// in turn (`BYTES / 16` past the warp).
    #[inline(always)]
    unsafe fn copy<const BYTES: u32>(
        self,
        first: u32,
        rows: u32,
        src: Plane,
        dst: Shared<u8>,
        dst_row: u32,
        len: u32,
    ) {
        let per_row = BYTES / 16;
        let (r0, at0) = (self.tid / per_row, 16 * (self.tid % per_row));
        unroll::<COPIES>(|k| {
            let (r, at) = if self.threads >= per_row {
                (r0 + self.threads / per_row * k as u32, at0)
            } else {
                let turns = per_row / self.threads;
                let turn = k as u32 % turns;
                (k as u32 / turns, 16 * (self.tid + self.threads * turn))
            };
            if r < rows {
                let from = self.at(src, first, r).wrapping_add(at as usize);
                cp_async_16_if(at < len, dst.add(r * dst_row + at), from);
            }
        });
    }
}

/// A format's work on the tiles of a block, for [`run`].
trait Pipeline {
    /// Trips staged at once, 2 or 3: one computed while the rest are in flight (or [`DEEP`]).
    const STAGES: u32;
    /// Weight rows of a tile.
    const ROWS: u32;
    /// Bytes of one stage.
    const STAGE: u32;
    /// Bytes of the shared memory where a tile's sums meet.
    const PARTS: u32;
    /// Bytes of a slot of the activation's own ring, where the activation is staged a trip
    /// ahead of the weights ([`Pipeline::stage_x`]; `STAGES + 1` slots after the stages), or 0
    /// where a stage holds its trip's activation or none is staged.
    const X_SLOT: u32 = 0;
    /// Warps that share a tile: the block's four, or one.
    const WARPS: u32;
    /// Whether a group that takes one tile runs [`DEEP`] stages where the launch's dynamic shared
    /// memory holds them ([`shared_bytes_at`]); with a ring, a trip's activation then goes to the
    /// slot of its stage's index, in the stage's group, as far ahead as its weights.
    const DEEPENS: bool = false;
    /// What a thread loads a trip ahead: the trip's activation, or nothing where it is staged.
    type Ahead: Copy;
    /// Rows of the launch (a GLU's counted as one matrix of both).
    fn out_f(&self) -> u32;
    /// Trips over a row.
    fn trips(&self) -> u32;
    /// Starts copying trip `at`'s weights into the stage at `buf`, this thread's share; the
    /// caller commits.
    unsafe fn stage(&self, at: Cursor, buf: Shared<u8>);
    /// Starts copying what trip `at` takes into the stage at `buf` after the wait: its activation
    /// where it is staged with the weights, and block-128's tile scales (else nothing); the caller
    /// commits.
    unsafe fn stage_act(&self, _at: Cursor, _buf: Shared<u8>) {}
    /// Starts copying trip `at`'s activation into the ring slot at `buf` (with [`Pipeline::X_SLOT`]).
    unsafe fn stage_x(&self, _at: Cursor, _buf: Shared<u8>) {}
    /// Trip `at`'s activation.
    unsafe fn ahead(&self, at: Cursor) -> Self::Ahead;
    /// Trip `at` from the stage at `buf` (its activation in the ring slot at `xs`, where the
    /// activation has a ring).
    unsafe fn trip(&mut self, at: Cursor, buf: Shared<u8>, xs: Shared<u8>, x: &Self::Ahead);
    /// After the last trip of the tile at row `first`: its sums met across the block through
    /// the shared memory at `parts`, and stored.
    unsafe fn store(&mut self, first: u32, parts: Shared<f32>, y: Outputs);
}

/// The group's warps meet: a block barrier, or a warp's.
///
/// # Safety
/// Every thread of the group reaches it.
#[inline(always)]
unsafe fn meet<P: Pipeline>() {
    if P::WARPS == 1 {
        sync_warp();
    } else {
        sync_threads();
    }
}

/// Stages of a deepened pipeline ([`Pipeline::DEEPENS`]).
const DEEP: u32 = super::MMA_DEEP_STAGES;

/// Bytes of dynamic shared memory a launch of `P` needs: each group's stages and parts.
const fn shared_bytes<P: Pipeline>() -> u32 {
    shared_bytes_at::<P>(P::STAGES)
}

/// [`shared_bytes`] with `stages` stages.
const fn shared_bytes_at<P: Pipeline>(stages: u32) -> u32 {
    WARPS_PER_BLOCK / P::WARPS * (stages * P::STAGE + (stages + 1) * P::X_SLOT + P::PARTS)
}

/// Runs the group's tiles: one pipeline of stages through all their trips, each tile's sums met
/// and stored after its last. Group `j` of the launch (warp `j` where each warp is one) takes
/// tiles `j, j + groups, ...`.
///
/// # Safety
/// All threads of the block call it, with [`shared_bytes`] of dynamic shared memory (or more);
/// the buffers hold what the entries' docs say.
#[inline(always)]
unsafe fn run<P: Pipeline>(mut body: P, y: Outputs) {
    const { assert!(WARPS_PER_BLOCK.is_multiple_of(P::WARPS)) };
    const { assert!(P::STAGES == 2 || P::STAGES == 3) };
    const { assert!(P::X_SLOT == 0 || P::STAGES == 2) };
    let groups = WARPS_PER_BLOCK / P::WARPS;
    // A block's warps are one group: no index to find (the threads need not know they are 128).
    let group = if groups == 1 {
        0
    } else {
        thread_idx_x() / (32 * P::WARPS)
    };
    // Deeper where the group takes one tile (so the cursors stay below `2 out_f`) and the launch
    // gives the room.
    let deep = P::DEEPENS
        && grid_dim_x() * groups * P::ROWS >= body.out_f()
        && dynamic_shared_size() >= shared_bytes_at::<P>(DEEP);
    let stages = if deep { DEEP } else { P::STAGES };
    let (x_ring, x_slots) = (stages * P::STAGE, stages + 1);
    let shared = dynamic_shared().add(group * (x_ring + x_slots * P::X_SLOT + P::PARTS));
    let buffer = |slot: u32| shared.add(slot * P::STAGE);
    let x_slot = |slot: u32| shared.add(x_ring + slot * P::X_SLOT);
    let parts = shared.byte_add::<f32>(x_ring + x_slots * P::X_SLOT);
    let (trips, out_f) = (body.trips(), body.out_f());
    let stride = grid_dim_x() * groups * P::ROWS;
    let mut cur = Cursor {
        first: (block_idx_x() * groups + group) * P::ROWS,
        t: 0,
    };
    if cur.first >= out_f {
        return;
    }
    // The first stages' weights depend on nothing a kernel before this one writes: they are
    // copied before the wait for it (a programmatic dependent's blocks are placed while it
    // drains), the activation after; the stages' groups are committed as before, the first
    // holding every first stage's weights.
    let mut ahead = cur;
    for slot in 0..stages - 1 {
        if ahead.first < out_f {
            body.stage(ahead, buffer(slot));
        }
        ahead = ahead.next(trips, stride);
    }
    crate::chain_wait();
    let mut ahead = cur;
    for slot in 0..stages - 1 {
        if ahead.first < out_f {
            body.stage_act(ahead, buffer(slot));
            // Deep, a ring's slot is its stage's, copied in the stage's group.
            if P::X_SLOT > 0 && deep {
                body.stage_x(ahead, x_slot(slot));
            }
        }
        cp_async_commit();
        ahead = ahead.next(trips, stride);
    }
    // With a ring of its own, the activation goes a trip further ahead, in groups of its own each
    // committed after the weights'.
    let mut ahead_x = cur;
    if P::X_SLOT > 0 && !deep {
        for slot in 0..P::STAGES {
            if ahead_x.first < out_f {
                body.stage_x(ahead_x, x_slot(slot));
            }
            cp_async_commit();
            ahead_x = ahead_x.next(trips, stride);
        }
    }
    let (mut slot, mut xslot, mut x) = (0, 0, body.ahead(cur));
    while cur.first < out_f {
        // The trip's copies are this thread's groups but the newest STAGES - 2 (with a ring, but
        // the newest: the next trip's activation); after the barrier every thread's are visible,
        // and the stage and the slot computed last are free for the trips ahead.
        if deep {
            cp_async_wait_group::<{ DEEP - 2 }>();
        } else if P::STAGES == 2 && P::X_SLOT == 0 {
            cp_async_wait_group::<0>();
        } else {
            cp_async_wait_group::<1>();
        }
        meet::<P>();
        if ahead.first < out_f {
            let free = if slot == 0 { stages - 1 } else { slot - 1 };
            body.stage(ahead, buffer(free));
            body.stage_act(ahead, buffer(free));
            if P::X_SLOT > 0 && deep {
                body.stage_x(ahead, x_slot(free));
            }
        }
        cp_async_commit();
        if P::X_SLOT > 0 && !deep {
            if ahead_x.first < out_f {
                let free = if xslot == 0 { x_slots - 1 } else { xslot - 1 };
                body.stage_x(ahead_x, x_slot(free));
            }
            cp_async_commit();
            ahead_x = ahead_x.next(trips, stride);
        }
        ahead = ahead.next(trips, stride);
        let next = cur.next(trips, stride);
        // The next trip's activation goes out before this trip's arithmetic, to overlap it.
        let x_next = if next.first < out_f {
            body.ahead(next)
        } else {
            x
        };
        body.trip(
            cur,
            buffer(slot),
            x_slot(if deep { slot } else { xslot }),
            &x,
        );
        if next.t == 0 {
            body.store(cur.first, parts, y);
        }
        (cur, x) = (next, x_next);
        slot = if slot + 1 == stages { 0 } else { slot + 1 };
        xslot = if xslot + 1 == x_slots { 0 } else { xslot + 1 };
    }
}
