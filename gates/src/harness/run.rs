//! The runner: checks and timings of one case (a shape with a value class), the read-stream
//! ceiling, and a whole gate run with its tables, JSONL rows, chart and verdict.

use crate::harness::output::{named, Output};
use crate::harness::record::Jsonl;
use crate::harness::timing::{interleaved, interleaved_cold, Arm, Stats};
use crate::harness::{ArmSpec, Family, Label, On, Runs, Side, TimingMode, ValueClass, Verdict};
use crate::report::Table;
use host::{CudaSlice, Error, Gpu, Module};
use serde::Serialize;

/// One named check a family's oracle makes: its verdicts, one per output (or part) it covers.
#[derive(Debug, Clone)]
pub struct Check {
    /// What is checked and its bound, e.g. `z ~ f64 oracle (rel 4e-6)`.
    pub name: String,
    pub verdicts: Vec<(String, Verdict)>,
}

/// The outcome of one check on one case.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRow {
    pub case: String,
    pub check: String,
    pub outputs: Vec<String>,
    pub pass: bool,
    /// One line per output that failed: the first mismatching index and both values.
    pub failures: Vec<String>,
}

impl CheckRow {
    fn new(case: &str, check: String, verdicts: Vec<(String, Verdict)>) -> Self {
        let failures: Vec<String> = verdicts
            .iter()
            .filter_map(|(what, v)| v.as_ref().map(|v| format!("{what}: {v}")))
            .collect();
        CheckRow {
            case: case.to_string(),
            check,
            outputs: verdicts.into_iter().map(|(w, _)| w).collect(),
            pass: failures.is_empty(),
            failures,
        }
    }
}

/// A case's label: the shape, and the value class unless it is uniform.
pub fn case_label(shape: &impl std::fmt::Display, class: ValueClass) -> String {
    match class {
        ValueClass::Uniform => shape.to_string(),
        other => format!("{shape} {}", other.label()),
    }
}

/// The sides an arm runs on.
fn sides<'m>(spec: &ArmSpec<impl Copy>, modules: &'m [Module; 2]) -> Vec<On<'m>> {
    match spec.runs {
        Runs::Builds => modules.iter().map(On::Build).collect(),
        Runs::Peer => vec![On::Peer],
    }
}

/// Runs every arm of one case on every side, on poisoned outputs, and checks Rust == .cu for
/// every arm, each equivalence group in each build, the oracle, and that every output was
/// written.
pub fn check_case<F: Family>(
    fam: &F,
    gpu: &Gpu,
    modules: &[Module; 2],
    shape: F::Shape,
    class: ValueClass,
    seed: u64,
) -> Result<Vec<CheckRow>, Error> {
    let case = case_label(&shape, class);
    let inputs = fam.inputs(shape, class, seed);
    let mut set = fam.upload(gpu, shape, &inputs)?;
    let arms = fam.arms(shape);
    let mut runs: Vec<(F::Arm, Side, Vec<Output>)> = Vec::new();
    for spec in &arms {
        for on in sides(spec, modules) {
            fam.poison(gpu, spec.arm, &mut set)?;
            fam.enqueue(gpu, on, shape, spec.arm, &mut set)?;
            runs.push((spec.arm, Side::of(on), fam.download(gpu, spec.arm, &set)?));
        }
    }
    drop(set);
    let outputs_of = |arm: F::Arm, side: Side| {
        runs.iter()
            .find(|(a, s, _)| *a == arm && *s == side)
            .map(|(_, _, o)| o.as_slice())
    };

    let mut rows = Vec::new();
    for spec in arms.iter().filter(|s| s.runs == Runs::Builds) {
        let (Some(r), Some(u)) = (
            outputs_of(spec.arm, Side::Rust),
            outputs_of(spec.arm, Side::Cu),
        ) else {
            continue;
        };
        rows.push(CheckRow::new(
            &case,
            format!("rust == cu  {}", spec.arm.label()),
            compare_outputs(r, u, ""),
        ));
    }
    for group in fam.groups(shape) {
        for side in [Side::Rust, Side::Cu] {
            let Some((first, rest)) = group.arms.split_first() else {
                continue;
            };
            let Some(base) = outputs_of(*first, side) else {
                continue;
            };
            let verdicts = rest
                .iter()
                .flat_map(|arm| match outputs_of(*arm, side) {
                    Some(o) => compare_outputs(o, base, &format!("{} ", arm.label())),
                    None => vec![(arm.label(), Some("was not run".to_string()))],
                })
                .collect();
            rows.push(CheckRow::new(
                &case,
                format!("{} [{}]", group.name, side.label()),
                verdicts,
            ));
        }
    }
    for (arm, side, outs) in &runs {
        for check in fam.oracle(shape, &inputs, *arm, *side, outs) {
            rows.push(CheckRow::new(
                &case,
                format!("{} [{}]", check.name, side.label()),
                check.verdicts,
            ));
        }
    }
    for side in [Side::Rust, Side::Cu, Side::Peer] {
        let verdicts: Vec<(String, Verdict)> = runs
            .iter()
            .filter(|(_, s, _)| *s == side)
            .flat_map(|(arm, _, outs)| {
                outs.iter()
                    .map(move |o| (format!("{} {}", arm.label(), o.name), o.all_written()))
            })
            .collect();
        if !verdicts.is_empty() {
            rows.push(CheckRow::new(
                &case,
                format!("all written [{}]", side.label()),
                verdicts,
            ));
        }
    }
    Ok(rows)
}

