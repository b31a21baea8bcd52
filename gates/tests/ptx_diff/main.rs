//! `gates ptx-diff`, `ptx-report` and `ptx-snapshot` run as the built binary on real PTX of
//! this repository's builds (`tests/fixtures/`, see its README): exit statuses, statuses per
//! kernel, the diff of a one-constant change, a renamed kernel, malformed input, snapshots, and
//! (with ptxas, cuobjdump and NVRTC) the resource table, SASS and the .cu side.
//!
//! The tests are in modules by concern: `diff`, `snapshot`, `tools` and `rev`.

#[path = "../../../tests/common/mod.rs"]
mod common;

mod diff;
mod rev;
mod snapshot;
mod tools;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// A scratch folder of its own for each test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ptx-diff-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `gates` with `args`, snapshots kept under `target` (its CARGO_TARGET_DIR).
fn gates(target: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_gates"))
        .args(args)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("running gates");
    Run {
        code: out.status.code().expect("gates was killed by a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("--json printed no JSON ({e}):\n{}", run.stdout))
}

/// `(name, status)` of every kernel in a `--json` report.
fn statuses(v: &Value) -> Vec<(String, String)> {
    v["kernels"]
        .as_array()
        .expect("kernels is a list")
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_string(),
                k["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// An error run: exit 2, one `gates: error:` line naming `needle`, no panic.
fn assert_clean_error(run: &Run, needle: &str) {
    assert_eq!(
        run.code, 2,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let first = run.stderr.lines().next().unwrap_or("");
    assert!(
        first.starts_with("gates: error: ") && first.contains(needle),
        "expected one `gates: error:` line with `{needle}`, got:\n{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}
