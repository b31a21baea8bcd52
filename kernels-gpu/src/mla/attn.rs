//! attn_gathered: attention of each token's heads over `n_slots` rows gathered from a latent
//! cache, in one launch.
//!
//! # Why this shape
//! All heads of a token read the same gathered rows (at the gate's shapes 2048 rows of 2 KB, 4 MB
//! a token), and each row is worth one multiply-add per float per head. The softmax needs every
//! score of a head before any output, so a block keeps its heads' scores in shared memory and
//! reads the rows twice: once for the scores, once for the weighted sum (the second time from
//! L2). A token's [`HEADS`] heads form a group; a launch of split `s` gives each group `s` blocks
//! of [`heads_per_block`]`(s) = HEADS / s` heads, and a block computes everything of its heads.
//! A split so divides the scores (the dominant work) as well as the weighted sum, where cutting
//! the output columns instead would repeat the scores in every block (the first design; its
//! times are in docs/perf-notes.md, MLA r2).
//!
//! The trade: every block streams its token's rows twice whatever its heads, so split `s` moves
//! `8 MB x t x 8 x s` through L2 at 64 heads, while a block's time falls with its heads (its
//! multiply-adds per row loaded). At one token the 64 blocks of split 8 are latency-bound and
//! their 512 MB of L2 traffic is not the limit; at eight tokens the same split would move 4 GB,
//! so the serving table takes smaller splits as `t_q` grows. Fewer heads per block also leave
//! registers for deeper trips ([`chunks_per_trip`], [`slots_per_trip`]): more bytes in flight
//! per block, which is what a latency-bound block needs.
//!
//! A block's score trips are dependent round trips to its token's rows. So at entry the blocks
//! of a token ask L2 for its rows, each a share of the slots (`prefetch_rows`, one
//! `prefetch.global.L2` per 128-byte line): the rows' DRAM reads are then all in flight at once,
//! and a trip waits for a line already on its way to L2 instead of a DRAM round trip of its own.
//!
//! # Thread mapping and per-output operations
//! 1. **Scores.** Each warp takes 16 slots at a time; lane `l` takes the four slots
//!    `l / 8 + 4 * j` of them and the `float4` chunks `l % 8 + 8 * m` of a row, [`chunks_per_trip`]
//!    of them loaded before any is used (the latent part,
//!    then the rope part, as one row of `d = kv_rank + d_rope` floats; `q_lat` and `q_pe` are
//!    staged as one `d`-float query per head). For score `(slot, head)` the lane computes, from
//!    `p = 0`, over its chunks in ascending order, `p = fma(row.x, q.x, p)`, then `.y`, `.z`,
//!    `.w`; the 8 lanes of the row add their partials by an xor butterfly (offsets 4, 2, 1), and
//!    the score is `scale * sum`. The slot's cache row (its clamped index) is kept in shared
//!    memory for step 3.
//! 2. **Softmax**, per head: `m = max` of the scores (exact, any order); `e_i = expf(s_i - m)`
//!    (libdevice's `expf`); the sum of `e_i`, added by each thread over its slots
//!    `tid + BLOCK * j` in ascending order, then a warp butterfly (16, 8, 4, 2, 1), then the
//!    [`WARPS`] warp sums in warp order; `inv = 1 / sum` as one correctly rounded reciprocal
//!    (`sum >= 1`, as the largest score contributes `expf(0) = 1`). Nothing is ever divided by a sum, so
//!    softmax weights that underflow to zero take no slow path.
//! 3. **Weighted sum.** Warp `w` takes the slots `w + WARPS * j`, [`slots_per_trip`] rows loaded
//!    before any is used, its lanes one `float4` chunk of the columns each (32 chunks a pass).
//!    For output `(head, column)`, warp `w` computes from `a = 0`, over its slots in ascending order, `a = fma(e_i, row_i[column], a)`; the
//!    [`WARPS`] warp partials are added in warp order through shared memory, and the output is
//!    `sum * inv`.
//!
//! # Occupancy and schedule
//! Both builds are held to the same blocks per SM at every split (the budget is in
//! docs/perf-notes.md, MLA; `gates ptx-report` shows each build's resources).
//!
//! What a score trip costs is its schedule: all of its loads issued before the first
//! multiply-add uses one, one round trip; a multiply-add between them waits for its load before
//! the rest are issued, two. ptxas consumes early loads where that lets it reuse their
//! registers, so `dot_partials` keeps its loaded rows in one array across trips, assigned only
//! where a row and chunk exist: a register holding a row then stays live until the next trip
//! overwrites it, and consuming it early frees nothing. With the rows as values made fresh each
//! trip (as NVRTC's build has them) ptxas interleaved the Rust build's trips at one split or
//! another depending on the addressing (docs/perf-notes.md, MLA r17).
//!
//! # Indices
//! A slot index outside `0..pool` is clamped into it (`min(max(idx, 0), pool - 1)`): a violated
//! precondition gives a wrong row, never a read outside the cache. The host's `SlotIndices`
//! refuses such indices before they reach the device.

