//! Two builds compared: unchanged, a real kernel change, a one-constant change, a renamed
//! kernel, and malformed or missing input.

use super::*;

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
    assert_eq!(gates(&t, &["ptx-diff", "--cu", &good, &good]).code, 2);
}
