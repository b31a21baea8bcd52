//! attn_gathered_flash on Hopper's warpgroup tensor cores (sm_90a): every chunk's sums bit for
//! bit as [`super::mla_attn_gathered_flash`]'s, stored as the combine folds them in pairs, so
//! that either may serve a token with the same output bits.
//!
//! A block takes a pair of chunks of one token for [`WgmmaHeads::heads`] heads: a producer
//! warpgroup fills a ring of [`STAGES`] stages (the queries' 32-column slabs by bulk copy, the
//! chunks' rows by `cp.async` through L1, each slot's index clamped into the pool, zeros past
//! `n_slots`); consumer warpgroup `w` scores chunk `2 pair + w` and takes its softmax, then the
//! output tiles `w`, `w + 2`, ... of both chunks. The products run with the roles of attn_flash's
//! swapped (`S^T = K Q^T` and `O^T = V^T E^T`: the rows as `wgmma`'s register operand, M = the
//! chunk's 64 slots or a tile's 64 columns) and every operation of attn_flash in attn_flash's
//! order, which is what keeps its bits:
//! 1. **Scores**: the k-steps in [`super::K_PARTS`] parts of `ceil(K / 8)`, each a chain from `+0` in
//!    ascending k-steps of `mma_3xtf32`'s three products (tail x head, head x tail, head x head
//!    with the query as attn_flash's `A`); two accumulators alternate by part, and the sum (from
//!    `-0`) adds each part as it completes.
//! 2. **Softmax**: through shared memory into attn_flash's mapping (thread `16 h + q` of the
//!    warpgroup over slots `4 q..4 q + 4`, the 16-lane butterflies), numerators split with the
//!    subtraction rounded on its own.
//! 3. **Weighted sum**: a chain from `+0` per 64-column tile over the chunk's k-steps in order,
//!    each k-step's slots in attn_flash's order 0, 2, 4, 6, 1, 3, 5, 7.
//! 4. **The pair folded** as the combine folds attn_flash's chunks two by two
//!    (`combine::pair_weights`), in the thread that holds both chunks' sums of an output: chunk
//!    0's times its weight, then chunk 1's added with one `fma`. Half the sums attn_flash stores,
//!    for [`super::Partials::Pairs`]' combine.
//!
//! Rows of [`KV_RANK`] + `d_rope` floats, `d_rope` 0 or 64 (one entry each), `nh` a multiple of
//! the entry's heads; the launcher takes attn_flash for anything else.

use crate::abi::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::variants;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
use core::arch::asm;

use super::CHUNK;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
use super::K_PARTS;

/// The latent rank the entries are built for.
pub const KV_RANK: u32 = 512;
/// Columns of a query slab: the k-extent of one stage's score items.
pub const SLAB: u32 = 32;
/// Stages of the ring.
pub const STAGES: u32 = 4;
/// Threads of the consumer warpgroups (one chunk each).
const CONSUMERS: u32 = 256;
/// Threads of a block: the consumers and one producer warpgroup.
pub const BLOCK: u32 = CONSUMERS + 128;
/// Threads of a [`mla_attn_flash_wgmma_queries`] block: four columns of a head each.
pub const QUERIES_BLOCK: u32 = 256;
/// Producer warps.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
const PRODUCER_WARPS: u32 = 4;
/// Floats a staged row slab, a staged row tile and a score row take (4 banks apart per row).
const RS_STRIDE: u32 = SLAB + 4;
const RO_STRIDE: u32 = 64 + 4;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
const SC_STRIDE: u32 = CHUNK + 4;
/// Bytes of a numerator k-step (its two core matrices) and 16 more: the k-steps of a row group
/// start 4 banks apart, so that a warp's 8-byte numerator stores (two heads, every slot) fill
/// each bank twice, the fewest for their 256 bytes.
const NUM_STEP: u32 = 256 + 16;
/// Bytes of 8 heads' numerators of a chunk.
const NUM_GROUP: u32 = CHUNK / 8 * NUM_STEP;
/// 64-column output tiles of a row.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
const OUT_TILES: u32 = KV_RANK / 64;

/// The key of the entries: the heads a block takes and whether rows carry 64 rope columns. The
/// entries of one row length give the same bits as each other and as attn_flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WgmmaHeads {
    H16,
    H32,
    H64,
    RopeH16,
    RopeH32,
    RopeH64,
}

impl WgmmaHeads {
    /// The heads a block the entries take, fewest first.
    pub const HEADS: [u32; 3] = [16, 32, 64];

    /// The entry for `heads` a block (16, 32 or 64) and `d_rope` (0 or 64), if there is one.
    pub const fn of(heads: u32, d_rope: u32) -> Option<Self> {
        Some(match (heads, d_rope) {
            (16, 0) => WgmmaHeads::H16,
            (32, 0) => WgmmaHeads::H32,
            (64, 0) => WgmmaHeads::H64,
            (16, 64) => WgmmaHeads::RopeH16,
            (32, 64) => WgmmaHeads::RopeH32,
            (64, 64) => WgmmaHeads::RopeH64,
            _ => return None,
        })
    }

    /// Heads a block.
    pub const fn heads(self) -> u32 {
        match self {
            WgmmaHeads::H16 | WgmmaHeads::RopeH16 => 16,
            WgmmaHeads::H32 | WgmmaHeads::RopeH32 => 32,
            WgmmaHeads::H64 | WgmmaHeads::RopeH64 => 64,
        }
    }

    /// Floats a row: [`KV_RANK`] and the rope columns.
    pub const fn row(self) -> u32 {
        match self {
            WgmmaHeads::H16 | WgmmaHeads::H32 | WgmmaHeads::H64 => KV_RANK,
            _ => KV_RANK + 64,
        }
    }
}

