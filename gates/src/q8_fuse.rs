//! The q8-fuse gate: `rms_norm` then `quantize_q8_1` (the chain) against the fused
//! `rms_norm_zq8_f32`, and every kernel's Rust build against its reference .cu build.
//!
//! Checks, per shape (see `gates q8-fuse --help`):
//! 1. fused == chain: `z`, `qs`, `d` byte-identical, in each build;
//! 2. rust == cu: byte-identical outputs of each of the three kernels on the same inputs;
//! 3. `z` within [`oracle::Z_REL_TOL`] of the f64 oracle; `qs` and `d` exactly the q8_1
//!    definition applied to the GPU's own input to quantization;
//! 4. every output element written (outputs are poisoned before each launch).
//!
//! Then timings: per-call device time of each kernel in each build, of the chain and of the
//! fused kernel, and achieved bandwidth against a read-stream ceiling measured in the same run.

use crate::compare::{all_written, identical, within_rel, Verdict};
use crate::report::{Jsonl, Table};
use crate::timing::{interleaved, Arm, Stats};
use crate::{oracle, rng};
use host::norm_q8::{self as launch, Rows};
use host::{CudaSlice, Error, Gpu, Module};
use serde_json::json;

/// The shapes the gate runs by default: three single-row decode widths and a many-row shape
/// whose traffic is far beyond L2, so that it is bandwidth-bound.
pub const DEFAULT_SHAPES: [Rows; 4] = [
    Rows {
        nrows: 1,
        ncols: 4096,
    },
    Rows {
        nrows: 1,
        ncols: 8192,
    },
    Rows {
        nrows: 1,
        ncols: 1536,
    },
    Rows {
        nrows: 4096,
        ncols: 4096,
    },
];

pub const EPS: f32 = 1e-6;
/// Input magnitude: values uniform in `[-4, 4)`.
const INPUT_SCALE: f32 = 4.0;
/// Every byte 0xFF: an f32 NaN no kernel writes.
const POISON_F32: u8 = 0xFF;
/// Every byte 0x80: -128, which q8_1 never produces (its range is -127..=127).
const POISON_I8: u8 = 0x80;

pub struct Options {
    pub shapes: Vec<Rows>,
    pub seed: u64,
    /// Calls per timed graph (at least; raised until the rotation defeats L2).
    pub iters: usize,
    pub rounds: usize,
    pub timing: bool,
}

/// What the gate found; `failed` decides the exit status.
pub struct Outcome {
    pub failed: usize,
    pub checks: usize,
}

pub fn shape_label(r: Rows) -> String {
    format!("{}x{}", r.nrows, r.ncols)
}

/// Device outputs of one kernel call, poisoned before each launch.
struct Out {
    z: CudaSlice<f32>,
    qs: CudaSlice<i8>,
    d: CudaSlice<f32>,
}

/// Their host copies.
struct HostOut {
    z: Vec<f32>,
    qs: Vec<i8>,
    d: Vec<f32>,
}

impl Out {
    fn new(gpu: &Gpu, n: usize) -> Result<Self, Error> {
        Ok(Out {
            z: gpu.alloc_poisoned(n, POISON_F32)?,
            qs: gpu.alloc_poisoned(n, POISON_I8)?,
            d: gpu.alloc_poisoned(n / 32, POISON_F32)?,
        })
    }

    fn poison(&mut self, gpu: &Gpu) -> Result<(), Error> {
        gpu.poison(&mut self.z, POISON_F32)?;
        gpu.poison(&mut self.qs, POISON_I8)?;
        gpu.poison(&mut self.d, POISON_F32)
    }

    fn download(&self, gpu: &Gpu) -> Result<HostOut, Error> {
        Ok(HostOut {
            z: gpu.download(&self.z)?,
            qs: gpu.download(&self.qs)?,
            d: gpu.download(&self.d)?,
        })
    }
}

fn chain(
    m: &Module,
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    w: &CudaSlice<f32>,
    o: &mut Out,
    rows: Rows,
) -> Result<(), Error> {
    launch::rms_norm(m, gpu, x, w, &mut o.z, rows, EPS)?;
    launch::quantize_q8_1(m, gpu, &o.z, &mut o.qs, &mut o.d, rows.elems())
}

