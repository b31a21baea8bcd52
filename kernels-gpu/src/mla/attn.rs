//! attn_gathered: attention of each token's heads over `n_slots` rows gathered from a latent
//! cache, in one launch.
//!
//! A token's [`HEADS`] heads form a group, and a launch of split `s` gives each group `s` blocks
//! of [`heads_per_block`]`(s)` heads. A block computes everything of its heads: it keeps their
//! scores in shared memory for the softmax and reads the rows twice, for the scores and (from L2)
//! for the weighted sum. Splitting the heads, not the output columns, divides the scores, the
//! dominant work, where a split of the columns repeats them in every block (perf-notes, the MLA
//! decode family). At entry the blocks of a token prefetch its rows into L2 (`prefetch_rows`),
//! so that each dependent score trip waits for L2 rather than DRAM.
//!
//! # Thread mapping and per-output operations
//! 1. **Scores.** Each warp takes [`SLOTS_PER_WARP`] slots at a time; lane `l` takes the four
//!    slots `l / 8 + 4 * j` of them and the `float4` chunks `l % 8 + 8 * m` of a row,
//!    [`chunks_per_trip`] of them loaded before any is used (the latent part, then the rope part,
//!    as one row of `d = kv_rank + d_rope` floats; `q_lat` and `q_pe` are staged as one `d`-float
//!    query per head). For score `(slot, head)` the lane computes, from `p = 0`, over its chunks
//!    in ascending order, `p = fma(row.x, q.x, p)`, then `.y`, `.z`, `.w`; the 8 lanes of the row
//!    add their partials by an xor butterfly (offsets 4, 2, 1), and the score is `scale * sum`.
//!    The slot's cache row (its clamped index) is kept in shared memory for step 3.
//! 2. **Softmax**, per head: `m = max` of the scores (exact, any order); `e_i = expf(s_i - m)`
//!    (libdevice's `expf`); the sum of `e_i`, added by each thread over its slots `tid + BLOCK *
//!    j` in ascending order, then a warp butterfly (16, 8, 4, 2, 1), then the [`WARPS`] warp sums
//!    in warp order; `inv = 1 / sum` as one correctly rounded reciprocal (`sum >= 1`, as the
//!    largest score contributes `expf(0) = 1`), so that nothing divides by a sum.
//! 3. **Weighted sum.** Warp `w` takes the slots `w + WARPS * j`, [`slots_per_trip`] rows loaded
//!    before any is used, its lanes one `float4` chunk of the columns each ([`PASS_CHUNKS`] a
//!    pass). For output `(head, column)`, warp `w` computes from `a = 0`, over its slots in
//!    ascending order, `a = fma(e_i, row_i[column], a)`; the [`WARPS`] warp partials are added in
//!    warp order through shared memory, and the output is `sum * inv`.
//!
//! Both builds are held to the same blocks per SM at every split (perf-notes, MLA: occupancy
//! budgets). A slot index outside `0..pool` is clamped into it (`min(max(idx, 0), pool - 1)`):
//! a violated precondition gives a wrong row, never a read outside the cache (the host's
//! `SlotIndices` refuses such indices before they reach the device).

#[cfg(target_arch = "nvptx64")]
mod gather;
#[cfg(target_arch = "nvptx64")]
mod score;
#[cfg(target_arch = "nvptx64")]
mod shared;
#[cfg(target_arch = "nvptx64")]
mod softmax;
#[cfg(target_arch = "nvptx64")]
mod weighted_sum;

use super::Split;
use crate::abi::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::variants;
#[cfg(target_arch = "nvptx64")]
use gather::*;
#[cfg(target_arch = "nvptx64")]
use score::*;
#[cfg(target_arch = "nvptx64")]
use shared::*;
#[cfg(target_arch = "nvptx64")]
use softmax::*;
#[cfg(target_arch = "nvptx64")]
use weighted_sum::*;

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Warps per block: the number of partial sums of every output (step 3).
pub const WARPS: u32 = BLOCK / 32;
/// Heads of a group: a launch of split `s` gives each group `s` blocks of `HEADS / s` heads.
pub const HEADS: u32 = 8;
/// Lanes that share one row in the scores (step 1).
pub const ROW_LANES: u32 = 8;
/// Rows a lane scores together: each chunk of a query read from shared memory serves them all.
pub const ROWS_PER_LANE: u32 = 4;
/// Slots a warp scores together.
pub const SLOTS_PER_WARP: u32 = 32 / ROW_LANES * ROWS_PER_LANE;
/// Output chunks (`float4`) one pass of step 3 covers: one per lane.
pub const PASS_CHUNKS: u32 = 32;

/// Heads of one block of a split launch.
pub const fn heads_per_block(split: u32) -> u32 {
    HEADS / split
}

