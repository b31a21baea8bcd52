//! The reference CUDA C++ (`reference/*.cu`) against the Rust kernels, without a GPU: every
//! source compiles with NVRTC for every arch of `ferrocuda::MODULES`, the sources together
//! declare, for each arch, exactly the kernels of that arch's Rust module with the same parameter
//! lists (the sm_90a module's Hopper entries included), and their PTX assembles with ptxas for
//! each arch without spills.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::ParamType;
use host::reference::{self, SOURCES};
use host::Error;
use std::collections::BTreeMap;
use std::sync::OnceLock;

const NVRTC_INSTALL: &str = "install the pip wheel nvidia-cuda-nvrtc==13.0.88 (see README, \
                             Prerequisites) or the CUDA toolkit";

/// A source's NVRTC PTX for one arch: (arch, source name, PTX).
type Compiled = (&'static str, &'static str, String);

/// Each source's NVRTC PTX for each arch the Rust modules are built for, compiled once for all
/// tests; `None` when libnvrtc cannot be loaded.
fn compiled() -> Option<&'static [Compiled]> {
    static COMPILED: OnceLock<Option<Vec<Compiled>>> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            let mut out = Vec::new();
            for arch in ferrocuda::MODULES.iter().map(|m| m.arch) {
                for source in SOURCES {
                    match reference::compile(source.name, source.text, arch) {
                        Ok(ptx) => out.push((arch, source.name, ptx)),
                        Err(Error::NoNvrtc) => return None,
                        Err(e) => panic!("{} for {arch}: {e}", source.name),
                    }
                }
            }
            Some(out)
        })
        .as_deref()
}

/// [`compiled`], or a skip (a failure under `FERROCUDA_REQUIRE_CPU_TOOLS=1`) without NVRTC.
fn compiled_or_skip(test: &str) -> Option<&'static [Compiled]> {
    let sources = compiled();
    if sources.is_none() {
        common::missing_tool(test, "libnvrtc", NVRTC_INSTALL);
    }
    sources
}

#[test]
fn every_reference_source_compiles_with_nvrtc() {
    let Some(sources) = compiled_or_skip("every_reference_source_compiles_with_nvrtc") else {
        return;
    };
    assert_eq!(sources.len(), SOURCES.len() * ferrocuda::MODULES.len());
    for (arch, name, ptx) in sources {
        assert!(
            ptx.lines().any(|l| l.trim() == format!(".target {arch}")),
            "{name}: NVRTC's PTX is not for .target {arch}:\n{ptx}"
        );
        assert!(
            !common::entries(ptx).is_empty(),
            "{name}: NVRTC's PTX declares no .visible .entry"
        );
    }
}

/// The launcher passes one dynamic shared memory size and one block size to both builds of a GEMV
/// kernel (the Rust layout's, `gemv::dynamic_shared_bytes` and `gemv::glu_shared_bytes`, and
/// `gemv::BLOCK_THREADS`), and both declare the same blocks an SM; the .cu must take exactly
/// those. Checked by NVRTC compiling `gemv.cu` with a kernel of `static_assert`s on the .cu's own
/// sizes: the Q8_0 tensor-core `mma_shared<m>` (and at eight rows its deep layout), the e4m3
/// kernels' `fp8_shared_bytes` (which each e4m3 kernel asserts its layout takes), its block and its
/// declared blocks an SM.
#[test]
fn reference_gemv_layouts_and_bounds_are_the_launchers() {
    use kernels_gpu::gemv::{self, Format};
    let test = "reference_gemv_layouts_and_bounds_are_the_launchers";
    let gemv_cu = SOURCES
        .iter()
        .find(|s| s.name == "gemv.cu")
        .expect("gemv.cu");
    let mut checks = String::from("\n__global__ void layouts_and_bounds_are_the_launchers() {\n");
    let mut check = |what: String, value: u32| {
        checks += &format!("    static_assert({what} == {value}, \"{what}\");\n");
    };
    check("MMA_THREADS".into(), gemv::BLOCK_THREADS);
    check("MMA_MIN_BLOCKS".into(), gemv::MMA_MIN_BLOCKS);
    check("FP8_SETS_MIN_BLOCKS".into(), gemv::FP8_SETS_MIN_BLOCKS);
    check("PLANAR_MIN_BLOCKS".into(), gemv::PLANAR_MIN_BLOCKS);
    for m in gemv::BATCHES.map(|m| m as usize) {
        // The Q8_0 layout: the plain kernels' from m = 4, the GLU entries' at every m.
        check(
            format!("sizeof(mma_shared<{m}>)"),
            gemv::mma_shared_bytes(m),
        );
        for format in [Format::Q8_0, Format::Q8_0Planar] {
            check(
                format!("sizeof(mma_shared<{m}>)"),
                gemv::glu_shared_bytes(format, m),
            );
        }
        if gemv::deepens(Format::Q8_0, m) {
            check(
                format!("mma_deep_shared_bytes<{m}>()"),
                gemv::mma_deep_bytes(m),
            );
        }
        for (format, block128) in [(Format::E4m3, false), (Format::E4m3B128, true)] {
            let plain = format!("fp8_shared_bytes({m}, fp8_sets({block128}, {m}))");
            check(plain, gemv::dynamic_shared_bytes(format, m));
            check(
                format!("fp8_shared_bytes({m}, 1)"),
                gemv::glu_shared_bytes(format, m),
            );
        }
    }
    checks += "}\n";
    let arch = ferrocuda::MODULES[0].arch;
    match reference::compile("gemv.cu", &(gemv_cu.text.to_owned() + &checks), arch) {
        Ok(_) => {}
        Err(Error::NoNvrtc) => common::missing_tool(test, "libnvrtc", NVRTC_INSTALL),
        Err(e) => panic!("gemv.cu's layouts or bounds are not the launcher's: {e}"),
    }
}

