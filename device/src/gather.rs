//! Reads of an index array that the grid never writes.

/// `ld.global.nc.u32` (what NVCC emits for an `int` read through `const int * __restrict__`):
/// the read-only data path, so that the lanes of a warp that read the same index share one
/// transaction.
///
/// # Safety
/// `p` is a 4-byte-aligned global address of an `i32` that the grid never writes.
#[inline(always)]
pub unsafe fn load_nc_i32(p: *const i32) -> i32 {
    let v: i32;
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.u32 {v}, [g]; }}",
        p = in(reg64) p,
        v = out(reg32) v,
        options(pure, readonly, nostack),
    );
    v
}
