//! Global loads of read-only data, and asynchronous copies from global to shared memory.
//!
//! Global pointers arrive as generic addresses (kernel parameters) and are converted with
//! `cvta.to.global` inside each wrapper, as NVCC does for pointers it knows are global. Copies
//! land at a [`Shared`] handle, whose address is already in the shared window.

use super::Shared;

/// `ld.global.nc.v4.u32` (what NVCC emits for an `int4`/`uint4` read through a `const *
/// __restrict__` pointer): 16 bytes through the read-only path in one instruction, so that a
/// warp reads 512 consecutive bytes per instruction.
///
/// # Safety
/// `p` is a 16-byte-aligned global address of 16 readable bytes that the grid never writes.
#[inline(always)]
pub unsafe fn ld_nc_v4_u32(p: *const u8) -> [u32; 4] {
    let (x, y, z, w): (u32, u32, u32, u32);
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.v4.u32 {{{x}, {y}, {z}, {w}}}, [g]; }}",
        p = in(reg64) p,
        x = out(reg32) x,
        y = out(reg32) y,
        z = out(reg32) z,
        w = out(reg32) w,
        options(pure, readonly, nostack),
    );
    [x, y, z, w]
}

/// `ld.global.nc.v2.u32` (an `int2` read through a `const * __restrict__` pointer): 8 bytes
/// through the read-only path in one instruction.
///
/// # Safety
/// `p` is an 8-byte-aligned global address of 8 readable bytes that the grid never writes.
#[inline(always)]
pub unsafe fn ld_nc_v2_u32(p: *const u8) -> [u32; 2] {
    let (x, y): (u32, u32);
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.v2.u32 {{{x}, {y}}}, [g]; }}",
        p = in(reg64) p,
        x = out(reg32) x,
        y = out(reg32) y,
        options(pure, readonly, nostack),
    );
    [x, y]
}

/// `ld.global.nc.u16`: one 16-bit value through the read-only path.
///
/// # Safety
/// `p` is a 2-byte-aligned global address of 2 readable bytes that the grid never writes.
#[inline(always)]
pub unsafe fn ld_nc_u16(p: *const u8) -> u16 {
    let v: u16;
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.u16 {v}, [g]; }}",
        p = in(reg64) p,
        v = out(reg16) v,
        options(pure, readonly, nostack),
    );
    v
}

/// `ld.global.nc.f32` (a `const float * __restrict__` read).
///
/// # Safety
/// `p` is a 4-byte-aligned global address of a float that the grid never writes.
#[inline(always)]
pub unsafe fn ld_nc_f32(p: *const f32) -> f32 {
    let v: f32;
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.f32 {v}, [g]; }}",
        p = in(reg64) p,
        v = out(reg32) v,
        options(pure, readonly, nostack),
    );
    v
}

/// [`ld_nc_f32`] if `load`, as one predicated instruction (as [`super::load_nc_if`]); without
/// `load` the value is unspecified.
///
/// # Safety
/// As [`ld_nc_f32`] if `load`; otherwise none.
#[inline(always)]
pub unsafe fn ld_nc_f32_if(load: bool, p: *const f32) -> f32 {
    let v: f32;
    core::arch::asm!(
        "{{ .reg .pred p; .reg .u64 g; setp.ne.u32 p, {c}, 0; cvta.to.global.u64 g, {p}; @p ld.global.nc.f32 {v}, [g]; }}",
        c = in(reg32) load as u32,
        p = in(reg64) p,
        v = out(reg32) v,
        options(readonly, nostack),
    );
    v
}

/// `ld.global.v4.u32`: as [`ld_nc_v4_u32`] through the coherent path, for data a kernel before
/// this one writes while this one runs (a programmatic dependent's input): ptxas may move a
/// read-only load above `griddepcontrol.wait`, not this one.
///
/// # Safety
/// `p` is a 16-byte-aligned global address of 16 readable bytes.
#[inline(always)]
pub unsafe fn ld_v4_u32(p: *const u8) -> [u32; 4] {
    let (x, y, z, w): (u32, u32, u32, u32);
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.v4.u32 {{{x}, {y}, {z}, {w}}}, [g]; }}",
        p = in(reg64) p,
        x = out(reg32) x,
        y = out(reg32) y,
        z = out(reg32) z,
        w = out(reg32) w,
        options(readonly, nostack),
    );
    [x, y, z, w]
}