/// Byte identity of the outputs two calls share by name (`got` against `want`).
fn compare_outputs(got: &[Output], want: &[Output], prefix: &str) -> Vec<(String, Verdict)> {
    got.iter()
        .filter_map(|g| {
            named(want, g.name).map(|w| (format!("{prefix}{}", g.name), g.identical(w)))
        })
        .collect()
}

/// An arm's timings, per side it runs on.
#[derive(Debug, Clone)]
pub struct TimedArm<A> {
    pub spec: ArmSpec<A>,
    pub stats: Vec<(Side, Stats)>,
}

impl<A> TimedArm<A> {
    pub fn on(&self, side: Side) -> Option<Stats> {
        self.stats
            .iter()
            .find(|(s, _)| *s == side)
            .map(|(_, st)| *st)
    }

    /// The arm's achieved bandwidth on `side`, in GB/s.
    pub fn gbps(&self, side: Side) -> Option<f64> {
        self.on(side)
            .map(|st| self.spec.bytes as f64 / (st.median_us * 1e-6) / 1e9)
    }
}

/// The timings of one case.
pub struct CaseTiming<F: Family> {
    pub shape: F::Shape,
    pub class: ValueClass,
    /// Buffer sets rotated through (1 when the L2 is scrubbed instead).
    pub copies: usize,
    /// Calls per timed sample.
    pub calls: usize,
    pub arms: Vec<TimedArm<F::Arm>>,
    /// A read stream of about the bytes of the case's arms, timed in the same rounds.
    pub stream: Option<SizedStream>,
}

/// `read_stream` (Rust build) over exactly [`Family::stream_bytes`] rounded down to 16 bytes,
/// timed by the case's protocol in the same rounds as its arms: what a pure read of as many
/// bytes reaches, launch and ramp included, beside the ceiling of a 2 GiB stream. A call of a
/// few tens of MB pays a kernel's fixed costs on a fraction of the ceiling's bytes, so this is
/// the closer bound for it.
#[derive(Debug, Clone, Copy)]
pub struct SizedStream {
    pub bytes: usize,
    pub stats: Stats,
}

impl SizedStream {
    pub fn gbps(&self) -> f64 {
        self.bytes as f64 / (self.stats.median_us * 1e-6) / 1e9
    }
}

impl<F: Family> CaseTiming<F> {
    pub fn label(&self) -> String {
        case_label(&self.shape, self.class)
    }

    pub fn arm(&self, arm: F::Arm) -> Option<&TimedArm<F::Arm>> {
        self.arms.iter().find(|t| t.spec.arm == arm)
    }
}

/// Buffer sets that a rotation of calls needs so that every timed arm's footprint is at least
/// twice the L2: sized from the fewest bytes any timed arm moves, at least 2, and no more than
/// fit in `budget` bytes of sets of `set_bytes` (at least 1).
pub fn rotation_copies(
    l2_bytes: usize,
    min_arm_bytes: usize,
    set_bytes: usize,
    budget: usize,
) -> usize {
    let wanted = (2 * l2_bytes).div_ceil(min_arm_bytes.max(1)).max(2);
    wanted.min(budget / set_bytes.max(1)).max(1)
}

/// An L2 scrub: a read stream over four times the L2, enqueued before every cold sample.
pub struct Scrub<'a> {
    module: &'a Module,
    buf: CudaSlice<f32>,
    sink: CudaSlice<f32>,
}

