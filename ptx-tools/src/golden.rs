//! Golden PTX: each kernel's normalised PTX checked in as `<dir>/<kernel>.ptx`, so that a test
//! fails, with the diff, on any change to a kernel's PTX until it is blessed. For any kernel
//! crate: the project's (`kernels-gpu/golden/`) and a crate of kernels outside it alike.

use crate::diff::unified;
use crate::normalize::normalize;
use crate::{parse, Error};
use std::path::Path;

/// Diff lines shown per changed kernel; the rest are counted.
const SHOWN: usize = 60;

/// Each kernel of `ptx` with its normalised text, in module order.
pub fn normalized_kernels(ptx: &str) -> Result<Vec<(String, String)>, Error> {
    let module = parse::parse(ptx)?;
    Ok(module
        .entries
        .iter()
        .map(|e| (e.name.to_string(), normalize(e)))
        .collect())
}

/// Rewrites the golden files of `dir` from `kernels`: every `.ptx` file there removed (so that a
/// kernel that is gone loses its file), then one written per kernel.
pub fn write(dir: &Path, kernels: &[(String, String)]) -> Result<(), Error> {
    let io = |what: &Path, e: std::io::Error| Error::new(format!("{}: {e}", what.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    for stale in std::fs::read_dir(dir).map_err(|e| io(dir, e))?.flatten() {
        if stale.path().extension().is_some_and(|x| x == "ptx") {
            std::fs::remove_file(stale.path()).map_err(|e| io(&stale.path(), e))?;
        }
    }
    for (name, text) in kernels {
        let path = dir.join(format!("{name}.ptx"));
        std::fs::write(&path, text).map_err(|e| io(&path, e))?;
    }
    Ok(())
}

/// How `kernels` differ from the golden files of `dir`: each changed kernel with the start of
/// its diff, each kernel without a golden file, each golden file without a kernel.
pub fn problems(dir: &Path, kernels: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, text) in kernels {
        let path = dir.join(format!("{name}.ptx"));
        match std::fs::read_to_string(&path) {
            Ok(golden) if &golden == text => {}
            Ok(golden) => {
                let diff = unified(name, "golden → this build", &golden, text, 2);
                let lines: Vec<&str> = diff.lines().collect();
                let shown = lines[..lines.len().min(SHOWN)].join("\n");
                let more = match lines.len() > SHOWN {
                    true => format!("\n... {} more diff lines", lines.len() - SHOWN),
                    false => String::new(),
                };
                problems.push(format!("kernel `{name}` changed:\n{shown}{more}"));
            }
            Err(_) => problems.push(format!(
                "kernel `{name}` has no golden file {}",
                path.display()
            )),
        }
    }
    for file in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = file.path();
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        if path.extension().is_some_and(|x| x == "ptx") && !kernels.iter().any(|(n, _)| *n == stem)
        {
            problems.push(format!(
                "{} is the golden PTX of a kernel this build does not have",
                path.display()
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".version 8.7\n.target sm_90\n.address_size 64\n\n\
        .visible .entry k(\n\t.param .u64 p\n)\n{\n\t.reg .b32 %r<2>;\n\tret;\n}\n";

    /// Blessed files match their build; a changed kernel, a kernel without a file and a file
    /// without a kernel are each reported.
    #[test]
    fn a_blessed_dir_matches_and_every_difference_is_named() {
        let dir = std::env::temp_dir().join(format!("ptx-golden-{}", std::process::id()));
        let kernels = normalized_kernels(PTX).unwrap();
        write(&dir, &kernels).unwrap();
        assert_eq!(problems(&dir, &kernels), Vec::<String>::new());
        let changed = vec![("k".to_string(), format!("{}nop;\n", kernels[0].1))];
        assert!(problems(&dir, &changed)[0].starts_with("kernel `k` changed:"));
        let other = vec![("j".to_string(), kernels[0].1.clone())];
        let found = problems(&dir, &other);
        assert!(
            found[0].starts_with("kernel `j` has no golden file"),
            "{found:?}"
        );
        assert!(
            found[1].ends_with("of a kernel this build does not have"),
            "{found:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
