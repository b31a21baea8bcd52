//! `gates`: run a gate and read its table. `gates --help` lists the gates, `gates <gate> --help`
//! explains what a gate checks.

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use gates::families;
use gates::harness::cli::{self, unsigned};
use gates::ptx::{builds, revs, show::Comparison, show::Mode, show::Tools};
use std::process::ExitCode;

/// The PTX tools and `plot`; the gates themselves are added from `gates::families::ALL`.
#[derive(Parser)]
#[command(
    name = "gates",
    version,
    about = "Rust GPU kernels against their reference CUDA C++: bit for bit, and side by side in time."
)]
struct Cli {
    #[command(subcommand)]
    tool: Tool,
}

// The variants name the subcommands (`ptx-diff`, ...), so they share the prefix users type.
#[allow(clippy::enum_variant_names)]
#[derive(Subcommand)]
enum Tool {
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
    /// Chart a gate run from its JSONL file, as the gate's --plot does; no GPU needed.
    #[command(long_about = PLOT_HELP)]
    Plot(PlotArgs),
}

const PTX_DIFF_HELP: &str = "\
Compares two builds of the kernels, kernel by kernel, without a GPU. A and B are each a PTX
file, a build folder holding kernels.ptx (and manifest.json), such as target/ptx/<profile>/
which every build writes (target/ptx/release/ for --release), or the name of a snapshot saved
by `gates ptx-snapshot` (a path wins over a snapshot of the same name). B defaults to the
current build (the PTX this binary embeds). --rev A..B builds git revisions A and B of the
project found at or above the current directory (--rev A: A against the current build), each
checked out in a scratch worktree and built as the project builds (cargo build --release -p
ferrocuda), and keeps each build by commit under target/ptx-revs/ for the next time.

--cu compares the current build (rust) with the reference .cu compiled by NVRTC (cu); given A,
A is the Rust side, and --reference FILE.cu... compiles those files instead of reference/ (for
another kernel crate: its build folder as A, its .cu files), for this build's arch. Two
compilers never emit the same PTX, so --cu decides on the numerics instead: per kernel, the
float-rounding instruction kinds (add, sub, mul, fma, div, rcp, sqrt and the special functions
with their rounding, .ftz and .approx; conversions with their rounding modes; mma types; and a
contractible mul whose result a contractible add reads, which ptxas may fuse into an fma; and
an add that reads a rounded product, which a build that fused the pair lacks) that
one build has and the other lacks. Each such kind is explained by an entry of the allow-list
(ptx_tools::numerics::ALLOWED, with the reason) or reported UNEXPLAINED. The tables come
first, the PTX diffs only with --full.

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
                  static shared memory, stack frame and spill bytes (needs ptxas: $PTXAS,
                  else PATH, else the pip wheel nvidia-cuda-nvcc found through python3; without
                  it this table is replaced by a note)
  --sass          also assembles both builds, disassembles them with cuobjdump ($CUOBJDUMP,
                  else PATH, else the pip wheel nvidia-cuda-cuobjdump found through python3; it
                  needs nvdisasm beside it) and compares the normalised SASS (addresses and
                  encodings dropped, branch targets as labels)
  numerics        (--cu) the kinds a kernel has in one build only, each with why or UNEXPLAINED
  diffs           a unified diff of the normalised PTX (and SASS) of every changed kernel (with
                  --cu, only given --full)
  summary         counts per status (with --cu: kinds in one build only, explained, unexplained)

--json prints one JSON object instead: the two builds, tool versions, and per kernel its
status, rename twin, mix, ptxas resources, SASS instruction count and diffs.

Exit status: 0 no kernel changed, 1 a kernel was added, removed or changed (in PTX or, with
--sass, in SASS); with --cu, 0 when every numerics kind in one build only is explained and 1
when one is not; 2 error (unreadable or malformed input, tool failure).";

const PTX_REPORT_HELP: &str = "\
The current build's kernels (the PTX this binary embeds) beside the reference .cu build of the
same kernels (NVRTC, default options), without a GPU: the instruction-mix and ptxas tables of
`gates ptx-diff --cu`, with cells reading `x` when both agree and `rust/cu` when they do not.
The .cu side needs libnvrtc 13, from the dynamic loader's search (LD_LIBRARY_PATH, a CUDA
toolkit), else the pip wheel nvidia-cuda-nvrtc, found through python3 with nothing to export
(README, Prerequisites). ptxas is found as for ptx-diff; without it the resource table is
replaced by a note. --json prints the same data as ptx-diff's JSON, with the sides named `rust`
and `cu`.

