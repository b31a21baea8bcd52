//! Thread and block indices, barriers, the f32 arithmetic and conversions, warp and block sums,
//! read-only loads, and what the kernels' entries declare (launch bounds, dependent launches).

use crate::*;
use core::arch::nvptx;

extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.bfly.f32"]
    fn shfl_sync_bfly_f32(mask: u32, value: f32, lane_mask: u32, clamp: u32) -> f32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn shfl_sync_idx_i32(mask: u32, value: u32, lane: u32, clamp: u32) -> u32;
    #[link_name = "llvm.nvvm.rsqrt.approx.f"]
    fn rsqrt_approx_f32(x: f32) -> f32;
    #[link_name = "llvm.nvvm.add.rz.f"]
    fn add_rz_f32(a: f32, b: f32) -> f32;
    #[link_name = "llvm.nvvm.f2i.rz"]
    fn f2i_rz(x: f32) -> i32;
}

/// The entry that calls it launches at most `N` threads a block, one block an SM being enough
/// (CUDA `__launch_bounds__(N, 1)`): [`launch_bounds`]`::<N, 1>`.
#[inline(always)]
pub fn max_threads<const N: u32>() {
    launch_bounds::<N, 1>();
}

/// The entry that calls it launches at most `N` threads a block and wants `B` blocks an SM at
/// once (CUDA `__launch_bounds__(N, B)`): rustc cannot write `.maxntid`, so this leaves a marker
/// comment in the PTX, and the build turns it into `.maxntid N, 1, 1` and `.minnctapersm B` on
/// the entry (the builder's launch bounds). ptxas then keeps the entry within the registers `B`
/// blocks of `N` threads may have; without it, ptxas may take more, and the launch fails for
/// want of registers (or `B` blocks no longer fit).
#[inline(always)]
pub fn launch_bounds<const N: u32, const B: u32>() {
    // SAFETY: a comment; it emits no instruction.
    unsafe {
        core::arch::asm!(
            "// ferrocuda.maxntid {n} {b}",
            n = const N,
            b = const B,
            options(nomem, nostack)
        )
    };
}

/// `griddepcontrol.wait` (CUDA `cudaGridDependencySynchronize()`): in a kernel launched as a
/// programmatic dependent of the stream's previous kernel, waits until that kernel has finished
/// and its writes are visible; in any other launch, returns at once. Everything the previous
/// kernel writes is read after it. Below sm_90, which has no programmatic launches, nothing: a
/// kernel there always starts after its predecessor has finished.
#[inline(always)]
pub fn grid_dependency_wait() {
    // SAFETY: waiting has no preconditions; the asm is a compiler memory barrier, so no load
    // moves above it.
    #[cfg(target_feature = "sm_90")]
    unsafe {
        core::arch::asm!("griddepcontrol.wait;", options(nostack))
    };
}

/// `griddepcontrol.launch_dependents` (CUDA `cudaTriggerProgrammaticLaunchCompletion()`): this
/// block lets the stream's next kernel, if launched as a programmatic dependent, start before
/// this one has finished (that kernel still waits in [`grid_dependency_wait`] for the data).
/// Below sm_90 nothing, as there.
#[inline(always)]
pub fn launch_dependents() {
    // SAFETY: a scheduling hint; it orders no memory.
    #[cfg(target_feature = "sm_90")]
    unsafe {
        core::arch::asm!("griddepcontrol.launch_dependents;", options(nomem, nostack))
    };
}

/// `mov.u32 %r, %tid.x` (CUDA `threadIdx.x`).
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_thread_idx_x() as u32 }
}

/// `mov.u32 %r, %ctaid.x` (CUDA `blockIdx.x`).
#[inline(always)]
pub fn block_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_idx_x() as u32 }
}

/// `mov.u32 %r, %ctaid.y` (CUDA `blockIdx.y`).
#[inline(always)]
pub fn block_idx_y() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_idx_y() as u32 }
}

/// `mov.u32 %r, %ntid.x` (CUDA `blockDim.x`).
#[inline(always)]
pub fn block_dim_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_dim_x() as u32 }
}

