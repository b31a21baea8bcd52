//! Builds a kernel crate for `nvptx64-nvidia-cuda` into one PTX module per SM target, from a
//! build script: what ferrocuda's own `build.rs` does for `kernels-gpu`, for any kernel crate of
//! a workspace.
//!
//! ```no_run
//! // The `main` of the build script of the crate that embeds the PTX (as
//! // `include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"))`), in the workspace that holds the
//! // kernel crate `my-kernels`:
//! ferrocuda_builder::Builder::new("my-kernels").build();
//! ```
//!
//! rustc's own LLVM NVPTX backend does the work: `-Zbuild-std=core`, fat LTO over the kernel
//! crate and `core`, `--emit=asm` for the whole-program PTX, and `-Zno-link` because the target's
//! link step wants `llvm-bitcode-linker`, which no toolchain here ships and which would add
//! nothing to the PTX. Entries that call `device::launch_bounds::<N, B>()` (or `max_threads::<N>()`,
//! `B` 1) get `.maxntid N, 1, 1` and `.minnctapersm B`, as NVCC writes `__launch_bounds__(N, B)`.
//!
//! Each arch is its own nested build (`-C target-cpu=<arch>`, which sets the `target_feature`
//! cfg the device wrappers read) in its own target dir, `<target>/<ptx_dir>-build/<arch>/`, with
//! its own `core`: a kernel edit then recompiles only the kernel crate of each, and the builds
//! run at once. The primary arch's module goes to `$OUT_DIR/kernels.ptx` and, with a manifest,
//! to `<target>/<ptx_dir>/<profile>/` (`target/ptx/release/` by default) so that two builds can
//! be compared; every other arch's to a subfolder named after it; one folder per profile, so that
//! a build of one profile never overwrites what another embedded. `$OUT_DIR/modules.rs` lists
//! them all as a `&[ferrocuda_abi::PtxModule]` expression, for
//! `include!(concat!(env!("OUT_DIR"), "/modules.rs"))`. The crate gets `FERROCUDA_BUILT_ARCH`
//! (the primary arch) and `FERROCUDA_PTX_DIR` (that folder) as compile-time environment.
//!
//! Settings (environment):
//! - `FERROCUDA_ARCH`: the primary SM target, `sm_90` by default ([`Builder::arch`] overrides
//!   it).
//! - `FERROCUDA_ARCHS`: the SM targets, comma-separated, [`DEFAULT_ARCHS`] when unset, the
//!   primary alone when empty ([`Builder::archs`] overrides it).
//! - `FERROCUDA_PTX_RUSTC` / `FERROCUDA_PTX_CARGO`: a PTX-capable toolchain, tried first; both
//!   or neither (one alone fails the build rather than being ignored).
//! - `FERROCUDA_PTX_TOOLCHAIN=none`: look for no toolchain and embed the blessed PTX, as a
//!   machine with only the pinned stable toolchain does (to test that path, or to build fast).
//!
//! Without them the toolchain is searched for in this order: a rustup `nightly` with `rust-src`,
//! then Debian's `rustc-web` + `rust-web-src` (`/usr/bin/rustc`, `/usr/bin/cargo`).
//!
//! The blessed PTX (`kernels.ptx` and `manifest.json` in [`Builder::blessed`]'s folder, and in a
//! subfolder per arch as above) stands in for a kernel build, arch by arch, only while the kernel
//! sources and the arch hash to the `sources_sha256` it was blessed with (every file of the [`Builder::source_crates`]' `Cargo.toml` and `src/`);
//! otherwise the build fails and says what to install. The manifest's `origin` says which
//! happened: `source` or `blessed`.

mod bounds;
mod toolchain;

use bounds::launch_bounds;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};
use toolchain::{explicit_toolchain, find_toolchain, Toolchain, INSTALL_HINT};

const TARGET: &str = "nvptx64-nvidia-cuda";

/// The SM targets built by default: A100 (sm_80), the sm_86 GPUs, L40S and RTX 4090 (sm_89),
/// H100 and H200 (sm_90, and sm_90a for the kernels on Hopper's warpgroup instructions), B200
/// (sm_100), RTX 5090 (sm_120). A device runs the highest of them not above its compute
/// capability, an arch-specific one only on its own (`host::module_arch`).
pub const DEFAULT_ARCHS: &[&str] = &[
    "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120",
];

/// One kernel crate's PTX build, configured and then run by [`Builder::build`].
#[derive(Debug, Clone)]
pub struct Builder {
    package: String,
    crates: Vec<String>,
    blessed: String,
    ptx_dir: String,
    arch: Option<String>,
    archs: Option<Vec<String>>,
}

