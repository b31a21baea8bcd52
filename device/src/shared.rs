//! Shared memory through typed handles: [`Shared<T>`] is the address in the shared window of a
//! `T` (CUDA's `__shared__ T *`), made only by [`dynamic_shared`] (the launch's `extern
//! __shared__` array) and [`static_shared!`] (a statically sized array), moved by elements
//! ([`Shared::add`]) or, for packed byte layouts, by bytes ([`Shared::byte_add`]), and read and
//! written with the instruction NVCC emits for that type (a `float4` as one 16-byte
//! `ld.shared.v4` / `st.shared.v4`; f32, 32- and 16-bit integers, pairs).

use crate::F32x4;
use core::marker::PhantomData;

/// The shared-window address of a `T`. Copying it copies the address, never the value.
pub struct Shared<T> {
    addr: u32,
    ty: PhantomData<*const T>,
}

impl<T> Clone for Shared<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Shared<T> {}

impl<T> Shared<T> {
    #[inline(always)]
    const fn at(addr: u32) -> Self {
        Shared {
            addr,
            ty: PhantomData,
        }
    }

    /// The `T` `i` elements on (CUDA's `p + i`).
    #[inline(always)]
    pub fn add(self, i: u32) -> Self {
        Shared::at(self.addr + i * core::mem::size_of::<T>() as u32)
    }

    /// The `U` `bytes` on, for layouts packed by the byte (CUDA's
    /// `reinterpret_cast<U *>((char *) p + bytes)`).
    #[inline(always)]
    pub fn byte_add<U>(self, bytes: u32) -> Shared<U> {
        Shared::at(self.addr + bytes)
    }

    /// The same address as a `U` (CUDA's `reinterpret_cast<U *>(p)`).
    #[inline(always)]
    pub fn cast<U>(self) -> Shared<U> {
        Shared::at(self.addr)
    }

    /// The 4-byte-aligned word holding this address's first byte, and that byte's bit offset in
    /// it: how 2-byte-aligned data is read by words and funnel shifts.
    #[inline(always)]
    pub fn aligned_word(self) -> (Shared<u32>, u32) {
        (Shared::at(self.addr & !3), (self.addr & 3) * 8)
    }

    /// The address in the shared window, for the instruction wrappers.
    #[inline(always)]
    pub(crate) fn addr(self) -> u32 {
        self.addr
    }
}

/// The loads and stores of one element type, each the wrapper below of its width.
macro_rules! load_store {
    ($ty:ty, $load:ident, $store:ident) => {
        impl Shared<$ty> {
            /// # Safety
            /// As the wrapper it calls: aligned, inside the launch's shared memory, and written
            /// before the last barrier (or by this thread).
            #[inline(always)]
            pub unsafe fn load(self) -> $ty {
                $load(self.addr)
            }

            /// # Safety
            /// As the wrapper it calls: aligned, inside the launch's shared memory, and not
            /// accessed by another thread before the next barrier.
            #[inline(always)]
            pub unsafe fn store(self, v: $ty) {
                $store(self.addr, v)
            }
        }
    };
}

load_store!(F32x4, ld_shared_v4, st_shared_v4);
load_store!(f32, ld_shared_f32, st_shared_f32);
load_store!(u32, ld_shared_u32, st_shared_u32);
load_store!(u16, ld_shared_u16, st_shared_u16);

impl Shared<[u32; 2]> {
    /// `ld.shared.v2.u32`: 8 bytes in one load.
    ///
    /// # Safety
    /// As [`Shared::load`], 8-byte aligned.
    #[inline(always)]
    pub unsafe fn load(self) -> [u32; 2] {
        ld_shared_v2_u32(self.addr)
    }
}

impl Shared<[f32; 2]> {
    /// `st.shared.v2.f32` (a `float2` store).
    ///
    /// # Safety
    /// As [`Shared::store`], 8-byte aligned.
    #[inline(always)]
    pub unsafe fn store(self, [x, y]: [f32; 2]) {
        st_shared_v2(self.addr, x, y)
    }
}

