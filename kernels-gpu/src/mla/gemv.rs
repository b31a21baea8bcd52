//! absorb_q and decompress_v: one per-head batched GEMV, `y[t, h, r] = sum_k x[t, h, k] *
//! w[h, r, k]`, under two names and argument orders, on the tensor cores in 3xTF32.
//!
//! Each weight row is read once for every token of the batch, so both are bound by the weight
//! stream. On the CUDA cores each token added a multiply-add per weight and a partial sum per
//! row to every lane, which at eight tokens left too few registers for the loads in flight; an
//! mma keeps a 16-row tile's sums for all eight tokens in four registers a lane, and costs the
//! same at every `t` (perf-notes, MLA: absorb_q and decompress_v on the tensor cores).
//!
//! # Thread mapping
//! A block takes one head (`blockIdx.x / SPLIT`) and the part `blockIdx.x % SPLIT` of its rows
//! ([`super::split_range`]), and stages the head's activations in shared memory as the mma's B
//! fragments (token `g` of lane `(g, c) = (l / 4, l % 4)`). It takes the part's tiles of
//! [`TILE_ROWS`] rows in turn, each in [`passes`] passes of `WARPS * WARP_GROUPS` groups of 16
//! floats: the block copies a pass of all the tile's rows at once (each row's bytes together, which
//! the weight stream's DRAM pages want) through a ring in shared memory by `cp.async`,
//! [`STAGES`]` - 1` passes ahead, and warp `w` folds its [`WARP_GROUPS`] groups of the pass, the
//! weights as the mma's A rows by `ldmatrix`.
//!
//! # Per-output operations
//! For output `y[t, h, r]`: warp `w`'s accumulator `u` takes, from zero, groups `j = 2 (8 p + w)
//! + u` for the passes `p` in order (zeros past the row), two k-steps each: the first on floats
//! `16 j + c` and `16 j + 4 + c` for `c = 0..4` (the mma's `k = c` and `c + 4`), the second on
//! `16 j + 8 + c` and `16 j + 12 + c`, each through [`mma_3xtf32`](crate::device::mma_3xtf32)'s
//! three terms with the weights and the activations split by truncation
//! ([`tf32_split_truncated`](crate::device::tf32_split_truncated): the head is the value, the tail
//! `v - (v & 0xffffe000)`); warp `w`'s partial is `acc0 + acc1`, and `y` the partials of warps
//! `0..8` added in order from warp 0. An mma output depends on its own row and column alone, so
//! neither the split, the tile a row falls in nor `t` changes its bits.

use crate::abi::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::variants;

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Warps per block.
pub const WARPS: u32 = BLOCK / 32;
/// Rows of a tile: the mma's m16.
pub const TILE_ROWS: u32 = 16;
/// 16-float groups of a tile's rows each warp folds per pass: a pass covers `WARPS *
/// WARP_GROUPS` groups of all the tile's rows, which the block copies at once.
pub const WARP_GROUPS: u32 = 2;
/// Passes of the block's ring in shared memory: the block copies `STAGES - 1` passes ahead of the
/// one it folds.
pub const STAGES: u32 = 3;
/// Tokens one launch takes: the mma's n8.
pub const MAX_T: u32 = 8;

/// Bytes of a warp's part of a tile row in a stage: its groups, 128 bytes for the swizzle.
const ROW_BYTES: u32 = WARP_GROUPS * 64;
/// Bytes of a warp's part of a stage.
const WARP_STAGE_BYTES: u32 = TILE_ROWS * ROW_BYTES;
/// Bytes of one stage: every warp's part of one pass over a tile.
const STAGE_BYTES: u32 = WARPS * WARP_STAGE_BYTES;
/// Bytes of the ring, where the staged activations start.
const RING: u32 = STAGES * STAGE_BYTES;
/// Bytes of the warps' partial sums of a tile, two tiles' worth.
const PARTIALS: u32 = 2 * WARPS * 32 * 16;

/// Blocks of a launch: `split` per head.
pub const fn grid(nh: u32, split: u32) -> u32 {
    nh * split
}

