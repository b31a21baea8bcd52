//! The cluster entry, [`mla_attn_gathered_flash_c8`](super::mla_attn_gathered_flash_c8): the 64
//! heads of a (token, chunk) over a cluster of [`CLUSTER`] blocks, block `r` staging only the
//! columns it needs, for the same bits as the other entries.
//!
//! Block `r` computes score part `r` (the k-steps a warp of the other entries folds for part
//! `r`) for all 64 heads and the chunk's 64 slots, and the `r`-th eighth of the output's column
//! tiles; so it stages of each of the chunk's rows only the span of those two ranges
//! ([`cluster_steps`]), and of the queries only its part. The parts meet in distributed shared
//! memory: after a cluster barrier, block `r` adds the eight parts of heads `8r..8r + 8` in part
//! order (as the other entries add their warps' parts) and takes their softmax; after a second,
//! each block copies the other blocks' numerators and sums its columns. Every output is the
//! other entries' chain of the same operands, so the bits are theirs.
//!
//! Warp `w` of [`CLUSTER_WARPS`]: scores of head tile `w / 2` and slot tiles `4 (w % 2)..`;
//! the sum's head tile `w % 4` and column tiles from `4 (w / 4)` of the block's range, in steps
//! of 8; staging, the warp's rows (and heads) `w + 8 i`, a half-warp a row.

use super::*;

/// Blocks of a cluster: one a part of the scores' k-steps.
pub const CLUSTER: u32 = K_PARTS;
/// Warps of a cluster's block.
pub const CLUSTER_WARPS: u32 = 8;
/// Threads of a cluster's block.
pub const CLUSTER_BLOCK: u32 = CLUSTER_WARPS * 32;
/// Head tiles of a cluster.
pub const CLUSTER_TILES: u32 = 4;
/// Blocks of a cluster an SM holds at once (the launch bound ptxas fits the registers to): a
/// block's chain is short and waits on its copies and the cluster barriers, so it takes many
/// of them side by side to keep the tensor cores busy.
pub const CLUSTER_BLOCKS_PER_SM: u32 = 4;
/// Heads whose softmax a block of a cluster takes.
#[cfg(target_arch = "nvptx64")]
const RANK_HEADS: u32 = TILE_HEADS * CLUSTER_TILES / CLUSTER;

const fn min(a: u32, b: u32) -> u32 {
    if a < b {
        a
    } else {
        b
    }
}

const fn max(a: u32, b: u32) -> u32 {
    if a > b {
        a
    } else {
        b
    }
}

/// The k-steps (8 floats) of block `rank` of a cluster, for rows of `d` floats: its part of the
/// scores, its output column tiles, and the span of both that it stages (`[start, end)` each;
/// an empty range starts where it ends).
pub const fn cluster_steps(d: u32, kv_rank: u32, rank: u32) -> [(u32, u32); 3] {
    let (ksteps, ntiles) = (d.div_ceil(8), kv_rank.div_ceil(8));
    let (per, cols) = (ksteps.div_ceil(K_PARTS), ntiles.div_ceil(CLUSTER));
    let score = (min(rank * per, ksteps), min((rank + 1) * per, ksteps));
    let value = (min(rank * cols, ntiles), min((rank + 1) * cols, ntiles));
    let span = if score.0 == score.1 {
        value
    } else if value.0 == value.1 {
        score
    } else {
        (min(score.0, value.0), max(score.1, value.1))
    };
    [score, value, span]
}

/// A cluster block's shared memory for rows of `d` floats, the same in every block (the parts
/// and numerators are read at their own offsets in the others): the staged span of the chunk's
/// rows (the widest of the cluster's, [`row_stride`] apart), then the queries of its part, later
/// its score partials, then the numerators of all 64 heads. Bytes: `(work, num, total)`, and the
/// rows' and queries' strides in floats.
pub const fn cluster_layout(d: u32, kv_rank: u32) -> (u32, u32, u32, u32, u32) {
    let mut widest = 0;
    let mut r = 0;
    while r < CLUSTER {
        let [_, _, span] = cluster_steps(d, kv_rank, r);
        widest = max(widest, span.1 - span.0);
        r += 1;
    }
    let heads = TILE_HEADS * CLUSTER_TILES;
    let (rows, queries) = (
        row_stride(8 * widest),
        row_stride(8 * d.div_ceil(8).div_ceil(K_PARTS)),
    );
    let work = 4 * CHUNK * rows;
    let num = work + 4 * heads * max(queries, S_STRIDE);
    (work, num, num + 4 * heads * P_STRIDE, rows, queries)
}

