//! Shared memory by address in the shared window: the launch's dynamic shared memory
//! ([`dynamic_shared`], CUDA's `extern __shared__` array) and loads and stores of the widths the
//! kernels use (a `float4` as one 16-byte `ld.shared.v4` / `st.shared.v4`, as NVCC emits for it;
//! f32, 32- and 16-bit integers), and statically sized arrays ([`static_shared!`]).

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

/// `st.shared.v2.f32` (a `float2` store): `x` at `addr`, `y` after it.
///
/// # Safety
/// `addr` is an 8-byte-aligned shared address of two floats inside memory the launch has.
#[inline(always)]
pub unsafe fn st_shared_v2(addr: u32, x: f32, y: f32) {
    core::arch::asm!(
        "st.shared.v2.f32 [{a}], {{{x}, {y}}};",
        a = in(reg32) addr,
        x = in(reg32) x,
        y = in(reg32) y,
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

/// `shared_address!(SYMBOL)`: `mov.u32 %r, SYMBOL`, the address in the shared window of a
/// `.shared` array the module declares.
macro_rules! shared_address {
    ($symbol:ident) => {{
        let base: u32;
        // SAFETY: reads the address of the declared symbol.
        unsafe {
            core::arch::asm!(
                concat!("mov.u32 {b}, ", stringify!($symbol), ";"),
                b = out(reg32) base,
                options(pure, nomem, nostack),
            )
        };
        base
    }};
}
pub(crate) use shared_address;

/// `static_shared!(fn name = SYMBOL: TYPE[LEN])` declares `.shared .align 16 .TYPE SYMBOL[LEN]`
/// (a statically sized `__shared__` array; rustc has no attribute for one, and ptxas allocates it
/// in every kernel that names it) and `fn name() -> u32`, `mov.u32 %r, SYMBOL`: the array's
/// address in the shared window, for the loads and stores above. `TYPE` is the PTX element type
/// the array is declared with (`b8` for bytes, `f32`), `LEN` its element count.
macro_rules! static_shared {
    ($(#[$doc:meta])* fn $name:ident = $symbol:ident: $ty:ident[$len:expr]) => {
        core::arch::global_asm!(
            concat!(
                ".shared .align 16 .",
                stringify!($ty),
                " ",
                stringify!($symbol),
                "[{len}];"
            ),
            len = const $len,
        );

        $(#[$doc])*
        #[inline(always)]
        fn $name() -> u32 {
            $crate::device::shared_address!($symbol)
        }
    };
}
pub(crate) use static_shared;

core::arch::global_asm!(".extern .shared .align 16 .b8 DYNAMIC_SHARED[];");

/// `mov.u32 %r, DYNAMIC_SHARED`: the address, in the shared window, of the launch's dynamic
/// shared memory (CUDA's `extern __shared__` array), whose size the launcher passes per launch.
#[inline(always)]
pub fn dynamic_shared() -> u32 {
    shared_address!(DYNAMIC_SHARED)
}

/// `st.shared.f32 [addr], v`.
///
/// # Safety
/// `addr` is a 4-byte-aligned address of the shared window inside memory the launch has, and
/// no other thread reads it before the next barrier.
#[inline(always)]
pub unsafe fn st_shared_f32(addr: u32, v: f32) {
    core::arch::asm!(
        "st.shared.f32 [{a}], {v};",
        a = in(reg32) addr,
        v = in(reg32) v,
        options(nostack),
    );
}

/// `ld.shared.f32 v, [addr]`.
///
/// # Safety
/// `addr` is a 4-byte-aligned address of the shared window inside memory the launch has,
/// written before the last barrier.
#[inline(always)]
pub unsafe fn ld_shared_f32(addr: u32) -> f32 {
    let v: f32;
    core::arch::asm!(
        "ld.shared.f32 {v}, [{a}];",
        a = in(reg32) addr,
        v = out(reg32) v,
        options(nostack, readonly),
    );
    v
}

/// `ldmatrix.sync.aligned.m8n8.x4.shared.b16` (CUDA `ldmatrix` through inline PTX): four 8 x 8
/// matrices of 16-bit elements, lanes `8i..8i + 8` giving the addresses of matrix `i`'s eight
/// rows (16 bytes each); lane `l` receives the 32-bit word `l % 4` of row `l / 4` of each. Taken
/// as 8 x 4 matrices of 32-bit words, that is an mma fragment of tf32 values in one load.
///
/// # Safety
/// All 32 lanes of the warp execute it together; each lane's `addr` is a 16-byte-aligned
/// address of the shared window inside memory the launch has, written before the last barrier.
#[inline(always)]
pub unsafe fn ldmatrix_x4(addr: u32) -> [u32; 4] {
    let (v0, v1, v2, v3): (u32, u32, u32, u32);
    core::arch::asm!(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{v0}, {v1}, {v2}, {v3}}}, [{a}];",
        a = in(reg32) addr,
        v0 = out(reg32) v0,
        v1 = out(reg32) v1,
        v2 = out(reg32) v2,
        v3 = out(reg32) v3,
        options(nostack, readonly),
    );
    [v0, v1, v2, v3]
}

/// `ld.shared.v2.u32 {x, y}, [addr]`: 8 bytes in one load.
///
/// # Safety
/// As [`ld_shared_u32`], with an 8-byte-aligned `addr`.
#[inline(always)]
pub unsafe fn ld_shared_v2_u32(addr: u32) -> [u32; 2] {
    let (x, y): (u32, u32);
    core::arch::asm!(
        "ld.shared.v2.u32 {{{x}, {y}}}, [{a}];",
        a = in(reg32) addr,
        x = out(reg32) x,
        y = out(reg32) y,
        options(nostack, readonly),
    );
    [x, y]
}

/// `ld.shared.u16 v, [addr]`.
///
/// # Safety
/// As [`ld_shared_u32`], with a 2-byte-aligned `addr`.
#[inline(always)]
pub unsafe fn ld_shared_u16(addr: u32) -> u16 {
    let v: u16;
    core::arch::asm!(
        "ld.shared.u16 {v}, [{a}];",
        a = in(reg32) addr,
        v = out(reg16) v,
        options(readonly, nostack),
    );
    v
}

/// `st.shared.u16 [addr], v`.
///
/// # Safety
/// `addr` is a 2-byte-aligned shared address inside memory the launch has, which no other
/// thread accesses before the next barrier.
#[inline(always)]
pub unsafe fn st_shared_u16(addr: u32, v: u16) {
    core::arch::asm!(
        "st.shared.u16 [{a}], {v};",
        a = in(reg32) addr,
        v = in(reg16) v,
        options(nostack),
    );
}
