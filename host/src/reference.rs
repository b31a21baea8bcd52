//! The reference CUDA C++ kernels, embedded, and their NVRTC build.
//!
//! Options are NVRTC's defaults, spelled out so that the gates can print exactly what was used:
//! IEEE division and square root, no flush-to-zero, and `fmad` on (NVCC contracts `a * b + c`
//! into `fma.rn`, which the Rust kernels reproduce with explicit `fma`).

use crate::error::Error;
use cudarc::nvrtc::{self, CompileError, CompileOptions};

/// A reference source file, named as it is in `reference/`.
pub struct Source {
    pub name: &'static str,
    pub text: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/sources.rs"));

/// NVRTC options for an SM target such as `sm_90` (PTX for the matching `compute_90`).
pub fn nvrtc_options(arch: &str) -> Vec<String> {
    let virt = arch.replacen("sm_", "compute_", 1);
    vec![
        format!("--gpu-architecture={virt}"),
        "--fmad=true".into(),
        "--prec-div=true".into(),
        "--prec-sqrt=true".into(),
        "--ftz=false".into(),
    ]
}

/// Compiles one source to PTX. libnvrtc comes from the dynamic loader's search or, failing
/// that, from the CUDA pip wheels ([`cuda_wheels::load_nvrtc`]).
pub fn compile(source: &Source, arch: &str) -> Result<String, Error> {
    // SAFETY: only probes whether the library can be opened.
    if !cuda_wheels::load_nvrtc() || !unsafe { nvrtc::sys::is_culib_present() } {
        return Err(Error::NoNvrtc);
    }
    let opts = CompileOptions {
        options: nvrtc_options(arch),
        name: Some(source.name.to_string()),
        ..Default::default()
    };
    nvrtc::compile_ptx_with_opts(source.text, opts)
        .map(|ptx| ptx.to_src())
        .map_err(|e| Error::Nvrtc {
            source_name: source.name.to_string(),
            log: match e {
                CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                other => format!("{other:?}"),
            },
        })
}

/// Compiles every reference source, in [`SOURCES`] order.
pub fn compile_all(arch: &str) -> Result<Vec<String>, Error> {
    SOURCES.iter().map(|s| compile(s, arch)).collect()
}
