//! Compiles `kernels-gpu` for `nvptx64-nvidia-cuda` into one PTX module and embeds it.
//!
//! rustc's own LLVM NVPTX backend does the work: `-Zbuild-std=core`, fat LTO over the kernels
//! crate and `core`, `--emit=asm` for the whole-program PTX, and `-Zno-link` because the target's
//! link step wants `llvm-bitcode-linker`, which no toolchain here ships and which would add
//! nothing to the PTX. The result goes to `$OUT_DIR/kernels.ptx` (embedded by `src/lib.rs`) and,
//! with a manifest, to `<target>/ptx/` so that two builds can be compared.
//!
//! Settings (environment):
//! - `FERROCUDA_ARCH`: the SM target, `sm_90` by default.
//! - `FERROCUDA_PTX_RUSTC` / `FERROCUDA_PTX_CARGO`: a PTX-capable toolchain, tried first.
//!
//! Without them the toolchain is searched for in this order: a rustup `nightly` with `rust-src`,
//! then Debian's `rustc-web` + `rust-web-src` (`/usr/bin/rustc`, `/usr/bin/cargo`).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

const TARGET: &str = "nvptx64-nvidia-cuda";
const INSTALL_HINT: &str = "no PTX-capable Rust toolchain found. Install one of:\n\
    \x20 - Debian 12: apt-get install rustc-web rust-web-src cargo-web\n\
    \x20 - rustup: rustup toolchain install nightly --component rust-src\n\
    or point FERROCUDA_PTX_RUSTC and FERROCUDA_PTX_CARGO at a rustc/cargo pair whose sysroot \
    has lib/rustlib/src/rust/library (rust-src of the same version).";

/// A rustc/cargo pair that can build `core` for nvptx64, and where it came from.
struct Toolchain {
    rustc: PathBuf,
    cargo: PathBuf,
    /// `RUSTC_BOOTSTRAP=1` lets a stable-channel rustc accept the nightly flags.
    bootstrap: bool,
    origin: &'static str,
}

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let arch = env::var("FERROCUDA_ARCH").unwrap_or_else(|_| "sm_90".to_string());
    for var in [
        "FERROCUDA_ARCH",
        "FERROCUDA_PTX_RUSTC",
        "FERROCUDA_PTX_CARGO",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    for dir in ["kernels-gpu", "kernels-macros"] {
        rerun_for_tree(&root.join(dir));
    }

    let toolchain = find_toolchain().unwrap_or_else(|| fail(INSTALL_HINT));
    let target_dir = target_dir(&root, &out_dir);
    let ptx = build_ptx(&root, &target_dir.join("ptx-build"), &toolchain, &arch);

    let manifest = manifest(&toolchain, &arch, &ptx);
    fs::write(out_dir.join("kernels.ptx"), &ptx).unwrap();
    fs::write(out_dir.join("manifest.json"), &manifest).unwrap();
    let stable = target_dir.join("ptx");
    fs::create_dir_all(&stable).unwrap();
    fs::write(stable.join("kernels.ptx"), &ptx).unwrap();
    fs::write(stable.join("manifest.json"), &manifest).unwrap();
    println!("cargo:rustc-env=FERROCUDA_BUILT_ARCH={arch}");
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    panic!("ferrocuda: kernel build failed (see above)");
}

fn rerun_for_tree(dir: &Path) {
    println!(
        "cargo:rerun-if-changed={}",
        dir.join("Cargo.toml").display()
    );
    let mut stack = vec![dir.join("src")];
    while let Some(d) = stack.pop() {
        println!("cargo:rerun-if-changed={}", d.display());
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}

/// The outer build's target dir: `CARGO_TARGET_DIR`, else the ancestor of `OUT_DIR` that holds
/// the profile folders (`<target>/<profile>/build/<pkg>/out`).
fn target_dir(root: &Path, out_dir: &Path) -> PathBuf {
    if let Ok(dir) = env::var("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.is_absolute() {
            dir
        } else {
            root.join(dir)
        };
    }
    out_dir
        .ancestors()
        .nth(4)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.join("target"))
}

