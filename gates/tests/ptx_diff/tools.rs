//! What needs ptxas, cuobjdump or NVRTC: the resource table, the SASS diff, and the report and
//! numerics check against the reference .cu.

use super::*;

fn tools_or_skip(test: &str, sass: bool) -> bool {
    if common::find_ptxas().is_none() {
        common::missing_tool(test, "ptxas", common::PTXAS_INSTALL);
        return false;
    }
    if sass && ptx_tools::sass::find().is_none() {
        common::missing_tool(test, "cuobjdump", ptx_tools::sass::INSTALL);
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
    let mut every: Vec<&str> = kernels_gpu::kernel_specs()
        .filter(|k| k.in_module(ferrocuda::ARCH))
        .map(|k| k.name)
        .collect();
    every.sort_unstable();
    assert_eq!(
        names, every,
        "the report lists every kernel of every family in the primary module"
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

/// `--cu A --reference FILE.cu...`: a build folder against .cu files of its own choosing (as
/// another kernel crate's are), labelled as such and compared kernel by kernel.
#[test]
fn cu_takes_a_build_folder_and_its_own_reference_files() {
    let test = "cu_takes_a_build_folder_and_its_own_reference_files";
    let t = scratch("cu-reference");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cu = |name: &str| root.join("reference").join(name).display().to_string();
    let folder = fixture("a8e85dd");
    let args = ["ptx-diff", "--cu", &folder, "--reference"];
    let run = gates(
        &t,
        &[&args[..], &[&cu("norm_q8.cu"), &cu("stream.cu")]].concat(),
    );
    if run.code == 2 && run.stderr.contains("libnvrtc not found") {
        common::missing_tool(test, "libnvrtc", "install nvidia-cuda-nvrtc==13.0.88");
        return;
    }
    assert!(run.code < 2, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(&format!("rust: {folder} (")),
        "{}",
        run.stdout
    );
    // The fixture's four kernels, and swiglu_q8_1, which norm_q8.cu has gained since.
    assert!(run.stdout.contains("5 kernels compared"), "{}", run.stdout);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("swiglu_q8_1 ") && l.contains(" -/")),
        "{}",
        run.stdout
    );
    let without_cu = gates(&t, &["ptx-diff", "--reference", &cu("stream.cu")]);
    assert_eq!(without_cu.code, 2, "{}", without_cu.stderr);
    assert!(without_cu.stderr.contains("--cu"), "{}", without_cu.stderr);
}

/// The parity check catches what only a GPU run would otherwise show: one product of the
/// current build's `rms_norm` rounded before its add (a contraction the .cu makes and the Rust
/// would not) is reported as a kind in one build only, unexplained, and fails the comparison,
/// where the same build unplanted has none (`the_report_and_cu_diff_put_rust_beside_the_reference`).
#[test]
fn cu_flags_a_planted_contraction_difference() {
    let test = "cu_flags_a_planted_contraction_difference";
    let t = scratch("cu-planted");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let folder = t.join("planted");
    std::fs::create_dir_all(&folder).unwrap();
    let entry = ferrocuda::PTX.find(".visible .entry rms_norm(").unwrap();
    let at = entry + ferrocuda::PTX[entry..].find("fma.rn.f32").unwrap();
    let end = at + ferrocuda::PTX[at..].find(';').unwrap();
    let ops: Vec<&str> = ferrocuda::PTX[at + "fma.rn.f32".len()..end]
        .split(',')
        .map(str::trim)
        .collect();
    let [d, a, b, c] = ops[..] else {
        panic!("an fma has four operands: {ops:?}")
    };
    let planted = format!(
        "{}mul.rn.f32 {d}, {a}, {b};\n\tadd.rn.f32 {d}, {d}, {c}{}",
        &ferrocuda::PTX[..at],
        &ferrocuda::PTX[end..]
    );
    std::fs::write(folder.join("kernels.ptx"), planted).unwrap();
    std::fs::write(folder.join("manifest.json"), ferrocuda::MANIFEST).unwrap();
    let folder = folder.display().to_string();
    let norm_q8 = root.join("reference/norm_q8.cu").display().to_string();
    let run = gates(&t, &["ptx-diff", "--cu", &folder, "--reference", &norm_q8]);
    if run.code == 2 && run.stderr.contains("libnvrtc not found") {
        common::missing_tool(test, "libnvrtc", "install nvidia-cuda-nvrtc==13.0.88");
        return;
    }
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let flagged: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("UNEXPLAINED"))
        .collect();
    assert!(
        !flagged.is_empty() && flagged.iter().all(|l| l.starts_with("rms_norm ")),
        "{}",
        run.stdout
    );
}
