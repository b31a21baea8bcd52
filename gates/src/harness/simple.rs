//! The [`Family`] of a one-arm family: one elementwise kernel over `rows x cols` f32 buffers,
//! checked Rust == .cu and against one oracle. A [`SimpleFamily`] declares its name and help,
//! shapes, inputs (their names, magnitudes and edge values), outputs, launch and oracle; the rest
//! of [`Family`] follows from them: no options of its own, the value classes uniform, padding
//! and edge made from the declared inputs, one timed arm moving each buffer once, no
//! equivalence groups, outputs poisoned with [`POISON_F32`], rotated timing, the footprint from
//! the buffers, the default chart and tables, the common help text, and the refusal of a buffer
//! one value short. A family with several kernels, other layouts or element types, or options
//! of its own implements [`Family`] itself.

use crate::harness::cli::{parse_pair, shape_refusal};
use crate::harness::output::{Output, POISON_F32};
use crate::harness::{
    ArmSpec, Check, Family, Footprint, Group, Label, On, Runs, Side, TimingMode, ValueClass,
    Verdict,
};
use crate::rng;
use host::{CudaSlice, Error, Gpu, Module};
use serde::Serialize;
use std::fmt;

/// What a one-arm family declares; [`Family`] follows (see the module docs).
pub trait SimpleFamily: Default + 'static {
    /// The gate's subcommand and the `gate` field of its JSONL rows.
    const NAME: &'static str;
    /// One line for `gates --help`.
    const ABOUT: &'static str;
    /// What the kernel computes, its oracle's bound and its inputs' edge values, for `gates NAME
    /// --help`; the checks, shapes, classes, timing and exit status every one-arm gate shares
    /// follow it.
    const HELP: &'static str;
    /// The kernel crates that hold the kernel, beside ferrocuda's ([`Family::KERNEL_CRATES`]).
    const KERNEL_CRATES: &'static [host::KernelCrate] = &[];
    /// The kernel, which is also its arm's label.
    const KERNEL: &'static str;
    /// The names of a shape's two sizes, in `--shapes` and its refusals (`("M", "FFN")`).
    const DIMS: (&'static str, &'static str);
    const SHAPES: &'static [(usize, usize)];
    /// Shapes for the GPU tests, each with the edge it exercises.
    const EDGE_SHAPES: &'static [(usize, usize, &'static str)];
    /// The input buffers in the launch's order; the launcher names the same ones when it
    /// refuses one.
    const INPUTS: &'static [Input];
    const OUTPUTS: &'static [&'static str];
    /// Enqueues one call through the host launcher.
    const LAUNCH: Launch;
    /// The oracle check's name, with its bound.
    const ORACLE: &'static str;
    /// The verdict of each output against the CPU oracle.
    fn oracle(inputs: &[Vec<f32>], outputs: &[&[f32]]) -> Vec<(String, Verdict)>;
}

/// One input buffer: its name, the magnitude of its uniform values, and the corner values its
/// edge class lays end to end (give the inputs' lists coprime lengths to meet every pair).
#[derive(Debug, Clone, Copy)]
pub struct Input {
    pub name: &'static str,
    pub scale: f32,
    pub edge: &'static [f32],
}

impl Input {
    pub const fn new(name: &'static str, scale: f32, edge: &'static [f32]) -> Self {
        Input { name, scale, edge }
    }
}

/// A host launcher over the case's device buffers, inputs then outputs.
pub type Launch = fn(&Module, &Gpu, &[CudaSlice<f32>], &mut [CudaSlice<f32>]) -> Result<(), Error>;

/// A shape of `rows x cols` values, `ROWSxCOLS` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
}

impl Matrix {
    pub fn elems(self) -> usize {
        self.rows * self.cols
    }

