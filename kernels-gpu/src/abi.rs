//! Types that cross the host/device boundary: the vector types (`ferrocuda-device`'s, which the
//! device reads and writes with one instruction each), the parameter markers of a launch, and the
//! kernel tables.

pub use ferrocuda_device::{F32x4, I8x4, F16};

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
}

impl KernelSpec {
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
