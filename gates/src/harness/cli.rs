//! The command line every gate shares: the common options, their validation before the GPU is
//! touched, and the object-safe [`Gate`] through which `main` lists and runs the families
//! without knowing them.

use crate::harness::chart::{Figure, Run};
use crate::harness::gate::{self, Outcome, Plan};
use crate::harness::gpu_test::{self, TestResult};
use crate::harness::record::Jsonl;
use crate::harness::{Family, ValueClass};
use anyhow::bail;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgMatches, Args, Command, FromArgMatches, ValueEnum};
use std::marker::PhantomData;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// Options every gate takes. Each number, and each list of them, takes a leading `-` as a value,
// so that a negative one is refused as such rather than read by clap as an unknown flag.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// CUDA device ordinal
    #[arg(long, default_value_t = 0, allow_negative_numbers = true,
          value_parser = unsigned::<usize>)]
    pub device: usize,
    /// Timed rounds per arm, 1 to 1000 (median and spread are over these) [default: the gate's]
    #[arg(long, allow_negative_numbers = true,
          value_parser = |s: &str| whole::<u64>(s, 1..=MAX_ROUNDS))]
    pub rounds: Option<u64>,
    /// Calls per timed graph, at least, 1 to 100000 (raised until the rotation of buffer sets
    /// exceeds twice the L2); gates that scrub the L2 before every launch time one call per sample
    #[arg(long, default_value_t = 200, allow_negative_numbers = true,
          value_parser = |s: &str| whole::<u64>(s, 1..=MAX_ITERS))]
    pub iters: u64,
    /// Seed of the input generators (each case derives its own)
    #[arg(long, default_value_t = 0x5EED_F00D, allow_negative_numbers = true,
          value_parser = unsigned::<u64>)]
    pub seed: u64,
    /// Shapes, comma-separated (the gate's help gives the syntax and the named sheets)
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub shapes: Option<Vec<String>>,
    /// Value classes of the inputs, comma-separated [default: every class the gate has]
    #[arg(long, value_delimiter = ',', value_enum)]
    pub classes: Option<Vec<ValueClass>>,
    /// Run the checks only (e.g. under compute-sanitizer)
    #[arg(long)]
    pub no_timing: bool,
    /// Append one JSON object per run, check, timing and summary row to this file
    #[arg(long, value_name = "PATH")]
    pub jsonl: Option<PathBuf>,
    /// The SM target of the Rust module to run, and of the .cu build [default: the highest
    /// built not above the device's compute capability, or FERROCUDA_MODULE_ARCH]
    ///
    /// An older target's module runs on a newer GPU (`--arch sm_80` on an H200), giving the same
    /// bits as the device's own
    #[arg(long, value_name = "sm_XX")]
    pub arch: Option<String>,
    /// Write the gate's chart of this run's timings here (SVG) when the run ends
    ///
    /// Refused with --no-timing; `gates plot` draws it again from the --jsonl file
    #[arg(long, value_name = "PATH.svg")]
    pub plot: Option<PathBuf>,
}

/// The most `--rounds` a gate takes: far past where the median settles, short of a run that
/// looks hung.
pub const MAX_ROUNDS: u64 = 1000;
/// The most `--iters`: a graph of more calls only takes longer to capture.
pub const MAX_ITERS: u64 = 100_000;

/// A whole-number option in `range` (clap prefixes the option and the value; `main` prints it as
/// one line). A negative number is called negative, not an unexpected digit.
pub fn whole<T: TryFrom<u64>>(s: &str, range: RangeInclusive<u64>) -> Result<T, String> {
    let takes = match *range.end() {
        u64::MAX => format!("it takes {} or more", range.start()),
        end => format!("it takes {} to {end}", range.start()),
    };
    let s = s.trim();
    let n = match s.parse::<u64>() {
        Ok(n) => n,
        Err(_) if s.starts_with('-') && s[1..].parse::<u64>().is_ok() => {
            return Err(format!("negative; {takes}"))
        }
        Err(_) => return Err(format!("not a whole number; {takes}")),
    };
    if !range.contains(&n) {
        return Err(format!("out of range; {takes}"));
    }
    T::try_from(n).map_err(|_| format!("too large for this machine; {takes}"))
}

