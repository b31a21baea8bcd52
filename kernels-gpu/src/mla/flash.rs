//! attn_gathered_flash: the attention of [`super::attn`] with each gathered row read once for a
//! block's 16, 32 or 64 heads and every product on the tensor cores, as two launches: the chunks of a
//! token's slots, then their combination.
//!
//! # Why this shape
//! All heads of a token share its gathered rows, so heads are the inner dimension of a block's
//! work and slots the outer one (flash-decoding): block (token, chunk, head group) stages the
//! chunk's [`CHUNK`] rows and the group's queries in shared memory once and computes every score
//! and output of them, and [`mla_attn_flash_combine`] adds the chunks afterwards. Both matrix
//! products (`Q K^T` over the row, `e V` over the chunk's slots) run as `mma.sync` m16n8k8 with
//! each f32 operand split into a tf32 head and tail (3xTF32, `device::mma_3xtf32`):
//! f32-grade products at the tensor cores' rate.
//!
//! # Bits
//! The chunks (from slot 0, [`CHUNK`] each) and the score's k-step eighths are functions of
//! `n_slots` and `kv_rank + d_rope` alone, and an mma output depends on its own row and column
//! only; nothing depends on `t`, the grid, which block finishes first or which heads share a
//! block. So a token's outputs are the same bits alone or in any batch, and the same as the .cu.
//!
//! # Thread mapping and per-output operations (block of [`WARPS`] warps; lane `l`: `g = l / 4`,
//! `c = l % 4`, the PTX fragment coordinates)
//! 1. **Stage**: warp `w` copies rows `w, w + 16, ...` of the chunk (each slot's clamped index),
//!    then heads `w, w + 16, ...` of the queries (`q_lat` then `q_pe`), by `cp.async`; zeros past
//!    `n_slots`, past each row (to a multiple of 8 floats) and for heads past `nh`. A 64-head
//!    block copies its second pass's queries during the first pass's weighted sum.
//! 2. **Scores**: the `K = ceil(d / 8)` k-steps are cut into [`K_PARTS`] parts of `ceil(K / 8)`;
//!    warp `w` folds part `w % 8` for the slot tiles `4 (w / 8)..` (a 3xTF32 mma chain per tile
//!    in ascending k-steps, from zero), and the score is `scale * (((p0 + p1) + ...) + p7)`.
//! 3. **Softmax within the chunk**: thread `8h + q` takes head `h`'s slots `8q..8q + 8`; `m` =
//!    max over the live slots (8-lane butterfly), `e = expf(s - m)` (0 past `n_slots`), `l` =
//!    the thread's `e` added in slot order from 0, then the 8-lane butterfly sum (4, 2, 1).
//! 4. **Weighted sum**: `o = e V` over the chunk's slots, a 3xTF32 mma chain per output tile in
//!    ascending slot k-steps; warp `w` holds the column tiles `4w..4w + 4` of each pass of 64,
//!    for every head tile.
//!    `o`, `m` and `l` go to the workspace.
//!
//! The combine, per (token, head, column): `M` = max of the chunks' `m`; the chunks cut into
//! [`COMBINE_GROUPS`] groups of `ceil(chunks / 4)`, and over each group's chunks in order, `w =
//! expf(m - M)`, `l = fma(w, l_k, l)`, `a = fma(w, o_k, a)` from zero; then the groups' `l` and
//! `a` added in group order, and `out = a * rcp(l)`. `l >= 1` (the chunk holding the maximum contributes `expf(0) = 1` at least), so
//! nothing divides by a sum and nothing takes a slow path.
//!
//! # Limits
//! Shared memory holds a chunk's rows: `kv_rank + d_rope <=` [`MAX_ROW`] ([`shared_bytes`] says
//! which entries fit). `n_slots` has no limit
//! beyond the grid's (the workspace grows with it). Indices outside `0..pool` are clamped.

use crate::abi::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::{kernel, variants};
#[cfg(target_arch = "nvptx64")]
use core::num::NonZeroU32;