fn find_toolchain() -> Option<Toolchain> {
    if let (Ok(rustc), Ok(cargo)) = (
        env::var("FERROCUDA_PTX_RUSTC"),
        env::var("FERROCUDA_PTX_CARGO"),
    ) {
        return Some(Toolchain {
            rustc: rustc.into(),
            cargo: cargo.into(),
            bootstrap: true,
            origin: "FERROCUDA_PTX_RUSTC/FERROCUDA_PTX_CARGO",
        });
    }
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

fn build_ptx(root: &Path, nested_target: &Path, tc: &Toolchain, arch: &str) -> String {
    let emitted = nested_target
        .join(TARGET)
        .join("release/deps/kernels_gpu.s");
    let _ = fs::remove_file(&emitted);
    let mut cmd = Command::new(&tc.cargo);
    // The nested cargo gets a clean environment: the outer build's RUSTFLAGS, RUSTC, wrappers,
    // jobserver and CARGO_* variables describe the host build, not this one.
    cmd.env_clear();
    for (key, value) in env::vars_os() {
        let key_str = key.to_string_lossy();
        let keep = matches!(
            key_str.as_ref(),
            "PATH"
                | "HOME"
                | "CARGO_HOME"
                | "RUSTUP_HOME"
                | "TMPDIR"
                | "SSL_CERT_FILE"
                | "SSL_CERT_DIR"
        ) || key_str.to_ascii_lowercase().ends_with("_proxy");
        if keep {
            cmd.env(key, value);
        }
    }
    cmd.env("RUSTC", &tc.rustc)
        .env("CARGO_ENCODED_RUSTFLAGS", format!("-Ctarget-cpu={arch}"))
        .current_dir(root)
        .args([
            "rustc",
            "--locked",
            "--release",
            "-p",
            "kernels-gpu",
            "--lib",
        ])
        .args([
            "--crate-type",
            "cdylib",
            "--target",
            TARGET,
            "-Zbuild-std=core",
        ])
        .arg("--target-dir")
        .arg(nested_target)
        .args([
            "--config",
            "profile.release.lto=\"fat\"",
            "--config",
            "profile.release.codegen-units=1",
            "--config",
            "profile.release.panic=\"abort\"",
            "--config",
            "profile.release.opt-level=3",
            "--config",
            "profile.release.debug=false",
        ])
        .args(["--", "--emit=asm", "-Zno-link"]);
    if tc.bootstrap {
        cmd.env("RUSTC_BOOTSTRAP", "1");
    }
    let status = cmd.status().unwrap_or_else(|e| {
        fail(&format!(
            "could not run {} ({}): {e}",
            tc.cargo.display(),
            tc.origin
        ))
    });
    if !status.success() {
        fail(&format!(
            "the kernels failed to compile for {TARGET} ({arch}) with {} ({}); rustc's \
             diagnostics are above",
            tc.rustc.display(),
            tc.origin
        ));
    }
    fs::read_to_string(&emitted).unwrap_or_else(|e| {
        fail(&format!(
            "the kernel build succeeded but left no PTX at {}: {e}",
            emitted.display()
        ))
    })
}

fn version(tool: &Path) -> String {
    Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|e| format!("unknown ({e})"))
}

/// Kernel entries in PTX order.
fn kernel_names(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| l.trim().strip_prefix(".visible .entry "))
        .map(|l| l.split('(').next().unwrap_or(l).trim())
        .collect()
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The manifest names only what determines the PTX bytes (no timestamps, no paths), so two
/// builds of the same sources with the same toolchain have identical manifests.
fn manifest(tc: &Toolchain, arch: &str, ptx: &str) -> String {
    let sha = Sha256::digest(ptx.as_bytes());
    let sha: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    let kernels: Vec<String> = kernel_names(ptx).into_iter().map(json_str).collect();
    format!(
        "{{\n  \"target\": {},\n  \"arch\": {},\n  \"toolchain\": {},\n  \"rustc\": {},\n  \"cargo\": {},\n  \"kernels\": [{}],\n  \"ptx_sha256\": {}\n}}\n",
        json_str(TARGET),
        json_str(arch),
        json_str(tc.origin),
        json_str(&version(&tc.rustc)),
        json_str(&version(&tc.cargo)),
        kernels.join(", "),
        json_str(&sha),
    )
}