/// `ld.shared.v4.f32 {x, y, z, w}, [addr]`.
///
/// # Safety
/// `addr` is 16-byte aligned, inside the launch's shared memory, and was written before the
/// last barrier (or by this thread).
#[inline(always)]
unsafe fn ld_shared_v4(addr: u32) -> F32x4 {
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
unsafe fn st_shared_v4(addr: u32, v: F32x4) {
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
unsafe fn st_shared_v2(addr: u32, x: f32, y: f32) {
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
unsafe fn ld_shared_u32(addr: u32) -> u32 {
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
unsafe fn st_shared_u32(addr: u32, v: u32) {
    core::arch::asm!(
        "st.shared.u32 [{a}], {v};",
        a = in(reg32) addr,
        v = in(reg32) v,
        options(nostack),
    );
}

/// `mov.u32 %r, SYMBOL`: the address in the shared window of a `.shared` array the module
/// declares.
#[doc(hidden)]
#[macro_export]
macro_rules! symbol_address {
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

/// `static_shared!(fn name = SYMBOL: TYPE[LEN] as T)` declares `.shared .align 16 .TYPE
/// SYMBOL[LEN]` (a statically sized `__shared__` array; rustc has no attribute for one, and ptxas
/// allocates it in every kernel that names it) and `fn name() -> Shared<T>`, its first element.
/// `TYPE` is the PTX element type the array is declared with (`b8` for bytes, `f32`), `LEN` its
/// element count.
#[macro_export]
macro_rules! static_shared {
    ($(#[$doc:meta])* fn $name:ident = $symbol:ident: $ty:ident[$len:expr] as $elem:ty) => {
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
        fn $name() -> $crate::Shared<$elem> {
            $crate::Shared::symbol($crate::symbol_address!($symbol))
        }
    };
}

impl<T> Shared<T> {
    /// The array at `addr`, a declared symbol's address ([`static_shared!`] only).
    #[doc(hidden)]
    #[inline(always)]
    pub fn symbol(addr: u32) -> Self {
        Shared::at(addr)
    }
}

core::arch::global_asm!(".extern .shared .align 16 .b8 DYNAMIC_SHARED[];");

/// `mov.u32 %r, DYNAMIC_SHARED`: the address, in the shared window, of the launch's dynamic
/// shared memory (CUDA's `extern __shared__` array), whose size the launcher passes per launch.
#[inline(always)]
pub fn dynamic_shared() -> Shared<u8> {
    Shared::at(symbol_address!(DYNAMIC_SHARED))
}

/// `mov.u32 %r, %dynamic_smem_size`: the bytes of dynamic shared memory the launch passed, so
/// that a kernel can take a deeper layout where the launcher gives it room.
#[inline(always)]
pub fn dynamic_shared_size() -> u32 {
    let n: u32;
    // SAFETY: reading a special register has no preconditions.
    unsafe {
        core::arch::asm!(
            "mov.u32 {n}, %dynamic_smem_size;",
            n = out(reg32) n,
            options(pure, nomem, nostack)
        )
    };
    n
}

/// `st.shared.f32 [addr], v`.
///
/// # Safety
/// `addr` is a 4-byte-aligned address of the shared window inside memory the launch has, and
/// no other thread reads it before the next barrier.
#[inline(always)]
unsafe fn st_shared_f32(addr: u32, v: f32) {
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
unsafe fn ld_shared_f32(addr: u32) -> f32 {
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
pub unsafe fn ldmatrix_x4(addr: Shared<u32>) -> [u32; 4] {
    let addr = addr.addr();
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
unsafe fn ld_shared_v2_u32(addr: u32) -> [u32; 2] {
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
unsafe fn ld_shared_u16(addr: u32) -> u16 {
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
unsafe fn st_shared_u16(addr: u32, v: u16) {
    core::arch::asm!(
        "st.shared.u16 [{a}], {v};",
        a = in(reg32) addr,
        v = in(reg16) v,
        options(nostack),
    );
}