/// Passes over a tile for rows of `k` floats: `WARPS * WARP_GROUPS` groups of 16 floats each,
/// zeros past `k`.
pub const fn passes(k: u32) -> u32 {
    k.div_ceil(16 * WARPS * WARP_GROUPS)
}

/// Bytes of one staged token of `k` floats: a `float4` per group, k-step and lane column (the
/// lane's B fragment, heads and tails), and 64 more, so that the two tokens a quarter warp
/// reads fall in different halves of the banks.
pub const fn x_token_bytes(k: u32) -> u32 {
    passes(k) * WARPS * WARP_GROUPS * 2 * 4 * 16 + 64
}

/// Dynamic shared memory of a launch: the ring, the activations of one head ([`MAX_T`] tokens,
/// zeros past `t`), and the warps' partial sums.
pub const fn shared_bytes(k: u32) -> u64 {
    RING as u64 + MAX_T as u64 * x_token_bytes(k) as u64 + PARTIALS as u64
}

/// Tiles of [`TILE_ROWS`] rows of a block's `rows`.
pub const fn tiles(rows: u32) -> u32 {
    rows.div_ceil(TILE_ROWS)
}

#[cfg(target_arch = "nvptx64")]
const GROUPS: usize = WARP_GROUPS as usize;

/// A block's rows and where its operands are.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Rows {
    /// The head's weight rows.
    w: *const F32x4,
    /// Its activations in shared memory: token `t`'s B fragment for group `j`, k-step `s` and
    /// lane column `c` at byte `xs + t xt + 16 (8 j + 4 s + c)` ([`stage_x`]).
    xs: u32,
    /// [`x_token_bytes`].
    xt: u32,
    /// `float4` chunks per row.
    k4: u32,
    /// The block's part of the rows.
    begin: u32,
    end: u32,
    /// [`passes`].
    passes: u32,
}

/// A block's place in its sequence of passes: tile, pass over the tile, and ring stage.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Step {
    tile: u32,
    pass: u32,
    stage: u32,
}

#[cfg(target_arch = "nvptx64")]
impl Step {
    /// The next pass: the tile's next, or the first of the next tile.
    fn next(self, passes: u32) -> Step {
        let (tile, pass) = if self.pass + 1 < passes {
            (self.tile, self.pass + 1)
        } else {
            (self.tile + 1, 0)
        };
        let stage = if self.stage + 1 < STAGES {
            self.stage + 1
        } else {
            0
        };
        Step { tile, pass, stage }
    }
}

/// Copies `x[0..t, head, ..]` into shared memory as the B fragments of every k-step, split by
/// truncation: for group `j`, k-step `s` and lane column `c`, the heads of floats `16 j + 8 s +
/// c` and `+ 4` (the mma's `k = c` and `c + 4`), then their tails; zeros for the tokens from `t`
/// and past the row, so that no fragment load needs a guard.
///
/// # Safety
/// `x` holds `t * nh * k` floats; the launch has [`shared_bytes`]`(k)` bytes of dynamic shared
/// memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stage_x(x: *const f32, rows: Rows, t: u32, nh: u32, head: u32) {
    let (k, per_token) = (4 * rows.k4, rows.passes * WARPS * WARP_GROUPS * 8);
    let mut i = thread_idx_x();
    while i < MAX_T * per_token {
        let (token, e) = (i / per_token, i % per_token);
        let first = 16 * (e / 8) + 8 * (e / 4 % 2) + e % 4;
        let v = |f: u32| {
            if token < t && f < k {
                ld_nc_f32(x.add(((token * nh + head) * k + f) as usize))
            } else {
                0.0
            }
        };
        let (lo, hi) = (v(first), v(first + 4));
        let tail = |e: f32| f32::from_bits(tf32_tail(e));
        st_shared_v4(
            rows.xs + token * rows.xt + 16 * e,
            F32x4 {
                x: lo,
                y: hi,
                z: tail(lo),
                w: tail(hi),
            },
        );
        i += block_dim_x();
    }
}

