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
//! `begin + w * ROWS_PER_WARP`, then [`WARPS`]` * `[`ROWS_PER_WARP`] further on), [`ROW_LANES`]
//! lanes a row: lane `l` takes row `l / ROW_LANES` of the group and its `float4` chunks `j, j +
//! ROW_LANES, ...` (`j = l % ROW_LANES`), loading [`chunks_per_trip`]`(t)` of them before using any
//! (a trip). The warp's four rows read the same activation chunks at once, so a shared-memory
//! load serves four weight rows, and a lane's partials are those of one row. A group's first
//! trip is loaded before the reduction of the group before it, and the block's first before the
//! staging barrier, so that a warp's weight loads do not stop while it reduces. The kernel
//! dispatches on `t` to one body per token count (CUDA's `switch` over a template parameter), so
//! that the per-token partials stay in registers; every body fits 64 registers, four blocks an SM,
//! so that split 8's grid runs in one wave at 64 heads.
//!
//! # Per-output operations
//! For output `y[t, h, r]`, lane `j` of the row's [`ROW_LANES`] computes, from `p = 0`, over its
//! chunks `c` in ascending order, `p = fma(w.x, x.x, p); p = fma(w.y, x.y, p); p = fma(w.z, x.z,
//! p); p = fma(w.w, x.w, p)` (`w` = chunk `c` of row `r`, `x` = chunk `c` of token `t`), and the
//! row's lanes sum their partials with an xor butterfly (offsets 4, 2, 1); a lane's `t` sums go
//! through one reduce-scatter over its row's lanes (`device::group8_reduce_scatter`), which adds
//! the same pairs. Which block or warp does this is the only thing a split changes.

use super::Split;
use crate::abi::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::variants;

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Warps per block.
pub const WARPS: u32 = BLOCK / 32;
/// Lanes that share a row: its chunks dealt out among them in turn.
pub const ROW_LANES: u32 = 8;
/// Rows a warp computes together: each activation chunk read from shared memory serves them all.
pub const ROWS_PER_WARP: u32 = 32 / ROW_LANES;
/// Chunks of its row a lane loads before using any, at `t` tokens: four 16-byte loads in flight
/// per lane, two from five tokens on, where the partial sums and the activation loads take the
/// registers (the chunks of a lane are the same whatever the trips, so are the bits).
pub const fn chunks_per_trip(t: u32) -> u32 {
    if t > 4 {
        2
    } else {
        4
    }
}
/// Tokens one launch takes: a lane keeps one partial sum per token.
pub const MAX_T: u32 = 8;

/// Blocks of a launch: `split` per head.
pub const fn grid(nh: u32, split: u32) -> u32 {
    nh * split
}

/// Dynamic shared memory of a launch: the activations of one head, `t` rows of `k` floats.
pub const fn shared_bytes(t: u32, k: u32) -> u64 {
    t as u64 * k as u64 * 4
}

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

/// Copies `x[0..TOKENS, head, ..]` into shared memory, one `float4` per thread and step.
///
/// # Safety
/// `x` holds `TOKENS * nh * k4` chunks; the launch has `TOKENS * k4 * 16` bytes of dynamic shared
/// memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stage_x<const TOKENS: usize>(x: *const F32x4, hd: Head, nh: u32, head: u32) {
    for t in 0..TOKENS as u32 {
        let src = x.add(((t * nh + head) * hd.k4) as usize);
        let mut c = thread_idx_x();
        while c < hd.k4 {
            hd.xs.add(t * hd.k4 + c).store(load_nc(src.add(c as usize)));
            c += block_dim_x();
        }
    }
}

/// One trip of a lane over its row: chunks `c0 + ROW_LANES * u` (`u < C`).
#[cfg(target_arch = "nvptx64")]
type Trip<const C: usize> = [F32x4; C];

/// The lane's chunk of a trip whose span starts at chunk `base` of every row.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn trip_chunk(base: u32, u: usize) -> u32 {
    base + lane_id() % ROW_LANES + ROW_LANES * u as u32
}

