//! Helpers shared by the PTX checks of the root package (`tests/ptx.rs`), of `host`
//! (`host/tests/reference.rs`) and of `gates` (`gates/tests/golden.rs`), which include this file
//! by path: the skip-or-fail policy for missing CPU tools, and panicking front ends to the PTX
//! parsing and ptxas runs of `ptx_tools`, and the report of skipped tests.
//!
//! Each test crate uses a different part of it.
#![allow(dead_code, unused_imports)]

use ptx_tools::table::Table;
use ptx_tools::{parse, ptxas};
use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;

pub use ptx_tools::parse::{Entry, ParamType};
pub use ptx_tools::ptxas::{find as find_ptxas, version as ptxas_version, Resources};

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

/// The tests of this binary that skipped, with why, for [`print_skipped`].
static SKIPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

extern "C" {
    /// C's `atexit`: libtest has no hook that runs after its summary, and exits through `exit`.
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// Prints, after libtest's `test result:` line (which counts a skipped test as passed), how many
/// of this binary's tests checked nothing and why. Registered with `atexit` by the first skip.
extern "C" fn print_skipped() {
    let skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    say(&format!(
        "SKIPPED {} of the tests counted as passed above:\n  {}\n",
        skipped.len(),
        skipped.join("\n  ")
    ));
}

/// Reports that `test` checked nothing, and why: a `SKIPPED` line now, and the count and list
/// again at the end of the run.
pub fn skip(test: &str, why: &str) {
    say(&format!("SKIPPED {test}: {why}"));
    let mut skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    if skipped.is_empty() {
        // SAFETY: registers a function that takes no arguments and only writes to stderr.
        unsafe { atexit(print_skipped) };
    }
    skipped.push(format!("{test}: {why}"));
}

/// Reports a missing tool: a panic when [`require_cpu_tools`], otherwise a [`skip`].
pub fn missing_tool(test: &str, what: &str, install: &str) {
    if require_cpu_tools() {
        panic!("{test}: {what} not found and {REQUIRE_VAR}=1 ({install})");
    }
    skip(test, &format!("{what} not found ({install})"));
}

pub const PTXAS_INSTALL: &str = ptxas::INSTALL;

/// Runs test `name` of this test binary again, in a child process whose `PATH` and
/// `LD_LIBRARY_PATH` lack every folder that holds one of `files` and whose `vars` are unset,
/// with [`REQUIRE_VAR`]`=1`: a check that the test finds those files on its own. Panics with the
/// child's output unless exactly that test ran and passed.
pub fn rerun_without(name: &str, files: &[&str], vars: &[&str]) {
    let holds = |dir: &Path| files.iter().any(|f| dir.join(f).exists());
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(["--exact", name, "--test-threads=1"])
        .env(REQUIRE_VAR, "1");
    for var in ["PATH", "LD_LIBRARY_PATH"] {
        let kept: Vec<_> = std::env::var_os(var)
            .map(|v| std::env::split_paths(&v).filter(|d| !holds(d)).collect())
            .unwrap_or_default();
        cmd.env(
            var,
            std::env::join_paths(kept).expect("the folders were a path list"),
        );
    }
    for var in vars {
        cmd.env_remove(var);
    }
    let out = cmd.output().expect("running the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "`{name}` without {files:?} on PATH / LD_LIBRARY_PATH and without {vars:?}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The kernel entries of `ptx`, in module order; panics if the module is malformed.
pub fn entries(ptx: &str) -> Vec<Entry<'_>> {
    parse::parse(ptx)
        .unwrap_or_else(|e| panic!("malformed PTX: {e}"))
        .entries
}

/// Assembles `ptx` for `arch` with `ptxas -v` and returns the per-kernel report; panics with
/// ptxas's diagnostics if it refuses the module. `label` names the module in messages.
pub fn assemble(ptxas: &Path, ptx: &str, arch: &str, label: &str) -> Vec<Resources> {
    ptxas::assemble(ptxas, ptx, arch, label)
        .unwrap_or_else(|e| panic!("{e}"))
        .resources
}

/// The report as a table, one row per kernel, sorted by name.
pub fn table(title: &str, entries: &[Resources]) -> String {
    let mut rows: Vec<&Resources> = entries.iter().collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    let mut t = Table::new(&[
        "kernel",
        "regs",
        "bars",
        "smem (B)",
        "stack",
        "spill st (B)",
        "spill ld (B)",
    ]);
    for e in rows {
        let mut row = vec![e.name.clone()];
        row.extend(
            [
                e.registers,
                e.barriers,
                e.smem,
                e.stack_frame,
                e.spill_stores,
                e.spill_loads,
            ]
            .map(|n| n.to_string()),
        );
        t.row(row);
    }
    format!("{title}\n{}", t.render())
}

/// Registers in a multiprocessor's register file (sm_90), the most one block may hold.
const REGISTER_FILE: u32 = 65536;

/// Kernels whose registers per thread, allocated in units of 8, do not fit their largest launch
/// block (`max_block` of the kernel's name: its `KernelSpec::max_block`, see
/// `kernels_gpu::FAMILIES`) in the register file: such a launch fails at run time with "too many
/// resources requested", which no CPU-side check would otherwise catch.
pub fn over_register_budget(
    report: &[Resources],
    max_block: impl Fn(&str) -> Option<u32>,
) -> Vec<String> {
    report
        .iter()
        .filter_map(|e| match max_block(&e.name) {
            None => Some(format!(
                "{}: no KernelSpec in its family's table (kernels_gpu::FAMILIES)",
                e.name
            )),
            Some(threads) => {
                let per_thread = e.registers.div_ceil(8) * 8;
                (per_thread * threads > REGISTER_FILE).then(|| {
                    format!(
                        "{}: {} registers x {threads} threads > {REGISTER_FILE}",
                        e.name, e.registers
                    )
                })
            }
        })
        .collect()
}

/// The folder, under a module folder (`ptx/blessed/`, `target/ptx/<profile>/`), of `arch`'s
/// module as the builder writes it: the folder itself for the `primary` arch, a subfolder named
/// after any other.
pub fn arch_dir<'a>(arch: &'a str, primary: &str) -> &'a str {
    if arch == primary {
        ""
    } else {
        arch
    }
}

