//! The GPU tests of the gates: every family's edge shapes through every check of its gate, its
//! launchers' refusals on a real device, and tests of a test binary's own, run by [`main`] with
//! the skip-or-fail policy of a machine without a GPU.

use crate::harness::cli::Gate;
use crate::harness::gate::{default_family, load_builds};
use crate::harness::run::check_case;
use crate::harness::Family;
use host::{Error, Gpu, KernelCrate, Module};
use std::process::ExitCode;

/// The variable that makes a missing GPU a failure instead of a skip.
pub const REQUIRE_VAR: &str = "FERROCUDA_REQUIRE_GPU";

/// A test of the binary's own, beside the gates': its name, and a run on the Rust build.
pub type OwnTest = (&'static str, fn(&Gpu, &Module) -> Result<(), String>);

/// The gates whose names and the own tests whose descriptions contain `filter` (all without
/// one), or why none: a filter that matches nothing would pass having run nothing.
fn selected<'a>(
    filter: Option<&str>,
    gates: &[&'a dyn Gate],
    own: &[OwnTest],
) -> Result<(Vec<&'a dyn Gate>, Vec<OwnTest>), String> {
    let kept = |name: &str| filter.is_none_or(|f| name.contains(f));
    let gates: Vec<&dyn Gate> = gates.iter().copied().filter(|g| kept(g.name())).collect();
    let own: Vec<OwnTest> = own.iter().copied().filter(|(name, _)| kept(name)).collect();
    match filter {
        Some(f) if gates.is_empty() && own.is_empty() => {
            Err(format!("no gate or test matches `{f}`"))
        }
        _ => Ok((gates, own)),
    }
}

/// One GPU test: a name, and its failures (none when it passed).
#[derive(Debug, Clone)]
pub struct TestResult {
    pub name: String,
    pub failures: Vec<String>,
}

/// The family's edge shapes through every check in both builds (every value class), and the
/// launchers' refusals on a real device.
pub fn gpu_tests<F: Family>(gate: &str, gpu: &Gpu, modules: &[Module; 2]) -> Vec<TestResult> {
    let Some(fam) = default_family::<F>() else {
        return vec![TestResult {
            name: format!("{gate} default options"),
            failures: vec!["the family has no valid default options".into()],
        }];
    };
    fam.run_on(modules[0].arch());
    let mut out = Vec::new();
    for (i, (shape, why)) in fam.edge_shapes().into_iter().enumerate() {
        let mut failures = Vec::new();
        for &class in fam.classes() {
            match check_case(&fam, gpu, modules, shape, class, 0xC0FFEE + i as u64) {
                Ok(rows) => failures.extend(rows.iter().filter(|r| !r.pass).flat_map(|r| {
                    r.failures
                        .iter()
                        .map(move |f| format!("{} {}: {f}", r.case, r.check))
                })),
                Err(e) => failures.push(format!("{}: {e}", class.label())),
            }
        }
        out.push(TestResult {
            name: format!("{gate} checks {shape} ({why})"),
            failures,
        });
    }
    out.push(TestResult {
        name: format!("{gate} launchers refuse bad arguments"),
        failures: fam
            .refusals(gpu, &modules[0])
            .unwrap_or_else(|e| vec![e.to_string()]),
    });
    out
}

/// The main of a GPU test binary (a `harness = false` test): the tests of every gate of `gates`
/// on both builds of the kernel crates they use, then `own` on the Rust build, one line each,
/// and the counts. With no GPU every test is counted as skipped and the run passes, unless
/// [`REQUIRE_VAR`]`=1`, which fails it. A first argument that is not an option runs only the
/// gates whose names and the own tests whose descriptions contain it (as libtest's filter), so
/// that one test can run alone, under compute-sanitizer for one; one that keeps nothing fails.
pub fn main(gates: &[&dyn Gate], own: &[OwnTest]) -> ExitCode {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let failed_to = |what: String| {
        println!("{what}\n0 passed, 1 failed");
        ExitCode::FAILURE
    };
    let (gates, own) = match selected(filter.as_deref(), gates, own) {
        Ok(kept) => kept,
        Err(why) => return failed_to(format!("gpu tests: {why}")),
    };
    let required = std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1");
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) if !required => {
            let skipped: usize =
                gates.iter().map(|g| g.gpu_test_count()).sum::<usize>() + own.len();
            println!("gpu tests: {e}\n0 passed, 0 failed, {skipped} skipped");
            return ExitCode::SUCCESS;
        }
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => {
            return failed_to(format!(
                "gpu tests: {e}\n{REQUIRE_VAR}=1: a GPU is required"
            ))
        }
        Err(e) => return failed_to(format!("gpu tests: {e}")),
    };
    println!("gpu tests on {}", gpu.info().name);
    let mut crates: Vec<KernelCrate> = Vec::new();
    for c in gates.iter().flat_map(|g| g.kernel_crates()) {
        if !crates.iter().any(|k| std::ptr::eq(k.modules, c.modules)) {
            crates.push(*c);
        }
    }
    let arch = match host::module_arch(&gpu) {
        Ok(a) => a,
        Err(e) => return failed_to(format!("gpu tests: {e}")),
    };
    println!("module: {arch}");
    let modules = match load_builds(&gpu, &crates, arch) {
        Ok(m) => m,
        Err(e) => return failed_to(format!("loading the builds: {e}")),
    };
    let results = gates
        .iter()
        .flat_map(|gate| gate.gpu_tests(&gpu, &modules))
        .chain(own.iter().map(|(name, test)| TestResult {
            name: name.to_string(),
            failures: test(&gpu, &modules[0]).err().into_iter().collect(),
        }));
    let (mut passed, mut failed) = (0, 0);
    for t in results {
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
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(_: &Gpu, _: &Module) -> Result<(), String> {
        Ok(())
    }

    #[test]
    fn a_filter_keeps_what_contains_it_and_refuses_matching_nothing() {
        let own: [OwnTest; 2] = [("every m from 1 to 8", pass), ("three parts", pass)];
        let names =
            |f| selected(f, &[], &own).map(|(_, o)| o.iter().map(|t| t.0).collect::<Vec<_>>());
        assert_eq!(names(None), Ok(vec!["every m from 1 to 8", "three parts"]));
        assert_eq!(names(Some("parts")), Ok(vec!["three parts"]));
        let e = names(Some("every m from 1 to 9")).unwrap_err();
        assert_eq!(e, "no gate or test matches `every m from 1 to 9`");
        let gates = crate::families::ALL;
        let (g, o) = selected(Some("gemv"), gates, &own).unwrap();
        assert_eq!(
            (g.iter().map(|g| g.name()).collect::<Vec<_>>(), o.len()),
            (vec!["gemv"], 0)
        );
    }
}
