//! absorb_q and decompress_v: one per-head batched GEMV, `y[t, h, r] = sum_k x[t, h, k] *
//! w[h, r, k]`, under two names and argument orders.
//!
//! Each weight row is read once for every token of the batch, so both are bound by the weight
//! stream; a lane keeps several 16-byte read-only loads in flight.
//!
//! # Thread mapping
//! A block takes one head (`blockIdx.x / SPLIT`) and the part `blockIdx.x % SPLIT` of its rows
//! ([`super::split_range`]). It first copies the head's activations `x[0..t, h, 0..k]` into
//! shared memory. Each warp then takes [`ROWS_PER_WARP`] rows at a time (warp `w` the rows from
//! `begin + w * ROWS_PER_WARP`, then [`WARPS`]` * `[`ROWS_PER_WARP`] further on); its lanes
//! split each row into `float4` chunks, lane `l` taking chunks `l, l + 32, l + 64, ...`, and
//! load [`CHUNKS_PER_TRIP`] chunks of every row of the group before using any (a trip). The
//! warp's trips run as one stream across its groups, each loaded before the trip before it is
//! folded, and the block's first before the staging barrier, so that a warp's weight loads stop
//! neither while it folds nor while it reduces. The kernel dispatches on `t` to one body per
//! token count (CUDA's `switch` over a template parameter), so that the per-token partials stay
//! in registers. The split entries declare `SPLIT_MIN_BLOCKS` blocks an SM.
//!
//! # Per-output operations
//! For output `y[t, h, r]`, lane `l` computes, from `p = 0`, over its chunks `c` in ascending
//! order, `p = fma(w.x, x.x, p); p = fma(w.y, x.y, p); p = fma(w.z, x.z, p); p = fma(w.w, x.w,
//! p)` (`w` = chunk `c` of row `r`, `x` = chunk `c` of token `t`), and the warp sums the 32
//! partials with an xor butterfly (offsets 16, 8, 4, 2, 1); a warp's `2 t` sums of a row group
//! go through one reduce-scatter (`device::warp_reduce_scatter`), which adds the same pairs.
//! Which block or warp does this is the only thing a split changes.

use super::Split;
use crate::abi::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::variants;

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Warps per block.
pub const WARPS: u32 = BLOCK / 32;
/// Rows a warp computes together: each chunk of `x` read from shared memory serves them all.
pub const ROWS_PER_WARP: u32 = 2;
/// Chunks of each row a lane loads before using any: with [`ROWS_PER_WARP`] rows, four 16-byte
/// loads in flight per lane.
pub const CHUNKS_PER_TRIP: u32 = 2;
/// Tokens one launch takes: a lane keeps one partial sum per row and token.
pub const MAX_T: u32 = 8;
/// Blocks an SM holds at once, which the split entries declare, so that ptxas keeps a thread within
/// the registers that let split 8's grid run in one wave (perf-notes, MLA: each trip loaded before
/// the one before it is folded). The unsplit entries' grid is one block a head, and they take the
/// registers they need.
#[cfg(target_arch = "nvptx64")]
const SPLIT_MIN_BLOCKS: u32 = 4;
/// Whether a trip that lies inside the row is folded without a guard a chunk ([`fold_trip`]'s
/// `FULL`): below sm_100; for sm_120 ptxas spills that fold within the registers of
/// [`SPLIT_MIN_BLOCKS`].
#[cfg(target_arch = "nvptx64")]
const UNGUARDED: bool = !cfg!(target_feature = "sm_100");

/// Blocks of a launch: `split` per head.
pub const fn grid(nh: u32, split: u32) -> u32 {
    nh * split
}

/// Dynamic shared memory of a launch: the activations of one head, `t` rows of `k` floats.
pub const fn shared_bytes(t: u32, k: u32) -> u64 {
    t as u64 * k as u64 * 4
}

#[cfg(target_arch = "nvptx64")]
const WARP_ROWS: usize = ROWS_PER_WARP as usize;
#[cfg(target_arch = "nvptx64")]
const TRIP_CHUNKS: usize = CHUNKS_PER_TRIP as usize;

/// Where a block's warps find what they share.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Head {
    /// The head's weight rows.
    w: *const F32x4,
    /// Its activations in shared memory: token `t`'s chunk `c` at `xs.add(t * k4 + c)`.
    xs: Shared<F32x4>,
    /// `float4` chunks per row.
    k4: u32,
}

