//! GPU tests: every family's edge shapes through every check of its gate (Rust == .cu,
//! equivalence groups, oracle, all written) in every value class, and each family's launcher
//! refusals on a real device.
//!
//! With no GPU they are skipped and counted as skipped; with `FERROCUDA_REQUIRE_GPU=1` a missing
//! GPU fails the run. Run on a GPU host as a copied test binary (see README).

use gates::families;
use gates::harness::gate::load_builds;
use host::{Error, Gpu};
use std::process::ExitCode;

fn main() -> ExitCode {
    let required = std::env::var("FERROCUDA_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => {
            println!("gpu tests: {e}");
            if required {
                println!("FERROCUDA_REQUIRE_GPU=1: a GPU is required");
                println!("0 passed, 1 failed");
                return ExitCode::FAILURE;
            }
            let skipped: usize = families::ALL.iter().map(|g| g.gpu_test_count()).sum();
            println!("0 passed, 0 failed, {skipped} skipped");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            println!("gpu tests: {e}");
            println!("0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    println!("gpu tests on {}", gpu.info().name);
    let modules = match load_builds(&gpu) {
        Ok(m) => m,
        Err(e) => {
            println!("loading the builds: {e}");
            println!("0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    let (mut passed, mut failed) = (0, 0);
    for gate in families::ALL {
        for t in gate.gpu_tests(&gpu, &modules) {
            if t.failures.is_empty() {
                passed += 1;
                println!("test {} ... ok", t.name);
            } else {
                failed += 1;
                println!("test {} ... FAILED", t.name);
                for f in &t.failures {
                    println!("    {f}");
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