fn fused(
    m: &Module,
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    w: &CudaSlice<f32>,
    o: &mut Out,
    rows: Rows,
) -> Result<(), Error> {
    launch::rms_norm_zq8_f32(m, gpu, x, w, &mut o.z, &mut o.qs, &mut o.d, rows, EPS)
}

/// The outcome of one check on one shape.
#[derive(Debug, Clone)]
pub struct CheckRow {
    pub shape: Rows,
    pub check: String,
    /// The outputs the check compared.
    pub outputs: Vec<&'static str>,
    /// One line per output that failed: the first mismatching index and both values.
    pub failures: Vec<String>,
}

impl CheckRow {
    pub fn pass(&self) -> bool {
        self.failures.is_empty()
    }

    fn new(shape: Rows, check: String, verdicts: Vec<(&'static str, Verdict)>) -> Self {
        let failures = verdicts
            .iter()
            .filter_map(|(what, v)| v.as_ref().map(|v| format!("{what}: {v}")))
            .collect();
        let outputs = verdicts.iter().map(|(w, _)| *w).collect();
        CheckRow {
            shape,
            check,
            outputs,
            failures,
        }
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "gate": "q8-fuse", "kind": "check", "shape": shape_label(self.shape),
            "nrows": self.shape.nrows, "ncols": self.shape.ncols, "check": self.check,
            "outputs": self.outputs, "pass": self.pass(), "failures": self.failures,
        })
    }
}

/// Loads both builds: the Rust PTX embedded in this binary and the reference .cu via NVRTC.
pub fn load_builds(gpu: &Gpu) -> Result<[Module; 2], Error> {
    Ok([Module::rust(gpu)?, Module::cu(gpu)?])
}

