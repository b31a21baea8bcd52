//! Warp reductions beyond the plain butterfly sum of the parent module.

use super::{lane_id, max, shfl_xor};

/// Maximum over the whole warp by an xor butterfly, offsets 16, 8, 4, 2, 1: five
/// `shfl.sync.bfly.b32` each followed by `max.f32` (CUDA `fmaxf`). The maximum is exact, so
/// every lane ends with the same bits whatever the order.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn warp_max(mut v: f32) -> f32 {
    let mut offset = 16;
    while offset > 0 {
        v = max(v, shfl_xor(u32::MAX, v, offset));
        offset >>= 1;
    }
    v
}

/// One step of [`group8_reduce_scatter`]: the lanes `l` and `l ^ bit` each keep one half of
/// their values (the lower half where `l & bit` is 0), send the other half to their partner, and
/// add what they receive to what they keep: `keep + shfl_xor(send, bit)` per value,
/// `shfl.sync.bfly.b32` then `add.rn.f32`.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
unsafe fn exchange_halves<const HALF: usize>(v: &[f32], bit: u32) -> [f32; HALF] {
    let upper = lane_id() & bit != 0;
    core::array::from_fn(|j| {
        let (keep, send) = if upper {
            (v[j + HALF], v[j])
        } else {
            (v[j], v[j + HALF])
        };
        keep + shfl_xor(u32::MAX, send, bit)
    })
}

/// Sums 32 values over each group of 8 lanes (`8k..8k+8`), leaving lane `8k + m` with the sums
/// of values `4m..4m+4`: three halving exchanges (offsets 4, 2, 1), 28 shuffles in all, where
/// 32 separate butterflies would take 96.
///
/// Each sum is the tree of an 8-lane butterfly: at offset 4 the lanes `l` and `l ^ 4` add their
/// values, then pairs of those at offset 2, then at offset 1. Its bits are those of a butterfly
/// sum of the value alone, whichever lane ends with it.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn group8_reduce_scatter(v: [f32; 32]) -> [f32; 4] {
    let v: [f32; 16] = exchange_halves(&v, 4);
    let v: [f32; 8] = exchange_halves(&v, 2);
    exchange_halves(&v, 1)
}

/// The warp sums of `V` values at once (`V` is 1 or 4), leaving lane `l` with the sum of value
/// `l / (32 / V)` over the warp: for `V = 4` two halving exchanges (offsets 16 and 8, as
/// [`group8_reduce_scatter`]'s) and a butterfly over offsets 4, 2, 1, six shuffles where four
/// butterflies take twenty; for `V = 1` the butterfly 16, 8, 4, 2, 1 (`super::warp_sum`).
///
/// Each sum is the tree of a 32-lane butterfly of its value alone: at offset 16 the lanes `l`
/// and `l ^ 16` add their values, then pairs of those at offset 8, and so on, the same pairs
/// whichever lane adds them; so its bits are those of `super::warp_sum` of the value.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn warp_sum_scatter<const V: usize>(v: [f32; V]) -> f32 {
    const { assert!(V == 1 || V == 4) };
    let mut sum = if V == 4 {
        let pairs: [f32; 2] = exchange_halves(&v, 16);
        exchange_halves::<1>(&pairs, 8)[0]
    } else {
        v[0]
    };
    let mut offset = 16 / V as u32;
    while offset > 0 {
        sum += shfl_xor(u32::MAX, sum, offset);
        offset >>= 1;
    }
    sum
}
