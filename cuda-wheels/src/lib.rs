//! The CUDA pip wheels, found without the user's help.
//!
//! `nvidia-cuda-nvcc`, `-nvrtc`, `-cuobjdump` and `-nvdisasm` install their files under the
//! `nvidia` Python package, in `nvidia/cu13/bin` and `nvidia/cu13/lib`, which are on no search
//! path. Rather than have every user find those folders and export them, the tests and tools
//! look there too, after the places a user names (a tool's variable, `PATH`, the dynamic
//! loader's own search): the folders are where `python3` says the `nvidia` package lives.
//!
//! A crate of its own because both `host` (libnvrtc for the reference .cu) and `ptx-tools`
//! (ptxas, cuobjdump) look there, and neither may depend on the other.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `nvidia/cu13` folders of the `nvidia` package that `python3` imports, in its search
/// order (a namespace package may have several); empty without python3 or the wheels. Asked
/// once per process.
pub fn cu13_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let asked = Command::new("python3")
            .args(["-c", "import nvidia\nfor p in nvidia.__path__: print(p)"])
            .output();
        match asked {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|line| Path::new(line.trim()).join("cu13"))
                .filter(|dir| dir.is_dir())
                .collect(),
            _ => Vec::new(),
        }
    })
}

/// `rel` (such as `bin/ptxas`) in the first of [`cu13_dirs`] that has it.
pub fn file(rel: &str) -> Option<PathBuf> {
    cu13_dirs()
        .iter()
        .map(|dir| dir.join(rel))
        .find(|path| path.is_file())
}

/// The soname by which cudarc loads libnvrtc.
const NVRTC: &str = "libnvrtc.so.13";

/// Makes libnvrtc loadable by its soname, as cudarc loads it; returns whether it is.
///
/// Where the dynamic loader finds `libnvrtc.so.13` on its own (`LD_LIBRARY_PATH`, the system's
/// folders), nothing is done. Otherwise the wheel's libnvrtc is loaded by its full path, after
/// the `libnvrtc-builtins` beside it (which libnvrtc opens by name when it compiles), and both
/// stay loaded for the life of the process: the loader gives a library already loaded under a
/// soname to every later load of that name, so cudarc's load of `libnvrtc.so.13` and NVRTC's of
/// its builtins resolve to them. Done once per process.
pub fn load_nvrtc() -> bool {
    static LOADABLE: OnceLock<bool> = OnceLock::new();
    *LOADABLE.get_or_init(|| {
        // SAFETY: loading libnvrtc runs only its own initialisers.
        if unsafe { libloading::Library::new(NVRTC) }.is_ok() {
            return true;
        }
        let Some(nvrtc) = file(&format!("lib/{NVRTC}")) else {
            return false;
        };
        let lib_dir = nvrtc.parent().expect("a file has a folder");
        let mut libs: Vec<PathBuf> = std::fs::read_dir(lib_dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("libnvrtc-builtins.so."))
            })
            .collect();
        libs.sort();
        libs.push(nvrtc);
        libs.iter().all(|path| {
            // SAFETY: as above; the handle is leaked so that the library stays loaded.
            let loaded = unsafe { libloading::Library::new(path) };
            loaded.map(std::mem::forget).is_ok()
        })
    })
}