/// Blocks of a launch: token, pair of chunks and head group, head group fastest; `None` past 64
/// bits.
pub const fn grid(t: u32, nh: u32, n_slots: u32, heads: u32) -> Option<u64> {
    (t as u64 * super::pairs(n_slots) as u64).checked_mul((nh / heads) as u64)
}

/// The shared-memory layout of a block of `heads` heads, in bytes: the ring's stages (a query
/// slab's heads and tails and both chunks' row slabs, or both chunks' row tiles), each
/// warpgroup's numerators (heads, then tails; first its scores), the row table, each
/// warpgroup's statistics (`m`, `l` a head) and weights, the pair's exchange (a 64-column tile
/// of sums, through which the .cu's warpgroups fold a pair), the barriers (each stage's full and
/// empty, then the exchange's two, the .cu's).
#[derive(Clone, Copy)]
#[cfg_attr(
    not(all(target_arch = "nvptx64", target_feature = "sm_90a")),
    allow(dead_code)
)]
struct Layout {
    queries: u32,
    row_slabs: u32,
    row_tiles: u32,
    stage: u32,
    numerators: u32,
    numerator_bytes: u32,
    rows: u32,
    stats: u32,
    weights: u32,
    barriers: u32,
}

const fn layout(heads: u32) -> Layout {
    let queries = 2 * heads * SLAB * 4;
    let (row_slabs, row_tiles) = (CHUNK * RS_STRIDE * 4, CHUNK * RO_STRIDE * 4);
    let stage = if queries + 2 * row_slabs > 2 * row_tiles {
        queries + 2 * row_slabs
    } else {
        2 * row_tiles
    };
    let numerators = STAGES * stage;
    let numerator_bytes = 2 * heads / 8 * NUM_GROUP;
    let rows = numerators + 2 * numerator_bytes;
    let stats = rows + 2 * CHUNK * 4;
    let weights = stats + 2 * heads * 2 * 4;
    let exchange = weights + 2 * heads * 4;
    Layout {
        queries,
        row_slabs,
        row_tiles,
        stage,
        numerators,
        numerator_bytes,
        rows,
        stats,
        weights,
        barriers: exchange + 64 * heads * 4,
    }
}

/// Dynamic shared memory of a block of `heads` heads.
pub const fn shared_bytes(heads: u32) -> u32 {
    layout(heads).barriers + 8 * (2 * STAGES + 2)
}

/// Floats of the split queries [`mla_attn_flash_wgmma_queries`] writes: `t` tokens' `nh` heads'
/// rows of `row` floats, a tf32 head and tail each; `None` past 64 bits.
pub const fn split_queries(t: u32, nh: u32, row: u32) -> Option<u64> {
    (2 * t as u64 * nh as u64).checked_mul(row as u64)
}

/// Blocks of a [`mla_attn_flash_wgmma_queries`] launch: a thread for every four columns of
/// `t` tokens' `nh` heads' rows of `row` floats; `None` past 64 bits.
pub const fn queries_grid(t: u32, nh: u32, row: u32) -> Option<u64> {
    match (t as u64 * nh as u64).checked_mul((row / 4) as u64) {
        Some(threads) => Some(threads.div_ceil(QUERIES_BLOCK as u64)),
        None => None,
    }
}

/// Where element `(n, k)` of an `n`-row block of `k_cols` columns sits in `wgmma`'s `K`-major
/// core matrices without swizzle (8 x 4 elements each, `K`-adjacent ones contiguous).
#[cfg(target_arch = "nvptx64")]
const fn core_offset(n: u32, k: u32, k_cols: u32) -> u32 {
    (n / 8) * (k_cols / 4 * 32) + (k / 4) * 32 + (n % 8) * 4 + (k % 4)
}

/// Where numerator `(head n, slot k)` sits, in floats: [`core_offset`]'s core matrices with the
/// k-steps [`NUM_STEP`] bytes apart and the row groups [`NUM_GROUP`].
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
const fn num_offset(n: u32, k: u32) -> u32 {
    (n / 8) * (NUM_GROUP / 4) + (k / 8) * (NUM_STEP / 4) + core_offset(n % 8, k % 8, 8)
}

