//! GPU tests: the q8-fuse checks (fused == chain, rust == cu, oracles, all written) on shapes
//! beyond the gate's, chosen for their edge cases, plus the launchers' refusals on a real device.
//!
//! With no GPU they are skipped and counted as skipped; with `FERROCUDA_REQUIRE_GPU=1` a missing
//! GPU fails the run. Run on a GPU host as a copied test binary (see README).

use gates::q8_fuse::{check_shape, load_builds};
use host::norm_q8::{self, Rows};
use host::{Error, Gpu};
use std::process::ExitCode;

/// Shapes and why each is here.
const SHAPES: &[(usize, usize, &str)] = &[
    (1, 32, "one q8_1 block, one warp"),
    (5, 96, "row shorter than one warp's trip"),
    (3, 160, "partial warp of column groups"),
    (2, 1568, "block not a power of two"),
    (1, 4128, "last trip partly out of the row"),
    (7, 4096, "several rows"),
    (1, 32768, "more than one trip of 1024 threads"),
    (300, 1536, "many short rows, bandwidth geometry"),
    (256, 4128, "bandwidth geometry, ragged last trip"),
    (
        129,
        4128,
        "quantize at four groups per thread, ragged last span",
    ),
];

fn refusals(gpu: &Gpu) -> Result<Vec<String>, Error> {
    let [rust, _] = load_builds(gpu)?;
    let x = gpu.alloc_poisoned::<f32>(64, 0x3F)?;
    let w = gpu.alloc_poisoned::<f32>(64, 0x3F)?;
    let mut z = gpu.alloc_poisoned::<f32>(32, 0xFF)?;
    let mut problems = Vec::new();
    // (rows, the argument the launcher must name)
    for (nrows, ncols, arg) in [(1, 48, "ncols"), (2, 32, "z")] {
        let rows = Rows { nrows, ncols };
        let got = norm_q8::rms_norm(&rust, gpu, &x, &w, &mut z, rows, 1e-6);
        if !matches!(&got, Err(Error::Arg(e)) if e.arg == arg) {
            problems.push(format!(
                "{nrows}x{ncols} into 32 floats not refused as `{arg}`: {got:?}"
            ));
        }
    }
    gpu.synchronize()?;
    if gpu.download(&z)?.iter().any(|v| v.to_bits() != u32::MAX) {
        problems.push("a refused launch wrote to z".into());
    }
    Ok(problems)
}

fn main() -> ExitCode {
    let required = std::env::var("FERROCUDA_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let total = SHAPES.len() + 1;
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => {
            println!("gpu tests: {e}");
            if required {
                println!("FERROCUDA_REQUIRE_GPU=1: a GPU is required");
                println!("0 passed, {total} failed");
                return ExitCode::FAILURE;
            }
            println!("0 passed, 0 failed, {total} skipped");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            println!("gpu tests: {e}");
            println!("0 passed, {total} failed");
            return ExitCode::FAILURE;
        }
    };
    println!("gpu tests on {}", gpu.info().name);
    let modules = match load_builds(&gpu) {
        Ok(m) => m,
        Err(e) => {
            println!("loading the builds: {e}");
            println!("0 passed, {total} failed");
            return ExitCode::FAILURE;
        }
    };
    let (mut passed, mut failed) = (0, 0);
    for (i, &(nrows, ncols, why)) in SHAPES.iter().enumerate() {
        let rows = Rows { nrows, ncols };
        let result = check_shape(&gpu, &modules, rows, 0xC0FFEE + i as u64);
        let failures: Vec<String> = match result {
            Ok(rows) => rows
                .iter()
                .filter(|r| !r.pass())
                .flat_map(|r| r.failures.iter().map(move |f| format!("{}: {f}", r.check)))
                .collect(),
            Err(e) => vec![e.to_string()],
        };
        let name = format!("q8-fuse checks {nrows}x{ncols} ({why})");
        report(&name, &failures, &mut passed, &mut failed);
    }
    let problems = refusals(&gpu).unwrap_or_else(|e| vec![e.to_string()]);
    report(
        "launchers refuse bad arguments",
        &problems,
        &mut passed,
        &mut failed,
    );
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn report(name: &str, failures: &[String], passed: &mut usize, failed: &mut usize) {
    if failures.is_empty() {
        *passed += 1;
        println!("test {name} ... ok");
    } else {
        *failed += 1;
        println!("test {name} ... FAILED");
        for f in failures {
            println!("    {f}");
        }
    }
}
