//! The gate runner every kernel family uses.
//!
//! A family (`crate::families`) says what is particular to it: its shapes and the value classes
//! of its inputs, how to make and upload one case's inputs, its arms (the ways it runs its
//! kernels, each named, with the bytes a call must move), which arms must agree bit for bit
//! inside one build (equivalence groups), its CPU oracle with a stated bound, and its own
//! summary tables. A one-arm family (one kernel, one oracle) declares less: [`simple`]. The
//! runner does the rest, the same way for every family:
//!
//! - loads both builds (the Rust PTX and the reference .cu through NVRTC);
//! - per case, runs every arm in both builds on poisoned outputs and checks Rust == .cu for every
//!   arm, every equivalence group in each build, the oracle, and that every output was written;
//! - times the arms interleaved in rounds, DRAM-cold: either rotating whole buffer sets whose
//!   footprint is past twice the L2, or scrubbing the L2 before every timed launch;
//! - measures the read-stream ceiling in the same run, prints the tables, writes JSONL rows and
//!   an SVG chart of those rows, and sets the exit status (0 pass, 1 a check failed, 2 could not run).

pub mod chart;
pub mod cli;
pub mod compare;
pub mod gate;
pub mod gpu_test;
pub mod output;
pub mod record;
pub mod run;
pub mod simple;
pub mod timing;

use crate::harness::output::Output;
use host::{Build, Gpu, Module};
use serde::Serialize;
use std::fmt;

pub use compare::Verdict;
pub use run::{check_case, CaseTiming, Check, TimedArm};
pub use timing::Stats;

/// A class of input values. Uniform data alone hides slow paths that real data takes (an IEEE
/// division with a zero dividend, for one), so families time the classes real tensors have.
/// What each class means for a family's inputs is in that family's help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ValueClass {
    /// Uniform random values, never exactly zero.
    Uniform,
    /// One value in sixteen exactly zero (zero padding, pruned weights, sparse activations).
    Zeros,
    /// A few large outliers per row among uniform values.
    Outliers,
    /// Whole rows of zeros among uniform rows (padding rows of a batch).
    Padding,
    /// Tiny magnitudes (subnormal scales and quotients).
    Tiny,
    /// Named corner cases of the family's numerics (signed zeros, exact halves, saturation,
    /// overflow, non-finite values), laid end to end.
    Edge,
}

impl ValueClass {
    pub fn label(self) -> &'static str {
        match self {
            ValueClass::Uniform => "uniform",
            ValueClass::Zeros => "zeros",
            ValueClass::Outliers => "outliers",
            ValueClass::Padding => "padding",
            ValueClass::Tiny => "tiny",
            ValueClass::Edge => "edge",
        }
    }
}

/// Where an arm runs: in both builds of the family's kernels, or once in a peer library
/// (cuBLAS), which has no .cu twin to compare with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    Builds,
    Peer,
}

/// The side an arm's launch is enqueued for.
#[derive(Clone, Copy)]
pub enum On<'a> {
    Build(&'a Module),
    Peer,
}

/// A side's label in tables and JSONL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Rust,
    Cu,
    Peer,
}

impl Side {
    pub fn of(on: On<'_>) -> Side {
        match on {
            On::Build(m) if m.build() == Build::Rust => Side::Rust,
            On::Build(_) => Side::Cu,
            On::Peer => Side::Peer,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Side::Rust => "rust",
            Side::Cu => "cu",
            Side::Peer => "peer",
        }
    }
}

/// An arm a family offers on one shape.
#[derive(Debug, Clone, Copy)]
pub struct ArmSpec<A> {
    pub arm: A,
    pub runs: Runs,
    /// Timed, or only checked (e.g. an arm that exists to be compared with another).
    pub timed: bool,
    /// Bytes one call must move at least: each input read once, each output written once.
    pub bytes: usize,
}

/// Arms that must give the same bits inside one build, on the outputs they all write.
#[derive(Debug, Clone)]
pub struct Group<A> {
    /// What the identity means, e.g. `fused == chain`.
    pub name: String,
    pub arms: Vec<A>,
}

/// What a shape costs in memory, checked before the GPU is touched.
#[derive(Debug, Clone, Copy, Default)]
pub struct Footprint {
    /// Host bytes the case's inputs and downloaded outputs take at once.
    pub host_bytes: usize,
    /// Device bytes of one buffer set (inputs and outputs of every arm).
    pub set_bytes: usize,
}

/// How a family's arms are timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimingMode {
    /// Graphs of back-to-back calls (at least `--iters`) rotating through whole buffer sets
    /// whose footprint is at least twice the L2, replayed between two events: the per-call
    /// device time of a stream of calls, each reading cold data.
    Rotate,
    /// One call at a time between two events, after a read stream that evicts the L2: the
    /// device time of a launch that starts cold, as when a layer's kernel follows another's.
    Scrub,
    /// One call at a time between two events, back to back with no scrub: whatever the previous
    /// call left in the L2 stays there.
    Warm,
}

/// An arm's label in tables, JSONL and the chart.
pub trait Label {
    fn label(&self) -> String;

    /// What the label says as JSONL fields of the arm's timing rows (a batch's `m`, say), so that
    /// a reader of the rows need not parse the label; none by default.
    fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
}