/// What is wrong with kernel `k`'s chain entry in a module for `arch` (kernels-gpu's
/// `chain_entry`, `reference/chain.cuh`'s in the .cu), or `None`. A kernel of a chained family
/// (`kernels_gpu::chained`) built for sm_90 or newer runs `griddepcontrol.launch_dependents`,
/// then `griddepcontrol.wait`, unpredicated in its first basic block (so on every path), before
/// any instruction that may touch global memory: a programmatic dependent launch may start it
/// while its predecessor still runs. One that triggers at exit (`kernels_gpu::triggers_at_exit`,
/// `chain_wait`) runs the wait the same way and never the trigger; a GEMV ([`Chain::AfterWeights`])
/// triggers first and reads nothing but weights before its wait. Any other kernel, and every
/// kernel below sm_90 (which has no programmatic launches), has neither instruction.
pub fn chain_entry_fault(k: &Entry<'_>, arch: &str, chain: Chain) -> Option<String> {
    let (chained, at_exit) = (chain != Chain::Not, chain == Chain::AtExit);
    let after_weights = chain == Chain::AfterWeights;
    let programmatic = arch
        .strip_prefix("sm_")
        .and_then(|n| {
            n.trim_end_matches(|c: char| c.is_ascii_alphabetic())
                .parse::<u32>()
                .ok()
        })
        .is_some_and(|n| n >= 90);
    if !(chained && programmatic) {
        let why = if chained {
            "built below sm_90"
        } else {
            "not chained"
        };
        return k
            .code
            .contains("griddepcontrol")
            .then(|| format!("{}: griddepcontrol in a kernel {why}", k.name));
    }
    let body = k.code.split_once('{').map_or("", |(_, body)| body);
    // Statement by statement: an inline asm block may hold several on one line, in braces.
    let statements = body
        .lines()
        .flat_map(|line| line.split(';'))
        .map(|s| s.trim().trim_start_matches(['{', '}']).trim());
    if at_exit && k.code.contains("griddepcontrol.launch_dependents") {
        return Some(format!(
            "{}: launch_dependents in a kernel that triggers at exit",
            k.name
        ));
    }
    let mut triggered = at_exit;
    for statement in statements {
        // Declarations (`.reg`, `.shared`, ...) run nothing.
        if statement.is_empty() || statement.starts_with('.') {
            continue;
        }
        let insn = match statement.strip_prefix('@') {
            Some(rest) => rest.split_once(char::is_whitespace).map_or("", |(_, i)| i),
            None => statement,
        }
        .trim();
        let op = insn.split(char::is_whitespace).next().unwrap_or("");
        let fault = |why: &str| Some(format!("{}: `{statement}` {why}", k.name));
        match op {
            "griddepcontrol.launch_dependents" if insn == statement && !triggered => {
                triggered = true
            }
            "griddepcontrol.wait" if insn == statement && triggered => return None,
            _ if op.starts_with("griddepcontrol") => {
                return fault("out of order (launch_dependents, then wait, unpredicated)")
            }
            _ if after_weights && triggered && weights_only(op) => {}
            _ if after_weights
                && triggered
                && (statement.ends_with(':') || op.starts_with("bra")) => {}
            _ if statement.ends_with(':')
                || matches!(
                    op.split('.').next(),
                    Some("bra" | "brx" | "ret" | "exit" | "call")
                ) =>
            {
                return fault("before griddepcontrol.wait: it is not in the first basic block")
            }
            _ if touches_global(op) => return fault("before griddepcontrol.wait"),
            _ => {}
        }
    }
    Some(format!("{}: no griddepcontrol.wait", k.name))
}

