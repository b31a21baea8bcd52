//! Helpers shared by the PTX checks of the root package (`tests/ptx.rs`) and of `host`
//! (`host/tests/reference.rs`, which includes this file by path): finding ptxas, assembling a
//! module with `ptxas -v` and reading back its per-kernel resource report, and splitting a PTX
//! module into its kernel entries.
//!
//! Each test crate uses a different part of it.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set to `1` (as CI does) to make a missing ptxas or NVRTC a failure instead of a skip.
pub const REQUIRE_VAR: &str = "FERROCUDA_REQUIRE_CPU_TOOLS";

/// Whether tests that need ptxas or NVRTC must fail when those are missing.
pub fn require_cpu_tools() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v.trim() == "1")
}

/// Writes straight to the process's stderr, past libtest's output capture, so that skip lines
/// and resource tables show in the log of a passing run.
pub fn say(text: &str) {
    let mut text = text.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Reports a missing tool: a panic when [`require_cpu_tools`], otherwise one skip line.
pub fn missing_tool(test: &str, what: &str, install: &str) {
    if require_cpu_tools() {
        panic!("{test}: {what} not found and {REQUIRE_VAR}=1 ({install})");
    }
    say(&format!("{test}: skipped: {what} not found ({install})"));
}

pub const PTXAS_INSTALL: &str = "install nvidia-cuda-nvcc==13.0.88";

/// ptxas: `$PTXAS` if set, else the first `ptxas` on `PATH`.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("ptxas"))
        .find(|p| p.is_file())
}

/// One kernel as ptxas reports it under `-v`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryReport {
    pub name: String,
    pub registers: u32,
    pub barriers: u32,
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

/// Parses the `-v` report of ptxas: one block per `Compiling entry function 'NAME'`.
pub fn parse_ptxas_report(report: &str) -> Vec<EntryReport> {
    let mut entries: Vec<EntryReport> = Vec::new();
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
                entries.push(EntryReport {
                    name: name.to_string(),
                    registers: 0,
                    barriers: 0,
                    smem: 0,
                    stack_frame: u32::MAX,
                    spill_stores: u32::MAX,
                    spill_loads: u32::MAX,
                });
                in_entry = true;
            } else if rest.starts_with("Compiling ") {
                in_entry = false;
            } else if in_entry && rest.starts_with("Used ") {
                let e = entries.last_mut().unwrap();
                e.registers = number_before(rest, "registers").unwrap_or(0);
                e.barriers = number_before(rest, "barriers").unwrap_or(0);
                e.smem = number_before(rest, "bytes smem").unwrap_or(0);
            }
        } else if in_entry && line.contains("bytes stack frame") {
            let e = entries.last_mut().unwrap();
            e.stack_frame = number_before(line, "bytes stack frame").unwrap_or(u32::MAX);
            e.spill_stores = number_before(line, "bytes spill stores").unwrap_or(u32::MAX);
            e.spill_loads = number_before(line, "bytes spill loads").unwrap_or(u32::MAX);
        }
    }
    entries
}

/// ptxas's version, e.g. `V13.0.88` (from `Cuda compilation tools, release 13.0, V13.0.88`).
pub fn ptxas_version(ptxas: &Path) -> String {
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

/// Assembles `ptx` for `arch` with `ptxas -v` and returns the per-entry report. Panics with
/// ptxas's diagnostics if it refuses the module. `label` names the module in file names and
/// messages.
pub fn assemble(ptxas: &Path, ptx: &str, arch: &str, label: &str) -> Vec<EntryReport> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let stem = format!(
        "{}-{}-{arch}",
        label.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        std::process::id()
    );
    let input = dir.join(format!("{stem}.ptx"));
    let output = dir.join(format!("{stem}.cubin"));
    std::fs::write(&input, ptx).unwrap_or_else(|e| panic!("writing {}: {e}", input.display()));
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .output()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", ptxas.display()));
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "ptxas ({}) refused {label} for {arch} ({}):\n{report}",
        ptxas.display(),
        out.status
    );
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    let entries = parse_ptxas_report(&report);
    assert!(
        !entries.is_empty(),
        "ptxas -v reported no entry function for {label}; its output was:\n{report}"
    );
    for e in &entries {
        assert!(
            e.stack_frame != u32::MAX,
            "ptxas -v gave no `Function properties` line for {label}'s `{}`:\n{report}",
            e.name
        );
    }
    entries
}