/// Heads of an m16 tile: a block takes [`HEAD_TILES`]`[v]` of them.
pub const TILE_HEADS: u32 = 16;
/// Head tiles per block of each entry: [`mla_attn_gathered_flash`] takes 16 heads a block,
/// [`mla_attn_gathered_flash_h32`] 32, which reads each chunk's rows for twice the heads (half
/// the blocks and half the splitting per product) where the grid stays full, and
/// [`mla_attn_gathered_flash_h64`] 64, in two passes of 32 over the rows staged once (half the
/// rows read again, where the 32-head layout fits).
pub const HEAD_TILES: [u32; 3] = [1, 2, 4];

/// Head tiles whose queries a block stages at once: a block of more than two takes them in
/// passes of two.
pub const fn pass_tiles(tiles: u32) -> u32 {
    if tiles > 2 {
        2
    } else {
        tiles
    }
}

/// Parts of a score's k-steps, each a chain of its own, added in order afterwards.
pub const K_PARTS: u32 = 8;
/// Warps of a block: a part of the scores' k-steps for half of the slot tiles each, and the
/// column tiles of the sum.
pub const WARPS: u32 = 16;
/// Threads of a block.
pub const BLOCK: u32 = WARPS * 32;
/// Slots of a chunk.
pub const CHUNK: u32 = 64;
/// `float4` columns of one (token, head) a combine block takes.
pub const COMBINE_COLUMNS: u32 = 64;
/// Groups of chunks a combine block folds side by side.
pub const COMBINE_GROUPS: u32 = 4;
/// Threads of a combine block: a column of a chunk group each.
pub const COMBINE_BLOCK: u32 = COMBINE_COLUMNS * COMBINE_GROUPS;
/// Chunks whose statistics and sums a combine thread loads at once.
#[cfg(target_arch = "nvptx64")]
const FOLD_BATCH: usize = 8;
/// The longest row (`kv_rank + d_rope`) whose chunk fits the 227 KiB a block may have at 16
/// heads a block (the 32- and 64-head entries take rows up to 576 floats).
pub const MAX_ROW: u32 = 704;
/// Dynamic shared memory one block may have on sm_90.
const SHARED_LIMIT: u32 = super::MAX_DYNAMIC_SHARED as u32;

/// n8 tiles of a chunk's scores, k8 steps of its weighted sum.
#[cfg(target_arch = "nvptx64")]
const TILES: u32 = CHUNK / 8;
/// Rows of a chunk each warp stages.
#[cfg(target_arch = "nvptx64")]
const ROWS_PER_WARP: usize = (CHUNK / WARPS) as usize;
/// Slot tiles of the scores each warp folds (for its part of the k-steps).
#[cfg(target_arch = "nvptx64")]
const S_TILES: u32 = TILES * K_PARTS / WARPS;
/// n8 output tiles a warp holds per pass of the weighted sum.
#[cfg(target_arch = "nvptx64")]
const PASS_TILES: u32 = 4;
/// Floats per head row of a warp's score partials (a multiple of 8 banks apart: the float2
/// stores of a tile's 8 rows fall in different banks two by two).
const S_STRIDE: u32 = CHUNK + 8;
/// Floats per head row of the numerators (4 banks apart, as the staged rows).
const P_STRIDE: u32 = CHUNK + 4;

/// Floats per staged row (cache row or query) of `d` floats: the row, zeros to a multiple of 8,
/// and 4 more, so that the 8 rows one fragment load touches start 4 banks apart.
pub const fn row_stride(d: u32) -> u32 {
    d.div_ceil(8) * 8 + 4
}

/// Chunks of `n_slots` slots.
pub const fn chunks(n_slots: u32) -> u32 {
    n_slots.div_ceil(CHUNK)
}

/// Blocks of a flash launch of `tiles` head tiles a block: token, chunk and head group, head
/// group fastest (the blocks that read one chunk's rows run side by side).
pub const fn grid(t: u32, nh: u32, n_slots: u32, tiles: u32) -> u64 {
    t as u64 * chunks(n_slots) as u64 * nh.div_ceil(TILE_HEADS * tiles) as u64
}

