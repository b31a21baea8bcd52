//! Step 1, the scores (Thread mapping in `attn`'s docs): the block's queries staged in shared
//! memory, each lane's partial dot products with the gathered rows, and their sums.

use super::*;

const LANE_ROWS: usize = ROWS_PER_LANE as usize;

/// The queries of the block's `HEADS_PER_BLOCK` heads into `work`, at [`query_offset`]: head `h`'s
/// chunk `c` is `q_lat`'s chunk `c` below `kv4`, then `q_pe`'s; zeros for heads past `heads` and
/// chunks past the row.
///
/// # Safety
/// `q_lat` and `q_pe` are the `[heads, kv4]` and `[heads, r4]` queries of the block's heads.
#[inline(always)]
pub(super) unsafe fn stage_queries<const HEADS_PER_BLOCK: usize>(
    q_lat: *const F32x4,
    q_pe: *const F32x4,
    work: Shared<F32x4>,
    heads: u32,
    kv4: u32,
    r4: u32,
) {
    let d4 = kv4 + r4;
    let staged = d4.next_multiple_of(ROW_LANES) * HEADS_PER_BLOCK as u32;
    let mut i = thread_idx_x();
    while i < staged {
        let h = i / ROW_LANES % HEADS_PER_BLOCK as u32;
        let c = i / (ROW_LANES * HEADS_PER_BLOCK as u32) * ROW_LANES + i % ROW_LANES;
        let q = if h >= heads || c >= d4 {
            F32x4::default()
        } else if c < kv4 {
            load_nc(q_lat.add((h * kv4 + c) as usize))
        } else {
            load_nc(q_pe.add((h * r4 + c - kv4) as usize))
        };
        work.add(i).store(q);
        i += BLOCK;
    }
}

/// Lane partials of the dot products of `rows` with every head's query: chunks `kl + 8 * m`,
/// `CHUNKS_PER_TRIP` at a time, all rows' loads issued before any is used, row by row (a row's
/// `CHUNKS_PER_TRIP` chunks together). Value `j * HEADS_PER_BLOCK + h` is row `j` with head `h`
/// (the first `ROWS_PER_LANE * HEADS_PER_BLOCK` of the 32).
///
/// A trip costs one round trip only if all its loads go out before the first multiply-add uses
/// one, and the code is shaped so that ptxas keeps them together (perf-notes, MLA: the L2
/// prefetches and the attn_gathered schedule, and attn_gathered's load order):
/// - row by row, NVRTC's order: chunk by chunk, each instruction reaching a new row of every
///   quad, the same loads cost more L2 traffic once the rows come from a large pool;
/// - the loaded chunks live in one array across trips, assigned only where a row and chunk
///   exist, so that a register holding a chunk stays live until the next trip overwrites it and
///   folding a chunk early frees nothing (a chunk never loaded is never folded either);
/// - a trip's chunk `c0 + 8 * u` is addressed as the row's chunk `c0` plus `8 * u`: LLVM must
///   assume `c0 + 8 * u` in `u32` may wrap, so indexing with it gives every load its own 64-bit
///   address, where this gives one a row and constant offsets.
///
/// # Safety
/// `rows` are cache rows of `d4` chunks; `queries` holds the staged queries.
#[inline(always)]
unsafe fn dot_partials<const HEADS_PER_BLOCK: usize, const CHUNKS_PER_TRIP: usize>(
    rows: [Option<*const F32x4>; LANE_ROWS],
    queries: Shared<F32x4>,
    d4: u32,
) -> [f32; 32] {
    let mut acc = [0.0f32; 32];
    let mut v = [[F32x4::default(); LANE_ROWS]; CHUNKS_PER_TRIP];
    let mut c0 = lane_id() % ROW_LANES;
    while c0 < d4 {
        unroll::<LANE_ROWS>(|j| {
            if let Some(p) = rows[j] {
                unroll::<CHUNKS_PER_TRIP>(|u| {
                    if c0 + ROW_LANES * (u as u32) < d4 {
                        v[u][j] = load_nc(p.add(c0 as usize).add(ROW_LANES as usize * u));
                    }
                })
            }
        });
        unroll::<CHUNKS_PER_TRIP>(|u| {
            let c = c0 + ROW_LANES * u as u32;
            if c < d4 {
                unroll::<HEADS_PER_BLOCK>(|h| {
                    let q = queries
                        .byte_add::<F32x4>(query_offset(c, h as u32, HEADS_PER_BLOCK as u32))
                        .load();
                    unroll::<LANE_ROWS>(|j| {
                        acc[j * HEADS_PER_BLOCK + h] =
                            v[u][j].dot_add(q, acc[j * HEADS_PER_BLOCK + h])
                    });
                })
            }
        });
        c0 += ROW_LANES * CHUNKS_PER_TRIP as u32;
    }
    acc
}

/// Step 1: every slot's score with each of the block's heads, into `scores`, and every slot's
/// cache row into `rows`.
///
/// After the 8 lanes of a row add their partials, lane `kl` holds `per = max(4 * h / 8, 1)`
/// consecutive values from `kl * 4 * h / 8` on (`h` = `HEADS_PER_BLOCK`): all of one row, so it
/// stores them as the scores of that row's heads (at one head a block the lanes `kl` and `kl ^ 1`
/// hold the same score and the even one stores it).
///
/// # Safety
/// All threads of the block call it; the queries are staged in `sm.work`.
#[inline(always)]
pub(super) unsafe fn score<const HEADS_PER_BLOCK: usize, const CHUNKS_PER_TRIP: usize>(
    g: Gather,
    sm: Smem<HEADS_PER_BLOCK>,
    scale: f32,
) {
    let lane = lane_id();
    let (quad, kl) = (lane / ROW_LANES, lane % ROW_LANES);
    let values = ROWS_PER_LANE * HEADS_PER_BLOCK as u32;
    let per = if values >= ROW_LANES {
        values / ROW_LANES
    } else {
        1
    };
    let start = kl * values / ROW_LANES;
    let (row_of_lane, head) = (
        start / HEADS_PER_BLOCK as u32,
        start % HEADS_PER_BLOCK as u32,
    );
    let mut first = (thread_idx_x() / 32) * SLOTS_PER_WARP;
    while first < g.n_slots {
        let rows: [Option<*const F32x4>; LANE_ROWS] = core::array::from_fn(|j| {
            let slot = first + quad + 4 * j as u32;
            (slot < g.n_slots).then(|| {
                let r = g.slot_row(slot);
                if kl == 0 {
                    sm.rows.add(slot).store(r);
                }
                g.row(r)
            })
        });
        let partials = dot_partials::<HEADS_PER_BLOCK, CHUNKS_PER_TRIP>(rows, sm.work, g.d4);
        let sums = group8_reduce_scatter(partials, values as usize);
        let slot = first + quad + 4 * row_of_lane;
        if slot < g.n_slots && kl * values % ROW_LANES == 0 {
            unroll::<4>(|k| {
                if (k as u32) < per {
                    sm.slot(slot).add(head + k as u32).store(scale * sums[k]);
                }
            });
        }
        first += WARPS * SLOTS_PER_WARP;
    }
}
