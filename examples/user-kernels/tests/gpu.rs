//! GPU tests of the example crate: `axpby`'s edge shapes through every check of its gate (both
//! builds launched on the device, Rust == .cu bit for bit, the oracle, all written) in every
//! value class, and its launcher's refusals on a real device, by the gates' own GPU-test runner.
//!
//! With no GPU they are skipped and counted as skipped; with `FERROCUDA_REQUIRE_GPU=1` a missing
//! GPU fails the run.

use gates::harness::cli::FamilyGate;
use gates::harness::gpu_test;
use std::process::ExitCode;
use user_kernels::gate::Axpby;

fn main() -> ExitCode {
    gpu_test::main(&[&FamilyGate::<Axpby>::new()], &[])
}