/// Copies `x[0..TOKENS, head, ..]` into shared memory by `cp.async`, thread `i` the chunks `i, i +
/// BLOCK, ...` of every token, and waits for its copies: every token's copies are in flight at
/// once and land without passing through the thread, so staging takes one round trip to memory
/// whatever the batch, where a loop of loads and stores per token would wait for each token's
/// loads in turn.
///
/// # Safety
/// `x` holds `TOKENS * nh * k4` chunks; the launch has `TOKENS * k4 * 16` bytes of dynamic shared
/// memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stage_x<const TOKENS: usize>(x: *const F32x4, hd: Head, nh: u32, head: u32) {
    unroll::<TOKENS>(|t| {
        let t = t as u32;
        let src = x.add(((t * nh + head) * hd.k4) as usize);
        let mut c = thread_idx_x();
        while c < hd.k4 {
            cp_async_16(hd.xs.add(t * hd.k4 + c), src.add(c as usize).cast());
            c += block_dim_x();
        }
    });
    cp_async_commit();
    cp_async_wait_group::<0>();
}

/// One trip of a warp over its row group: chunks `c0 + 32 * u` (`u < CHUNKS_PER_TRIP`) of the
/// rows `first + i` (`i < ROWS_PER_WARP`).
#[cfg(target_arch = "nvptx64")]
type Trip = [[F32x4; WARP_ROWS]; TRIP_CHUNKS];

/// The loads of one trip as fresh values, zeros for rows from `end` on and chunks past the row.
///
/// # Safety
/// The rows below `end` exist in `hd.w`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_trip(hd: Head, first: u32, end: u32, c0: u32) -> Trip {
    core::array::from_fn(|u| {
        let c = c0 + 32 * u as u32;
        core::array::from_fn(|i| {
            let row = first + i as u32;
            if row < end && c < hd.k4 {
                load_nc(hd.w.add((row * hd.k4 + c) as usize))
            } else {
                F32x4::default()
            }
        })
    })
}

/// Folds one trip into the lane partials, token by token, in ascending chunk order. `FULL`: the
/// trip lies inside the row, so no chunk needs a guard, and the trip's loads and multiply-adds form
/// one block that ptxas schedules as a whole (a guard a token and chunk made each load and its
/// multiply-adds a branch of their own, each waiting for its load).
///
/// # Safety
/// `hd.xs` holds the staged activations of `TOKENS` tokens.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn fold_trip<const TOKENS: usize, const FULL: bool>(
    hd: Head,
    w: &Trip,
    c0: u32,
    acc: &mut [[f32; TOKENS]; WARP_ROWS],
) {
    unroll::<TOKENS>(|t| {
        unroll::<TRIP_CHUNKS>(|u| {
            let c = c0 + 32 * u as u32;
            if FULL || c < hd.k4 {
                let x = hd.xs.add(t as u32 * hd.k4 + c).load();
                unroll::<WARP_ROWS>(|i| acc[i][t] = w[u][i].dot_add(x, acc[i][t]));
            }
        })
    })
}

/// The GEMV of `TOKENS` tokens for head `blockIdx.x / SPLIT`, rows of part `blockIdx.x % SPLIT`.
/// `TOKENS` is a constant so that every per-token loop unrolls and the partials stay in registers.
///
/// Every trip is loaded a trip ahead: the block's first before the activations are staged (its
/// latency overlaps the staging and the barrier), each next one before the trip before it is
/// folded, across the warp's row groups, so that a warp's weight loads stop neither while it
/// folds nor while it reduces.
///
/// # Safety
/// As [`gemv`], with `t = TOKENS`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gemv_t<const SPLIT: u32, const TOKENS: usize>(
    x: *const F32x4,
    w: *const F32x4,
    y: *mut f32,
    nh: u32,
    k4: u32,
    r: u32,
) {
    let head = block_idx_x() / SPLIT;
    let (begin, end) = super::split_range(r, SPLIT, block_idx_x() % SPLIT);
    if begin >= end {
        return;
    }
    let hd = Head {
        w: w.add((head * r * k4) as usize),
        xs: dynamic_shared().cast(),
        k4,
    };
    let lane = lane_id();
    let mut first = begin + (thread_idx_x() / 32) * ROWS_PER_WARP;
    let mut w = load_trip(hd, first, end, lane);
    stage_x::<TOKENS>(x, hd, nh, head);
    sync_threads();
    // The trips of the warp's row groups as one stream (a group's trips, then the next group's),
    // each trip's loads issued before the trip before it is folded.
    let mut base = 0;
    let mut acc = [[0.0f32; TOKENS]; WARP_ROWS];
    while first < end {
        let last = base + 32 * CHUNKS_PER_TRIP >= k4;
        let (next, next_base) = if last {
            (first + WARPS * ROWS_PER_WARP, 0)
        } else {
            (first, base + 32 * CHUNKS_PER_TRIP)
        };
        let w_next = load_trip(hd, next, end, next_base + lane);
        if UNGUARDED && base + 32 * CHUNKS_PER_TRIP <= k4 {
            fold_trip::<TOKENS, true>(hd, &w, base + lane, &mut acc);
        } else {
            fold_trip::<TOKENS, false>(hd, &w, base + lane, &mut acc);
        }
        if last {
            // The group's WARP_ROWS * TOKENS sums in one reduce-scatter (zeros padding them to a
            // power of two `n`): lane `l` ends with sum `l / (32 / n)`, value `i * TOKENS + t`, and
            // the first lane of each stores it.
            let n = (WARP_ROWS * TOKENS).next_power_of_two();
            let mut v = [0.0f32; 32];
            unroll::<WARP_ROWS>(|i| unroll::<TOKENS>(|t| v[i * TOKENS + t] = acc[i][t]));
            acc = [[0.0; TOKENS]; WARP_ROWS];
            let sum = warp_reduce_scatter(v, n);
            let lanes = 32 / n as u32;
            let j = lane / lanes;
            let (row, t) = (first + j / TOKENS as u32, j % TOKENS as u32);
            if lane % lanes == 0 && j < (WARP_ROWS * TOKENS) as u32 && row < end {
                *y.add(((t * nh + head) * r + row) as usize) = sum;
            }
        }
        (w, first, base) = (w_next, next, next_base);
    }
}

