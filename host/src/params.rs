//! The host side of `#[kernel]`'s typed launches.
//!
//! `#[kernel]` gives each kernel a `Params` tuple of [`In`]/[`Out`] markers and scalars; here
//! each parameter maps to the host value a launch must pass (`In<T>` -> [`DeviceIn`],
//! `Out<T>` -> [`DeviceOut`], a scalar -> itself), so `Module::launch::<K>` accepts exactly
//! the kernel's argument list.
//!
//! A buffer is any device memory cudarc can name: a whole `CudaSlice`, or a `CudaView` /
//! `CudaViewMut` of part of one (an engine's weights in one large allocation). A view may start
//! anywhere, so the launch checks that each buffer's address is aligned to the kernel's element
//! (16 bytes for `float4`) and refuses it, naming the argument, where it is not.

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, SyncOnDrop};

/// A device buffer a kernel reads: `&CudaSlice<T>` or `&CudaView<T>` (both coerce).
pub type DeviceIn<'a, T> = &'a dyn DevicePtr<T>;

/// Device memory a kernel may write: a `CudaSlice` or a `CudaViewMut`, never a `CudaView`.
pub trait Writable<T>: DevicePtr<T> + DevicePtrMut<T> {}

impl<T, B: DevicePtr<T> + DevicePtrMut<T> + ?Sized> Writable<T> for B {}

/// A device buffer a kernel writes: `&mut CudaSlice<T>` or `&mut CudaViewMut<T>`.
pub type DeviceOut<'a, T> = &'a mut dyn Writable<T>;
use kernels_gpu::abi::{F32x4, I8x4, In, Out, F16};

/// An element type a kernel reads or writes, stored on the host side as `LANES` scalars of
/// `Scalar` (so buffers of `F32x4` are `CudaSlice<f32>` with four floats each).
pub trait Element {
    type Scalar: DeviceRepr + 'static;
    const LANES: usize;
}

impl Element for f32 {
    type Scalar = f32;
    const LANES: usize = 1;
}

impl Element for i8 {
    type Scalar = i8;
    const LANES: usize = 1;
}

impl Element for u8 {
    type Scalar = u8;
    const LANES: usize = 1;
}

impl Element for u16 {
    type Scalar = u16;
    const LANES: usize = 1;
}

impl Element for i32 {
    type Scalar = i32;
    const LANES: usize = 1;
}

impl Element for u32 {
    type Scalar = u32;
    const LANES: usize = 1;
}

/// f16 values: `half::f16` on the host, their bits on the device.
impl Element for F16 {
    type Scalar = half::f16;
    const LANES: usize = 1;
}

impl Element for F32x4 {
    type Scalar = f32;
    const LANES: usize = 4;
}

impl Element for I8x4 {
    type Scalar = i8;
    const LANES: usize = 4;
}

/// One kernel parameter: the host value it takes, and how that value is passed.
pub trait Param {
    type Arg<'a>;
    /// The alignment the parameter's address must have, in bytes (1 for a scalar).
    const ALIGN: usize = 1;
    /// The value as the kernel's parameter buffer holds it: little-endian in an 8-byte slot,
    /// of which the driver reads the parameter's own size; and for a buffer, cudarc's guard,
    /// which records the launch's read (or write) of it for other streams when it is dropped,
    /// after the launch (a no-op where the context orders no buffers between streams).
    fn slot<'s>(
        arg: &'s mut Self::Arg<'_>,
        stream: &'s CudaStream,
    ) -> (u64, Option<SyncOnDrop<'s>>);
}

impl<E: Element> Param for In<E> {
    type Arg<'a> = DeviceIn<'a, E::Scalar>;
    const ALIGN: usize = core::mem::align_of::<E>();
    fn slot<'s>(
        arg: &'s mut Self::Arg<'_>,
        stream: &'s CudaStream,
    ) -> (u64, Option<SyncOnDrop<'s>>) {
        let (ptr, guard) = arg.device_ptr(stream);
        (ptr, Some(guard))
    }
}

impl<E: Element> Param for Out<E> {
    type Arg<'a> = DeviceOut<'a, E::Scalar>;
    const ALIGN: usize = core::mem::align_of::<E>();
    fn slot<'s>(
        arg: &'s mut Self::Arg<'_>,
        stream: &'s CudaStream,
    ) -> (u64, Option<SyncOnDrop<'s>>) {
        let (ptr, guard) = arg.device_ptr_mut(stream);
        (ptr, Some(guard))
    }
}

impl Param for i32 {
    type Arg<'a> = i32;
    fn slot<'s>(arg: &'s mut i32, _: &'s CudaStream) -> (u64, Option<SyncOnDrop<'s>>) {
        (u64::from(*arg as u32), None)
    }
}

impl Param for u32 {
    type Arg<'a> = u32;
    fn slot<'s>(arg: &'s mut u32, _: &'s CudaStream) -> (u64, Option<SyncOnDrop<'s>>) {
        (u64::from(*arg), None)
    }
}

impl Param for i64 {
    type Arg<'a> = i64;
    fn slot<'s>(arg: &'s mut i64, _: &'s CudaStream) -> (u64, Option<SyncOnDrop<'s>>) {
        (*arg as u64, None)
    }
}

impl Param for f32 {
    type Arg<'a> = f32;
    fn slot<'s>(arg: &'s mut f32, _: &'s CudaStream) -> (u64, Option<SyncOnDrop<'s>>) {
        (u64::from(arg.to_bits()), None)
    }
}

/// A kernel's whole parameter list.
pub trait Params {
    type Args<'a>;
    /// Each parameter's [`Param::ALIGN`].
    const ALIGNS: &'static [usize];
    /// Every parameter's [`Param::slot`], and the buffers' guards, to be dropped after the launch.
    fn slots<'s>(
        args: &'s mut Self::Args<'_>,
        stream: &'s CudaStream,
    ) -> (Vec<u64>, Vec<SyncOnDrop<'s>>);
}

macro_rules! params_tuple {
    ($($p:ident $i:tt),+) => {
        impl<$($p: Param),+> Params for ($($p,)+) {
            type Args<'a> = ($($p::Arg<'a>,)+);
            const ALIGNS: &'static [usize] = &[$($p::ALIGN),+];
            fn slots<'s>(
                args: &'s mut Self::Args<'_>,
                stream: &'s CudaStream,
            ) -> (Vec<u64>, Vec<SyncOnDrop<'s>>) {
                let mut guards = Vec::new();
                let slots = vec![$({
                    let (slot, guard) = $p::slot(&mut args.$i, stream);
                    guards.extend(guard);
                    slot
                }),+];
                (slots, guards)
            }
        }
    };
}

params_tuple!(A 0);
params_tuple!(A 0, B 1);
params_tuple!(A 0, B 1, C 2);
params_tuple!(A 0, B 1, C 2, D 3);
params_tuple!(A 0, B 1, C 2, D 3, E 4);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
params_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);