/// Byte offset in a warp's part of a stage of its 16-byte chunk `chunk` of the tile's row `row`:
/// rows [`ROW_BYTES`] apart, chunks swizzled by the row's low three bits, so that the eight rows
/// one matrix of an `ldmatrix` reads fall in eight bank groups.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn slot(row: u32, chunk: u32) -> u32 {
    row * ROW_BYTES + 16 * (chunk ^ (row % 8))
}

/// Where a lane's copies of a tile come from: chunk `c` of the tile's rows `g` and `g + 8`, or
/// the head's first row for a row past the block's rows (which is not copied).
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Source {
    row: [*const F32x4; 2],
    live: [bool; 2],
}

#[cfg(target_arch = "nvptx64")]
impl Source {
    /// The lane's rows of tile `tile`.
    ///
    /// # Safety
    /// The rows below `rows.end` exist in `rows.w`.
    #[inline(always)]
    unsafe fn of(rows: Rows, tile: u32) -> Source {
        let (g, c) = (lane_id() / 4, lane_id() % 4);
        let first = rows.begin + TILE_ROWS * tile + g;
        let live = [first < rows.end, first + 8 < rows.end];
        Source {
            row: core::array::from_fn(|i| {
                if live[i] {
                    rows.w.add(((first + 8 * i as u32) * rows.k4 + c) as usize)
                } else {
                    rows.w
                }
            }),
            live,
        }
    }
}

/// The warp's group `u` of pass `pass`: groups `WARP_GROUPS (WARPS pass + warp) + u` of the row.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn group(pass: u32, u: u32) -> u32 {
    WARP_GROUPS * (WARPS * pass + thread_idx_x() / 32) + u
}

/// Copies the warp's part of step `at` into its stage (`ring` is the warp's part of stage 0):
/// lane `(g, c)` takes chunk `4 j + c` of rows `g` and `g + 8` of the tile (`src`) for each of the
/// warp's groups `j`, zeros past the row and past the block's rows; then commits the group of
/// copies. The block's warps together copy whole rows at once.
///
/// # Safety
/// `src` is [`Source::of`] the step's tile; no lane reads the stage until the copies are waited
/// for and the warp has met.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn copy_pass(rows: Rows, ring: u32, at: Step, src: Source) {
    let (g, c) = (lane_id() / 4, lane_id() % 4);
    let stage = ring + at.stage * STAGE_BYTES;
    unroll::<GROUPS>(|u| {
        let offset = 4 * group(at.pass, u as u32);
        let inside = offset + c < rows.k4;
        let offset = if inside { offset } else { 0 };
        unroll::<2>(|i| {
            cp_async_16_zfill(
                src.live[i] && inside,
                stage + slot(g + 8 * i as u32, 4 * u as u32 + c),
                src.row[i].add(offset as usize).cast(),
            );
        })
    });
    cp_async_commit();
}

/// Folds the warp's part of step `at` into `acc`, group `u` into `acc[u]`: k-step `s` on chunks
/// `4 u + 2 s` (the mma's `k = 0..4`) and `4 u + 2 s + 1` (`k = 4..8`) of the tile's rows, the
/// weights by `ldmatrix` (lanes `8 m..8 m + 8` name rows `8 (m % 2)..` of chunk `4 u + 2 s + m /
/// 2`) as the A rows, split here, token `g` as the B column, split when staged; in 3xTF32, every
/// group's first k-step before any second.
///
/// # Safety
/// The step's copies have landed and the warp has met since; `rows.xs` holds the staged
/// activations.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn fold_pass(rows: Rows, ring: u32, at: Step, acc: &mut [[f32; 4]; GROUPS]) {
    let (lane, g, c) = (lane_id(), lane_id() / 4, lane_id() % 4);
    let stage = ring + at.stage * STAGE_BYTES;
    let (m, r) = (lane / 8, lane % 8);
    let xs = rows.xs + g * rows.xt + 16 * (8 * group(at.pass, 0) + c);
    let frags: [[([u32; 4], F32x4); 2]; GROUPS] = core::array::from_fn(|u| {
        core::array::from_fn(|s| {
            let chunk = 4 * u as u32 + 2 * s as u32 + m / 2;
            (
                ldmatrix_x4(stage + slot(r + 8 * (m % 2), chunk)),
                ld_shared_v4(xs + 16 * (8 * u as u32 + 4 * s as u32)),
            )
        })
    });
    unroll::<2>(|s| {
        let a: [Split<4>; GROUPS] = core::array::from_fn(|u| Split {
            head: frags[u][s].0,
            tail: frags[u][s].0.map(|h| tf32_tail(f32::from_bits(h))),
        });
        let b: [Split<2>; GROUPS] = core::array::from_fn(|u| {
            let v = frags[u][s].1;
            Split {
                head: [v.x.to_bits(), v.y.to_bits()],
                tail: [v.z.to_bits(), v.w.to_bits()],
            }
        });
        mma_3xtf32_each(acc, &a, &b)
    });
}

