//! Two builds side by side, kernel by kernel: status, instruction mix, ptxas resources, SASS,
//! and diffs; as text tables for people and as one JSON object for scripts.

use crate::report::Table;
use ptx_tools::build::{assemble, Assembled, Build, Kernel, Parsed};
use ptx_tools::diff::{compare, unified, KernelDiff, Status};
use ptx_tools::mix::Mix;
use ptx_tools::numerics::{self, Mismatch};
use ptx_tools::{ptxas, Error};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;
use std::fmt::Write as _;
use std::path::PathBuf;

/// How the two builds relate, which decides the wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A before, B after: `ptx-diff`. Cells read `A→B`.
    Diff,
    /// The Rust build and its reference .cu: `ptx-report`. Cells read `rust/cu`, no statuses.
    Report,
    /// The Rust build against its reference .cu: `ptx-diff --cu`. As [`Mode::Report`], with the
    /// numerics check deciding the outcome and the diffs on request.
    Cu,
}

/// The external tools a comparison may use.
#[derive(Debug, Clone, Default)]
pub struct Tools {
    pub ptxas: Option<PathBuf>,
    /// Given: compare SASS as well (needs ptxas).
    pub cuobjdump: Option<PathBuf>,
}

struct Side {
    build: Build,
    parsed: Parsed,
    assembled: Option<BTreeMap<String, Assembled>>,
}

impl Side {
    fn new(build: Build, tools: &Tools) -> Result<Side, Error> {
        let parsed = build.parse()?;
        let assembled = match &tools.ptxas {
            Some(p) => Some(assemble(
                &build,
                &parsed.arch,
                p,
                tools.cuobjdump.as_deref(),
            )?),
            None => None,
        };
        Ok(Side {
            build,
            parsed,
            assembled,
        })
    }

    fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.parsed.kernels.get(name)
    }

    fn assembled(&self, name: &str) -> Option<&Assembled> {
        self.assembled.as_ref()?.get(name)
    }
}

/// One kernel's comparison, diffs included.
struct Row {
    diff: KernelDiff,
    ptx_diff: String,
    /// `Some(changed)` when both sides have SASS.
    sass_changed: Option<bool>,
    sass_diff: String,
}

/// Two builds compared kernel by kernel.
pub struct Comparison {
    mode: Mode,
    a: Side,
    b: Side,
    ptxas_version: Option<String>,
    tools: Tools,
    rows: Vec<Row>,
    /// The numerics kinds each kernel has in one build only (`numerics::compare`).
    numerics: Vec<Mismatch>,
}

impl Comparison {
    /// Parses, assembles (with ptxas) and diffs `a` against `b`, with `context` lines around
    /// each change in the diffs.
    pub fn new(
        mode: Mode,
        a: Build,
        b: Build,
        tools: Tools,
        context: usize,
    ) -> Result<Comparison, Error> {
        let a = Side::new(a, &tools)?;
        let b = Side::new(b, &tools)?;
        let rows = compare(&a.parsed.kernels, &b.parsed.kernels)
            .into_iter()
            .map(|diff| {
                let text = |s: &Side| s.kernel(&diff.name).map(|k| k.normalized.clone());
                let sass = |s: &Side| s.assembled(&diff.name).and_then(|x| x.sass.clone());
                let ptx_diff = match (text(&a), text(&b)) {
                    (Some(x), Some(y)) => unified(&diff.name, "PTX", &x, &y, context),
                    _ => String::new(),
                };
                let (sass_changed, sass_diff) = match (sass(&a), sass(&b)) {
                    (Some(x), Some(y)) => {
                        (Some(x != y), unified(&diff.name, "SASS", &x, &y, context))
                    }
                    _ => (None, String::new()),
                };
                Row {
                    diff,
                    ptx_diff,
                    sass_changed,
                    sass_diff,
                }
            })
            .collect();
        let kinds = |s: &Side| {
            s.parsed
                .kernels
                .iter()
                .map(|(name, k)| (name.clone(), k.numerics.clone()))
                .collect()
        };
        let numerics = numerics::compare(&kinds(&a), &kinds(&b));
        Ok(Comparison {
            numerics,
            mode,
            a,
            b,
            ptxas_version: tools.ptxas.as_deref().map(ptxas::version),
            tools,
            rows,
        })
    }

    /// Whether any kernel was added, removed or changed, in PTX or in SASS.
    pub fn changed(&self) -> bool {
        self.rows
            .iter()
            .any(|r| r.diff.status != Status::Unchanged || r.sass_changed == Some(true))
    }

    fn count(&self, status: Status) -> usize {
        self.rows.iter().filter(|r| r.diff.status == status).count()
    }

    /// `x` when both sides agree, `x→y` (`x/y` in a report) when not, `-` for a missing side.
    fn cell<T: Display + PartialEq>(&self, a: Option<T>, b: Option<T>) -> String {
        let sep = match self.mode {
            Mode::Diff => "→",
            Mode::Report | Mode::Cu => "/",
        };
        let show = |v: &Option<T>| v.as_ref().map_or("-".to_string(), |v| v.to_string());
        match (&a, &b) {
            (Some(x), Some(y)) if x == y => x.to_string(),
            _ => format!("{}{sep}{}", show(&a), show(&b)),
        }
    }

