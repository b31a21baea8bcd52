//! attn_gathered_flash: the attention of [`super::attn`] with each gathered row read once for a
//! block's [`HEADS`] heads and every product on the tensor cores, as two launches: the chunks of
//! a token's slots, then their combination.
//!
//! # Why this shape
//! All heads of a token share its gathered rows, so heads are the inner dimension of a block's
//! work and slots the outer one (flash-decoding): block (token, chunk, head group) stages the
//! chunk's [`CHUNK`] rows and the group's queries in shared memory once and computes every score
//! and output of them, and [`mla_attn_flash_combine`] adds the chunks afterwards. Both matrix
//! products (`Q K^T` over the row, `e V` over the chunk's slots) run as `mma.sync` m16n8k8 with
//! each f32 operand split into a tf32 head and tail (3xTF32, [`crate::device::mma_3xtf32`]):
//! f32-grade products at the tensor cores' rate.
//!
//! # Bits
//! The chunks (from slot 0, [`CHUNK`] each) and the score's k-step quarters are functions of
//! `n_slots` and `kv_rank + d_rope` alone, and an mma output depends on its own row and column
//! only; nothing depends on `t`, the grid, which block finishes first or which heads share a
//! block. So a token's outputs are the same bits alone or in any batch, and the same as the .cu.
//!
//! # Thread mapping and per-output operations (block of [`WARPS`] warps; lane `l`: `g = l / 4`,
//! `c = l % 4`, the PTX fragment coordinates)
//! 1. **Stage**: warp `w` copies rows `w, w + 4, ...` of the chunk (each slot's clamped index),
//!    then heads `w, w + 4, ...` of the queries (`q_lat` then `q_pe`), by `cp.async`; zeros past
//!    `n_slots`, past each row (to a multiple of 8 floats) and for heads past `nh`.
//! 2. **Scores**: the `K = ceil(d / 8)` k-steps are cut into quarters of `ceil(K / 4)`; warp `w`
//!    folds quarter `w` for all [`CHUNK`]` / 8` slot tiles (a 3xTF32 mma chain per tile in
//!    ascending k-steps, from zero), and the score is `scale * (((q0 + q1) + q2) + q3)`.
//! 3. **Softmax within the chunk**: thread `8h + q` takes head `h`'s slots `8q..8q + 8`; `m` =
//!    max over the live slots (8-lane butterfly), `e = expf(s - m)` (0 past `n_slots`), `l` =
//!    the thread's `e` added in slot order from 0, then the 8-lane butterfly sum (4, 2, 1).
//! 4. **Weighted sum**: `o = e V` over the chunk's slots, a 3xTF32 mma chain per output tile in
//!    ascending slot k-steps; warp `w` holds the column tiles `16w..16w + 16` of each pass of 64.
//!    `o`, `m` and `l` go to the workspace.
//!
//! The combine, per (token, head, column): `M` = max of the chunks' `m`; over the chunks in
//! order, `w = expf(m - M)`, `l = fma(w, l_k, l)`, `a = fma(w, o_k, a)` from zero; then `out =
//! a * rcp(l)`. `l >= 1` (the chunk holding the maximum contributes `expf(0) = 1` at least), so
//! nothing divides by a sum and nothing takes a slow path.
//!
//! # Limits
//! Shared memory holds a chunk's rows: `kv_rank + d_rope <=` [`MAX_ROW`]. `n_slots` has no limit
//! beyond the grid's (the workspace grows with it). Indices outside `0..pool` are clamped.

#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::abi::F32x4;
use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use core::num::NonZeroU32;

/// Heads of a block: the rows of one m16 tile.
pub const HEADS: u32 = 16;
/// Warps of a block: the quarters of the scores' k-steps.
pub const WARPS: u32 = 4;
/// Threads of a block.
pub const BLOCK: u32 = WARPS * 32;
/// Slots of a chunk.
pub const CHUNK: u32 = 64;
/// Threads of a combine block, one `float4` of one (token, head) each.
pub const COMBINE_BLOCK: u32 = 128;
/// The longest row (`kv_rank + d_rope`) whose chunk fits the 227 KiB a block may have.
pub const MAX_ROW: u32 = 704;

/// n8 tiles of a chunk's scores, k8 steps of its weighted sum.
#[cfg(target_arch = "nvptx64")]
const TILES: u32 = CHUNK / 8;
/// n8 output tiles a warp holds per pass of the weighted sum.
#[cfg(target_arch = "nvptx64")]
const PASS_TILES: u32 = 16;
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

/// Blocks of a flash launch: token, chunk and head group, head group fastest (the blocks that
/// read one chunk's rows run side by side).
pub const fn grid(t: u32, nh: u32, n_slots: u32) -> u64 {
    t as u64 * chunks(n_slots) as u64 * nh.div_ceil(HEADS) as u64
}