/// Chunks of each row a lane loads before using any (step 1). Two at eight heads, where the
/// trip's 256 multiply-adds a lane already cover much of its latency and the 32 partials leave
/// no room for more; four below, where the lane has few partials and little to compute.
pub const fn chunks_per_trip(heads: u32) -> u32 {
    if heads >= 8 {
        2
    } else {
        4
    }
}

/// Slots whose rows a lane loads before using any (step 3): 8 at eight heads, 16 below, for
/// the same reason as [`chunks_per_trip`].
pub const fn slots_per_trip(heads: u32) -> u32 {
    if heads >= 8 {
        8
    } else {
        16
    }
}

/// The const parameters of the entry of `split`, from the functions the launcher reads: heads a
/// block, then chunks and slots a trip.
#[cfg(target_arch = "nvptx64")]
const fn entry(split: Split) -> [usize; 3] {
    let heads = heads_per_block(split.factor());
    [
        heads as usize,
        chunks_per_trip(heads) as usize,
        slots_per_trip(heads) as usize,
    ]
}

/// Blocks of a launch: one per token, group of [`HEADS`] heads and part of the group.
pub const fn grid(t: u32, nh: u32, split: u32) -> u32 {
    t * nh.div_ceil(HEADS) * split
}

/// Byte offsets of a block's dynamic shared memory. `work` holds the staged queries during step
/// 1 and the warps' partial outputs during step 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The block's queries of `d4` chunks (step 1, see [`query_offset`]), then `WARPS x heads x
    /// PASS_CHUNKS` partials (step 3).
    pub work: u64,
    /// Scores, then softmax numerators: slot `i`'s values, one per head, at `scores + 4 *
    /// heads * i`.
    pub scores: u64,
    /// Each warp's maxima, one per head.
    pub warp_max: u64,
    /// Each warp's sums, one per head.
    pub warp_sum: u64,
    /// The reciprocal of each head's sum.
    pub inv: u64,
    /// Each slot's cache row (its index clamped into the pool), found in step 1 for step 3.
    pub rows: u64,
    /// Everything: the launch's dynamic shared memory.
    pub bytes: u64,
}

/// The shared-memory layout of a block of `heads` heads, for `n_slots` slots of rows of `d4`
/// chunks.
pub const fn layout(n_slots: u32, d4: u32, heads: u32) -> Layout {
    let queries = query_offset(d4.next_multiple_of(ROW_LANES), 0, heads) as u64;
    let partials = (WARPS * heads * PASS_CHUNKS) as u64 * 16;
    let work = if queries > partials {
        queries
    } else {
        partials
    };
    let scores = work;
    let warp_max = scores + n_slots as u64 * heads as u64 * 4;
    let warp_sum = warp_max + (WARPS * heads) as u64 * 4;
    let inv = warp_sum + (WARPS * heads) as u64 * 4;
    let rows = inv + heads as u64 * 4;
    Layout {
        work: 0,
        scores,
        warp_max,
        warp_sum,
        inv,
        rows,
        bytes: rows + n_slots as u64 * 4,
    }
}

/// Where chunk `c` of head `h`'s query is staged in a block of `heads` heads, in bytes from
/// `work`: chunks are grouped by eight, the group of all heads together (`((c / 8 * heads + h) *
/// 8 + c % 8) * 16`). The 8 lanes of a row read 8 consecutive chunks of one head (one 128-byte
/// shared-memory wavefront), and a lane finds every head's chunk at a fixed offset from one
/// address.
pub const fn query_offset(c: u32, h: u32, heads: u32) -> u32 {
    ((c / ROW_LANES * heads + h) * ROW_LANES + c % ROW_LANES) * 16
}

/// Bytes of a block's staged queries at split `split` ([`query_offset`] of the row's end,
/// counted in 64 bits): no launch whose queries alone pass a block's shared memory is possible.
pub const fn query_bytes(kv_rank: u32, d_rope: u32, split: u32) -> u64 {
    let d4 = (kv_rank as u64 + d_rope as u64) / 4;
    16 * ROW_LANES as u64 * heads_per_block(split) as u64 * d4.div_ceil(ROW_LANES as u64)
}

/// Dynamic shared memory of a launch of split `split`. [`layout`] counts the queries in 32 bits,
/// as the kernels' offsets do; where they pass that, their [`query_bytes`] alone are returned,
/// already more than any block may have.
pub const fn shared_bytes(n_slots: u32, kv_rank: u32, d_rope: u32, split: u32) -> u64 {
    let queries = query_bytes(kv_rank, d_rope, split);
    if queries > u32::MAX as u64 {
        return queries;
    }
    layout(n_slots, (kv_rank + d_rope) / 4, heads_per_block(split)).bytes
}

