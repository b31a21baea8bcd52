//! A kernel crate outside ferrocuda's own, written only against its public crates:
//! `ferrocuda-abi` (`#[kernel]`, the kernel table) and `ferrocuda-device` (the instruction
//! wrappers and `F32x4`). Like `kernels-gpu` it builds twice: for nvptx64 `axpby` is a PTX entry;
//! on the host the same item is its typed launch marker, beside the geometry both sides share.
//!
//! `axpby`: `z = a x + b y` over `n` floats. Thread `t` of the grid takes the `F32x4` group `t`
//! while `t < n / 4`, thread `n / 4` the last `n % 4` values one at a time. Per value, the .cu's
//! `fmaf(a, x, b * y)`: `b * y` rounded (`mul.rn.f32`), then `a * x` added to it exactly and
//! rounded once (`fma.rn.f32`). So `a x` never overflows on its own: `a = 1.5, x = f32::MAX,
//! b = -0.75, y = f32::MAX` gives about `0.75 f32::MAX`, where `a * x + b * y` written out would
//! give infinity. NaN in, NaN out; infinities as IEEE arithmetic gives them.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use ferrocuda_abi::kernel;
#[cfg(not(target_arch = "nvptx64"))]
use ferrocuda_abi::{Kernel, KernelSpec};
use ferrocuda_device::F32x4;
#[cfg(target_arch = "nvptx64")]
use ferrocuda_device::{block_dim_x, block_idx_x, fma, load_nc, thread_idx_x};

/// Threads per block of `axpby`.
pub const BLOCK: u32 = 256;

/// Blocks of `axpby` for `n` values: a thread per `F32x4` group, and one for the ragged tail.
pub const fn grid(n: u32) -> u32 {
    (n / 4 + !n.is_multiple_of(4) as u32).div_ceil(BLOCK)
}

/// `a x + b y` of one value (module docs).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn axpby1(a: f32, x: f32, b: f32, y: f32) -> f32 {
    fma(a, x, b * y)
}

/// `z = a x + b y` for `n` values.
///
/// # Launch
/// grid [`grid`]`(n)`, block [`BLOCK`]; `n` from 1 to `i32::MAX`.
///
/// # Safety
/// `x`, `y` and `z` hold `n` floats and are 16-byte aligned.
#[kernel]
pub unsafe fn axpby(x: *const F32x4, y: *const F32x4, z: *mut F32x4, a: f32, b: f32, n: i32) {
    let t = block_idx_x() * block_dim_x() + thread_idx_x();
    let n4 = n as u32 / 4;
    if t < n4 {
        let (p, q) = (load_nc(x.add(t as usize)), load_nc(y.add(t as usize)));
        *z.add(t as usize) = F32x4 {
            x: axpby1(a, p.x, b, q.x),
            y: axpby1(a, p.y, b, q.y),
            z: axpby1(a, p.z, b, q.z),
            w: axpby1(a, p.w, b, q.w),
        };
    } else if t == n4 {
        let (x, y, z) = (x as *const f32, y as *const f32, z as *mut f32);
        for i in 4 * n4..n as u32 {
            *z.add(i as usize) = axpby1(a, *x.add(i as usize), b, *y.add(i as usize));
        }
    }
}

/// The crate's kernels, for the tests: the instructions each must and must not contain.
#[cfg(not(target_arch = "nvptx64"))]
pub const KERNELS: &[KernelSpec] = &[KernelSpec {
    name: axpby::NAME,
    max_block: BLOCK,
    requires: &["fma.rn.f32", "mul.rn.f32", "ld.global.nc.v4.f32"],
    forbids: &["add.rn.f32", "div.rn.f32"],
    only_on: None,
}];

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Nothing here can panic (raw pointers, unsigned arithmetic); a panic that slipped in still
    // stops the grid rather than running on with garbage.
    ferrocuda_device::trap()
}
