//! Golden PTX: each kernel's normalised PTX is checked in as `kernels-gpu/golden/<kernel>.ptx`,
//! and the whole module as `ptx/blessed/` (`kernels.ptx` and `manifest.json`, which `build.rs`
//! embeds on machines without a PTX-capable toolchain). Any change to the kernels' PTX fails
//! here until it is blessed:
//!
//! ```text
//! FERROCUDA_BLESS=1 cargo test --release -p gates --test golden
//! ```
//!
//! which rewrites both from the current build (it must be built from source) for review and
//! commit. The fallback itself is tested too: the root package builds with
//! `FERROCUDA_PTX_TOOLCHAIN=none` and must embed the blessed PTX.

#[path = "../../tests/common/mod.rs"]
mod common;

use ptx_tools::golden;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

const BLESS_VAR: &str = "FERROCUDA_BLESS";
const BLESS_COMMAND: &str = "FERROCUDA_BLESS=1 cargo test --release -p gates --test golden";
const HOW_TO_BLESS: &str = "if the change is intended, bless it with \
    `FERROCUDA_BLESS=1 cargo test --release -p gates --test golden` (from a build with a \
    PTX-capable toolchain) and commit kernels-gpu/golden/ and ptx/blessed/";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("gates sits in the workspace root")
        .to_path_buf()
}

fn golden_dir() -> PathBuf {
    root().join("kernels-gpu/golden")
}

fn blessed_dir() -> PathBuf {
    root().join("ptx/blessed")
}

fn json(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not JSON: {e}"))
}

fn field(manifest: &Value, key: &str) -> String {
    manifest[key]
        .as_str()
        .unwrap_or_else(|| panic!("manifest has no string `{key}`: {manifest:#}"))
        .to_string()
}

fn embedded_manifest() -> Value {
    json(ferrocuda::MANIFEST, "ferrocuda::MANIFEST")
}

/// The blessed folder of `arch`'s module.
fn blessed_module_dir(arch: &str) -> PathBuf {
    blessed_dir().join(common::arch_dir(arch, ferrocuda::ARCH))
}

fn blessed_manifest() -> Value {
    blessed_module_manifest(ferrocuda::ARCH)
}

fn blessed_module_manifest(arch: &str) -> Value {
    let path = blessed_module_dir(arch).join("manifest.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; {HOW_TO_BLESS}", path.display()));
    json(&text, &path.display().to_string())
}

/// Each kernel of the embedded PTX with its normalised text, in module order.
fn normalized_kernels() -> Vec<(String, String)> {
    golden::normalized_kernels(ferrocuda::PTX).unwrap_or_else(|e| panic!("malformed PTX: {e}"))
}

/// Under `FERROCUDA_BLESS=1`, rewrites the golden files and the blessed module from the
/// current build, once per test run, before any test reads them.
fn bless_if_asked() {
    static BLESS: Once = Once::new();
    BLESS.call_once(|| {
        if std::env::var(BLESS_VAR).map_or(true, |v| v != "1") {
            return;
        }
        let origin = field(&embedded_manifest(), "origin");
        assert_eq!(
            origin, "source",
            "{BLESS_VAR}=1: this build embedded the blessed PTX (no PTX-capable toolchain), so \
             there is nothing new to bless; build with the toolchain build.rs asks for"
        );
        let golden = golden_dir();
        golden::write(&golden, &normalized_kernels()).unwrap();
        let blessed = blessed_dir();
        for m in ferrocuda::MODULES {
            let dir = blessed_module_dir(m.arch);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("kernels.ptx"), m.ptx).unwrap();
            std::fs::write(dir.join("manifest.json"), m.manifest).unwrap();
        }
        common::say(&format!(
            "blessed: {} and {} rewritten from the current build",
            golden.display(),
            blessed.display()
        ));
    });
}

/// Whether this build is for the arch the golden files were blessed for; says so when not.
fn blessed_arch_or_skip(test: &str) -> bool {
    let arch = field(&blessed_manifest(), "arch");
    if arch != ferrocuda::ARCH {
        common::skip(
            test,
            &format!(
                "the golden PTX is for {arch}, this build for {}",
                ferrocuda::ARCH
            ),
        );
    }
    arch == ferrocuda::ARCH
}

#[test]
fn every_kernel_matches_its_golden_ptx() {
    bless_if_asked();
    if !blessed_arch_or_skip("every_kernel_matches_its_golden_ptx") {
        return;
    }
    let problems = golden::problems(&golden_dir(), &normalized_kernels());
    assert!(
        problems.is_empty(),
        "the kernels' PTX differs from the golden PTX:\n\n{}\n\n{HOW_TO_BLESS}",
        problems.join("\n\n")
    );
}

/// A build from source must reproduce the blessed module byte for byte, from the sources it
/// was blessed with; otherwise machines without a PTX toolchain would embed other kernels.
#[test]
fn a_source_build_reproduces_the_blessed_ptx() {
    let test = "a_source_build_reproduces_the_blessed_ptx";
    bless_if_asked();
    if !blessed_arch_or_skip(test) {
        return;
    }
    let embedded = embedded_manifest();
    if field(&embedded, "origin") != "source" {
        assert!(
            !common::require_cpu_tools(),
            "{test}: this build embedded the blessed PTX (no PTX-capable Rust toolchain found) \
             and {}=1: install the toolchain build.rs names so that CI rebuilds the kernels",
            common::REQUIRE_VAR
        );
        common::skip(
            test,
            "this build embedded the blessed PTX, there is no source build to compare",
        );
        return;
    }
    for m in ferrocuda::MODULES {
        let (embedded, blessed) = (json(m.manifest, m.arch), blessed_module_manifest(m.arch));
        assert_eq!(
            field(&embedded, "sources_sha256"),
            field(&blessed, "sources_sha256"),
            "{}: the kernel sources changed since the PTX was blessed (a build without a PTX \
             toolchain would refuse the blessed PTX); {HOW_TO_BLESS}",
            m.arch
        );
        let path = blessed_module_dir(m.arch).join("kernels.ptx");
        let ptx =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            ptx == m.ptx,
            "the same kernel sources built to other PTX than {} (sha256 {} blessed, {} now; \
             blessed with {}, built with {}): the PTX build is not reproducible with this \
             toolchain; {HOW_TO_BLESS}",
            path.display(),
            field(&blessed, "ptx_sha256"),
            field(&embedded, "ptx_sha256"),
            field(&blessed, "rustc"),
            field(&embedded, "rustc")
        );
    }
}

