//! Access to dynamic shared memory beyond the parent module's f32 loads and stores: one 16-byte
//! `ld.shared.v4` / `st.shared.v4` per `float4`, as NVCC emits for a `float4` read or written
//! through an `extern __shared__` array, and 32-bit integers. Addresses are in the shared window,
//! from [`super::dynamic_shared`].

use crate::abi::F32x4;

/// `ld.shared.v4.f32 {x, y, z, w}, [addr]`.
///
/// # Safety
/// `addr` is 16-byte aligned, inside the launch's shared memory, and was written before the
/// last barrier (or by this thread).
#[inline(always)]
pub unsafe fn ld_shared_v4(addr: u32) -> F32x4 {
    let (x, y, z, w): (f32, f32, f32, f32);
    core::arch::asm!(
        "ld.shared.v4.f32 {{{x}, {y}, {z}, {w}}}, [{a}];",
        a = in(reg32) addr,
        x = out(reg32) x,
        y = out(reg32) y,
        z = out(reg32) z,
        w = out(reg32) w,
        options(nostack, readonly),
    );
    F32x4 { x, y, z, w }
}

/// `st.shared.v4.f32 [addr], {x, y, z, w}`.
///
/// # Safety
/// `addr` is 16-byte aligned and inside the launch's shared memory, and no other thread reads
/// or writes those 16 bytes before the next barrier.
#[inline(always)]
pub unsafe fn st_shared_v4(addr: u32, v: F32x4) {
    core::arch::asm!(
        "st.shared.v4.f32 [{a}], {{{x}, {y}, {z}, {w}}};",
        a = in(reg32) addr,
        x = in(reg32) v.x,
        y = in(reg32) v.y,
        z = in(reg32) v.z,
        w = in(reg32) v.w,
        options(nostack),
    );
}

/// `ld.shared.u32 v, [addr]`.
///
/// # Safety
/// As [`ld_shared_v4`], for 4 bytes.
#[inline(always)]
pub unsafe fn ld_shared_u32(addr: u32) -> u32 {
    let v: u32;
    core::arch::asm!(
        "ld.shared.u32 {v}, [{a}];",
        a = in(reg32) addr,
        v = out(reg32) v,
        options(nostack, readonly),
    );
    v
}

/// `st.shared.u32 [addr], v`.
///
/// # Safety
/// As [`st_shared_v4`], for 4 bytes.
#[inline(always)]
pub unsafe fn st_shared_u32(addr: u32, v: u32) {
    core::arch::asm!(
        "st.shared.u32 [{a}], {v};",
        a = in(reg32) addr,
        v = in(reg32) v,
        options(nostack),
    );
}