#[cfg(target_arch = "nvptx64")]
use super::dot4;
use crate::abi::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::variants;

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

/// Dynamic shared memory of a launch of split `split`.
pub const fn shared_bytes(n_slots: u32, kv_rank: u32, d_rope: u32, split: u32) -> u64 {
    layout(n_slots, (kv_rank + d_rope) / 4, heads_per_block(split)).bytes
}

#[cfg(target_arch = "nvptx64")]
const RL: usize = ROWS_PER_LANE as usize;

/// One token's gathered rows.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Gather {
    cache: *const F32x4,
    /// The token's `n_slots` indices.
    idx: *const i32,
    n_slots: u32,
    pool: i32,
    /// `float4` chunks per cache row.
    d4: u32,
}

#[cfg(target_arch = "nvptx64")]
impl Gather {
    /// The cache row of slot `i`: its index, clamped into the pool.
    ///
    /// # Safety
    /// `i < n_slots`.
    #[inline(always)]
    unsafe fn slot_row(self, i: u32) -> u32 {
        load_nc_i32(self.idx.add(i as usize))
            .max(0)
            .min(self.pool - 1) as u32
    }

    /// Cache row `r`.
    ///
    /// # Safety
    /// `r < pool`.
    #[inline(always)]
    unsafe fn row(self, r: u32) -> *const F32x4 {
        self.cache.add(r as usize * self.d4 as usize)
    }
}

/// Asks L2 for the token's gathered rows, shared among the `blocks` blocks that read them (all
/// of the token's groups and parts): thread `i` of block `part` takes the slots `part * BLOCK +
/// i + m * blocks * BLOCK`, and for each loads its index once and prefetches every 128-byte line
/// of its row. A block scores its rows in dependent trips, one round trip each; with the rows
/// already on their way to L2 at entry, a trip waits for L2 instead of DRAM, and the rows' DRAM
/// reads overlap each other instead of following the trips.
///
/// # Safety
/// As [`Gather::slot_row`] for every slot.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn prefetch_rows(g: Gather, blocks: u32, part: u32) {
    let mut slot = part * BLOCK + thread_idx_x();
    while slot < g.n_slots {
        let row = g.row(g.slot_row(slot)).cast::<u8>();
        let mut line = 0;
        while line < 16 * g.d4 {
            prefetch_l2(row.add(line as usize));
            line += 128;
        }
        slot += blocks * BLOCK;
    }
}

/// Shared memory addresses of a block of `HB` heads (see [`Layout`]).
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Smem<const HB: usize> {
    work: u32,
    scores: u32,
    warp_max: u32,
    warp_sum: u32,
    inv: u32,
    rows: u32,
}