Exit status: 0 report printed, 2 error (no libnvrtc, malformed PTX, tool failure).";

const PTX_SNAPSHOT_HELP: &str = "\
Saves the current build (the PTX this binary embeds and its manifest) as NAME/ under the
snapshot folder: --dir if given, else $FERROCUDA_SNAPSHOT_DIR, else
$CARGO_TARGET_DIR/ptx-snapshots, else target/ptx-snapshots of the ferrocuda project found at or
above the current directory. Outside a project and without --dir or those variables it refuses,
so that snapshots never land beside a copied binary. `gates ptx-diff NAME` then compares that
snapshot (looked up the same way, without --dir) with a later build. --from BUILD_DIR saves
that build folder instead (kernels.ptx and manifest.json, as a kernel crate's build script
writes them to <target>/<ptx dir>/<profile>/), so that another kernel crate's PTX is
snapshotted and diffed the same way.

Exit status: 0 saved, 2 error (bad name, snapshot exists without --replace, I/O).";

const PLOT_HELP: &str = "\
Draws the chart of a gate run from the JSONL file the run wrote (--jsonl), the same chart the
gate's --plot draws from the same rows, without a GPU. The file names its gate in every row (by
its name, or by an alias for a run under the gate's earlier name), and the chart is that gate's:
norm-q8, fused against chain per shape and value class; gemv, each arm side by side at every m
per shape, against the shape's read stream; mla, time against kv depth per kernel with a line
per t_q, then every split. A file that several runs appended to (--jsonl appends) is charted
from its last run. Only timing rows are charted, so a run with --no-timing has nothing to draw.

Exit status: 0 chart written, 2 error (an unreadable or malformed file, no timing rows, a
gate this build does not have, an output that is not an .svg file in an existing folder).";

#[derive(Args)]
struct PlotArgs {
    /// The JSONL file of a gate run
    #[arg(long, value_name = "FILE.jsonl")]
    from: std::path::PathBuf,
    /// The chart to write (SVG)
    #[arg(long, value_name = "FILE.svg")]
    out: std::path::PathBuf,
}

#[derive(Args)]
struct PtxDiffArgs {
    /// Build A: PTX file, build folder (kernels.ptx + manifest.json) or snapshot name; the
    /// Rust side with --cu [default there: the current build]
    #[arg(required_unless_present_any = ["cu", "rev"], conflicts_with = "rev")]
    a: Option<String>,
    /// Build B, the same kinds as A [default: the current build]
    #[arg(conflicts_with_all = ["cu", "rev"])]
    b: Option<String>,
    /// Git revisions instead of builds: `A..B`, or `A` against the current build
    #[arg(long, value_name = "A..B", conflicts_with = "cu")]
    rev: Option<String>,
    /// Compare the current Rust build (A) with the reference .cu built by NVRTC (B)
    #[arg(long)]
    cu: bool,
    /// With --cu, these .cu files (another kernel crate's reference) instead of reference/
    #[arg(long, value_name = "FILE.cu", num_args = 1.., requires = "cu")]
    reference: Vec<std::path::PathBuf>,
    /// Also compare the SASS of both builds (needs ptxas and cuobjdump)
    #[arg(long)]
    sass: bool,
    /// Print one JSON object instead of tables and diffs
    #[arg(long)]
    json: bool,
    /// Tables and summary only, no unified diffs
    #[arg(long, conflicts_with = "cu")]
    no_diff: bool,
    /// With --cu, also the unified diffs of every kernel (two compilers' PTX always differs)
    #[arg(long, requires = "cu")]
    full: bool,
    /// Unchanged lines shown around each change in the diffs
    #[arg(long, default_value_t = 3, allow_negative_numbers = true,
          value_parser = unsigned::<usize>)]
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
    /// The folder to save it under [default: see above]
    #[arg(long, value_name = "DIR")]
    dir: Option<std::path::PathBuf>,
    /// Save this build folder (kernels.ptx + manifest.json) instead of the current build
    #[arg(long, value_name = "BUILD_DIR")]
    from: Option<std::path::PathBuf>,
}

