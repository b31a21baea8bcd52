//! The launch ABI of a Rust kernel crate: what the crate and the host that launches its kernels
//! must agree on, in a `#![no_std]` crate both depend on.
//!
//! - [`kernel`]: `#[kernel]` on an `unsafe fn` makes a PTX entry on nvptx64 and, on the host, a
//!   zero-sized marker implementing [`Kernel`], whose parameter list is the fn's (`*const T` as
//!   [`In<T>`], `*mut T` as [`Out<T>`], scalars as themselves). `host::Module::launch::<K>` takes
//!   exactly that list, so a launch cannot drift from its kernel.
//! - [`variants!`]: one entry per variant of a generic body, and the [`Group`] that picks one by
//!   key.
//! - [`KernelSpec`]: what the tests hold one kernel's PTX to.
//!
//! The markers name this crate by its path (`::ferrocuda_abi::Kernel`), so a kernel crate
//! depends on it under its own name, `ferrocuda-abi`.
#![no_std]

// The markers' generated impls name `::ferrocuda_abi`, which this crate's own tests must resolve.
#[cfg(test)]
extern crate self as ferrocuda_abi;

pub use kernels_macros::kernel;

/// A kernel argument the kernel only reads: a device buffer of `T`.
#[derive(Debug)]
pub struct In<T>(core::marker::PhantomData<T>);

/// A kernel argument the kernel writes: a device buffer of `T`, borrowed mutably by the launch.
#[derive(Debug)]
pub struct Out<T>(core::marker::PhantomData<T>);

/// Implemented by the host-side marker that `#[kernel]` generates for each kernel.
///
/// `Params` lists the kernel's parameters in order, pointers as [`In`] / [`Out`] and scalars as
/// themselves; the host maps it to the argument tuple a launch must be given.
pub trait Kernel {
    /// The PTX entry's name, which is also the reference .cu's `extern "C"` symbol.
    const NAME: &'static str;
    /// The parameters' names, in order (how errors name an argument).
    const ARGS: &'static [&'static str];
    /// The kernel's parameter list.
    type Params;
    /// The kernel as a run-time [`Entry`].
    const ENTRY: Entry<Self::Params> = Entry::new(Self::NAME, Self::ARGS);
}

/// One entry of a [`Group`], picked at run time: its PTX name, typed by the parameter list that
/// every entry of the group shares, so that the host launches whichever entry a key picks with one
/// checked argument tuple. [`Kernel::ENTRY`] is the entry of a kernel known at compile time.
#[derive(Debug)]
pub struct Entry<P> {
    /// The PTX entry's name, which is also the reference .cu's `extern "C"` symbol.
    pub name: &'static str,
    /// Its parameters' names, in order.
    pub args: &'static [&'static str],
    params: core::marker::PhantomData<fn() -> P>,
}

impl<P> Entry<P> {
    /// The entry named `name` with parameters `P`; only [`Kernel::ENTRY`] makes one, so the name
    /// and the parameters are always a real kernel's.
    const fn new(name: &'static str, args: &'static [&'static str]) -> Self {
        Entry {
            name,
            args,
            params: core::marker::PhantomData,
        }
    }
}

impl<P> Clone for Entry<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Entry<P> {}

/// The entries that [`variants!`](crate::variants) stamps from one generic body, each picked by a
/// key (a row count, a split, a head count): the one declaration from which the device entries,
/// the host's typed dispatch and the kernel tables' names all come.
pub trait Group {
    /// What picks an entry.
    type Key: Copy + 'static;
    /// The parameter list every entry shares.
    type Params;
    /// The body's name: how errors name the entries before a key picks one.
    const BODY: &'static str;
    /// Every entry with its key, in declaration order.
    const ENTRIES: &'static [(Self::Key, &'static str)];

    /// The entry of `key`: an exhaustive `match` over the declared keys.
    fn entry(key: Self::Key) -> Entry<Self::Params>;
}