/// A whole-number option with no bound but 0.
pub fn unsigned<T: TryFrom<u64>>(s: &str) -> Result<T, String> {
    whole(s, 0..=u64::MAX)
}

/// A gate as `main` sees it: a subcommand that runs, and a family the GPU tests iterate.
pub trait Gate: Sync {
    /// Its subcommand and the `gate` field of its JSONL rows.
    fn name(&self) -> &'static str;
    /// Its earlier names, which still run it and whose JSONL rows `gates plot` still charts.
    fn aliases(&self) -> &'static [&'static str];
    /// Whether `name` is its name or one of its aliases.
    fn answers_to(&self, name: &str) -> bool {
        self.name() == name || self.aliases().contains(&name)
    }
    fn command(&self) -> Command;
    /// Runs the gate from its parsed options. `Err` means it could not run (exit status 2).
    fn run(&self, matches: &ArgMatches) -> anyhow::Result<Outcome>;
    /// The family's edge shapes through the checks, and its refusals, on a real device.
    fn gpu_tests(&self, gpu: &host::Gpu, modules: &[host::Module; 2]) -> Vec<TestResult>;
    /// The kernel crates besides ferrocuda's that `modules` must hold for
    /// [`Gate::gpu_tests`] ([`Family::KERNEL_CRATES`]).
    fn kernel_crates(&self) -> &'static [host::KernelCrate];
    /// The family's chart of a run's rows.
    fn chart(&self, run: &Run) -> Result<Figure, String>;
    /// How many results [`Gate::gpu_tests`] gives, so that a run without a GPU can count what
    /// it skipped.
    fn gpu_test_count(&self) -> usize;
}

/// The [`Gate`] of a [`Family`], named [`Family::NAME`].
pub struct FamilyGate<F> {
    aliases: &'static [&'static str],
    family: PhantomData<fn() -> F>,
}

impl<F: Family> FamilyGate<F> {
    pub const fn new() -> Self {
        FamilyGate {
            aliases: &[],
            family: PhantomData,
        }
    }

    /// The gate's earlier names (see [`Gate::aliases`]).
    pub const fn with_aliases(self, aliases: &'static [&'static str]) -> Self {
        FamilyGate { aliases, ..self }
    }
}

impl<F: Family> Default for FamilyGate<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: Family> Gate for FamilyGate<F> {
    fn name(&self) -> &'static str {
        F::NAME
    }

    fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }

    fn command(&self) -> Command {
        let mut help = F::help();
        if !self.aliases.is_empty() {
            help += &format!(
                "\n\nNamed {}; {} (its earlier name) is an alias that runs the same gate.",
                F::NAME,
                self.aliases.join(", ")
            );
        }
        let cmd = F::Args::augment_args(Common::augment_args(Command::new(F::NAME)))
            .visible_aliases(self.aliases)
            .about(F::ABOUT)
            .long_about(help);
        // Help and the parser offer the family's classes only, not every `ValueClass`.
        match gate::default_family::<F>() {
            Some(fam) => cmd.mut_arg("classes", |arg| {
                arg.value_parser(
                    PossibleValuesParser::new(
                        fam.classes().iter().filter_map(|c| c.to_possible_value()),
                    )
                    .map(|s| ValueClass::from_str(&s, false).expect("a class's own name")),
                )
            }),
            None => cmd,
        }
    }

    fn run(&self, matches: &ArgMatches) -> anyhow::Result<Outcome> {
        let common = Common::from_arg_matches(matches)?;
        let args = F::Args::from_arg_matches(matches)?;
        let fam = F::new(&args).map_err(anyhow::Error::msg)?;
        let plan = plan(F::NAME, &fam, &common)?;
        let mut jsonl =
            Jsonl::open(common.jsonl.as_deref(), F::NAME).map_err(anyhow::Error::msg)?;
        gate::run(&fam, &plan, &mut jsonl)
    }

    fn gpu_tests(&self, gpu: &host::Gpu, modules: &[host::Module; 2]) -> Vec<TestResult> {
        gpu_test::gpu_tests::<F>(F::NAME, gpu, modules)
    }

    fn kernel_crates(&self) -> &'static [host::KernelCrate] {
        F::KERNEL_CRATES
    }

    fn chart(&self, run: &Run) -> Result<Figure, String> {
        F::chart(run)
    }

    fn gpu_test_count(&self) -> usize {
        gate::default_family::<F>().map_or(1, |f| f.edge_shapes().len() + 1)
    }
}