#[cfg(target_arch = "nvptx64")]
impl<const HB: usize> Smem<HB> {
    #[inline(always)]
    fn new(n_slots: u32, d4: u32) -> Self {
        let base = dynamic_shared();
        let l = layout(n_slots, d4, HB as u32);
        Smem {
            work: base + l.work as u32,
            scores: base + l.scores as u32,
            warp_max: base + l.warp_max as u32,
            warp_sum: base + l.warp_sum as u32,
            inv: base + l.inv as u32,
            rows: base + l.rows as u32,
        }
    }

    /// Where slot `i`'s values (one per head) are, in `scores`.
    #[inline(always)]
    fn slot(self, i: u32) -> u32 {
        self.scores + 4 * HB as u32 * i
    }
}

/// The `HB` floats at `addr`: `float4` loads where `HB` is a multiple of 4, one float at a time
/// otherwise.
///
/// # Safety
/// As [`ld_shared_v4`], for `4 * HB` bytes.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ld_heads<const HB: usize>(addr: u32) -> [f32; HB] {
    let mut v = [0.0f32; HB];
    if HB % 4 == 0 {
        unroll::<2>(|k| {
            if 4 * k < HB {
                let q = ld_shared_v4(addr + 16 * k as u32);
                [v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]] = [q.x, q.y, q.z, q.w];
            }
        });
    } else {
        unroll::<HB>(|h| v[h] = ld_shared_f32(addr + 4 * h as u32));
    }
    v
}

/// Stores `HB` floats at `addr`, as [`ld_heads`] loads them.
///
/// # Safety
/// As [`st_shared_v4`], for `4 * HB` bytes.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn st_heads<const HB: usize>(addr: u32, v: [f32; HB]) {
    if HB % 4 == 0 {
        unroll::<2>(|k| {
            if 4 * k < HB {
                let q = F32x4 {
                    x: v[4 * k],
                    y: v[4 * k + 1],
                    z: v[4 * k + 2],
                    w: v[4 * k + 3],
                };
                st_shared_v4(addr + 16 * k as u32, q);
            }
        });
    } else {
        unroll::<HB>(|h| st_shared_f32(addr + 4 * h as u32, v[h]));
    }
}

/// The queries of the block's `HB` heads into `work`, at [`query_offset`]: head `h`'s chunk `c`
/// is `q_lat`'s chunk `c` below `kv4`, then `q_pe`'s; zeros for heads past `heads` and chunks
/// past the row.
///
/// # Safety
/// `q_lat` and `q_pe` are the `[heads, kv4]` and `[heads, r4]` queries of the block's heads.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stage_queries<const HB: usize>(
    q_lat: *const F32x4,
    q_pe: *const F32x4,
    work: u32,
    heads: u32,
    kv4: u32,
    r4: u32,
) {
    let d4 = kv4 + r4;
    let staged = d4.next_multiple_of(ROW_LANES) * HB as u32;
    let mut i = thread_idx_x();
    while i < staged {
        let h = i / ROW_LANES % HB as u32;
        let c = i / (ROW_LANES * HB as u32) * ROW_LANES + i % ROW_LANES;
        let q = if h >= heads || c >= d4 {
            F32x4::default()
        } else if c < kv4 {
            load_nc(q_lat.add((h * kv4 + c) as usize))
        } else {
            load_nc(q_pe.add((h * r4 + c - kv4) as usize))
        };
        st_shared_v4(work + 16 * i, q);
        i += BLOCK;
    }
}

