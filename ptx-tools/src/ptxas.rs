//! ptxas on a CPU machine: assemble a PTX module for an SM target and read back what each kernel
//! costs (registers, barriers, shared memory, stack, spills) from its `-v` report.

use crate::{find_tool, Error, Scratch};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to install when ptxas is missing.
pub const INSTALL: &str = "install the pip wheel nvidia-cuda-nvcc==13.0.88 (found through python3 \
                           on its own; see README, Prerequisites), or put ptxas on PATH, or set \
                           PTXAS";

/// ptxas: `$PTXAS` if set, else the first `ptxas` on `PATH`, else the CUDA pip wheels'.
pub fn find() -> Option<PathBuf> {
    find_tool("PTXAS", "ptxas")
}

/// One kernel as ptxas reports it under `-v`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resources {
    pub name: String,
    pub registers: u32,
    pub barriers: u32,
    /// Static shared memory, bytes.
    pub smem: u32,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

/// `N <unit>` in `text`: the number right before the first occurrence of `unit`.
fn number_before(text: &str, unit: &str) -> Option<u32> {
    let at = text.find(unit)?;
    text[..at].split_whitespace().last()?.parse().ok()
}

/// Parses the `-v` report of ptxas: one block per `Compiling entry function 'NAME'`. Fails when
/// an entry's block lacks its `Function properties` line (stack and spills), which would
/// otherwise read as zeros.
pub fn parse_report(report: &str) -> Result<Vec<Resources>, Error> {
    let mut entries: Vec<(Resources, bool)> = Vec::new();
    // Whether the lines being read belong to the last entry pushed (and not, say, to a
    // non-entry function, which ptxas reports with `Compiling ... function` as well).
    let mut in_entry = false;
    for line in report.lines() {
        let line = line.trim();
        if let Some(rest) = line
            .strip_prefix("ptxas info")
            .map(|r| r.trim_start_matches([' ', ':']))
        {
            if let Some(name) = rest.strip_prefix("Compiling entry function '") {
                let name = name.split('\'').next().unwrap_or(name);
                let blank = Resources {
                    name: name.to_string(),
                    registers: 0,
                    barriers: 0,
                    smem: 0,
                    stack_frame: 0,
                    spill_stores: 0,
                    spill_loads: 0,
                };
                entries.push((blank, false));
                in_entry = true;
            } else if rest.starts_with("Compiling ") {
                in_entry = false;
            } else if in_entry && rest.starts_with("Used ") {
                let (e, _) = entries.last_mut().expect("in_entry implies an entry");
                e.registers = number_before(rest, "registers").unwrap_or(0);
                e.barriers = number_before(rest, "barriers").unwrap_or(0);
                e.smem = number_before(rest, "bytes smem").unwrap_or(0);
            }
        } else if in_entry && line.contains("bytes stack frame") {
            let (e, seen) = entries.last_mut().expect("in_entry implies an entry");
            let field = |unit| {
                number_before(line, unit)
                    .ok_or_else(|| Error::new(format!("ptxas -v: no `{unit}` in `{line}`")))
            };
            e.stack_frame = field("bytes stack frame")?;
            e.spill_stores = field("bytes spill stores")?;
            e.spill_loads = field("bytes spill loads")?;
            *seen = true;
        }
    }
    entries
        .into_iter()
        .map(|(e, seen)| {
            if seen {
                Ok(e)
            } else {
                Err(Error::new(format!(
                    "ptxas -v gave no `Function properties` line for `{}`",
                    e.name
                )))
            }
        })
        .collect()
}

/// ptxas's version, e.g. `V13.0.88` (from `Cuda compilation tools, release 13.0, V13.0.88`).
pub fn version(ptxas: &Path) -> String {
    Command::new(ptxas)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let line = text.lines().find(|l| l.contains("release"))?.trim();
            Some(
                line.rsplit([',', ' '])
                    .find(|t| t.starts_with('V'))
                    .unwrap_or(line)
                    .to_string(),
            )
        })
        .unwrap_or_else(|| "version unknown".to_string())
}

/// A module assembled by ptxas: each kernel's resources and the cubin.
pub struct Assembled {
    pub resources: Vec<Resources>,
    pub cubin: Vec<u8>,
}

/// Assembles `ptx` for `arch` (e.g. `sm_90`) with `ptxas -v`. `label` names the module in
/// messages. Fails with ptxas's diagnostics if it refuses the module.
pub fn assemble(ptxas: &Path, ptx: &str, arch: &str, label: &str) -> Result<Assembled, Error> {
    let scratch = Scratch::new()?;
    let input = scratch.write("module.ptx", ptx.as_bytes())?;
    let output = scratch.path("module.cubin");
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(|e| Error::new(format!("could not run {}: {e}", ptxas.display())))?;
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(Error::new(format!(
            "ptxas ({}) refused {label} for {arch} ({}):\n{}",
            ptxas.display(),
            out.status,
            report.trim_end()
        )));
    }
    let resources =
        parse_report(&report).map_err(|e| Error::new(format!("{label}: {e}:\n{report}")))?;
    if resources.is_empty() {
        return Err(Error::new(format!(
            "ptxas -v reported no entry function for {label}; its output was:\n{report}"
        )));
    }
    let cubin = std::fs::read(&output)
        .map_err(|e| Error::new(format!("reading {}: {e}", output.display())))?;
    Ok(Assembled { resources, cubin })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_spills_per_entry_and_skips_other_functions() {
        let report = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'a' for 'sm_90'
ptxas info    : Function properties for a
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 128 bytes smem
ptxas info    : Compile time = 1.000 ms
ptxas info    : Compiling function 'helper' for 'sm_90'
ptxas info    : Used 99 registers
ptxas info    : Compiling entry function 'b' for 'sm_90'
ptxas info    : Function properties for b
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 22 registers, used 0 barriers
";
        let parsed = parse_report(report).unwrap();
        assert_eq!(parsed.len(), 2);
        let a = &parsed[0];
        assert_eq!(
            (a.name.as_str(), a.registers, a.barriers, a.smem),
            ("a", 255, 1, 128)
        );
        assert_eq!((a.stack_frame, a.spill_stores, a.spill_loads), (8, 4, 12));
        let b = &parsed[1];
        assert_eq!((b.name.as_str(), b.registers, b.smem), ("b", 22, 0));
        assert_eq!((b.stack_frame, b.spill_stores, b.spill_loads), (0, 0, 0));
    }

    #[test]
    fn an_entry_without_function_properties_is_an_error() {
        let report = "ptxas info    : Compiling entry function 'a' for 'sm_90'\n\
                      ptxas info    : Used 4 registers\n";
        let err = parse_report(report).unwrap_err().to_string();
        assert!(
            err.contains("no `Function properties` line for `a`"),
            "{err}"
        );
    }
}
