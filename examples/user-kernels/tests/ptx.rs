//! The example crate's PTX without a GPU: each kernel's normalised PTX against its golden file
//! (`golden/`), a source build against the blessed module (`ptx/blessed/`, which `build.rs`
//! embeds without a PTX-capable toolchain), the kernel table's instructions, and the .cu twin's
//! entries and parameter lists against the Rust build's. After an intended change:
//!
//! ```text
//! FERROCUDA_BLESS=1 cargo test --release -p user-kernels --test ptx
//! ```
//!
//! rewrites `golden/` and `ptx/blessed/` from the current build (built from source) for review.

#[path = "../../../tests/common/mod.rs"]
mod common;

use ptx_tools::golden;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Once;

const HOW_TO_BLESS: &str = "if the change is intended, bless it with `FERROCUDA_BLESS=1 cargo \
    test --release -p user-kernels --test ptx` (from a build with a PTX-capable toolchain) and \
    commit examples/user-kernels/golden/ and examples/user-kernels/ptx/blessed/";

fn dir(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn manifest(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("a manifest that is not JSON: {e}"))
}

fn blessed(arch: &str, file: &str) -> String {
    let path = dir("ptx/blessed")
        .join(common::arch_dir(arch, user_kernels::ARCH))
        .join(file);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; {HOW_TO_BLESS}", path.display()))
}

fn kernels() -> Vec<(String, String)> {
    golden::normalized_kernels(user_kernels::PTX).unwrap_or_else(|e| panic!("malformed PTX: {e}"))
}

/// Under `FERROCUDA_BLESS=1`, rewrites the golden files and the blessed module from the current
/// build, once, before any test reads them.
fn bless_if_asked() {
    static BLESS: Once = Once::new();
    BLESS.call_once(|| {
        if std::env::var("FERROCUDA_BLESS").map_or(true, |v| v != "1") {
            return;
        }
        assert_eq!(
            manifest(user_kernels::MANIFEST)["origin"],
            "source",
            "FERROCUDA_BLESS=1: this build embedded the blessed PTX; there is nothing new to bless"
        );
        golden::write(&dir("golden"), &kernels()).unwrap();
        for m in user_kernels::MODULES {
            let at = dir("ptx/blessed").join(common::arch_dir(m.arch, user_kernels::ARCH));
            std::fs::create_dir_all(&at).unwrap();
            std::fs::write(at.join("kernels.ptx"), m.ptx).unwrap();
            std::fs::write(at.join("manifest.json"), m.manifest).unwrap();
        }
        common::say("blessed: golden/ and ptx/blessed/ rewritten from the current build");
    });
}

#[test]
fn every_kernel_matches_its_golden_ptx() {
    bless_if_asked();
    let problems = golden::problems(&dir("golden"), &kernels());
    assert!(
        problems.is_empty(),
        "the kernels' PTX differs from the golden PTX:\n\n{}\n\n{HOW_TO_BLESS}",
        problems.join("\n\n")
    );
}

/// A build from source reproduces the blessed module byte for byte from the sources it was
/// blessed with; otherwise a machine without a PTX toolchain would embed other kernels.
#[test]
fn a_source_build_reproduces_the_blessed_ptx() {
    let test = "a_source_build_reproduces_the_blessed_ptx";
    bless_if_asked();
    if manifest(user_kernels::MANIFEST)["origin"] != "source" {
        assert!(
            !common::require_cpu_tools(),
            "{test}: this build embedded the blessed PTX and {}=1",
            common::REQUIRE_VAR
        );
        common::skip(
            test,
            "this build embedded the blessed PTX, there is no source build to compare",
        );
        return;
    }
    for m in user_kernels::MODULES {
        let (built, blessed_manifest) = (
            manifest(m.manifest),
            manifest(&blessed(m.arch, "manifest.json")),
        );
        assert_eq!(
            built["sources_sha256"], blessed_manifest["sources_sha256"],
            "{}: the kernel sources changed since the PTX was blessed; {HOW_TO_BLESS}",
            m.arch
        );
        assert!(
            blessed(m.arch, "kernels.ptx") == m.ptx,
            "{}: the same sources built to other PTX than ptx/blessed/ ({} blessed, {} now); \
             {HOW_TO_BLESS}",
            m.arch,
            blessed_manifest["ptx_sha256"],
            built["ptx_sha256"]
        );
    }
}

/// Each kernel of the table is in the PTX with the instructions it is written with, and
/// without those it must not have (nor local memory, flushed denormals or approximate division).
#[test]
fn the_kernel_table_holds_for_the_ptx() {
    let entries = common::entries(user_kernels::PTX);
    for spec in user_kernels_gpu::KERNELS {
        let entry = entries
            .iter()
            .find(|e| e.name == spec.name)
            .unwrap_or_else(|| panic!("`{}` is not in the PTX", spec.name));
        for insn in spec.requires {
            assert!(entry.body.contains(insn), "{}: no `{insn}`", spec.name);
        }
        for insn in spec
            .forbids
            .iter()
            .chain(&[".local", ".ftz", "div.approx", "div.full"])
        {
            assert!(!entry.body.contains(insn), "{}: has `{insn}`", spec.name);
        }
    }
    assert_eq!(
        entries.len(),
        user_kernels_gpu::KERNELS.len(),
        "a kernel outside the table"
    );
}

/// The .cu twin, compiled by NVRTC, declares exactly the Rust build's entries with the same
/// parameter types, so one typed launch fits both.
#[test]
fn the_cu_twin_declares_the_same_entries_and_parameters() {
    let test = "the_cu_twin_declares_the_same_entries_and_parameters";
    let signatures = |ptx: &str| -> Vec<(String, Vec<common::ParamType>)> {
        common::entries(ptx)
            .iter()
            .map(|e| (e.name.to_string(), e.param_types()))
            .collect()
    };
    let mut cu = Vec::new();
    for source in user_kernels::REFERENCE {
        match host::reference::compile(source.name, source.text, user_kernels::ARCH) {
            Ok(ptx) => cu.extend(signatures(&ptx)),
            Err(host::Error::NoNvrtc) => {
                common::missing_tool(test, "libnvrtc", "the pip wheel nvidia-cuda-nvrtc==13.0.88");
                return;
            }
            Err(e) => panic!("{}: {e}", source.name),
        }
    }
    assert_eq!(signatures(user_kernels::PTX), cu);
}
