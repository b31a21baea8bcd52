//! ferrocuda's kernels, one module per kernel family.
//!
//! This crate builds twice. For `nvptx64-nvidia-cuda` (driven by the workspace's `build.rs`) every
//! `#[kernel]` fn becomes a PTX entry of the same name. For the host it exposes only what host and
//! device must agree on: the ABI types in [`abi`], the launch geometry of each family, and one
//! launch marker per kernel, so a launcher cannot drift from the kernel it launches.
//!
//! # Kernel ABI
//!
#![doc = include_str!("../../docs/abi.md")]
//!
//! "Static `.shared`" is an array the module declares: the launcher passes no dynamic shared
//! memory for it. Each family's module declares its kernels' table (`KERNELS`: name, largest
//! block, the instructions its PTX must and must not contain), and [`FAMILIES`] lists the
//! families.
//!
//! The MLA entries come in fours: the unsplit kernel and its twins of split 2, 4 and 8, one
//! parameter list, the same bits (see [`mla`]); `split` in the grid is 1 for the unsplit entry.
//! [`mla::ServingTable`] picks the split per `t`.
//!
//! Every length is in elements of the scalar type (`ncols`, `n` in f32). `ncols` and `n` are
//! multiples of 32 (the q8_1 block); the host launchers refuse anything else before launching.
//! The q8_1 activation is two planes: `qs[n]` (i8) and `d[n / 32]` (f32). The numerics (the
//! saturation, zeros, NaN and infinities, an overflowing sum of squares) and why a row's outputs
//! do not depend on the batch are in [`norm_q8`]'s docs.
//! The gemv kernels take `m` such rows (`in_f` a multiple of 32, any `out_f`) and write
//! `y[m][out_f]`; see [`gemv`] for the formats, the thread mapping and the floating-point
//! operations both builds perform.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        asm_experimental_arch,
        link_llvm_intrinsics,
        core_intrinsics,
        stdarch_nvptx
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

pub mod abi;
#[cfg(target_arch = "nvptx64")]
pub use ferrocuda_device as device;
pub mod gemv;
pub mod mla;
pub mod norm_q8;
pub mod stream;
pub mod swiglu;

pub use kernels_macros::kernel;

/// Every family's kernel table, by family name: what the tests hold each kernel's PTX to. A new
/// family adds its module above and one line here.
#[cfg(not(target_arch = "nvptx64"))]
pub const FAMILIES: &[(&str, &[abi::KernelSpec])] = &[
    ("norm_q8", norm_q8::KERNELS),
    ("stream", stream::KERNELS),
    ("gemv", gemv::KERNELS),
    ("mla", mla::KERNELS),
    ("swiglu", swiglu::KERNELS),
];

/// Every kernel of every family.
#[cfg(not(target_arch = "nvptx64"))]
pub fn kernel_specs() -> impl Iterator<Item = &'static abi::KernelSpec> {
    FAMILIES.iter().flat_map(|(_, specs)| specs.iter())
}

