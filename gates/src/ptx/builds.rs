//! The builds that can be compared: a PTX file, a build folder (`kernels.ptx` and
//! `manifest.json`, as `build.rs` leaves in `<target>/ptx/<profile>/`), a saved snapshot, the
//! build this binary embeds, and the reference .cu compiled by NVRTC.

use super::mix::{mix, Mix};
use super::normalize::normalize;
use super::numerics::{kinds, Kinds};
use super::parse::parse;
use super::ptxas::{self, Resources};
use super::{read_text, sass, Error};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One build: one or more PTX modules (the reference has one per .cu file) for one arch.
#[derive(Debug, Clone)]
pub struct Build {
    /// How the build is named in output: a path, `snapshot NAME`, `current build`,
    /// `reference .cu`.
    pub label: String,
    /// What made it, for the header: the manifest's toolchain and origin, or NVRTC's options.
    pub about: String,
    /// `(module name, PTX text)`.
    pub modules: Vec<(String, String)>,
}

/// One kernel of a build, as the comparisons see it.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    /// The module (index into [`Build::modules`]) that defines it.
    pub module: usize,
    pub normalized: String,
    pub mix: Mix,
    /// Its numerics-deciding instruction kinds (`numerics::kinds`).
    pub numerics: Kinds,
}

/// A build's kernels by name and its arch (every module's `.target`).
#[derive(Debug, Clone)]
pub struct Parsed {
    pub arch: String,
    pub kernels: BTreeMap<String, Kernel>,
}

/// The variable that names the folder of snapshots, in place of the project's.
pub const SNAPSHOT_DIR_VAR: &str = "FERROCUDA_SNAPSHOT_DIR";

/// Where `gates ptx-snapshot` keeps snapshots (and `ptx-diff` looks for them), the first that
/// applies:
///
/// 1. `$FERROCUDA_SNAPSHOT_DIR`, a folder the user names;
/// 2. `$CARGO_TARGET_DIR/ptx-snapshots`, where a target folder is named;
/// 3. `<project>/target/ptx-snapshots`, `<project>` being the nearest folder at or above the
///    current directory whose `Cargo.toml` is this workspace's (it declares `[workspace]` and
///    the package `ferrocuda`).
///
/// Anywhere else, such as a copied binary run outside the project, it is an error that says
/// what to do: snapshots never land beside the binary or above it by accident.
pub fn snapshot_root() -> Result<PathBuf, Error> {
    let named = |var: &str| {
        std::env::var_os(var)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = named(SNAPSHOT_DIR_VAR) {
        return Ok(dir);
    }
    if let Some(dir) = named("CARGO_TARGET_DIR") {
        return Ok(dir.join("ptx-snapshots"));
    }
    project_root()
        .map(|project| project.join("target/ptx-snapshots"))
        .map_err(|e| {
            Error::new(format!(
                "{e}, or name a folder for the snapshots with {SNAPSHOT_DIR_VAR}=PATH"
            ))
        })
}

/// The nearest folder at or above the current directory whose `Cargo.toml` is this workspace's
/// (it declares `[workspace]` and the package `ferrocuda`).
pub fn project_root() -> Result<PathBuf, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::new(format!("cannot read the current directory: {e}")))?;
    cwd.ancestors()
        .find(|dir| is_project_root(dir))
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            Error::new(format!(
                "{} is not inside the ferrocuda project (no workspace Cargo.toml of package \
                 `ferrocuda` at or above it): run from the project",
                cwd.display()
            ))
        })
}

/// Whether `dir` holds this workspace's root `Cargo.toml`.
fn is_project_root(dir: &Path) -> bool {
    let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
        return false;
    };
    let line = |want: &str| {
        manifest
            .lines()
            .any(|l| l.split_whitespace().collect::<String>() == want)
    };
    line("[workspace]") && line("name=\"ferrocuda\"")
}

/// A snapshot name becomes a folder name: letters, digits, `.`, `_`, `-`, not starting with `.`.
fn check_snapshot_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(Error::new(format!(
            "`{name}` is not a snapshot name (letters, digits, `.`, `_`, `-`; not starting with `.`)"
        )))
    }
}

/// The manifest in a few words: how the PTX came to be and with which rustc.
fn manifest_about(manifest: &str) -> String {
    let Ok(m) = serde_json::from_str::<serde_json::Value>(manifest) else {
        return "manifest.json is not JSON".into();
    };
    let field = |k: &str| m.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string();
    let how = match m.get("origin").and_then(|v| v.as_str()) {
        Some("blessed") => "blessed PTX, built by",
        // Manifests from before the blessed fallback have no origin: they were all built.
        Some("source") | None => "built by",
        Some(_) => "unknown origin, built by",
    };
    format!("{how} {}", field("rustc"))
}

impl Build {
    /// The build this binary embeds (`ferrocuda::PTX`).
    pub fn current() -> Build {
        Build {
            label: "current build".into(),
            about: manifest_about(ferrocuda::MANIFEST),
            modules: vec![("kernels.ptx".into(), ferrocuda::PTX.into())],
        }
    }

