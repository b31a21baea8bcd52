//! Types that cross the host/device boundary.
//!
//! The vector types are `#[repr(C, align(N))]` so that the device reads and writes them with one
//! vector instruction (`ld.global.v4`), as CUDA's `float4` / `char4` are, and so the host can
//! size buffers in them without casts spread over the code.

/// Four f32, 16-byte aligned: CUDA's `float4`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C, align(16))]
pub struct F32x4 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub w: f32,
}

// Lane-wise arithmetic, each lane the one f32 operation CUDA's `float4` code writes out per
// component, in x, y, z, w order: `+` and `*` lower to `add.rn.f32` and `mul.rn.f32`, which LLVM
// never contracts into an fma.

impl core::ops::Add for F32x4 {
    type Output = F32x4;

    #[inline(always)]
    fn add(self, b: F32x4) -> F32x4 {
        F32x4 {
            x: self.x + b.x,
            y: self.y + b.y,
            z: self.z + b.z,
            w: self.w + b.w,
        }
    }
}

impl core::ops::AddAssign for F32x4 {
    #[inline(always)]
    fn add_assign(&mut self, b: F32x4) {
        *self = *self + b;
    }
}

/// `v * s`: each lane times `s`, the lane the left operand (CUDA's `v.x * s`).
impl core::ops::Mul<f32> for F32x4 {
    type Output = F32x4;

    #[inline(always)]
    fn mul(self, s: f32) -> F32x4 {
        F32x4 {
            x: self.x * s,
            y: self.y * s,
            z: self.z * s,
            w: self.w * s,
        }
    }
}

/// The fused multiply-adds, one `fma.rn.f32` each (`device::fma`): CUDA's `c + a * b` under
/// `--fmad=true`, which a Rust `a * b + c` would round twice.
#[cfg(target_arch = "nvptx64")]
impl F32x4 {
    /// `acc + s * self`, lane by lane: CUDA's `acc.x += s * v.x; ...`.
    #[inline(always)]
    pub fn mul_add(self, s: f32, acc: F32x4) -> F32x4 {
        use crate::device::fma;
        F32x4 {
            x: fma(s, self.x, acc.x),
            y: fma(s, self.y, acc.y),
            z: fma(s, self.z, acc.z),
            w: fma(s, self.w, acc.w),
        }
    }

    /// `acc + self . b`, one fused multiply-add per lane in lane order: CUDA's `acc += a.x *
    /// b.x; acc += a.y * b.y; ...`.
    #[inline(always)]
    pub fn dot_add(self, b: F32x4, acc: f32) -> f32 {
        use crate::device::fma;
        let acc = fma(self.x, b.x, acc);
        let acc = fma(self.y, b.y, acc);
        let acc = fma(self.z, b.z, acc);
        fma(self.w, b.w, acc)
    }
}

/// Four i8, 4-byte aligned: CUDA's `char4`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(4))]
pub struct I8x4 {
    pub x: i8,
    pub y: i8,
    pub z: i8,
    pub w: i8,
}

/// An IEEE binary16 value carried as its bits: the device has no f16 type on stable Rust, and the
/// host maps buffers of it to `half::f16`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct F16(pub u16);

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

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, size_of};

    /// The device reads these with one vector instruction only at their CUDA layouts.
    #[test]
    fn vector_types_have_cuda_layouts() {
        assert_eq!((size_of::<F32x4>(), align_of::<F32x4>()), (16, 16));
        assert_eq!((size_of::<I8x4>(), align_of::<I8x4>()), (4, 4));
        assert_eq!((size_of::<F16>(), align_of::<F16>()), (2, 2));
    }

    /// The kernels' `float4` arithmetic, written as operators, acts lane by lane.
    #[test]
    fn arithmetic_is_lane_by_lane() {
        let a = F32x4 {
            x: 1.0,
            y: 2.0,
            z: 3.0,
            w: 4.0,
        };
        let b = F32x4 {
            x: 0.5,
            y: -1.0,
            z: 8.0,
            w: 0.25,
        };
        let mut sum = a;
        sum += b;
        assert_eq!(sum, a + b);
        assert_eq!(
            a + b,
            F32x4 {
                x: 1.5,
                y: 1.0,
                z: 11.0,
                w: 4.25
            }
        );
        assert_eq!(
            a * 2.0,
            F32x4 {
                x: 2.0,
                y: 4.0,
                z: 6.0,
                w: 8.0
            }
        );
    }
}