/// Blocks of a combine launch.
pub const fn combine_grid(t: u32, nh: u32, kv_rank: u32) -> u64 {
    t as u64 * nh as u64 * (kv_rank / 4).div_ceil(COMBINE_COLUMNS) as u64
}

/// Shared-memory layout in bytes for rows of `d` floats and `tiles` head tiles: the chunk's
/// rows, then the queries (later the warps' score partials), then the numerators.
const fn layout(d: u32, tiles: u32) -> (u32, u32, u32) {
    let (s, heads) = (row_stride(d), TILE_HEADS * tiles);
    let work = CHUNK * s;
    let queries = heads * s;
    let partials = K_PARTS * heads * S_STRIDE;
    let num = work
        + if queries > partials {
            queries
        } else {
            partials
        };
    (4 * work, 4 * num, 4 * (num + heads * P_STRIDE))
}

/// Dynamic shared memory of a flash launch of `tiles` head tiles a block, or `None` where it
/// exceeds what a block may have.
pub const fn shared_bytes(kv_rank: u32, d_rope: u32, tiles: u32) -> Option<u32> {
    let bytes = layout(kv_rank + d_rope, pass_tiles(tiles)).2;
    if bytes <= SHARED_LIMIT {
        Some(bytes)
    } else {
        None
    }
}

/// Elements of the workspace: the chunks' sums `[t, chunks, nh, kv_rank]` and their maxima and
/// numerator sums `[t, chunks, nh, 2]`.
pub const fn workspace(t: u32, nh: u32, kv_rank: u32, n_slots: u32) -> (u64, u64) {
    let heads = t as u64 * chunks(n_slots) as u64 * nh as u64;
    (heads * kv_rank as u64, heads * 2)
}

/// The A fragment of the 16 x 8 tile at shared address `p` (`stride` floats a row, a multiple
/// of 4): rows `g`, `g + 8`, columns `c`, `c + 4`, split; one `ldmatrix` (lanes `0..16` name
/// rows `0..16` at column 0, lanes `16..32` the same rows at column 4).
///
/// # Safety
/// All 32 lanes call it together; the tile is inside the launch's shared memory, `p`
/// 16-byte aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_a(p: u32, stride: u32) -> Split<4> {
    let lane = lane_id();
    Split::of(ldmatrix_x4(p + 4 * (lane % 16 * stride + lane / 16 * 4)).map(f32::from_bits))
}

/// The B fragments (`k = c, c + 4`; `n = g`) of the two 8 x 8 tiles at `p` and `p + 8` rows,
/// stored n-major (row `n` holds `B[:, n]`: the cache rows of the scores), split; one `ldmatrix`
/// (lanes `8i..8i + 8` name rows `8 (i / 2)..` at column `4 (i % 2)`).
///
/// # Safety
/// As [`load_a`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_b_pair(p: u32, stride: u32) -> [Split<2>; 2] {
    let lane = lane_id();
    let r = ldmatrix_x4(p + 4 * ((lane / 16 * 8 + lane % 8) * stride + lane / 8 % 2 * 4));
    [
        Split::of([f32::from_bits(r[0]), f32::from_bits(r[1])]),
        Split::of([f32::from_bits(r[2]), f32::from_bits(r[3])]),
    ]
}

/// The B fragment (`k = c, c + 4`; `n = g`) of the 8 x 8 tile at `p`, stored k-major (row `k`
/// holds `B[k, :]`: the rows of the weighted sum), split.
///
/// # Safety
/// The tile is inside the launch's shared memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_b(p: u32, stride: u32) -> Split<2> {
    let (g, c) = (lane_id() / 4, lane_id() % 4);
    let q = p + 4 * (c * stride + g);
    Split::of([ld_shared_f32(q), ld_shared_f32(q + 16 * stride)])
}

