//! `gates`: run a gate and read its table. `gates --help` lists the gates, `gates <gate> --help`
//! explains what a gate checks.

use clap::{Args, Parser, Subcommand};
use gates::ptx::{self, builds::Build, show::Comparison, show::Mode, show::Tools};
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
    /// Kernel-by-kernel diff of two builds' PTX (normalised), instruction mix, ptxas resources
    /// and optionally SASS; no GPU needed.
    #[command(long_about = PTX_DIFF_HELP)]
    PtxDiff(PtxDiffArgs),
    /// The current build's kernels beside their reference .cu build: instruction mix and ptxas
    /// resources; no GPU needed.
    #[command(long_about = PTX_REPORT_HELP)]
    PtxReport(PtxReportArgs),
    /// Save the current build's PTX and manifest as a named snapshot for later ptx-diffs.
    #[command(long_about = PTX_SNAPSHOT_HELP)]
    PtxSnapshot(PtxSnapshotArgs),
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

const PTX_DIFF_HELP: &str = "\
Compares two builds of the kernels, kernel by kernel, without a GPU. A and B are each a PTX
file, a build folder holding kernels.ptx (and manifest.json), such as target/ptx/ which every
build writes, or the name of a snapshot saved by `gates ptx-snapshot` (a path wins over a
snapshot of the same name). B defaults to the current build (the PTX this binary embeds).
--cu compares the current build (A) with the reference .cu compiled by NVRTC (B).

Kernels are matched by name and compared after normalisation: comments, blank lines and
whitespace runs dropped; registers renumbered per class in order of first use; `.reg` counts,
label names and parameter symbols erased. Output:
  header          each build: what it is, its manifest (arch, origin, rustc), kernel count
  instruction mix per kernel: status (added / removed / changed / unchanged; an added and a
                  removed kernel with the same normalised PTX are marked as a rename), then
                  static counts: all instructions, ld.global by bytes per load, st.global,
                  ld.shared, st.shared, shfl, dp4a, fma, cvt, bra, bar. A cell reads `x` when
                  both builds agree and `x→y` (A→B) when they do not
  ptxas           per kernel, each build assembled for its own arch: registers, barriers,
                  static shared memory, stack frame and spill bytes (needs ptxas: $PTXAS, else
                  PATH; without it this table is replaced by a note)
  --sass          also assembles both builds, disassembles them with cuobjdump ($CUOBJDUMP,
                  else PATH; it needs nvdisasm beside it) and compares the normalised SASS
                  (addresses and encodings dropped, branch targets as labels)
  diffs           a unified diff of the normalised PTX (and SASS) of every changed kernel
  summary         counts per status

--json prints one JSON object instead: the two builds, tool versions, and per kernel its
status, rename twin, mix, ptxas resources, SASS instruction count and diffs.

Exit status: 0 no kernel changed, 1 a kernel was added, removed or changed (in PTX or, with
--sass, in SASS), 2 error (unreadable or malformed input, tool failure).";

const PTX_REPORT_HELP: &str = "\
The current build's kernels (the PTX this binary embeds) beside the reference .cu build of the
same kernels (NVRTC, default options), without a GPU: the instruction-mix and ptxas tables of
`gates ptx-diff --cu`, with cells reading `x` when both agree and `rust/cu` when they do not.
The .cu side needs libnvrtc (pip wheel nvidia-cuda-nvrtc, its lib folder on
LD_LIBRARY_PATH); without ptxas the resource table is replaced by a note. --json prints the
same data as ptx-diff's JSON, with the sides named `rust` and `cu`.

Exit status: 0 report printed, 2 error (no libnvrtc, malformed PTX, tool failure).";

const PTX_SNAPSHOT_HELP: &str = "\
Saves the current build (the PTX this binary embeds and its manifest) under
<target>/ptx-snapshots/NAME/, where <target> is CARGO_TARGET_DIR or else the folder two levels
above this binary (target/ under `cargo run`). `gates ptx-diff NAME` then compares that
snapshot with a later build.

Exit status: 0 saved, 2 error (bad name, snapshot exists without --replace, I/O).";