/// Blocks of a combine launch.
pub const fn combine_grid(t: u32, nh: u32, kv_rank: u32) -> u64 {
    t as u64 * nh as u64 * (kv_rank / 4).div_ceil(COMBINE_BLOCK) as u64
}

/// Shared-memory layout in bytes: the chunk's rows, then the queries (later the warps' score
/// partials), then the numerators.
const fn layout(d: u32) -> (u32, u32, u32) {
    let s = row_stride(d);
    let work = CHUNK * s;
    let queries = HEADS * s;
    let partials = WARPS * HEADS * S_STRIDE;
    let num = work + if queries > partials { queries } else { partials };
    (4 * work, 4 * num, 4 * (num + HEADS * P_STRIDE))
}

/// Dynamic shared memory of a flash launch.
pub const fn shared_bytes(kv_rank: u32, d_rope: u32) -> u64 {
    layout(kv_rank + d_rope).2 as u64
}

/// Elements of the workspace: the chunks' sums `[t, chunks, nh, kv_rank]` and their maxima and
/// numerator sums `[t, chunks, nh, 2]`.
pub const fn workspace(t: u32, nh: u32, kv_rank: u32, n_slots: u32) -> (u64, u64) {
    let heads = t as u64 * chunks(n_slots) as u64 * nh as u64;
    (heads * kv_rank as u64, heads * 2)
}

/// The A fragment of the 16 x 8 tile at shared address `p` (`stride` floats a row): rows `g`,
/// `g + 8`, columns `c`, `c + 4`, split.
///
/// # Safety
/// The tile is inside the launch's shared memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_a(p: u32, stride: u32) -> Split<4> {
    let lane = lane_id();
    let q = p + 4 * (lane / 4 * stride + lane % 4);
    Split::of([
        ld_shared_f32(q),
        ld_shared_f32(q + 32 * stride),
        ld_shared_f32(q + 16),
        ld_shared_f32(q + 32 * stride + 16),
    ])
}

/// The B fragment (`k = c, c + 4`; `n = g`) of the 8 x 8 tile at `p`, stored n-major (row `n`
/// holds `B[:, n]`: the cache rows of the scores) or k-major (row `k` holds `B[k, :]`: the rows
/// of the weighted sum), split.
///
/// # Safety
/// As [`load_a`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_b<const N_MAJOR: bool>(p: u32, stride: u32) -> Split<2> {
    let (g, c) = (lane_id() / 4, lane_id() % 4);
    if N_MAJOR {
        let q = p + 4 * (g * stride + c);
        Split::of([ld_shared_f32(q), ld_shared_f32(q + 16)])
    } else {
        let q = p + 4 * (c * stride + g);
        Split::of([ld_shared_f32(q), ld_shared_f32(q + 16 * stride)])
    }
}

/// Step 1: the chunk's rows into `rows` and the group's queries into `work`, waited for.
///
/// # Safety
/// All threads of the block call it; the pointers hold the kernel's extents for `token`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn stage(
    (q_lat, q_pe, cache, idx): (*const F32x4, *const F32x4, *const F32x4, *const i32),
    (rows, work, stride): (u32, u32, u32),
    (kv4, r4, staged): (u32, u32, u32),
    (token, nh, h0): (u32, u32, u32),
    (n_slots, s0, pool): (u32, u32, i32),
) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let d4 = kv4 + r4;
    let mut r = warp;
    while r < CHUNK {
        let live = s0 + r < n_slots;
        let src = if live {
            let at = token as usize * n_slots as usize + (s0 + r) as usize;
            let row = load_nc_i32(idx.add(at)).max(0).min(pool - 1) as usize;
            cache.add(row * d4 as usize)
        } else {
            cache
        };
        let dst = rows + 4 * r * stride;
        let mut k = lane;
        while k < staged {
            let copy = live && k < d4;
            let from = if copy { src.add(k as usize) } else { cache };
            cp_async_16_zfill(copy, dst + 16 * k, from.cast());
            k += 32;
        }
        r += WARPS;
    }
    let mut h = warp;
    while h < HEADS {
        let live = h0 + h < nh;
        let head = token as usize * nh as usize + (h0 + h) as usize;
        let dst = work + 4 * h * stride;
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
    cp_async_commit();
    cp_async_wait_group::<0>();
    sync_threads();
}