/// The queries split for the entries of `heads` heads a block: thread `i` takes four columns of
/// one head and stores their tf32 heads and tails (attn_flash's `tf32_split`) as `float4`s at
/// `qs[token][group][slab]`, heads then tails, each as `core_offset(head, column, SLAB)`: one bulk
/// copy a stage. Threads run in the order of the stores (8 heads, then the slab's 8 column
/// groups, then its 8-head rows), so a warp writes 512 contiguous bytes of each half; the loads
/// are scalar, as the queries need only 4-byte alignment.
///
/// # Launch
/// grid [`queries_grid`]`(t, nh, row)`, block [`QUERIES_BLOCK`], no dynamic shared
/// memory; `row` = `kv_rank + d_rope` a multiple of [`SLAB`], `heads` 16, 32 or 64 dividing `nh`.
///
/// # Safety
/// `q_lat` holds `[t, nh, kv_rank]`, `q_pe` `[t, nh, d_rope]` (not read when `d_rope` is 0),
/// `qs` [`split_queries`]`(t, nh, row)` floats.
#[crate::kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn mla_attn_flash_wgmma_queries(
    q_lat: *const f32,
    q_pe: *const f32,
    qs: *mut f32,
    nh: i32,
    kv_rank: i32,
    d_rope: i32,
    t: i32,
    heads: i32,
) {
    crate::chain_entry();
    let (kv_rank, d_rope, heads) = (kv_rank as u32, d_rope as u32, heads as u32);
    let row = kv_rank + d_rope;
    // SAFETY: the launch has `row` a nonzero multiple of 32.
    let slabs = core::num::NonZeroU64::new_unchecked((row / SLAB) as u64);
    let i = block_idx_x() as u64 * QUERIES_BLOCK as u64 + thread_idx_x() as u64;
    if i >= t as u64 * nh as u64 * (row / 4) as u64 {
        return;
    }
    // A slab's half holds `8 heads` float4s: `heads` is a power of two.
    let shift = 3 + heads.trailing_zeros();
    let (s, within) = (i >> shift, (i as u32) & ((1 << shift) - 1));
    let (slab, tg) = ((s % slabs) as u32, s / slabs);
    let th = tg * heads as u64 + ((within >> 6) * 8 + within % 8) as u64;
    let col = slab * SLAB + 4 * (within / 8 % 8);
    let x: [f32; 4] = core::array::from_fn(|e| {
        let col = col + e as u32;
        if col < kv_rank {
            *q_lat.add((th * kv_rank as u64 + col as u64) as usize)
        } else {
            *q_pe.add((th * d_rope as u64 + (col - kv_rank) as u64) as usize)
        }
    });
    let split = x.map(tf32_split);
    let head = qs
        .cast::<F32x4>()
        .add((i + s * (8 * heads) as u64) as usize);
    *head = split.map(|(h, _)| f32::from_bits(h)).into();
    *head.add((8 * heads) as usize) = split.map(|(_, t)| f32::from_bits(t)).into();
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod device_side {
    //! The entries' body: the stage ring's producer, and the consumers' three phases.
    use super::*;

    /// The accumulator of a 64 x `N` tile: `N / 2` floats a thread, and its `wgmma`.
    pub(super) trait Tile: Copy {
        const ZERO: Self;
        const FLOATS: usize;
        /// k-steps of a weighted-sum item: four, and two at 64 heads, whose wider accumulators
        /// leave room for two items' fragments in flight only at two (perf-notes, MLA r126 to r130).
        const OUT_STEPS: u32;
        unsafe fn mma(&mut self, a: [u32; 4], b: u64);
        /// One 3xTF32 k-step, `b`'s head and tail by descriptors `bh` and `bt`: tail(a) x
        /// head(b), head(a) x tail(b), then head x head, attn_flash's order
        /// (`device::mma_3xtf32` with the roles swapped).
        #[inline(always)]
        unsafe fn mma_3xtf32(&mut self, (hi, lo): ([u32; 4], [u32; 4]), bh: u64, bt: u64) {
            self.mma(lo, bh);
            self.mma(hi, bt);
            self.mma(hi, bh);
        }
        fn at(&self, i: usize) -> f32;
        fn at_mut(&mut self, i: usize) -> &mut f32;
    }

    macro_rules! tile {
        ($n:literal, $mma:ident, $steps:literal) => {
            impl Tile for [f32; $n] {
                const ZERO: Self = [0.0; $n];
                const FLOATS: usize = $n;
                const OUT_STEPS: u32 = $steps;
                #[inline(always)]
                unsafe fn mma(&mut self, a: [u32; 4], b: u64) {
                    $mma(self, a, b)
                }
                #[inline(always)]
                fn at(&self, i: usize) -> f32 {
                    self[i]
                }
                #[inline(always)]
                fn at_mut(&mut self, i: usize) -> &mut f32 {
                    &mut self[i]
                }
            }
        };
    }
    tile!(8, wgmma_tf32_n16, 4);
    tile!(16, wgmma_tf32_n32, 4);
    tile!(32, wgmma_tf32_n64, 2);

    /// A weighted-sum item's fragments, head or tail: four a k-step, for up to four k-steps.
    type OutFrags = [[u32; 4]; 4];

    /// `body` once for each literal, `$i` a constant of its value in each copy: an unrolling
    /// whose copies name their accumulator and fragment set at compile time, where a closure
    /// called in a loop may stay a call (with a stack frame, and ptxas then serialises `wgmma`).
    macro_rules! unrolled {
        ($i:ident in [$($n:literal),*] => $body:block) => {
            $({
                #[allow(non_upper_case_globals)]
                const $i: u32 = $n;
                $body
            })*
        };
    }

    /// Holds a tile's values where they are: an empty asm that takes and gives each, ordered
    /// with the other asm. After a part's additions, it keeps them before the next `wgmma`'s
    /// issue (left free to move, they land where ptxas serialises every `wgmma`); before a
    /// `wgmma.fence`, it keeps every write of the accumulator (its zeroing, which LLVM would
    /// otherwise leave as copies right before the `wgmma`) before the fence, as the PTX ISA asks.
    #[inline(always)]
    fn pin<T: Tile>(t: &mut T) {
        for k in 0..T::FLOATS {
            // SAFETY: an empty asm; it only orders the value's computation.
            unsafe {
                asm!(
                    "/* {v} */",
                    v = inout(reg32) * t.at_mut(k),
                    options(nomem, nostack)
                )
            };
        }
    }

    /// Zeros the optimiser cannot fold into the `wgmma` that reads them (`pure`: not `pure`,
    /// ptxas serialised every `wgmma`; the copies of the one register LLVM may merge them into
    /// are kept before the fence by [`pin`]).
    #[inline(always)]
    fn zero<T: Tile>(t: &mut T) {
        for i in 0..T::FLOATS {
            let mut z = 0.0f32;
            // SAFETY: an empty asm that only hides the value from the optimiser.
            unsafe { asm!("/* {z} */", z = inout(reg32) z, options(nomem, nostack, pure)) };
            *t.at_mut(i) = z;
        }
    }

    /// A consumer thread's place: the layout's addresses and its fragment coordinates.
    #[derive(Clone, Copy)]
    struct Ctx {
        smem: Shared<u8>,
        l: Layout,
        full: Shared<u64>,
        empty: Shared<u64>,
        heads: u32,
        wg: u32,
        w: u32,
        g: u32,
        c: u32,
        num: Shared<u8>,
        num_tail: Shared<u8>,
    }

    /// The geometry of rows of `ROW` floats: 32-column slabs, k-steps in parts, items of
    /// `ks` k-steps (a part a whole number of items, an item within a slab).
    struct Geometry<const ROW: u32>;

    impl<const ROW: u32> Geometry<ROW> {
        const SLABS: u32 = ROW / SLAB;
        const PER: u32 = (ROW / 8).div_ceil(K_PARTS);
        const KS: u32 = if Self::PER % 2 == 1 { 1 } else { 2 };
        const SPI: u32 = SLAB / 8 / Self::KS;
        const ITEMS: u32 = Self::SLABS * Self::SPI;
        const IPP: u32 = Self::PER / Self::KS;
        const CHECK: () = assert!(
            ROW % SLAB == 0 && Self::PER * K_PARTS == ROW / 8 && 2 * Self::IPP <= 18,
            "rows of whole slabs and parts"
        );
    }

    /// Score item `n`'s row fragments (rows `16 w + g` and `+ 8`, columns `c` and `c + 4` of
    /// each k-step), split; the item's slab waited for at its first item.
    #[inline(always)]
    unsafe fn score_load<const ROW: u32>(
        cx: Ctx,
        n: u32,
        hi: &mut [[u32; 4]; 2],
        lo: &mut [[u32; 4]; 2],
    ) {
        let (ks, spi) = (Geometry::<ROW>::KS, Geometry::<ROW>::SPI);
        let (j, half) = (n / spi, n % spi);
        let s = j % STAGES;
        if half == 0 {
            mbarrier_wait_parity(cx.full.add(s), (j / STAGES) & 1);
        }
        let r0: Shared<f32> = cx.smem.byte_add(
            s * cx.l.stage
                + cx.l.queries
                + cx.wg * cx.l.row_slabs
                + 4 * ((16 * cx.w + cx.g) * RS_STRIDE + cx.c),
        );
        unroll::<2>(|i| {
            if (i as u32) < ks {
                let col = 8 * (ks * half + i as u32);
                let x = [
                    r0.add(col).load(),
                    r0.add(8 * RS_STRIDE + col).load(),
                    r0.add(col + 4).load(),
                    r0.add(8 * RS_STRIDE + col + 4).load(),
                ];
                unroll::<4>(|e| (hi[i][e], lo[i][e]) = tf32_split(x[e]));
            }
        });
    }

    /// Score item `n` into `acc`: per k-step head(q) x tail(row), tail(q) x head(row), head x
    /// head (the row is `A` here, the query attn_flash's `A`).
    #[inline(always)]
    unsafe fn score_issue<const ROW: u32, T: Tile>(
        cx: Ctx,
        n: u32,
        acc: &mut T,
        hi: &[[u32; 4]; 2],
        lo: &[[u32; 4]; 2],
    ) {
        let (ks, spi) = (Geometry::<ROW>::KS, Geometry::<ROW>::SPI);
        let (j, half) = (n / spi, n % spi);
        let head = cx.smem.byte_add::<u8>((j % STAGES) * cx.l.stage);
        let tail = head.byte_add::<u8>(cx.heads * SLAB * 4);
        pin(acc);
        wgmma_fence();
        unroll::<2>(|i| {
            if (i as u32) < ks {
                let k = ks * half + i as u32;
                let stride = SLAB / 4 * 128;
                let bh = wgmma_desc_k_major(head.byte_add::<u8>(k * 256), stride);
                let bt = wgmma_desc_k_major(tail.byte_add::<u8>(k * 256), stride);
                acc.mma_3xtf32((hi[i], lo[i]), bh, bt);
            }
        });
        wgmma_commit_group();
    }

    /// Output item `n` of this warpgroup: its ring iteration (its tile's, after the slabs'), its
    /// chunk and its place in that chunk's chain. Warpgroup `w` takes tiles `w`, `w + 2`, ...,
    /// each as chunk 0's chain then chunk 1's.
    #[inline(always)]
    fn out_place<const ROW: u32, T: Tile>(cx: Ctx, n: u32) -> (u32, u32, u32) {
        let per_tile = 8 / T::OUT_STEPS;
        let (i, k) = (n / (2 * per_tile), n % (2 * per_tile));
        (
            Geometry::<ROW>::SLABS + 2 * i + cx.wg,
            k / per_tile,
            k % per_tile,
        )
    }

    /// Output item `n`'s values as they lie (columns `16 w + 2 g` and `+ 1`; slots `8 kk + 2 c`
    /// and `+ 1` of its chunk), the item's tile waited for at its first item.
    #[inline(always)]
    unsafe fn out_fetch<const ROW: u32, T: Tile>(cx: Ctx, n: u32, raw: &mut OutFrags) {
        let (it, ch, q) = out_place::<ROW, T>(cx, n);
        let s = it % STAGES;
        if ch == 0 && q == 0 {
            mbarrier_wait_parity(cx.full.add(s), (it / STAGES) & 1);
        }
        let v: Shared<[u32; 2]> = cx.smem.byte_add(
            s * cx.l.stage
                + ch * cx.l.row_tiles
                + 4 * (2 * cx.c * RO_STRIDE + 16 * cx.w + 2 * cx.g),
        );
        unroll::<4>(|i| {
            if i as u32 >= T::OUT_STEPS {
                return;
            }
            let kk = T::OUT_STEPS * q + i as u32;
            let u0 = v.byte_add::<[u32; 2]>(4 * (8 * kk * RO_STRIDE)).load();
            let u1 = v
                .byte_add::<[u32; 2]>(4 * ((8 * kk + 1) * RO_STRIDE))
                .load();
            raw[i] = [u0[0], u0[1], u1[0], u1[1]];
        });
    }

    /// Output item `n`'s fetched values split into `wgmma`'s fragments; the stage released once
    /// its tile's last item is split, with the arrivals of both consumer warpgroups, as this one
    /// is its only reader.
    #[inline(always)]
    unsafe fn out_split<const ROW: u32, T: Tile>(
        cx: Ctx,
        n: u32,
        raw: &OutFrags,
        hi: &mut OutFrags,
        lo: &mut OutFrags,
    ) {
        unroll::<4>(|i| {
            if (i as u32) < T::OUT_STEPS {
                unroll::<4>(|e| (hi[i][e], lo[i][e]) = tf32_split(f32::from_bits(raw[i][e])));
            }
        });
        let (it, ch, q) = out_place::<ROW, T>(cx, n);
        if ch == 1 && q == 8 / T::OUT_STEPS - 1 {
            mbarrier_arrive_count(cx.empty.add(it % STAGES), 2);
        }
    }

    /// Output item `n` into `d`: per k-step head(e) x tail(v), tail(e) x head(v), head x head,
    /// `e` the numerators of the item's chunk.
    #[inline(always)]
    unsafe fn out_issue<const ROW: u32, T: Tile>(
        cx: Ctx,
        d: &mut T,
        n: u32,
        hi: &OutFrags,
        lo: &OutFrags,
    ) {
        let (_, ch, q) = out_place::<ROW, T>(cx, n);
        let num = cx
            .smem
            .byte_add::<u8>(cx.l.numerators + ch * cx.l.numerator_bytes);
        let num_tail = num.byte_add::<u8>(cx.heads / 8 * NUM_GROUP);
        pin(d);
        wgmma_fence();
        unroll::<4>(|i| {
            if i as u32 >= T::OUT_STEPS {
                return;
            }
            let kk = T::OUT_STEPS * q + i as u32;
            let bp = wgmma_desc_k_major(num.byte_add::<u8>(kk * NUM_STEP), NUM_GROUP);
            let bt = wgmma_desc_k_major(num_tail.byte_add::<u8>(kk * NUM_STEP), NUM_GROUP);
            d.mma_3xtf32((hi[i], lo[i]), bp, bt);
        });
        wgmma_commit_group();
    }

    /// Chunk `ch`'s weights of the thread's heads (`8 jn + 2 c` and `+ 1`).
    #[inline(always)]
    unsafe fn chunk_weights<T: Tile>(cx: Ctx, ch: u32) -> [[f32; 2]; 8] {
        let weights: Shared<[u32; 2]> = cx.smem.byte_add(cx.l.weights + ch * cx.heads * 4);
        let mut w = [[0.0f32; 2]; 8];
        unroll::<8>(|jn| {
            if jn < T::FLOATS / 4 {
                let pair = weights.byte_add::<[u32; 2]>(4 * (8 * jn as u32 + 2 * cx.c));
                w[jn] = pair.load().map(f32::from_bits);
            }
        });
        w
    }

    /// Output tile `tile` of the pair folded (`d0`, `d1` hold heads `8 jn + 2 c + b` at columns
    /// `16 w + 2 g` and `+ 1`, elements `4 jn + b` and `4 jn + 2 + b`): chunk 0's sums times its
    /// weights, plus chunk 1's times theirs (`fma`) where the pair has a `second` chunk, stored as
    /// the pair's sums to `ot`.
    #[inline(always)]
    unsafe fn fold_store<T: Tile>(cx: Ctx, ot: *mut f32, d0: &T, d1: &T, tile: u32, second: bool) {
        let w0 = chunk_weights::<T>(cx, 0);
        let w1 = chunk_weights::<T>(cx, 1);
        unroll::<8>(|jn| {
            if jn < T::FLOATS / 4 {
                let h = 8 * jn as u32 + 2 * cx.c;
                let weight = |w: [[f32; 2]; 8], e: usize| w[jn][e % 2];
                let mut y: [f32; 4] = core::array::from_fn(|e| d0.at(4 * jn + e) * weight(w0, e));
                if second {
                    unroll::<4>(|e| y[e] = fma(weight(w1, e), d1.at(4 * jn + e), y[e]));
                }
                unroll::<2>(|b| {
                    let at = ot.add(
                        ((h + b as u32) * KV_RANK + tile * 64 + 16 * cx.w + 2 * cx.g) as usize,
                    );
                    st_global_v2(at, y[b], y[2 + b]);
                })
            }
        });
    }

    /// The producer warpgroup: the pair's row table, then every stage of the ring in turn.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn produce<const ROW: u32>(
        l: Layout,
        smem: Shared<u8>,
        (full, empty): (Shared<u64>, Shared<u64>),
        queries: *const f32,
        cache: *const f32,
        (idx, n_slots, pool): (*const i32, u32, i32),
        first_slot: u32,
    ) {
        setmaxnreg_dec::<40>();
        let tid = thread_idx_x() - CONSUMERS;
        let (lane, pw) = (tid % 32, tid / 32);
        let table: Shared<u32> = smem.byte_add(l.rows);
        let mut i = tid;
        while i < 2 * CHUNK {
            let slot = first_slot + i;
            let r = if slot < n_slots {
                load_nc_i32(idx.add(slot as usize)).max(0).min(pool - 1)
            } else {
                -1
            };
            table.add(i).store(r as u32);
            i += 32 * PRODUCER_WARPS;
        }
        named_barrier_sync(4, 32 * PRODUCER_WARPS);
        let base = cache.add(4 * (lane % 8) as usize);
        let rows: [u32; 4] = core::array::from_fn(|i| lane / 8 + 4 * (4 * pw + i as u32));
        for it in 0..Geometry::<ROW>::SLABS + OUT_TILES {
            let s = it % STAGES;
            if it >= STAGES {
                mbarrier_wait_parity(empty.add(s), (it / STAGES - 1) & 1);
            }
            let stage = smem.byte_add::<u8>(s * l.stage);
            let (dst0, stride, col, copies) = if it < Geometry::<ROW>::SLABS {
                if lane == 0 && pw == 0 {
                    mbarrier_arrive_expect_tx(full.add(s), l.queries);
                    let src = queries.add((it * l.queries / 4) as usize);
                    bulk_copy_to_shared(stage, src.cast(), l.queries, full.add(s));
                }
                (l.queries, RS_STRIDE, it * SLAB, 1)
            } else {
                if lane == 0 && pw == 0 {
                    mbarrier_arrive(full.add(s));
                }
                (0, RO_STRIDE, (it - Geometry::<ROW>::SLABS) * 64, 2)
            };
            let chunk_bytes = if copies == 1 {
                l.row_slabs
            } else {
                l.row_tiles
            };
            for ch in 0..2 {
                let dst = stage.byte_add::<u8>(dst0 + ch * chunk_bytes + 16 * (lane % 8));
                let r: [i32; 4] =
                    core::array::from_fn(|i| table.add(ch * CHUNK + rows[i]).load() as i32);
                unroll::<4>(|i| {
                    let src = base.add(r[i].max(0) as usize * ROW as usize + col as usize);
                    let row = dst.byte_add::<u8>(rows[i] * stride * 4);
                    cp_async_ca_16_zfill(r[i] >= 0, row, src.cast());
                    if copies == 2 {
                        cp_async_ca_16_zfill(
                            r[i] >= 0,
                            row.byte_add::<u8>(128),
                            src.add(32).cast(),
                        );
                    }
                });
            }
            cp_async_mbarrier_arrive_noinc(full.add(s));
        }
    }

    /// The body of the entries: `ROW` floats a row, `heads` heads a block, `T` the accumulator
    /// of a 64 x `heads` tile.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn attn_flash_wgmma<const ROW: u32, T: Tile>(
        qs: *const F32x4,
        cache: *const F32x4,
        idx: *const i32,
        o_part: *mut f32,
        ml: *mut f32,
        nh: i32,
        n_slots: i32,
        scale: f32,
        pool: i32,
    ) {
        max_threads::<BLOCK>();
        #[allow(clippy::let_unit_value)]
        let () = Geometry::<ROW>::CHECK;
        crate::chain_wait();
        let heads = 2 * T::FLOATS as u32;
        let l = layout(heads);
        let (nh, n_slots) = (nh as u32, n_slots as u32);
        let groups = core::num::NonZeroU32::new_unchecked(nh / heads);
        let chunks = super::super::chunks(n_slots);
        // SAFETY: the launch has `n_slots >= 1`, so a pair at least.
        let pairs = core::num::NonZeroU32::new_unchecked(chunks.div_ceil(2));
        let bid = block_idx_x();
        let (group, pair, token) = (bid % groups, bid / groups % pairs, bid / groups / pairs);
        let tid = thread_idx_x();
        let smem = dynamic_shared();
        let full: Shared<u64> = smem.byte_add(l.barriers);
        let empty = full.add(STAGES);
        if tid == 0 {
            for s in 0..STAGES {
                mbarrier_init(full.add(s), 32 * PRODUCER_WARPS + 1);
                mbarrier_init(empty.add(s), CONSUMERS);
            }
            fence_mbarrier_init();
        }
        sync_threads();
        if tid >= CONSUMERS {
            let slabs = (ROW / SLAB) as usize;
            let queries = qs
                .cast::<f32>()
                .add((token * groups.get() + group) as usize * slabs * (l.queries / 4) as usize);
            let idx = idx.add(token as usize * n_slots as usize);
            produce::<ROW>(
                l,
                smem,
                (full, empty),
                queries,
                cache.cast(),
                (idx, n_slots, pool),
                2 * pair * CHUNK,
            );
            return;
        }
        setmaxnreg_inc::<232>();
        // The warpgroup from lane 0, so that the addresses formed from it (its numerators, its
        // output tiles' stages) are seen to be one a warp.
        let (wg, w, lane) = (warp_broadcast(tid / 128), tid / 32 % 4, tid % 32);
        let (g, c) = (lane / 4, lane % 4);
        let chunk = 2 * pair + wg;
        let second = 2 * pair + 1 < chunks;
        let num = smem.byte_add::<u8>(l.numerators + wg * l.numerator_bytes);
        let cx = Ctx {
            smem,
            l,
            full,
            empty,
            heads,
            wg,
            w,
            g,
            c,
            num,
            num_tail: num.byte_add(heads / 8 * NUM_GROUP),
        };
        let sum = scores::<ROW, T>(cx);
        let first = (token as usize * pairs.get() as usize + pair as usize) * nh as usize
            + (group * heads) as usize;
        // A chunk past the last (the odd pair's second) is computed on rows of zeros and left out.
        softmax::<T>(cx, &sum, (chunk * CHUNK, n_slots), scale);
        // The pair's statistics once both warpgroups' are in: thread `h` of each warpgroup stores
        // head `h`'s weight for its chunk, warpgroup 0's the pair's `m` and `l`, as the combine
        // forms them from attn_flash's chunks.
        named_barrier_sync(5, CONSUMERS);
        let tw = tid % 128;
        if tw < heads {
            let stats = smem.byte_add::<f32>(l.stats);
            let (m0, l0) = (stats.add(2 * tw).load(), stats.add(2 * tw + 1).load());
            let at = stats.add(2 * (heads + tw));
            let (m1, l1) = (at.load(), at.add(1).load());
            let (mp, w0, w1) = super::super::combine::pair_weights(m0, m1, second);
            let weights = smem.byte_add::<f32>(l.weights);
            weights
                .add(wg * heads + tw)
                .store(if wg == 0 { w0 } else { w1 });
            if wg == 0 {
                let out = ml.add(2 * (first + tw as usize));
                *out = mp;
                *out.add(1) = super::super::combine::pair_l((l0, w0), (l1, w1), second);
            }
        }
        // Each warpgroup folds both chunks: both warpgroups' weights and numerators are in.
        named_barrier_sync(5, CONSUMERS);
        weighted_sum::<ROW, T>(cx, o_part.add(first * KV_RANK as usize), second);
    }

    /// Scores `S^T = K Q^T` in [`K_PARTS`] parts, each a chain from `+0`, added in order from
    /// `-0`: two accumulators alternate by part, and the items of a pair of parts are unrolled.
    #[inline(always)]
    unsafe fn scores<const ROW: u32, T: Tile>(cx: Ctx) -> T {
        let (items, spi, ipp) = (
            Geometry::<ROW>::ITEMS,
            Geometry::<ROW>::SPI,
            Geometry::<ROW>::IPP,
        );
        let (mut acc_e, mut acc_o) = (T::ZERO, T::ZERO);
        zero(&mut acc_e);
        zero(&mut acc_o);
        let mut sum = T::ZERO;
        for k in 0..T::FLOATS {
            *sum.at_mut(k) = -0.0;
        }
        let (mut xf, mut xl, mut yf, mut yl) = (
            [[0u32; 4]; 2],
            [[0u32; 4]; 2],
            [[0u32; 4]; 2],
            [[0u32; 4]; 2],
        );
        score_load::<ROW>(cx, 0, &mut xf, &mut xl);
        score_issue::<ROW, T>(cx, 0, &mut acc_e, &xf, &xl);
        for p2 in 0..K_PARTS / 2 {
            unrolled!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17] => {
                if i < 2 * ipp {
                    let n = 2 * ipp * p2 + i;
                    if n + 1 < items {
                        let next = if ((i + 1) / ipp) % 2 == 1 { &mut acc_o } else { &mut acc_e };
                        if i % 2 == 0 {
                            score_load::<ROW>(cx, n + 1, &mut yf, &mut yl);
                            score_issue::<ROW, T>(cx, n + 1, next, &yf, &yl);
                        } else {
                            score_load::<ROW>(cx, n + 1, &mut xf, &mut xl);
                            score_issue::<ROW, T>(cx, n + 1, next, &xf, &xl);
                        }
                        wgmma_wait_group::<1>();
                    } else {
                        wgmma_wait_group::<0>();
                    }
                    if n % spi == spi - 1 {
                        mbarrier_arrive(cx.empty.add((n / spi) % STAGES));
                    }
                    if i % ipp == ipp - 1 {
                        let done = if (i / ipp) % 2 == 1 { &mut acc_o } else { &mut acc_e };
                        for k in 0..T::FLOATS {
                            *sum.at_mut(k) += done.at(k);
                        }
                        pin(&mut sum);
                        zero(done);
                    }
                }
            });
        }
        sum
    }

    /// The chunk's softmax in attn_flash's mapping, through shared memory: the scores to the
    /// numerators' place, thread `16 h + q` over slots `4 q..4 q + 4` of heads `h` and `h + 8`,
    /// ..., the numerators back split in attn_flash's pairs (slots `4 q` and `4 q + 2`, then `4 q
    /// + 1` and `4 q + 3`) as the weighted sum's `B`; `m` and `l` to the warpgroup's statistics.
    #[inline(always)]
    unsafe fn softmax<T: Tile>(cx: Ctx, sum: &T, (s0, n_slots): (u32, u32), scale: f32) {
        let (p, plo) = (cx.num.cast::<f32>(), cx.num_tail.cast::<u32>());
        unroll::<8>(|jn| {
            let jn = jn as u32;
            if jn < T::FLOATS as u32 / 4 {
                unroll::<4>(|e| {
                    let e = e as u32;
                    let h = 8 * jn + 2 * cx.c + e % 2;
                    p.add(h * SC_STRIDE + 16 * cx.w + cx.g + 8 * (e / 2))
                        .store(sum.at((4 * jn + e) as usize));
                });
            }
        });
        named_barrier_sync(2 + cx.wg, 128);
        let tw = thread_idx_x() % 128;
        let (hg, q) = (tw / 16, tw % 16);
        let mut sv = [[0.0f32; 4]; 8];
        unroll::<8>(|r| {
            if r < T::FLOATS / 4 {
                let v = p
                    .add((8 * r as u32 + hg) * SC_STRIDE + 4 * q)
                    .cast::<F32x4>()
                    .load();
                sv[r] = [v.x, v.y, v.z, v.w];
            }
        });
        named_barrier_sync(2 + cx.wg, 128);
        unroll::<8>(|r| {
            if r >= T::FLOATS / 4 {
                return;
            }
            let h = 8 * r as u32 + hg;
            let s = &mut sv[r];
            let live = n_slots.saturating_sub(s0);
            let (m, e, lsum) = super::super::softmax::chunk_softmax(s, scale, 4 * q, live);
            let split: [(u32, u32); 4] = core::array::from_fn(|i| tf32_split(e[i]));
            let pos = 8 * (q / 2) + 2 * (q % 2);
            let pair = |base: Shared<u32>, k: u32, x: u32, y: u32| {
                base.add(num_offset(h, k))
                    .cast::<[f32; 2]>()
                    .store([f32::from_bits(x), f32::from_bits(y)])
            };
            let head = p.cast::<u32>();
            pair(head, pos, split[0].0, split[2].0);
            pair(head, pos + 4, split[1].0, split[3].0);
            pair(plo, pos, split[0].1, split[2].1);
            pair(plo, pos + 4, split[1].1, split[3].1);
            if q == 0 {
                let stats = cx.smem.byte_add::<f32>(cx.l.stats + cx.wg * cx.heads * 8);
                stats.add(2 * h).store(m);
                stats.add(2 * h + 1).store(lsum);
            }
        });
        fence_proxy_async_shared();
        named_barrier_sync(2 + cx.wg, 128);
    }

    /// `O^T = V^T E^T`: this warpgroup's 64-column tiles (every other one), each as a chain from
    /// `+0` per chunk over the chunk's k-steps in items of [`Tile::OUT_STEPS`] (chunk 0 in `da`,
    /// chunk 1 in `db`), the pair folded in the thread that holds both and stored to `ot`. Within
    /// a tile each item is issued before the one before it is waited for, and its values are
    /// fetched while the item before it is issued and run; a tile's last item is waited for, the
    /// tile folded, then the next tile's first item issued.
    #[inline(always)]
    unsafe fn weighted_sum<const ROW: u32, T: Tile>(cx: Ctx, ot: *mut f32, second: bool) {
        let per_tile = 8 / T::OUT_STEPS;
        let (body, items) = (2 * per_tile, OUT_TILES / 2 * 2 * per_tile);
        let (mut da, mut db) = (T::ZERO, T::ZERO);
        let z: OutFrags = [[0; 4]; 4];
        let (mut raw, mut af, mut al, mut bf, mut bl) = (z, z, z, z, z);
        out_fetch::<ROW, T>(cx, 0, &mut raw);
        for i in 0..OUT_TILES / 2 {
            // The tile's first item (its values fetched before).
            zero(&mut da);
            out_split::<ROW, T>(cx, body * i, &raw, &mut af, &mut al);
            out_fetch::<ROW, T>(cx, body * i + 1, &mut raw);
            out_issue::<ROW, T>(cx, &mut da, body * i, &af, &al);
            unrolled!(k in [0, 1, 2, 3, 4, 5, 6, 7] => {
                if k < body {
                    let n = body * i + k;
                    if k + 1 < body {
                        // Item n + 1 into the other fragment set, chunk 1's accumulator zeroed.
                        let d = if k + 1 < per_tile { &mut da } else { &mut db };
                        if k + 1 == per_tile {
                            zero(d);
                        }
                        let (hi, lo) = if k % 2 == 1 {
                            (&mut af, &mut al)
                        } else {
                            (&mut bf, &mut bl)
                        };
                        out_split::<ROW, T>(cx, n + 1, &raw, hi, lo);
                        if n + 2 < items {
                            out_fetch::<ROW, T>(cx, n + 2, &mut raw);
                        }
                        out_issue::<ROW, T>(cx, d, n + 1, hi, lo);
                        wgmma_wait_group::<1>();
                    } else {
                        wgmma_wait_group::<0>();
                        fold_store(cx, ot, &da, &db, 2 * i + cx.wg, second);
                    }
                }
            });
        }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
use device_side::attn_flash_wgmma;

#[cfg(any(not(target_arch = "nvptx64"), target_feature = "sm_90a"))]
variants! {
    /// attn_gathered_flash's workspace from Hopper's warpgroup tensor cores: `qs` the queries
    /// split by [`mla_attn_flash_wgmma_queries`] for the entry's heads, `cache` `[pool, row]`,
    /// `idx` `[t, n_slots]`; `o_part` and `ml` the sums and statistics of [`super::pairs`]`(n_slots)`
    /// pairs a token, as [`super::Partials::Pairs`]' combine reads them: attn_flash's chunks
    /// folded two by two, bit for bit.
    ///
    /// # Launch
    /// grid [`grid`]`(t, nh, n_slots, heads)`, block [`BLOCK`], dynamic shared memory
    /// [`shared_bytes`]`(heads)`, on sm_90a; `nh` a multiple of the entry's
    /// [`WgmmaHeads::heads`], `n_slots >= 1`, `pool >= 1`.
    ///
    /// # Safety
    /// The buffers hold the extents above. Indices need not be in `0..pool`: they are clamped.
    attn_flash_wgmma(
        qs: *const F32x4,
        cache: *const F32x4,
        idx: *const i32,
        o_part: *mut f32,
        ml: *mut f32,
        nh: i32,
        n_slots: i32,
        scale: f32,
        pool: i32,
    ) for AttnFlashWgmma: WgmmaHeads {
        mla_attn_flash_wgmma_h16 = WgmmaHeads::H16 => [512, [f32; 8]];
        mla_attn_flash_wgmma_h32 = WgmmaHeads::H32 => [512, [f32; 16]];
        mla_attn_flash_wgmma_h64 = WgmmaHeads::H64 => [512, [f32; 32]];
        mla_attn_flash_wgmma_rope_h16 = WgmmaHeads::RopeH16 => [576, [f32; 8]];
        mla_attn_flash_wgmma_rope_h32 = WgmmaHeads::RopeH32 => [576, [f32; 16]];
        mla_attn_flash_wgmma_rope_h64 = WgmmaHeads::RopeH64 => [576, [f32; 32]];
    }
}
