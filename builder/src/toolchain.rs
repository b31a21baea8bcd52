//! Where a PTX-capable rustc/cargo pair is found: named by the environment, a rustup nightly
//! with `rust-src`, or Debian's rustc-web.

use crate::fail;
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) const INSTALL_HINT: &str = "install a PTX-capable Rust toolchain, one of:\n\
    \x20 - Debian 12: apt-get install rustc-web rust-web-src cargo-web\n\
    \x20 - rustup: rustup toolchain install nightly --component rust-src\n\
    or point FERROCUDA_PTX_RUSTC and FERROCUDA_PTX_CARGO at a rustc/cargo pair whose sysroot \
    has lib/rustlib/src/rust/library (rust-src of the same version).";

/// A rustc/cargo pair that can build `core` for nvptx64, and where it came from.
pub(crate) struct Toolchain {
    pub(crate) rustc: PathBuf,
    pub(crate) cargo: PathBuf,
    /// `RUSTC_BOOTSTRAP=1` lets a stable-channel rustc accept the nightly flags.
    pub(crate) bootstrap: bool,
    pub(crate) origin: &'static str,
}

/// The toolchain named by `FERROCUDA_PTX_RUSTC` and `FERROCUDA_PTX_CARGO`; fails the build when
/// only one of them is set, which would otherwise be ignored without a word.
pub(crate) fn explicit_toolchain() -> Option<Toolchain> {
    match (
        env::var_os("FERROCUDA_PTX_RUSTC"),
        env::var_os("FERROCUDA_PTX_CARGO"),
    ) {
        (Some(rustc), Some(cargo)) => Some(Toolchain {
            rustc: rustc.into(),
            cargo: cargo.into(),
            bootstrap: true,
            origin: "FERROCUDA_PTX_RUSTC/FERROCUDA_PTX_CARGO",
        }),
        (Some(_), None) | (None, Some(_)) => fail(
            "FERROCUDA_PTX_RUSTC and FERROCUDA_PTX_CARGO name one toolchain and go together: \
             set both (a rustc and the cargo of the same version) or neither",
        ),
        (None, None) => None,
    }
}

/// A rustup nightly with `rust-src`, else Debian's rustc-web.
pub(crate) fn find_toolchain() -> Option<Toolchain> {
    if let Some(tc) = rustup_nightly() {
        return Some(tc);
    }
    let debian = Toolchain {
        rustc: "/usr/bin/rustc".into(),
        cargo: "/usr/bin/cargo".into(),
        bootstrap: true,
        origin: "Debian rustc-web + rust-web-src",
    };
    has_rust_src(&debian.rustc).then_some(debian)
}

fn rustup_nightly() -> Option<Toolchain> {
    let which = |tool: &str| -> Option<PathBuf> {
        let out = Command::new("rustup")
            .args(["which", "--toolchain", "nightly", tool])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    };
    let rustc = which("rustc")?;
    let cargo = which("cargo")?;
    has_rust_src(&rustc).then_some(Toolchain {
        rustc,
        cargo,
        bootstrap: false,
        origin: "rustup nightly",
    })
}

/// `-Zbuild-std` needs the library sources of the compiler's own version.
fn has_rust_src(rustc: &Path) -> bool {
    let Ok(out) = Command::new(rustc).args(["--print", "sysroot"]).output() else {
        return false;
    };
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    out.status.success()
        && sysroot
            .join("lib/rustlib/src/rust/library/core/Cargo.toml")
            .is_file()
}