/// Issues the loads of one trip of row `row` into `w`, where the row is below `end` and the
/// chunks are in the row; the other entries keep what they held (their partials are never
/// stored).
///
/// One array serves every trip of a warp: a register holding a chunk then stays live until the next
/// trip overwrites it, so using a chunk early frees nothing and ptxas has no reason to fold a
/// trip's first loads before it has issued the rest, which fresh values each trip invite (two round
/// trips a trip instead of one; perf-notes, MLA: attn_gathered's load order, and the GEMVs' trips
/// kept together). The chunks are addressed from one pointer with constant offsets, which keeps
/// the addresses of the trip's loads off the registers the fold frees.
///
/// # Safety
/// The rows below `end` exist in `hd.w`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_trip_into<const C: usize>(hd: Head, row: u32, end: u32, base: u32, w: &mut Trip<C>) {
    // Past the rows when the guards below fail for every load: only formed, never read.
    let first =
        hd.w.wrapping_add((row * hd.k4 + trip_chunk(base, 0)) as usize);
    unroll::<C>(|u| {
        if row < end && trip_chunk(base, u) < hd.k4 {
            w[u] = load_nc(first.add(ROW_LANES as usize * u));
        }
    })
}

/// The loads of one trip as fresh values, zeros for a row from `end` on and chunks past the row,
/// each load addressed from its own chunk index: the form whose loads ptxas issues before the
/// reduction of the group before them (see [`FRESH_GROUP_FROM_TOKENS`]).
///
/// # Safety
/// As [`load_trip_into`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_trip<const C: usize>(hd: Head, row: u32, end: u32, base: u32) -> Trip<C> {
    core::array::from_fn(|u| {
        let c = trip_chunk(base, u);
        if row < end && c < hd.k4 {
            load_nc(hd.w.add((row * hd.k4 + c) as usize))
        } else {
            F32x4::default()
        }
    })
}

/// Folds one trip into the lane's partials, token by token, in ascending chunk order.
///
/// # Safety
/// `hd.xs` holds the staged activations of `TOKENS` tokens.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn fold_trip<const TOKENS: usize, const C: usize>(
    hd: Head,
    w: &Trip<C>,
    base: u32,
    acc: &mut [f32; TOKENS],
) {
    // One address a token, the trip's chunks at constant offsets from it.
    let mut xs = hd.xs.add(trip_chunk(base, 0));
    unroll::<TOKENS>(|t| {
        unroll::<C>(|u| {
            if trip_chunk(base, u) < hd.k4 {
                let x = xs.add(ROW_LANES * u as u32).load();
                acc[t] = w[u].dot_add(x, acc[t]);
            }
        });
        xs = xs.add(hd.k4);
    })
}

/// The lane's partials of row `row` (zeros from `end` on) for each of the `TOKENS` tokens, over
/// the trips from chunk `0`, `ROW_LANES * C`, ...; `w` holds the first trip, loaded by the caller.
///
/// # Safety
/// As [`load_trip`] and [`fold_trip`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn row_partials<const TOKENS: usize, const C: usize>(
    hd: Head,
    row: u32,
    end: u32,
    w: &mut Trip<C>,
) -> [f32; TOKENS] {
    let mut acc = [0.0f32; TOKENS];
    fold_trip(hd, w, 0, &mut acc);
    let span = ROW_LANES * C as u32;
    let mut base = span;
    while base < hd.k4 {
        load_trip_into(hd, row, end, base, w);
        fold_trip(hd, w, base, &mut acc);
        base += span;
    }
    acc
}

/// Token counts from which a row group's first trip is loaded as fresh values ([`load_trip`])
/// rather than into the warp's one array ([`load_trip_into`]).
///
/// Into the array, a large batch's next group is loaded after the reduction of the group
/// before it, a full round trip for absorb_q, whose rows are few trips long; as fresh values the
/// loads go out before the reduction, as in NVRTC's build, while small batches are faster with
/// the array (perf-notes, MLA: attn_gathered's load order, and the GEMVs' trips kept together).
#[cfg(target_arch = "nvptx64")]
const FRESH_GROUP_FROM_TOKENS: usize = 5;

