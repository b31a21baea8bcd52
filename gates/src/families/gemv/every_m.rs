//! The tables of every timed m: each arm's time and GB/s at m beside its own at m = 1, the peers
//! at the same m, the formats against the peers shape by shape, Rust/.cu per m, and the batch
//! targets. A decode batch of m tokens reads the weights once for all m rows, so a GEMV that
//! stays bandwidth-bound keeps its GB/s as m grows; the tables show where it does not.

use super::*;

/// How many misses a peer target names in its line.
const MISSES_NAMED: usize = 3;

/// What one row of the per-m table follows across m: a format's kernel or a peer.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Line {
    Format(Format),
    Bf16,
    Fp8,
}

const LINES: [Line; 6] = [
    Line::Format(Format::Q8_0),
    Line::Format(Format::Q8_0Planar),
    Line::Format(Format::E4m3),
    Line::Format(Format::E4m3B128),
    Line::Bf16,
    Line::Fp8,
];

impl Line {
    fn at(self, m: usize) -> Arm {
        match self {
            Line::Format(f) => Arm::Gemv(f, m),
            Line::Bf16 => Arm::Bf16(m),
            Line::Fp8 => Arm::Fp8(m),
        }
    }

    /// The side its times are read from: the Rust build for a format.
    fn side(self) -> Side {
        match self {
            Line::Format(_) => Side::Rust,
            Line::Bf16 | Line::Fp8 => Side::Peer,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Line::Format(f) => format_label(f),
            Line::Bf16 => "cublas bf16",
            Line::Fp8 => "cublaslt e4m3",
        }
    }
}

/// One line of one case at one m (JSONL kind `batch`).
#[derive(Serialize)]
struct BatchRow {
    case: String,
    shape: String,
    in_f: usize,
    out_f: usize,
    class: ValueClass,
    arm: &'static str,
    m: usize,
    /// The FP8 peer's activation columns N (m, or more where the library takes no fewer).
    #[serde(skip_serializing_if = "Option::is_none")]
    columns: Option<usize>,
    us: f64,
    gbps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cu_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rust_over_cu: Option<f64>,
    /// GB/s at m as a % of the same arm's at m = 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pct_of_m1: Option<f64>,
}

/// One batch target (JSONL kind `batch_target`).
#[derive(Serialize)]
pub(super) struct TargetRow {
    pub(super) target: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) m: Option<usize>,
    pub(super) measured: String,
    pub(super) met: Option<bool>,
}

/// The median time and GB/s of `line` at `m` in case `t`.
fn timed(t: &CaseTiming<Gemv>, line: Line, m: usize) -> Option<(f64, f64)> {
    let a = t.arm(line.at(m))?;
    Some((a.on(line.side())?.median_us, a.gbps(line.side())?))
}

/// Targets are judged on judged items: not met if any fails, unjudged if any could not be
/// judged (a peer that did not run, an m not timed), met otherwise.
pub(super) fn verdict(items: impl IntoIterator<Item = Option<bool>>) -> Option<bool> {
    let items: Vec<Option<bool>> = items.into_iter().collect();
    if items.contains(&Some(false)) {
        Some(false)
    } else if items.is_empty() || items.contains(&None) {
        None
    } else {
        Some(true)
    }
}

/// A target's verdict in a table cell.
fn met(v: Option<bool>) -> String {
    match v {
        Some(true) => "met",
        Some(false) => "not met",
        None => "-",
    }
    .into()
}

pub(super) fn summary(gemv: &Gemv, timings: &[CaseTiming<Gemv>], out: &mut Report<'_>) {
    let batches = &gemv.batches;
    let table = by_m(gemv, timings, out);
    out.table(
        "every m (cell: us, GB/s, GB/s as % of the same arm's at m = 1; formats the Rust build; \
         N the FP8 peer's columns)",
        table,
    );
    let uniform: Vec<&CaseTiming<Gemv>> = timings
        .iter()
        .filter(|t| t.class == ValueClass::Uniform)
        .collect();
    let peers = against_peers(&uniform, batches);
    if !peers.is_empty() {
        out.table(
            "formats against the peers at each m (uniform shapes, Rust build)",
            peers,
        );
    }
    let targets = targets(&uniform, batches);
    let mut table = Table::new(&["target", "measured", "verdict"]);
    for row in &targets {
        table.row(vec![row.target.clone(), row.measured.clone(), met(row.met)]);
        out.row("batch_target", row);
    }
    out.table(
        "batch targets (benchmarks: reported, never part of the exit status)",
        table,
    );
}

