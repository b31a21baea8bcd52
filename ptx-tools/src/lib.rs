//! Static views of compiled kernels that need no GPU: PTX modules split into kernels,
//! normalised and diffed, their numerics kinds and instruction mix, and (with ptxas and cuobjdump
//! from the CUDA pip wheels) their resources and SASS; and the text tables they are shown in.
//!
//! `gates ptx-diff`, `gates ptx-report` and `gates ptx-snapshot` are built on these, and so are
//! the PTX tests of the root package, `host` and `gates`. This crate knows nothing of how the
//! project builds its PTX (the embedded build, NVRTC, snapshots: those stay in `gates`).
//!
//! Layering: it depends on no crate of the project but `cuda-wheels` (which `host` uses too), so
//! `host` and the root package test with it without depending on `gates` or forming a cycle.

pub mod build;
pub mod diff;
pub mod golden;
pub mod mix;
pub mod normalize;
pub mod numerics;
pub mod parse;
pub mod ptxas;
pub mod sass;
pub mod table;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Why a PTX view could not be made; one line for people (ptxas's diagnostics may follow it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl Error {
    pub fn new(msg: impl Into<String>) -> Self {
        Error(msg.into())
    }

    /// The same error with `what` (a file, a build) in front.
    pub fn context(self, what: impl fmt::Display) -> Self {
        Error(format!("{what}: {}", self.0))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// A tool: `$<var>` if set and not empty, else the first `name` on `PATH`, else the CUDA pip
/// wheels' `bin/<name>` ([`cuda_wheels::file`]).
pub fn find_tool(var: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
        .or_else(|| cuda_wheels::file(&format!("bin/{name}")))
}

/// A private folder under the system's temporary directory for files handed to ptxas and
/// cuobjdump, removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new() -> Result<Self, Error> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ptx-tools-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::new(format!("creating {}: {e}", dir.display())))?;
        Ok(Scratch(dir))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
        let path = self.path(name);
        std::fs::write(&path, bytes)
            .map_err(|e| Error::new(format!("writing {}: {e}", path.display())))?;
        Ok(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Reads a file as text, with the path in every error.
pub fn read_text(path: &Path) -> Result<String, Error> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
    String::from_utf8(bytes)
        .map_err(|_| Error::new(format!("{} is not UTF-8 text (not PTX)", path.display())))
}