/// With the CUDA pip wheels installed, libnvrtc needs no `LD_LIBRARY_PATH`: it and its builtins
/// are loaded by full path from where python3 says the wheels are, before cudarc loads
/// `libnvrtc.so.13` by name (`cuda_wheels::load_nvrtc`).
#[test]
fn nvrtc_is_loaded_from_the_pip_wheels_on_its_own() {
    let test = "nvrtc_is_loaded_from_the_pip_wheels_on_its_own";
    if cuda_wheels::file("lib/libnvrtc.so.13").is_none() {
        common::missing_tool(test, "libnvrtc in the pip wheels", NVRTC_INSTALL);
        return;
    }
    common::rerun_without(
        "every_reference_source_compiles_with_nvrtc",
        &["libnvrtc.so.13"],
        &[],
    );
}

#[test]
fn reference_declares_the_rust_kernels_with_the_same_parameters() {
    let test = "reference_declares_the_rust_kernels_with_the_same_parameters";
    let Some(sources) = compiled_or_skip(test) else {
        return;
    };
    for m in ferrocuda::MODULES {
        let rust: BTreeMap<&str, Vec<ParamType>> = common::entries(m.ptx)
            .iter()
            .map(|k| (k.name, k.param_types()))
            .collect();
        let mut reference: BTreeMap<&str, (Vec<ParamType>, &str)> = BTreeMap::new();
        for (_, source, ptx) in sources.iter().filter(|(arch, ..)| *arch == m.arch) {
            for k in common::entries(ptx) {
                if let Some((_, other)) = reference.insert(k.name, (k.param_types(), source)) {
                    panic!(
                        "kernel `{}` is defined in both {other} and {source}",
                        k.name
                    );
                }
            }
        }

        let only_rust: Vec<&str> = rust
            .keys()
            .filter(|k| !reference.contains_key(*k))
            .copied()
            .collect();
        let only_reference: Vec<&str> = reference
            .keys()
            .filter(|k| !rust.contains_key(*k))
            .copied()
            .collect();
        assert!(
            only_rust.is_empty() && only_reference.is_empty(),
            "{}: the reference sources and the Rust module declare different kernels: only in \
             the Rust PTX: {only_rust:?}; only in the reference: {only_reference:?}",
            m.arch
        );

        let mut mismatches = Vec::new();
        for (name, rust_params) in &rust {
            let (ref_params, source) = &reference[name];
            if rust_params != ref_params {
                mismatches.push(format!(
                    "{name}: Rust {rust_params:?}\n{:width$}  {source} {ref_params:?}",
                    "",
                    width = name.len()
                ));
            }
        }
        assert!(
            mismatches.is_empty(),
            "{}: parameter lists differ between the Rust kernels and the reference:\n{}",
            m.arch,
            mismatches.join("\n")
        );
    }
}