/// The report as a table, one row per kernel, sorted by name.
pub fn table(title: &str, entries: &[EntryReport]) -> String {
    let mut rows: Vec<&EntryReport> = entries.iter().collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    let width = rows.iter().map(|e| e.name.len()).max().unwrap_or(0).max(6);
    let mut s = format!("{title}\n");
    let _ = writeln!(
        s,
        "  {:width$}  {:>4}  {:>4}  {:>8}  {:>5}  {:>12}  {:>12}",
        "kernel", "regs", "bars", "smem (B)", "stack", "spill st (B)", "spill ld (B)"
    );
    for e in rows {
        let _ = writeln!(
            s,
            "  {:width$}  {:>4}  {:>4}  {:>8}  {:>5}  {:>12}  {:>12}",
            e.name, e.registers, e.barriers, e.smem, e.stack_frame, e.spill_stores, e.spill_loads
        );
    }
    s
}

/// A PTX parameter's type, by what the driver copies: integers and untyped bits by size, floats
/// as floats, anything else (byte arrays, structs by value) by its spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamType {
    /// `.u32`, `.s32`, `.b32`.
    Int32,
    /// `.u64`, `.s64`, `.b64` (pointers included).
    Int64,
    F32,
    F64,
    Other(String),
}

impl ParamType {
    /// Classifies the declaration that follows `.param` (e.g. `.u64 .ptr .align 1 name`).
    pub fn parse(decl: &str) -> ParamType {
        let mut tokens = decl.split_whitespace().peekable();
        // `.param .align N .b8 name[M]` puts the alignment before the type.
        let mut align = String::new();
        if tokens.peek() == Some(&".align") {
            tokens.next();
            align = format!(".align {} ", tokens.next().unwrap_or(""));
        }
        let ty = tokens.next().unwrap_or("");
        match ty {
            ".u32" | ".s32" | ".b32" => ParamType::Int32,
            ".u64" | ".s64" | ".b64" => ParamType::Int64,
            ".f32" => ParamType::F32,
            ".f64" => ParamType::F64,
            _ => {
                let array = tokens
                    .last()
                    .and_then(|name| name.find('[').map(|i| name[i..].to_string()))
                    .unwrap_or_default();
                ParamType::Other(format!("{align}{ty}{array}"))
            }
        }
    }
}

/// One `.entry` of a PTX module.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub name: &'a str,
    /// Each parameter's declaration after `.param`, as written.
    pub params: Vec<&'a str>,
    /// The text from the `.entry` line up to the next entry (or the end of the module).
    pub body: &'a str,
}

impl Entry<'_> {
    pub fn param_types(&self) -> Vec<ParamType> {
        self.params.iter().map(|p| ParamType::parse(p)).collect()
    }
}

/// The `.visible .entry` kernels of `ptx`, in module order.
pub fn entries(ptx: &str) -> Vec<Entry<'_>> {
    const MARK: &str = ".visible .entry ";
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in ptx.split_inclusive('\n') {
        if line.trim_start().starts_with(MARK) {
            starts.push(offset + (line.len() - line.trim_start().len()));
        }
        offset += line.len();
    }
    let mut out = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(ptx.len());
        let body = &ptx[start..end];
        let after = &body[MARK.len()..];
        let open = after
            .find('(')
            .unwrap_or_else(|| panic!("an entry without a parameter list: {}", first_line(body)));
        let name = after[..open].trim();
        let close = after[open..]
            .find(')')
            .unwrap_or_else(|| panic!("entry `{name}`: unterminated parameter list"))
            + open;
        let params = after[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                p.strip_prefix(".param")
                    .unwrap_or_else(|| panic!("entry `{name}`: not a .param: {p}"))
                    .trim()
            })
            .collect();
        out.push(Entry { name, params, body });
    }
    out
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
