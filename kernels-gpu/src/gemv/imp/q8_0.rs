//! The Q8_0 kernels' bodies: raw ggml blocks or planes, one dot product.

use super::*;
use crate::gemv::own_case;

/// `acc = fma(dw * dx, (float) sumi, acc)`, `sumi` the exact `dp4a` sum over the block: what
/// NVCC makes of `acc += dw * dx * sumi`.
#[inline(always)]
fn q8_dot(w: &Block, x: &Block, acc: f32) -> f32 {
    let mut sumi = 0;
    unroll::<8>(|k| {
        sumi = dp4a(w.q[k], x.q[k], sumi);
    });
    fma(w.d * x.d, i32_to_f32(sumi), acc)
}

/// One warp's Q8_0 weight rows, delivered a trip at a time, a row group after another.
trait Q8Row<const TRIP_BLOCKS: usize> {
    /// The format, whose [`takes_any_grid`] says whether the warp takes row groups in turn.
    const FORMAT: Format;
    /// Whether the rows arrive through shared-memory stages (see [`Q8::AHEAD`]).
    const STAGED: bool;
    /// Points at the row of group `warp`, whose first trip is readable at its [`Q8Row::begin`].
    unsafe fn start(&mut self, warp: Warp<1, TRIP_BLOCKS>);
    /// Starts delivering the first group's first trip, after its [`Q8Row::start`]. All lanes
    /// call it.
    unsafe fn prime(&mut self);
    /// Makes trip `t` of group `warp` readable; `next` is the warp's trip after it
    /// ([`Warp::next_trip`]). All lanes call it.
    unsafe fn begin(
        &mut self,
        warp: Warp<1, TRIP_BLOCKS>,
        t: u32,
        next: (Warp<1, TRIP_BLOCKS>, u32),
    );
    /// The lane's block `u` of trip `t`, which is in the row.
    unsafe fn block(&self, warp: Warp<1, TRIP_BLOCKS>, t: u32, u: usize) -> Block;
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
    /// This warp's two stages.
    stages: Shared<u8>,
    /// The stage of the trip being computed (0 or 1); the next trip is copied into the other.
    phase: u32,
    lane: u32,
}

/// 16-byte copies a lane issues at most per stage: `ceil(2176 / 16 / 32) = 5`.
const STAGE_COPIES: usize = (Q8_0_STAGE_BYTES / 16).div_ceil(32) as usize;

