//! Step 1, the scores (Thread mapping in `attn`'s docs): the block's queries staged in shared
//! memory, each lane's partial dot products with the gathered rows, and their sums.

use super::*;
use crate::mla::dot4;

const RL: usize = ROWS_PER_LANE as usize;

/// The queries of the block's `HB` heads into `work`, at [`query_offset`]: head `h`'s chunk `c`
/// is `q_lat`'s chunk `c` below `kv4`, then `q_pe`'s; zeros for heads past `heads` and chunks
/// past the row.
///
/// # Safety
/// `q_lat` and `q_pe` are the `[heads, kv4]` and `[heads, r4]` queries of the block's heads.
#[inline(always)]
pub(super) unsafe fn stage_queries<const HB: usize>(
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
/// The loaded chunks live in one array across trips (see Occupancy and schedule in `attn`'s docs);
/// a chunk that is not loaded (no row, or past the row) is never folded, so what it holds does
/// not matter. A trip's chunk `c0 + 8 * u` is addressed as the row's chunk `c0` plus `8 * u`:
/// `c0 + 8 * u` in `u32` might wrap for all LLVM knows, so indexing with it gave every load its
/// own 64-bit address, where this gives one a row and constant offsets.
///
/// # Safety
/// `rows` are cache rows of `d4` chunks; `queries` holds the staged queries.
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
#[inline(always)]
pub(super) unsafe fn score<const HB: usize, const JT: usize>(g: Gather, sm: Smem<HB>, scale: f32) {
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
