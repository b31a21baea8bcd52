//! The vector types the kernels read and write with one instruction, and their lane-wise
//! arithmetic.
//!
//! They are `#[repr(C, align(N))]` so that the device reads and writes them with one vector
//! instruction (`ld.global.v4`), as CUDA's `float4` / `char4` are, and so that a host sizes
//! buffers in them without casts spread over the code.

/// Four f32, 16-byte aligned: CUDA's `float4`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C, align(16))]
pub struct F32x4 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub w: f32,
}

impl From<[f32; 4]> for F32x4 {
    #[inline(always)]
    fn from([x, y, z, w]: [f32; 4]) -> F32x4 {
        F32x4 { x, y, z, w }
    }
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
        use crate::fma;
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
        use crate::fma;
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