    /// `AxB`, both sizes positive and their product within `i32` (the kernel's `n`), `names`
    /// naming the sizes in refusals.
    pub fn parse(
        kernel: &'static str,
        item: &str,
        names: (&'static str, &'static str),
    ) -> Result<Self, String> {
        let (rows, cols) = parse_pair(item, names)?;
        host::check::positive_i32(kernel, names.0, rows).map_err(shape_refusal)?;
        host::check::positive_i32(kernel, names.1, cols).map_err(shape_refusal)?;
        host::check::product_i32(kernel, "the shape", &[rows, cols]).map_err(shape_refusal)?;
        Ok(Matrix { rows, cols })
    }
}

impl fmt::Display for Matrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

/// The one arm: the kernel, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelArm(&'static str);

impl Label for KernelArm {
    fn label(&self) -> String {
        self.0.into()
    }
}

/// A one-arm gate has no options of its own.
#[derive(clap::Args, Debug, Clone)]
pub struct NoArgs {}

/// The device buffers of one case.
pub struct Buffers {
    inputs: Vec<CudaSlice<f32>>,
    outputs: Vec<CudaSlice<f32>>,
}

impl Buffers {
    /// The inputs uploaded, and `outputs` poisoned buffers of these lengths.
    fn new(gpu: &Gpu, inputs: &[Vec<f32>], outputs: &[usize]) -> Result<Self, Error> {
        Ok(Buffers {
            inputs: inputs
                .iter()
                .map(|v| gpu.upload(v))
                .collect::<Result<_, _>>()?,
            outputs: outputs
                .iter()
                .map(|&n| gpu.alloc_poisoned(n, POISON_F32))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// The classes every one-arm family has (see [`inputs`]).
const CLASSES: &[ValueClass] = &[ValueClass::Uniform, ValueClass::Padding, ValueClass::Edge];

/// One case's inputs: uniform in `[-scale, scale)` (never zero); for padding, every fourth row
/// of every input zeros, and the only row of a one-row batch; for edge, each input's edge
/// values laid end to end.
pub fn inputs(decl: &[Input], shape: Matrix, class: ValueClass, seed: u64) -> Vec<Vec<f32>> {
    let n = shape.elems();
    (0..)
        .zip(decl)
        .map(|(k, input)| {
            let mut v = rng::vec_f32(rng::case_seed(seed, &[k]), n, input.scale);
            match class {
                ValueClass::Padding => v
                    .chunks_mut(shape.cols)
                    .enumerate()
                    .filter(|(r, _)| r % 4 == 3 || shape.rows == 1)
                    .for_each(|(_, row)| row.fill(0.0)),
                ValueClass::Edge => v
                    .iter_mut()
                    .zip(input.edge.iter().cycle())
                    .for_each(|(x, e)| *x = *e),
                _ => {}
            }
            v
        })
        .collect()
}

/// `gates NAME --help`: the family's own text, then what every one-arm gate shares.
fn help<T: SimpleFamily>() -> String {
    let shapes: Vec<String> = T::SHAPES.iter().map(|&(r, c)| format!("{r}x{c}")).collect();
    let scales: Vec<String> = T::INPUTS
        .iter()
        .map(|i| format!("{} in [-{s}, {s})", i.name, s = i.scale))
        .collect();
    format!(
        "{}

Per case (a shape and a value class), on seeded inputs:
  rust == cu    the outputs byte-identical between the Rust build and the reference CUDA C++
                build (NVRTC, default options, printed in the header)
  oracle        {}
  all written   outputs are poisoned (NaN) before every launch; none may remain
Any failure prints the first mismatching index and both values, and the exit status is 1.

Shapes: {}x{}; default {}.
Value classes: uniform ({}, never zero);
padding (every fourth row of every input all zeros, the only row of a one-row batch);
edge (each input's corner values laid end to end).

Timings (skipped with --no-timing): per-call device time from CUDA events around graphs of
back-to-back calls rotating through whole buffer sets whose footprint is past twice the L2,
median over rounds with the spread (max-min)/median; Rust against .cu, and GB/s (each buffer
moved once) against a read-stream ceiling measured in the same run. Timings are reported,
never gated.

Exit status: 0 all checks passed, 1 a check failed, 2 the gate could not run.",
        T::HELP,
        T::ORACLE,
        T::DIMS.0,
        T::DIMS.1,
        shapes.join(", "),
        scales.join(", "),
    )
}

/// Bytes of every buffer of a case.
fn bytes<T: SimpleFamily>(shape: Matrix) -> usize {
    4 * shape.elems() * (T::INPUTS.len() + T::OUTPUTS.len())
}

impl<T: SimpleFamily> Family for T {
    type Shape = Matrix;
    type Arm = KernelArm;
    type Inputs = Vec<Vec<f32>>;
    type Set = Buffers;
    type Args = NoArgs;

    const NAME: &'static str = <T as SimpleFamily>::NAME;
    const ABOUT: &'static str = <T as SimpleFamily>::ABOUT;
    const HELP: &'static str = <T as SimpleFamily>::HELP;
    const KERNEL_CRATES: &'static [host::KernelCrate] = <T as SimpleFamily>::KERNEL_CRATES;

    fn help() -> String {
        help::<T>()
    }

    fn new(_: &NoArgs) -> Result<Self, String> {
        Ok(T::default())
    }

    fn default_shapes(&self) -> Vec<Matrix> {
        T::SHAPES
            .iter()
            .map(|&(rows, cols)| Matrix { rows, cols })
            .collect()
    }

    fn parse_shapes(&self, item: &str) -> Result<Vec<Matrix>, String> {
        Matrix::parse(T::KERNEL, item, T::DIMS).map(|s| vec![s])
    }

    fn edge_shapes(&self) -> Vec<(Matrix, &'static str)> {
        T::EDGE_SHAPES
            .iter()
            .map(|&(rows, cols, why)| (Matrix { rows, cols }, why))
            .collect()
    }

    fn classes(&self) -> &'static [ValueClass] {
        CLASSES
    }

    /// The host holds the inputs, both builds' outputs and the oracle's f64 values at once.
    fn footprint(&self, shape: Matrix) -> Footprint {
        let outputs = 4 * shape.elems() * T::OUTPUTS.len();
        Footprint {
            host_bytes: bytes::<T>(shape) + 3 * outputs,
            set_bytes: bytes::<T>(shape),
        }
    }

    fn timing(&self) -> TimingMode {
        TimingMode::Rotate
    }

    fn inputs(&self, shape: Matrix, class: ValueClass, seed: u64) -> Vec<Vec<f32>> {
        inputs(T::INPUTS, shape, class, seed)
    }

    fn upload(&self, gpu: &Gpu, shape: Matrix, inputs: &Vec<Vec<f32>>) -> Result<Buffers, Error> {
        Buffers::new(gpu, inputs, &vec![shape.elems(); T::OUTPUTS.len()])
    }

    fn arms(&self, shape: Matrix) -> Vec<ArmSpec<KernelArm>> {
        vec![ArmSpec {
            arm: KernelArm(T::KERNEL),
            runs: Runs::Builds,
            timed: true,
            bytes: bytes::<T>(shape),
        }]
    }

    fn groups(&self, _: Matrix) -> Vec<Group<KernelArm>> {
        Vec::new()
    }

    fn enqueue(
        &self,
        gpu: &Gpu,
        on: On<'_>,
        _: Matrix,
        _: KernelArm,
        set: &mut Buffers,
    ) -> Result<(), Error> {
        let On::Build(m) = on else {
            unreachable!("a one-arm family has no peer arms")
        };
        (T::LAUNCH)(m, gpu, &set.inputs, &mut set.outputs)
    }

    fn poison(&self, gpu: &Gpu, _: KernelArm, set: &mut Buffers) -> Result<(), Error> {
        set.outputs
            .iter_mut()
            .try_for_each(|o| gpu.poison(o, POISON_F32))
    }

    fn download(&self, gpu: &Gpu, _: KernelArm, set: &Buffers) -> Result<Vec<Output>, Error> {
        T::OUTPUTS
            .iter()
            .zip(&set.outputs)
            .map(|(name, buf)| Output::f32(gpu, name, buf))
            .collect()
    }

    fn oracle(
        &self,
        _: Matrix,
        inputs: &Vec<Vec<f32>>,
        _: KernelArm,
        _: Side,
        outputs: &[Output],
    ) -> Vec<Check> {
        let outs: Vec<&[f32]> = outputs.iter().map(Output::as_f32).collect();
        vec![Check {
            name: format!("oracle {}", T::ORACLE),
            verdicts: T::oracle(inputs, &outs),
        }]
    }

    /// Each buffer in turn one value short, on the first default shape: refused, naming it,
    /// with nothing written.
    fn refusals(&self, gpu: &Gpu, rust: &Module) -> Result<Vec<String>, Error> {
        let n = self.default_shapes().first().map_or(2, |s| s.elems());
        let names: Vec<&str> = T::INPUTS
            .iter()
            .map(|i| i.name)
            .chain(T::OUTPUTS.iter().copied())
            .collect();
        let mut problems = Vec::new();
        for (k, name) in names.iter().enumerate() {
            let len = |i: usize| n - usize::from(i == k);
            let inputs: Vec<Vec<f32>> = (0..T::INPUTS.len()).map(|i| vec![1.0; len(i)]).collect();
            let outputs: Vec<usize> = (T::INPUTS.len()..names.len()).map(len).collect();
            let mut set = Buffers::new(gpu, &inputs, &outputs)?;
            let got = (T::LAUNCH)(rust, gpu, &set.inputs, &mut set.outputs);
            if !matches!(&got, Err(Error::Arg(e)) if e.arg == *name) {
                problems.push(format!(
                    "`{name}` one value short not refused as `{name}`: {got:?}"
                ));
            }
            gpu.synchronize()?;
            for buf in &set.outputs {
                if gpu.download(buf)?.iter().any(|v| v.to_bits() != u32::MAX) {
                    problems.push(format!("a launch refused for `{name}` wrote an output"));
                }
            }
        }
        Ok(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_name_the_size_they_refuse() {
        let parse = |s| Matrix::parse("k", s, ("M", "FFN"));
        assert_eq!(
            parse("8x17408"),
            Ok(Matrix {
                rows: 8,
                cols: 17408
            })
        );
        assert!(parse("1x0").unwrap_err().starts_with("FFN: is 0"));
        assert!(parse("0x4").unwrap_err().starts_with("M: is 0"));
        assert!(parse("65536x65536").unwrap_err().contains("i32::MAX"));
    }

    #[test]
    fn classes_pad_whole_rows_and_lay_the_edge_values_end_to_end() {
        const DECL: &[Input] = &[
            Input {
                name: "a",
                scale: 2.0,
                edge: &[1.0, 2.0],
            },
            Input {
                name: "b",
                scale: 1.0,
                edge: &[3.0, 4.0, 5.0],
            },
        ];
        let shape = Matrix { rows: 8, cols: 3 };
        let uniform = inputs(DECL, shape, ValueClass::Uniform, 7);
        assert!(uniform[0].iter().all(|v| *v != 0.0 && v.abs() <= 2.0));
        let padded = inputs(DECL, shape, ValueClass::Padding, 7);
        for (r, row) in padded[1].chunks(3).enumerate() {
            assert_eq!(row.iter().all(|v| *v == 0.0), r % 4 == 3, "row {r}");
        }
        let edge = inputs(DECL, shape, ValueClass::Edge, 7);
        assert_eq!(edge[1][..4], [3.0, 4.0, 5.0, 3.0]);
        assert_eq!(edge[0][..3], [1.0, 2.0, 1.0]);
    }
}
