//! attn_gathered_flash: the attention of [`super::attn`] with each gathered row read once for a
//! block's 16, 32 or 64 heads and every product on the tensor cores, as two launches: the chunks
//! of a token's slots, then their combination.
//!
//! All heads of a token share its gathered rows, so heads are the inner dimension of a block's
//! work and slots the outer one (flash-decoding): block (token, chunk, head group) stages the
//! chunk's [`CHUNK`] rows and the group's queries in shared memory once and computes every score
//! and output of them, and [`mla_attn_flash_combine`] adds the chunks afterwards. Both products
//! (`Q K^T`, `e V`) run as `mma.sync` m16n8k8 in 3xTF32 (`device::mma_3xtf32`): f32-grade at the
//! tensor cores' rate. The chunks (from slot 0, [`CHUNK`] each) and the score's k-step eighths
//! are functions of `n_slots` and `kv_rank + d_rope` alone, and an mma output depends on its own
//! row and column only, so a token's outputs are the same bits alone or in any batch, in any
//! entry, and in the .cu.
//!
//! # Thread mapping and per-output operations (block of [`WARPS`] warps; lane `l`: `g = l / 4`,
//! `c = l % 4`, the PTX fragment coordinates)
//! 1. **Stage**: warp `w` copies rows `w, w + 16, ...` of the chunk (each slot's clamped index),
//!    then heads `w, w + 16, ...` of the queries (`q_lat` then `q_pe`), by `cp.async` (the rows
//!    through L1); zeros past `n_slots`, past each row (to a multiple of 8 floats) and for heads
//!    past `nh`. A 64-head block copies its second pass's queries during the first pass's
//!    weighted sum.
//! 2. **Scores**: the `K = ceil(d / 8)` k-steps are cut into [`K_PARTS`] parts of `ceil(K / 8)`;
//!    warp `w` folds part `w % 8` for the slot tiles `4 (w / 8)..` (a 3xTF32 mma chain per tile
//!    in ascending k-steps, from zero), and the score is `scale * (((p0 + p1) + ...) + p7)`.
//! 3. **Softmax within the chunk**: thread `16h + q` takes head `h`'s slots `4q..4q + 4`; `m` =
//!    max over the live slots (16-lane butterfly), `e = expf(s - m)` (0 past `n_slots`), `l` =
//!    the thread's `e` added in slot order from 0, then the 16-lane butterfly sum (8, 4, 2, 1).
//! 4. **Weighted sum**: `o = e V` over the chunk's slots, a 3xTF32 mma chain per output tile in
//!    ascending slot k-steps, each k-step's slots in the mma's k order 0, 2, 4, 6, 1, 3, 5, 7
//!    (the numerators stored so, the value rows read so: no shared-memory bank taken twice);
//!    warp `w` holds the column tiles `4w..4w + 4` of each pass of 64, for every head tile.
//!    `o`, `m` and `l` go to the workspace.
//!
//! The combine, per (token, head, column), over pairs of chunks (`2 p` and `2 p + 1`; the last
//! pair of an odd count has one): each pair folded first (`combine::pair_weights`: `m_p` = the pair's
//! maximum, `w_i = expf(m_i - m_p)`, `l_p = l_0 w_0` then `fma(w_1, l_1, l_p)`, `o_p` alike);
//! `M` = max of the chunks' `m`; the pairs cut into [`COMBINE_GROUPS`] groups of `ceil(pairs /
//! 4)`, and over each group's pairs in order, `w = expf(m_p - M)`, `l = fma(w, l_p, l)`, `a =
//! fma(w, o_p, a)` from zero; then the groups' `l` and `a` added in group order, and `out = a *
//! rcp(l)`. `l >= 1` (the chunk holding the maximum contributes `expf(0) = 1` at least), so
//! nothing divides by a sum and nothing takes a slow path. The Hopper entries fold each pair in
//! the block that computed it and store pairs, half the sums ([`Partials`] says which a
//! workspace holds); the combine's entry for pairs starts from them, with the same bits.
//!
//! A chunk's rows must fit shared memory ([`MAX_ROW`]; [`shared_bytes`] says which entries fit);
//! `n_slots` has no limit beyond the grid's. Indices outside `0..pool` are clamped into it.