/// How a kernel joins a programmatic chain (`kernels_gpu::chained`, `triggers_at_exit`,
/// `waits_after_weights`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Chain {
    /// Not chained: neither instruction.
    Not,
    /// `chain_entry`: the trigger, then the wait, before any global access.
    AtEntry,
    /// `chain_wait` alone, before any global access.
    AtExit,
    /// `chain_trigger` first; before the first wait (in the text: a copy of the kernel's body for
    /// a case of its own has its own wait further on, unchecked) only branches and the weights'
    /// reads, which bypass L1 (`cp.async.cg`) or take the read-only path (`ld.global.nc`), never
    /// a read of the activation (`cp.async.ca`, `ld.global`) or a store.
    AfterWeights,
}

impl Chain {
    /// A kernel's, from `kernels_gpu::chained`, `triggers_at_exit` and `waits_after_weights`.
    pub fn of(chained: bool, at_exit: bool, after_weights: bool) -> Chain {
        match (chained, at_exit, after_weights) {
            (false, _, _) => Chain::Not,
            (true, true, _) => Chain::AtExit,
            (true, false, true) => Chain::AfterWeights,
            (true, false, false) => Chain::AtEntry,
        }
    }
}

/// Whether `op` reads only weights before the wait: a copy that bypasses L1, a read-only load, or
/// the copies' group bookkeeping.
fn weights_only(op: &str) -> bool {
    op.starts_with("cp.async.cg")
        || op.starts_with("cp.async.commit_group")
        || op.starts_with("cp.async.wait_group")
        || (op.starts_with("ld.global") && op.split('.').any(|p| p == "nc"))
}

/// Whether a PTX instruction `op` (its opcode and modifiers) may read or write global memory: a
/// load, store, prefetch or atomic whose state space is not `.param`, `.shared`, `.local` or
/// `.const` (a generic address may be global), or any `cp.async`.
fn touches_global(op: &str) -> bool {
    let mut parts = op.split('.');
    let base = parts.next().unwrap_or("");
    let elsewhere =
        parts.any(|p| matches!(p, "param" | "local" | "const") || p.starts_with("shared"));
    match base {
        "ld" | "ldu" | "st" | "prefetch" | "prefetchu" | "atom" | "red" => !elsewhere,
        "cp" => op.starts_with("cp.async"),
        _ => false,
    }
}

/// The registers an instruction line writes: its first operand where that is a register, or
/// every register of a leading `{...}` vector.
pub fn written_registers(line: &str) -> Vec<&str> {
    let Some((_, operands)) = line.split_once(char::is_whitespace) else {
        return Vec::new();
    };
    let operands = operands.trim_start();
    let first = match operands.strip_prefix('{') {
        Some(rest) => rest.split('}').next().unwrap_or(""),
        None => operands.split(',').next().unwrap_or(""),
    };
    first
        .split(',')
        .map(str::trim)
        .filter(|r| r.starts_with('%'))
        .collect()
}

/// The fences of one kernel's code, and each write of an accumulator between a `wgmma.fence`
/// and the next `wgmma` (whose accumulators it is).
pub fn fence_faults(code: &str) -> (usize, Vec<String>) {
    let lines: Vec<&str> = code.lines().map(str::trim).collect();
    let (mut fences, mut faults) = (0, Vec::new());
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with("wgmma.fence") {
            continue;
        }
        fences += 1;
        let Some(at) = lines[i..]
            .iter()
            .position(|l| l.starts_with("wgmma.mma_async"))
        else {
            faults.push("a fence with no wgmma after it".to_string());
            continue;
        };
        let accumulators = written_registers(lines[i + at]);
        for between in &lines[i + 1..i + at] {
            if written_registers(between)
                .iter()
                .any(|r| accumulators.contains(r))
            {
                faults.push(format!("`{between}` after a wgmma.fence"));
            }
        }
    }
    (fences, faults)
}
