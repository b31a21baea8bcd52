//! GPU tests: every family's edge shapes through every check of its gate (Rust == .cu,
//! equivalence groups, oracle, all written) in every value class, each family's launcher
//! refusals on a real device, and a launcher on a stream of the caller's making.
//!
//! With no GPU they are skipped and counted as skipped; with `FERROCUDA_REQUIRE_GPU=1` a missing
//! GPU fails the run. Run on a GPU host as a copied test binary (see README).

use gates::families;
use gates::harness::gate::load_builds;
use host::{Error, Gpu, Module};
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
            let skipped: usize = families::ALL
                .iter()
                .map(|g| g.gpu_test_count())
                .sum::<usize>()
                + 1;
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
    let name = "launchers on a caller's stream give the bits they give on the Gpu's own";
    match on_a_callers_stream(&gpu, &modules[0]) {
        Ok(()) => {
            passed += 1;
            println!("test {name} ... ok");
        }
        Err(e) => {
            failed += 1;
            println!("test {name} ... FAILED\n    {e}");
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// swiglu on a stream of the caller's making ([`Gpu::on_stream`], its own module loaded there):
/// captured there, it has not run before the graph is replayed (a launch queued on another
/// stream would run at once and write its output), and then gives the bits the same launch gives
/// on the test's `Gpu`.
fn on_a_callers_stream(gpu: &Gpu, module: &Module) -> Result<(), String> {
    let n = 1000;
    let g: Vec<f32> = (0..n).map(|i| (i as f32 - 500.0) / 37.0).collect();
    let u: Vec<f32> = (0..n).map(|i| 1.0 + i as f32 / 1000.0).collect();
    let err = |e: Error| e.to_string();
    let own = {
        let (g, u) = (gpu.upload(&g).map_err(err)?, gpu.upload(&u).map_err(err)?);
        let mut y = gpu.alloc_poisoned::<f32>(n, 0xff).map_err(err)?;
        host::swiglu::swiglu(module, gpu, &g, &u, &mut y).map_err(err)?;
        gpu.download(&y).map_err(err)?
    };
    let stream = gpu
        .context()
        .new_stream()
        .map_err(|e| format!("creating a stream: {e}"))?;
    let caller = Gpu::on_stream(stream).map_err(err)?;
    let theirs_module = Module::rust(&caller).map_err(err)?;
    let (g, u) = (
        caller.upload(&g).map_err(err)?,
        caller.upload(&u).map_err(err)?,
    );
    let mut y = caller.alloc_poisoned::<f32>(n, 0xff).map_err(err)?;
    let graph = caller
        .capture(|| host::swiglu::swiglu(&theirs_module, &caller, &g, &u, &mut y))
        .map_err(err)?;
    if caller
        .download(&y)
        .map_err(err)?
        .iter()
        .any(|v| v.to_bits() != u32::MAX)
    {
        return Err("the launch ran outside the caller's stream".into());
    }
    caller.replay(&graph).map_err(err)?;
    let theirs = caller.download(&y).map_err(err)?;
    if own
        .iter()
        .map(|v| v.to_bits())
        .eq(theirs.iter().map(|v| v.to_bits()))
    {
        Ok(())
    } else {
        Err("the outputs differ".into())
    }
}
