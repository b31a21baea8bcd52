//! `gates`: run a gate and read its table. `gates --help` lists the gates, `gates <gate> --help`
//! explains what a gate checks.

use clap::{Args, Parser, Subcommand};
use gates::q8_fuse::{self, Options};
use gates::report::Jsonl;
use gates::sysinfo::clocks_and_temperature;
use host::norm_q8::Rows;
use host::{Error, Gpu};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "gates",
    version,
    about = "Rust GPU kernels against their reference CUDA C++: bit for bit, and side by side in time."
)]
struct Cli {
    #[command(subcommand)]
    gate: Gate,
}

#[derive(Subcommand)]
enum Gate {
    /// rms_norm + quantize_q8_1 (the chain) against the fused rms_norm_zq8_f32, Rust against .cu.
    #[command(long_about = Q8_FUSE_HELP)]
    Q8Fuse(Q8FuseArgs),
}

const Q8_FUSE_HELP: &str = "\
rms_norm then quantize_q8_1 (the chain) against the fused rms_norm_zq8_f32, and every kernel's
Rust build against its reference CUDA C++ build (NVRTC, default options, printed in the header).

Per shape (default 1x4096, 1x8192, 1x1536 and the bandwidth-bound 4096x4096), on seeded inputs
in [-4, 4) that are never zero:
  1 fused == chain   z, qs and d byte-identical, in each build
  2 rust == cu       each kernel's outputs byte-identical between the two builds
  3 oracle           z within 4e-6 relative of a CPU f64 RMS norm; qs and d exactly the q8_1
                     definition (d = amax/127, q = round-half-away(v/d)) applied to the
                     GPU's own input
  4 all written      outputs are poisoned (NaN, -128) before every launch; none may remain
Any failure prints the first mismatching index and both values, and the exit status is 1.

Timings (skipped with --no-timing): per-call device time from CUDA events around graphs of
back-to-back calls rotating through enough buffer copies to defeat L2, arms interleaved in
each round, median over rounds with the spread (max-min)/median. Reported: Rust vs .cu per
kernel, fused vs chain, and GB/s (bytes each call must move) against a read-only stream
ceiling measured in the same run. Timings are reported, never gated.

Exit status: 0 all checks passed, 1 a check failed, 2 the gate could not run.";

#[derive(Args)]
struct Q8FuseArgs {
    /// Timed rounds per arm (median and spread are over these)
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// Calls per timed graph, at least (raised until the buffer rotation exceeds twice L2)
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
    /// CUDA device ordinal
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Seed of the input generators (each shape derives its own)
    #[arg(long, default_value_t = 0x5EED_F00D)]
    seed: u64,
    /// Shapes as NROWSxNCOLS, comma-separated (ncols a multiple of 32)
    #[arg(long, value_delimiter = ',', value_parser = parse_rows)]
    shapes: Option<Vec<Rows>>,
    /// Run the checks only (e.g. under compute-sanitizer)
    #[arg(long)]
    no_timing: bool,
    /// Append one JSON object per check, timing and ceiling to this file
    #[arg(long, value_name = "PATH")]
    jsonl: Option<PathBuf>,
}

fn parse_rows(s: &str) -> Result<Rows, String> {
    let (r, c) = s
        .split_once('x')
        .ok_or_else(|| format!("`{s}` is not NROWSxNCOLS"))?;
    let nrows = r
        .trim()
        .parse()
        .map_err(|_| format!("bad row count in `{s}`"))?;
    let ncols = c
        .trim()
        .parse()
        .map_err(|_| format!("bad column count in `{s}`"))?;
    let rows = Rows { nrows, ncols };
    host::norm_q8::rows_config("q8-fuse", rows).map_err(|e| e.why)?;
    Ok(rows)
}

fn header(gpu: &Gpu) {
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
    println!(
        "rust build: {}",
        ferrocuda::MANIFEST
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "cu build: NVRTC {}",
        host::reference::nvrtc_options(ferrocuda::ARCH).join(" ")
    );
}

fn q8_fuse(args: Q8FuseArgs) -> Result<bool, Box<dyn std::error::Error>> {
    let gpu = Gpu::new(args.device)?;
    header(&gpu);
    let mut jsonl = Jsonl::open(args.jsonl.as_deref())
        .map_err(|e| format!("cannot open the JSONL file: {e}"))?;
    let opts = Options {
        shapes: args
            .shapes
            .unwrap_or_else(|| q8_fuse::DEFAULT_SHAPES.to_vec()),
        seed: args.seed,
        iters: args.iters as usize,
        rounds: args.rounds as usize,
        timing: !args.no_timing,
    };
    let i = gpu.info();
    jsonl.write(&serde_json::json!({
        "gate": "q8-fuse", "kind": "run", "device": i.name, "ordinal": i.ordinal,
        "sm_count": i.sm_count, "l2_bytes": i.l2_bytes, "driver_version": i.driver_version,
        "manifest": serde_json::from_str::<serde_json::Value>(ferrocuda::MANIFEST)?,
        "nvrtc_options": host::reference::nvrtc_options(ferrocuda::ARCH),
        "seed": opts.seed, "rounds": opts.rounds, "iters": opts.iters,
        "clocks_entry": clocks_and_temperature(i.ordinal),
    }))?;
    let outcome = q8_fuse::run(&gpu, &opts, &mut jsonl)?;
    let exit_clocks = clocks_and_temperature(i.ordinal);
    println!("clocks at exit: {exit_clocks}");
    jsonl.write(&serde_json::json!({
        "gate": "q8-fuse", "kind": "verdict", "checks": outcome.checks,
        "failed": outcome.failed, "pass": outcome.failed == 0, "clocks_exit": exit_clocks,
    }))?;
    Ok(outcome.failed == 0)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.gate {
        Gate::Q8Fuse(args) => q8_fuse(args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            let no_gpu = matches!(
                e.downcast_ref::<Error>(),
                Some(Error::NoDriver | Error::NoDevice { .. })
            );
            let prefix = if no_gpu { "cannot run: " } else { "error: " };
            eprintln!("gates: {prefix}{e}");
            ExitCode::from(2)
        }
    }
}
