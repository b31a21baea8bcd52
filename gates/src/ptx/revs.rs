//! The PTX of a git revision, for `gates ptx-diff --rev`: the revision checked out in a scratch
//! worktree and built as the project builds itself (`cargo build --release -p ferrocuda`, whose
//! build script compiles the kernels), so "what did this commit do to the PTX" needs no snapshot
//! taken in advance. Each commit's build is kept, by its full hash, under the project's
//! `target/ptx-revs/` (or `$CARGO_TARGET_DIR/ptx-revs/`) and reused.

use super::builds::{folder, project_root};
use ptx_tools::build::Build;
use ptx_tools::Error;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `ptx-diff --rev`'s argument: `A..B` (two revisions) or `A` (a revision and the current build).
pub fn parse_spec(spec: &str) -> Result<(String, Option<String>), Error> {
    let bad = || {
        Error::new(format!(
            "`{spec}` is not a revision range: give `A..B` or `A` (anything git rev-parse takes)"
        ))
    };
    match spec.split_once("..") {
        Some((a, b)) if !a.is_empty() && !b.is_empty() && !b.starts_with('.') => {
            Ok((a.to_string(), Some(b.to_string())))
        }
        Some(_) => Err(bad()),
        None if !spec.is_empty() => Ok((spec.to_string(), None)),
        None => Err(bad()),
    }
}

/// Runs git in `root`, returning its trimmed stdout, or an error with its stderr.
fn git(root: &Path, args: &[&str]) -> Result<String, Error> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .map_err(|e| Error::new(format!("cannot run git: {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(Error::new(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Where revision builds are kept.
fn cache_root(project: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("ptx-revs"),
        None => project.join("target/ptx-revs"),
    }
}

/// The PTX build of revision `rev` of the project found at or above the current directory:
/// from the cache, or built now in a scratch worktree (a minute or two; progress on stderr).
pub fn build(rev: &str) -> Result<Build, Error> {
    let project = project_root()?;
    let sha = git(
        &project,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .map_err(|_| Error::new(format!("`{rev}` is not a commit of {}", project.display())))?;
    let short = &sha[..sha.len().min(10)];
    let label = format!("revision {rev} ({short})");
    let root = cache_root(&project);
    let kept = root.join(&sha);
    if !kept.join("kernels.ptx").is_file() {
        eprintln!(
            "building the PTX of {label} in a scratch worktree (kept in {})",
            kept.display()
        );
        build_into(&project, &sha, &root, &kept)?;
    }
    folder(label, &kept)
}

/// Checks `sha` out into a worktree under `root`, builds it with `root/target` as its target
/// folder, and copies the PTX and manifest it writes into `kept`; the worktree is removed
/// whatever happens.
fn build_into(project: &Path, sha: &str, root: &Path, kept: &Path) -> Result<(), Error> {
    let tree = root.join(format!("worktree-{sha}"));
    let _ = git(
        project,
        &["worktree", "remove", "--force", &tree.to_string_lossy()],
    );
    git(
        project,
        &["worktree", "add", "--detach", &tree.to_string_lossy(), sha],
    )?;
    let built = cargo_build(&tree, &root.join("target"));
    let _ = git(
        project,
        &["worktree", "remove", "--force", &tree.to_string_lossy()],
    );
    let out = built?;
    std::fs::create_dir_all(kept)
        .map_err(|e| Error::new(format!("creating {}: {e}", kept.display())))?;
    for file in ["kernels.ptx", "manifest.json"] {
        std::fs::copy(out.join(file), kept.join(file)).map_err(|e| {
            Error::new(format!(
                "the build of {sha} left no {} ({e}): older than the per-profile PTX output?",
                out.join(file).display()
            ))
        })?;
    }
    Ok(())
}

/// `cargo build --release -p ferrocuda` in `tree`, with a clean environment but for the
/// variables that find the toolchains; the folder its build script writes the PTX to. rustup's
/// own variables are kept: without `RUSTUP_TOOLCHAIN` the `rustc` proxy that cargo runs in a
/// dependency's folder would take rustup's default toolchain rather than this one (and, without
/// `RUSTUP_AUTO_INSTALL`, might install or update it mid-build).
fn cargo_build(tree: &Path, target: &Path) -> Result<PathBuf, Error> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.env_clear();
    for (key, value) in std::env::vars_os() {
        let k = key.to_string_lossy();
        let keep = matches!(
            k.as_ref(),
            "PATH" | "HOME" | "CARGO_HOME" | "TMPDIR" | "LD_LIBRARY_PATH"
        ) || k.starts_with("RUSTUP_")
            || k.starts_with("FERROCUDA_PTX_")
            || k == "FERROCUDA_ARCH"
            || k.to_ascii_lowercase().ends_with("_proxy");
        if keep {
            cmd.env(key, value);
        }
    }
    // The primary module alone: an empty arch list builds only FERROCUDA_ARCH's, what is compared.
    let status = cmd
        .env("CARGO_TARGET_DIR", target)
        .env("FERROCUDA_ARCHS", "")
        .current_dir(tree)
        .args(["build", "--release", "-p", "ferrocuda"])
        .status()
        .map_err(|e| Error::new(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(Error::new(format!(
            "building the revision in {} failed (cargo's output is above)",
            tree.display()
        )));
    }
    Ok(target.join("ptx/release"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_one_revision_or_a_range_of_two() {
        assert_eq!(parse_spec("HEAD~1").unwrap(), ("HEAD~1".into(), None));
        assert_eq!(
            parse_spec("v1..main").unwrap(),
            ("v1".into(), Some("main".into()))
        );
        for bad in ["", "..", "a..", "..b", "a...b"] {
            assert!(parse_spec(bad).is_err(), "{bad}");
        }
    }
}
