//! Outputs as the runner compares them: named arrays of bits, with the poison pattern their
//! buffer was filled with before the launch.

use crate::harness::compare::{self, Verdict};
use host::{CudaSlice, Gpu};

/// The elements of one downloaded output.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    F32(Vec<f32>),
    I8(Vec<i8>),
}

/// One output array of one arm's call.
#[derive(Debug, Clone)]
pub struct Output {
    pub name: &'static str,
    pub data: Data,
    /// The byte every element's bytes were set to before the launch.
    pub poison: u8,
}

/// Every byte 0xFF: an f32 NaN no kernel writes.
pub const POISON_F32: u8 = 0xFF;
/// Every byte 0x80: -128, which no q8 quantization produces (its range is -127..=127).
pub const POISON_I8: u8 = 0x80;

impl Output {
    /// f32 elements from a buffer that was poisoned with [`POISON_F32`].
    pub fn from_f32(name: &'static str, v: Vec<f32>) -> Self {
        Output {
            name,
            data: Data::F32(v),
            poison: POISON_F32,
        }
    }

    /// i8 elements from a buffer that was poisoned with [`POISON_I8`].
    pub fn from_i8(name: &'static str, v: Vec<i8>) -> Self {
        Output {
            name,
            data: Data::I8(v),
            poison: POISON_I8,
        }
    }

    /// Downloads a buffer poisoned with [`POISON_F32`].
    pub fn f32(gpu: &Gpu, name: &'static str, buf: &CudaSlice<f32>) -> Result<Self, host::Error> {
        Ok(Self::from_f32(name, gpu.download(buf)?))
    }

    /// Downloads a buffer poisoned with [`POISON_I8`].
    pub fn i8(gpu: &Gpu, name: &'static str, buf: &CudaSlice<i8>) -> Result<Self, host::Error> {
        Ok(Self::from_i8(name, gpu.download(buf)?))
    }

    /// The f32 elements, or an empty slice for another type.
    pub fn as_f32(&self) -> &[f32] {
        match &self.data {
            Data::F32(v) => v,
            _ => &[],
        }
    }

    /// The i8 elements, or an empty slice for another type.
    pub fn as_i8(&self) -> &[i8] {
        match &self.data {
            Data::I8(v) => v,
            _ => &[],
        }
    }

    /// Byte identity with another output of the same name.
    pub fn identical(&self, other: &Output) -> Verdict {
        match (&self.data, &other.data) {
            (Data::F32(a), Data::F32(b)) => compare::identical(a, b),
            (Data::I8(a), Data::I8(b)) => compare::identical(a, b),
            _ => Some(format!("`{}` has different element types", self.name)),
        }
    }

    /// No element still holds the poison pattern.
    pub fn all_written(&self) -> Verdict {
        let p = self.poison;
        match &self.data {
            Data::F32(v) => compare::all_written(v, f32::from_bits(u32::from_ne_bytes([p; 4]))),
            Data::I8(v) => compare::all_written(v, p as i8),
        }
    }
}

/// The output of `outputs` named `name`.
pub fn named<'a>(outputs: &'a [Output], name: &str) -> Option<&'a Output> {
    outputs.iter().find(|o| o.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(data: Data, poison: u8) -> Output {
        Output {
            name: "y",
            data,
            poison,
        }
    }

    #[test]
    fn identity_is_of_bits_and_of_types() {
        let a = out(Data::F32(vec![0.0, 1.0]), POISON_F32);
        assert!(a.identical(&a.clone()).is_none());
        assert!(a
            .identical(&out(Data::F32(vec![-0.0, 1.0]), POISON_F32))
            .is_some());
        assert!(a.identical(&out(Data::I8(vec![0, 1]), POISON_I8)).is_some());
    }

    #[test]
    fn poison_left_in_place_is_found() {
        let nan = f32::from_bits(u32::MAX);
        assert!(out(Data::F32(vec![1.0, nan]), POISON_F32)
            .all_written()
            .is_some());
        assert!(out(Data::F32(vec![1.0, f32::NAN]), POISON_F32)
            .all_written()
            .is_none());
        assert!(out(Data::I8(vec![-128, 3]), POISON_I8)
            .all_written()
            .is_some());
    }
}