/// Builds the root package in a scratch target dir with `envs` (and no toolchain named by the
/// caller's environment); returns (success, output).
fn build_root_package(target: &Path, envs: &[(&str, &str)]) -> (bool, String) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root())
        .args(["build", "--offline", "-p", "ferrocuda"])
        .env("CARGO_TARGET_DIR", target)
        .env_remove("FERROCUDA_PTX_RUSTC")
        .env_remove("FERROCUDA_PTX_CARGO")
        .envs(envs.iter().copied())
        .output()
        .expect("running cargo");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// With the toolchain search switched off, `build.rs` embeds the blessed PTX (origin
/// `blessed`, with a warning), and refuses it for an arch it was not blessed for.
#[test]
fn without_a_ptx_toolchain_the_build_embeds_the_blessed_ptx() {
    bless_if_asked();
    let blessed = blessed_manifest();
    let arch = field(&blessed, "arch");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("blessed-fallback");
    let (ok, log) = build_root_package(
        &target,
        &[
            ("FERROCUDA_PTX_TOOLCHAIN", "none"),
            ("FERROCUDA_ARCH", &arch),
        ],
    );
    assert!(ok, "the build without a PTX toolchain failed:\n{log}");
    assert!(
        log.contains(
            "warning: ferrocuda@0.1.0: FERROCUDA_PTX_TOOLCHAIN=none: embedding the blessed PTX"
        ),
        "no fallback warning in the build log:\n{log}"
    );
    // `cargo build` without --release: the dev profile, whose folder is `debug`; every arch's
    // module is the blessed one.
    for m in ferrocuda::MODULES {
        let sub = common::arch_dir(m.arch, &arch);
        let built = target.join("ptx/debug").join(sub);
        let ptx = std::fs::read_to_string(built.join("kernels.ptx")).unwrap();
        let expected =
            std::fs::read_to_string(blessed_module_dir(m.arch).join("kernels.ptx")).unwrap();
        assert!(
            ptx == expected,
            "{}: the fallback build embedded other PTX than ptx/blessed/",
            m.arch
        );
        let manifest = json(
            &std::fs::read_to_string(built.join("manifest.json")).unwrap(),
            "the fallback manifest",
        );
        assert_eq!(field(&manifest, "origin"), "blessed");
        let blessed = blessed_module_manifest(m.arch);
        let mut same = manifest.clone();
        same["origin"] = blessed["origin"].clone();
        assert_eq!(
            same, blessed,
            "{}: the fallback manifest differs from the blessed one beyond origin",
            m.arch
        );
    }

    let other = if arch == "sm_80" { "sm_86" } else { "sm_80" };
    let (ok, log) = build_root_package(
        &target,
        &[
            ("FERROCUDA_PTX_TOOLCHAIN", "none"),
            ("FERROCUDA_ARCH", other),
        ],
    );
    assert!(
        !ok,
        "the build for {other} embedded PTX blessed for {arch}:\n{log}"
    );
    for needle in [
        format!("it was blessed for {arch}, this build is for {other}"),
        "apt-get install rustc-web rust-web-src cargo-web".to_string(),
    ] {
        assert!(log.contains(&needle), "`{needle}` is missing from:\n{log}");
    }
}

/// `FERROCUDA_PTX_RUSTC` without `FERROCUDA_PTX_CARGO`, or the reverse, names half a toolchain:
/// the build fails and says so, rather than ignoring it and building with another toolchain.
#[test]
fn half_an_explicit_toolchain_fails_the_build() {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("half-toolchain");
    for var in ["FERROCUDA_PTX_RUSTC", "FERROCUDA_PTX_CARGO"] {
        let (ok, log) = build_root_package(&target, &[(var, "/nonexistent/tool")]);
        assert!(!ok, "the build with only {var} set succeeded:\n{log}");
        assert!(
            log.contains("FERROCUDA_PTX_RUSTC and FERROCUDA_PTX_CARGO name one toolchain"),
            "{var}: no message naming the pair in:\n{log}"
        );
    }
}

/// The bless command that the failure message and the docs give is the release build's, the one
/// `cargo test --release` already built (a debug form would build the whole workspace again).
#[test]
fn the_bless_command_given_everywhere_is_the_release_one() {
    assert!(HOW_TO_BLESS.contains(BLESS_COMMAND), "{HOW_TO_BLESS}");
    let debug_form = BLESS_COMMAND.replace("--release ", "");
    let files = [
        "README.md",
        "docs/ptx-diff.md",
        "docs/adding-a-family.md",
        "build.rs",
        "gates/tests/golden.rs",
    ];
    for file in files {
        let text =
            std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            text.contains(BLESS_COMMAND),
            "{file} does not give `{BLESS_COMMAND}`"
        );
        assert!(!text.contains(&debug_form), "{file} gives `{debug_form}`");
    }
}