/// The .cu twin of `tests/ptx.rs`'s `chained_kernels_wait_before_their_inputs_from_sm_90`: in
/// NVRTC's PTX for sm_90 and newer every kernel of the chained families runs
/// `reference/chain.cuh`'s `chain_entry()` (`griddepcontrol.launch_dependents`, then
/// `griddepcontrol.wait`) before its first global memory access, or `chain_wait()` (the wait alone)
/// in the kernels of `kernels_gpu::TRIGGER_AT_EXIT`, or `chain_trigger()` with only weights read
/// before its `chain_wait()` in the GEMVs (`kernels_gpu::waits_after_weights`); below sm_90, and in
/// `read_stream`, there is neither.
#[test]
fn reference_chained_kernels_wait_before_their_inputs_from_sm_90() {
    let test = "reference_chained_kernels_wait_before_their_inputs_from_sm_90";
    let Some(sources) = compiled_or_skip(test) else {
        return;
    };
    let mut faults = Vec::new();
    let mut waiting = 0;
    for (arch, source, ptx) in sources {
        for k in common::entries(ptx) {
            let chained = kernels_gpu::chained(k.name);
            match common::chain_entry_fault(
                &k,
                arch,
                common::Chain::of(
                    chained,
                    kernels_gpu::triggers_at_exit(k.name),
                    kernels_gpu::waits_after_weights(k.name),
                ),
            ) {
                Some(fault) => faults.push(format!("{arch} {source}: {fault}")),
                None => waiting += usize::from(*arch == "sm_90" && chained),
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    if ferrocuda::MODULES.iter().any(|m| m.arch == "sm_90") {
        let sm_90 = kernels_gpu::chained_specs().filter(|s| s.in_module("sm_90"));
        assert_eq!(waiting, sm_90.count());
    }
}

#[test]
fn reference_ptx_assembles_without_spills_and_fits_its_blocks() {
    let test = "reference_ptx_assembles_without_spills_and_fits_its_blocks";
    let Some(sources) = compiled_or_skip(test) else {
        return;
    };
    let Some(ptxas) = common::find_ptxas() else {
        common::missing_tool(test, "ptxas", common::PTXAS_INSTALL);
        return;
    };
    let mut bad = Vec::new();
    for (arch, source, ptx) in sources {
        let report = common::assemble(&ptxas, ptx, arch, source);
        common::say(&common::table(
            &format!(
                "reference {source} (NVRTC) on {arch} (ptxas {}):",
                common::ptxas_version(&ptxas)
            ),
            &report,
        ));
        let declared: Vec<&str> = common::entries(ptx).iter().map(|k| k.name).collect();
        for name in &declared {
            assert!(
                report.iter().any(|e| e.name == *name),
                "{source}: ptxas -v did not report kernel `{name}`"
            );
        }
        let over = common::over_register_budget(&report, |name| {
            kernels_gpu::kernel_specs()
                .find(|s| s.name == name)
                .map(|s| s.max_block)
        });
        bad.extend(
            over.into_iter()
                .map(|over| format!("{arch} {source} {over}")),
        );
        bad.extend(
            report
                .iter()
                .filter(|e| e.spill_stores != 0 || e.spill_loads != 0)
                .map(|e| {
                    format!(
                        "{arch} {source} {}: {} bytes spill stores, {} bytes spill loads",
                        e.name, e.spill_stores, e.spill_loads
                    )
                }),
        );
    }
    assert!(
        bad.is_empty(),
        "reference kernels that spill or cannot launch their largest block:\n{}",
        bad.join("\n")
    );
}

/// The .cu twin of `tests/ptx.rs`'s fence check: in NVRTC's PTX of every kernel that issues
/// `wgmma` (the sm_90a build of `reference/mla/flash_wgmma.cuh`), no accumulator is written
/// between a `wgmma.fence` and the `wgmma` after it, which the PTX ISA forbids.
#[test]
fn reference_accumulators_are_not_written_after_a_wgmma_fence() {
    let test = "reference_accumulators_are_not_written_after_a_wgmma_fence";
    let Some(sources) = compiled_or_skip(test) else {
        return;
    };
    let (mut fences, mut faults) = (0, Vec::new());
    for (arch, source, ptx) in sources {
        for k in common::entries(ptx) {
            let (n, found) = common::fence_faults(&k.code);
            fences += n;
            faults.extend(
                found
                    .into_iter()
                    .map(|f| format!("{arch} {source} {}: {f}", k.name)),
            );
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    if ferrocuda::MODULES.iter().any(|m| m.arch == "sm_90a") {
        assert!(fences > 0, "no wgmma.fence in the sm_90a reference");
    }
}