impl Builder {
    /// The build of the workspace package `package`, whose folder (relative to the building
    /// crate's root) is named the same; what decides its PTX is that folder's `Cargo.toml` and
    /// `src/`, its blessed PTX is in `ptx/blessed/`, and its comparable copies in `<target>/ptx/`.
    pub fn new(package: &str) -> Self {
        Builder {
            package: package.to_string(),
            crates: vec![package.to_string()],
            blessed: "ptx/blessed".to_string(),
            ptx_dir: "ptx".to_string(),
            arch: None,
            archs: None,
        }
    }

    /// The crate folders (relative to the root) whose `Cargo.toml` and `src/` decide the PTX:
    /// the kernel crate and the crates it uses (a proc-macro crate, a device crate).
    pub fn source_crates(mut self, crates: &[&str]) -> Self {
        self.crates = crates.iter().map(|c| c.to_string()).collect();
        self
    }

    /// The folder (relative to the root) of the blessed PTX and its manifest.
    pub fn blessed(mut self, dir: &str) -> Self {
        self.blessed = dir.to_string();
        self
    }

    /// The folder under the target dir that keeps each profile's PTX and manifest, and whose
    /// `-build` sibling is the nested kernel build's target dir.
    pub fn ptx_dir(mut self, dir: &str) -> Self {
        self.ptx_dir = dir.to_string();
        self
    }

    /// The primary module's SM target (`sm_90`), over `FERROCUDA_ARCH`: the module embedded as
    /// `kernels.ptx` at the top of each folder, which the PTX tools read.
    pub fn arch(mut self, arch: &str) -> Self {
        self.arch = Some(arch.to_string());
        self
    }

    /// Every SM target to build a module for, over `FERROCUDA_ARCHS` ([`DEFAULT_ARCHS`] without
    /// either); the primary arch is built whether listed or not.
    pub fn archs(mut self, archs: &[&str]) -> Self {
        self.archs = Some(archs.iter().map(|a| a.to_string()).collect());
        self
    }

    /// Builds the PTX (or takes the blessed PTX), writes it and its manifest, and prints the
    /// build script's directives. Fails the build script with one message when neither can be had.
    pub fn build(self) {
        let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
        let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
        let arch = self
            .arch
            .clone()
            .unwrap_or_else(|| env::var("FERROCUDA_ARCH").unwrap_or_else(|_| "sm_90".to_string()));
        for var in [
            "FERROCUDA_ARCH",
            "FERROCUDA_ARCHS",
            "FERROCUDA_PTX_RUSTC",
            "FERROCUDA_PTX_CARGO",
            "FERROCUDA_PTX_TOOLCHAIN",
        ] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        for dir in &self.crates {
            rerun_for_tree(&root.join(dir));
        }
        for file in ["kernels.ptx", "manifest.json"] {
            println!(
                "cargo:rerun-if-changed={}",
                root.join(&self.blessed).join(file).display()
            );
        }

        let archs = self.arch_list(&arch);
        let skip_search = env::var("FERROCUDA_PTX_TOOLCHAIN").is_ok_and(|v| v == "none");
        let explicit = explicit_toolchain();
        let toolchain = if skip_search {
            None
        } else {
            explicit.or_else(find_toolchain)
        };
        let target_dir = target_dir(&root, &out_dir);
        let modules: Vec<(String, String)> = match toolchain {
            // One nested build per arch, each with its own target dir (its own `core`), so that a
            // kernel edit rebuilds only the kernel crate of each; all at once, as cargo would
            // run independent crates.
            Some(tc) => std::thread::scope(|scope| {
                let builds: Vec<_> = archs
                    .iter()
                    .map(|a| {
                        let (this, root, tc) = (&self, &root, &tc);
                        let nested = target_dir.join(format!("{}-build", self.ptx_dir)).join(a);
                        scope.spawn(move || {
                            let ptx = this.build_ptx(root, &nested, tc, a);
                            let manifest = manifest(tc, a, &ptx, &this.sources_sha256(root, a));
                            (ptx, manifest)
                        })
                    })
                    .collect();
                builds
                    .into_iter()
                    .map(|b| b.join().expect("a kernel build thread panicked"))
                    .collect()
            }),
            None => {
                let why = if skip_search {
                    "FERROCUDA_PTX_TOOLCHAIN=none"
                } else {
                    "no PTX-capable Rust toolchain found"
                };
                let blessed = archs
                    .iter()
                    .map(|a| {
                        let sources = self.sources_sha256(&root, a);
                        self.blessed_ptx(&root, &arch_dir(a, &arch), a, &sources, why)
                    })
                    .collect();
                println!(
                    "cargo:warning={why}: embedding the blessed PTX of {}/ (the kernel sources and \
                     {} match what was blessed)",
                    self.blessed,
                    archs.join(", ")
                );
                blessed
            }
        };

        let stable = target_dir.join(&self.ptx_dir).join(profile_dir(&out_dir));
        let mut list = String::from("&[\n");
        for (a, (ptx, manifest)) in archs.iter().zip(&modules) {
            let sub = arch_dir(a, &arch);
            for dir in [out_dir.join(&sub), stable.join(&sub)] {
                fs::create_dir_all(&dir).unwrap();
                fs::write(dir.join("kernels.ptx"), ptx).unwrap();
                fs::write(dir.join("manifest.json"), manifest).unwrap();
            }
            let path =
                |file: &str| format!("{:?}", out_dir.join(&sub).join(file).display().to_string());
            list.push_str(&format!(
                "    ferrocuda_abi::PtxModule {{ arch: {a:?}, ptx: include_str!({}), manifest: \
                 include_str!({}) }},\n",
                path("kernels.ptx"),
                path("manifest.json")
            ));
        }
        list.push_str("]\n");
        fs::write(out_dir.join("modules.rs"), list).unwrap();
        println!("cargo:rustc-env=FERROCUDA_BUILT_ARCH={arch}");
        println!("cargo:rustc-env=FERROCUDA_PTX_DIR={}", stable.display());
    }

