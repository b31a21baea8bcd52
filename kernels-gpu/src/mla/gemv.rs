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
//! ([`super::split_range`]), and copies the head's activations `x[0..t, h, 0..k]` into shared
//! memory. Warp `w` takes the part's tiles of [`TILE_ROWS`] rows `w, w + WARPS, ...`: the
//! weights are the mma's A (rows `g`, `g + 8` of the tile, lane `(g, c) = (l / 4, l % 4)`), the
//! tokens its B columns (token `g`). For every group `j` of 16 floats a lane takes the 16-byte
//! chunks `4 j + c` of its two rows and of its token; the rows' chunks go through the lane's own
//! slots of a ring in shared memory by `cp.async`, [`STAGES`]` - 1` trips of [`TRIP_GROUPS`]
//! groups ahead of the trip it folds, which keeps the weight stream's bytes in flight without
//! holding them in registers.
//!
//! # Per-output operations
//! For output `y[t, h, r]`: four accumulators from zero; accumulator `u` takes the groups `j` of
//! the row with `j % 4 = u` in ascending order (zeros past the row), two k-steps each: the first
//! on floats `16 j + 4 c` and `16 j + 4 c + 1` for `c = 0..4` (the mma's `k = c` and `c + 4`),
//! the second on `+ 2` and `+ 3`, each through [`mma_3xtf32`](crate::device::mma_3xtf32)'s three
//! terms with the weights and the activations split by truncation
//! ([`tf32_split_truncated`](crate::device::tf32_split_truncated): the head is the value, the tail
//! `v - (v & 0xffffe000)`); then `y = ((acc0 + acc1) + acc2) + acc3`. An mma output depends on its own row and column alone, so neither the
//! split, the tile a row falls in nor `t` changes its bits.

use crate::abi::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::variants;

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Warps per block.
pub const WARPS: u32 = BLOCK / 32;
/// Rows of a warp's tile: the mma's m16.
pub const TILE_ROWS: u32 = 16;
/// 16-float groups of a tile's rows a lane copies at once (a trip): two 16-byte chunks a group,
/// and one accumulator a group, so that a trip's mma form that many independent chains.
pub const TRIP_GROUPS: u32 = 4;
/// Trips of a warp's ring in shared memory: a lane copies its chunks `STAGES - 1` trips ahead of
/// the one it folds.
pub const STAGES: u32 = 3;
/// Tokens one launch takes: the mma's n8.
pub const MAX_T: u32 = 8;

/// Bytes of one trip of a warp: the tile's rows, [`TRIP_GROUPS`] groups of 64 bytes each.
const TRIP_BYTES: u32 = TILE_ROWS * TRIP_GROUPS * 64;
/// Bytes of the warps' rings, where the staged activations start.
const RINGS: u32 = WARPS * STAGES * TRIP_BYTES;

/// Blocks of a launch: `split` per head.
pub const fn grid(nh: u32, split: u32) -> u32 {
    nh * split
}

/// Groups of 16 floats a row of `k` floats is folded in: whole trips, zeros past `k`.
pub const fn groups(k: u32) -> u32 {
    k.div_ceil(16 * TRIP_GROUPS) * TRIP_GROUPS
}

/// Bytes of one staged token of `k` floats: a `float4` per group, k-step and lane column (the
/// lane's B fragment, heads and tails), and 64 more, so that the two tokens a quarter warp
/// reads fall in different halves of the banks.
pub const fn x_token_bytes(k: u32) -> u32 {
    groups(k) * 2 * 4 * 16 + 64
}

/// Dynamic shared memory of a launch: the warps' rings, then the activations of one head,
/// [`MAX_T`] tokens (zeros past `t`).
pub const fn shared_bytes(k: u32) -> u64 {
    RINGS as u64 + MAX_T as u64 * x_token_bytes(k) as u64
}

/// Tiles of [`TILE_ROWS`] rows of a block's `rows`.
pub const fn tiles(rows: u32) -> u32 {
    rows.div_ceil(TILE_ROWS)
}