/// What the tests hold one kernel's PTX to, declared by its family next to the kernel.
#[derive(Debug, Clone, Copy)]
pub struct KernelSpec {
    /// The PTX entry (the `#[kernel]` marker's `NAME`).
    pub name: &'static str,
    /// The largest block it is launched with: its registers per thread times this must fit
    /// the register file, or the launch fails with "too many resources requested".
    pub max_block: u32,
    /// Instructions its PTX must contain: the device wrappers it is written with, so that a
    /// change of lowering shows up as a test failure rather than as different bits on a GPU.
    pub requires: &'static [&'static str],
    /// Instructions it must not contain, beyond those no kernel may contain (flush-to-zero,
    /// approximate division, local memory).
    pub forbids: &'static [&'static str],
    /// The arch-specific target (`sm_90a`) whose module alone holds it, for a kernel on
    /// instructions only that target has; `None` for a kernel of every module.
    pub only_on: Option<&'static str>,
}

impl KernelSpec {
    /// Whether the module built for `arch` holds it.
    pub fn in_module(&self, arch: &str) -> bool {
        self.only_on.is_none_or(|only| only == arch)
    }

    /// This spec for every entry of a group (its [`Group::ENTRIES`]), each under its own name.
    pub const fn each<K, const N: usize>(self, entries: &[(K, &'static str)]) -> [KernelSpec; N] {
        assert!(entries.len() == N, "one spec per entry");
        let mut specs = [self; N];
        let mut i = 0;
        while i < N {
            specs[i].name = entries[i].1;
            i += 1;
        }
        specs
    }
}

/// `a` then `b` as one list of `N` instructions: the requirements of a kernel made of two others.
pub const fn concat<const N: usize>(a: &[&'static str], b: &[&'static str]) -> [&'static str; N] {
    assert!(a.len() + b.len() == N, "N is the length of both lists");
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
        i += 1;
    }
    out
}

/// The specs of a family's groups and kernels as one table of `N`.
pub const fn flatten<const N: usize>(parts: &[&[KernelSpec]]) -> [KernelSpec; N] {
    let mut specs = [KernelSpec {
        name: "",
        max_block: 0,
        requires: &[],
        forbids: &[],
        only_on: None,
    }; N];
    let (mut i, mut p) = (0, 0);
    while p < parts.len() {
        let mut j = 0;
        while j < parts[p].len() {
            specs[i] = parts[p][j];
            i += 1;
            j += 1;
        }
        p += 1;
    }
    assert!(i == N, "N is the number of specs");
    specs
}

/// Stamps one `#[kernel]` entry per variant of a generic device body, so that variants are
/// type or const parameters of one function and never copies of it, and declares them as one
/// [`Group`] picked by a key:
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
        impl $crate::Group for $group {
            type Key = $key;
            type Params = <$first as $crate::Kernel>::Params;
            const BODY: &'static str = stringify!($body);
            const ENTRIES: &'static [($key, &'static str)] =
                &[$(($k, <$name as $crate::Kernel>::NAME)),+];

            fn entry(key: $key) -> $crate::Entry<Self::Params> {
                match key {
                    $($k => <$name as $crate::Kernel>::ENTRY,)+
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
    use crate::{Group, In, Kernel, Out};
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

/// One SM target's PTX module of a kernel crate, as `ferrocuda-builder` writes the list of them
/// (`$OUT_DIR/modules.rs`, every arch it built) for the crate that embeds them; the host loads the
/// one that fits the device.
#[derive(Debug, Clone, Copy)]
pub struct PtxModule {
    /// The SM target (`sm_80`, ..., `sm_120`) the module was built for.
    pub arch: &'static str,
    /// The PTX module holding every kernel of the crate.
    pub ptx: &'static str,
    /// The builder's manifest of that PTX (JSON: arch, origin, toolchain, kernels, hashes).
    pub manifest: &'static str,
}