/// Runs checks 1-4 on one shape.
pub fn check_shape(
    gpu: &Gpu,
    modules: &[Module; 2],
    rows: Rows,
    seed: u64,
) -> Result<Vec<CheckRow>, Error> {
    let mut checks = Vec::new();
    let mut record = |check: String, verdicts: Vec<(&'static str, Verdict)>| {
        checks.push(CheckRow::new(rows, check, verdicts));
    };
    let n = rows.elems();
    let x_host = rng::vec_f32(
        rng::case_seed(seed, &[1, rows.nrows as u64, rows.ncols as u64]),
        n,
        INPUT_SCALE,
    );
    let w_host = rng::vec_f32(
        rng::case_seed(seed, &[2, rows.ncols as u64]),
        rows.ncols,
        INPUT_SCALE,
    );
    let x = gpu.upload(&x_host)?;
    let w = gpu.upload(&w_host)?;
    let mut out = Out::new(gpu, n)?;

    // Per build: the chain, the fused kernel, and quantize_q8_1 alone on x.
    let mut runs = Vec::new();
    for m in modules {
        out.poison(gpu)?;
        chain(m, gpu, &x, &w, &mut out, rows)?;
        let c = out.download(gpu)?;
        out.poison(gpu)?;
        fused(m, gpu, &x, &w, &mut out, rows)?;
        let f = out.download(gpu)?;
        out.poison(gpu)?;
        launch::quantize_q8_1(m, gpu, &x, &mut out.qs, &mut out.d, n)?;
        let q = HostOut {
            z: Vec::new(),
            qs: gpu.download(&out.qs)?,
            d: gpu.download(&out.d)?,
        };
        runs.push((m.build(), c, f, q));
    }

    for (build, c, f, _) in &runs {
        record(
            format!("1 fused == chain [{}]", build.label()),
            vec![
                ("z", identical(&f.z, &c.z)),
                ("qs", identical(&f.qs, &c.qs)),
                ("d", identical(&f.d, &c.d)),
            ],
        );
    }
    let (r, u) = (&runs[0], &runs[1]);
    record(
        "2 rust == cu  rms_norm".into(),
        vec![("z", identical(&r.1.z, &u.1.z))],
    );
    record(
        "2 rust == cu  quantize_q8_1".into(),
        vec![
            ("qs", identical(&r.3.qs, &u.3.qs)),
            ("d", identical(&r.3.d, &u.3.d)),
        ],
    );
    record(
        "2 rust == cu  rms_norm_zq8_f32".into(),
        vec![
            ("z", identical(&r.2.z, &u.2.z)),
            ("qs", identical(&r.2.qs, &u.2.qs)),
            ("d", identical(&r.2.d, &u.2.d)),
        ],
    );

    let z_ref = oracle::rms_norm_f64(&x_host, &w_host, rows.ncols, EPS);
    let (qs_x, d_x) = oracle::quantize_q8_1(&x_host);
    for (build, c, f, q) in &runs {
        let label = build.label();
        let (z_chain, worst_chain) = within_rel(&c.z, &z_ref, oracle::Z_REL_TOL);
        let (z_fused, worst_fused) = within_rel(&f.z, &z_ref, oracle::Z_REL_TOL);
        record(
            format!(
                "3 z ~ f64 oracle [{label}] (max rel {:.1e})",
                worst_chain.max(worst_fused)
            ),
            vec![("chain z", z_chain), ("fused z", z_fused)],
        );
        let (qs_c, d_c) = oracle::quantize_q8_1(&c.z);
        let (qs_f, d_f) = oracle::quantize_q8_1(&f.z);
        record(
            format!("3 q8_1 == definition [{label}]"),
            vec![
                ("chain qs", identical(&c.qs, &qs_c)),
                ("chain d", identical(&c.d, &d_c)),
                ("fused qs", identical(&f.qs, &qs_f)),
                ("fused d", identical(&f.d, &d_f)),
                ("quantize(x) qs", identical(&q.qs, &qs_x)),
                ("quantize(x) d", identical(&q.d, &d_x)),
            ],
        );
        let poison_f32 = f32::from_bits(u32::from_ne_bytes([POISON_F32; 4]));
        let poison_i8 = POISON_I8 as i8;
        record(
            format!("4 all written [{label}]"),
            vec![
                ("chain z", all_written(&c.z, poison_f32)),
                ("chain qs", all_written(&c.qs, poison_i8)),
                ("chain d", all_written(&c.d, poison_f32)),
                ("fused z", all_written(&f.z, poison_f32)),
                ("fused qs", all_written(&f.qs, poison_i8)),
                ("fused d", all_written(&f.d, poison_f32)),
                ("quantize qs", all_written(&q.qs, poison_i8)),
                ("quantize d", all_written(&q.d, poison_f32)),
            ],
        );
    }
    Ok(checks)
}

/// What one timed call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArmKind {
    RmsNorm,
    Quantize,
    /// `rms_norm` then `quantize_q8_1` of its output: two launches.
    Chain,
    Fused,
}

impl ArmKind {
    pub const ALL: [ArmKind; 4] = [
        ArmKind::RmsNorm,
        ArmKind::Quantize,
        ArmKind::Chain,
        ArmKind::Fused,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ArmKind::RmsNorm => "rms_norm",
            ArmKind::Quantize => "quantize_q8_1",
            ArmKind::Chain => "chain",
            ArmKind::Fused => "fused",
        }
    }

    /// Bytes a call must move at least: every input read once, every output written once.
    pub fn bytes_moved(self, rows: Rows) -> usize {
        let n = rows.elems();
        let (x, w, z, q8) = (4 * n, 4 * rows.ncols, 4 * n, n + n / 8);
        match self {
            ArmKind::RmsNorm => x + w + z,
            ArmKind::Quantize => z + q8,
            ArmKind::Chain => x + w + z + z + q8,
            ArmKind::Fused => x + w + z + q8,
        }
    }

    /// Enqueues one call on buffer set `o` (and `x`, `w`).
    fn enqueue(
        self,
        m: &Module,
        gpu: &Gpu,
        x: &CudaSlice<f32>,
        w: &CudaSlice<f32>,
        o: &mut Out,
        rows: Rows,
    ) -> Result<(), Error> {
        match self {
            ArmKind::RmsNorm => launch::rms_norm(m, gpu, x, w, &mut o.z, rows, EPS),
            ArmKind::Quantize => {
                launch::quantize_q8_1(m, gpu, x, &mut o.qs, &mut o.d, rows.elems())
            }
            ArmKind::Chain => chain(m, gpu, x, w, o, rows),
            ArmKind::Fused => fused(m, gpu, x, w, o, rows),
        }
    }
}