    /// The archs to build, in ascending order: [`Builder::archs`], else `FERROCUDA_ARCHS`
    /// (comma-separated), else [`DEFAULT_ARCHS`]; with the primary `arch` among them.
    fn arch_list(&self, arch: &str) -> Vec<String> {
        let mut archs = self
            .archs
            .clone()
            .unwrap_or_else(|| match env::var("FERROCUDA_ARCHS") {
                Ok(list) => list
                    .split(',')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect(),
                Err(_) => DEFAULT_ARCHS.iter().map(|a| a.to_string()).collect(),
            });
        archs.push(arch.to_string());
        archs.sort_by_key(|a| (sm_number(a), a.clone()));
        archs.dedup();
        archs
    }

    fn build_ptx(&self, root: &Path, nested_target: &Path, tc: &Toolchain, arch: &str) -> String {
        let emitted = nested_target
            .join(TARGET)
            .join(format!("release/deps/{}.s", self.package.replace('-', "_")));
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
            .env("CARGO_ENCODED_RUSTFLAGS", codegen_flags(arch))
            .current_dir(root)
            .args([
                "rustc",
                "--locked",
                "--release",
                "-p",
                &self.package,
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
        let ptx = fs::read_to_string(&emitted).unwrap_or_else(|e| {
            fail(&format!(
                "the kernel build succeeded but left no PTX at {}: {e}",
                emitted.display()
            ))
        });
        launch_bounds(&ptx)
    }

    /// Every file that decides the PTX besides the toolchain, as `(path relative to the root with
    /// `/` separators, path)`, sorted by relative path so that the order does not depend on the
    /// file system.
    fn source_files(&self, root: &Path) -> Vec<(String, PathBuf)> {
        let mut files: Vec<(String, PathBuf)> = self
            .crates
            .iter()
            .map(|c| (format!("{c}/Cargo.toml"), root.join(c).join("Cargo.toml")))
            .collect();
        let mut stack: Vec<PathBuf> = self
            .crates
            .iter()
            .map(|c| root.join(c).join("src"))
            .collect();
        while let Some(dir) = stack.pop() {
            let entries = fs::read_dir(&dir)
                .unwrap_or_else(|e| fail(&format!("cannot list {}: {e}", dir.display())));
            for entry in entries {
                let path = entry
                    .unwrap_or_else(|e| fail(&format!("cannot list {}: {e}", dir.display())))
                    .path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path.strip_prefix(root).expect("listed under the root");
                    let rel: Vec<String> = rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect();
                    files.push((rel.join("/"), path));
                }
            }
        }
        files.sort();
        files
    }

    /// The sha256 of the arch and of every kernel source file (relative path, a NUL, the length
    /// as 8 little-endian bytes, the bytes), in sorted path order: equal exactly when a build from
    /// source would be given the same inputs by this repository.
    fn sources_sha256(&self, root: &Path, arch: &str) -> String {
        let mut hash = Sha256::new();
        hash.update(b"arch\0");
        hash.update(arch.as_bytes());
        hash.update(b"\0");
        for (rel, path) in self.source_files(root) {
            let bytes = fs::read(&path)
                .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())));
            hash.update(rel.as_bytes());
            hash.update(b"\0");
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(&bytes);
        }
        hex(&hash.finalize())
    }

    /// The blessed PTX and its manifest (origin `blessed`), after checking that it was blessed
    /// from these very sources for `arch` and that the PTX is the one the manifest describes.
    fn blessed_ptx(
        &self,
        root: &Path,
        sub: &Path,
        arch: &str,
        sources: &str,
        why: &str,
    ) -> (String, String) {
        let dir = root.join(&self.blessed).join(sub);
        let shown = &Path::new(&self.blessed).join(sub).display().to_string();
        let cannot = |detail: String| -> ! {
            fail(&format!(
                "{why}, and the blessed PTX cannot stand in: {detail}.\nTo build the kernels from \
                 source, {INSTALL_HINT}"
            ))
        };
        let read = |file: &str| {
            fs::read_to_string(dir.join(file))
                .unwrap_or_else(|e| cannot(format!("{}: {e}", dir.join(file).display())))
        };
        let ptx = read("kernels.ptx");
        let mut manifest: serde_json::Value = serde_json::from_str(&read("manifest.json"))
            .unwrap_or_else(|e| cannot(format!("{shown}/manifest.json: {e}")));
        let field = |m: &serde_json::Value, key: &str| {
            m.get(key)
                .and_then(|v| v.as_str())
                .unwrap_or_else(|| cannot(format!("{shown}/manifest.json has no string `{key}`")))
                .to_string()
        };
        let blessed_arch = field(&manifest, "arch");
        if blessed_arch != arch {
            cannot(format!(
                "it was blessed for {blessed_arch}, this build is for {arch} (FERROCUDA_ARCH)"
            ));
        }
        if field(&manifest, "sources_sha256") != sources {
            cannot(format!(
                "the kernel sources ({}, {}) changed since it was blessed (sources_sha256 {sources}, \
                 blessed {})",
                self.crates.iter().map(|c| format!("{c}/Cargo.toml")).collect::<Vec<_>>().join(", "),
                self.crates.iter().map(|c| format!("{c}/src/**")).collect::<Vec<_>>().join(", "),
                field(&manifest, "sources_sha256")
            ));
        }
        if field(&manifest, "ptx_sha256") != hex(&Sha256::digest(ptx.as_bytes())) {
            cannot(format!(
                "{shown}/kernels.ptx is not the PTX its manifest.json describes (ptx_sha256)"
            ));
        }
        manifest["origin"] = "blessed".into();
        (ptx, format!("{manifest:#}\n"))
    }
}