#[cfg(target_arch = "nvptx64")]
const TRIP: usize = TRIP_GROUPS as usize;

/// A block's rows and where its operands are.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Rows {
    /// The head's weight rows.
    w: *const F32x4,
    /// Its activations in shared memory: token `t`'s B fragment for group `j`, k-step `s` and
    /// lane column `c` at byte `xs + t x_token_bytes + 16 (8 j + 4 s + c)` ([`stage_x`]).
    xs: u32,
    /// [`x_token_bytes`].
    xt: u32,
    /// `float4` chunks per row.
    k4: u32,
    /// The block's part of the rows.
    begin: u32,
    end: u32,
    /// Trips per tile.
    trips: u32,
}

/// A warp's place in its sequence of trips: tile, trip of the tile, and ring stage.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Step {
    tile: u32,
    trip: u32,
    stage: u32,
}

#[cfg(target_arch = "nvptx64")]
impl Step {
    /// The next trip: the tile's next, or the first of the warp's next tile.
    fn next(self, trips: u32) -> Step {
        let (tile, trip) = if self.trip + 1 < trips {
            (self.tile, self.trip + 1)
        } else {
            (self.tile + WARPS, 0)
        };
        let stage = if self.stage + 1 < STAGES {
            self.stage + 1
        } else {
            0
        };
        Step { tile, trip, stage }
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
    let (k, per_token) = (4 * rows.k4, 8 * rows.trips * TRIP_GROUPS);
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

/// Byte offset in a trip's stage of the 16-byte chunk `chunk` (of the trip's `4 TRIP_GROUPS`) of
/// the tile's row `row`: rows 64 `TRIP_GROUPS` bytes apart, chunks swizzled by the row's low three
/// bits, so that the eight rows one matrix of an `ldmatrix` reads fall in eight bank groups.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn slot(row: u32, chunk: u32) -> u32 {
    row * 64 * TRIP_GROUPS + 16 * (chunk ^ (row % 8))
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

/// Copies step `at`'s trip into its stage of the warp's ring (`ring`): lane `(g, c)` takes chunk
/// `4 j + c` of rows `g` and `g + 8` of the tile (`src`) for each group `j` of the trip, zeros
/// past the row and past the block's rows; then commits the group of copies.
///
/// # Safety
/// `src` is [`Source::of`] the step's tile; no lane reads the stage until the copies are waited
/// for and the warp has met.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn copy_trip(rows: Rows, ring: u32, at: Step, src: Source) {
    let (g, c) = (lane_id() / 4, lane_id() % 4);
    let stage = ring + at.stage * TRIP_BYTES;
    unroll::<TRIP>(|u| {
        let offset = 4 * (TRIP_GROUPS * at.trip + u as u32);
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

/// A trip's fragments, per group and k-step: the weights' A heads and the token's B heads and
/// tails (`x, y` and `z, w`).
#[cfg(target_arch = "nvptx64")]
type Fragments = [[([u32; 4], F32x4); 2]; TRIP];

/// Loads step `at`'s fragments, group `u` and k-step `s` on chunks `4 u + 2 s` (the mma's `k =
/// 0..4`) and `4 u + 2 s + 1` (`k = 4..8`) of the tile's rows: the weights by `ldmatrix` (lanes
/// `8 m..8 m + 8` name rows `8 (m % 2)..` of chunk `4 u + 2 s + m / 2`), the token's as staged.
///
/// # Safety
/// The trip's copies have landed and the warp has met since; `rows.xs` holds the staged
/// activations.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_fragments(rows: Rows, ring: u32, at: Step) -> Fragments {
    let (lane, g, c) = (lane_id(), lane_id() / 4, lane_id() % 4);
    let stage = ring + at.stage * TRIP_BYTES;
    let (m, r) = (lane / 8, lane % 8);
    let xs = rows.xs + g * rows.xt + 16 * (8 * TRIP_GROUPS * at.trip + c);
    core::array::from_fn(|u| {
        core::array::from_fn(|s| {
            let chunk = 4 * u as u32 + 2 * s as u32 + m / 2;
            (
                ldmatrix_x4(stage + slot(r + 8 * (m % 2), chunk)),
                ld_shared_v4(xs + 16 * (8 * u as u32 + 4 * s as u32)),
            )
        })
    })
}

/// Folds a trip's fragments into the accumulators, group `u` into `acc[u]`, each k-step in
/// 3xTF32 with the weights split here.
///
/// # Safety
/// As [`mma_tf32`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn fold_trip(f: &Fragments, acc: &mut [[f32; 4]; TRIP]) {
    unroll::<2>(|s| {
        let a: [Split<4>; TRIP] = core::array::from_fn(|u| Split {
            head: f[u][s].0,
            tail: f[u][s].0.map(|h| tf32_tail(f32::from_bits(h))),
        });
        let b: [Split<2>; TRIP] = core::array::from_fn(|u| {
            let v = f[u][s].1;
            Split {
                head: [v.x.to_bits(), v.y.to_bits()],
                tail: [v.z.to_bits(), v.w.to_bits()],
            }
        });
        mma_3xtf32_each(acc, &a, &b)
    });
}

/// The GEMV of head `blockIdx.x / SPLIT`, rows of part `blockIdx.x % SPLIT`, for `t` tokens.
/// Warp `w` takes the part's tiles `w, w + WARPS, ...`, each over its trips in order, with
/// `STAGES - 1` trips copied ahead (the first before `x` is staged); a tile's output is
/// `((acc[0] + acc[1]) + acc[2]) + acc[3]`.
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
        xs: dynamic_shared() + RINGS,
        xt: x_token_bytes(4 * k4),
        k4,
        begin,
        end,
        trips: k4.div_ceil(4 * TRIP_GROUPS),
    };
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let (g, c) = (lane / 4, lane % 4);
    let ring = dynamic_shared() + warp * STAGES * TRIP_BYTES;
    let n_tiles = tiles(end - begin);
    let mut at = Step {
        tile: warp,
        trip: 0,
        stage: 0,
    };
    // Past the warp's last tile the copies read nothing and fill zeros.
    let (mut ahead, mut src) = (at, Source::of(rows, at.tile));
    let mut copy_ahead = || {
        copy_trip(rows, ring, ahead, src);
        ahead = ahead.next(rows.trips);
        if ahead.trip == 0 {
            src = Source::of(rows, ahead.tile);
        }
    };
    unroll::<{ STAGES as usize - 1 }>(|_| copy_ahead());
    stage_x(x.cast(), rows, t, nh, head);
    sync_threads();
    let mut acc = [[0.0f32; 4]; TRIP];
    if at.tile >= n_tiles {
        cp_async_wait_group::<0>();
        return;
    }
    // Each trip's fragments are loaded from the ring while the trip before is folded.
    cp_async_wait_group::<{ STAGES - 2 }>();
    sync_warp();
    let mut frags = load_fragments(rows, ring, at);
    loop {
        // Every lane has loaded the stage the copy overwrites (two trips back).
        sync_warp();
        copy_ahead();
        cp_async_wait_group::<{ STAGES - 2 }>();
        // Every lane's copies of the next trip are visible to the warp's `ldmatrix`.
        sync_warp();
        let next = at.next(rows.trips);
        let frags_next = load_fragments(rows, ring, next);
        fold_trip(&frags, &mut acc);
        if at.trip + 1 == rows.trips {
            // d0, d1: row g, tokens 2c and 2c + 1; d2, d3: row g + 8.
            unroll::<2>(|i| {
                let row = begin + TILE_ROWS * at.tile + g + 8 * i as u32;
                unroll::<2>(|j| {
                    let token = 2 * c + j as u32;
                    let e = 2 * i + j;
                    if row < end && token < t {
                        let sum = ((acc[0][e] + acc[1][e]) + acc[2][e]) + acc[3][e];
                        *y.add(((token * nh + head) * r + row) as usize) = sum;
                    }
                })
            });
            acc = [[0.0f32; 4]; TRIP];
        }
        if next.tile >= n_tiles {
            break;
        }
        (at, frags) = (next, frags_next);
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