/// `mov.u32 %r, %nctaid.x` (CUDA `gridDim.x`).
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_grid_dim_x() as u32 }
}

/// `bar.sync 0` (CUDA `__syncthreads()`).
///
/// # Safety
/// Every thread of the block must reach the same barrier.
#[inline(always)]
pub unsafe fn sync_threads() {
    nvptx::_syncthreads()
}

/// `bar.sync id, threads` (CUDA `asm("bar.sync %0, %1;" ...)`, a named barrier): the
/// `threads` threads that reach barrier `id` meet, the rest of the block going on (a warpgroup
/// alone, while another works elsewhere).
///
/// # Safety
/// `id` is in 1..16 (0 is [`sync_threads`]'s) and `threads` a multiple of 32, the whole warps
/// that reach barrier `id`, and no other warp uses `id` meanwhile.
#[inline(always)]
pub unsafe fn named_barrier_sync(id: u32, threads: u32) {
    core::arch::asm!(
        "bar.sync {id}, {n};",
        id = in(reg32) id,
        n = in(reg32) threads,
        options(nostack),
    );
}

/// `trap`: aborts the kernel.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` ends the grid; it has no preconditions.
    unsafe { nvptx::trap() }
}

/// `shfl.sync.bfly.b32 d, v, lane_mask, 31, mask` (CUDA `__shfl_xor_sync(mask, v, lane_mask)`).
///
/// # Safety
/// Every lane named in `mask` must execute this same call.
#[inline(always)]
pub unsafe fn shfl_xor(mask: u32, value: f32, lane_mask: u32) -> f32 {
    shfl_sync_bfly_f32(mask, value, lane_mask, 31)
}

/// `shfl.sync.idx.b32 d, v, lane, 31, mask` (CUDA `__shfl_sync(mask, v, lane)`): lane `lane`'s
/// `value`.
///
/// # Safety
/// Every lane named in `mask` must execute this same call.
#[inline(always)]
pub unsafe fn shfl_idx(mask: u32, value: f32, lane: u32) -> f32 {
    f32::from_bits(shfl_sync_idx_i32(mask, value.to_bits(), lane, 31))
}

/// Lane 0's `value` in every lane: `shfl.sync.idx.b32 d, v, 0, 31, 0xffffffff` (CUDA
/// `__shfl_sync(~0u, v, 0)`). For a value the warp's lanes share, so that ptxas sees it is one a
/// warp and may keep what is formed from it in uniform registers (`wgmma`'s descriptors).
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn warp_broadcast(value: u32) -> u32 {
    shfl_sync_idx_i32(u32::MAX, value, 0, 31)
}

/// Sum over the whole warp by an xor butterfly, offsets 16, 8, 4, 2, 1: five
/// `shfl.sync.bfly.b32` each followed by `add.rn.f32`. Every lane ends with the same bits, since
/// each step adds the same two values in either order.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn warp_sum(v: f32) -> f32 {
    butterfly_sum(v, 16)
}

/// The xor butterfly sum from offset `from` (a power of two) down to 1, full member mask: over
/// each group of `2 * from` lanes, every lane of which ends with the same bits.
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub(crate) unsafe fn butterfly_sum(mut v: f32, from: u32) -> f32 {
    let mut offset = from;
    while offset > 0 {
        v += shfl_xor(u32::MAX, v, offset);
        offset >>= 1;
    }
    v
}

/// Maximum over each 8-lane group `8k..8k+8` (offsets 4, 2, 1): `shfl.sync.bfly.b32` with member
/// mask `mask`, then `max.f32` (CUDA `fmaxf`).
///
/// # Safety
/// Every lane of `mask` calls it, and `mask` holds the calling lane's group.
#[inline(always)]
unsafe fn group8_max_in(mask: u32, mut v: f32) -> f32 {
    let mut offset = 4;
    while offset > 0 {
        v = v.max(shfl_xor(mask, v, offset));
        offset >>= 1;
    }
    v
}

/// Maximum over the 8 lanes `8k..8k+8` of the warp that call it, with the group's member mask.
///
/// # Safety
/// All 8 lanes of the calling lane's group must call it.
#[inline(always)]
pub unsafe fn group8_max(v: f32) -> f32 {
    group8_max_in(0xffu32 << (lane_id() & 24), v)
}