/// Per case and line, a cell per timed m (us, GB/s, % of the line's m = 1 GB/s, the FP8 peer's
/// N), each also a JSONL row.
fn by_m(gemv: &Gemv, timings: &[CaseTiming<Gemv>], out: &mut Report<'_>) -> Table {
    let batches = &gemv.batches;
    let mut header = vec!["case", "arm"];
    let names: Vec<String> = batches.iter().map(|m| format!("m={m}")).collect();
    header.extend(names.iter().map(String::as_str));
    let mut table = Table::new(&header);
    for t in timings {
        for line in LINES {
            let mut cells = vec![t.label(), line.label().to_string()];
            let base = timed(t, line, 1).map(|(_, g)| g);
            for &m in batches {
                let Some((us, gbps)) = timed(t, line, m) else {
                    cells.push("-".into());
                    continue;
                };
                let arm = line.at(m);
                let columns = matches!(line, Line::Fp8)
                    .then(|| gemv.peer_columns(t.shape, arm))
                    .flatten();
                let pct = base.map(|b| 100.0 * gbps / b);
                let cu_us = t.arm(arm).and_then(|a| a.on(Side::Cu)).map(|s| s.median_us);
                let mut cell = format!("{us:.2} {gbps:.0}");
                if let Some(p) = pct {
                    cell.push_str(&format!(" {p:.0}%"));
                }
                if let Some(n) = columns {
                    cell.push_str(&format!(" N={n}"));
                }
                cells.push(cell);
                out.row(
                    "batch",
                    &BatchRow {
                        case: t.label(),
                        shape: t.shape.name.to_string(),
                        in_f: t.shape.in_f,
                        out_f: t.shape.out_f,
                        class: t.class,
                        arm: line.label(),
                        m,
                        columns,
                        us,
                        gbps,
                        cu_us,
                        rust_over_cu: cu_us.map(|c| us / c),
                        pct_of_m1: pct,
                    },
                );
            }
            if cells[2..].iter().any(|c| c != "-") {
                table.row(cells);
            }
        }
    }
    table
}

/// The slowest format at `m` in case `t` (Rust build): its time and label.
fn slowest(t: &CaseTiming<Gemv>, m: usize) -> Option<(f64, &'static str)> {
    FORMATS
        .iter()
        .map(|&f| timed(t, Line::Format(f), m).map(|(us, _)| (us, format_label(f))))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// Per uniform shape and m: the slowest format beside both peers, and whether it is faster.
fn against_peers(uniform: &[&CaseTiming<Gemv>], batches: &[usize]) -> Table {
    let mut table = Table::new(&[
        "case",
        "m",
        "slowest format us",
        "cublas bf16 us",
        "cublaslt e4m3 us",
        "faster than bf16",
        "faster than fp8",
    ]);
    let fmt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    for t in uniform {
        for &m in batches {
            let s = slowest(t, m);
            let bf16 = timed(t, Line::Bf16, m).map(|(us, _)| us);
            let fp8 = timed(t, Line::Fp8, m).map(|(us, _)| us);
            if bf16.is_none() && fp8.is_none() {
                continue;
            }
            let faster = |peer: Option<f64>| s.zip(peer).map(|((us, _), p)| us < p);
            table.row(vec![
                t.label(),
                m.to_string(),
                s.map_or("-".into(), |(us, f)| format!("{us:.2} ({f})")),
                fmt(bf16),
                fmt(fp8),
                yes_no(faster(bf16)),
                yes_no(faster(fp8)),
            ]);
        }
    }
    table
}

/// The four largest uniform shapes (on the 27B sheet q_proj, o_proj, gate/up and down).
fn largest_four<'a>(uniform: &[&'a CaseTiming<Gemv>]) -> Vec<&'a CaseTiming<Gemv>> {
    let mut by_size = uniform.to_vec();
    by_size.sort_by_key(|t| std::cmp::Reverse(t.shape.in_f * t.shape.out_f));
    by_size.truncate(4);
    by_size
}

