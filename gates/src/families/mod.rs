//! The kernel families' gates, one module per family under the family's name (the gate's, with
//! `-` for `_`). A new family adds its module here and one line to [`ALL`].

pub mod decode_step;
pub mod gemv;
pub mod mla;
pub mod norm_q8;
pub mod swiglu;

use crate::harness::cli::{FamilyGate, Gate};

/// Every family's gate, in the order `gates --help` lists them, with the earlier names that
/// scripts and recorded runs use as aliases.
pub static ALL: &[&dyn Gate] = &[
    &FamilyGate::<norm_q8::NormQ8>::new().with_aliases(&["q8-fuse"]),
    &FamilyGate::<gemv::Gemv>::new().with_aliases(&["gemv-e4m3"]),
    &FamilyGate::<mla::Mla>::new().with_aliases(&["mla-decode"]),
    &FamilyGate::<swiglu::SwiGlu>::new(),
    &FamilyGate::<decode_step::DecodeStep>::new(),
];