/// [`group8_max`] of every 8-lane group of the warp at once, with the full member mask: the
/// same shuffles and `max.f32` in the same order, so the same bits in each group, without the
/// check of the member mask against the lanes that run it that ptxas emits for a mask it cannot
/// see is the warp's (`MATCH.ANY`, `REDUX.OR`, `VOTEU.ANY` and a divergence branch per call).
///
/// # Safety
/// All 32 lanes of the warp must call it.
#[inline(always)]
pub unsafe fn group8_max_warp(v: f32) -> f32 {
    group8_max_in(u32::MAX, v)
}

/// The lane within the warp, `tid.x & 31` (blocks are whole warps in every launch geometry).
#[inline(always)]
pub fn lane_id() -> u32 {
    thread_idx_x() & 31
}

/// `rsqrt.approx.f32` (CUDA `rsqrtf` without fast-math).
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    // SAFETY: a pure arithmetic intrinsic.
    unsafe { rsqrt_approx_f32(x) }
}

/// `fma.rn.f32` (what NVCC contracts `c + a * b` into).
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}

/// `abs.f32` (CUDA `fabsf`).
#[inline(always)]
pub fn abs(x: f32) -> f32 {
    x.abs()
}

/// `max.f32` (CUDA `fmaxf`; a NaN operand yields the other operand).
#[inline(always)]
pub fn max(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// CUDA `roundf` (half away from zero), as NVCC expands it: `copysign.f32 t, v, 0.5`,
/// `add.rz.f32 s, v, t`, `cvt.rzi.f32.f32 r, s`. Adding ±0.5 toward zero and truncating rounds
/// halves away from zero without the double rounding a round-to-nearest add would bring.
#[inline(always)]
pub fn round_half_away(v: f32) -> f32 {
    // SAFETY: pure arithmetic intrinsics.
    unsafe { core::intrinsics::truncf32(add_rz_f32(v, 0.5f32.copysign(v))) }
}

/// `cvt.rzi.s32.f32` (CUDA `__float2int_rz`): truncates toward zero and, as PTX defines every
/// float-to-integer conversion, saturates to `i32`'s range and turns NaN into 0. Defined for
/// every input, unlike a C cast or Rust's `to_int_unchecked`, which the compilers may assume in
/// range.
#[inline(always)]
pub fn f32_to_i32_rz(v: f32) -> i32 {
    // SAFETY: a pure arithmetic intrinsic, defined for every input.
    unsafe { f2i_rz(v) }
}

/// `v` itself, through `mov.b32 v, v` in an `asm!` (CUDA's `asm("mov.b32 %0, %0;" : "+f"(v))`):
/// ptxas drops the move, but the compiler no longer knows where the value came from, so it
/// cannot fold an operation on it into the arms of the select that made it (see `norm_q8`'s
/// all-zero block).
#[inline(always)]
pub fn opaque(mut v: f32) -> f32 {
    // SAFETY: a move of a register onto itself.
    unsafe {
        core::arch::asm!("mov.b32 {v}, {v};", v = inout(reg32) v, options(pure, nomem, nostack))
    };
    v
}

/// `cvt.rn.f32.s32` (a C cast of int to float).
#[inline(always)]
pub fn i32_to_f32(v: i32) -> f32 {
    v as f32
}

crate::static_shared! {
    /// [`block_sum`]'s scratch: one f32 per virtual warp.
    fn block_reduce_scratch = BLOCK_REDUCE_SCRATCH: f32[32] as f32
}

/// Sum over the `VIRTUAL_PER_THREAD * blockDim.x` virtual threads of the block, where this thread
/// holds virtual threads `tid.x + k * blockDim.x` (`k < VIRTUAL_PER_THREAD`) and `parts[k]` is the
/// value of the `k`-th.
///
/// The tree is a function of the virtual threads alone, never of how they map onto real threads: a
/// butterfly over each virtual warp (32 consecutive virtual threads; virtual warp `u` is real warp
/// `u % nwarps`'s `k = u / nwarps`-th part, lane for lane), the virtual warps' sums to shared
/// memory at index `u`, one barrier, then every warp reduces those sums (zeros past the last) with
/// a second butterfly, so all threads return the same bits without a second barrier. With
/// `VIRTUAL_PER_THREAD = 1` this is the usual block sum. A real warp's `VIRTUAL_PER_THREAD`
/// butterflies run as one [`warp_reduce_scatter`], which adds the same pairs in the same tree, and
/// lane `l` stores the sum of part `l / (32 / VIRTUAL_PER_THREAD)`.
///
/// # Safety
/// Every thread of the block calls it once per kernel; `blockDim.x` is a multiple of 32,
/// `VIRTUAL_PER_THREAD` 1 or 4 and `VIRTUAL_PER_THREAD * blockDim.x` at most 1024.
#[inline(always)]
pub unsafe fn block_sum<const VIRTUAL_PER_THREAD: usize>(parts: [f32; VIRTUAL_PER_THREAD]) -> f32 {
    let lane = lane_id();
    let warp = thread_idx_x() >> 5;
    let nwarps = block_dim_x() >> 5;
    let mut held = [0.0f32; 32];
    unroll::<VIRTUAL_PER_THREAD>(|k| held[k] = parts[k]);
    let sum = warp_reduce_scatter(held, VIRTUAL_PER_THREAD);
    let lanes_per_part = 32 / VIRTUAL_PER_THREAD as u32;
    if lane % lanes_per_part == 0 {
        block_reduce_scratch()
            .add(warp + lane / lanes_per_part * nwarps)
            .store(sum);
    }
    sync_threads();
    let partial = if lane < VIRTUAL_PER_THREAD as u32 * nwarps {
        block_reduce_scratch().add(lane).load()
    } else {
        0.0
    };
    warp_sum(partial)
}

/// `ld.global.nc.v4.f32` (what NVCC emits for a `float4` read through `const float4 *
/// __restrict__`): the read-only data path, for inputs no thread of the grid writes.
///
/// # Safety
/// `p` is a 16-byte-aligned global address of four readable floats that the grid never writes.
#[inline(always)]
pub unsafe fn load_nc(p: *const crate::F32x4) -> crate::F32x4 {
    let (x, y, z, w): (f32, f32, f32, f32);
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.v4.f32 {{{x}, {y}, {z}, {w}}}, [g]; }}",
        p = in(reg64) p,
        x = out(reg32) x,
        y = out(reg32) y,
        z = out(reg32) z,
        w = out(reg32) w,
        options(pure, readonly, nostack),
    );
    crate::F32x4 { x, y, z, w }
}

