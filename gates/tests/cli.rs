//! The `gates` command line itself: help, option checks before the GPU starts, and the one-line
//! exit 2 of a machine without a GPU. Every case runs the built binary.

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
fn bad_shapes_are_refused_before_the_gpu_starts() {
    assert_refused(&["norm-q8", "--shapes", "1x33"], "multiple of 32");
    assert_refused(&["norm-q8", "--shapes", "4096"], "is not NROWSxNCOLS");
    assert_refused(&["norm-q8", "--shapes", "0x32"], "0 is not in 1..");
    assert_refused(&["norm-q8", "--shapes", "1x4096,1x4096"], "given twice");
    assert_refused(&["norm-q8", "--shapes", "99999968x99999968"], "i32::MAX");
    assert_refused(&["norm-q8", "--shapes", "65536x65536"], "i32::MAX");
}

#[test]
fn an_unwritable_jsonl_path_is_named_before_any_output() {
    let path = "/nonexistent-folder/run.jsonl";
    assert_refused(&["norm-q8", "--jsonl", path], path);
}

#[test]
fn a_chart_into_a_missing_folder_is_refused() {
    assert_refused(
        &["norm-q8", "--plot", "/nonexistent-folder/run.svg"],
        "/nonexistent-folder",
    );
}

#[test]
fn unknown_classes_are_refused_by_the_parser() {
    let o = gates(&["norm-q8", "--classes", "purple"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("purple"), "{}", stderr(&o));
}

#[test]
fn without_a_gpu_a_gate_says_so_in_one_line_and_exits_2() {
    if has_driver() {
        eprintln!("without_a_gpu_a_gate_says_so_in_one_line_and_exits_2: skipped: this machine has a CUDA driver");
        return;
    }
    for gate in gates::families::ALL {
        let o = gates(&[gate.name(), "--no-timing"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", gate.name());
        assert_eq!(err.trim().lines().count(), 1, "{}: {err}", gate.name());
        assert!(
            err.starts_with("gates: cannot run: no CUDA driver"),
            "{err}"
        );
    }
}

/// `--max-kv` below the shallowest default cell would leave no cell to run: refused as out of its
/// range, which is named, while the shallowest itself gets past the parser.
#[test]
fn mla_names_max_kv_and_its_range() {
    for kv in ["0", "100", "2047"] {
        assert_refused(
            &["mla", "--max-kv", kv],
            &format!("gates: error: --max-kv {kv}: out of range; it takes 2048 or more"),
        );
    }
    let help = stdout(&gates(&["mla", "--help"]));
    assert!(help.contains("2048 (the shallowest) or more"), "{help}");
    if !has_driver() {
        let o = gates(&["mla", "--max-kv", "2048", "--no-timing"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).starts_with("gates: cannot run: no CUDA driver"),
            "{}",
            stderr(&o)
        );
    }
}

/// `--shapes` refuses what the launchers refuse and takes what they take: a GEMV past i32::MAX
/// weights and an MLA pool past i32::MAX floats (the kernels address both in 64 bits) pass the
/// parser, on to the host-memory check and the GPU; a size past a kernel's 32-bit arithmetic is
/// named.
#[test]
fn shapes_are_refused_exactly_where_the_launchers_refuse_them() {
    assert_refused(
        &["gemv", "--shapes", "1073741824x1"],
        "--shapes `1073741824x1`: in_f: 2 x in_f = 2147483648 exceeds i32::MAX",
    );
    assert_refused(
        &["gemv", "--shapes", "2147483648x1"],
        "in_f: 2147483648 exceeds i32::MAX",
    );
    assert_refused(
        &["mla", "--shapes", "1x2147483648"],
        "kv: 2147483648 exceeds i32::MAX",
    );
    if has_driver() {
        eprintln!(
            "shapes_are_refused_exactly_where_the_launchers_refuse_them: the accepted shapes \
             skipped: this machine has a CUDA driver, and they would run"
        );
        return;
    }
    for args in [
        &["gemv", "--shapes", "65536x65536", "--no-timing"][..],
        &["mla", "--shapes", "1x4194304", "--no-timing"][..],
    ] {
        let o = gates(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        // Past the parser: no GPU here, or (first) not the host memory such a case needs.
        assert!(
            err.starts_with("gates: cannot run: no CUDA driver")
                || (err.starts_with("gates: error: --shapes: ") && err.contains("of host memory")),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_zero_size_in_a_shape_is_named() {
    assert_refused(&["gemv", "--shapes", "32x0"], "out_f: is 0");
    assert_refused(&["mla", "--shapes", "1x0"], "kv: is 0");
    assert_refused(&["norm-q8", "--shapes", "32x0"], "ncols: 0 is not");
    assert_refused(&["norm-q8", "--shapes", "0x32"], "nrows: 0 is not");
}

#[test]
fn gemv_batches_are_checked_before_the_gpu_starts() {
    for (list, why) in [
        ("", "--batches: no m given; give some of 1, 2, 4, 8"),
        (",", "--batches: no m given"),
        ("1,2,1", "--batches: 1 is given twice"),
        (
            "3",
            "--batches: `3` is not an m the kernels take (1, 2, 4, 8)",
        ),
        ("0", "--batches: `0` is not an m"),
        ("1,16", "--batches: `16` is not an m"),
        ("two", "--batches: `two` is not an m"),
    ] {
        assert_refused(&["gemv", "--batches", list], why);
    }
    let help = stdout(&gates(&["gemv", "--help"]));
    assert!(help.contains("--batches"), "{help}");
    if !has_driver() {
        // A valid list gets as far as the GPU.
        let o = gates(&["gemv", "--batches", "8,1", "--no-timing"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).starts_with("gates: cannot run: no CUDA driver"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn a_class_given_twice_is_refused() {
    assert_refused(
        &["norm-q8", "--classes", "zeros,uniform,zeros"],
        "--classes: zeros is given twice",
    );
}

/// Every number option takes a leading `-` as a value (clap alone would call `-1` an unexpected
/// argument) and refuses what is negative, not a number, or out of its range, naming the option,
/// the value and the range in one line.
#[test]
fn number_options_refuse_negative_and_out_of_range_values_in_one_line() {
    for (args, why) in [
        (
            &["norm-q8", "--rounds", "-1"][..],
            "negative; it takes 1 to 1000",
        ),
        (
            &["norm-q8", "--rounds=-1"][..],
            "negative; it takes 1 to 1000",
        ),
        (
            &["norm-q8", "--rounds", "0"][..],
            "out of range; it takes 1 to 1000",
        ),
        (
            &["norm-q8", "--rounds", "1001"][..],
            "out of range; it takes 1 to 1000",
        ),
        (
            &["norm-q8", "--iters", "-5"][..],
            "negative; it takes 1 to 100000",
        ),
        (
            &["norm-q8", "--iters", "100001"][..],
            "out of range; it takes 1 to 100000",
        ),
        (
            &["norm-q8", "--iters", "1e3"][..],
            "not a whole number; it takes 1 to 100000",
        ),
        (
            &["gemv", "--device", "-1"][..],
            "negative; it takes 0 or more",
        ),
        (
            &["gemv", "--seed", "-1"][..],
            "negative; it takes 0 or more",
        ),
        (
            &["mla", "--max-kv", "-1"][..],
            "negative; it takes 2048 or more",
        ),
        (
            &["mla", "--d-rope", "-4"][..],
            "negative; it takes 0 or more",
        ),
        (
            &["ptx-diff", "--context", "-1", "a"][..],
            "negative; it takes 0 or more",
        ),
    ] {
        let (option, value) = match args[1].split_once('=') {
            Some(pair) => pair,
            None => (args[1], args[2]),
        };
        assert_refused(args, &format!("gates: error: {option} {value}: {why}"));
    }
}

#[test]
fn negative_sizes_and_batches_are_named() {
    assert_refused(
        &["norm-q8", "--shapes", "-1x32"],
        "--shapes `-1x32`: NROWS -1 is negative",
    );
    assert_refused(
        &["gemv", "--shapes", "32x-64"],
        "--shapes `32x-64`: OUT -64 is negative",
    );
    assert_refused(
        &["mla", "--shapes", "1x-2048"],
        "--shapes `1x-2048`: KV -2048 is negative",
    );
    assert_refused(
        &["gemv", "--batches", "-1,2"],
        "--batches: `-1` is not an m",
    );
}

#[test]
fn a_chart_that_would_not_be_an_svg_of_this_run_is_refused() {
    let tmp = std::env::temp_dir();
    let folder = tmp.to_str().expect("a UTF-8 temp folder");
    assert_refused(&["norm-q8", "--plot", folder], "is a folder");
    assert_refused(&["norm-q8", "--plot", "run.png"], "ending in .svg");
    assert_refused(&["norm-q8", "--plot", "run"], "ending in .svg");
    let same = tmp.join("ferrocuda-cli-same.svg");
    let same = same.to_str().expect("a UTF-8 temp path");
    assert_refused(
        &["norm-q8", "--plot", same, "--jsonl", same],
        "is also the --jsonl file",
    );
    // The same file under another spelling, before either exists.
    let dir_name = tmp.file_name().expect("a named temp folder");
    let respelt = tmp.join("..").join(dir_name).join("ferrocuda-cli-same.svg");
    let respelt = respelt.to_str().expect("a UTF-8 temp path");
    assert_refused(
        &["norm-q8", "--plot", same, "--jsonl", respelt],
        "is also the --jsonl file",
    );
    assert_refused(
        &["norm-q8", "--plot", "run.svg", "--no-timing"],
        "--plot: with --no-timing",
    );
    let help = stdout(&gates(&["norm-q8", "--help"]));
    for says in ["when the run ends", "Refused with --no-timing"] {
        assert!(
            help.contains(says),
            "--plot's help does not say `{says}`:\n{help}"
        );
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