/// Everything particular to one kernel family's gate. See the module docs for what the runner
/// does with it, and `docs/adding-a-family.md` for a worked example.
pub trait Family: Sized + 'static {
    type Shape: Copy + PartialEq + fmt::Display + Serialize;
    type Arm: Copy + PartialEq + fmt::Debug + Label;
    /// The host data of one case.
    type Inputs;
    /// The device buffers of one case: one set of every arm's inputs and outputs.
    type Set;
    /// The gate's own command-line options, beside the common ones.
    type Args: clap::Args + Clone + fmt::Debug;

    /// The gate's name, its subcommand and the `gate` field of its JSONL rows.
    const NAME: &'static str;
    /// One line for `gates --help`.
    const ABOUT: &'static str;
    /// `gates NAME --help`: what is checked and timed, the shapes, the value classes.
    const HELP: &'static str;

    /// The kernel crates besides ferrocuda's own whose builds hold the family's kernels (none for
    /// a family of `kernels-gpu`): each is loaded beside ferrocuda's, whose `read_stream` times
    /// the ceiling, into one Rust and one .cu build.
    const KERNEL_CRATES: &'static [host::KernelCrate] = &[];

    /// The full `gates NAME --help`: [`Family::HELP`] unless the family composes more.
    fn help() -> String {
        Self::HELP.to_string()
    }

    /// The family's run-time state from its options, validated before any GPU work.
    fn new(args: &Self::Args) -> Result<Self, String>;
    fn default_shapes(&self) -> Vec<Self::Shape>;
    /// One `--shapes` item: a shape, or a named sheet of shapes.
    fn parse_shapes(&self, item: &str) -> Result<Vec<Self::Shape>, String>;
    /// Shapes for the GPU tests, each with the edge it exercises.
    fn edge_shapes(&self) -> Vec<(Self::Shape, &'static str)>;
    /// The value classes the family generates (the first is the default check class).
    fn classes(&self) -> &'static [ValueClass];
    fn footprint(&self, shape: Self::Shape) -> Footprint;
    fn timing(&self) -> TimingMode;

    /// The arch of the modules the run loads (`--arch`, else the device's), told once before
    /// the first case, for a family whose arms depend on what those modules hold. Nothing by
    /// default.
    fn run_on(&self, _arch: &str) {}
    fn inputs(&self, shape: Self::Shape, class: ValueClass, seed: u64) -> Self::Inputs;
    fn upload(
        &self,
        gpu: &Gpu,
        shape: Self::Shape,
        inputs: &Self::Inputs,
    ) -> Result<Self::Set, host::Error>;
    fn arms(&self, shape: Self::Shape) -> Vec<ArmSpec<Self::Arm>>;
    fn groups(&self, shape: Self::Shape) -> Vec<Group<Self::Arm>>;
    /// Enqueues one call of `arm` on the stream (the launches are also captured into graphs).
    fn enqueue(
        &self,
        gpu: &Gpu,
        on: On<'_>,
        shape: Self::Shape,
        arm: Self::Arm,
        set: &mut Self::Set,
    ) -> Result<(), host::Error>;
    /// Fills the outputs `arm` writes with a pattern no kernel writes.
    fn poison(&self, gpu: &Gpu, arm: Self::Arm, set: &mut Self::Set) -> Result<(), host::Error>;
    /// Downloads the outputs `arm` writes.
    fn download(
        &self,
        gpu: &Gpu,
        arm: Self::Arm,
        set: &Self::Set,
    ) -> Result<Vec<Output>, host::Error>;
    /// Checks of one arm's outputs against the CPU oracle, each naming its bound.
    fn oracle(
        &self,
        shape: Self::Shape,
        inputs: &Self::Inputs,
        arm: Self::Arm,
        side: Side,
        outputs: &[Output],
    ) -> Vec<Check>;

    /// The family's own tables from the timings (ratios, winner tables), each row also written
    /// to JSONL; returns the failures they find (e.g. a serving-table regression), which count
    /// towards the exit status.
    fn summarize(&self, _timings: &[CaseTiming<Self>], _out: &mut run::Report<'_>) -> usize {
        0
    }

    /// Bytes of the read stream timed beside each case's arms (see [`run::SizedStream`]): by
    /// default the fewest bytes any timed arm of the builds moves.
    fn stream_bytes(&self, shape: Self::Shape) -> usize {
        self.arms(shape)
            .iter()
            .filter(|a| a.timed && matches!(a.runs, Runs::Builds))
            .map(|a| a.bytes)
            .min()
            .unwrap_or(0)
    }

    /// The chart of a run (`--plot`, `gates plot`), from its JSONL rows alone, so that a run
    /// is charted the same way on the machine that made it and anywhere later. By default a
    /// panel per uniform case with each arm's GB/s; a family answers its own question instead.
    fn chart(run: &chart::Run) -> Result<chart::Figure, String> {
        Ok(chart::bars::by_case(run))
    }

    /// Rounds of timing when `--rounds` is not given.
    fn default_rounds(&self) -> usize {
        15
    }

    /// Launches the family's launchers must refuse on a real device, for the GPU tests: one
    /// line per refusal that did not happen.
    fn refusals(&self, _gpu: &Gpu, _rust: &Module) -> Result<Vec<String>, host::Error> {
        Ok(Vec::new())
    }
}