mod combine;
#[cfg(target_arch = "nvptx64")]
mod fragments;
#[cfg(target_arch = "nvptx64")]
mod score;
#[cfg(target_arch = "nvptx64")]
mod softmax;
#[cfg(target_arch = "nvptx64")]
mod stage;
#[cfg(target_arch = "nvptx64")]
mod weighted_sum;
pub mod wgmma;

use crate::abi::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::variants;
#[cfg(target_arch = "nvptx64")]
use core::num::NonZeroU32;
#[cfg(target_arch = "nvptx64")]
use fragments::*;
#[cfg(target_arch = "nvptx64")]
use score::*;
#[cfg(target_arch = "nvptx64")]
use softmax::*;
#[cfg(target_arch = "nvptx64")]
use stage::*;
#[cfg(target_arch = "nvptx64")]
use weighted_sum::*;

#[cfg(not(target_arch = "nvptx64"))]
pub use combine::Combine;
pub use combine::{mla_attn_flash_combine, mla_attn_flash_combine_pairs};

/// What a workspace holds a sum of, and so which combine reads it: attn_flash's chunks, or the
/// Hopper entries' pairs of chunks already folded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partials {
    Chunks,
    Pairs,
}

/// Heads of an m16 tile: a block takes [`FlashHeads::tiles`] of them.
pub const TILE_HEADS: u32 = 16;

/// The key of the flash kernel's entries: the heads a block takes. The entries give the same
/// bits. [`mla_attn_gathered_flash`] takes 16 heads a block; [`mla_attn_gathered_flash_h32`]
/// 32, which reads each chunk's rows for twice the heads (half the blocks and half the splitting
/// per product) where the grid stays full; [`mla_attn_gathered_flash_h64`] 64, in two passes of
/// 32 over the rows staged once (half the rows read again, where the 32-head layout fits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlashHeads {
    H16,
    H32,
    H64,
}

impl FlashHeads {
    pub const ALL: [FlashHeads; 3] = [FlashHeads::H16, FlashHeads::H32, FlashHeads::H64];

    /// Head tiles of a block.
    pub const fn tiles(self) -> u32 {
        match self {
            FlashHeads::H16 => 1,
            FlashHeads::H32 => 2,
            FlashHeads::H64 => 4,
        }
    }
}

/// Head tiles whose queries a block stages at once: a block of more than two takes them in
/// passes of two.
pub const fn pass_tiles(tiles: u32) -> u32 {
    if tiles > 2 {
        2
    } else {
        tiles
    }
}