/// The GEMV of head `blockIdx.x / SPLIT`, rows of part `blockIdx.x % SPLIT`, for `t` tokens
/// (one body per token count, as CUDA's `switch (t)` over a template parameter). A `t` outside
/// `1..=MAX_T` writes nothing.
///
/// # Safety
/// `x` holds `t * nh * k` floats, `w` holds `nh * r * k`, `y` holds `t * nh * r`; `k` is a
/// multiple of 4; grid [`grid`]`(nh, SPLIT)`, block [`BLOCK`], dynamic shared memory
/// [`shared_bytes`]`(t, k)`.
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
    if SPLIT > 1 {
        launch_bounds::<BLOCK, SPLIT_MIN_BLOCKS>();
    } else {
        max_threads::<BLOCK>();
    }
    crate::chain_entry();
    let (nh, k4, r) = (nh as u32, k as u32 / 4, r as u32);
    match t {
        1 => gemv_t::<SPLIT, 1>(x, w, y, nh, k4, r),
        2 => gemv_t::<SPLIT, 2>(x, w, y, nh, k4, r),
        3 => gemv_t::<SPLIT, 3>(x, w, y, nh, k4, r),
        4 => gemv_t::<SPLIT, 4>(x, w, y, nh, k4, r),
        5 => gemv_t::<SPLIT, 5>(x, w, y, nh, k4, r),
        6 => gemv_t::<SPLIT, 6>(x, w, y, nh, k4, r),
        7 => gemv_t::<SPLIT, 7>(x, w, y, nh, k4, r),
        8 => gemv_t::<SPLIT, 8>(x, w, y, nh, k4, r),
        _ => {}
    }
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
    /// [`shared_bytes`]`(t, d_nope)`; `d_nope` a multiple of 4, `1 <= t <= MAX_T`.
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
    ) for AbsorbQ: Split {
        mla_absorb_q = Split::S1 => [{ Split::S1.factor() }];
        mla_absorb_q_s2 = Split::S2 => [{ Split::S2.factor() }];
        mla_absorb_q_s4 = Split::S4 => [{ Split::S4.factor() }];
        mla_absorb_q_s8 = Split::S8 => [{ Split::S8.factor() }];
    }
}

variants! {
    /// `out[t, h, v] = sum_c o_lat[t, h, c] * w_vb[h, v, c]`: `o_lat` is `[t, nh, kv_rank]`,
    /// `w_vb` is `[nh, d_v, kv_rank]`, `out` is `[t, nh, d_v]`.
    ///
    /// # Launch
    /// grid [`grid`]`(nh, split)`, block [`BLOCK`], dynamic shared memory
    /// [`shared_bytes`]`(t, kv_rank)`; `kv_rank` a multiple of 4, `1 <= t <= MAX_T`.
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
    ) for DecompressV: Split {
        mla_decompress_v = Split::S1 => [{ Split::S1.factor() }];
        mla_decompress_v_s2 = Split::S2 => [{ Split::S2.factor() }];
        mla_decompress_v_s4 = Split::S4 => [{ Split::S4.factor() }];
        mla_decompress_v_s8 = Split::S8 => [{ Split::S8.factor() }];
    }
}