/// Timed results of one shape: per arm kind, the stats of [rust, cu].
pub struct ShapeTiming {
    pub rows: Rows,
    pub calls: usize,
    pub copies: usize,
    pub stats: Vec<(ArmKind, [Stats; 2])>,
}

/// Times the four arms in both builds on `copies` rotating sets of buffers, so that each call
/// reads inputs that are not in L2 (the footprint of the rotation is at least twice L2).
fn time_shape(
    gpu: &Gpu,
    modules: &[Module; 2],
    rows: Rows,
    opts: &Options,
) -> Result<ShapeTiming, Error> {
    let n = rows.elems();
    // A set of buffers is what the fused arm touches plus the chain's intermediate `z`.
    let per_copy = ArmKind::Chain.bytes_moved(rows);
    let copies = (2 * gpu.info().l2_bytes).div_ceil(per_copy).max(2);
    let calls = opts.iters.max(copies).div_ceil(copies) * copies;
    let x: Vec<CudaSlice<f32>> = (0..copies)
        .map(|i| {
            gpu.upload(&rng::vec_f32(
                rng::case_seed(opts.seed, &[3, i as u64, n as u64]),
                n,
                INPUT_SCALE,
            ))
        })
        .collect::<Result<_, _>>()?;
    let w = gpu.upload(&rng::vec_f32(
        rng::case_seed(opts.seed, &[2, rows.ncols as u64]),
        rows.ncols,
        INPUT_SCALE,
    ))?;
    let mut outs: Vec<Out> = (0..copies)
        .map(|_| Out::new(gpu, n))
        .collect::<Result<_, _>>()?;

    let mut arms = Vec::new();
    for arm in ArmKind::ALL {
        for m in modules {
            let graph = gpu.capture(|| {
                for i in 0..calls {
                    arm.enqueue(m, gpu, &x[i % copies], &w, &mut outs[i % copies], rows)?;
                }
                Ok(())
            })?;
            arms.push(Arm { graph, calls });
        }
    }
    let stats = interleaved(gpu, &arms, opts.rounds)?;
    Ok(ShapeTiming {
        rows,
        calls,
        copies,
        stats: ArmKind::ALL
            .iter()
            .enumerate()
            .map(|(k, &arm)| (arm, [stats[2 * k], stats[2 * k + 1]]))
            .collect(),
    })
}