/// `ld.global.v2.u32`: [`ld_nc_v2_u32`] through the coherent path (see [`ld_v4_u32`]).
///
/// # Safety
/// `p` is an 8-byte-aligned global address of 8 readable bytes.
#[inline(always)]
pub unsafe fn ld_v2_u32(p: *const u8) -> [u32; 2] {
    let (x, y): (u32, u32);
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.v2.u32 {{{x}, {y}}}, [g]; }}",
        p = in(reg64) p,
        x = out(reg32) x,
        y = out(reg32) y,
        options(readonly, nostack),
    );
    [x, y]
}

/// `ld.global.f32`: [`ld_nc_f32`] through the coherent path (see [`ld_v4_u32`]).
///
/// # Safety
/// `p` is a 4-byte-aligned global address of a float.
#[inline(always)]
pub unsafe fn ld_f32(p: *const f32) -> f32 {
    let v: f32;
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.f32 {v}, [g]; }}",
        p = in(reg64) p,
        v = out(reg32) v,
        options(readonly, nostack),
    );
    v
}

/// `cp.async.cg.shared.global [dst], [src], 16` (sm_80+; ggml-cuda's `cp_async_cg_16`): copies
/// 16 bytes from global to shared memory without passing through registers, caching in L2
/// only. The copy completes at a later [`cp_async_wait_group`].
///
/// # Safety
/// `src` is a 16-byte-aligned global address of 16 readable bytes that the grid never writes;
/// `dst` a 16-byte-aligned shared address inside memory the launch has, which nothing reads or
/// writes until the copy's group has been waited for.
#[inline(always)]
pub unsafe fn cp_async_16<T>(dst: Shared<T>, src: *const u8) {
    let dst = dst.addr();
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {src}; cp.async.cg.shared.global [{dst}], [g], 16; }}",
        dst = in(reg32) dst,
        src = in(reg64) src,
        options(nostack),
    );
}

/// [`cp_async_16`] if `copy`, as one predicated instruction: a guard that stays inside the
/// instruction leaves no branch in the control flow, which a branch around the `asm!` would.
///
/// # Safety
/// As [`cp_async_16`] if `copy`; otherwise none (nothing is read or written).
#[inline(always)]
pub unsafe fn cp_async_16_if<T>(copy: bool, dst: Shared<T>, src: *const u8) {
    let dst = dst.addr();
    core::arch::asm!(
        "{{ .reg .pred p; .reg .u64 g; setp.ne.u32 p, {c}, 0; cvta.to.global.u64 g, {src}; @p cp.async.cg.shared.global [{dst}], [g], 16; }}",
        c = in(reg32) copy as u32,
        dst = in(reg32) dst,
        src = in(reg64) src,
        options(nostack),
    );
}

/// [`cp_async_16_if`] through L1 (`cp.async.ca`): for data that the SM's other blocks copy too,
/// such as an activation every block stages, which L1 then serves once an SM.
///
/// # Safety
/// As [`cp_async_16`] if `copy`; otherwise none (nothing is read or written).
#[inline(always)]
pub unsafe fn cp_async_ca_16_if<T>(copy: bool, dst: Shared<T>, src: *const u8) {
    let dst = dst.addr();
    core::arch::asm!(
        "{{ .reg .pred p; .reg .u64 g; setp.ne.u32 p, {c}, 0; cvta.to.global.u64 g, {src}; @p cp.async.ca.shared.global [{dst}], [g], 16; }}",
        c = in(reg32) copy as u32,
        dst = in(reg32) dst,
        src = in(reg64) src,
        options(nostack),
    );
}