/// The entry's body: the module docs' steps for the cluster of block `blockIdx.x`.
///
/// # Safety
/// As the entries' docs; launched in clusters of [`CLUSTER`] blocks (the entry says so).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) unsafe fn attn_flash_cluster<const M_TILES: usize>(
    (q_lat, q_pe, cache, idx, o_part, ml): (
        *const F32x4,
        *const F32x4,
        *const F32x4,
        *const i32,
        *mut f32,
        *mut f32,
    ),
    (nh, kv_rank, d_rope, t, n_slots, pool): (i32, i32, i32, i32, i32, i32),
    scale: f32,
) {
    cluster_dims::<CLUSTER>();
    launch_bounds::<CLUSTER_BLOCK, CLUSTER_BLOCKS_PER_SM>();
    // The combine may launch now: it waits for this grid before it reads the workspace.
    launch_dependents();
    let (nh, kv_rank, d_rope, n_slots) = (nh as u32, kv_rank as u32, d_rope as u32, n_slots as u32);
    let heads = TILE_HEADS * M_TILES as u32;
    // SAFETY: the launch has `nh >= 1` and `n_slots >= 1`.
    let groups = NonZeroU32::new_unchecked(nh.div_ceil(heads));
    let n_chunks = NonZeroU32::new_unchecked(chunks(n_slots));
    let (rank, i) = (cluster_rank(), block_idx_x() / CLUSTER);
    let (group, chunk, token) = (i % groups, i / groups % n_chunks, i / groups / n_chunks);
    if token >= t as u32 {
        return;
    }
    let d = kv_rank + d_rope;
    let [score, value, span] = cluster_steps(d, kv_rank, rank);
    let (work, num, _, stride, qs) = cluster_layout(d, kv_rank);
    let base = dynamic_shared();
    let (rows, work, num) = (base.cast::<f32>(), base.byte_add(work), base.byte_add(num));
    let first = (token as usize * n_chunks.get() as usize + chunk as usize) * nh as usize;
    let b = Block {
        token,
        s0: chunk * CHUNK,
        h0: group * heads,
        heads,
        nh,
        n_slots,
        kv_rank,
        stride,
    };
    stage_span(
        (cache, idx),
        b,
        rows,
        (2 * span.0, 2 * span.1),
        (d / 4, pool),
    );
    stage_part(
        (q_lat, q_pe),
        b,
        (work, qs),
        (2 * score.0, 2 * score.1, d_rope / 4),
    );
    cp_async_commit();
    staged();

    let warp = thread_idx_x() / 32;
    let (m, tile0) = (warp / 2, S_TILES * (warp % 2));
    let acc = score_tiles::<1>(
        (work.add(16 * m * qs), qs),
        (
            rows.add(8 * tile0 * stride + 8 * (score.0 - span.0)),
            stride,
        ),
        score.1 - score.0,
    );
    sync_threads();
    store_scores(&acc, work.add(16 * m * S_STRIDE + 8 * tile0));
    cluster_arrive();
    cluster_wait();

    if thread_idx_x() < 8 * RANK_HEADS {
        let (h, q) = (RANK_HEADS * rank + thread_idx_x() / 8, thread_idx_x() % 8);
        let at = work.add(h * S_STRIDE + 8 * q).cast::<F32x4>();
        let s = add_parts(|p| {
            let pair = at.in_rank(p);
            [pair.load(), pair.add(1).load()]
        });
        softmax(b, s, num, ml.add(2 * first), scale, (h, q));
    }
    cluster_arrive();
    cluster_wait();

    gather_numerators(num, rank);
    // The others may leave once every block has copied its numerators (the wait below).
    cluster_arrive();
    sync_threads();
    let m = warp % 4;
    let tiles = SumTiles {
        first: value.0 + PASS_TILES * (warp / 4),
        end: value.1,
        step: 2 * PASS_TILES,
        lo: span.0,
    };
    let sum = Block {
        h0: b.h0 + 16 * m,
        ..b
    };
    weighted_sum::<1>(
        sum,
        (rows, num.add(16 * m * P_STRIDE)),
        o_part.add(first * kv_rank as usize),
        tiles,
    );
    cluster_wait();
}

/// Copies the warp's `2 PAIRS` rows by `cp.async`, a half-warp a row: row `2 p + lane / 16`
/// takes the `float4`s `lane % 16, + 16, ...` below `n4`, to `dst(p)` from `src(p, k)` (zeros
/// where it gives `None`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn copy_half_warps<const PAIRS: usize>(
    n4: u32,
    dst: impl Fn(usize) -> Shared<F32x4>,
    src: impl Fn(usize, u32) -> Option<*const F32x4>,
    zero: *const F32x4,
) {
    unroll::<PAIRS>(|p| {
        let to = dst(p);
        let mut k = lane_id() % 16;
        while k < n4 {
            let from = src(p, k);
            cp_async_16_zfill(from.is_some(), to.add(k), from.unwrap_or(zero).cast());
            k += 16;
        }
    });
}