    fn side_names(&self) -> (&'static str, &'static str) {
        match self.mode {
            Mode::Diff => ("A", "B"),
            Mode::Report | Mode::Cu => ("rust", "cu"),
        }
    }

    /// Whether a kernel has a numerics kind in one build only that [`numerics::ALLOWED`] does
    /// not explain.
    pub fn numerics_unexplained(&self) -> bool {
        self.numerics.iter().any(|m| m.allowed.is_none())
    }

    fn numerics_table(&self) -> Table {
        let (an, bn) = self.side_names();
        let mut table = Table::new(&["kernel", "kind", "only in", "why"]);
        for m in &self.numerics {
            table.row(vec![
                m.kernel.clone(),
                m.kind.clone(),
                (if m.in_first { an } else { bn }).to_string(),
                m.allowed.unwrap_or("UNEXPLAINED").to_string(),
            ]);
        }
        table
    }

    fn mix_table(&self) -> Table {
        let widths: BTreeSet<u32> = [&self.a, &self.b]
            .iter()
            .flat_map(|s| s.parsed.kernels.values())
            .flat_map(|k| k.mix.global_loads.keys().copied())
            .collect();
        let mut header = vec!["kernel".to_string()];
        if self.mode == Mode::Diff {
            header.push("status".into());
        }
        header.push("insns".into());
        header.extend(widths.iter().map(|w| format!("ld.global {w}B")));
        header.extend(
            [
                "st.global",
                "ld.shared",
                "st.shared",
                "shfl",
                "dp4a",
                "fma",
                "cvt",
                "bra",
                "bar",
            ]
            .map(String::from),
        );
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut table = Table::new(&header);
        for row in &self.rows {
            let name = &row.diff.name;
            let (a, b) = (
                self.a.kernel(name).map(|k| &k.mix),
                self.b.kernel(name).map(|k| &k.mix),
            );
            let num = |f: fn(&Mix) -> u32| self.cell(a.map(f), b.map(f));
            let mut cells = vec![name.clone()];
            if self.mode == Mode::Diff {
                cells.push(match &row.diff.same_body_as {
                    Some(twin) if row.diff.status == Status::Added => {
                        format!("added (renamed from {twin})")
                    }
                    Some(twin) => format!("removed (renamed to {twin})"),
                    None => row.diff.status.as_str().to_string(),
                });
            }
            cells.push(num(|m| m.instructions));
            for w in &widths {
                let loads = |m: &Mix| m.global_loads.get(w).copied().unwrap_or(0);
                cells.push(self.cell(a.map(loads), b.map(loads)));
            }
            cells.extend([
                num(|m| m.global_stores),
                num(|m| m.shared_loads),
                num(|m| m.shared_stores),
                num(|m| m.shuffles),
                num(|m| m.dp4a),
                num(|m| m.fma),
                num(|m| m.conversions),
                num(|m| m.branches),
                num(|m| m.barriers),
            ]);
            table.row(cells);
        }
        table
    }

    fn resources_table(&self) -> Table {
        let sass = self.tools.cuobjdump.is_some();
        let mut header = vec![
            "kernel",
            "regs",
            "bars",
            "smem B",
            "stack B",
            "spill st B",
            "spill ld B",
        ];
        if sass {
            header.extend(["sass insns", "sass"]);
        }
        let mut table = Table::new(&header);
        for row in &self.rows {
            let name = &row.diff.name;
            let (a, b) = (self.a.assembled(name), self.b.assembled(name));
            let num = |f: fn(&ptxas::Resources) -> u32| {
                self.cell(a.map(|x| f(&x.resources)), b.map(|x| f(&x.resources)))
            };
            let mut cells = vec![
                name.clone(),
                num(|r| r.registers),
                num(|r| r.barriers),
                num(|r| r.smem),
                num(|r| r.stack_frame),
                num(|r| r.spill_stores),
                num(|r| r.spill_loads),
            ];
            if sass {
                let insns = |x: &Assembled| x.sass.as_deref().map_or(0, sass_instructions);
                cells.push(self.cell(a.map(insns), b.map(insns)));
                cells.push(match row.sass_changed {
                    Some(true) => "changed".into(),
                    Some(false) => "unchanged".into(),
                    None => "-".into(),
                });
            }
            table.row(cells);
        }
        table
    }