/// The read-only bandwidth ceiling of this device, in GB/s per build (median over rounds).
fn read_ceiling(gpu: &Gpu, modules: &[Module; 2], rounds: usize) -> Result<[f64; 2], Error> {
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

pub fn run(
    gpu: &Gpu,
    opts: &Options,
    jsonl: &mut Jsonl,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let modules = load_builds(gpu)?;
    let mut rows_checked = Vec::new();
    for &rows in &opts.shapes {
        println!("checking {} ...", shape_label(rows));
        for row in check_shape(gpu, &modules, rows, opts.seed)? {
            if !row.pass() {
                println!("  FAIL {} {}", shape_label(row.shape), row.check);
                for f in &row.failures {
                    println!("       {f}");
                }
            }
            jsonl.write(&row.json())?;
            rows_checked.push(row);
        }
    }
    let total = rows_checked.len();
    let failed = rows_checked.iter().filter(|r| !r.pass()).count();
    let mut check_table = Table::new(&["shape", "check", "outputs", "result"]);
    for r in &rows_checked {
        check_table.row(vec![
            shape_label(r.shape),
            r.check.clone(),
            r.outputs.join(", "),
            if r.pass() { "PASS" } else { "FAIL" }.into(),
        ]);
    }

    let mut timings = Vec::new();
    let mut ceiling = None;
    if opts.timing {
        println!("measuring the read-stream ceiling ...");
        let c = read_ceiling(gpu, &modules, opts.rounds)?;
        jsonl.write(
            &json!({"gate": "q8-fuse", "kind": "ceiling", "kernel": "read_stream",
            "rust_gbps": c[0], "cu_gbps": c[1], "ceiling_gbps": c[0].max(c[1])}),
        )?;
        ceiling = Some(c);
        for &rows in &opts.shapes {
            println!("timing {} ...", shape_label(rows));
            let t = time_shape(gpu, &modules, rows, opts)?;
            for (kind, [r, u]) in &t.stats {
                jsonl.write(&json!({
                    "gate": "q8-fuse", "kind": "timing", "shape": shape_label(rows), "arm": kind.label(),
                    "calls_per_graph": t.calls, "copies": t.copies, "bytes_per_call": kind.bytes_moved(rows),
                    "rust_us": r.median_us, "rust_min_us": r.min_us, "rust_max_us": r.max_us,
                    "cu_us": u.median_us, "cu_min_us": u.min_us, "cu_max_us": u.max_us,
                    "rounds": r.rounds, "rust_over_cu": r.median_us / u.median_us,
                }))?;
            }
            timings.push(t);
        }
    }

    println!("\n== checks ==\n{}", check_table.render());
    if let Some(c) = ceiling {
        print_timings(&timings, c);
    }
    println!("{} of {} checks passed", total - failed, total);
    Ok(Outcome {
        failed,
        checks: total,
    })
}

fn print_timings(timings: &[ShapeTiming], ceiling: [f64; 2]) {
    let best = ceiling[0].max(ceiling[1]);
    println!(
        "== read-stream ceiling ==\nrust {:.0} GB/s, cu {:.0} GB/s -> ceiling {:.0} GB/s\n",
        ceiling[0], ceiling[1], best
    );
    let mut t = Table::new(&[
        "shape",
        "arm",
        "rust us",
        "cu us",
        "rust/cu",
        "spread r/c",
        "rust GB/s",
        "% ceiling",
    ]);
    for s in timings {
        for (kind, [r, u]) in &s.stats {
            let gbps = kind.bytes_moved(s.rows) as f64 / (r.median_us * 1e-6) / 1e9;
            t.row(vec![
                shape_label(s.rows),
                kind.label().to_string(),
                format!("{:.2}", r.median_us),
                format!("{:.2}", u.median_us),
                format!("{:.3}", r.median_us / u.median_us),
                format!("{:.0}%/{:.0}%", 100.0 * r.spread(), 100.0 * u.spread()),
                format!("{gbps:.0}"),
                format!("{:.0}%", 100.0 * gbps / best),
            ]);
        }
    }
    println!(
        "== timings (per call, median over rounds; chain = 2 launches) ==\n{}",
        t.render()
    );

    let mut f = Table::new(&[
        "shape",
        "fused/chain rust",
        "fused/chain cu",
        "worst rust/cu",
        "rust/cu <= 1.03",
        "fused faster",
    ]);
    for s in timings {
        let get = |arm: ArmKind| {
            s.stats
                .iter()
                .find(|(kind, _)| *kind == arm)
                .map(|(_, st)| *st)
                .expect("every arm is timed")
        };
        let (fz, ch) = (get(ArmKind::Fused), get(ArmKind::Chain));
        let worst = s
            .stats
            .iter()
            .map(|(_, [r, u])| r.median_us / u.median_us)
            .fold(0.0, f64::max);
        f.row(vec![
            shape_label(s.rows),
            format!("{:.3}", fz[0].median_us / ch[0].median_us),
            format!("{:.3}", fz[1].median_us / ch[1].median_us),
            format!("{worst:.3}"),
            if worst <= 1.03 { "yes" } else { "no" }.into(),
            if fz[0].median_us < ch[0].median_us && fz[1].median_us < ch[1].median_us {
                "yes"
            } else {
                "no"
            }
            .into(),
        ]);
    }
    println!(
        "== targets (benchmarks: reported, never gated) ==\n{}",
        f.render()
    );
}