/// A block's place: its token, its chunk's first slot and its first head, and the geometry of
/// its rows.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Block {
    token: u32,
    s0: u32,
    h0: u32,
    heads: u32,
    nh: u32,
    n_slots: u32,
    kv_rank: u32,
    stride: u32,
}

/// Step 1, the rows: the chunk's rows into `rows` by `cp.async`, not yet committed.
///
/// # Safety
/// All threads of the block call it; the pointers hold the kernel's extents.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stage_rows(
    (cache, idx): (*const F32x4, *const i32),
    b: Block,
    rows: u32,
    (r4, pool): (u32, i32),
) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let d4 = b.kv_rank / 4 + r4;
    let staged = b.stride / 4 - 1;
    // The warp's rows `warp + WARPS * i`: every index loaded before the first copy (one round
    // trip, not one a row); a slot past `n_slots` reads the last slot's index and copies nothing.
    let first = b.token as usize * b.n_slots as usize;
    let slots: [u32; ROWS_PER_WARP] = core::array::from_fn(|i| b.s0 + warp + WARPS * i as u32);
    let found: [i32; ROWS_PER_WARP] = core::array::from_fn(|i| {
        load_nc_i32(idx.add(first + slots[i].min(b.n_slots - 1) as usize))
    });
    unroll::<ROWS_PER_WARP>(|i| {
        let live = slots[i] < b.n_slots;
        let src = cache.add(found[i].max(0).min(pool - 1) as usize * d4 as usize);
        let dst = rows + 4 * (slots[i] - b.s0) * b.stride;
        let mut k = lane;
        while k < staged {
            let copy = live && k < d4;
            let from = if copy { src.add(k as usize) } else { cache };
            cp_async_16_zfill(copy, dst + 16 * k, from.cast());
            k += 32;
        }
    });
}

/// Step 1, the queries: the pass's heads into `work` by `cp.async`, not yet committed (for a
/// block's later passes, during the previous pass's weighted sum).
///
/// # Safety
/// As [`stage_rows`], with nothing left to read in `work`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stage_queries((q_lat, q_pe): (*const F32x4, *const F32x4), b: Block, work: u32, r4: u32) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let kv4 = b.kv_rank / 4;
    let d4 = kv4 + r4;
    let staged = b.stride / 4 - 1;
    let mut h = warp;
    while h < b.heads {
        let live = b.h0 + h < b.nh;
        let head = b.token as usize * b.nh as usize + (b.h0 + h) as usize;
        let dst = work + 4 * h * b.stride;
        let mut k = lane;
        while k < staged {
            let copy = live && k < d4;
            let from = if !copy {
                q_lat
            } else if k < kv4 {
                q_lat.add(head * kv4 as usize + k as usize)
            } else {
                q_pe.add(head * r4 as usize + (k - kv4) as usize)
            };
            cp_async_16_zfill(copy, dst + 16 * k, from.cast());
            k += 32;
        }
        h += WARPS;
    }
}

/// Waits for this thread's copies, then for the block's.
///
/// # Safety
/// All threads of the block call it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn staged() {
    cp_async_wait_group::<0>();
    sync_threads();
}

