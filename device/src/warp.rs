//! Warp reductions beyond the plain butterfly sum of the parent module.

use super::{lane_id, max, shfl_xor, unroll};

/// Maximum over the whole warp by an xor butterfly, offsets 16, 8, 4, 2, 1: five
/// `shfl.sync.bfly.b32` each followed by `max.f32` (CUDA `fmaxf`). The maximum is exact, so
/// every lane ends with the same bits whatever the order.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn warp_max(v: f32) -> f32 {
    butterfly_max(v, 16)
}

/// The xor butterfly maximum from offset `from` (a power of two) down to 1, full member mask:
/// over each group of `2 * from` lanes, every lane of which ends with the same bits.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
unsafe fn butterfly_max(mut v: f32, from: u32) -> f32 {
    let mut offset = from;
    while offset > 0 {
        v = max(v, shfl_xor(u32::MAX, v, offset));
        offset >>= 1;
    }
    v
}

/// Sum over each 8-lane group `8k..8k+8` by an xor butterfly, offsets 4, 2, 1
/// (`shfl.sync.bfly.b32` with the full mask, then `add.rn.f32`): every lane of a group ends with
/// the same bits.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn group8_sum(v: f32) -> f32 {
    crate::wrappers::butterfly_sum(v, 4)
}

/// Sum over each 16-lane group `16k..16k+16` by an xor butterfly, offsets 8, 4, 2, 1 (as
/// [`group8_sum`]): every lane of a group ends with the same bits.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn group16_sum(v: f32) -> f32 {
    crate::wrappers::butterfly_sum(v, 8)
}

/// Maximum over each 16-lane group `16k..16k+16` by an xor butterfly, offsets 8, 4, 2, 1, full
/// member mask (`shfl.sync.bfly.b32`, then `max.f32`, CUDA `fmaxf`). The maximum is exact, so
/// every lane of a group ends with the same bits.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn group16_max_warp(v: f32) -> f32 {
    butterfly_max(v, 8)
}

/// The halving steps of a reduce-scatter over `STEPS` lane bits, from offset `2^(STEPS - 1)`
/// down to 1: at offset `bit` the lanes `l` and `l ^ bit` each keep one half of the first `len`
/// values they hold (the lower where `l & bit` is 0), send the other half to their partner and add
/// what they receive to what they keep (`keep + shfl_xor(send, bit)`, `shfl.sync.bfly.b32` then
/// `add.rn.f32`); a step that finds one value left adds the partner's copy instead. Every sum is
/// the tree of a butterfly over those offsets, whichever lane ends with it.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
unsafe fn halving_sums<const STEPS: usize>(mut v: [f32; 32], n: usize) -> [f32; 32] {
    unroll::<STEPS>(|step| {
        let bit = (1 << (STEPS - 1)) >> step;
        let len = n >> (step + 1);
        if len >= 1 {
            let upper = lane_id() & bit != 0;
            let held = v;
            unroll::<16>(|j| {
                if j < len {
                    let (lower, higher) = (held[j], held[j + len]);
                    let (keep, send) = if upper {
                        (higher, lower)
                    } else {
                        (lower, higher)
                    };
                    v[j] = keep + shfl_xor(u32::MAX, send, bit);
                }
            });
        } else {
            v[0] += shfl_xor(u32::MAX, v[0], bit);
        }
    });
    v
}

/// Sums the first `n` values of `v` (`n` a power of two from 4 to 32, a constant once inlined) over
/// each group of 8 lanes (`8k..8k+8`), leaving lane `8k + m` with the sums of values `m * n / 8`
/// onwards in the first `max(n / 8, 1)` places of the result ([`halving_sums`] over offsets 4, 2,
/// 1; at `n = 4` the lanes `m` and `m ^ 1` end with the same sum), a fraction of the shuffles of
/// `n` separate butterflies.
///
/// Each sum is the tree of an 8-lane butterfly: at offset 4 the lanes `l` and `l ^ 4` add their
/// values, then pairs of those at offset 2, then at offset 1. Its bits are those of a butterfly
/// sum of the value alone, whichever lane ends with it and whatever `n` is.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn group8_reduce_scatter(v: [f32; 32], n: usize) -> [f32; 4] {
    let v = halving_sums::<3>(v, n);
    [v[0], v[1], v[2], v[3]]
}

/// The warp sums of the first `n` values of `v` at once (`n` a power of two up to 32, a constant
/// once inlined), leaving lane `l` with the sum of value `l / (32 / n)` over the warp: halving
/// exchanges ([`halving_sums`]) at offsets 16, 8, ... while a lane holds more than one value,
/// then a butterfly over the offsets left, so far fewer shuffles than `n` separate butterflies
/// (perf-notes, MLA: absorb_q and decompress_v at t_q 8).
///
/// Each sum is the tree of a 32-lane butterfly of its value alone: at offset 16 the lanes `l`
/// and `l ^ 16` add their values, then pairs of those at offset 8, and so on, the same pairs
/// whichever lane adds them; so its bits are those of `super::warp_sum` of the value (at
/// `n = 1`, that butterfly itself).
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn warp_reduce_scatter(v: [f32; 32], n: usize) -> f32 {
    halving_sums::<5>(v, n)[0]
}
