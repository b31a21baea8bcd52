//! One gate run from start to verdict, and the GPU tests of a family's edge shapes.

use crate::harness::chart;
use crate::harness::record::Jsonl;
use crate::harness::run::{
    case_label, check_case, read_ceiling, time_case, CaseTiming, CheckRow, Scrub, SizedStream,
};
use crate::harness::timing::Stats;
use crate::harness::{Family, Label, Side, TimingMode, ValueClass};
use crate::report::Table;
use crate::rng;
use crate::sysinfo::clocks_and_temperature;
use anyhow::Context as _;
use clap::{Args as _, FromArgMatches as _};
use host::{Gpu, KernelCrate, Module, FERROCUDA};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::path::PathBuf;

/// What a run does, validated from the command line.
#[derive(Debug, Clone)]
pub struct Plan<F: Family> {
    pub device: usize,
    /// `--arch`: the module to run over the device's own choice.
    pub arch: Option<String>,
    pub shapes: Vec<F::Shape>,
    pub classes: Vec<ValueClass>,
    pub seed: u64,
    pub rounds: usize,
    pub iters: usize,
    pub timing: bool,
    pub plot: Option<PathBuf>,
}

/// What a run found; `failed` decides the exit status.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Outcome {
    pub checks: usize,
    pub failed: usize,
}

/// ferrocuda's kernels, then `extra`'s: the kernel crates a gate's builds are made of.
fn crates(extra: &[KernelCrate]) -> Vec<KernelCrate> {
    [FERROCUDA]
        .into_iter()
        .chain(extra.iter().copied())
        .collect()
}

/// Loads both builds of ferrocuda's kernels and of the `extra` kernel crates for `arch`: the Rust
/// PTX embedded in this binary and the reference .cu via NVRTC.
pub fn load_builds(
    gpu: &Gpu,
    extra: &[KernelCrate],
    arch: &str,
) -> Result<[Module; 2], host::Error> {
    let crates = crates(extra);
    Ok([
        Module::rust_of(gpu, &crates, arch)?,
        Module::cu_of(gpu, &crates, arch)?,
    ])
}

/// The arch of the modules a run loads: `--arch` where given, checked against the device, else
/// the device's own ([`host::module_arch`], which `FERROCUDA_MODULE_ARCH` overrides).
pub fn run_arch(gpu: &Gpu, arch: Option<&str>) -> Result<&'static str, host::Error> {
    match arch {
        Some(a) => {
            let built: Vec<&'static str> = ferrocuda::MODULES.iter().map(|m| m.arch).collect();
            host::arch::check_arch(&built, a, gpu)
        }
        None => host::module_arch(gpu),
    }
}

/// The seed of one case: the run's seed mixed with the case's identity.
fn case_seed(seed: u64, label: &str) -> u64 {
    let parts: Vec<u64> = label.bytes().map(u64::from).collect();
    rng::case_seed(seed, &parts)
}

/// One line from the build manifest: what was built, for which arch, by what, and its hash.
fn build_summary(manifest: &str) -> String {
    let Ok(m) = serde_json::from_str::<serde_json::Value>(manifest) else {
        return format!("unreadable manifest: {manifest}");
    };
    let field = |key: &str| m[key].as_str().unwrap_or("?").to_string();
    let kernels = m["kernels"].as_array().map_or(0, Vec::len);
    format!(
        "{kernels} kernels for {} ({} PTX), {} via {}, ptx sha256 {}",
        field("arch"),
        field("origin"),
        field("rustc"),
        field("toolchain"),
        field("ptx_sha256"),
    )
}

fn print_header(gpu: &Gpu, extra: &[KernelCrate], arch: &str) -> Result<(), host::Error> {
    let i = gpu.info();
    println!(
        "device {}: {} (sm_{}{}), {} SMs, L2 {} MiB, {:.0} GiB, driver CUDA {}.{}",
        i.ordinal,
        i.name,
        i.compute_capability.0,
        i.compute_capability.1,
        i.sm_count,
        i.l2_bytes >> 20,
        i.total_mem as f64 / (1u64 << 30) as f64,
        i.driver_version / 1000,
        i.driver_version % 1000 / 10
    );
    println!("clocks at entry: {}", clocks_and_temperature(i.ordinal));
    println!("module: {arch}");
    for c in crates(extra) {
        println!("rust build: {}", build_summary(c.module(arch)?.manifest));
    }
    println!(
        "cu build: NVRTC {}",
        host::reference::nvrtc_options(arch).join(" ")
    );
    Ok(())
}