impl<'a> Scrub<'a> {
    pub fn new(gpu: &Gpu, module: &'a Module) -> Result<Self, Error> {
        let floats = (4 * gpu.info().l2_bytes).max(256 << 20) / 4;
        Ok(Scrub {
            module,
            buf: gpu.alloc_poisoned(floats, 0x3F)?,
            sink: gpu.alloc_poisoned(1, 0)?,
        })
    }

    pub fn run(&mut self, gpu: &Gpu) -> Result<(), Error> {
        host::stream::read_stream(self.module, gpu, &self.buf, &mut self.sink).map(|_| ())
    }
}

/// Times every timed arm of one case on every side it runs on.
#[allow(clippy::too_many_arguments)]
pub fn time_case<F: Family>(
    fam: &F,
    gpu: &Gpu,
    modules: &[Module; 2],
    shape: F::Shape,
    class: ValueClass,
    seed: u64,
    rounds: usize,
    iters: usize,
    scrub: Option<&mut Scrub<'_>>,
) -> Result<CaseTiming<F>, Error> {
    let inputs = fam.inputs(shape, class, seed);
    let specs: Vec<ArmSpec<F::Arm>> = fam.arms(shape).into_iter().filter(|s| s.timed).collect();
    let slots: Vec<(usize, On<'_>)> = specs
        .iter()
        .enumerate()
        .flat_map(|(i, spec)| sides(spec, modules).into_iter().map(move |on| (i, on)))
        .collect();
    let stream_bytes = fam.stream_bytes(shape) / 16 * 16;
    let mut sink = gpu.alloc_poisoned::<f32>(1, 0)?;
    let stream_buf = || gpu.alloc_poisoned::<f32>(stream_bytes / 4, 0x3F);
    let read_all = |buf: &CudaSlice<f32>, sink: &mut CudaSlice<f32>| {
        host::stream::read_stream_all(&modules[0], gpu, buf, sink).map(|_| ())
    };
    let (copies, calls, mut stats) = match (fam.timing(), scrub) {
        (TimingMode::Scrub | TimingMode::Warm, mut scrub) => {
            let mut set = fam.upload(gpu, shape, &inputs)?;
            let stream = (stream_bytes > 0).then(stream_buf).transpose()?;
            let stats = interleaved_cold(
                gpu,
                slots.len() + stream.is_some() as usize,
                rounds,
                || scrub.as_mut().map_or(Ok(()), |s| s.run(gpu)),
                |k| match slots.get(k) {
                    Some(&(i, on)) => fam.enqueue(gpu, on, shape, specs[i].arm, &mut set),
                    // Past the arms only when the stream is timed.
                    None => stream.as_ref().map_or(Ok(()), |b| read_all(b, &mut sink)),
                },
            )?;
            (1, 1, stats)
        }
        (TimingMode::Rotate, _) => {
            let min_bytes = specs.iter().map(|s| s.bytes).min().unwrap_or(1);
            let info = gpu.info();
            let set_bytes = fam.footprint(shape).set_bytes;
            let copies = rotation_copies(info.l2_bytes, min_bytes, set_bytes, info.total_mem / 4);
            let calls = iters.max(copies).div_ceil(copies) * copies;
            let mut sets = (0..copies)
                .map(|_| fam.upload(gpu, shape, &inputs))
                .collect::<Result<Vec<_>, _>>()?;
            let mut graphs = Vec::with_capacity(slots.len() + 1);
            for &(i, on) in &slots {
                let graph = gpu.capture(|| {
                    for c in 0..calls {
                        fam.enqueue(gpu, on, shape, specs[i].arm, &mut sets[c % copies])?;
                    }
                    Ok(())
                })?;
                graphs.push(Arm { graph, calls });
            }
            // The stream's buffers must outlive the replays of its graph.
            let mut bufs = Vec::new();
            if stream_bytes > 0 {
                let n = rotation_copies(
                    info.l2_bytes,
                    stream_bytes,
                    stream_bytes,
                    info.total_mem / 4,
                );
                bufs = (0..n)
                    .map(|_| stream_buf())
                    .collect::<Result<Vec<_>, _>>()?;
                let calls = iters.max(n).div_ceil(n) * n;
                let graph =
                    gpu.capture(|| (0..calls).try_for_each(|c| read_all(&bufs[c % n], &mut sink)))?;
                graphs.push(Arm { graph, calls });
            }
            let stats = interleaved(gpu, &graphs, rounds)?;
            drop(bufs);
            (copies, calls, stats)
        }
    };
    let stream = (stats.len() > slots.len()).then(|| SizedStream {
        bytes: stream_bytes,
        stats: stats.pop().expect("the stream's stats follow the arms'"),
    });
    let arms = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| TimedArm {
            spec: *spec,
            stats: slots
                .iter()
                .zip(&stats)
                .filter(|((j, _), _)| *j == i)
                .map(|((_, on), st)| (Side::of(*on), *st))
                .collect(),
        })
        .collect();
    Ok(CaseTiming {
        shape,
        class,
        copies,
        calls,
        arms,
        stream,
    })
}

