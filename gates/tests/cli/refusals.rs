//! The options each gate refuses, before the GPU starts: one line on stderr, exit status 2.

use super::*;

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
        ("", "--batches: no m given; give some of 1 to 8"),
        (",", "--batches: no m given"),
        ("1,2,1", "--batches: 1 is given twice"),
        ("9", "--batches: `9` is not an m the kernels take (1 to 8)"),
        ("3-2", "--batches: `3-2` is an empty range"),
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
        let o = gates(&["gemv", "--batches", "8,1-3", "--no-timing"]);
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