/// [`load_nc`] if `load`, as one predicated instruction (NVCC's `if (i < n) v = p[i];`): with the
/// guard inside the instruction the loads of a trip stay straight-line code, which ptxas issues
/// back to back, where a branch around each `asm!` lets LLVM thread the guards of later uses
/// through them into a tree of branches between the loads. Without `load` the values are
/// unspecified (the registers are not written).
///
/// Not `pure`: LLVM would be free to sink a pure load into the block of its only use, and does
/// so for a guard it can fold (the first group of `quantize_q8_1`, whose use sits behind the same
/// guard), which puts that load behind a branch and after the others.
///
/// # Safety
/// As [`load_nc`] if `load`; otherwise none (nothing is read, and `p` may be any address).
#[inline(always)]
pub unsafe fn load_nc_if(load: bool, p: *const crate::F32x4) -> crate::F32x4 {
    let (x, y, z, w): (f32, f32, f32, f32);
    core::arch::asm!(
        "{{ .reg .pred p; .reg .u64 g; setp.ne.u32 p, {c}, 0; cvta.to.global.u64 g, {p}; @p ld.global.nc.v4.f32 {{{x}, {y}, {z}, {w}}}, [g]; }}",
        c = in(reg32) load as u32,
        p = in(reg64) p,
        x = out(reg32) x,
        y = out(reg32) y,
        z = out(reg32) z,
        w = out(reg32) w,
        options(readonly, nostack),
    );
    crate::F32x4 { x, y, z, w }
}