/// Step 2: this warp's part of the k-steps for its slot tiles, as partials into `work` (once
/// every warp has read the queries there).
///
/// # Safety
/// All threads of the block call it, after [`stage`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn score_partials<const M: usize>(b: Block, rows: u32, work: u32) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let ksteps = b.stride / 8;
    let (part, tile0) = (warp % K_PARTS, warp / K_PARTS * S_TILES);
    let mut acc = [[[0.0f32; 4]; S_TILES as usize]; M];
    let per = ksteps.div_ceil(K_PARTS);
    let (start, end) = (part * per, ksteps.min((part + 1) * per));
    let queries = |ks: u32| -> [Split<4>; M] {
        core::array::from_fn(|m| load_a(work + 4 * (16 * m as u32 * b.stride + 8 * ks), b.stride))
    };
    let keys = |ks: u32| -> [Split<2>; S_TILES as usize] {
        let pairs: [[Split<2>; 2]; S_TILES as usize / 2] = core::array::from_fn(|j| {
            let tile = tile0 + 2 * j as u32;
            load_b_pair(rows + 4 * (8 * tile * b.stride + 8 * ks), b.stride)
        });
        core::array::from_fn(|j| pairs[j / 2][j % 2])
    };
    if start < end {
        // Each k-step's fragments are loaded during the previous one's mma.
        let (mut q, mut k) = (queries(start), keys(start));
        let mut ks = start;
        while ks < end {
            let next = (ks + 1).min(end - 1);
            let (q_next, k_next) = (queries(next), keys(next));
            unroll::<M>(|m| mma_3xtf32(&mut acc[m], q[m], &k));
            (q, k) = (q_next, k_next);
            ks += 1;
        }
    }
    sync_threads();
    let heads = TILE_HEADS * M as u32;
    let mine = work + 4 * (part * heads * S_STRIDE + lane / 4 * S_STRIDE + 2 * (lane % 4));
    unroll::<M>(|m| {
        unroll::<{ S_TILES as usize }>(|j| {
            let at = mine + 4 * (16 * m as u32 * S_STRIDE + 8 * (tile0 + j as u32));
            st_shared_v2(at, acc[m][j][0], acc[m][j][1]);
            st_shared_v2(at + 32 * S_STRIDE, acc[m][j][2], acc[m][j][3]);
        })
    });
    sync_threads();
}

/// Step 3 for head `h` of the block, by its 8 threads (`q` the thread's eighth of the chunk):
/// the chunk's numerators into `num`, and its `m`, `l` to `ml` (`[nh, 2]` of this token and
/// chunk).
///
/// # Safety
/// The 32 lanes of the calling warp call it together (4 heads), after [`score_partials`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn softmax(b: Block, (work, num): (u32, u32), ml: *mut f32, scale: f32, (h, q): (u32, u32)) {
    let w = 4 * b.heads * S_STRIDE;
    let live = b.n_slots - b.s0;
    // The thread's eight partials of each part in two `float4` loads; each score's parts added
    // in part order.
    let at = work + 4 * (h * S_STRIDE + 8 * q);
    let part = |p: u32| -> [f32; 8] {
        let (a, b) = (ld_shared_v4(at + p * w), ld_shared_v4(at + p * w + 16));
        [a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w]
    };
    let mut s = part(0);
    unroll::<{ K_PARTS as usize - 1 }>(|p| {
        let v = part(p as u32 + 1);
        unroll::<8>(|i| s[i] += v[i]);
    });
    let mut m = f32::NEG_INFINITY;
    unroll::<8>(|i| {
        s[i] *= scale;
        if 8 * q + (i as u32) < live {
            m = max(m, s[i]);
        }
    });
    m = group8_max_warp(m);
    let mut e = [0.0f32; 8];
    let mut l = 0.0f32;
    unroll::<8>(|i| {
        e[i] = if 8 * q + (i as u32) < live {
            expf(s[i] - m)
        } else {
            0.0
        };
        l += e[i];
    });
    let l = group8_sum(l);
    let dst = num + 4 * (h * P_STRIDE + 8 * q);
    st_shared_v4(
        dst,
        F32x4 {
            x: e[0],
            y: e[1],
            z: e[2],
            w: e[3],
        },
    );
    st_shared_v4(
        dst + 16,
        F32x4 {
            x: e[4],
            y: e[5],
            z: e[6],
            w: e[7],
        },
    );
    if q == 0 && b.h0 + h < b.nh {
        let out = ml.add(2 * (b.h0 + h) as usize);
        *out = m;
        *out.add(1) = l;
    }
}

