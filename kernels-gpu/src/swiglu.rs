//! SwiGLU, between a decode step's gate/up GEMVs and its down GEMV: `y = silu(g) * u` over `n`
//! floats. Thread `t` of the grid takes the `F32x4` group `t` while `t < n / 4`, thread `n / 4`
//! the last `n % 4` values one at a time.
//!
//! Per value, the .cu's `g * (1.0f / (1.0f + expf(-g))) * u` in its order: `expf_add(-g, 1)`
//! (NVCC contracts `1.0f + expf(-g)` with expf's last multiply into one `fma`), `rcp.rn`, then
//! `(g * r) * u`. A reciprocal, not `g / den`: IEEE division's slow path takes a zero dividend
//! (a batch's padding rows); `rcp.rn` takes its own only from `den >= 2^126` (g below about
//! -87.3, where the reciprocal is subnormal) and for NaN: perf-notes (the SwiGLU family) has its
//! cost. Non-finite values: `docs/abi.md`.

use crate::abi::F32x4;
#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::{Kernel, KernelSpec};
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::kernel;

/// Threads per block of `swiglu`.
pub const BLOCK: u32 = 256;

/// Blocks of `swiglu` for `n` values: a thread per `F32x4` group, and one for the ragged tail.
pub const fn grid(n: u32) -> u32 {
    (n / 4 + !n.is_multiple_of(4) as u32).div_ceil(BLOCK)
}

/// `silu(g) * u` of one value (module docs); the GEMV's GLU epilogue applies the same.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn swiglu1(g: f32, u: f32) -> f32 {
    g * rcp(expf_add(-g, 1.0)) * u
}

/// [`swiglu1`] of each of four values; `norm_q8::swiglu_q8_1` applies the same.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn swiglu4(g: F32x4, u: F32x4) -> F32x4 {
    F32x4 {
        x: swiglu1(g.x, u.x),
        y: swiglu1(g.y, u.y),
        z: swiglu1(g.z, u.z),
        w: swiglu1(g.w, u.w),
    }
}

/// `y = silu(g) * u` for `n` values.
///
/// # Launch
/// grid [`grid`]`(n)`, block [`BLOCK`]; `n` from 1 to `i32::MAX`.
///
/// # Safety
/// `g`, `u` and `y` hold `n` floats and are 16-byte aligned.
#[kernel]
pub unsafe fn swiglu(g: *const F32x4, u: *const F32x4, y: *mut F32x4, n: i32) {
    crate::chain_entry();
    let t = block_idx_x() * block_dim_x() + thread_idx_x();
    let n4 = n as u32 / 4;
    if t < n4 {
        let (a, b) = (load_nc(g.add(t as usize)), load_nc(u.add(t as usize)));
        *y.add(t as usize) = swiglu4(a, b);
    } else if t == n4 {
        let (g, u, y) = (g as *const f32, u as *const f32, y as *mut f32);
        for i in 4 * n4..n as u32 {
            *y.add(i as usize) = swiglu1(*g.add(i as usize), *u.add(i as usize));
        }
    }
}

/// The family's kernels, for the tests (see [`KernelSpec`]).
#[cfg(not(target_arch = "nvptx64"))]
pub const KERNELS: &[KernelSpec] = &[KernelSpec {
    name: swiglu::NAME,
    max_block: BLOCK,
    requires: &["fma.rn.f32", "ex2.approx.ftz.f32", "rcp.rn.f32"],
    forbids: &["div.rn.f32"],
    only_on: None,
}];