/// The batch targets: each format at m = 8 within 10% of its m = 1 GB/s on the largest four
/// shapes; every format faster than each peer at every m, shape by shape; Rust/.cu geomean
/// <= 1.00 at every m. Reported, never failing the gate.
pub(super) fn targets(uniform: &[&CaseTiming<Gemv>], batches: &[usize]) -> Vec<TargetRow> {
    let mut rows = Vec::new();
    let row = |target: String, m, measured: String, met| TargetRow {
        target,
        m,
        measured,
        met,
    };
    let big = largest_four(uniform);
    let names: Vec<String> = big.iter().map(|t| t.label()).collect();
    for f in FORMATS {
        let line = Line::Format(f);
        let target = format!(
            "{}: GB/s at m=8 >= 90% of m=1 ({})",
            format_label(f),
            names.join(", ")
        );
        if !(batches.contains(&1) && batches.contains(&8)) || big.is_empty() {
            rows.push(row(
                target,
                Some(8),
                "m=1 and m=8 not both timed".into(),
                None,
            ));
            continue;
        }
        let pcts: Vec<(Option<f64>, &CaseTiming<Gemv>)> = big
            .iter()
            .map(|t| {
                let (one, eight) = (timed(t, line, 1)?, timed(t, line, 8)?);
                Some(100.0 * eight.1 / one.1)
            })
            .zip(big.iter().copied())
            .collect();
        let low = pcts
            .iter()
            .filter_map(|(p, t)| p.map(|p| (p, t)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        rows.push(row(
            target,
            Some(8),
            low.map_or("-".into(), |(p, t)| format!("min {p:.1}% ({})", t.label())),
            verdict(pcts.iter().map(|(p, _)| p.map(|p| p >= 90.0))),
        ));
    }
    for peer in [Line::Bf16, Line::Fp8] {
        let mut judged = Vec::new();
        let mut misses = Vec::new();
        for t in uniform {
            for &m in batches {
                let s = slowest(t, m);
                let p = timed(t, peer, m).map(|(us, _)| us);
                let faster = s.zip(p).map(|((us, _), p)| us < p);
                if let (Some(false), Some((us, f)), Some(p)) = (faster, s, p) {
                    misses.push(format!("{} m={m} ({f} {us:.2} vs {p:.2} us)", t.label()));
                }
                judged.push(faster);
            }
        }
        let held = judged.iter().filter(|j| **j == Some(true)).count();
        let (done, gaps) = judged.iter().fold((0, 0), |(d, g), j| match j {
            Some(_) => (d + 1, g),
            None => (d, g + 1),
        });
        let mut measured = match done {
            0 => "no uniform shape with this peer timed".to_string(),
            _ => format!("{held} of {done} (shape, m)"),
        };
        if done > 0 && gaps > 0 {
            measured.push_str(&format!(", {gaps} without both timed"));
        }
        // The first few misses; the table above has every one.
        if !misses.is_empty() {
            let more = misses.len().saturating_sub(MISSES_NAMED);
            misses.truncate(MISSES_NAMED);
            measured.push_str(&format!("; not at {}", misses.join(", ")));
            if more > 0 {
                measured.push_str(&format!(" and {more} more"));
            }
        }
        rows.push(row(
            format!(
                "every format faster than {} at every m, shape by shape (uniform shapes)",
                peer.label()
            ),
            None,
            measured,
            verdict(judged),
        ));
    }
    for &m in batches {
        let ratios: Vec<(f64, Arm, String)> = uniform
            .iter()
            .flat_map(|t| {
                FORMATS.iter().filter_map(move |&f| {
                    let a = t.arm(Arm::Gemv(f, m))?;
                    let (r, c) = (a.on(Side::Rust)?, a.on(Side::Cu)?);
                    Some((r.median_us / c.median_us, Arm::Gemv(f, m), t.label()))
                })
            })
            .collect();
        let g = geomean(ratios.iter().map(|r| r.0));
        let worst = ratios.iter().max_by(|a, b| a.0.total_cmp(&b.0));
        rows.push(row(
            format!("Rust/.cu geomean <= 1.00 at m={m} (every format, uniform shapes)"),
            Some(m),
            worst.map_or("-".into(), |(w, arm, case)| {
                format!(
                    "{g:.3} over {} arms (worst {w:.3}, {} at {case})",
                    ratios.len(),
                    arm.label()
                )
            }),
            (!ratios.is_empty()).then_some(g <= 1.0),
        ));
    }
    rows
}