#[derive(Args)]
struct PtxDiffArgs {
    /// Build A: PTX file, build folder (kernels.ptx + manifest.json) or snapshot name
    #[arg(required_unless_present = "cu", conflicts_with = "cu")]
    a: Option<String>,
    /// Build B, the same kinds as A [default: the current build]
    #[arg(conflicts_with = "cu")]
    b: Option<String>,
    /// Compare the current Rust build (A) with the reference .cu built by NVRTC (B)
    #[arg(long)]
    cu: bool,
    /// Also compare the SASS of both builds (needs ptxas and cuobjdump)
    #[arg(long)]
    sass: bool,
    /// Print one JSON object instead of tables and diffs
    #[arg(long)]
    json: bool,
    /// Tables and summary only, no unified diffs
    #[arg(long)]
    no_diff: bool,
    /// Unchanged lines shown around each change in the diffs
    #[arg(long, default_value_t = 3)]
    context: usize,
}

#[derive(Args)]
struct PtxReportArgs {
    /// Print one JSON object instead of tables
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct PtxSnapshotArgs {
    /// Snapshot name (letters, digits, `.`, `_`, `-`)
    name: String,
    /// Overwrite an existing snapshot of that name
    #[arg(long)]
    replace: bool,
}

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
    println!("rust build: {}", build_summary(ferrocuda::MANIFEST));
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

/// ptxas when found; with `sass`, ptxas and cuobjdump or an error naming what to install.
fn tools(sass: bool) -> Result<Tools, ptx::Error> {
    let ptxas = ptx::ptxas::find();
    if !sass {
        return Ok(Tools {
            ptxas,
            cuobjdump: None,
        });
    }
    let ptxas = ptxas
        .ok_or_else(|| ptx::Error::new(format!("--sass needs ptxas: {}", ptx::ptxas::INSTALL)))?;
    let cuobjdump = ptx::sass::find().ok_or_else(|| {
        ptx::Error::new(format!("--sass needs cuobjdump: {}", ptx::sass::INSTALL))
    })?;
    Ok(Tools {
        ptxas: Some(ptxas),
        cuobjdump: Some(cuobjdump),
    })
}

fn print(comparison: &Comparison, json: bool, diffs: bool) {
    if json {
        println!("{:#}", comparison.json());
    } else {
        print!("{}", comparison.text(diffs));
    }
}

fn ptx_diff(args: PtxDiffArgs) -> Result<bool, Box<dyn std::error::Error>> {
    let tools = tools(args.sass)?;
    let (a, b) = if args.cu {
        (Build::current(), Build::reference(ferrocuda::ARCH)?)
    } else {
        let a = Build::open(args.a.as_deref().expect("clap requires A without --cu"))?;
        let b = match args.b.as_deref() {
            Some(spec) => Build::open(spec)?,
            None => Build::current(),
        };
        (a, b)
    };
    let comparison = Comparison::new(Mode::Diff, a, b, tools, args.context)?;
    print(&comparison, args.json, !args.no_diff);
    Ok(!comparison.changed())
}

fn ptx_report(args: PtxReportArgs) -> Result<bool, Box<dyn std::error::Error>> {
    let tools = tools(false)?;
    let cu = Build::reference(ferrocuda::ARCH)?;
    let comparison = Comparison::new(Mode::Report, Build::current(), cu, tools, 0)?;
    print(&comparison, args.json, false);
    Ok(true)
}

fn ptx_snapshot(args: PtxSnapshotArgs) -> Result<bool, Box<dyn std::error::Error>> {
    let dir = Build::save_snapshot(&args.name, args.replace)?;
    println!(
        "saved the current build as snapshot `{}` in {}",
        args.name,
        dir.display()
    );
    Ok(true)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.gate {
        Gate::Q8Fuse(args) => q8_fuse(args),
        Gate::PtxDiff(args) => ptx_diff(args),
        Gate::PtxReport(args) => ptx_report(args),
        Gate::PtxSnapshot(args) => ptx_snapshot(args),
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