#[derive(Serialize)]
struct RunRow<'a> {
    device: &'a str,
    ordinal: usize,
    sm_count: u32,
    l2_bytes: usize,
    driver_version: i32,
    /// The SM target of the modules run (`--arch`, or the device's own).
    arch: &'a str,
    manifest: serde_json::Value,
    /// The manifests of [`Family::KERNEL_CRATES`], where the family has any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    kernel_crates: Vec<serde_json::Value>,
    nvrtc_options: Vec<String>,
    seed: u64,
    rounds: usize,
    iters: usize,
    timing: Option<TimingMode>,
    shapes: Vec<String>,
    classes: Vec<ValueClass>,
    clocks_entry: String,
}

#[derive(Serialize)]
struct CeilingRow {
    kernel: &'static str,
    rust_gbps: f64,
    cu_gbps: f64,
    ceiling_gbps: f64,
}

/// One timed arm of one case; the per-side fields are absent for sides the arm does not run on.
#[derive(Serialize)]
struct TimingRow<S: Serialize> {
    case: String,
    shape: S,
    class: ValueClass,
    arm: String,
    /// The arm's own fields ([`Label::fields`]).
    #[serde(flatten)]
    arm_fields: serde_json::Map<String, serde_json::Value>,
    bytes_per_call: usize,
    copies: usize,
    calls_per_sample: usize,
    rounds: usize,
    #[serde(flatten)]
    sides: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rust_over_cu: Option<f64>,
    pct_ceiling: f64,
}

#[derive(Serialize)]
struct VerdictRow {
    checks: usize,
    failed: usize,
    summary_failures: usize,
    pass: bool,
    clocks_exit: String,
}

fn progress(total: u64) -> ProgressBar {
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    pb
}