/// Lane partials of the dot products of `rows` with every head's query: chunks `kl + 8 * m`,
/// `JT` at a time, all rows' loads issued before any is used, row by row (a row's `JT` chunks
/// together). Value `j * HB + h` is row `j` with head `h` (the first `ROWS_PER_LANE * HB` of
/// the 32).
///
/// The order is NVRTC's: chunk by chunk (each instruction reaching a new row of every quad)
/// costs a fifth more L2 read sectors for the same loads once the rows are gathered from a large
/// pool (docs/perf-notes.md, MLA r17).
///
/// The loaded chunks live in one array across trips (see the module's Occupancy and schedule);
/// a chunk that is not loaded (no row, or past the row) is never folded, so what it holds does
/// not matter. A trip's chunk `c0 + 8 * u` is addressed as the row's chunk `c0` plus `8 * u`:
/// `c0 + 8 * u` in `u32` might wrap for all LLVM knows, so indexing with it gave every load its
/// own 64-bit address, where this gives one a row and constant offsets.
///
/// # Safety
/// `rows` are cache rows of `d4` chunks; `queries` holds the staged queries.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn dot_partials<const HB: usize, const JT: usize>(
    rows: [Option<*const F32x4>; RL],
    queries: u32,
    d4: u32,
) -> [f32; 32] {
    let mut acc = [0.0f32; 32];
    let mut v = [[F32x4::default(); RL]; JT];
    let mut c0 = lane_id() % ROW_LANES;
    while c0 < d4 {
        unroll::<RL>(|j| {
            if let Some(p) = rows[j] {
                unroll::<JT>(|u| {
                    if c0 + ROW_LANES * (u as u32) < d4 {
                        v[u][j] = load_nc(p.add(c0 as usize).add(ROW_LANES as usize * u));
                    }
                })
            }
        });
        unroll::<JT>(|u| {
            let c = c0 + ROW_LANES * u as u32;
            if c < d4 {
                unroll::<HB>(|h| {
                    let q = ld_shared_v4(queries + query_offset(c, h as u32, HB as u32));
                    unroll::<RL>(|j| acc[j * HB + h] = dot4(v[u][j], q, acc[j * HB + h]));
                })
            }
        });
        c0 += ROW_LANES * JT as u32;
    }
    acc
}

/// Step 1: every slot's score with each of the block's heads, into `scores`, and every slot's
/// cache row into `rows`.
///
/// After the 8 lanes of a row add their partials, lane `kl` holds `per = max(4 * HB / 8, 1)`
/// consecutive values from `kl * 4 * HB / 8` on: all of one row, so it stores them as the
/// scores of that row's heads (at `HB = 1` the lanes `kl` and `kl ^ 1` hold the same score and
/// the even one stores it).
///
/// # Safety
/// All threads of the block call it; the queries are staged in `sm.work`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn score<const HB: usize, const JT: usize>(g: Gather, sm: Smem<HB>, scale: f32) {
    let lane = lane_id();
    let (quad, kl) = (lane / ROW_LANES, lane % ROW_LANES);
    let values = ROWS_PER_LANE * HB as u32;
    let per = if values >= ROW_LANES {
        values / ROW_LANES
    } else {
        1
    };
    let start = kl * values / ROW_LANES;
    let (row_of_lane, head) = (start / HB as u32, start % HB as u32);
    let mut first = (thread_idx_x() / 32) * SLOTS_PER_WARP;
    while first < g.n_slots {
        let rows: [Option<*const F32x4>; RL] = core::array::from_fn(|j| {
            let slot = first + quad + 4 * j as u32;
            (slot < g.n_slots).then(|| {
                let r = g.slot_row(slot);
                if kl == 0 {
                    st_shared_u32(sm.rows + 4 * slot, r);
                }
                g.row(r)
            })
        });
        let partials = dot_partials::<HB, JT>(rows, sm.work, g.d4);
        let sums = group8_reduce_scatter(partials, values as usize);
        let slot = first + quad + 4 * row_of_lane;
        if slot < g.n_slots && kl * values % ROW_LANES == 0 {
            unroll::<4>(|k| {
                if (k as u32) < per {
                    st_shared_f32(sm.slot(slot) + 4 * (head + k as u32), scale * sums[k]);
                }
            });
        }
        first += WARPS * SLOTS_PER_WARP;
    }
}
/// Step 2: each head's softmax numerators `expf(s - max)` in place of its scores, and `1 /
/// sum` into `inv` (visible after the block's next barrier).
///
/// # Safety
/// All threads of the block call it; the scores are in `sm.scores`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn softmax<const HB: usize>(sm: Smem<HB>, n_slots: u32) {
    let tid = thread_idx_x();
    let (warp, lane) = (tid / 32, lane_id());
    let mut m = [f32::NEG_INFINITY; HB];
    let mut i = tid;
    while i < n_slots {
        let s = ld_heads::<HB>(sm.slot(i));
        unroll::<HB>(|h| m[h] = max(m[h], s[h]));
        i += BLOCK;
    }
    unroll::<HB>(|h| m[h] = warp_max(m[h]));
    let row = 4 * HB as u32;
    if lane == 0 {
        st_heads(sm.warp_max + row * warp, m);
    }
    sync_threads();
    let mut m = ld_heads::<HB>(sm.warp_max);
    for w in 1..WARPS {
        let other = ld_heads::<HB>(sm.warp_max + row * w);
        unroll::<HB>(|h| m[h] = max(m[h], other[h]));
    }
    let mut sum = [0.0f32; HB];
    let mut i = tid;
    while i < n_slots {
        let s = ld_heads::<HB>(sm.slot(i));
        let e: [f32; HB] = core::array::from_fn(|h| expf(s[h] - m[h]));
        st_heads(sm.slot(i), e);
        unroll::<HB>(|h| sum[h] += e[h]);
        i += BLOCK;
    }
    unroll::<HB>(|h| sum[h] = warp_sum(sum[h]));
    if lane == 0 {
        st_heads(sm.warp_sum + row * warp, sum);
    }
    sync_threads();
    if tid < HB as u32 {
        let mut total = ld_shared_f32(sm.warp_sum + 4 * tid);
        for w in 1..WARPS {
            total += ld_shared_f32(sm.warp_sum + row * w + 4 * tid);
        }
        st_shared_f32(sm.inv + 4 * tid, rcp(total));
    }
}

