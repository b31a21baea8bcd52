//! CUDA's `#pragma unroll` over a constant trip count.
//!
//! LLVM unrolls a loop only while the unrolled body stays under its size threshold, and a loop it
//! leaves rolled that indexes an array of accumulators moves the array to local memory (`.local`
//! loads and stores in the hot loop). NVCC unrolls where the source says so. [`unroll`] gives the
//! Rust kernels the same guarantee: the body is called with each index as a constant, in
//! straight-line code, whatever its size.
//!
//! It is the kernels' one unroll idiom, for every loop that indexes a local array. A loop whose
//! unrolled body would be too large for LLVM to inline the closure (the flash weighted sum's mma
//! chain) stays a plain, rolled loop and says why at its site.

/// Runs `body(0)`, `body(1)`, ..., `body(N - 1)` in order, as straight-line code for `N <= 16`
/// (and as a plain loop beyond, which no kernel uses).
#[inline(always)]
pub fn unroll<const N: usize>(mut body: impl FnMut(usize)) {
    macro_rules! straight {
        ($($n:literal => [$($i:literal)*],)*) => {
            match N {
                $($n => { $(body($i);)* })*
                _ => (0..N).for_each(body),
            }
        };
    }
    straight! {
        0 => [],
        1 => [0],
        2 => [0 1],
        3 => [0 1 2],
        4 => [0 1 2 3],
        5 => [0 1 2 3 4],
        6 => [0 1 2 3 4 5],
        7 => [0 1 2 3 4 5 6],
        8 => [0 1 2 3 4 5 6 7],
        9 => [0 1 2 3 4 5 6 7 8],
        10 => [0 1 2 3 4 5 6 7 8 9],
        11 => [0 1 2 3 4 5 6 7 8 9 10],
        12 => [0 1 2 3 4 5 6 7 8 9 10 11],
        13 => [0 1 2 3 4 5 6 7 8 9 10 11 12],
        14 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13],
        15 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14],
        16 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15],
    }
}
