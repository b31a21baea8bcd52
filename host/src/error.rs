//! Errors of the host layer, each saying what to do about it.

use std::fmt;

/// A launch argument a kernel cannot take, found before anything is launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    /// The kernel the launcher was asked to run.
    pub kernel: &'static str,
    /// The argument at fault, as the launcher names it.
    pub arg: &'static str,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: argument `{}`: {}", self.kernel, self.arg, self.why)
    }
}

impl std::error::Error for ArgError {}

#[derive(Debug)]
pub enum Error {
    /// libcuda could not be loaded: no NVIDIA driver on this machine.
    NoDriver,
    /// The driver loaded but has no device of that ordinal.
    NoDevice { ordinal: usize, count: usize },
    /// libnvrtc could not be loaded.
    NoNvrtc,
    /// A CUDA driver call failed.
    Driver {
        during: String,
        source: cudarc::driver::DriverError,
    },
    /// NVRTC refused a reference source; `log` is its diagnostics.
    Nvrtc { source_name: String, log: String },
    /// A launcher refused its arguments.
    Arg(ArgError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDriver => write!(
                f,
                "no CUDA driver: libcuda.so could not be loaded (this machine has no NVIDIA GPU \
                 or driver)"
            ),
            Error::NoDevice { ordinal, count } => {
                write!(
                    f,
                    "no CUDA device {ordinal}: the driver sees {count} device(s)"
                )
            }
            Error::NoNvrtc => write!(
                f,
                "libnvrtc.so.13 could not be loaded: install the CUDA toolkit or `pip install \
                 nvidia-cuda-nvrtc==13.0.88`, and put its lib folder on LD_LIBRARY_PATH"
            ),
            Error::Driver { during, source } => write!(f, "CUDA error while {during}: {source}"),
            Error::Nvrtc { source_name, log } => {
                write!(f, "NVRTC could not compile {source_name}:\n{log}")
            }
            Error::Arg(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<ArgError> for Error {
    fn from(e: ArgError) -> Self {
        Error::Arg(e)
    }
}

/// Attaches what was being done to a driver error.
pub(crate) trait Context<T> {
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
