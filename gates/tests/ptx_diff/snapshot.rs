//! `ptx-snapshot`: a snapshot of the current build and a diff against it, and where a copied
//! binary puts snapshots (the project it runs in, a folder named for them, or nowhere).

use super::*;
use std::sync::OnceLock;

#[test]
fn a_snapshot_of_the_current_build_diffs_clean_against_it() {
    let t = scratch("snapshot");
    let run = gates(&t, &["ptx-snapshot", "before"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = t.join("ptx-snapshots/before");
    assert_eq!(
        std::fs::read_to_string(dir.join("kernels.ptx")).unwrap(),
        ferrocuda::PTX
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("manifest.json")).unwrap(),
        ferrocuda::MANIFEST
    );
    let run = gates(&t, &["ptx-diff", "before", "--no-diff"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with("A: snapshot before ("),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("B: current build ("), "{}", run.stdout);

    assert_clean_error(&gates(&t, &["ptx-snapshot", "before"]), "pass --replace");
    assert_eq!(gates(&t, &["ptx-snapshot", "before", "--replace"]).code, 0);
    assert_clean_error(
        &gates(&t, &["ptx-snapshot", "../escape"]),
        "is not a snapshot name",
    );
}

/// `--from` saves a build folder (another kernel crate's, as its builder writes one) instead of
/// the current build, and a diff of the two finds nothing.
#[test]
fn a_snapshot_from_a_build_folder_is_that_folder() {
    let t = scratch("snapshot-from");
    let folder = fixture("a8e85dd");
    let run = gates(&t, &["ptx-snapshot", "old", "--from", &folder]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for file in ["kernels.ptx", "manifest.json"] {
        assert_eq!(
            std::fs::read(t.join("ptx-snapshots/old").join(file)).unwrap(),
            std::fs::read(Path::new(&folder).join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(
        gates(&t, &["ptx-diff", "old", &folder, "--no-diff"]).code,
        0
    );
    let missing = t.join("missing").display().to_string();
    assert_clean_error(
        &gates(&t, &["ptx-snapshot", "new", "--from", &missing]),
        "kernels.ptx",
    );
}

/// A folder of its own under the system's temporary folder, outside the project (the `scratch`
/// folders are under `target/`, inside it).
fn outside(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrocuda-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of the `gates` binary as `copied-gates/bin/gates` in a fresh scratch folder, made once
/// per test process. Before snapshots were found from the current directory, such a copy wrote
/// them to `copied-gates/ptx-snapshots`, two levels above itself.
fn copied_exe() -> &'static Path {
    static COPY: OnceLock<PathBuf> = OnceLock::new();
    COPY.get_or_init(|| {
        let bin = scratch("copied-gates").join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let exe = bin.join("gates");
        std::fs::copy(env!("CARGO_BIN_EXE_gates"), &exe).unwrap();
        exe
    })
}

/// The copied `gates` run from `cwd` with no target or snapshot folder named, plus `envs`.
fn copied_gates(cwd: &Path, envs: &[(&str, &Path)], args: &[&str]) -> Run {
    let mut cmd = Command::new(copied_exe());
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove(gates::ptx::builds::SNAPSHOT_DIR_VAR)
        .envs(envs.iter().copied());
    // A child forked by another test's thread while the copy was being written may still hold
    // the file open for a moment ("text file busy").
    let mut tries = 0;
    let out = loop {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.expect("running the copied gates"),
        }
    };
    Run {
        code: out.status.code().expect("gates was killed by a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every `ptx-snapshots` folder under `dir`.
fn snapshot_folders(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "ptx-snapshots") {
                    found.push(path.clone());
                }
                stack.push(path);
            }
        }
    }
    found
}

#[test]
fn run_outside_the_project_a_copied_binary_refuses_to_snapshot_and_writes_nothing() {
    let dir = outside("snapshot-outside");
    let cwd = dir.join("work/deep");
    std::fs::create_dir_all(&cwd).unwrap();
    let run = copied_gates(&cwd, &[], &["ptx-snapshot", "before"]);
    assert_clean_error(&run, "is not inside the ferrocuda project");
    assert!(
        run.stderr.contains("FERROCUDA_SNAPSHOT_DIR"),
        "{}",
        run.stderr
    );
    assert_eq!(snapshot_folders(&dir), Vec::<PathBuf>::new());
    let above_the_binary = copied_exe().ancestors().nth(2).unwrap();
    assert_eq!(snapshot_folders(above_the_binary), Vec::<PathBuf>::new());

    // A folder the user names is used as it is.
    let named = dir.join("my-snapshots");
    let run = copied_gates(
        &cwd,
        &[("FERROCUDA_SNAPSHOT_DIR", &named)],
        &["ptx-snapshot", "before"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(named.join("before/kernels.ptx").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_snapshot_from_a_project_subfolder_goes_to_the_project_target() {
    let dir = outside("snapshot-project");
    let project = dir.join("checkout");
    let cwd = project.join("kernels-gpu/src");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        "[workspace]\nmembers = []\n\n[package]\nname = \"ferrocuda\"\n",
    )
    .unwrap();
    // A workspace of another name between the two is not the project.
    std::fs::write(
        project.join("kernels-gpu/Cargo.toml"),
        "[workspace]\n\n[package]\nname = \"other\"\n",
    )
    .unwrap();
    let run = copied_gates(&cwd, &[], &["ptx-snapshot", "before"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        snapshot_folders(&dir),
        vec![project.join("target/ptx-snapshots")]
    );
    assert_eq!(
        std::fs::read_to_string(project.join("target/ptx-snapshots/before/kernels.ptx")).unwrap(),
        ferrocuda::PTX
    );
    let run = copied_gates(&cwd, &[], &["ptx-diff", "before", "--no-diff"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}