/// ptxas when found; with `sass`, ptxas and cuobjdump or an error naming what to install.
fn tools(sass: bool) -> Result<Tools, ptx_tools::Error> {
    let ptxas = ptx_tools::ptxas::find();
    if !sass {
        return Ok(Tools {
            ptxas,
            cuobjdump: None,
        });
    }
    let missing = |what: &str, install: &str| {
        ptx_tools::Error::new(format!("--sass needs {what}: {install}"))
    };
    let ptxas = ptxas.ok_or_else(|| missing("ptxas", ptx_tools::ptxas::INSTALL))?;
    let cuobjdump =
        ptx_tools::sass::find().ok_or_else(|| missing("cuobjdump", ptx_tools::sass::INSTALL))?;
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

fn ptx_diff(args: PtxDiffArgs) -> anyhow::Result<bool> {
    let tools = tools(args.sass)?;
    let (a, b) = if args.cu {
        let rust = match args.a.as_deref() {
            Some(spec) => builds::open(spec)?,
            None => builds::current(),
        };
        let cu = match args.reference.as_slice() {
            [] => builds::reference(ferrocuda::ARCH)?,
            files => builds::reference_files(files, ferrocuda::ARCH)?,
        };
        (rust, cu)
    } else if let Some(spec) = &args.rev {
        let (a, b) = revs::parse_spec(spec)?;
        let a = revs::build(&a)?;
        let b = match b {
            Some(b) => revs::build(&b)?,
            None => builds::current(),
        };
        (a, b)
    } else {
        let a = builds::open(args.a.as_deref().expect("clap requires A without --cu"))?;
        let b = match args.b.as_deref() {
            Some(spec) => builds::open(spec)?,
            None => builds::current(),
        };
        (a, b)
    };
    let mode = if args.cu { Mode::Cu } else { Mode::Diff };
    let comparison = Comparison::new(mode, a, b, tools, args.context)?;
    if args.cu {
        print(&comparison, args.json, args.full);
        Ok(!comparison.numerics_unexplained())
    } else {
        print(&comparison, args.json, !args.no_diff);
        Ok(!comparison.changed())
    }
}

fn ptx_report(args: PtxReportArgs) -> anyhow::Result<bool> {
    let tools = tools(false)?;
    let cu = builds::reference(ferrocuda::ARCH)?;
    let comparison = Comparison::new(Mode::Report, builds::current(), cu, tools, 0)?;
    print(&comparison, args.json, false);
    Ok(true)
}

fn ptx_snapshot(args: PtxSnapshotArgs) -> anyhow::Result<bool> {
    let dir = builds::save_snapshot(
        &args.name,
        args.replace,
        args.dir.as_deref(),
        args.from.as_deref(),
    )?;
    println!(
        "saved the current build as snapshot `{}` in {}",
        args.name,
        dir.display()
    );
    Ok(true)
}

fn plot(args: PlotArgs) -> anyhow::Result<bool> {
    gates::harness::chart::plot_file(families::ALL, &args.from, &args.out)?;
    println!("chart: {}", args.out.display());
    Ok(true)
}

fn main() -> ExitCode {
    let cmd = families::ALL
        .iter()
        .fold(Cli::command(), |cmd, gate| cmd.subcommand(gate.command()));
    let matches = cli::matches(cmd);
    let (name, sub) = matches.subcommand().expect("clap requires a subcommand");
    let result = match families::ALL.iter().find(|g| g.name() == name) {
        Some(gate) => gate.run(sub).map(|outcome| outcome.failed == 0),
        None => match Cli::from_arg_matches(&matches).map(|cli| cli.tool) {
            Ok(Tool::PtxDiff(args)) => ptx_diff(args),
            Ok(Tool::PtxReport(args)) => ptx_report(args),
            Ok(Tool::PtxSnapshot(args)) => ptx_snapshot(args),
            Ok(Tool::Plot(args)) => plot(args),
            Err(e) => e.exit(),
        },
    };
    cli::exit_code("gates", result)
}
