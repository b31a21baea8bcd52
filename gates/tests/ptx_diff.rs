//! `gates ptx-diff`, `ptx-report` and `ptx-snapshot` run as the built binary on real PTX of
//! this repository's builds (`tests/fixtures/`, see its README): exit statuses, statuses per
//! kernel, the diff of a one-constant change, a renamed kernel, malformed input, snapshots, and
//! (with ptxas, cuobjdump and NVRTC) the resource table, SASS and the .cu side.

#[path = "../../tests/common/mod.rs"]
mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

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

#[test]
fn the_same_build_is_unchanged_and_exits_0() {
    let t = scratch("same");
    let a = fixture("a8e85dd");
    let run = gates(&t, &["ptx-diff", &a, &format!("{a}/kernels.ptx"), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = json(&run);
    assert_eq!(v["changed"], false);
    assert_eq!(
        statuses(&v),
        pairs(&[
            ("quantize_q8_1", "unchanged"),
            ("read_stream", "unchanged"),
            ("rms_norm", "unchanged"),
            ("rms_norm_zq8_f32", "unchanged"),
        ])
    );
}

#[test]
fn the_norm_q8_rework_changes_three_kernels_and_exits_1() {
    let t = scratch("rework");
    let (a, b) = (fixture("4c327c9"), fixture("a8e85dd"));
    let run = gates(&t, &["ptx-diff", &a, &b, "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v = json(&run);
    assert_eq!(
        statuses(&v),
        pairs(&[
            ("quantize_q8_1", "changed"),
            ("read_stream", "unchanged"),
            ("rms_norm", "changed"),
            ("rms_norm_zq8_f32", "changed"),
        ])
    );
    // Stage-by-stage quantization held twice the conversions of per-group quantization.
    let q = &v["kernels"][0];
    assert_eq!(
        (&q["A"]["mix"]["conversions"], &q["B"]["mix"]["conversions"]),
        (&64.into(), &32.into())
    );
    assert!(q["ptx_diff"]
        .as_str()
        .unwrap()
        .starts_with("--- a/quantize_q8_1 (PTX)\n+++ b/quantize_q8_1 (PTX)\n@@"));

    let text = gates(&t, &["ptx-diff", &a, &b, "--no-diff"]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout
            .contains("3 changed, 1 unchanged, 0 added, 0 removed"),
        "{}",
        text.stdout
    );
    assert!(
        !text.stdout.contains("\n@@"),
        "--no-diff printed a diff:\n{}",
        text.stdout
    );
    let row = text
        .stdout
        .lines()
        .find(|l| l.starts_with("quantize_q8_1 "))
        .unwrap();
    assert!(row.contains(" changed ") && row.contains("64→32"), "{row}");
}

#[test]
fn a_one_constant_change_diffs_to_exactly_its_two_lines() {
    let t = scratch("constant");
    let run = gates(
        &t,
        &[
            "ptx-diff",
            &fixture("a8e85dd"),
            &fixture("a8e85dd-read_stream-sentinel.ptx"),
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("1 changed, 3 unchanged, 0 added, 0 removed"),
        "{}",
        run.stdout
    );
    let changed: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| {
            (l.starts_with('-') || l.starts_with('+'))
                && !l.starts_with("---")
                && !l.starts_with("+++")
        })
        .collect();
    // -1.0f32 is 0fBF800000 (-1082130432 as a stored i32), -2.0f32 is 0fC0000000.
    assert_eq!(
        changed,
        [
            "-setp.eq.f32 %p2, %r6, 0fBF800000;",
            "+setp.eq.f32 %p2, %r6, 0fC0000000;",
            "-st.global.b32 [%rd4], -1082130432;",
            "+st.global.b32 [%rd4], -1073741824;",
        ],
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("--- a/read_stream (PTX)"));
}

#[test]
fn a_renamed_kernel_is_removed_and_added_with_the_same_body() {
    let t = scratch("renamed");
    let original = fixture("a8e85dd/kernels.ptx");
    let text = std::fs::read_to_string(&original).unwrap();
    assert!(text.contains(".visible .entry read_stream("));
    let renamed = t.join("renamed.ptx");
    std::fs::write(&renamed, text.replace("read_stream", "stream_read")).unwrap();
    let run = gates(
        &t,
        &["ptx-diff", &original, renamed.to_str().unwrap(), "--json"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v = json(&run);
    assert_eq!(
        statuses(&v),
        pairs(&[
            ("quantize_q8_1", "unchanged"),
            ("read_stream", "removed"),
            ("rms_norm", "unchanged"),
            ("rms_norm_zq8_f32", "unchanged"),
            ("stream_read", "added"),
        ])
    );
    assert_eq!(v["kernels"][1]["same_body_as"], "stream_read");
    assert_eq!(v["kernels"][4]["same_body_as"], "read_stream");
    assert_eq!(v["summary"]["added"], 1);
    let text = gates(&t, &["ptx-diff", &original, renamed.to_str().unwrap()]);
    assert!(
        text.stdout.contains("added (renamed from read_stream)"),
        "{}",
        text.stdout
    );
}

#[test]
fn malformed_or_missing_input_is_a_one_line_error_and_exits_2() {
    let t = scratch("malformed");
    let good = fixture("a8e85dd/kernels.ptx");
    let text = std::fs::read_to_string(&good).unwrap();
    // Cut inside the second kernel's body.
    let second = text.match_indices(".visible .entry").nth(1).unwrap().0;
    let truncated = t.join("truncated.ptx");
    std::fs::write(&truncated, &text[..second + 400]).unwrap();
    let run = gates(&t, &["ptx-diff", &good, truncated.to_str().unwrap()]);
    assert_clean_error(
        &run,
        "entry `read_stream`: no closing brace before the end of the module",
    );

    let not_ptx = fixture("a8e85dd/manifest.json");
    assert_clean_error(
        &gates(&t, &["ptx-diff", &not_ptx, &good]),
        "no `.version` directive",
    );

    let binary = t.join("binary.ptx");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x01]).unwrap();
    assert_clean_error(
        &gates(&t, &["ptx-diff", binary.to_str().unwrap(), &good]),
        "is not UTF-8 text",
    );

    assert_clean_error(
        &gates(&t, &["ptx-diff", "no-such-build", &good]),
        "`no-such-build` is not a PTX file, a build folder",
    );
    // A folder that is not a build folder.
    assert_clean_error(
        &gates(&t, &["ptx-diff", t.to_str().unwrap(), &good]),
        "holds no kernels.ptx",
    );
    // Usage errors come from clap, also with status 2.
    assert_eq!(gates(&t, &["ptx-diff"]).code, 2);
    assert_eq!(gates(&t, &["ptx-diff", "--cu", &good]).code, 2);
}

#[test]
fn a_snapshot_of_the_current_build_diffs_clean_against_it() {
    let t = scratch("snapshot");
    let run = gates(&t, &["ptx-snapshot", "before"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = t.join("ptx-snapshots/before");
    assert_eq!(
        std::fs::read_to_string(dir.join("kernels.ptx")).unwrap(),
        ferrocuda::PTX
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("manifest.json")).unwrap(),
        ferrocuda::MANIFEST
    );
    let run = gates(&t, &["ptx-diff", "before", "--no-diff"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with("A: snapshot before ("),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("B: current build ("), "{}", run.stdout);

    assert_clean_error(&gates(&t, &["ptx-snapshot", "before"]), "pass --replace");
    assert_eq!(gates(&t, &["ptx-snapshot", "before", "--replace"]).code, 0);
    assert_clean_error(
        &gates(&t, &["ptx-snapshot", "../escape"]),
        "is not a snapshot name",
    );
}

/// A folder of its own under the system's temporary folder, outside the project (the scratch
/// folders above are under `target/`, inside it).
fn outside(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrocuda-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of the `gates` binary as `copied-gates/bin/gates` in a fresh scratch folder, made once
/// per test process. Before snapshots were found from the current directory, such a copy wrote
/// them to `copied-gates/ptx-snapshots`, two levels above itself.
fn copied_exe() -> &'static Path {
    static COPY: OnceLock<PathBuf> = OnceLock::new();
    COPY.get_or_init(|| {
        let bin = scratch("copied-gates").join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let exe = bin.join("gates");
        std::fs::copy(env!("CARGO_BIN_EXE_gates"), &exe).unwrap();
        exe
    })
}

/// The copied `gates` run from `cwd` with no target or snapshot folder named, plus `envs`.
fn copied_gates(cwd: &Path, envs: &[(&str, &Path)], args: &[&str]) -> Run {
    let mut cmd = Command::new(copied_exe());
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove(gates::ptx::builds::SNAPSHOT_DIR_VAR)
        .envs(envs.iter().copied());
    // A child forked by another test's thread while the copy was being written may still hold
    // the file open for a moment ("text file busy").
    let mut tries = 0;
    let out = loop {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.expect("running the copied gates"),
        }
    };
    Run {
        code: out.status.code().expect("gates was killed by a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every `ptx-snapshots` folder under `dir`.
fn snapshot_folders(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "ptx-snapshots") {
                    found.push(path.clone());
                }
                stack.push(path);
            }
        }
    }
    found
}

#[test]
fn run_outside_the_project_a_copied_binary_refuses_to_snapshot_and_writes_nothing() {
    let dir = outside("snapshot-outside");
    let cwd = dir.join("work/deep");
    std::fs::create_dir_all(&cwd).unwrap();
    let run = copied_gates(&cwd, &[], &["ptx-snapshot", "before"]);
    assert_clean_error(&run, "is not inside the ferrocuda project");
    assert!(
        run.stderr.contains("FERROCUDA_SNAPSHOT_DIR"),
        "{}",
        run.stderr
    );
    assert_eq!(snapshot_folders(&dir), Vec::<PathBuf>::new());
    let above_the_binary = copied_exe().ancestors().nth(2).unwrap();
    assert_eq!(snapshot_folders(above_the_binary), Vec::<PathBuf>::new());

    // A folder the user names is used as it is.
    let named = dir.join("my-snapshots");
    let run = copied_gates(
        &cwd,
        &[("FERROCUDA_SNAPSHOT_DIR", &named)],
        &["ptx-snapshot", "before"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(named.join("before/kernels.ptx").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_snapshot_from_a_project_subfolder_goes_to_the_project_target() {
    let dir = outside("snapshot-project");
    let project = dir.join("checkout");
    let cwd = project.join("kernels-gpu/src");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        "[workspace]\nmembers = []\n\n[package]\nname = \"ferrocuda\"\n",
    )
    .unwrap();
    // A workspace of another name between the two is not the project.
    std::fs::write(
        project.join("kernels-gpu/Cargo.toml"),
        "[workspace]\n\n[package]\nname = \"other\"\n",
    )
    .unwrap();
    let run = copied_gates(&cwd, &[], &["ptx-snapshot", "before"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        snapshot_folders(&dir),
        vec![project.join("target/ptx-snapshots")]
    );
    assert_eq!(
        std::fs::read_to_string(project.join("target/ptx-snapshots/before/kernels.ptx")).unwrap(),
        ferrocuda::PTX
    );
    let run = copied_gates(&cwd, &[], &["ptx-diff", "before", "--no-diff"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

fn tools_or_skip(test: &str, sass: bool) -> bool {
    if common::find_ptxas().is_none() {
        common::missing_tool(test, "ptxas", common::PTXAS_INSTALL);
        return false;
    }
    if sass && gates::ptx::sass::find().is_none() {
        common::missing_tool(test, "cuobjdump", gates::ptx::sass::INSTALL);
        return false;
    }
    true
}

#[test]
fn ptxas_resources_show_the_register_change_of_the_rework() {
    let test = "ptxas_resources_show_the_register_change_of_the_rework";
    if !tools_or_skip(test, false) {
        return;
    }
    let t = scratch("resources");
    let run = gates(
        &t,
        &[
            "ptx-diff",
            &fixture("4c327c9"),
            &fixture("a8e85dd"),
            "--json",
        ],
    );
    let v = json(&run);
    assert!(v["ptxas"]["version"].as_str().unwrap().starts_with('V'));
    for k in v["kernels"].as_array().unwrap() {
        for side in ["A", "B"] {
            let r = &k[side]["ptxas"];
            assert_eq!(r["name"], k["name"]);
            assert!(r["registers"].as_u64().unwrap() > 0, "{r}");
            assert_eq!(
                (&r["spill_stores"], &r["stack_frame"]),
                (&0.into(), &0.into())
            );
        }
    }
    // Stage-by-stage quantization (A) held more values live than per-group quantization (B).
    let quantize = &v["kernels"][0];
    let regs = |side: &str| quantize[side]["ptxas"]["registers"].as_u64().unwrap();
    assert!(
        regs("A") > regs("B"),
        "quantize_q8_1: {} -> {} registers",
        regs("A"),
        regs("B")
    );
    // read_stream's PTX is unchanged, so its resources must be too.
    let stream = &v["kernels"][1];
    assert_eq!(stream["A"]["ptxas"], stream["B"]["ptxas"]);
}

#[test]
fn sass_diff_finds_the_constant_change_only_in_read_stream() {
    let test = "sass_diff_finds_the_constant_change_only_in_read_stream";
    if !tools_or_skip(test, true) {
        return;
    }
    let t = scratch("sass");
    let (a, b) = (
        fixture("a8e85dd"),
        fixture("a8e85dd-read_stream-sentinel.ptx"),
    );
    let run = gates(&t, &["ptx-diff", &a, &b, "--sass", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v = json(&run);
    let sass: Vec<(String, bool)> = v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().into(),
                k["sass_changed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sass,
        [
            ("quantize_q8_1".to_string(), false),
            ("read_stream".to_string(), true),
            ("rms_norm".to_string(), false),
            ("rms_norm_zq8_f32".to_string(), false),
        ]
    );
    let diff = v["kernels"][1]["sass_diff"].as_str().unwrap();
    assert!(diff.starts_with("--- a/read_stream (SASS)"), "{diff}");
    // The comparison with the sentinel: an immediate -1 before, -2 after.
    assert!(
        diff.contains("\n-FSETP.NEU.AND P0, PT, R21, -1, PT\n+FSETP.NEU.AND P0, PT, R21, -2, PT\n"),
        "{diff}"
    );
}

#[test]
fn the_report_and_cu_diff_put_rust_beside_the_reference() {
    let test = "the_report_and_cu_diff_put_rust_beside_the_reference";
    let t = scratch("report");
    let run = gates(&t, &["ptx-report", "--json"]);
    if run.code == 2 && run.stderr.contains("libnvrtc not found") {
        common::missing_tool(test, "libnvrtc", "install nvidia-cuda-nvrtc==13.0.88");
        return;
    }
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = json(&run);
    assert_eq!(v["rust"]["label"], "current build");
    assert_eq!(v["cu"]["label"], "reference .cu");
    let names: Vec<&str> = v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    let mut every: Vec<&str> = kernels_gpu::kernel_specs().map(|k| k.name).collect();
    every.sort_unstable();
    assert_eq!(
        names, every,
        "the report lists every kernel of every family"
    );
    for k in v["kernels"].as_array().unwrap() {
        assert!(k["rust"]["mix"]["instructions"].as_u64().unwrap() > 0);
        assert!(k["cu"]["mix"]["instructions"].as_u64().unwrap() > 0);
    }
    let text = gates(&t, &["ptx-report"]);
    assert_eq!(text.code, 0);
    assert!(
        text.stdout.contains("cells: rust/cu where they differ"),
        "{}",
        text.stdout
    );

    // The two builds are different code, but --cu decides on the numerics: every kind a kernel
    // has in one build only is explained, so it exits 0, and the diffs come with --full only.
    let cu = gates(&t, &["ptx-diff", "--cu"]);
    assert_eq!(cu.code, 0, "{}\n{}", cu.stdout, cu.stderr);
    assert!(
        cu.stdout
            .contains("cu: reference .cu (NVRTC --gpu-architecture="),
        "{}",
        cu.stdout
    );
    assert!(cu.stdout.contains(" 0 unexplained"), "{}", cu.stdout);
    assert!(!cu.stdout.contains("UNEXPLAINED"), "{}", cu.stdout);
    assert!(!cu.stdout.contains("\n--- "), "no diffs without --full");
    let full = gates(&t, &["ptx-diff", "--cu", "--full"]);
    assert_eq!(full.code, 0);
    assert!(
        full.stdout.len() > 10 * cu.stdout.len(),
        "--full adds every kernel's diff"
    );
    let v = json(&gates(&t, &["ptx-diff", "--cu", "--json"]));
    assert_eq!(v["numerics_unexplained"], false);
    assert!(v["kernels"][0]["rust"]["numerics"].is_object());
}

#[test]
fn a_revision_diffs_clean_against_itself_and_a_bad_one_is_refused() {
    let test = "a_revision_diffs_clean_against_itself_and_a_bad_one_is_refused";
    let in_git = Command::new("git")
        .args(["rev-parse", "--verify", "--quiet", "HEAD"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !in_git {
        common::skip(test, "not run from a git checkout");
        return;
    }
    let t = scratch("rev");
    assert_clean_error(
        &gates(&t, &["ptx-diff", "--rev", "no-such-rev"]),
        "`no-such-rev` is not a commit of",
    );
    assert_clean_error(
        &gates(&t, &["ptx-diff", "--rev", "HEAD.."]),
        "is not a revision range",
    );
    // HEAD is built once (in a worktree, kept under ptx-revs/) and found again for B.
    let run = gates(&t, &["ptx-diff", "--rev", "HEAD..HEAD", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = json(&run);
    assert!(
        v["A"]["label"]
            .as_str()
            .unwrap()
            .starts_with("revision HEAD ("),
        "{}",
        v["A"]
    );
    assert_eq!(v["summary"]["changed"], 0);
    assert_eq!(
        run.stderr.matches("building the PTX of").count(),
        1,
        "{}",
        run.stderr
    );
    assert_eq!(
        t.join("ptx-revs")
            .read_dir()
            .unwrap()
            .flatten()
            .filter(|e| e.path().join("kernels.ptx").is_file())
            .count(),
        1
    );
}