/// A value that an option's parser refused, as one line like the gates' own refusals
/// (`--iters -1: negative; it takes 1 to 100000`); `None` leaves the rest (help, usage, unknown
/// flags, values outside a list) to clap's own report.
fn value_refusal(e: &clap::Error) -> Option<String> {
    if e.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    // The option as clap shows it, `--iters <ITERS>`: its name is the first word.
    let option = text(ContextKind::InvalidArg)?.split(' ').next()?;
    let value = text(ContextKind::InvalidValue)?;
    let why = std::error::Error::source(e)?;
    Some(format!("{option} {value}: {why}"))
}

/// The arguments of this process as `cmd` parses them; a value an option's parser refused is
/// one line and exit 2, like the gates' own refusals, and the rest (help, usage, unknown flags)
/// clap's own report.
pub fn matches(cmd: Command) -> ArgMatches {
    let name = cmd.get_name().to_string();
    cmd.try_get_matches()
        .unwrap_or_else(|e| match value_refusal(&e) {
            Some(line) => {
                eprintln!("{name}: error: {line}");
                std::process::exit(2)
            }
            None => e.exit(),
        })
}

/// The exit status of a command: 0 when it passed, 1 when a check failed, 2 with one line when
/// it could not run (`cannot run:` where there is no GPU), that line prefixed with the program's
/// `name`.
pub fn exit_code(name: &str, result: anyhow::Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            let no_gpu = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<host::Error>(),
                    Some(host::Error::NoDriver | host::Error::NoDevice { .. })
                )
            });
            let prefix = if no_gpu { "cannot run: " } else { "error: " };
            eprintln!("{name}: {prefix}{e:#}");
            ExitCode::from(2)
        }
    }
}

