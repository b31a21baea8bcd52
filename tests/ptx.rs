//! Checks of the embedded PTX modules (`ferrocuda::MODULES`, `ferrocuda::PTX` the primary one)
//! that need no GPU: each assembles with ptxas for its arch without spills or stack, the manifest describes it, it uses the instructions the device
//! wrappers document and none of the forbidden ones, and it is what the build left in
//! `target/ptx/<profile>/`.

mod common;

use common::{entries, Entry};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// Nothing may flush denormals or divide approximately (the default numeric profile), and
/// nothing may touch local memory.
const FORBIDDEN: &[&str] = &[".ftz", "div.approx", "div.full", ".local"];

/// The one flush-to-zero instruction the default profile has: the `2^q` inside libdevice's
/// `expf`, whose argument is a remainder near [-1, 1] and whose result is never denormal, so
/// flushing cannot change a bit (NVCC emits it for `expf` without fast-math).
const FTZ_ALLOWED: &str = "ex2.approx.ftz.f32";

fn kernels() -> Vec<Entry<'static>> {
    let kernels = entries(ferrocuda::PTX);
    assert!(
        !kernels.is_empty(),
        "ferrocuda::PTX declares no .visible .entry"
    );
    kernels
}

/// Each kernel table row with its entry: in the primary module, or for an arch-specific kernel
/// in the module of its target (none where that module was not built).
fn specified_entries() -> Vec<(&'static kernels_gpu::abi::KernelSpec, Entry<'static>)> {
    kernels_gpu::kernel_specs()
        .filter_map(|spec| {
            let arch = spec.only_on.unwrap_or(ferrocuda::ARCH);
            let module = ferrocuda::MODULES.iter().find(|m| m.arch == arch)?;
            let entry = entries(module.ptx)
                .into_iter()
                .find(|k| k.name == spec.name)
                .unwrap_or_else(|| panic!("the {arch} module has no entry `{}`", spec.name));
            Some((spec, entry))
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn manifest() -> serde_json::Value {
    serde_json::from_str(ferrocuda::MANIFEST)
        .unwrap_or_else(|e| panic!("the manifest is not JSON ({e}):\n{}", ferrocuda::MANIFEST))
}

/// The value of a string field of the manifest.
fn manifest_str(key: &str) -> String {
    manifest()
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_else(|| panic!("manifest has no string `{key}`:\n{}", ferrocuda::MANIFEST))
        .to_string()
}

/// The manifest's `kernels` array.
fn manifest_kernels() -> Vec<String> {
    serde_json::from_value(manifest()["kernels"].clone())
        .unwrap_or_else(|e| panic!("manifest `kernels` is not a list of names: {e}"))
}

/// Every arch's module assembles for its own target with no spills or stack, and within the
/// registers each kernel's largest block may have.
#[test]
fn every_kernel_assembles_without_spills_or_stack() {
    let test = "every_kernel_assembles_without_spills_or_stack";
    let Some(ptxas) = common::find_ptxas() else {
        common::missing_tool(test, "ptxas", common::PTXAS_INSTALL);
        return;
    };
    for m in ferrocuda::MODULES {
        let report = common::assemble(&ptxas, m.ptx, m.arch, "ferrocuda");
        common::say(&common::table(
            &format!(
                "ferrocuda's {} module (ptxas {}, {}):",
                m.arch,
                common::ptxas_version(&ptxas),
                ptxas.display()
            ),
            &report,
        ));
        let declared: BTreeSet<&str> = entries(m.ptx).iter().map(|k| k.name).collect();
        let assembled: BTreeSet<&str> = report.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            assembled, declared,
            "{}: ptxas -v reported other kernels than the PTX declares",
            m.arch
        );
        let bad: Vec<String> = report
            .iter()
            .filter(|e| e.stack_frame != 0 || e.spill_stores != 0 || e.spill_loads != 0)
            .map(|e| {
                format!(
                    "{}: {} bytes stack frame, {} bytes spill stores, {} bytes spill loads",
                    e.name, e.stack_frame, e.spill_stores, e.spill_loads
                )
            })
            .collect();
        assert!(
            bad.is_empty(),
            "{}: kernels with a stack frame or spills:\n{}",
            m.arch,
            bad.join("\n")
        );
        let over = common::over_register_budget(&report, |name| {
            kernels_gpu::kernel_specs()
                .find(|s| s.name == name)
                .map(|s| s.max_block)
        });
        assert!(
            over.is_empty(),
            "{}: kernels that cannot launch their largest block:\n{}",
            m.arch,
            over.join("\n")
        );
    }
}

/// Every arch's module declares its target and the primary module's kernels, and its manifest
/// describes it.
#[test]
fn every_module_is_built_for_its_arch() {
    let primary: BTreeSet<&str> = kernels().iter().map(|k| k.name).collect();
    assert!(
        ferrocuda::MODULES
            .iter()
            .any(|m| m.arch == ferrocuda::ARCH && m.ptx == ferrocuda::PTX),
        "ferrocuda::MODULES lacks the primary module"
    );
    for m in ferrocuda::MODULES {
        assert!(
            m.ptx
                .lines()
                .any(|l| l.trim() == format!(".target {}", m.arch)),
            "the {} module does not declare `.target {}`",
            m.arch,
            m.arch
        );
        let names: BTreeSet<&str> = entries(m.ptx).iter().map(|k| k.name).collect();
        let own = kernels_gpu::kernel_specs().filter(|s| s.only_on == Some(m.arch));
        let expected: BTreeSet<&str> = primary.iter().copied().chain(own.map(|s| s.name)).collect();
        assert_eq!(names, expected, "the {} module's kernels", m.arch);
        let manifest: serde_json::Value = serde_json::from_str(m.manifest).unwrap();
        assert_eq!(manifest["arch"], m.arch);
        assert_eq!(
            manifest["ptx_sha256"],
            sha256_hex(m.ptx.as_bytes()),
            "{}",
            m.arch
        );
    }
}

/// Every kernel of the chained families (`kernels_gpu::CHAINED`) begins, in every module from
/// sm_90 on, with `griddepcontrol.launch_dependents` and `griddepcontrol.wait` before its first
/// global memory access, so that a programmatic dependent launch cannot read a predecessor's
/// output early (those of `kernels_gpu::TRIGGER_AT_EXIT` with the wait alone, the GEMVs with
/// only their weights' reads before it: `kernels_gpu::waits_after_weights`); the other
/// kernels, and every kernel of the older modules, have neither.
#[test]
fn chained_kernels_wait_before_their_inputs_from_sm_90() {
    let specs: Vec<&str> = kernels_gpu::chained_specs()
        .filter(|s| s.in_module("sm_90"))
        .map(|s| s.name)
        .collect();
    assert!(
        specs.contains(&"swiglu") && !specs.contains(&"read_stream"),
        "{specs:?}"
    );
    let mut faults = Vec::new();
    let mut waiting = BTreeSet::new();
    for m in ferrocuda::MODULES {
        for k in entries(m.ptx) {
            let chained = kernels_gpu::chained(k.name);
            match common::chain_entry_fault(
                &k,
                m.arch,
                common::Chain::of(
                    chained,
                    kernels_gpu::triggers_at_exit(k.name),
                    kernels_gpu::waits_after_weights(k.name),
                ),
            ) {
                Some(fault) => faults.push(format!("{}: {fault}", m.arch)),
                None if chained && k.code.contains("griddepcontrol.wait") => {
                    waiting.insert((m.arch, k.name));
                }
                None => {}
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    for arch in ["sm_80", "sm_90"] {
        if ferrocuda::MODULES.iter().any(|m| m.arch == arch) {
            let n = waiting.iter().filter(|(a, _)| *a == arch).count();
            assert_eq!(n, if arch == "sm_90" { specs.len() } else { 0 }, "{arch}");
        }
    }
    for name in kernels_gpu::TRIGGER_AT_EXIT {
        assert!(kernels_gpu::chained(name), "{name}");
    }
}

/// The check above finds what it is for: a global access before the wait (in an inline asm
/// block too), a branch before it, the two instructions swapped or missing, either one where
/// none belongs, and a trigger in a kernel that triggers at exit; and passes the entries as the
/// build writes them.
#[test]
fn chain_entry_faults_are_found() {
    const TRIGGER: &str = "griddepcontrol.launch_dependents;";
    const WAIT: &str = "griddepcontrol.wait;";
    let entry = |body: &str| {
        let code = format!(".visible .entry k(\n)\n{{\n\t.reg .b64 %rd<4>;\n{body}\n\tret;\n}}\n");
        common::Entry {
            name: "k",
            params: Vec::new(),
            body: "",
            code,
        }
    };
    use common::Chain;
    let fault = |body: &str| common::chain_entry_fault(&entry(body), "sm_90", Chain::AtEntry);
    let fault_at_exit =
        |body: &str| common::chain_entry_fault(&entry(body), "sm_90", Chain::AtExit);
    let fault_after_weights =
        |body: &str| common::chain_entry_fault(&entry(body), "sm_90", Chain::AfterWeights);
    let load = "ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];";
    let asm_load = format!("{{ .reg .u64 g; cvta.to.global.u64 g, %rd1; {load} }}");
    let ok = format!("ld.param.b64 %rd1, [k_param_0];\n{TRIGGER}\n{WAIT}\n{load}");
    assert_eq!(fault(&ok), None);
    for bad in [
        format!("{load}\n{TRIGGER}\n{WAIT}"),
        format!("{TRIGGER}\n{asm_load}\n{WAIT}"),
        format!("{TRIGGER}\nst.global.f32 [%rd1], %f1;\n{WAIT}"),
        format!("{TRIGGER}\ncp.async.cg.shared.global [%r1], [%rd1], 16;\n{WAIT}"),
        format!("@%p1 bra $L__BB0_2;\n{TRIGGER}\n{WAIT}"),
        format!("{WAIT}\n{TRIGGER}"),
        format!("{TRIGGER}\n@%p1 {WAIT}"),
        format!("{TRIGGER}\n{load}"),
        load.to_string(),
    ] {
        assert!(fault(&bad).is_some(), "not flagged:\n{bad}");
    }
    assert_eq!(fault_at_exit(&format!("{WAIT}\n{load}")), None);
    for bad in [
        ok.clone(),
        format!("{WAIT}\n{load}\n{TRIGGER}"),
        format!("{load}\n{WAIT}"),
    ] {
        assert!(fault_at_exit(&bad).is_some(), "not flagged:\n{bad}");
    }
    let weights = "cp.async.cg.shared.global [%r1], [%rd1], 16;\ncp.async.commit_group;";
    let branchy =
        format!("{TRIGGER}\n@%p1 bra $L__BB0_2;\n{weights}\n$L__BB0_2:\n{asm_load}\n{WAIT}");
    assert_eq!(fault_after_weights(&branchy), None);
    assert_eq!(fault_after_weights(&ok), None);
    for bad in [
        format!("{TRIGGER}\n{weights}\nld.global.v2.u32 {{%r2, %r3}}, [%rd2];\n{WAIT}"),
        format!("{TRIGGER}\ncp.async.ca.shared.global [%r1], [%rd2], 16;\n{WAIT}"),
        format!("{TRIGGER}\nst.global.f32 [%rd1], %f1;\n{WAIT}"),
        format!("{weights}\n{TRIGGER}\n{WAIT}"),
        format!("{TRIGGER}\n{weights}"),
    ] {
        assert!(fault_after_weights(&bad).is_some(), "not flagged:\n{bad}");
    }
    let plain = entry(&ok);
    assert!(common::chain_entry_fault(&plain, "sm_80", Chain::AtEntry).is_some());
    assert!(common::chain_entry_fault(&plain, "sm_90", Chain::Not).is_some());
    assert_eq!(
        common::chain_entry_fault(&entry(load), "sm_80", Chain::AtEntry),
        None
    );
}

/// With the CUDA pip wheels installed, ptxas needs no `PATH` entry and no `PTXAS`: it is found
/// through python3 (`cuda_wheels`).
#[test]
fn ptxas_is_found_in_the_pip_wheels_on_its_own() {
    let test = "ptxas_is_found_in_the_pip_wheels_on_its_own";
    if cuda_wheels::file("bin/ptxas").is_none() {
        common::missing_tool(test, "ptxas in the pip wheels", common::PTXAS_INSTALL);
        return;
    }
    common::rerun_without(
        "every_kernel_assembles_without_spills_or_stack",
        &["ptxas"],
        &["PTXAS"],
    );
}

/// The wheels of README's install line, as `name==version`: the words after `pip install`'s
/// options up to the end of the command.
fn readme_wheels(readme: &str) -> BTreeSet<String> {
    let start = readme
        .find("python3 -m pip install")
        .expect("README has a pip install line");
    let command = readme[start..].split("\n```").next().expect("a code block");
    command
        .split_whitespace()
        .filter(|w| w.starts_with("nvidia-"))
        .map(str::to_string)
        .collect()
}

/// `nvidia-cuda-nvcc` requires `nvidia-cuda-crt`, `nvidia-nvvm` and `nvidia-cuda-runtime` with
/// no version, so README's line and CI must pin them, or pip takes whatever is newest.
#[test]
fn the_pip_wheels_and_nvccs_dependencies_are_pinned_alike_in_readme_and_ci() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |f: &str| std::fs::read_to_string(root.join(f)).expect(f);
    let readme = readme_wheels(&read("README.md"));
    let ci_run = read(".ci/run");
    let ci: BTreeSet<String> = ci_run
        .split_once("NVIDIA_WHEELS=(")
        .and_then(|(_, rest)| rest.split_once(')'))
        .expect(".ci/run has NVIDIA_WHEELS=( ... )")
        .0
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(
        readme, ci,
        "README's pip line and .ci/run's NVIDIA_WHEELS differ"
    );
    let nvcc = "nvidia-cuda-nvcc==";
    let nvcc_version = ci
        .iter()
        .find_map(|w| w.strip_prefix(nvcc))
        .expect("nvidia-cuda-nvcc is pinned");
    for dep in ["nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-runtime"] {
        let pinned = format!("{dep}=={nvcc_version}");
        assert!(ci.contains(&pinned), "{pinned} missing from {ci:?}");
    }
    for wheel in &ci {
        assert!(wheel.contains("=="), "{wheel} is not pinned");
    }
}

#[test]
fn manifest_describes_the_embedded_ptx() {
    let declared: Vec<&str> = kernels().iter().map(|k| k.name).collect();
    let listed = manifest_kernels();
    assert_eq!(
        listed, declared,
        "the manifest's kernel list is not the PTX's .visible .entry list"
    );
    let specified: BTreeSet<&str> = kernels_gpu::kernel_specs()
        .filter(|k| k.in_module(ferrocuda::ARCH))
        .map(|k| k.name)
        .collect();
    let listed_set: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
    assert_eq!(
        listed_set, specified,
        "the PTX's kernels are not the kernels the families' tables (kernels_gpu::FAMILIES) declare"
    );
    assert_eq!(
        manifest_str("ptx_sha256"),
        sha256_hex(ferrocuda::PTX.as_bytes()),
        "the manifest's ptx_sha256 is not the sha256 of ferrocuda::PTX"
    );
    assert_eq!(manifest_str("arch"), ferrocuda::ARCH);
    assert_eq!(manifest_str("target"), "nvptx64-nvidia-cuda");
    let origin = manifest_str("origin");
    assert!(
        origin == "source" || origin == "blessed",
        "manifest origin `{origin}` is neither `source` nor `blessed`"
    );
    let sources = manifest_str("sources_sha256");
    assert!(
        sources.len() == 64 && sources.bytes().all(|b| b.is_ascii_hexdigit()),
        "manifest sources_sha256 `{sources}` is not a sha256"
    );
    assert!(
        ferrocuda::PTX
            .lines()
            .any(|l| l.trim() == format!(".target {}", ferrocuda::ARCH)),
        "ferrocuda::PTX does not declare `.target {}`",
        ferrocuda::ARCH
    );
}

fn assert_contains(kernel: &Entry<'_>, insns: &[&str]) {
    let missing: Vec<&str> = insns
        .iter()
        .copied()
        .filter(|insn| !kernel.body.contains(insn))
        .collect();
    assert!(
        missing.is_empty(),
        "kernel `{}` lacks {missing:?}; its PTX:\n{}",
        kernel.name,
        kernel.body
    );
}

#[test]
fn kernels_use_the_documented_instructions() {
    for (spec, k) in specified_entries() {
        assert_contains(&k, spec.requires);
    }
}

/// A launch bound the build wrote from `device::launch_bounds::<N, B>()` (`.maxntid N, 1, 1`,
/// `.minnctapersm B`) names the block the kernel table gives that kernel, and every marker left
/// in an entry became one.
#[test]
fn launch_bounds_are_the_kernel_tables_blocks() {
    for (spec, k) in specified_entries() {
        let marked = k.body.contains("// ferrocuda.maxntid ");
        match k.code.split(".maxntid ").nth(1) {
            Some(rest) => {
                let bound = rest.split(',').next().unwrap_or_default().trim();
                assert_eq!(
                    bound,
                    spec.max_block.to_string(),
                    "{}: .maxntid {bound}, but its kernel table says blocks of {}",
                    spec.name,
                    spec.max_block
                );
                assert!(
                    k.code.contains(".minnctapersm "),
                    "{}: .maxntid without .minnctapersm",
                    spec.name
                );
            }
            None => assert!(
                !marked,
                "{}: a launch-bound marker with no .maxntid",
                spec.name
            ),
        }
    }
}

#[test]
fn no_kernel_uses_forbidden_instructions() {
    let mut found = Vec::new();
    let arch_specific = specified_entries()
        .into_iter()
        .filter(|(spec, _)| !spec.in_module(ferrocuda::ARCH))
        .map(|(_, k)| k);
    for k in kernels().into_iter().chain(arch_specific) {
        let own = kernels_gpu::kernel_specs()
            .find(|s| s.name == k.name)
            .map_or(&[][..], |s| s.forbids);
        for (n, line) in k.body.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let code = code.replace(FTZ_ALLOWED, "");
            for pat in FORBIDDEN.iter().chain(own) {
                if code.contains(pat) {
                    found.push(format!("{} (+{n}): `{pat}` in `{}`", k.name, line.trim()));
                }
            }
        }
    }
    // Module-level declarations before the first entry (e.g. `.local` globals) count as well.
    let first = ferrocuda::PTX
        .find(".visible .entry ")
        .unwrap_or(ferrocuda::PTX.len());
    for line in ferrocuda::PTX[..first].lines() {
        let code = line.split("//").next().unwrap_or("");
        for pat in FORBIDDEN {
            if code.contains(pat) {
                found.push(format!("module scope: `{pat}` in `{}`", line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "forbidden instructions (flush-to-zero, approximate division, local memory):\n{}",
        found.join("\n")
    );
}

/// `build.rs` also writes the module to `<target>/ptx/<profile>/` (`FERROCUDA_PTX_DIR`), where
/// `gates ptx-diff` and people read it; it must hold the very bytes this binary embeds, whatever
/// was built since with another profile or setting (each profile has its own folder, and a
/// setting that changes rebuilds this profile's).
#[test]
fn target_ptx_is_the_embedded_ptx() {
    let dir = std::path::Path::new(env!("FERROCUDA_PTX_DIR"));
    let read = |file: &str| {
        std::fs::read(dir.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
    };
    let ptx = read("kernels.ptx");
    assert!(
        ptx == ferrocuda::PTX.as_bytes(),
        "{} (sha256 {}) differs from ferrocuda::PTX (sha256 {})",
        dir.join("kernels.ptx").display(),
        sha256_hex(&ptx),
        sha256_hex(ferrocuda::PTX.as_bytes())
    );
    assert!(
        read("manifest.json") == ferrocuda::MANIFEST.as_bytes(),
        "{}/manifest.json is not ferrocuda::MANIFEST",
        dir.display()
    );
}

/// `wgmma.fence` orders the warpgroup's register writes before the `wgmma`s after it: the PTX
/// ISA requires every write of an accumulator to come before the fence. In every kernel that
/// issues `wgmma`, no instruction between a fence and the next `wgmma` writes a register that
/// `wgmma` accumulates into (LLVM leaves an accumulator's zeroing as copies right before its
/// `wgmma` unless the kernel pins it before the fence; an assembler that moves them back is
/// not something the driver's JIT of the PTX promises).
#[test]
fn no_accumulator_is_written_between_a_wgmma_fence_and_its_wgmma() {
    let (mut fences, mut faults) = (0, Vec::new());
    for (spec, k) in specified_entries() {
        let (n, found) = common::fence_faults(&k.code);
        fences += n;
        faults.extend(found.into_iter().map(|f| format!("{}: {f}", spec.name)));
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    let hopper = ferrocuda::MODULES.iter().any(|m| m.arch == "sm_90a");
    assert!(
        !hopper || fences > 0,
        "the sm_90a module was built but no wgmma.fence was found"
    );
}

/// The check above finds a zeroing copy planted between a fence and its `wgmma`, and passes
/// the same code with the copy before the fence.
#[test]
fn the_fence_check_finds_an_accumulator_written_after_the_fence() {
    let wgmma =
        "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%r1, %r2}, {%r3}, %rd1, 1, 1, 1;";
    let fence = "wgmma.fence.sync.aligned;";
    let zero = "mov.b32 \t%r2, %r9;";
    let after = [fence, "or.b64 %rd1, %rd2, 7;", zero, wgmma].join("\n");
    let before = [zero, fence, "or.b64 %rd1, %rd2, 7;", wgmma].join("\n");
    assert_eq!(common::fence_faults(&after).1.len(), 1, "{after}");
    assert_eq!(common::fence_faults(&before), (1, Vec::new()), "{before}");
}