/// Rows of the chunk a warp stages, in pairs.
#[cfg(target_arch = "nvptx64")]
const ROW_PAIRS: usize = (CHUNK / CLUSTER_WARPS / 2) as usize;

/// The staged span of the chunk's rows into `rows` by `cp.async`, not yet committed: of each
/// slot's clamped row the `float4`s `from4..to4` (zeros past the row's `d4` and past `n_slots`).
///
/// # Safety
/// All threads of the block call it; the pointers hold the kernel's extents.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stage_span(
    (cache, idx): (*const F32x4, *const i32),
    b: Block,
    rows: Shared<f32>,
    (from4, to4): (u32, u32),
    (d4, pool): (u32, i32),
) {
    let (warp, half) = (thread_idx_x() / 32, lane_id() / 16);
    let row = |p: usize| warp + CLUSTER_WARPS * (2 * p as u32 + half);
    // Every index of the lane's rows before the first copy; a slot past `n_slots` reads the last
    // slot's index and copies nothing.
    let at = b.token as usize * b.n_slots as usize;
    let found: [i32; ROW_PAIRS] = core::array::from_fn(|p| {
        load_nc_i32(idx.add(at + (b.s0 + row(p)).min(b.n_slots - 1) as usize))
    });
    copy_half_warps::<ROW_PAIRS>(
        to4 - from4,
        |p| rows.add(row(p) * b.stride).cast(),
        |p, k| {
            let live = b.s0 + row(p) < b.n_slots && from4 + k < d4;
            let r = found[p].max(0).min(pool - 1) as usize;
            live.then(|| cache.add(r * d4 as usize + (from4 + k) as usize))
        },
        cache,
    );
}

/// The 64 heads' `float4`s `from4..to4` of their queries (`q_lat`, then `q_pe` from `kv_rank /
/// 4`) into `work`, `qs` floats a head, by `cp.async`, not yet committed (zeros past `d4` and for
/// heads past `nh`).
///
/// # Safety
/// As [`stage_span`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stage_part(
    (q_lat, q_pe): (*const F32x4, *const F32x4),
    b: Block,
    (work, qs): (Shared<f32>, u32),
    (from4, to4, r4): (u32, u32, u32),
) {
    let (warp, half) = (thread_idx_x() / 32, lane_id() / 16);
    let head = |p: usize| warp + CLUSTER_WARPS * (2 * p as u32 + half);
    let kv4 = b.kv_rank / 4;
    copy_half_warps::<{ (TILE_HEADS * CLUSTER_TILES / CLUSTER_WARPS / 2) as usize }>(
        to4 - from4,
        |p| work.add(head(p) * qs).cast(),
        |p, k| {
            let (h, k4) = (b.h0 + head(p), from4 + k);
            let row = b.token as usize * b.nh as usize + h as usize;
            (h < b.nh && k4 < kv4 + r4).then(|| {
                if k4 < kv4 {
                    q_lat.add(row * kv4 as usize + k4 as usize)
                } else {
                    q_pe.add(row * r4 as usize + (k4 - kv4) as usize)
                }
            })
        },
        q_lat,
    );
}

/// `float4`s of the numerators a thread copies from the other blocks.
#[cfg(target_arch = "nvptx64")]
const GATHER: usize = (CLUSTER * RANK_HEADS * CHUNK / 4 / CLUSTER_BLOCK) as usize;

/// The other blocks' numerators (heads `8 r..8 r + 8` from block `r`) into this block's `num`:
/// thread `i` the `float4`s `i + 256 n` of the 64 rows, every load issued before the first store.
///
/// # Safety
/// All threads of the block call it, after the cluster barrier that follows the softmax.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gather_numerators(num: Shared<f32>, rank: u32) {
    const ROW4: u32 = CHUNK / 4;
    let at = |n: usize| {
        let j = thread_idx_x() + CLUSTER_BLOCK * n as u32;
        let h = j / ROW4;
        (
            num.add(h * P_STRIDE + 4 * (j % ROW4)).cast::<F32x4>(),
            h / RANK_HEADS,
        )
    };
    let mut v = [F32x4::default(); GATHER];
    unroll::<GATHER>(|n| {
        let (p, from) = at(n);
        if from != rank {
            v[n] = p.in_rank(from).load();
        }
    });
    unroll::<GATHER>(|n| {
        let (p, from) = at(n);
        if from != rank {
            p.store(v[n]);
        }
    });
}