/// The GEMV of head `blockIdx.x / SPLIT`, rows of part `blockIdx.x % SPLIT`, for `t` tokens.
/// The block takes the part's tiles in turn, each in [`passes`] passes, `STAGES - 1` passes
/// copied ahead (the first before `x` is staged); warp `w` folds its groups of every pass, and
/// after a tile's last pass its partial sums `acc[0] + acc[1]` meet the other warps' in shared
/// memory, where thread `4 l + e` (`< 128`) adds lane `l`'s output `e` of warps `0..8` in order.
///
/// # Safety
/// `x` holds `t * nh * k` floats, `w` holds `nh * r * k`, `y` holds `t * nh * r`; `k` is a
/// multiple of 4; grid [`grid`]`(nh, SPLIT)`, block [`BLOCK`], dynamic shared memory
/// [`shared_bytes`]`(k)`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn gemv<const SPLIT: u32>(
    x: *const F32x4,
    w: *const F32x4,
    y: *mut f32,
    t: i32,
    nh: i32,
    k: i32,
    r: i32,
) {
    let (t, nh, k4, r) = (t as u32, nh as u32, k as u32 / 4, r as u32);
    if t == 0 || t > MAX_T {
        return;
    }
    let head = block_idx_x() / SPLIT;
    let (begin, end) = super::split_range(r, SPLIT, block_idx_x() % SPLIT);
    if begin >= end {
        return;
    }
    let rows = Rows {
        w: w.add((head * r * k4) as usize),
        xs: dynamic_shared() + RING,
        xt: x_token_bytes(4 * k4),
        k4,
        begin,
        end,
        passes: passes(4 * k4),
    };
    let partials = rows.xs + MAX_T * rows.xt;
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let ring = dynamic_shared() + warp * WARP_STAGE_BYTES;
    let n_tiles = tiles(end - begin);
    let mut at = Step {
        tile: 0,
        pass: 0,
        stage: 0,
    };
    // Past the last tile the copies read nothing and fill zeros.
    let (mut ahead, mut src) = (at, Source::of(rows, 0));
    let mut copy_ahead = || {
        copy_pass(rows, ring, ahead, src);
        ahead = ahead.next(rows.passes);
        if ahead.pass == 0 {
            src = Source::of(rows, ahead.tile);
        }
    };
    unroll::<{ STAGES as usize - 1 }>(|_| copy_ahead());
    stage_x(x.cast(), rows, t, nh, head);
    sync_threads();
    let mut acc = [[0.0f32; 4]; GROUPS];
    while at.tile < n_tiles {
        // Every lane is done with the stage the copy overwrites (read by the previous fold).
        sync_warp();
        copy_ahead();
        cp_async_wait_group::<{ STAGES - 1 }>();
        // Every lane's copies of this step are visible to the warp's `ldmatrix`.
        sync_warp();
        fold_pass(rows, ring, at, &mut acc);
        if at.pass + 1 == rows.passes {
            let buf = partials + (at.tile % 2) * WARPS * 512;
            let p = |e: usize| acc[0][e] + acc[1][e];
            let sums = F32x4 {
                x: p(0),
                y: p(1),
                z: p(2),
                w: p(3),
            };
            st_shared_v4(buf + 512 * warp + 16 * lane, sums);
            acc = [[0.0f32; 4]; GROUPS];
            // The warps' partials of this tile are written; those of the tile before were read
            // before any warp passed this barrier's predecessor.
            sync_threads();
            let i = thread_idx_x();
            if i < 128 {
                let (l, e) = (i / 4, i % 4);
                let mut sum = ld_shared_f32(buf + 16 * l + 4 * e);
                for v in 1..WARPS {
                    sum += ld_shared_f32(buf + 512 * v + 16 * l + 4 * e);
                }
                // d0, d1: row g, tokens 2c and 2c + 1; d2, d3: row g + 8.
                let row = begin + TILE_ROWS * at.tile + l / 4 + 8 * (e / 2);
                let token = 2 * (l % 4) + e % 2;
                if row < end && token < t {
                    *y.add(((token * nh + head) * r + row) as usize) = sum;
                }
            }
        }
        at = at.next(rows.passes);
    }
    cp_async_wait_group::<0>();
}