    /// The text report: builds, tables, then (unless `diffs` is false) each changed kernel's
    /// unified diff, then a one-line summary.
    pub fn text(&self, diffs: bool) -> String {
        let (an, bn) = self.side_names();
        let mut out = String::new();
        for (n, s) in [(an, &self.a), (bn, &self.b)] {
            let _ = writeln!(
                out,
                "{n}: {} ({}; {} kernels for {})",
                s.build.label,
                s.build.about,
                s.parsed.kernels.len(),
                s.parsed.arch
            );
        }
        let cells = match self.mode {
            Mode::Diff => "A→B where they differ",
            Mode::Report | Mode::Cu => "rust/cu where they differ",
        };
        let _ = writeln!(
            out,
            "\ninstruction mix (static counts in the PTX; cells: {cells}):"
        );
        out.push_str(&self.mix_table().render());
        match &self.ptxas_version {
            Some(v) => {
                let sass = match self.tools.cuobjdump {
                    Some(_) => "; SASS from cuobjdump -sass, normalised",
                    None => "",
                };
                let _ = writeln!(
                    out,
                    "\nptxas {v} for each build's arch ({} / {}){sass}:",
                    self.a.parsed.arch, self.b.parsed.arch
                );
                out.push_str(&self.resources_table().render());
            }
            None => {
                let _ = writeln!(
                    out,
                    "\nregisters, spills, stack, shared memory: ptxas not found ({})",
                    ptxas::INSTALL
                );
            }
        }
        if self.mode != Mode::Diff {
            let mismatches = &self.numerics;
            let _ = writeln!(
                out,
                "\nnumerics: the float-rounding kinds a kernel has in one build only (rounding, .ftz, \
                 .approx, contraction, conversions, mma types; docs/ptx-diff.md):"
            );
            if mismatches.is_empty() {
                out.push_str("none: every kernel uses the same kinds in both builds\n");
            } else {
                out.push_str(&self.numerics_table().render());
            }
            if self.mode == Mode::Cu {
                let unexplained = mismatches.iter().filter(|m| m.allowed.is_none()).count();
                let _ = writeln!(
                    out,
                    "\n{} kernels compared; {} kinds in one build only, {} explained, {unexplained} \
                     unexplained{}",
                    self.rows.len(),
                    mismatches.len(),
                    mismatches.len() - unexplained,
                    if diffs { "" } else { " (the PTX diffs: --full)" }
                );
            }
        }
        if diffs && self.mode != Mode::Report {
            for row in &self.rows {
                for d in [&row.ptx_diff, &row.sass_diff] {
                    if !d.is_empty() {
                        out.push('\n');
                        out.push_str(d);
                    }
                }
            }
        }
        if self.mode == Mode::Diff {
            let sass = match self.tools.cuobjdump {
                Some(_) => format!(
                    "; SASS changed in {}",
                    self.rows
                        .iter()
                        .filter(|r| r.sass_changed == Some(true))
                        .count()
                ),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "\n{} changed, {} unchanged, {} added, {} removed{sass}",
                self.count(Status::Changed),
                self.count(Status::Unchanged),
                self.count(Status::Added),
                self.count(Status::Removed),
            );
        }
        out
    }

    /// The whole comparison as one JSON object (see `gates ptx-diff --help`).
    pub fn json(&self) -> Value {
        let side = |s: &Side| {
            json!({
                "label": s.build.label,
                "about": s.build.about,
                "arch": s.parsed.arch,
                "modules": s.build.modules.iter().map(|(m, _)| m).collect::<Vec<_>>(),
            })
        };
        let kernel = |s: &Side, name: &str| {
            s.kernel(name).map(|k| {
                let asm = s.assembled(name);
                json!({
                    "mix": k.mix,
                    "numerics": k.numerics,
                    "ptxas": asm.map(|x| &x.resources),
                    "sass_instructions": asm.and_then(|x| x.sass.as_deref()).map(sass_instructions),
                })
            })
        };
        let (an, bn) = self.side_names();
        let kernels: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "name": r.diff.name,
                    "status": r.diff.status,
                    "same_body_as": r.diff.same_body_as,
                    an: kernel(&self.a, &r.diff.name),
                    bn: kernel(&self.b, &r.diff.name),
                    "ptx_diff": r.ptx_diff,
                    "sass_changed": r.sass_changed,
                    "sass_diff": r.sass_diff,
                })
            })
            .collect();
        json!({
            an: side(&self.a),
            bn: side(&self.b),
            "ptxas": self.tools.ptxas.as_ref().map(|p| json!({
                "path": p, "version": self.ptxas_version,
            })),
            "cuobjdump": self.tools.cuobjdump,
            "kernels": kernels,
            "summary": {
                "changed": self.count(Status::Changed),
                "unchanged": self.count(Status::Unchanged),
                "added": self.count(Status::Added),
                "removed": self.count(Status::Removed),
                "sass_changed": self.rows.iter().filter(|r| r.sass_changed == Some(true)).count(),
            },
            "changed": self.changed(),
            "numerics": self.numerics.iter().map(|m| json!({
                "kernel": m.kernel,
                "kind": m.kind,
                "only_in": if m.in_first { an } else { bn },
                "why": m.allowed,
            })).collect::<Vec<_>>(),
            "numerics_unexplained": self.numerics_unexplained(),
        })
    }
}

/// Instructions in normalised SASS (label lines excluded).
fn sass_instructions(sass: &str) -> usize {
    sass.lines().filter(|l| !l.ends_with(':')).count()
}