/// `cp.async.ca.shared.global [dst], [src], 4` if `copy`, as one predicated instruction (sm_80+;
/// CUDA's `__pipeline_memcpy_async` of 4 bytes): the copy for data only 4-byte aligned, such as
/// one float of a row of floats.
///
/// # Safety
/// If `copy`: `src` is a 4-byte-aligned global address of 4 readable bytes that the grid never
/// writes; `dst` a 4-byte-aligned shared address inside memory the launch has, which nothing reads
/// or writes until the copy's group has been waited for.
#[inline(always)]
pub unsafe fn cp_async_4_if<T>(copy: bool, dst: Shared<T>, src: *const u8) {
    let dst = dst.addr();
    core::arch::asm!(
        "{{ .reg .pred p; .reg .u64 g; setp.ne.u32 p, {c}, 0; cvta.to.global.u64 g, {src}; @p cp.async.ca.shared.global [{dst}], [g], 4; }}",
        c = in(reg32) copy as u32,
        dst = in(reg32) dst,
        src = in(reg64) src,
        options(nostack),
    );
}

/// `cp.async.cg.shared.global [dst], [src], 16, bytes` with `bytes` 16 if `copy`, else 0: the
/// copy, or 16 zero bytes written to `dst` without reading `src` (the source size operand zero
/// fills what it does not copy).
///
/// # Safety
/// As [`cp_async_16`], except that `src` is not read without `copy`.
#[inline(always)]
pub unsafe fn cp_async_16_zfill<T>(copy: bool, dst: Shared<T>, src: *const u8) {
    let dst = dst.addr();
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {src}; cp.async.cg.shared.global [{dst}], [g], 16, {n}; }}",
        n = in(reg32) if copy { 16u32 } else { 0 },
        dst = in(reg32) dst,
        src = in(reg64) src,
        options(nostack),
    );
}

/// [`cp_async_16_zfill`] through L1 (`cp.async.ca`): for rows that a block's copies may gather
/// many times over, where each repeat then hits L1 instead of one L2 slice.
///
/// # Safety
/// As [`cp_async_16_zfill`].
#[inline(always)]
pub unsafe fn cp_async_ca_16_zfill<T>(copy: bool, dst: Shared<T>, src: *const u8) {
    let dst = dst.addr();
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {src}; cp.async.ca.shared.global [{dst}], [g], 16, {n}; }}",
        n = in(reg32) if copy { 16u32 } else { 0 },
        dst = in(reg32) dst,
        src = in(reg64) src,
        options(nostack),
    );
}

/// `st.global.v2.f32` (a `float2` store): `x` at `p`, `y` after it.
///
/// # Safety
/// `p` is an 8-byte-aligned global address of two writable floats.
#[inline(always)]
pub unsafe fn st_global_v2(p: *mut f32, x: f32, y: f32) {
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; st.global.v2.f32 [g], {{{x}, {y}}}; }}",
        p = in(reg64) p,
        x = in(reg32) x,
        y = in(reg32) y,
        options(nostack),
    );
}

/// `cp.async.commit_group` (CUDA `__pipeline_commit()`): closes the group of this thread's
/// copies issued since the last commit.
#[inline(always)]
pub fn cp_async_commit() {
    // SAFETY: only groups this thread's earlier copies.
    unsafe { core::arch::asm!("cp.async.commit_group;", options(nostack)) };
}

/// `cp.async.wait_group PENDING` (CUDA `__pipeline_wait_prior(PENDING)`): waits until at most
/// `PENDING` of this thread's committed groups are still in flight. It orders memory for this
/// thread only: other lanes see the copies after a [`sync_warp`].
#[inline(always)]
pub fn cp_async_wait_group<const PENDING: u32>() {
    // SAFETY: waiting has no preconditions; the asm is a compiler memory barrier, so no shared
    // memory access moves across it.
    unsafe { core::arch::asm!("cp.async.wait_group {n};", n = const PENDING, options(nostack)) };
}

/// `bar.warp.sync -1` (CUDA `__syncwarp()`): the warp's lanes meet, and their shared memory
/// accesses before it are visible to each other after it.
///
/// # Safety
/// All 32 lanes of the warp must reach it.
#[inline(always)]
pub unsafe fn sync_warp() {
    core::arch::asm!("bar.warp.sync -1;", options(nostack));
}

/// `prefetch.global.L2 [p]`: asks for the 128-byte line holding `p` to be brought into L2,
/// without a register to receive it. A hint: nothing is written and no value changes.
///
/// # Safety
/// `p` is an address inside a global allocation.
#[inline(always)]
pub unsafe fn prefetch_l2(p: *const u8) {
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; prefetch.global.L2 [g]; }}",
        p = in(reg64) p,
        options(nostack, readonly),
    );
}