/// Step 4: `o = e V` over the chunk, to `o_part` (`[nh, kv_rank]` of this token and chunk).
///
/// # Safety
/// All threads of the block call it, after [`softmax`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn weighted_sum<const M: usize>(b: Block, rows: u32, num: u32, o_part: *mut f32) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let (g, c) = (lane / 4, lane % 4);
    let ntiles = b.kv_rank.div_ceil(8);
    let mut base = warp * PASS_TILES;
    while base < ntiles {
        let mut o = [[[0.0f32; 4]; PASS_TILES as usize]; M];
        // A plain loop: unrolled by a closure, its mma would be too many for LLVM to inline the
        // closure, and `o` would live in local memory. Tiles past the row repeat the last one
        // (and are not stored): a branch per tile would serialise each tile's three dependent
        // mma instead of interleaving the tiles' chains.
        let weights = |ks: u32| -> [Split<4>; M] {
            core::array::from_fn(|m| {
                load_a(num + 4 * (16 * m as u32 * P_STRIDE + 8 * ks), P_STRIDE)
            })
        };
        let values = |ks: u32| -> [Split<2>; PASS_TILES as usize] {
            core::array::from_fn(|j| {
                let tile = (base + j as u32).min(ntiles - 1);
                load_b(rows + 4 * (8 * ks * b.stride + 8 * tile), b.stride)
            })
        };
        // Each k-step's fragments are loaded during the previous one's mma.
        let (mut p, mut v) = (weights(0), values(0));
        let mut ks = 0;
        while ks < TILES {
            let next = (ks + 1).min(TILES - 1);
            let (p_next, v_next) = (weights(next), values(next));
            unroll::<M>(|m| mma_3xtf32(&mut o[m], p[m], &v));
            (p, v) = (p_next, v_next);
            ks += 1;
        }
        unroll::<M>(|m| {
            unroll::<{ PASS_TILES as usize }>(|j| {
                let col = 8 * (base + j as u32) + 2 * c;
                if base + (j as u32) < ntiles && col < b.kv_rank {
                    unroll::<2>(|half| {
                        let h = b.h0 + 16 * m as u32 + g + 8 * half as u32;
                        if h < b.nh {
                            let out = o_part.add(h as usize * b.kv_rank as usize + col as usize);
                            st_global_v2(out, o[m][j][2 * half], o[m][j][2 * half + 1]);
                        }
                    });
                }
            })
        });
        base += WARPS * PASS_TILES;
    }
}

/// attn_gathered_flash for block `blockIdx.x` of a launch of `M` head tiles a block.
///
/// # Safety
/// As the entries' docs.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn attn_flash<const M: usize, const P: usize>(
    q_lat: *const F32x4,
    q_pe: *const F32x4,
    cache: *const F32x4,
    idx: *const i32,
    o_part: *mut f32,
    ml: *mut f32,
    nh: i32,
    kv_rank: i32,
    d_rope: i32,
    t: i32,
    n_slots: i32,
    scale: f32,
    pool: i32,
) {
    max_threads::<BLOCK>();
    // The combine may launch now: it waits for this grid before it reads the workspace.
    launch_dependents();
    let (nh, kv_rank, d_rope, n_slots) = (nh as u32, kv_rank as u32, d_rope as u32, n_slots as u32);
    let heads = TILE_HEADS * M as u32;
    // SAFETY: the launch has `nh >= 1` and `n_slots >= 1`.
    let groups = NonZeroU32::new_unchecked(nh.div_ceil(heads * P as u32));
    let n_chunks = NonZeroU32::new_unchecked(chunks(n_slots));
    let i = block_idx_x();
    let (group, chunk, token) = (i % groups, i / groups % n_chunks, i / groups / n_chunks);
    if token >= t as u32 {
        return;
    }
    let base = dynamic_shared();
    let (work, num, _) = layout(kv_rank + d_rope, M as u32);
    let (rows, work, num) = (base, base + work, base + num);
    let first = (token as usize * n_chunks.get() as usize + chunk as usize) * nh as usize;
    let r4 = d_rope / 4;
    let mut b = Block {
        token,
        s0: chunk * CHUNK,
        h0: group * P as u32 * heads,
        heads,
        nh,
        n_slots,
        kv_rank,
        stride: row_stride(kv_rank + d_rope),
    };
    // The queries first: their copies need no index, so they overlap the indices' round trip.
    stage_queries((q_lat, q_pe), b, work, r4);
    stage_rows((cache, idx), b, rows, (r4, pool));
    cp_async_commit();
    staged();
    // The block's heads in passes of `heads`, over the chunk's rows staged once; a later pass's
    // queries are copied during this pass's weighted sum, once the scores no longer need `work`.
    let mut pass = 1;
    loop {
        score_partials::<M>(b, rows, work);
        if thread_idx_x() < 8 * heads {
            softmax(
                b,
                (work, num),
                ml.add(2 * first),
                scale,
                (thread_idx_x() / 8, thread_idx_x() % 8),
            );
        }
        sync_threads();
        let next = Block {
            h0: b.h0 + heads,
            ..b
        };
        let more = pass < P as u32 && next.h0 < nh;
        if more {
            stage_queries((q_lat, q_pe), next, work, r4);
            cp_async_commit();
        }
        weighted_sum::<M>(b, rows, num, o_part.add(first * kv_rank as usize));
        if !more {
            return;
        }
        // The next pass's queries have landed, and its numerators may overwrite `num`.
        staged();
        b = next;
        pass += 1;
    }
}

