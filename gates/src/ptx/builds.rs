//! Where the builds that can be compared come from: a PTX file, a build folder (`kernels.ptx`
//! and `manifest.json`, as `build.rs` leaves in `<target>/ptx/<profile>/`), a saved snapshot, the
//! build this binary embeds, and the reference .cu compiled by NVRTC. Each is a
//! [`ptx_tools::build::Build`]; what is read from it is `ptx_tools`' business.

use ptx_tools::build::Build;
use ptx_tools::{read_text, Error};
use std::path::{Path, PathBuf};

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

/// The build this binary embeds (`ferrocuda::PTX`).
pub fn current() -> Build {
    Build {
        label: "current build".into(),
        about: manifest_about(ferrocuda::MANIFEST),
        modules: vec![("kernels.ptx".into(), ferrocuda::PTX.into())],
    }
}

/// ferrocuda's reference .cu sources (`reference/`) compiled by NVRTC for `arch`, one module per
/// source.
pub fn reference(arch: &str) -> Result<Build, Error> {
    let sources = host::reference::SOURCES
        .iter()
        .map(|s| (s.name.to_string(), s.text.to_string()));
    nvrtc_build(sources.collect(), arch)
}

/// The .cu files `paths` (another kernel crate's reference, each compiled alone) compiled by
/// NVRTC for `arch`, one module per file.
pub fn reference_files(paths: &[PathBuf], arch: &str) -> Result<Build, Error> {
    let sources = paths
        .iter()
        .map(|p| Ok((p.display().to_string(), read_text(p)?)));
    nvrtc_build(sources.collect::<Result<_, Error>>()?, arch)
}

/// `(name, text)` sources compiled by NVRTC for `arch`: the reference build.
fn nvrtc_build(sources: Vec<(String, String)>, arch: &str) -> Result<Build, Error> {
    let modules = sources
        .into_iter()
        .map(|(name, text)| {
            host::reference::compile(&name, &text, arch)
                .map(|ptx| (name, ptx))
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
        return folder(spec.into(), path);
    }
    let root = snapshot_root()?;
    if check_snapshot_name(spec).is_ok() && root.join(spec).is_dir() {
        return folder(format!("snapshot {spec}"), &root.join(spec));
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

/// Saves the current build, or the build folder `from` (another kernel crate's, as its builder
/// writes it), as snapshot `name` under `root` (by default [`snapshot_root`]); refuses to replace
/// one unless `replace`.
pub fn save_snapshot(
    name: &str,
    replace: bool,
    root: Option<&Path>,
    from: Option<&Path>,
) -> Result<PathBuf, Error> {
    check_snapshot_name(name)?;
    let files = match from {
        None => vec![
            ("kernels.ptx", ferrocuda::PTX.to_string()),
            ("manifest.json", ferrocuda::MANIFEST.to_string()),
        ],
        Some(dir) => {
            let read = |file| read_text(&dir.join(file));
            vec![
                ("kernels.ptx", read("kernels.ptx")?),
                ("manifest.json", read("manifest.json")?),
            ]
        }
    };
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
    for (file, text) in files {
        std::fs::write(dir.join(file), text)
            .map_err(|e| Error::new(format!("writing {}: {e}", dir.join(file).display())))?;
    }
    Ok(dir)
}