/// Step 2: this warp's quarter of every slot tile's scores, as partials into `work` (once every
/// warp has read the queries there).
///
/// # Safety
/// All threads of the block call it, after [`stage`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn score_partials(rows: u32, work: u32, stride: u32, ksteps: u32) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let mut acc = [[0.0f32; 4]; TILES as usize];
    let per = ksteps.div_ceil(WARPS);
    let end = ksteps.min((warp + 1) * per);
    let mut ks = warp * per;
    while ks < end {
        let q = load_a(work + 32 * ks, stride);
        unroll::<{ TILES as usize }>(|j| {
            let k = load_b::<true>(rows + 4 * (8 * j as u32 * stride + 8 * ks), stride);
            mma_3xtf32(&mut acc[j], q, k);
        });
        ks += 1;
    }
    sync_threads();
    let part = work + 4 * (warp * HEADS * S_STRIDE + lane / 4 * S_STRIDE + 2 * (lane % 4));
    unroll::<{ TILES as usize }>(|j| {
        let at = part + 32 * j as u32;
        st_shared_v2(at, acc[j][0], acc[j][1]);
        st_shared_v2(at + 32 * S_STRIDE, acc[j][2], acc[j][3]);
    });
    sync_threads();
}

/// Step 3: the chunk's numerators into `num`, and its `m`, `l` per head to `ml` (`[nh, 2]` of
/// this token and chunk).
///
/// # Safety
/// All threads of the block call it, after [`score_partials`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn softmax(work: u32, num: u32, ml: *mut f32, scale: f32, live: u32, (h0, nh): (u32, u32)) {
    let (h, q) = (thread_idx_x() / 8, thread_idx_x() % 8);
    let w = 4 * HEADS * S_STRIDE;
    let mut s = [0.0f32; 8];
    let mut m = f32::NEG_INFINITY;
    unroll::<8>(|i| {
        let at = work + 4 * (h * S_STRIDE + 8 * q + i as u32);
        let sum = ((ld_shared_f32(at) + ld_shared_f32(at + w)) + ld_shared_f32(at + 2 * w))
            + ld_shared_f32(at + 3 * w);
        s[i] = scale * sum;
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
    st_shared_v4(dst, F32x4 { x: e[0], y: e[1], z: e[2], w: e[3] });
    st_shared_v4(dst + 16, F32x4 { x: e[4], y: e[5], z: e[6], w: e[7] });
    if q == 0 && h0 + h < nh {
        let out = ml.add(2 * (h0 + h) as usize);
        *out = m;
        *out.add(1) = l;
    }
    sync_threads();
}

/// Step 4: `o = e V` over the chunk, to `o_part` (`[nh, kv_rank]` of this token and chunk).
///
/// # Safety
/// All threads of the block call it, after [`softmax`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn weighted_sum(rows: u32, num: u32, stride: u32, o_part: *mut f32, kv_rank: u32, (h0, nh): (u32, u32)) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let (g, c) = (lane / 4, lane % 4);
    let ntiles = kv_rank.div_ceil(8);
    let mut base = warp * PASS_TILES;
    while base < ntiles {
        let mut o = [[0.0f32; 4]; PASS_TILES as usize];
        // A plain loop: unrolled by a closure, its 48 mma a trip would be too large for LLVM to
        // inline the closure, and `o` would live in local memory. Tiles past the row repeat the
        // last one (and are not stored): a branch per tile would serialise each tile's three
        // dependent mma instead of interleaving the 16 tiles' chains.
        let mut ks = 0;
        while ks < TILES {
            let p = load_a(num + 32 * ks, P_STRIDE);
            unroll::<{ PASS_TILES as usize }>(|j| {
                let tile = (base + j as u32).min(ntiles - 1);
                let at = rows + 4 * (8 * ks * stride + 8 * tile);
                mma_3xtf32(&mut o[j], p, load_b::<false>(at, stride));
            });
            ks += 1;
        }
        unroll::<{ PASS_TILES as usize }>(|j| {
            let col = 8 * (base + j as u32) + 2 * c;
            if base + (j as u32) < ntiles && col < kv_rank {
                unroll::<2>(|half| {
                    let h = h0 + g + 8 * half as u32;
                    if h < nh {
                        let out = o_part.add(h as usize * kv_rank as usize + col as usize);
                        st_global_v2(out, o[j][2 * half], o[j][2 * half + 1]);
                    }
                });
            }
        });
        base += WARPS * PASS_TILES;
    }
}