/// Validates the common options against the family before any GPU work: shapes parse, are
/// unique and fit host memory; classes are the family's and unique; the chart is an `.svg` file
/// in a folder that exists, apart from the JSONL, in a run that times. `gate` names the gate in
/// the refusals.
pub fn plan<F: Family>(gate: &str, fam: &F, common: &Common) -> anyhow::Result<Plan<F>> {
    let mut shapes = Vec::new();
    match &common.shapes {
        None => shapes = fam.default_shapes(),
        Some(items) => {
            for item in items {
                let parsed = fam
                    .parse_shapes(item.trim())
                    .map_err(|e| anyhow::anyhow!("--shapes `{item}`: {e}"))?;
                for s in parsed {
                    if shapes.contains(&s) {
                        bail!("--shapes: {s} is given twice; each shape runs once");
                    }
                    shapes.push(s);
                }
            }
            if shapes.is_empty() {
                bail!("--shapes: no shape given");
            }
        }
    }
    let available = host_memory_available();
    for &s in &shapes {
        let need = fam.footprint(s).host_bytes;
        if let Some(avail) = available.filter(|&a| need > a) {
            bail!(
                "--shapes: {s} needs about {} MiB of host memory, {} MiB are available",
                need >> 20,
                avail >> 20
            );
        }
    }
    let classes = match &common.classes {
        None => fam.classes().to_vec(),
        Some(cs) => {
            for c in cs {
                if !fam.classes().contains(c) {
                    bail!(
                        "--classes: {gate} has no `{}` inputs (it has: {})",
                        c.label(),
                        fam.classes()
                            .iter()
                            .map(|c| c.label())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
            }
            for (i, c) in cs.iter().enumerate() {
                if cs[..i].contains(c) {
                    bail!(
                        "--classes: {} is given twice; each class runs once",
                        c.label()
                    );
                }
            }
            cs.clone()
        }
    };
    if let Some(plot) = &common.plot {
        if common.no_timing {
            bail!("--plot: with --no-timing there are no timings to chart");
        }
        check_chart_path(
            "--plot",
            plot,
            common.jsonl.as_deref().map(|j| (j, "--jsonl")),
        )?;
    }
    if let Some(arch) = &common.arch {
        if !ferrocuda::MODULES.iter().any(|m| m.arch == arch) {
            let built: Vec<&str> = ferrocuda::MODULES.iter().map(|m| m.arch).collect();
            bail!(
                "--arch: {arch} is not one of the modules built ({})",
                built.join(", ")
            );
        }
    }
    let rounds = common.rounds.map_or(fam.default_rounds(), |r| r as usize);
    Ok(Plan {
        device: common.device,
        arch: common.arch.clone(),
        shapes,
        classes,
        seed: common.seed,
        rounds,
        iters: common.iters as usize,
        timing: !common.no_timing,
        plot: common.plot.clone(),
    })
}

/// Refuses a chart path (given as `option`) that is a folder, not an `.svg` name, the same
/// file as `other` (the run's JSONL, given as its option), or in a folder that does not exist.
pub fn check_chart_path(
    option: &str,
    plot: &Path,
    other: Option<(&Path, &str)>,
) -> anyhow::Result<()> {
    if plot.is_dir() {
        bail!(
            "{option} {}: is a folder; name the .svg file to write",
            plot.display()
        );
    }
    if !plot
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
    {
        bail!(
            "{option} {}: the chart is SVG; name a file ending in .svg",
            plot.display()
        );
    }
    if let Some((path, name)) = other.filter(|(p, _)| same_file(p, plot)) {
        bail!(
            "{option} {}: is also the {name} file {}",
            plot.display(),
            path.display()
        );
    }
    let dir = plot
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    if !dir.is_dir() {
        bail!("{option} {}: no folder {}", plot.display(), dir.display());
    }
    Ok(())
}

/// Whether two paths name the same file, neither of which need exist yet: each is resolved as
/// far as the disk allows (the file itself, else its folder and its name, else the absolute
/// path), so that `dir/../dir/a.svg` or a linked folder is still the same file.
fn same_file(a: &Path, b: &Path) -> bool {
    let resolve = |p: &Path| {
        p.canonicalize()
            .ok()
            .or_else(|| {
                let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
                let dir = dir.unwrap_or(Path::new(".")).canonicalize().ok()?;
                Some(dir.join(p.file_name()?))
            })
            .or_else(|| std::path::absolute(p).ok())
    };
    resolve(a).is_some_and(|x| Some(x) == resolve(b))
}

/// The host memory available now (Linux's MemAvailable), if it can be read.
fn host_memory_available() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A launcher check's refusal of a `--shapes` size, naming the size (its `why` alone may not:
/// "is 0; it must be positive").
pub fn shape_refusal(e: host::ArgError) -> String {
    format!("{}: {}", e.arg, e.why)
}

/// `AxB`, two positive-or-zero integers: the shape syntax of most gates' `--shapes`, with
/// `names` ("NROWS", "NCOLS") for the messages.
pub fn parse_pair(item: &str, names: (&str, &str)) -> Result<(usize, usize), String> {
    let (a, b) = item
        .split_once('x')
        .ok_or_else(|| format!("`{item}` is not {}x{}", names.0, names.1))?;
    let num = |v: &str, name: &str| {
        let v = v.trim();
        v.parse().map_err(|_| match v.strip_prefix('-') {
            Some(n) if n.parse::<usize>().is_ok() => format!("{name} {v} is negative"),
            _ => format!("bad {name} `{v}` in `{item}`"),
        })
    };
    Ok((num(a, names.0)?, num(b, names.1)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_parse_and_name_what_is_wrong() {
        assert_eq!(parse_pair("4x4096", ("N", "C")), Ok((4, 4096)));
        assert_eq!(parse_pair(" 1 x 32 ", ("N", "C")), Ok((1, 32)));
        assert!(parse_pair("4096", ("N", "C"))
            .unwrap_err()
            .contains("is not NxC"));
        assert!(parse_pair("ax32", ("N", "C"))
            .unwrap_err()
            .contains("bad N `a`"));
        assert_eq!(
            parse_pair("4x-32", ("N", "C")),
            Err("C -32 is negative".into())
        );
    }
}