/// The folder, relative to a module folder, of `arch`'s module: the folder itself for the primary
/// arch (where a single-module build has always put it), a subfolder named after any other.
fn arch_dir(arch: &str, primary: &str) -> PathBuf {
    if arch == primary {
        PathBuf::new()
    } else {
        PathBuf::from(arch)
    }
}

/// The rustc flags of `arch`'s build: its target CPU, and for sm_89 PTX ISA 8.1, which its
/// `cvt.rn.f16x2.e4m3x2` needs (LLVM's default for sm_89, 7.8, has it from sm_90 only).
fn codegen_flags(arch: &str) -> String {
    let isa = if arch == "sm_89" {
        "\x1f-Ctarget-feature=+ptx81"
    } else {
        ""
    };
    format!("-Ctarget-cpu={arch}{isa}")
}

/// The number of an SM target (`sm_86` -> 86, `sm_90a` -> 90), for ordering.
fn sm_number(arch: &str) -> u32 {
    let digits: String = arch
        .trim_start_matches("sm_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap_or(0)
}

/// Ends the build script with one message; cargo shows it with the script's other output. An
/// exit rather than a panic, so no backtrace buries the message.
fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1)
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

/// The outer build's profile folder (`release`, `debug`, or a custom profile's name): the
/// folder of `OUT_DIR` = `<target>/<profile>/build/<pkg>/out` under the target dir.
fn profile_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .nth(3)
        .and_then(Path::file_name)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            fail(&format!(
                "OUT_DIR {} is not <target>/<profile>/build/<pkg>/out",
                out_dir.display()
            ))
        })
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The manifest names only what determines the PTX bytes (no timestamps, no paths), so two
/// builds of the same sources with the same toolchain have identical manifests.
fn manifest(tc: &Toolchain, arch: &str, ptx: &str, sources: &str) -> String {
    let manifest = serde_json::json!({
        "target": TARGET,
        "arch": arch,
        "origin": "source",
        "toolchain": tc.origin,
        "rustc": version(&tc.rustc),
        "cargo": version(&tc.cargo),
        "kernels": kernel_names(ptx),
        "ptx_sha256": hex(&Sha256::digest(ptx.as_bytes())),
        "sources_sha256": sources,
    });
    format!("{manifest:#}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const PTX: &str = ".version 8.7\n.visible .entry a(\n\t.param .u64 p\n)\n{\n\t// ferrocuda.maxntid 512 4\n\tret;\n}\n.visible .entry b(\n\t.param .u64 p\n)\n{\n\tret;\n}\n";

    #[test]
    fn kernels_are_listed_in_ptx_order() {
        assert_eq!(kernel_names(PTX), ["a", "b"]);
    }
}
