//! Hopper's warpgroup tensor cores (`wgmma`, sm_90a only): four warps issue one asynchronous
//! m64nNk8 product whose `A` comes from their registers and whose `B` is read from shared memory
//! through a descriptor; fences, commit groups and waits order them against the registers and
//! shared memory around them. With `setmaxnreg` and named barriers, what a warp-specialised
//! kernel (a producer warpgroup beside consumer warpgroups) is made of.
//!
//! The wrappers are not `pure`, for `mma`'s reason (`crate::mma`): a `.sync.aligned` instruction
//! must be executed by every thread of the warpgroup where the source puts it.

use crate::Shared;

/// A `wgmma` of one `N` (`$ptx`, `d += a b` on the warpgroup's 64 x `N` f32 accumulator of
/// `N / 2` registers a thread): every width has this shape and differs in its registers only.
macro_rules! wgmma_tf32 {
    ($(#[$doc:meta])* $name:ident, $n:literal, $regs:literal, [$first:literal $(, $rest:literal)*]) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// All 128 threads of the warpgroup execute it together, after a [`wgmma_fence`] that
        /// follows the last write of `d`'s or `a`'s registers; `b` describes `K`-major tf32 data
        /// in shared memory that nothing writes until the commit group holding this product has
        /// been waited for ([`wgmma_wait_group`]), and `d` is not read before then.
        #[inline(always)]
        pub unsafe fn $name(d: &mut [f32; $regs], a: [u32; 4], b: u64) {
            core::arch::asm!(
                concat!(
                    "wgmma.mma_async.sync.aligned.m64n", $n, "k8.f32.tf32.tf32 {{",
                    "{", $first, "}", $(",{", $rest, "}",)*
                    "}}, {{{a0},{a1},{a2},{a3}}}, {b}, 1, 1, 1;"
                ),
                inout(reg32) d[$first], $(inout(reg32) d[$rest],)*
                a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                b = in(reg64) b,
                options(nostack),
            );
        }
    };
}

wgmma_tf32!(
    /// `wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 d, a, b, 1, 1, 1`: `d += a b`, `a`
    /// the warpgroup's 64 x 8 tf32 fragment in registers (warp `w` holds rows `16 w..16 w + 16`
    /// as `mma.sync` m16n8k8 holds its `A`), `b` 8 x 16 by descriptor.
    wgmma_tf32_n16, 16, 8, [0, 1, 2, 3, 4, 5, 6, 7]
);
wgmma_tf32!(
    /// [`wgmma_tf32_n16`] for a 64 x 32 accumulator.
    wgmma_tf32_n32,
    32,
    16,
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
);
wgmma_tf32!(
    /// [`wgmma_tf32_n16`] for a 64 x 64 accumulator.
    wgmma_tf32_n64,
    64,
    32,
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31
    ]
);

/// The descriptor of `K`-major data without swizzle at `start`: 8 x 4 core matrices of 32-bit
/// elements (128 contiguous bytes each), `K`-adjacent ones 128 bytes apart, the next 8 rows'
/// `stride` bytes on (PTX ISA, "Matrix Descriptor Format").
#[inline(always)]
pub fn wgmma_desc_k_major<T>(start: Shared<T>, stride: u32) -> u64 {
    let field = |bytes: u32| ((bytes >> 4) & 0x3fff) as u64;
    field(start.addr()) | (field(128) << 16) | (field(stride) << 32)
}

/// `wgmma.fence.sync.aligned`: the registers written before it are what the next `wgmma` reads.
///
/// # Safety
/// All threads of the warpgroup execute it together.
#[inline(always)]
pub unsafe fn wgmma_fence() {
    core::arch::asm!("wgmma.fence.sync.aligned;", options(nostack));
}

/// `wgmma.commit_group.sync.aligned`: the `wgmma`s issued since the last commit form a group.
///
/// # Safety
/// All threads of the warpgroup execute it together.
#[inline(always)]
pub unsafe fn wgmma_commit_group() {
    core::arch::asm!("wgmma.commit_group.sync.aligned;", options(nostack));
}

/// `wgmma.wait_group.sync.aligned N`: waits until at most `PENDING` commit groups are in flight,
/// after which the older groups' accumulators can be read and their operands rewritten.
///
/// # Safety
/// All threads of the warpgroup execute it together.
#[inline(always)]
pub unsafe fn wgmma_wait_group<const PENDING: u32>() {
    core::arch::asm!("wgmma.wait_group.sync.aligned {n};", n = const PENDING, options(nostack));
}

/// `setmaxnreg.inc.sync.aligned.u32 N`: this warpgroup's threads may use up to `N` registers
/// (a consumer taking what its producer gave back).
///
/// # Safety
/// All threads of the warpgroup execute it together; `N` is a multiple of 8 in 24..=256 that the
/// block's register file can give every warpgroup asking for it.
#[inline(always)]
pub unsafe fn setmaxnreg_inc<const N: u32>() {
    core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack));
}

/// `setmaxnreg.dec.sync.aligned.u32 N`: this warpgroup's threads give back all registers above
/// `N`.
///
/// # Safety
/// All threads of the warpgroup execute it together; `N` is a multiple of 8 in 24..=256 and at
/// least what the code after it needs (the kernel's register count as built).
#[inline(always)]
pub unsafe fn setmaxnreg_dec<const N: u32>() {
    core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack));
}