/// attn_gathered for block `blockIdx.x` of a launch whose blocks take `HEADS_PER_BLOCK` heads
/// each (split `HEADS / HEADS_PER_BLOCK`): token, head group and part of the group from the grid
/// order (part fastest, so that the blocks that read the same rows run side by side).
/// `CHUNKS_PER_TRIP` and `SLOTS_PER_TRIP` are [`chunks_per_trip`] and [`slots_per_trip`] of
/// `HEADS_PER_BLOCK`.
///
/// # Safety
/// As the entries' docs.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn attn_gathered<
    const HEADS_PER_BLOCK: usize,
    const CHUNKS_PER_TRIP: usize,
    const SLOTS_PER_TRIP: usize,
>(
    q_lat: *const F32x4,
    q_pe: *const F32x4,
    cache: *const F32x4,
    idx: *const i32,
    out: *mut F32x4,
    nh: i32,
    kv_rank: i32,
    d_rope: i32,
    t: i32,
    n_slots: i32,
    scale: f32,
    pool: i32,
) {
    crate::chain_entry();
    let (nh, kv4, r4, n_slots) = (
        nh as u32,
        kv_rank as u32 / 4,
        d_rope as u32 / 4,
        n_slots as u32,
    );
    let split = HEADS / HEADS_PER_BLOCK as u32;
    // SAFETY: the launch has `nh >= 1`, so there is at least one group (and no division by zero
    // to check for).
    let groups = core::num::NonZeroU32::new_unchecked(nh.div_ceil(HEADS));
    let (token, group) = (
        block_idx_x() / split / groups,
        block_idx_x() / split % groups,
    );
    let h0 = group * HEADS + block_idx_x() % split * HEADS_PER_BLOCK as u32;
    if token >= t as u32 || h0 >= nh {
        return;
    }
    let heads = if nh - h0 < HEADS_PER_BLOCK as u32 {
        nh - h0
    } else {
        HEADS_PER_BLOCK as u32
    };
    let g = Gather {
        cache,
        idx: idx.add((token * n_slots) as usize),
        n_slots,
        pool,
        d4: kv4 + r4,
    };
    prefetch_rows(
        g,
        groups.get() * split,
        group * split + block_idx_x() % split,
    );
    let sm = Smem::<HEADS_PER_BLOCK>::new(n_slots, g.d4);
    let first = (token * nh + h0) as usize;
    stage_queries::<HEADS_PER_BLOCK>(
        q_lat.add(first * kv4 as usize),
        q_pe.add(first * r4 as usize),
        sm.work,
        heads,
        kv4,
        r4,
    );
    sync_threads();
    score::<HEADS_PER_BLOCK, CHUNKS_PER_TRIP>(g, sm, scale);
    sync_threads();
    softmax(sm, n_slots);
    weighted_sum::<HEADS_PER_BLOCK, SLOTS_PER_TRIP>(
        g,
        sm,
        out.add(first * kv4 as usize),
        heads,
        kv4,
    );
}

variants! {
    /// Attention of every token's heads over its gathered cache rows: `q_lat` is `[t, nh,
    /// kv_rank]`, `q_pe` `[t, nh, d_rope]` (not read when `d_rope` is 0), `cache` `[pool,
    /// kv_rank + d_rope]`, `idx` `[t, n_slots]` rows of `cache`, `out` `[t, nh, kv_rank]`.
    ///
    /// # Launch
    /// grid [`grid`]`(t, nh, split)`, block [`BLOCK`], dynamic shared memory
    /// [`shared_bytes`]`(n_slots, kv_rank, d_rope, split)`; `kv_rank` and `d_rope` multiples of 4,
    /// `n_slots >= 1`, `pool >= 1`.
    ///
    /// # Safety
    /// The buffers hold the extents above. Indices need not be in `0..pool`: they are clamped.
    attn_gathered(
        q_lat: *const F32x4,
        q_pe: *const F32x4,
        cache: *const F32x4,
        idx: *const i32,
        out: *mut F32x4,
        nh: i32,
        kv_rank: i32,
        d_rope: i32,
        t: i32,
        n_slots: i32,
        scale: f32,
        pool: i32,
    ) for AttnGathered: Split {
        mla_attn_gathered = Split::S1 => [
            { entry(Split::S1)[0] }, { entry(Split::S1)[1] }, { entry(Split::S1)[2] }
        ];
        mla_attn_gathered_s2 = Split::S2 => [
            { entry(Split::S2)[0] }, { entry(Split::S2)[1] }, { entry(Split::S2)[2] }
        ];
        mla_attn_gathered_s4 = Split::S4 => [
            { entry(Split::S4)[0] }, { entry(Split::S4)[1] }, { entry(Split::S4)[2] }
        ];
        mla_attn_gathered_s8 = Split::S8 => [
            { entry(Split::S8)[0] }, { entry(Split::S8)[1] }, { entry(Split::S8)[2] }
        ];
    }
}