variants! {
    /// Attention of every token's heads over its gathered cache rows, chunk by chunk: `q_lat`
    /// is `[t, nh, kv_rank]`, `q_pe` `[t, nh, d_rope]` (not read when `d_rope` is 0), `cache`
    /// `[pool, kv_rank + d_rope]`, `idx` `[t, n_slots]` rows of `cache`; each chunk's
    /// unnormalised sum goes to `o_part` `[t, chunks, nh, kv_rank]`, its maximum score and sum
    /// of numerators to `ml` `[t, chunks, nh, 2]` ([`chunks`]`(n_slots)` chunks). The entries
    /// give the same bits; they differ in the heads a block takes.
    ///
    /// # Launch
    /// grid [`grid`]`(t, nh, n_slots, tiles)`, block [`BLOCK`], dynamic shared memory
    /// [`shared_bytes`]`(kv_rank, d_rope, tiles)` (which must be `Some`), `tiles` the entry's
    /// [`HEAD_TILES`]; `kv_rank`, `d_rope` multiples of 4 with `kv_rank >= 4`, `n_slots >= 1`,
    /// `pool >= 1`.
    ///
    /// # Safety
    /// The buffers hold the extents above. Indices need not be in `0..pool`: they are clamped.
    attn_flash(
        q_lat: *const F32x4,
        q_pe: *const F32x4,
        cache: *const F32x4,
        idx: *const i32,
        o_part: *mut f32,
        ml: *mut f32,
        nh: i32,
        kv_rank: i32,
        d_rope: i32,
        t: i32,
        n_slots: i32,
        scale: f32,
        pool: i32,
    ) {
        mla_attn_gathered_flash = [1, 1];
        mla_attn_gathered_flash_h32 = [2, 1];
        mla_attn_gathered_flash_h64 = [2, 2];
    }
}

#[cfg(target_arch = "nvptx64")]
crate::device::static_shared! {
    /// The combine's partial sums: per chunk group and column, a `float4` and its `l`.
    fn combine_partials = FLASH_COMBINE_PARTIALS[(COMBINE_BLOCK * 20) as usize]
}

