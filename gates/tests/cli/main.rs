//! The `gates` command line itself: help, option checks before the GPU starts, and the one-line
//! exit 2 of a machine without a GPU. Every case runs the built binary.

mod refusals;

use std::process::{Command, Output};

fn gates(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gates"))
        .args(args)
        .output()
        .expect("the gates binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether this machine has a CUDA driver (then a gate would run instead of refusing).
fn has_driver() -> bool {
    // SAFETY: only probes whether the library can be opened.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// A refusal: exit status 2 and one line on stderr naming what was wrong; nothing on stdout.
fn assert_refused(args: &[&str], needle: &str) {
    let o = gates(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in: {err}");
    assert_eq!(
        err.trim().lines().count(),
        1,
        "{args:?}: more than one line: {err}"
    );
    assert!(
        stdout(&o).is_empty(),
        "{args:?} printed before refusing: {}",
        stdout(&o)
    );
}

#[test]
fn help_lists_every_gate_and_the_ptx_tools() {
    let o = gates(&["--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for gate in gates::families::ALL {
        assert!(
            text.contains(gate.name()),
            "`{}` missing from:\n{text}",
            gate.name()
        );
    }
    for tool in ["ptx-diff", "ptx-report", "ptx-snapshot"] {
        assert!(text.contains(tool), "`{tool}` missing from:\n{text}");
    }
}

#[test]
fn each_gate_explains_its_checks_and_common_options() {
    for gate in gates::families::ALL {
        let o = gates(&[gate.name(), "--help"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        for opt in [
            "--device",
            "--rounds",
            "--seed",
            "--shapes",
            "--classes",
            "--no-timing",
            "--jsonl",
            "--plot",
        ] {
            assert!(
                text.contains(opt),
                "{}: `{opt}` missing from its help",
                gate.name()
            );
        }
        assert!(
            text.contains("Exit status"),
            "{}: no exit statuses in its help",
            gate.name()
        );
    }
}

/// The gates' earlier names, which scripts and recorded runs use, still run them: each alias
/// shows the gate's own help, says which name is the gate's and which the alias, and parses the
/// gate's options as the name does.
#[test]
fn each_gates_earlier_name_is_an_alias_that_runs_it() {
    // Clap wraps the listing to the terminal: compared with its whitespace runs as one space.
    let listing = stdout(&gates(&["--help"]))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for (alias, name, bad_shape, why) in [
        ("q8-fuse", "norm-q8", "32x0", "ncols: 0 is not"),
        ("gemv-e4m3", "gemv", "32x0", "out_f: is 0"),
        ("mla-decode", "mla", "1x0", "kv: is 0"),
    ] {
        let gate = gates::families::ALL
            .iter()
            .find(|g| g.name() == name)
            .unwrap_or_else(|| panic!("no gate named {name}"));
        assert_eq!(gate.aliases(), [alias], "{name}");
        assert!(
            listing.contains(&format!("{name} ")) && listing.contains(&format!("[alias: {alias}]")),
            "gates --help does not list {alias} as an alias:\n{listing}"
        );
        let o = gates(&[alias, "--help"]);
        assert!(o.status.success(), "{alias}: {}", stderr(&o));
        let help = stdout(&o);
        assert_eq!(help, stdout(&gates(&[name, "--help"])), "{alias}");
        assert!(
            help.contains(&format!("Usage: gates {name} "))
                && help.contains(&format!(
                    "Named {name}; {alias} (its earlier name) is an alias"
                )),
            "{alias} --help:\n{help}"
        );
        assert_refused(&[alias, "--shapes", bad_shape], why);
    }
}

/// The values clap offers for `--classes` in a gate's short help.
fn offered_classes(gate: &str) -> Vec<String> {
    let o = gates(&[gate, "-h"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // The option's entry, its wrapped lines joined, up to the next option.
    let mut lines = text
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("--classes"));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("{gate}: no --classes in:\n{text}"));
    let rest: Vec<&str> = lines.take_while(|l| !l.starts_with('-')).collect();
    let line = [first]
        .into_iter()
        .chain(rest)
        .collect::<Vec<_>>()
        .join(" ");
    let list = line
        .split_once("[possible values: ")
        .and_then(|(_, rest)| rest.split_once(']'))
        .unwrap_or_else(|| panic!("{gate}: no possible values in `{line}`"))
        .0;
    list.split(", ").map(str::to_string).collect()
}

#[test]
fn each_gate_offers_only_its_own_classes() {
    let all = ["uniform", "zeros", "outliers", "padding", "tiny", "edge"];
    for (gate, classes) in [
        ("norm-q8", &all[..]),
        ("gemv", &all[..4]),
        ("mla", &["uniform", "outliers", "edge"][..]),
    ] {
        assert_eq!(offered_classes(gate), classes, "{gate}");
        let long = stdout(&gates(&[gate, "--help"]));
        for class in all.iter().filter(|c| !classes.contains(c)) {
            assert!(
                !long.contains(&format!("- {class}:")),
                "{gate}: its long help offers `{class}`"
            );
        }
    }
    let o = gates(&["mla", "--classes", "zeros"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("zeros"), "{}", stderr(&o));
}

#[test]
fn ptx_tools_help_says_where_the_cuda_tools_come_from_within_100_columns() {
    let diff = stdout(&gates(&["ptx-diff", "--help"]));
    for wheel in ["nvidia-cuda-nvcc", "nvidia-cuda-cuobjdump"] {
        assert!(
            diff.contains(wheel),
            "ptx-diff --help omits {wheel}:\n{diff}"
        );
    }
    let report = stdout(&gates(&["ptx-report", "--help"]));
    assert!(
        report.contains("nvidia-cuda-nvrtc, found through python3"),
        "ptx-report --help:\n{report}"
    );
    for tool in ["ptx-diff", "ptx-report", "ptx-snapshot"] {
        let text = stdout(&gates(&[tool, "--help"]));
        for line in text.lines() {
            assert!(
                line.chars().count() < 100,
                "{tool} --help: a line of {} columns: {line}",
                line.chars().count()
            );
        }
    }
}

#[test]
fn every_commands_help_is_wrapped_to_the_terminal_or_100_columns() {
    let help = |args: &[&str], columns: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gates"));
        cmd.args(args).env_remove("COLUMNS");
        if let Some(c) = columns {
            cmd.env("COLUMNS", c);
        }
        stdout(&cmd.output().expect("the gates binary runs"))
    };
    let widest = |text: &str| text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    for command in ["norm-q8", "gemv", "mla", "swiglu", "plot"] {
        let text = help(&[command, "--help"], None);
        assert!(widest(&text) <= 100, "{command} --help:\n{text}");
        // A narrower terminal gets narrower lines.
        let narrow = help(&[command, "--help"], Some("80"));
        assert!(
            widest(&narrow) <= 80,
            "{command} --help at 80 columns:\n{narrow}"
        );
    }
    assert!(widest(&help(&["--help"], None)) <= 100);
}

#[test]
fn mla_takes_the_seed_and_v32_geometries_only() {
    let o = gates(&["mla", "--help"]);
    let text = stdout(&o);
    assert!(text.contains("--geometry"), "{text}");
    assert!(text.contains("DeepSeek-V3.2"), "{text}");
    let o = gates(&["mla", "--geometry", "v4"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("v3.2"), "{}", stderr(&o));
    assert_refused(
        &["mla", "--geometry", "v3.2", "--shapes", "9x2048"],
        "1..=8",
    );
}

/// A fixture of real gate rows (`gates/tests/fixtures/charts/`).
fn chart_fixture(gate: &str) -> String {
    format!(
        "{}/tests/fixtures/charts/{gate}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn plot_charts_each_gates_jsonl_without_a_gpu() {
    let help = stdout(&gates(&["plot", "--help"]));
    for needle in ["--from", "--out", "Exit status", "last run"] {
        assert!(help.contains(needle), "`{needle}` missing from:\n{help}");
    }
    assert!(stdout(&gates(&["--help"])).contains("plot"));
    // The fixtures are receipts of runs under the gates' earlier names, their aliases now.
    for (gate, title) in [
        ("q8-fuse", "fused against chain"),
        ("gemv-e4m3", "every arm at each m"),
        ("mla-decode", "against kv depth"),
        ("decode-step", "one layer's step"),
    ] {
        let out =
            std::env::temp_dir().join(format!("ferrocuda-cli-{gate}-{}.svg", std::process::id()));
        let out_s = out.to_str().expect("a UTF-8 temp path");
        let o = gates(&["plot", "--from", &chart_fixture(gate), "--out", out_s]);
        assert!(o.status.success(), "{gate}: {}", stderr(&o));
        assert!(stdout(&o).contains(out_s), "{}", stdout(&o));
        let svg = std::fs::read_to_string(&out).expect("the chart was written");
        std::fs::remove_file(&out).ok();
        assert!(svg.starts_with("<svg"), "{gate}");
        assert!(svg.contains(title), "{gate}: no `{title}`");
    }
}

#[test]
fn plot_refuses_what_it_cannot_chart_in_one_line() {
    let tmp = std::env::temp_dir();
    let write = |name: &str, text: &str| {
        let p = tmp.join(format!("ferrocuda-cli-{}-{name}", std::process::id()));
        std::fs::write(&p, text).expect("a temp file");
        p.to_str().expect("a UTF-8 temp path").to_string()
    };
    let out = tmp.join("ferrocuda-cli-plot.svg");
    let out = out.to_str().expect("a UTF-8 temp path");
    let good = chart_fixture("q8-fuse");
    let folder = tmp.to_str().expect("a UTF-8 temp folder");
    for (from, to, why) in [
        (
            "/nonexistent-folder/run.jsonl",
            out,
            "--from /nonexistent-folder/run.jsonl",
        ),
        (good.as_str(), "run.png", "ending in .svg"),
        (good.as_str(), folder, "is a folder"),
        (
            good.as_str(),
            "/nonexistent-folder/run.svg",
            "no folder /nonexistent-folder",
        ),
    ] {
        assert_refused(&["plot", "--from", from, "--out", to], why);
    }
    let same = write("same.svg", "");
    assert_refused(
        &["plot", "--from", &same, "--out", &same],
        "is also the --from file",
    );
    std::fs::remove_file(same).ok();
    for (name, text, why) in [
        (
            "bad.jsonl",
            "{\"gate\":\"norm-q8\",\"kind\":\"run\"}\nnot json\n",
            "line 2: not a JSON object",
        ),
        (
            "untimed.jsonl",
            "{\"gate\":\"norm-q8\",\"kind\":\"run\"}\n",
            "--no-timing",
        ),
        (
            "other.jsonl",
            "{\"gate\":\"gemm\",\"kind\":\"timing\",\"case\":\"c\",\"arm\":\"a\"}\n",
            "`gemm`, which is not a gate",
        ),
    ] {
        let from = write(name, text);
        assert_refused(&["plot", "--from", &from, "--out", out], why);
        std::fs::remove_file(from).ok();
    }
    let o = gates(&["plot", "--from", &good]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
