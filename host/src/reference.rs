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

/// Compiles the source `text`, named `name` in NVRTC's diagnostics, to PTX. libnvrtc comes from
/// the dynamic loader's search or, failing that, from the CUDA pip wheels
/// ([`cuda_wheels::load_nvrtc`]).
pub fn compile(name: &str, text: &str, arch: &str) -> Result<String, Error> {
    // SAFETY: only probes whether the library can be opened.
    if !cuda_wheels::load_nvrtc() || !unsafe { nvrtc::sys::is_culib_present() } {
        return Err(Error::NoNvrtc);
    }
    let opts = CompileOptions {
        options: nvrtc_options(arch),
        name: Some(name.to_string()),
        ..Default::default()
    };
    nvrtc::compile_ptx_with_opts(text, opts)
        .map(|ptx| ptx.to_src())
        .map_err(|e| Error::Nvrtc {
            source_name: name.to_string(),
            log: match e {
                CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                other => format!("{other:?}"),
            },
        })
}