/// Loads the first trip of row `row` into `w` (see [`FRESH_GROUP_FROM_TOKENS`]).
///
/// # Safety
/// As [`load_trip`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_group<const TOKENS: usize, const C: usize>(
    hd: Head,
    row: u32,
    end: u32,
    w: &mut Trip<C>,
) {
    if TOKENS >= FRESH_GROUP_FROM_TOKENS {
        *w = load_trip(hd, row, end, 0);
    } else {
        load_trip_into(hd, row, end, 0, w);
    }
}

/// The GEMV of `TOKENS` tokens, `C` chunks a trip ([`chunks_per_trip`]), for head `blockIdx.x / SPLIT`, rows of part `blockIdx.x % SPLIT`.
/// `TOKENS` is a constant so that every per-token loop unrolls and the partials stay in registers.
///
/// A row group's first trip is loaded ahead: the block's first before the activations are
/// staged (its latency overlaps the staging and the barrier), each next one before the
/// reduction of the group before it.
///
/// # Safety
/// As [`gemv`], with `t = TOKENS`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gemv_t<const SPLIT: u32, const TOKENS: usize, const C: usize>(
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
    // Token t's row `row` at `y_head + t nh r + row`.
    let y_head = y.add((head * r) as usize);
    let lane = lane_id();
    let sub = lane / ROW_LANES;
    let mut first = begin + (thread_idx_x() / 32) * ROWS_PER_WARP;
    let mut w: Trip<C> = [F32x4::default(); C];
    load_group::<TOKENS, C>(hd, first + sub, end, &mut w);
    stage_x::<TOKENS>(x, hd, nh, head);
    sync_threads();
    while first < end {
        let row = first + sub;
        let acc = row_partials::<TOKENS, C>(hd, row, end, &mut w);
        let next = first + WARPS * ROWS_PER_WARP;
        load_group::<TOKENS, C>(hd, next + sub, end, &mut w);
        // The lane's TOKENS sums in one reduce-scatter over its row's lanes (zeros padding them to
        // a power of two `n`): lane `j` of the row ends with token `j * n / ROW_LANES`, and the
        // first lane of each stores it.
        let n = TOKENS.next_power_of_two();
        let mut v = [0.0f32; 32];
        unroll::<TOKENS>(|t| v[t] = acc[t]);
        let sum = group8_reduce_scatter(v, n)[0];
        let j = lane % ROW_LANES;
        let t = j * n as u32 / ROW_LANES;
        if j % (ROW_LANES / n as u32) == 0 && t < TOKENS as u32 && row < end {
            *y_head.add((t * nh * r + row) as usize) = sum;
        }
        first = next;
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
    crate::chain_entry();
    let (nh, k4, r) = (nh as u32, k as u32 / 4, r as u32);
    match t {
        1 => gemv_t::<SPLIT, 1, { chunks_per_trip(1) as usize }>(x, w, y, nh, k4, r),
        2 => gemv_t::<SPLIT, 2, { chunks_per_trip(2) as usize }>(x, w, y, nh, k4, r),
        3 => gemv_t::<SPLIT, 3, { chunks_per_trip(3) as usize }>(x, w, y, nh, k4, r),
        4 => gemv_t::<SPLIT, 4, { chunks_per_trip(4) as usize }>(x, w, y, nh, k4, r),
        5 => gemv_t::<SPLIT, 5, { chunks_per_trip(5) as usize }>(x, w, y, nh, k4, r),
        6 => gemv_t::<SPLIT, 6, { chunks_per_trip(6) as usize }>(x, w, y, nh, k4, r),
        7 => gemv_t::<SPLIT, 7, { chunks_per_trip(7) as usize }>(x, w, y, nh, k4, r),
        8 => gemv_t::<SPLIT, 8, { chunks_per_trip(8) as usize }>(x, w, y, nh, k4, r),
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