/// The const parameters of the entry of `tiles` head tiles a block: the tiles staged at once,
/// and the passes over them.
#[cfg(target_arch = "nvptx64")]
const fn entry(heads: FlashHeads) -> [usize; 2] {
    let tiles = heads.tiles();
    [
        pass_tiles(tiles) as usize,
        (tiles / pass_tiles(tiles)) as usize,
    ]
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

/// Pairs of chunks of `n_slots` slots: what the combine folds.
pub const fn pairs(n_slots: u32) -> u32 {
    chunks(n_slots).div_ceil(2)
}

/// Blocks of a flash launch of `tiles` head tiles a block: token, chunk and head group, head
/// group fastest (the blocks that read one chunk's rows run side by side). `None` past 64 bits,
/// which sizes each within `u32` can pass (tokens times chunks cannot).
pub const fn grid(t: u32, nh: u32, n_slots: u32, tiles: u32) -> Option<u64> {
    (t as u64 * chunks(n_slots) as u64).checked_mul(nh.div_ceil(TILE_HEADS * tiles) as u64)
}

/// Blocks of a combine launch, `None` past 64 bits.
pub const fn combine_grid(t: u32, nh: u32, kv_rank: u32) -> Option<u64> {
    (t as u64 * nh as u64).checked_mul((kv_rank / 4).div_ceil(COMBINE_COLUMNS) as u64)
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
/// exceeds what a block may have. Rows past [`MAX_ROW`] are `None` before the layout is formed:
/// it counts in 32 bits, as the kernels' offsets do, and would wrap for rows far past it.
pub const fn shared_bytes(kv_rank: u32, d_rope: u32, tiles: u32) -> Option<u32> {
    let row = match kv_rank.checked_add(d_rope) {
        Some(row) if row <= MAX_ROW => row,
        _ => return None,
    };
    let bytes = layout(row, pass_tiles(tiles)).2;
    if bytes <= SHARED_LIMIT {
        Some(bytes)
    } else {
        None
    }
}

/// Elements of the workspace: the chunks' sums `[t, chunks, nh, kv_rank]` and their maxima and
/// numerator sums `[t, chunks, nh, 2]`; `None` past 64 bits.
pub const fn workspace(t: u32, nh: u32, kv_rank: u32, n_slots: u32) -> Option<(u64, u64)> {
    let Some(heads) = (t as u64 * chunks(n_slots) as u64).checked_mul(nh as u64) else {
        return None;
    };
    match (heads.checked_mul(kv_rank as u64), heads.checked_mul(2)) {
        (Some(o), Some(ml)) => Some((o, ml)),
        _ => None,
    }
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

/// attn_gathered_flash for block `blockIdx.x` of a launch of `M_TILES` head tiles (m16 tiles of
/// heads) a pass and `PASSES` passes a block.
///
/// # Safety
/// As the entries' docs.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn attn_flash<const M_TILES: usize, const PASSES: usize>(
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
    // The combine launches as this grid's blocks exit (`TRIGGER_AT_EXIT`), not at their entry:
    // launched early, it would crowd onto the SMs this grid leaves idle.
    crate::chain_wait();
    let (nh, kv_rank, d_rope, n_slots) = (nh as u32, kv_rank as u32, d_rope as u32, n_slots as u32);
    let heads = TILE_HEADS * M_TILES as u32;
    // SAFETY: the launch has `nh >= 1` and `n_slots >= 1`.
    let groups = NonZeroU32::new_unchecked(nh.div_ceil(heads * PASSES as u32));
    let n_chunks = NonZeroU32::new_unchecked(chunks(n_slots));
    let i = block_idx_x();
    let (group, chunk, token) = (i % groups, i / groups % n_chunks, i / groups / n_chunks);
    if token >= t as u32 {
        return;
    }
    let base = dynamic_shared();
    let (work, num, _) = layout(kv_rank + d_rope, M_TILES as u32);
    let (rows, work, num) = (base.cast(), base.byte_add(work), base.byte_add(num));
    let first = (token as usize * n_chunks.get() as usize + chunk as usize) * nh as usize;
    let r4 = d_rope / 4;
    let mut b = Block {
        token,
        s0: chunk * CHUNK,
        h0: group * PASSES as u32 * heads,
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
        score_partials::<M_TILES>(b, rows, work);
        if thread_idx_x() < 16 * heads {
            softmax(
                b,
                (work, num),
                ml.add(2 * first),
                scale,
                (thread_idx_x() / 16, thread_idx_x() % 16),
            );
        }
        sync_threads();
        let next = Block {
            h0: b.h0 + heads,
            ..b
        };
        let more = pass < PASSES as u32 && next.h0 < nh;
        if more {
            stage_queries((q_lat, q_pe), next, work, r4);
            cp_async_commit();
        }
        weighted_sum::<M_TILES>(b, rows, num, o_part.add(first * kv_rank as usize));
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
    /// [`FlashHeads::tiles`]; `kv_rank`, `d_rope` multiples of 4 with `kv_rank >= 4`, `n_slots >= 1`,
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
    ) for AttnFlash: FlashHeads {
        mla_attn_gathered_flash = FlashHeads::H16 => [
            { entry(FlashHeads::H16)[0] }, { entry(FlashHeads::H16)[1] }
        ];
        mla_attn_gathered_flash_h32 = FlashHeads::H32 => [
            { entry(FlashHeads::H32)[0] }, { entry(FlashHeads::H32)[1] }
        ];
        mla_attn_gathered_flash_h64 = FlashHeads::H64 => [
            { entry(FlashHeads::H64)[0] }, { entry(FlashHeads::H64)[1] }
        ];
    }
}