/// `a + e * row` per head, each lane of `row` its own fused multiply-add (CUDA's `a.x += e *
/// row.x; ...`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn fma_heads<const HB: usize>(e: [f32; HB], row: F32x4, a: &mut [F32x4; HB]) {
    unroll::<HB>(|h| {
        a[h] = F32x4 {
            x: fma(e[h], row.x, a[h].x),
            y: fma(e[h], row.y, a[h].y),
            z: fma(e[h], row.z, a[h].z),
            w: fma(e[h], row.w, a[h].w),
        }
    });
}

/// This warp's partial of step 3 for the output chunk `chunk` (if `live`): its slots
/// `warp + WARPS * j` in ascending order, `NS` rows loaded before any is used.
///
/// # Safety
/// The softmax numerators are in `sm.scores`, the slots' rows in `sm.rows`; `chunk` is a latent
/// chunk of the rows when `live`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn warp_partial<const HB: usize, const NS: usize>(
    g: Gather,
    sm: Smem<HB>,
    chunk: u32,
    live: bool,
) -> [F32x4; HB] {
    let mut a = [F32x4::default(); HB];
    let mut first = thread_idx_x() / 32;
    while first < g.n_slots {
        let slot = |s: usize| first + WARPS * s as u32;
        let mut rows = [F32x4::default(); NS];
        unroll::<NS>(|s| {
            if slot(s) < g.n_slots && live {
                let row = g.row(ld_shared_u32(sm.rows + 4 * slot(s)));
                rows[s] = load_nc(row.add(chunk as usize));
            }
        });
        unroll::<NS>(|s| {
            if slot(s) < g.n_slots {
                fma_heads(ld_heads::<HB>(sm.slot(slot(s))), rows[s], &mut a);
            }
        });
        first += WARPS * NS as u32;
    }
    a
}

