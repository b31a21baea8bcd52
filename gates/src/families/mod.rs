//! The kernel families' gates. A new family adds its module here and one line to [`ALL`].

pub mod gemv;
pub mod mla;
pub mod q8_fuse;
pub mod swiglu;

use crate::harness::cli::{FamilyGate, Gate};

/// Every family's gate, in the order `gates --help` lists them.
pub static ALL: &[&dyn Gate] = &[
    &FamilyGate::<q8_fuse::Q8Fuse>::new(),
    &FamilyGate::<gemv::Gemv>::new(),
    &FamilyGate::<mla::Mla>::new(),
    &FamilyGate::<swiglu::SwiGlu>::new(),
];