/// Attention of every token's heads over its gathered cache rows, chunk by chunk: `q_lat` is `[t,
/// nh, kv_rank]`, `q_pe` `[t, nh, d_rope]` (not read when `d_rope` is 0), `cache` `[pool,
/// kv_rank + d_rope]`, `idx` `[t, n_slots]` rows of `cache`; each chunk's unnormalised sum goes to
/// `o_part` `[t, chunks, nh, kv_rank]`, its maximum score and sum of numerators to `ml` `[t,
/// chunks, nh, 2]` ([`chunks`]`(n_slots)` chunks).
///
/// # Launch
/// grid [`grid`]`(t, nh, n_slots)`, block [`BLOCK`], dynamic shared memory
/// [`shared_bytes`]`(kv_rank, d_rope)`; `kv_rank`, `d_rope` multiples of 4 with `kv_rank >= 4`
/// and `kv_rank + d_rope <=` [`MAX_ROW`], `n_slots >= 1`, `pool >= 1`.
///
/// # Safety
/// The buffers hold the extents above. Indices need not be in `0..pool`: they are clamped.
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn mla_attn_gathered_flash(
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
    let (nh, kv_rank, d_rope, n_slots) = (nh as u32, kv_rank as u32, d_rope as u32, n_slots as u32);
    let d = kv_rank + d_rope;
    let stride = row_stride(d);
    let ksteps = d.div_ceil(8);
    // SAFETY: the launch has `nh >= 1` and `n_slots >= 1`.
    let groups = NonZeroU32::new_unchecked(nh.div_ceil(HEADS));
    let n_chunks = NonZeroU32::new_unchecked(chunks(n_slots));
    let b = block_idx_x();
    let (group, chunk, token) = (b % groups, b / groups % n_chunks, b / groups / n_chunks);
    if token >= t as u32 {
        return;
    }
    let (h0, s0) = (group * HEADS, chunk * CHUNK);
    let base = dynamic_shared();
    let (work, num, _) = layout(d);
    let (rows, work, num) = (base, base + work, base + num);
    stage(
        (q_lat, q_pe, cache, idx),
        (rows, work, stride),
        (kv_rank / 4, d_rope / 4, 2 * ksteps),
        (token, nh, h0),
        (n_slots, s0, pool),
    );
    score_partials(rows, work, stride, ksteps);
    let heads = (token as usize * n_chunks.get() as usize + chunk as usize) * nh as usize;
    softmax(work, num, ml.add(2 * heads), scale, n_slots - s0, (h0, nh));
    weighted_sum(rows, num, stride, o_part.add(heads * kv_rank as usize), kv_rank, (h0, nh));
}

/// The chunks of [`mla_attn_gathered_flash`] combined: `out` `[t, nh, kv_rank]` from its
/// `o_part` and `ml`, as the module's docs say.
///
/// # Launch
/// grid [`combine_grid`]`(t, nh, kv_rank)`, block [`COMBINE_BLOCK`], no shared memory; the same
/// `nh`, `kv_rank`, `t` and `n_slots` as the flash launch that wrote the workspace.
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
    let kv4 = kv_rank as u32 / 4;
    // SAFETY: the launch has `kv_rank >= 4` and `nh >= 1`.
    let parts = NonZeroU32::new_unchecked(kv4.div_ceil(COMBINE_BLOCK));
    let heads = NonZeroU32::new_unchecked(nh as u32);
    let th = block_idx_x() / parts;
    let c = block_idx_x() % parts * COMBINE_BLOCK + thread_idx_x();
    if th >= t as u32 * heads.get() || c >= kv4 {
        return;
    }
    let (token, h) = (th / heads, th % heads);
    let (nh, n_chunks) = (heads.get() as usize, chunks(n_slots as u32) as usize);
    let stats = ml.add(2 * (token as usize * n_chunks * nh + h as usize));
    let mut m = f32::NEG_INFINITY;
    let mut k = 0;
    while k < n_chunks {
        let ms: [f32; 4] = core::array::from_fn(|u| {
            ld_nc_f32_if(k + u < n_chunks, stats.add(2 * (k + u) * nh))
        });
        unroll::<4>(|u| {
            if k + u < n_chunks {
                m = max(m, ms[u]);
            }
        });
        k += 4;
    }
    let (mut l, mut a) = (0.0f32, F32x4::default());
    // Chunks four at a time, their loads issued before any is used (a group past the last
    // chunk loads nothing and adds nothing).
    let part = o_part.add((token as usize * n_chunks * nh + h as usize) * kv4 as usize + c as usize);
    let mut k = 0;
    while k < n_chunks {
        let live: [bool; 4] = core::array::from_fn(|u| k + u < n_chunks);
        let ms: [f32; 4] = core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.add(2 * (k + u) * nh)));
        let ls: [f32; 4] = core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.add(2 * (k + u) * nh + 1)));
        let os: [F32x4; 4] = core::array::from_fn(|u| load_nc_if(live[u], part.add((k + u) * nh * kv4 as usize)));
        unroll::<4>(|u| {
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
        k += 4;
    }
    let inv = rcp(l);
    *out.add(th as usize * kv4 as usize + c as usize) = F32x4 {
        x: a.x * inv,
        y: a.y * inv,
        z: a.z * inv,
        w: a.w * inv,
    };
}