/// absorb_q's arguments in the GEMV's terms: `k = d_nope`, `r = kv_rank`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn absorb_q<const SPLIT: u32>(
    q_nope: *const F32x4,
    w_kb: *const F32x4,
    q_lat: *mut f32,
    t: i32,
    nh: i32,
    d_nope: i32,
    kv_rank: i32,
) {
    gemv::<SPLIT>(q_nope, w_kb, q_lat, t, nh, d_nope, kv_rank)
}

/// decompress_v's arguments in the GEMV's terms: `k = kv_rank`, `r = d_v`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn decompress_v<const SPLIT: u32>(
    o_lat: *const F32x4,
    w_vb: *const F32x4,
    out: *mut f32,
    t: i32,
    nh: i32,
    d_v: i32,
    kv_rank: i32,
) {
    gemv::<SPLIT>(o_lat, w_vb, out, t, nh, kv_rank, d_v)
}

variants! {
    /// `q_lat[t, h, c] = sum_d q_nope[t, h, d] * w_kb[h, c, d]`: `q_nope` is `[t, nh, d_nope]`,
    /// `w_kb` is `[nh, kv_rank, d_nope]`, `q_lat` is `[t, nh, kv_rank]`.
    ///
    /// # Launch
    /// grid [`grid`]`(nh, split)`, block [`BLOCK`], dynamic shared memory
    /// [`shared_bytes`]`(d_nope)`; `d_nope` a multiple of 4, `1 <= t <= MAX_T`.
    ///
    /// # Safety
    /// The buffers hold the extents above.
    absorb_q(
        q_nope: *const F32x4,
        w_kb: *const F32x4,
        q_lat: *mut f32,
        t: i32,
        nh: i32,
        d_nope: i32,
        kv_rank: i32,
    ) {
        mla_absorb_q = [1];
        mla_absorb_q_s2 = [2];
        mla_absorb_q_s4 = [4];
        mla_absorb_q_s8 = [8];
    }
}

variants! {
    /// `out[t, h, v] = sum_c o_lat[t, h, c] * w_vb[h, v, c]`: `o_lat` is `[t, nh, kv_rank]`,
    /// `w_vb` is `[nh, d_v, kv_rank]`, `out` is `[t, nh, d_v]`.
    ///
    /// # Launch
    /// grid [`grid`]`(nh, split)`, block [`BLOCK`], dynamic shared memory
    /// [`shared_bytes`]`(kv_rank)`; `kv_rank` a multiple of 4, `1 <= t <= MAX_T`.
    ///
    /// # Safety
    /// The buffers hold the extents above.
    decompress_v(
        o_lat: *const F32x4,
        w_vb: *const F32x4,
        out: *mut f32,
        t: i32,
        nh: i32,
        d_v: i32,
        kv_rank: i32,
    ) {
        mla_decompress_v = [1];
        mla_decompress_v_s2 = [2];
        mla_decompress_v_s4 = [4];
        mla_decompress_v_s8 = [8];
    }
}