/// The chunks of [`mla_attn_gathered_flash`] combined: `out` `[t, nh, kv_rank]` from its
/// `o_part` and `ml`, as the module's docs say: thread `(group, column)` of a block folds the
/// chunks of its group for one `float4` column of one (token, head).
///
/// # Launch
/// grid [`combine_grid`]`(t, nh, kv_rank)`, block [`COMBINE_BLOCK`], no dynamic shared memory;
/// the same `nh`, `kv_rank`, `t` and `n_slots` as the flash launch that wrote the workspace.
///
/// # Safety
/// The buffers hold the extents above, and the flash launch has finished.
#[kernel]
pub unsafe fn mla_attn_flash_combine(
    o_part: *const F32x4,
    ml: *const f32,
    out: *mut F32x4,
    nh: i32,
    kv_rank: i32,
    t: i32,
    n_slots: i32,
) {
    // Launched as a programmatic dependent of the flash kernel: nothing of its workspace is read
    // before that kernel has finished.
    grid_dependency_wait();
    let kv4 = kv_rank as u32 / 4;
    // SAFETY: the launch has `kv_rank >= 4` and `nh >= 1`.
    let parts = NonZeroU32::new_unchecked(kv4.div_ceil(COMBINE_COLUMNS));
    let heads = NonZeroU32::new_unchecked(nh as u32);
    let th = block_idx_x() / parts;
    let (group, column) = (
        thread_idx_x() / COMBINE_COLUMNS,
        thread_idx_x() % COMBINE_COLUMNS,
    );
    let c = block_idx_x() % parts * COMBINE_COLUMNS + column;
    if th >= t as u32 * heads.get() {
        return;
    }
    let (token, h) = (th / heads, th % heads);
    let (nh, n_chunks) = (heads.get() as usize, chunks(n_slots as u32) as usize);
    let stats = ml.add(2 * (token as usize * n_chunks * nh + h as usize));
    // M: each warp's lanes take the chunks `lane + 32 i`, then the warp's maximum (no barrier:
    // every warp finds the same M).
    let mut m = f32::NEG_INFINITY;
    let mut k = lane_id() as usize;
    while k < n_chunks {
        m = max(m, ld_nc_f32(stats.add(2 * k * nh)));
        k += 32;
    }
    let m = warp_max(m);
    // This group's chunks in order, in batches whose loads are issued before any is used (a
    // batch past the group's end loads nothing and adds nothing).
    let per = n_chunks.div_ceil(COMBINE_GROUPS as usize);
    let (first, end) = (
        group as usize * per,
        n_chunks.min((group as usize + 1) * per),
    );
    let live_column = c < kv4;
    let part =
        o_part.add((token as usize * n_chunks * nh + h as usize) * kv4 as usize + c as usize);
    let (mut l, mut a) = (0.0f32, F32x4::default());
    let mut k = first;
    while k < end {
        let live: [bool; FOLD_BATCH] = core::array::from_fn(|u| k + u < end);
        let ms: [f32; FOLD_BATCH] =
            core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.add(2 * (k + u) * nh)));
        let ls: [f32; FOLD_BATCH] =
            core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.add(2 * (k + u) * nh + 1)));
        let os: [F32x4; FOLD_BATCH] = core::array::from_fn(|u| {
            load_nc_if(
                live[u] && live_column,
                part.add((k + u) * nh * kv4 as usize),
            )
        });
        unroll::<FOLD_BATCH>(|u| {
            if live[u] {
                let w = expf(ms[u] - m);
                l = fma(w, ls[u], l);
                a = F32x4 {
                    x: fma(w, os[u].x, a.x),
                    y: fma(w, os[u].y, a.y),
                    z: fma(w, os[u].z, a.z),
                    w: fma(w, os[u].w, a.w),
                };
            }
        });
        k += FOLD_BATCH;
    }
    let partials = combine_partials();
    st_shared_v4(partials + 16 * thread_idx_x(), a);
    st_shared_f32(partials + 16 * COMBINE_BLOCK + 4 * thread_idx_x(), l);
    sync_threads();
    if group == 0 && live_column {
        unroll::<{ COMBINE_GROUPS as usize - 1 }>(|g| {
            let at = thread_idx_x() + (g as u32 + 1) * COMBINE_COLUMNS;
            let p = ld_shared_v4(partials + 16 * at);
            a = F32x4 {
                x: a.x + p.x,
                y: a.y + p.y,
                z: a.z + p.z,
                w: a.w + p.w,
            };
            l += ld_shared_f32(partials + 16 * COMBINE_BLOCK + 4 * at);
        });
        let inv = rcp(l);
        *out.add(th as usize * kv4 as usize + c as usize) = F32x4 {
            x: a.x * inv,
            y: a.y * inv,
            z: a.z * inv,
            w: a.w * inv,
        };
    }
}