/// Stamps one `#[kernel]` entry per variant of a generic device body, so that variants are
/// type or const parameters of one function and never copies of it, and declares them as one
/// [`Group`](abi::Group) picked by a key:
///
/// ```ignore
/// variants! {
///     /// Docs shared by every entry.
///     gemv_body(w: *const u8, x: *const I8x4, y: *mut f32, n: i32) for GemvE4m3: Batch {
///         gemv_e4m3_m1 = Batch::M1 => [E4m3, { Batch::M1.m() }];
///         gemv_e4m3_m2 = Batch::M2 => [E4m3, { Batch::M2.m() }];
///     }
/// }
/// ```
///
/// makes the entries `gemv_e4m3_m1` and `gemv_e4m3_m2`, each calling
/// `gemv_body::<E4m3, N>(w, x, y, n)`, each with its own typed launch marker on the host, and on
/// the host the group `GemvE4m3`, whose `entry(key)` is an exhaustive `match` over the keys. The
/// const parameters are written as the shared `const fn`s of the key that the launchers read.
/// The docs and the parameter list travel to each entry as one token tree each: `macro_rules!`
/// repeats a fragment only as often as it was captured, so they are bundled before the entries
/// are walked.
#[macro_export]
macro_rules! variants {
    (
        @entry [$(#[$doc:meta])*] $body:ident ($($arg:ident : $ty:ty),* $(,)?)
        $name:ident [$($g:tt)*]
    ) => {
        $(#[$doc])*
        #[$crate::kernel]
        pub unsafe fn $name($($arg: $ty),*) {
            $body::<$($g)*>($($arg),*)
        }
    };
    (
        @group $body:ident $group:ident $key:ty, $first:ident, $($name:ident = $k:path),+
    ) => {
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc = concat!("The entries stamped from `", stringify!($body), "`, by key.")]
        #[derive(Debug, Clone, Copy)]
        pub struct $group;

        #[cfg(not(target_arch = "nvptx64"))]
        impl $crate::abi::Group for $group {
            type Key = $key;
            type Params = <$first as $crate::abi::Kernel>::Params;
            const BODY: &'static str = stringify!($body);
            const ENTRIES: &'static [($key, &'static str)] =
                &[$(($k, <$name as $crate::abi::Kernel>::NAME)),+];

            fn entry(key: $key) -> $crate::abi::Entry<Self::Params> {
                match key {
                    $($k => <$name as $crate::abi::Kernel>::ENTRY,)+
                }
            }
        }
    };
    (
        @entries $docs:tt $body:ident $params:tt $group:ident $key:ty {
            $first:ident = $k1:path => [$($g1:tt)*];
            $($name:ident = $k:path => [$($g:tt)*];)*
        }
    ) => {
        $crate::variants!(@entry $docs $body $params $first [$($g1)*]);
        $($crate::variants!(@entry $docs $body $params $name [$($g)*]);)*
        $crate::variants!(@group $body $group $key, $first, $first = $k1 $(, $name = $k)*);
    };
    (
        $(#[$doc:meta])*
        $body:ident $params:tt for $group:ident : $key:ty { $($entries:tt)+ }
    ) => {
        $crate::variants!(@entries [$(#[$doc])*] $body $params $group $key { $($entries)+ });
    };
}

#[cfg(test)]
mod tests {
    use crate::abi::{Group, In, Kernel, Out};
    use core::marker::PhantomData;

    #[allow(dead_code)]
    unsafe fn body<const N: i32>(_x: *const f32, _y: *mut f32, _n: i32) {}

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Two {
        One,
        Two,
    }

    crate::variants! {
        /// Two entries of one body.
        body(x: *const f32, y: *mut f32, n: i32) for Demo: Two {
            demo_one = Two::One => [1];
            demo_two = Two::Two => [2];
        }
    }

    fn same_type<T>(_: PhantomData<T>, _: PhantomData<T>) {}

    #[test]
    fn variants_are_named_entries_with_the_body_parameters() {
        assert_eq!((demo_one::NAME, demo_two::NAME), ("demo_one", "demo_two"));
        same_type(
            PhantomData::<<demo_two as Kernel>::Params>,
            PhantomData::<(In<f32>, Out<f32>, i32)>,
        );
    }

    #[test]
    fn a_group_picks_each_entry_by_its_key() {
        assert_eq!(
            Demo::ENTRIES,
            [(Two::One, "demo_one"), (Two::Two, "demo_two")]
        );
        assert_eq!(Demo::entry(Two::Two).name, "demo_two");
        assert_eq!(Demo::BODY, "body");
        same_type(
            PhantomData::<<Demo as Group>::Params>,
            PhantomData::<(In<f32>, Out<f32>, i32)>,
        );
    }
}

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Kernels are written so that nothing can panic (raw pointers, no checked arithmetic); a
    // panic that slipped in still stops the grid rather than running on with garbage.
    device::trap()
}