/// The read-only bandwidth ceiling of this device in GB/s, per build: `read_stream` over a
/// 2 GiB buffer (or a sixteenth of the device), median over rounds.
pub fn read_ceiling(gpu: &Gpu, modules: &[Module; 2], rounds: usize) -> Result<[f64; 2], Error> {
    const LAUNCHES: usize = 10;
    let len = (gpu.info().total_mem / 16).min(2 << 30) / 4;
    let x = gpu.alloc_poisoned::<f32>(len, 0x3F)?;
    let mut sink = gpu.alloc_poisoned::<f32>(1, 0)?;
    let mut bytes = 0;
    let mut arms = Vec::new();
    for m in modules {
        let graph = gpu.capture(|| {
            for _ in 0..LAUNCHES {
                bytes = host::stream::read_stream(m, gpu, &x, &mut sink)?;
            }
            Ok(())
        })?;
        arms.push(Arm {
            graph,
            calls: LAUNCHES,
        });
    }
    let stats = interleaved(gpu, &arms, rounds)?;
    Ok([0, 1].map(|i| bytes as f64 / (stats[i].median_us * 1e-6) / 1e9))
}

/// Where a family's summary goes: tables printed after the run's, rows to the JSONL file.
pub struct Report<'a> {
    jsonl: &'a mut Jsonl,
    /// The read-stream ceiling of the run, GB/s (the faster build's).
    pub ceiling_gbps: f64,
    tables: Vec<(String, Table)>,
    lines: Vec<String>,
    write_error: Option<std::io::Error>,
}

impl<'a> Report<'a> {
    pub fn new(jsonl: &'a mut Jsonl, ceiling_gbps: f64) -> Self {
        Report {
            jsonl,
            ceiling_gbps,
            tables: Vec::new(),
            lines: Vec::new(),
            write_error: None,
        }
    }

    pub fn table(&mut self, title: impl Into<String>, table: Table) {
        self.tables.push((title.into(), table));
    }

    /// A line printed after the tables (a note, a regression).
    pub fn line(&mut self, line: impl Into<String>) {
        self.lines.push(line.into());
    }

    /// A JSONL row of the family's own `kind`. A failed write is kept and ends the run after
    /// the summary (see [`Report::write_error`]), so a family's summary needs no error path.
    pub fn row<T: Serialize>(&mut self, kind: &str, row: &T) {
        if let Err(e) = self.jsonl.write(kind, row) {
            self.write_error.get_or_insert(e);
        }
    }

    /// The first JSONL write that failed, if any.
    pub fn write_error(&mut self) -> Option<std::io::Error> {
        self.write_error.take()
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for (title, t) in &self.tables {
            out.push_str(&format!("== {title} ==\n{}\n", t.render()));
        }
        for l in &self.lines {
            out.push_str(l);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotations_cover_twice_the_l2_with_at_least_two_sets() {
        let (l2, budget) = (60 << 20, 1 << 34);
        assert_eq!(rotation_copies(l2, 200 << 20, 300 << 20, budget), 2);
        assert_eq!(rotation_copies(l2, 5 << 20, 20 << 20, budget), 24);
        assert!(rotation_copies(l2, 7 << 20, 7 << 20, budget) * (7 << 20) >= 2 * l2);
        // Sets too large for the budget: as many as fit, at least one.
        assert_eq!(rotation_copies(l2, 5 << 20, 1 << 32, budget), 4);
        assert_eq!(rotation_copies(l2, 5 << 20, 1 << 35, budget), 1);
    }

    #[test]
    fn check_rows_list_failures_with_their_output() {
        let row = CheckRow::new(
            "1x32",
            "x".into(),
            vec![("a".into(), None), ("b".into(), Some("differs".into()))],
        );
        assert!(!row.pass);
        assert_eq!(row.outputs, vec!["a", "b"]);
        assert_eq!(row.failures, vec!["b: differs"]);
    }

    #[test]
    fn uniform_cases_are_labelled_by_shape_alone() {
        assert_eq!(case_label(&"1x32", ValueClass::Uniform), "1x32");
        assert_eq!(case_label(&"1x32", ValueClass::Zeros), "1x32 zeros");
    }
}
