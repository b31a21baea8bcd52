//! Errors of the host layer, each saying what to do about it.

use thiserror::Error;

/// A launch argument a kernel cannot take, found before anything is launched.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{kernel}: argument `{arg}`: {why}")]
pub struct ArgError {
    /// The kernel the launcher was asked to run.
    pub kernel: &'static str,
    /// The argument at fault, as the launcher names it.
    pub arg: &'static str,
    /// What is wrong with it.
    pub why: String,
}

#[derive(Debug, Error)]
pub enum Error {
    /// libcuda could not be loaded: no NVIDIA driver on this machine.
    #[error(
        "no CUDA driver: libcuda.so could not be loaded (this machine has no NVIDIA GPU or driver)"
    )]
    NoDriver,
    /// The driver loaded but has no device of that ordinal.
    #[error("no CUDA device {ordinal}: the driver sees {count} device(s)")]
    NoDevice { ordinal: usize, count: usize },
    /// libnvrtc could not be loaded.
    #[error(
        "libnvrtc.so.13 could not be loaded: install the CUDA toolkit (its lib folder on \
         LD_LIBRARY_PATH) or the pip wheel nvidia-cuda-nvrtc==13.0.88 (found through python3 on \
         its own; see README, Prerequisites)"
    )]
    NoNvrtc,
    /// A CUDA driver call failed.
    #[error("CUDA error while {during}: {source}")]
    Driver {
        during: String,
        source: cudarc::driver::DriverError,
    },
    /// NVRTC refused a reference source; `log` is its diagnostics.
    #[error("NVRTC could not compile {source_name}:\n{log}")]
    Nvrtc { source_name: String, log: String },
    /// A peer library (cuBLAS, cuBLASLt) refused a call or failed.
    #[error("{library} error while {during}: {status}")]
    Peer {
        library: &'static str,
        during: String,
        status: String,
    },
    /// Two PTX modules of one build declare the same entry, so a launch by name would find
    /// either.
    #[error("the {build} build declares `{name}` in two modules (each kernel crate must name its entries apart)")]
    DuplicateEntry { name: String, build: &'static str },
    /// A launcher refused its arguments.
    #[error(transparent)]
    Arg(#[from] ArgError),
    /// A launch needs more dynamic shared memory per block than this device gives one block
    /// (the kernels' own limits are sm_90's; a GPU with less refuses here, before the launch).
    #[error(
        "{kernel}: needs {bytes} bytes of dynamic shared memory per block, more than the {limit} \
         that {device} gives one block"
    )]
    SharedMemory {
        kernel: &'static str,
        bytes: u32,
        limit: u32,
        device: String,
    },
    /// A graph capture on a context whose buffers cudarc orders between streams by events: a
    /// launch in the capture would wait on an event recorded outside it, which invalidates the
    /// capture, so it is refused before it starts.
    #[error(
        "graph capture needs the context's event tracking off: cudarc orders its buffers between \
         streams by events, and waiting on one recorded outside the capture invalidates it (call \
         CudaContext::disable_event_tracking before allocating, as Gpu::new does)"
    )]
    CaptureWithEventTracking,
    /// A serving-table file could not be read, parsed or written.
    #[error("module arch {arch}: {why}")]
    ModuleArch { arch: String, why: String },

    #[error("serving table {path}: {why}")]
    TableFile { path: String, why: String },
}

/// Attaches what was being done to a driver error (for callers that drive the driver themselves,
/// as a gate's peers do).
pub trait Context<T> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T, Error>;
}

impl<T> Context<T> for Result<T, cudarc::driver::DriverError> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|source| Error::Driver {
            during: what(),
            source,
        })
    }
}
