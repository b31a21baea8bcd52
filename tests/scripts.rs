//! `scripts/gpu-suite ab` with stand-in gates binaries: what it runs, in which order, what it
//! writes, and what it refuses, without a GPU. The stand-ins write one timing row each, so the
//! medians and ratios of `scripts/ab.py` are known in advance.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A folder of its own under the system's temporary folder, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrocuda-scripts-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// A stand-in `gates` in `dir` whose Rust time is `rust_us` and whose .cu time is the round's
/// number (from the `--jsonl` path's last digit), and which appends its arguments to `calls`.
fn stand_in(dir: &Path, rust_us: f64, calls: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let script = format!(
        r#"#!/usr/bin/env bash
echo "$(basename "$(dirname "$0")") $*" >> '{calls}'
while [ $# -gt 0 ]; do [ "$1" = --jsonl ] && out=$2; shift; done
round=${{out%.jsonl}}; round=${{round##*-}}
echo '{{"gate":"gemv","kind":"run"}}' > "$out"
echo "{{\"gate\":\"gemv\",\"kind\":\"timing\",\"case\":\"o_proj 6144x5120\",\"arm\":\"e4m3 m=1\",\"rust_us\":{rust_us},\"cu_us\":$round}}" >> "$out"
"#,
        calls = calls.display()
    );
    let path = dir.join("gates");
    std::fs::write(&path, script).unwrap();
    let chmod = Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    assert!(chmod.success());
}

fn suite(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/gpu-suite"))
        .args(args)
        .output()
        .expect("bash runs scripts/gpu-suite")
}

#[test]
fn ab_alternates_the_builds_round_by_round_and_tables_their_medians() {
    let dir = scratch("ab");
    let calls = dir.join("calls");
    stand_in(&dir.join("old"), 10.0, &calls);
    stand_in(&dir.join("new"), 9.5, &calls);
    let (old, new, out) = (dir.join("old"), dir.join("new"), dir.join("out"));
    let builds = [
        format!("old={}", old.display()),
        format!("new={}", new.display()),
    ];
    let run = suite(&[
        "ab",
        out.to_str().unwrap(),
        "3",
        &builds[0],
        &builds[1],
        "--",
        "gemv",
        "--batches",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // Each round runs every build once, in the order given, with the options as given.
    let calls = std::fs::read_to_string(&calls).unwrap();
    let order: Vec<String> = calls
        .lines()
        .map(|l| {
            let (build, args) = l.split_once(' ').unwrap();
            assert!(args.starts_with("gemv --batches 1 --jsonl "), "{l}");
            format!("{build} {}", args.rsplit('/').next().unwrap())
        })
        .collect();
    assert_eq!(
        order,
        [
            "old gemv-old-1.jsonl",
            "new gemv-new-1.jsonl",
            "old gemv-old-2.jsonl",
            "new gemv-new-2.jsonl",
            "old gemv-old-3.jsonl",
            "new gemv-new-3.jsonl",
        ]
    );
    for f in ["gemv-old-3.log", "gemv-new-1.jsonl", "nvidia-smi.csv"] {
        assert!(out.join(f).is_file(), "{f} not written");
    }

    // The table: the median of the rounds (the .cu's 1, 2, 3 -> 2) and the ratio to `old`.
    let table = std::fs::read_to_string(out.join("gemv-ab.txt")).unwrap();
    assert!(
        table.contains("| o_proj | e4m3 m=1 | 10.00 | 9.50 | 0.950 | 2.00 / 2.00 |"),
        "{table}"
    );
    assert!(
        table.contains("geomean e4m3 new/old: 0.950 over 1"),
        "{table}"
    );
    assert!(stdout.contains("geomean e4m3 new/old: 0.950"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ab_refuses_what_it_cannot_run_before_running_anything() {
    let dir = scratch("ab-refusals");
    let calls = dir.join("calls");
    stand_in(&dir.join("a"), 1.0, &calls);
    stand_in(&dir.join("b"), 1.0, &calls);
    let build = |name: &str, folder: &str| format!("{name}={}", dir.join(folder).display());
    let (a, b, missing, again) = (
        build("a", "a"),
        build("b", "b"),
        build("b", "missing"),
        build("a", "b"),
    );
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    for args in [
        vec!["ab", out, "two", &a, &b, "--", "gemv"],
        vec!["ab", out, "0", &a, &b, "--", "gemv"],
        vec!["ab", out, "2", &a, "--", "gemv"],
        vec!["ab", out, "2", &a, &b, "--"],
        vec!["ab", out, "2", &a, &b, "gemv"],
        vec!["ab", out, "2", &a, &missing, "--", "gemv"],
        vec!["ab", out, "2", &a, &again, "--", "gemv"],
        vec!["ab", out, "2", "a", &b, "--", "gemv"],
    ] {
        let run = suite(&args);
        assert_eq!(run.status.code(), Some(2), "{args:?}");
    }
    assert!(!calls.exists(), "a refused run started a gate");
    std::fs::remove_dir_all(&dir).unwrap();
}