/// Runs one gate: checks of every case, then (unless `--no-timing`) the ceiling and the
/// timings, the tables, the family's summary, the chart and the verdict. `Err` means the gate
/// could not run.
pub fn run<F: Family>(fam: &F, plan: &Plan<F>, jsonl: &mut Jsonl) -> anyhow::Result<Outcome> {
    let gpu = Gpu::new(plan.device)?;
    let info = gpu.info().clone();
    for &s in &plan.shapes {
        let need = fam.footprint(s).set_bytes;
        if need > info.total_mem / 2 {
            anyhow::bail!(
                "--shapes: {s} needs {} MiB of device memory per buffer set; {} has {} MiB",
                need >> 20,
                info.name,
                info.total_mem >> 20
            );
        }
    }
    let arch = run_arch(&gpu, plan.arch.as_deref())?;
    fam.run_on(arch);
    print_header(&gpu, F::KERNEL_CRATES, arch)?;
    let mode = plan.timing.then(|| fam.timing());
    if plan.plot.is_some() {
        jsonl.keep();
    }
    jsonl.write(
        "run",
        &RunRow {
            device: &info.name,
            ordinal: info.ordinal,
            sm_count: info.sm_count,
            l2_bytes: info.l2_bytes,
            driver_version: info.driver_version,
            arch,
            manifest: serde_json::from_str(FERROCUDA.module(arch)?.manifest)?,
            kernel_crates: F::KERNEL_CRATES
                .iter()
                .map(|c| Ok(serde_json::from_str(c.module(arch)?.manifest)?))
                .collect::<anyhow::Result<_>>()?,
            nvrtc_options: host::reference::nvrtc_options(arch),
            seed: plan.seed,
            rounds: plan.rounds,
            iters: plan.iters,
            timing: mode,
            shapes: plan.shapes.iter().map(|s| s.to_string()).collect(),
            classes: plan.classes.clone(),
            clocks_entry: clocks_and_temperature(info.ordinal),
        },
    )?;
    let modules = load_builds(&gpu, F::KERNEL_CRATES, arch)?;
    let cases: Vec<(F::Shape, ValueClass)> = plan
        .shapes
        .iter()
        .flat_map(|&s| plan.classes.iter().map(move |&c| (s, c)))
        .collect();
    let steps = cases.len() * if plan.timing { 2 } else { 1 };
    let pb = progress(steps as u64);

    let mut rows: Vec<CheckRow> = Vec::new();
    for &(shape, class) in &cases {
        let label = case_label(&shape, class);
        pb.set_message(format!("checking {label}"));
        let found = check_case(
            fam,
            &gpu,
            &modules,
            shape,
            class,
            case_seed(plan.seed, &label),
        )
        .with_context(|| format!("checking {label}"))?;
        for row in &found {
            if !row.pass {
                pb.suspend(|| {
                    println!("  FAIL {} {}", row.case, row.check);
                    for f in &row.failures {
                        println!("       {f}");
                    }
                });
            }
            jsonl.write("check", row)?;
        }
        rows.extend(found);
        pb.inc(1);
    }
    let failed = rows.iter().filter(|r| !r.pass).count();

    let mut timings: Vec<CaseTiming<F>> = Vec::new();
    let mut ceiling = None;
    if let Some(mode) = mode {
        pb.set_message("measuring the read-stream ceiling");
        let c = read_ceiling(&gpu, &modules, plan.rounds)?;
        jsonl.write(
            "ceiling",
            &CeilingRow {
                kernel: "read_stream",
                rust_gbps: c[0],
                cu_gbps: c[1],
                ceiling_gbps: c[0].max(c[1]),
            },
        )?;
        ceiling = Some(c);
        let mut scrub = match mode {
            TimingMode::Scrub => Some(Scrub::new(&gpu, &modules[0])?),
            TimingMode::Rotate | TimingMode::Warm => None,
        };
        for &(shape, class) in &cases {
            let label = case_label(&shape, class);
            pb.set_message(format!("timing {label}"));
            let t = time_case(
                fam,
                &gpu,
                &modules,
                shape,
                class,
                case_seed(plan.seed, &label),
                plan.rounds,
                plan.iters,
                scrub.as_mut(),
            )
            .with_context(|| format!("timing {label}"))?;
            for row in timing_rows(&t, plan.rounds, c[0].max(c[1])) {
                jsonl.write("timing", &row)?;
            }
            timings.push(t);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();

    println!("\n== checks ==\n{}", check_table(&rows).render());
    let mut summary_failures = 0;
    if let Some(c) = ceiling {
        let best = c[0].max(c[1]);
        println!(
            "== read-stream ceiling ==\nrust {:.0} GB/s, cu {:.0} GB/s -> ceiling {best:.0} GB/s\n",
            c[0], c[1]
        );
        println!(
            "== timings (per call, median over {} rounds{}) ==\n{}",
            plan.rounds,
            match mode {
                Some(TimingMode::Scrub) => ", one call per sample, L2 scrubbed before each",
                Some(TimingMode::Warm) => ", one call per sample, L2 left warm",
                _ => ", rotating buffer sets past twice the L2",
            },
            timing_table(&timings, best).render()
        );
        let mut report = crate::harness::run::Report::new(jsonl, best);
        summary_failures = fam.summarize(&timings, &mut report);
        print!("{}", report.render());
        if let Some(e) = report.write_error() {
            return Err(e).context("writing the summary's JSONL rows");
        }
        if let Some(path) = &plan.plot {
            let fig = chart::Run::from_rows(jsonl.kept().to_vec()).and_then(|run| F::chart(&run));
            fig.map_err(anyhow::Error::msg)
                .and_then(|fig| Ok(chart::write(path, &fig)?))
                .with_context(|| format!("writing the chart {}", path.display()))?;
            println!("chart: {}", path.display());
        }
    }
    let clocks_exit = clocks_and_temperature(info.ordinal);
    println!("clocks at exit: {clocks_exit}");
    let total = rows.len();
    println!("{} of {total} checks passed", total - failed);
    if summary_failures > 0 {
        println!("{summary_failures} summary check(s) failed (see above)");
    }
    jsonl.write(
        "verdict",
        &VerdictRow {
            checks: total,
            failed,
            summary_failures,
            pass: failed + summary_failures == 0,
            clocks_exit,
        },
    )?;
    Ok(Outcome {
        checks: total,
        failed: failed + summary_failures,
    })
}

/// One row per case: how many checks ran and passed, and the names of those that failed (the
/// FAIL lines above and the JSONL rows have every detail).
fn check_table(rows: &[CheckRow]) -> Table {
    let mut t = Table::new(&["case", "checks", "result", "failed"]);
    let mut cases: Vec<&str> = Vec::new();
    for r in rows {
        if !cases.contains(&r.case.as_str()) {
            cases.push(&r.case);
        }
    }
    for case in cases {
        let mine: Vec<&CheckRow> = rows.iter().filter(|r| r.case == case).collect();
        let failed: Vec<&str> = mine
            .iter()
            .filter(|r| !r.pass)
            .map(|r| r.check.as_str())
            .collect();
        t.row(vec![
            case.to_string(),
            format!("{} of {} passed", mine.len() - failed.len(), mine.len()),
            if failed.is_empty() { "PASS" } else { "FAIL" }.into(),
            failed.join("; "),
        ]);
    }
    t
}

fn fmt_us(s: Option<crate::harness::Stats>) -> String {
    s.map_or_else(|| "-".into(), |s| format!("{:.2}", s.median_us))
}

fn timing_table<F: Family>(timings: &[CaseTiming<F>], ceiling: f64) -> Table {
    let mut t = Table::new(&[
        "case",
        "arm",
        "rust us",
        "cu us",
        "rust/cu",
        "spread r/c",
        "GB/s",
        "% ceiling",
    ]);
    for case in timings {
        for arm in &case.arms {
            let (first, ratio, spread) =
                match (arm.on(Side::Rust), arm.on(Side::Cu), arm.on(Side::Peer)) {
                    (Some(r), Some(u), _) => (
                        Side::Rust,
                        format!("{:.3}", r.median_us / u.median_us),
                        format!("{:.0}%/{:.0}%", 100.0 * r.spread(), 100.0 * u.spread()),
                    ),
                    (_, _, Some(p)) => (
                        Side::Peer,
                        "-".into(),
                        format!("{:.0}%", 100.0 * p.spread()),
                    ),
                    _ => continue,
                };
            let gbps = arm.gbps(first).unwrap_or(f64::NAN);
            let (rust_us, cu_us) = match first {
                Side::Peer => (fmt_us(arm.on(Side::Peer)), "(peer)".into()),
                _ => (fmt_us(arm.on(Side::Rust)), fmt_us(arm.on(Side::Cu))),
            };
            t.row(vec![
                case.label(),
                arm.spec.arm.label(),
                rust_us,
                cu_us,
                ratio,
                spread,
                format!("{gbps:.0}"),
                format!("{:.0}%", 100.0 * gbps / ceiling),
            ]);
        }
        if let Some(st) = &case.stream {
            t.row(vec![
                case.label(),
                stream_label(st),
                format!("{:.2}", st.stats.median_us),
                "-".into(),
                "-".into(),
                format!("{:.0}%", 100.0 * st.stats.spread()),
                format!("{:.0}", st.gbps()),
                format!("{:.0}%", 100.0 * st.gbps() / ceiling),
            ]);
        }
    }
    t
}

/// The label of a case's sized read stream in tables and JSONL.
fn stream_label(st: &SizedStream) -> String {
    if st.bytes < 1_000_000 {
        format!("read stream, {:.1} KB", st.bytes as f64 / 1e3)
    } else {
        format!("read stream, {:.1} MB", st.bytes as f64 / 1e6)
    }
}

fn timing_rows<F: Family>(
    t: &CaseTiming<F>,
    rounds: usize,
    ceiling: f64,
) -> Vec<TimingRow<F::Shape>> {
    let row = |arm, arm_fields, bytes_per_call, sides, rust_over_cu, gbps: f64| TimingRow {
        case: t.label(),
        shape: t.shape,
        class: t.class,
        arm,
        arm_fields,
        bytes_per_call,
        copies: t.copies,
        calls_per_sample: t.calls,
        rounds,
        sides,
        rust_over_cu,
        pct_ceiling: 100.0 * gbps / ceiling,
    };
    let stream = t.stream.map(|st| {
        let mut sides = serde_json::Map::new();
        insert_side(&mut sides, Side::Rust, &st.stats, Some(st.gbps()));
        let none = serde_json::Map::new();
        row(stream_label(&st), none, st.bytes, sides, None, st.gbps())
    });
    t.arms
        .iter()
        .map(|arm| {
            let mut sides = serde_json::Map::new();
            for (side, st) in &arm.stats {
                insert_side(&mut sides, *side, st, arm.gbps(*side));
            }
            let main = if arm.on(Side::Rust).is_some() {
                Side::Rust
            } else {
                Side::Peer
            };
            row(
                arm.spec.arm.label(),
                arm.spec.arm.fields(),
                arm.spec.bytes,
                sides,
                arm.on(Side::Rust)
                    .zip(arm.on(Side::Cu))
                    .map(|(r, u)| r.median_us / u.median_us),
                arm.gbps(main).unwrap_or(f64::NAN),
            )
        })
        .chain(stream)
        .collect()
}

/// One side's median, extremes and GB/s as a JSONL row's `{side}_us`, `{side}_min_us`,
/// `{side}_max_us` and `{side}_gbps` fields.
fn insert_side(
    sides: &mut serde_json::Map<String, serde_json::Value>,
    side: Side,
    st: &Stats,
    gbps: Option<f64>,
) {
    let p = side.label();
    sides.insert(format!("{p}_us"), st.median_us.into());
    sides.insert(format!("{p}_min_us"), st.min_us.into());
    sides.insert(format!("{p}_max_us"), st.max_us.into());
    if let Some(g) = gbps {
        sides.insert(format!("{p}_gbps"), g.into());
    }
}

/// The family with its default options, as a run without options makes it.
pub fn default_family<F: Family>() -> Option<F> {
    let matches = F::Args::augment_args(clap::Command::new(F::NAME))
        .try_get_matches_from([F::NAME])
        .ok()?;
    F::new(&F::Args::from_arg_matches(&matches).ok()?).ok()
}
