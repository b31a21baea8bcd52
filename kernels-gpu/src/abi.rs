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
    /// The kernel's parameter list.
    type Params;
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
}