/// Step 3 for all `kv4` output chunks, a pass of [`PASS_CHUNKS`] at a time: every warp's
/// partials to shared memory, then one thread per (head, chunk) adds them in warp order, scales
/// by `inv` and stores.
///
/// # Safety
/// All threads of the block call it; `out` is the `[heads, kv4]` output of the block's heads.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn weighted_sum<const HB: usize, const NS: usize>(
    g: Gather,
    sm: Smem<HB>,
    out: *mut F32x4,
    heads: u32,
    kv4: u32,
) {
    let tid = thread_idx_x();
    let (warp, lane) = (tid / 32, lane_id());
    let hb = HB as u32;
    let mut base = 0;
    while base < kv4 {
        let a = warp_partial::<HB, NS>(g, sm, base + lane, base + lane < kv4);
        unroll::<HB>(|h| {
            let at = (warp * hb + h as u32) * PASS_CHUNKS + lane;
            st_shared_v4(sm.work + 16 * at, a[h]);
        });
        sync_threads();
        let (h, c) = (tid / PASS_CHUNKS, tid % PASS_CHUNKS);
        if h < heads && base + c < kv4 {
            let part = |w: u32| ld_shared_v4(sm.work + 16 * ((w * hb + h) * PASS_CHUNKS + c));
            let mut sum = part(0);
            for w in 1..WARPS {
                let p = part(w);
                sum = F32x4 {
                    x: sum.x + p.x,
                    y: sum.y + p.y,
                    z: sum.z + p.z,
                    w: sum.w + p.w,
                };
            }
            let inv = ld_shared_f32(sm.inv + 4 * h);
            *out.add((h * kv4 + base + c) as usize) = F32x4 {
                x: sum.x * inv,
                y: sum.y * inv,
                z: sum.z * inv,
                w: sum.w * inv,
            };
        }
        sync_threads();
        base += PASS_CHUNKS;
    }
}

/// attn_gathered for block `blockIdx.x` of a launch whose blocks take `HB` heads each (split
/// `HEADS / HB`): token, head group and part of the group from the grid order (part fastest, so
/// the blocks that read the same rows run side by side). `JT` and `NS` are
/// [`chunks_per_trip`]`(HB)` and [`slots_per_trip`]`(HB)`.
///
/// # Safety
/// As the entries' docs.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn attn_gathered<const HB: usize, const JT: usize, const NS: usize>(
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
    let (nh, kv4, r4, n_slots) = (
        nh as u32,
        kv_rank as u32 / 4,
        d_rope as u32 / 4,
        n_slots as u32,
    );
    let split = HEADS / HB as u32;
    // SAFETY: the launch has `nh >= 1`, so there is at least one group (and no division by zero
    // to check for).
    let groups = core::num::NonZeroU32::new_unchecked(nh.div_ceil(HEADS));
    let (token, group) = (
        block_idx_x() / split / groups,
        block_idx_x() / split % groups,
    );
    let h0 = group * HEADS + block_idx_x() % split * HB as u32;
    if token >= t as u32 || h0 >= nh {
        return;
    }
    let heads = if nh - h0 < HB as u32 {
        nh - h0
    } else {
        HB as u32
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
    let sm = Smem::<HB>::new(n_slots, g.d4);
    let first = (token * nh + h0) as usize;
    stage_queries::<HB>(
        q_lat.add(first * kv4 as usize),
        q_pe.add(first * r4 as usize),
        sm.work,
        heads,
        kv4,
        r4,
    );
    sync_threads();
    score::<HB, JT>(g, sm, scale);
    sync_threads();
    softmax(sm, n_slots);
    weighted_sum::<HB, NS>(g, sm, out.add(first * kv4 as usize), heads, kv4);
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
    ) {
        mla_attn_gathered = [8, 2, 8];
        mla_attn_gathered_s2 = [4, 4, 16];
        mla_attn_gathered_s4 = [2, 4, 16];
        mla_attn_gathered_s8 = [1, 4, 16];
    }
}