crate::device::static_shared! {
    /// The address of the raw Q8_0 kernels' staging array.
    fn q8_0_stages = GEMV_Q8_0_STAGES: b8[Q8_0_SHARED_BYTES] as u8
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
            stages: q8_0_stages().add(thread_idx_x() / 32 * 2 * Q8_0_STAGE_BYTES),
            phase: 0,
            lane: lane_id(),
        }
    }

    /// The first byte of group `warp`'s row.
    #[inline(always)]
    fn row_of<const TRIP_BLOCKS: usize>(&self, warp: Warp<1, TRIP_BLOCKS>) -> *const u8 {
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
        let dst = self.stages.add(phase * Q8_0_STAGE_BYTES);
        if ALIGNED {
            unroll::<STAGE_COPIES>(|n| {
                let p = self.lane + 32 * n as u32;
                cp_async_16_if(
                    p < len / 16,
                    dst.add(16 * p),
                    src.wrapping_add(16 * p as usize),
                );
            });
        } else {
            let mut p = self.lane;
            while p < len / 2 {
                dst.add(2 * p)
                    .cast::<u16>()
                    .store(ld_nc_u16(src.add(2 * p as usize)));
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
    unsafe fn read(&self, buffer: Shared<u8>, n: u32) -> Block {
        let at = buffer.add(n * Q8_0_BLOCK_BYTES);
        let (base, shift) = at.add(2).aligned_word();
        let mut words = [0; 9];
        unroll::<8>(|k| {
            words[k] = base.add(k as u32).load();
        });
        words[8] = base.byte_add::<u32>(28 + shift / 4).load();
        let mut q = [0; 8];
        unroll::<8>(|k| {
            q[k] = funnel_shift_rc(words[k], words[k + 1], shift);
        });
        Block {
            q,
            d: f16_to_f32(at.cast::<u16>().load()),
        }
    }
}

impl<const ALIGNED: bool, const TRIP_BLOCKS: usize> Q8Row<TRIP_BLOCKS> for Staged<ALIGNED> {
    const FORMAT: Format = Format::Q8_0;
    const STAGED: bool = true;

    #[inline(always)]
    unsafe fn start(&mut self, warp: Warp<1, TRIP_BLOCKS>) {
        self.row = self.row_of(warp);
    }

    #[inline(always)]
    unsafe fn prime(&mut self) {
        self.stage(self.row, 0, 0);
    }

    #[inline(always)]
    unsafe fn begin(
        &mut self,
        warp: Warp<1, TRIP_BLOCKS>,
        t: u32,
        (next, next_t): (Warp<1, TRIP_BLOCKS>, u32),
    ) {
        // `next_trip`'s own test rather than `next_t > 0`: the same trips, in the form whose PTX
        // perf-notes' GEMV entries describe.
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
    unsafe fn block(&self, warp: Warp<1, TRIP_BLOCKS>, t: u32, u: usize) -> Block {
        let buffer = self.stages.add(self.phase * Q8_0_STAGE_BYTES);
        self.read(buffer, warp.block(t, u) - t * 32 * TRIP_BLOCKS as u32)
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

impl<const TRIP_BLOCKS: usize> Q8Row<TRIP_BLOCKS> for Planar {
    const FORMAT: Format = Format::Q8_0Planar;
    const STAGED: bool = false;

    #[inline(always)]
    unsafe fn start(&mut self, warp: Warp<1, TRIP_BLOCKS>) {
        let row = warp.row(0) as usize;
        self.q = self.wq.add(row * self.in_f as usize);
        self.d = self.wd.add(2 * row * (self.in_f as u32 / QK) as usize);
    }

    #[inline(always)]
    unsafe fn prime(&mut self) {}

    #[inline(always)]
    unsafe fn begin(&mut self, _: Warp<1, TRIP_BLOCKS>, _: u32, _: (Warp<1, TRIP_BLOCKS>, u32)) {}

    #[inline(always)]
    unsafe fn block(&self, warp: Warp<1, TRIP_BLOCKS>, t: u32, u: usize) -> Block {
        let b = warp.block(t, u);
        Block {
            q: load32(ld_nc_v4_u32, self.q.add((b * QK) as usize)),
            d: f16_to_f32(ld_nc_u16(self.d.add(2 * b as usize))),
        }
    }

    #[inline(always)]
    unsafe fn end(&mut self) {}
}

/// The Q8_0 body over one warp's row groups (one row each), from either layout.
struct Q8<W, const ACT_ROWS: usize, const TRIP_BLOCKS: usize> {
    /// The row group being summed.
    warp: Warp<1, TRIP_BLOCKS>,
    /// [`Warp::stride`], read once.
    stride: u32,
    weights: W,
    act: Activation,
    acc: [[f32; ACT_ROWS]; 1],
    /// The next trip's activation blocks, where [`Q8::AHEAD`].
    ahead: [[Block; ACT_ROWS]; TRIP_BLOCKS],
}

impl<W: Q8Row<TRIP_BLOCKS>, const ACT_ROWS: usize, const TRIP_BLOCKS: usize>
    Q8<W, ACT_ROWS, TRIP_BLOCKS>
{
    /// Whether a trip's activation blocks are loaded during the trip before it: staged rows at
    /// `m <= 2`. A staged trip waits for its weights; ptxas sank activation loads issued in the
    /// same trip below that wait (one more L2 round trip per trip), but it cannot move a load
    /// into the next trip. At `m >= 4` the carried blocks would not fit the kernel's registers
    /// (perf-notes, GEMV: what changed in the second round).
    const AHEAD: bool = W::STAGED && ACT_ROWS <= 2;

    /// A body over the matrix `weights`, for the warp's first row group.
    #[inline(always)]
    fn new(warp: Warp<1, TRIP_BLOCKS>, weights: W, act: Activation) -> Self {
        Q8 {
            warp,
            stride: Warp::<1, TRIP_BLOCKS>::stride(),
            weights,
            act,
            acc: [[0.0; ACT_ROWS]],
            ahead: [[Block::default(); ACT_ROWS]; TRIP_BLOCKS],
        }
    }

    /// The activation blocks of trip `t`, each block index clamped to the row, so that a trip
    /// loaded ahead past the last full one reads valid (unused) blocks.
    ///
    /// # Safety
    /// The activation planes hold `ACT_ROWS` rows.
    #[inline(always)]
    unsafe fn load_trip(&self, t: u32) -> [[Block; ACT_ROWS]; TRIP_BLOCKS] {
        let mut x = [[Block::default(); ACT_ROWS]; TRIP_BLOCKS];
        unroll::<TRIP_BLOCKS>(|u| {
            let b = self.warp.block(t, u);
            let b = if Self::AHEAD {
                b.min(self.warp.blocks - 1)
            } else {
                b
            };
            x[u] = self.act.blocks::<ACT_ROWS>(b);
        });
        x
    }

    /// The block's contribution to each activation row's accumulator.
    #[inline(always)]
    fn add(&mut self, w: &Block, x: &[Block; ACT_ROWS]) {
        unroll::<ACT_ROWS>(|i| {
            self.acc[0][i] = q8_dot(w, &x[i], self.acc[0][i]);
        });
    }
}

impl<W: Q8Row<TRIP_BLOCKS>, const ACT_ROWS: usize, const TRIP_BLOCKS: usize> Trips
    for Q8<W, ACT_ROWS, TRIP_BLOCKS>
{
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
            let mut w = [Block::default(); TRIP_BLOCKS];
            unroll::<TRIP_BLOCKS>(|u| {
                w[u] = self.weights.block(warp, t, u);
            });
            unroll::<TRIP_BLOCKS>(|u| {
                self.add(&w[u], &x[u]);
            });
            next
        } else {
            let next = warp.next_trip(t, self.stride);
            self.weights.begin(warp, t, next);
            unroll::<TRIP_BLOCKS>(|u| {
                let b = warp.block(t, u);
                if warp.live(b) {
                    // Loaded ahead (clamped into the row), or now.
                    let x = if Self::AHEAD {
                        self.ahead[u]
                    } else {
                        self.act.blocks::<ACT_ROWS>(b)
                    };
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

impl<W: Q8Row<TRIP_BLOCKS>, const ACT_ROWS: usize, const TRIP_BLOCKS: usize>
    Q8<W, ACT_ROWS, TRIP_BLOCKS>
{
    /// Runs the warp's row groups and stores each.
    ///
    /// # Safety
    /// All lanes call it; `self.warp` has rows; `y` holds the outputs of `out_f` rows.
    #[inline(always)]
    unsafe fn run(mut self, y: Outputs) {
        let mut warp = self.warp;
        self.weights.start(warp);
        // The first trip's weights (raw rows' first stage) go out before the wait for the kernel
        // before, which cannot have written them.
        self.weights.prime();
        crate::chain_wait();
        if Self::AHEAD {
            self.ahead = self.load_trip(0);
        }
        loop {
            self.warp = warp;
            self.acc = [[0.0; ACT_ROWS]];
            warp.run(&mut self);
            warp.store(y, self.acc, |sum| sum);
            warp = warp.after(self.stride);
            if !takes_any_grid(W::FORMAT, ACT_ROWS) || !warp.has_rows() {
                break;
            }
            self.weights.start(warp);
        }
    }
}

/// Raw ggml Q8_0 rows (see the entries `gemv_q8_0_m*`).
#[inline(always)]
pub(in crate::gemv) unsafe fn gemv_q8_0<const ACT_ROWS: usize, const TRIP_BLOCKS: usize>(
    w: *const BlockQ8_0,
    xq: *const i8,
    xd: *const f32,
    y: *mut f32,
    in_f: i32,
    out_f: i32,
    m: i32,
    part1: i32,
    part2: i32,
) {
    const { assert!(TRIP_BLOCKS == Q8_0_STAGE_BLOCKS as usize) };
    own_case::<ACT_ROWS>(
        Format::Q8_0,
        (y, m, part1, part2, out_f),
        #[inline(always)]
        |m, y| {
            if tensor_cores(Format::Q8_0, ACT_ROWS) {
                return crate::gemv::mma::gemv_q8_0::<ACT_ROWS>(w, xq, xd, y, in_f, out_f, m);
            }
            let Some(warp) = Warp::<1, TRIP_BLOCKS>::new(in_f, out_f) else {
                return;
            };
            let row_bytes = q8_0_row_bytes(in_f as u32);
            let w = w as *const u8;
            let act = Activation::new(xq, xd, in_f);
            if (w as usize | row_bytes as usize) % 16 == 0 {
                Q8::<_, ACT_ROWS, TRIP_BLOCKS>::new(warp, Staged::<true>::new(w, row_bytes), act)
                    .run(y);
            } else {
                Q8::<_, ACT_ROWS, TRIP_BLOCKS>::new(warp, Staged::<false>::new(w, row_bytes), act)
                    .run(y);
            }
        },
    );
}

/// Planar Q8_0 (see the entries `gemv_q8_0_planar_m*`).
#[inline(always)]
pub(in crate::gemv) unsafe fn gemv_q8_0_planar<const ACT_ROWS: usize, const TRIP_BLOCKS: usize>(
    wq: *const i8,
    wd: *const F16,
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
        Format::Q8_0Planar,
        (y, m, part1, part2, out_f),
        #[inline(always)]
        |m, y| {
            if tensor_cores(Format::Q8_0Planar, ACT_ROWS) {
                return crate::gemv::mma::gemv_q8_0_planar::<ACT_ROWS>(
                    wq, wd, xq, xd, y, in_f, out_f, m,
                );
            }
            launch_bounds::<{ crate::gemv::BLOCK_THREADS }, { crate::gemv::PLANAR_MIN_BLOCKS }>();
            let Some(warp) = Warp::<1, TRIP_BLOCKS>::new(in_f, out_f) else {
                return;
            };
            let weights = Planar {
                wq: wq as *const u8,
                wd: wd as *const u8,
                in_f,
                q: wq as *const u8,
                d: wd as *const u8,
            };
            Q8::<_, ACT_ROWS, TRIP_BLOCKS>::new(warp, weights, Activation::new(xq, xd, in_f))
                .run(y);
        },
    );
}