    /// The reference .cu sources compiled by NVRTC for `arch`, one module per source.
    pub fn reference(arch: &str) -> Result<Build, Error> {
        let modules = host::reference::SOURCES
            .iter()
            .map(|s| {
                host::reference::compile(s, arch)
                    .map(|ptx| (s.name.to_string(), ptx))
                    .map_err(|e| match e {
                        host::Error::NoNvrtc => Error::new(
                            "libnvrtc not found: install the pip wheel nvidia-cuda-nvrtc==13.0.88 \
                             (found through python3 on its own), or put the CUDA toolkit's lib \
                             folder on LD_LIBRARY_PATH",
                        ),
                        other => Error::new(other.to_string()),
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Build {
            label: "reference .cu".into(),
            about: format!("NVRTC {}", host::reference::nvrtc_options(arch).join(" ")),
            modules,
        })
    }

    /// A PTX file, a build folder, or the snapshot of that name (in that order).
    pub fn open(spec: &str) -> Result<Build, Error> {
        let path = Path::new(spec);
        if path.is_file() {
            return Ok(Build {
                label: spec.into(),
                about: "PTX file".into(),
                modules: vec![(spec.into(), read_text(path)?)],
            });
        }
        if path.is_dir() {
            return Build::folder(spec.into(), path);
        }
        let root = snapshot_root()?;
        if check_snapshot_name(spec).is_ok() && root.join(spec).is_dir() {
            return Build::folder(format!("snapshot {spec}"), &root.join(spec));
        }
        let mut saved: Vec<String> = std::fs::read_dir(&root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        saved.sort();
        Err(Error::new(format!(
            "`{spec}` is not a PTX file, a build folder (kernels.ptx + manifest.json) or a \
             snapshot in {} (saved: {})",
            root.display(),
            if saved.is_empty() {
                "none".to_string()
            } else {
                saved.join(", ")
            }
        )))
    }

    /// A build folder (`kernels.ptx` and, if present, `manifest.json`) under `label`.
    pub fn folder(label: String, dir: &Path) -> Result<Build, Error> {
        let ptx = dir.join("kernels.ptx");
        if !ptx.is_file() {
            return Err(Error::new(format!(
                "{} holds no kernels.ptx (a build folder is what build.rs writes to \
                 <target>/ptx/<profile>/)",
                dir.display()
            )));
        }
        let manifest = dir.join("manifest.json");
        let about = match manifest.is_file() {
            true => manifest_about(&read_text(&manifest)?),
            false => "no manifest.json".into(),
        };
        Ok(Build {
            label,
            about,
            modules: vec![(ptx.display().to_string(), read_text(&ptx)?)],
        })
    }

    /// Saves the current build as snapshot `name`; refuses to replace one unless `replace`.
    /// Saves the current build as snapshot `name` under `root` (by default [`snapshot_root`]).
    pub fn save_snapshot(name: &str, replace: bool, root: Option<&Path>) -> Result<PathBuf, Error> {
        check_snapshot_name(name)?;
        let dir = match root {
            Some(r) => r.join(name),
            None => snapshot_root()?.join(name),
        };
        if dir.exists() && !replace {
            return Err(Error::new(format!(
                "snapshot `{name}` exists ({}); pass --replace to overwrite it",
                dir.display()
            )));
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::new(format!("creating {}: {e}", dir.display())))?;
        for (file, text) in [
            ("kernels.ptx", ferrocuda::PTX),
            ("manifest.json", ferrocuda::MANIFEST),
        ] {
            std::fs::write(dir.join(file), text)
                .map_err(|e| Error::new(format!("writing {}: {e}", dir.join(file).display())))?;
        }
        Ok(dir)
    }

    /// Parses every module. Fails on malformed PTX, on modules for different targets, and on a
    /// kernel defined twice.
    pub fn parse(&self) -> Result<Parsed, Error> {
        let mut arch: Option<String> = None;
        let mut kernels = BTreeMap::new();
        for (index, (name, ptx)) in self.modules.iter().enumerate() {
            let module = parse(ptx).map_err(|e| e.context(name))?;
            match &arch {
                Some(a) if a != module.target => {
                    return Err(Error::new(format!(
                        "{}: modules for different targets ({a} and {})",
                        self.label, module.target
                    )))
                }
                _ => arch = Some(module.target.to_string()),
            }
            for entry in &module.entries {
                let kernel = Kernel {
                    name: entry.name.to_string(),
                    module: index,
                    normalized: normalize(entry),
                    mix: mix(entry),
                    numerics: kinds(entry),
                };
                if let Some(other) = kernels.insert(entry.name.to_string(), kernel) {
                    return Err(Error::new(format!(
                        "{}: kernel `{}` is defined in both {} and {name}",
                        self.label, entry.name, self.modules[other.module].0
                    )));
                }
            }
        }
        Ok(Parsed {
            arch: arch.expect("parse refuses a module without .target"),
            kernels,
        })
    }
}

/// What ptxas (and cuobjdump) say about one kernel.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub resources: Resources,
    /// Normalised SASS, when asked for.
    pub sass: Option<String>,
}

/// Assembles every module of `build` for `arch` and, given cuobjdump, disassembles it.
pub fn assemble(
    build: &Build,
    arch: &str,
    ptxas_path: &Path,
    cuobjdump: Option<&Path>,
) -> Result<BTreeMap<String, Assembled>, Error> {
    let mut out = BTreeMap::new();
    for (name, ptx) in &build.modules {
        let label = format!("{} ({name})", build.label);
        let module = ptxas::assemble(ptxas_path, ptx, arch, &label)?;
        let mut listing = match cuobjdump {
            Some(tool) => sass::disassemble(tool, &module.cubin).map_err(|e| e.context(&label))?,
            None => BTreeMap::new(),
        };
        for resources in module.resources {
            let sass = listing.remove(&resources.name);
            if cuobjdump.is_some() && sass.is_none() {
                return Err(Error::new(format!(
                    "{label}: cuobjdump listed no SASS for kernel `{}`",
                    resources.name
                )));
            }
            out.insert(resources.name.clone(), Assembled { resources, sass });
        }
    }
    Ok(out)
}
