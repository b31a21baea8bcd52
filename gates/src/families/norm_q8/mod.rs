//! The norm-q8 gate: `rms_norm` then `quantize_q8_1` (the chain) against the fused
//! `rms_norm_zq8_f32`, every kernel's Rust build against its reference .cu build, and every row
//! against the same row computed in a batch of another size.

use crate::harness::chart::{Figure, Run};
use crate::harness::cli::{parse_pair, shape_refusal};
use crate::harness::output::{Output, POISON_F32, POISON_I8};
use crate::harness::{
    compare, ArmSpec, Check, Family, Footprint, Group, Label, On, Runs, Side, TimingMode,
    ValueClass,
};
use crate::report::yes_no;
use crate::rng;
use host::norm_q8::{self as launch, Rows};
use host::{CudaSlice, Error, Gpu, Module};
use kernels_gpu::norm_q8::BANDWIDTH_ROWS;
use serde::Serialize;
use std::fmt;

pub const EPS: f32 = 1e-6;
/// Input magnitude: values uniform in `[-4, 4)`.
const INPUT_SCALE: f32 = 4.0;

/// A batch of `nrows` rows of `ncols` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub nrows: usize,
    pub ncols: usize,
}

impl Shape {
    fn rows(self) -> Rows {
        Rows {
            nrows: self.nrows,
            ncols: self.ncols,
        }
    }

    fn elems(self) -> usize {
        self.nrows * self.ncols
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.nrows, self.ncols)
    }
}

/// `NROWSxNCOLS`, refused unless the launchers would take it: the row kernels any number of
/// rows (addressed in 64 bits), and `quantize_q8_1`, which the gate launches over the whole
/// batch, at most `i32::MAX` values (its `n` is an `i32`).
fn parse_shape(s: &str) -> Result<Shape, String> {
    let (nrows, ncols) = parse_pair(s, ("NROWS", "NCOLS"))?;
    let shape = Shape { nrows, ncols };
    launch::rows_config("norm-q8", shape.rows()).map_err(shape_refusal)?;
    host::check::product_i32("norm-q8", "nrows x ncols", &[nrows, ncols]).map_err(shape_refusal)?;
    Ok(shape)
}

/// What one call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    RmsNorm,
    /// `quantize_q8_1` of `x` itself.
    Quantize,
    /// `rms_norm` then `quantize_q8_1` of its output: two launches.
    Chain,
    Fused,
    /// The fused kernel on the same rows, launched in batches whose size is on the other side
    /// of every row-count threshold of the launch geometry (checked, not timed).
    Rebatched,
}

impl Label for Arm {
    fn label(&self) -> String {
        match self {
            Arm::RmsNorm => "rms_norm",
            Arm::Quantize => "quantize_q8_1",
            Arm::Chain => "chain",
            Arm::Fused => "fused",
            Arm::Rebatched => "fused rebatched",
        }
        .into()
    }
}

/// How the rows are regrouped for [`Arm::Rebatched`]: `(first row, rows)` of each launch.
/// Many rows are launched in small batches (one row first, then batches just under the
/// bandwidth geometry); few rows are launched inside a batch just over it, padded with copies
/// of themselves.
pub fn rebatching(nrows: usize) -> Vec<(usize, usize)> {
    let small = BANDWIDTH_ROWS as usize - 1;
    if nrows > small {
        let mut b = vec![(0, 1)];
        let mut r = 1;
        while r < nrows {
            let n = small.min(nrows - r);
            b.push((r, n));
            r += n;
        }
        b
    } else {
        vec![(0, BANDWIDTH_ROWS as usize + 1)]
    }
}

/// Host inputs of one case.
pub struct Inputs {
    x: Vec<f32>,
    w: Vec<f32>,
}

/// Outputs of one call.
struct Out {
    z: CudaSlice<f32>,
    qs: CudaSlice<i8>,
    d: CudaSlice<f32>,
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
}

/// One batch of [`Arm::Rebatched`]: its rows of `x` and its outputs.
struct Batch {
    first: usize,
    rows: usize,
    x: CudaSlice<f32>,
    out: Out,
}

/// Device buffers of one case.
pub struct Set {
    ncols: usize,
    x: CudaSlice<f32>,
    w: CudaSlice<f32>,
    out: Out,
    /// Made on the first call of [`Arm::Rebatched`] (sets that are only timed never need it).
    batches: Option<Vec<Batch>>,
}

pub struct NormQ8;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

impl NormQ8 {
    fn batches(gpu: &Gpu, shape: Shape, set: &CudaSlice<f32>) -> Result<Vec<Batch>, Error> {
        let ncols = shape.ncols;
        rebatching(shape.nrows)
            .into_iter()
            .map(|(first, rows)| {
                let mut x = gpu.alloc_poisoned::<f32>(rows * ncols, 0)?;
                // Every row of the batch comes from the case's rows, cyclically.
                for r in 0..rows {
                    let src = (first + r) % shape.nrows;
                    gpu.stream()
                        .memcpy_dtod(
                            &set.slice(src * ncols..(src + 1) * ncols),
                            &mut x.slice_mut(r * ncols..(r + 1) * ncols),
                        )
                        .map_err(|source| Error::Driver {
                            during: "copying rows for a rebatched launch".into(),
                            source,
                        })?;
                }
                Ok(Batch {
                    first,
                    rows,
                    x,
                    out: Out::new(gpu, rows * ncols)?,
                })
            })
            .collect()
    }
}

impl Family for NormQ8 {
    type Shape = Shape;
    type Arm = Arm;
    type Inputs = Inputs;
    type Set = Set;
    type Args = Args;

    const NAME: &'static str = "norm-q8";
    const ABOUT: &'static str =
        "rms_norm + quantize_q8_1 (the chain) against the fused rms_norm_zq8_f32, Rust against .cu";
    const HELP: &'static str = "\
rms_norm then quantize_q8_1 (the chain) against the fused rms_norm_zq8_f32, and every kernel's
Rust build against its reference CUDA C++ build (NVRTC, default options, printed in the header).

Per case (a shape and a value class), on seeded inputs:
  rust == cu          each arm's outputs byte-identical between the two builds
  fused == chain      z, qs and d byte-identical, in each build
  rows independent of the batch
                      the fused kernel's rows byte-identical when the same rows are launched
                      in batches on the other side of every row-count threshold (256 rows)
  oracle              z within 4e-6 relative (or 2^-144 absolute, f32's subnormal spacing) of
                      a CPU f64 RMS norm on every row with finite inputs; qs and d exactly the
                      q8_1 definition (d = amax/127, q = round-half-away(v/d) saturated to
                      [-127, 127], 0 where v is 0) applied to the GPU's own input
  all written         outputs are poisoned (NaN, -128) before every launch; none may remain
Any failure prints the first mismatching index and both values, and the exit status is 1.

Shapes: NROWSxNCOLS (ncols a multiple of 32); default 1x4096, 1x8192, 1x1536, 4096x4096.
Value classes: uniform (x and w in [-4, 4), never zero); zeros (a sixteenth of w exactly 0, so
z has exact zeros); outliers (four values of each row of x a thousand times larger); padding
(every fourth row of x all zeros, the only row of a one-row batch); tiny (x of subnormal
magnitude, so quantize_q8_1(x) has subnormal scales); edge (the named corner cases of
the family's named inputs laid end to end: signed zeros, single nonzeros, exact halves, subnormal scales
that reach 128 and saturate, squares that overflow f32, NaN and infinities).

Timings (skipped with --no-timing): per-call device time from CUDA events around graphs of
back-to-back calls rotating through whole buffer sets (x, w and the outputs) whose footprint
is past twice the L2, arms interleaved in each round, median over rounds with the spread
(max-min)/median. Reported: Rust vs .cu per kernel, fused vs chain, and GB/s (bytes each call
must move) against a read-only stream ceiling measured in the same run. Timings are reported,
never gated.

Exit status: 0 all checks passed, 1 a check failed, 2 the gate could not run.";

    fn new(_: &Args) -> Result<Self, String> {
        Ok(NormQ8)
    }

    fn default_shapes(&self) -> Vec<Shape> {
        [(1, 4096), (1, 8192), (1, 1536), (4096, 4096)]
            .map(|(nrows, ncols)| Shape { nrows, ncols })
            .to_vec()
    }

    fn parse_shapes(&self, item: &str) -> Result<Vec<Shape>, String> {
        parse_shape(item).map(|s| vec![s])
    }

    fn edge_shapes(&self) -> Vec<(Shape, &'static str)> {
        [
            (1, 32, "one q8_1 block, one warp"),
            (5, 96, "row shorter than one warp's trip"),
            (3, 160, "partial warp of column groups"),
            (2, 1568, "block not a power of two"),
            (1, 4128, "last trip partly out of the row"),
            (7, 4096, "several rows"),
            (1, 32768, "more than one trip of 1024 threads"),
            (300, 1536, "many short rows, bandwidth geometry"),
            (256, 4128, "bandwidth geometry, ragged last trip"),
            (
                129,
                4128,
                "quantize at four groups per thread, ragged last span",
            ),
        ]
        .map(|(nrows, ncols, why)| (Shape { nrows, ncols }, why))
        .to_vec()
    }

    fn classes(&self) -> &'static [ValueClass] {
        &[
            ValueClass::Uniform,
            ValueClass::Zeros,
            ValueClass::Outliers,
            ValueClass::Padding,
            ValueClass::Tiny,
            ValueClass::Edge,
        ]
    }

    fn footprint(&self, shape: Shape) -> Footprint {
        let n = shape.elems();
        let set = 4 * n + 4 * shape.ncols + 4 * n + n + n / 8;
        Footprint {
            // Inputs, and the outputs of every arm on both builds downloaded at once.
            host_bytes: 8 * n + 10 * (4 * n + n + n / 8),
            set_bytes: set,
        }
    }

    fn timing(&self) -> TimingMode {
        TimingMode::Rotate
    }

    fn inputs(&self, shape: Shape, class: ValueClass, seed: u64) -> Inputs {
        let n = shape.elems();
        let mut x = rng::vec_f32(rng::case_seed(seed, &[1]), n, INPUT_SCALE);
        let mut w = rng::vec_f32(rng::case_seed(seed, &[2]), shape.ncols, INPUT_SCALE);
        let mut pick = rng::SplitMix64::new(rng::case_seed(seed, &[3]));
        match class {
            ValueClass::Uniform => {}
            ValueClass::Zeros => {
                for v in w.iter_mut() {
                    if pick.next_u64().is_multiple_of(16) {
                        *v = 0.0;
                    }
                }
            }
            ValueClass::Outliers => {
                for row in x.chunks_exact_mut(shape.ncols) {
                    for _ in 0..4 {
                        row[pick.next_u64() as usize % shape.ncols] *= 1000.0;
                    }
                }
            }
            ValueClass::Padding => {
                for (r, row) in x.chunks_exact_mut(shape.ncols).enumerate() {
                    if r % 4 == 3 || shape.nrows == 1 {
                        row.fill(0.0);
                    }
                }
            }
            ValueClass::Tiny => {
                for v in x.iter_mut() {
                    *v *= f32::from_bits(1 << 13); // 2^-136: subnormal values
                }
            }
            ValueClass::Edge => {
                // The quantization corner blocks first, then the row corner cases, repeated.
                let ncols = shape.ncols;
                let mut cases = inputs::concat(&inputs::q8_blocks());
                cases.truncate(cases.len() / ncols * ncols);
                for rows in [inputs::edge_rows(ncols), inputs::nonfinite_rows(ncols)] {
                    cases.extend(inputs::concat(&rows));
                }
                for (v, c) in x.iter_mut().zip(cases.iter().cycle()) {
                    *v = *c;
                }
            }
        }
        Inputs { x, w }
    }

    fn upload(&self, gpu: &Gpu, shape: Shape, inputs: &Inputs) -> Result<Set, Error> {
        Ok(Set {
            ncols: shape.ncols,
            x: gpu.upload(&inputs.x)?,
            w: gpu.upload(&inputs.w)?,
            out: Out::new(gpu, shape.elems())?,
            batches: None,
        })
    }

    fn arms(&self, shape: Shape) -> Vec<ArmSpec<Arm>> {
        let n = shape.elems();
        let (x, w, z, q8) = (4 * n, 4 * shape.ncols, 4 * n, n + n / 8);
        [
            (Arm::RmsNorm, true, x + w + z),
            (Arm::Quantize, true, x + q8),
            (Arm::Chain, true, x + w + z + z + q8),
            (Arm::Fused, true, x + w + z + q8),
            (Arm::Rebatched, false, x + w + z + q8),
        ]
        .map(|(arm, timed, bytes)| ArmSpec {
            arm,
            runs: Runs::Builds,
            timed,
            bytes,
        })
        .to_vec()
    }

    fn groups(&self, _: Shape) -> Vec<Group<Arm>> {
        vec![
            Group {
                name: "fused == chain".into(),
                arms: vec![Arm::Chain, Arm::Fused],
            },
            Group {
                name: "rows independent of the batch".into(),
                arms: vec![Arm::Fused, Arm::Rebatched],
            },
        ]
    }

    fn enqueue(
        &self,
        gpu: &Gpu,
        on: On<'_>,
        shape: Shape,
        arm: Arm,
        set: &mut Set,
    ) -> Result<(), Error> {
        let On::Build(m) = on else {
            unreachable!("norm-q8 has no peer arms")
        };
        let rows = shape.rows();
        let o = &mut set.out;
        match arm {
            Arm::RmsNorm => launch::rms_norm(m, gpu, &set.x, &set.w, &mut o.z, rows, EPS),
            Arm::Quantize => {
                launch::quantize_q8_1(m, gpu, &set.x, &mut o.qs, &mut o.d, rows.elems())
            }
            Arm::Chain => chain(m, gpu, &set.x, &set.w, o, rows),
            Arm::Fused => fused(m, gpu, &set.x, &set.w, o, rows),
            Arm::Rebatched => {
                if set.batches.is_none() {
                    set.batches = Some(Self::batches(gpu, shape, &set.x)?);
                }
                for b in set.batches.as_mut().expect("made above") {
                    let rows = Rows {
                        nrows: b.rows,
                        ncols: shape.ncols,
                    };
                    fused(m, gpu, &b.x, &set.w, &mut b.out, rows)?;
                }
                Ok(())
            }
        }
    }

    fn poison(&self, gpu: &Gpu, arm: Arm, set: &mut Set) -> Result<(), Error> {
        match (arm, set.batches.as_mut()) {
            (Arm::Rebatched, Some(batches)) => {
                batches.iter_mut().try_for_each(|b| b.out.poison(gpu))
            }
            _ => set.out.poison(gpu),
        }
    }

    fn download(&self, gpu: &Gpu, arm: Arm, set: &Set) -> Result<Vec<Output>, Error> {
        let o = &set.out;
        match arm {
            Arm::RmsNorm => Ok(vec![Output::f32(gpu, "z", &o.z)?]),
            Arm::Quantize => Ok(vec![
                Output::i8(gpu, "qs", &o.qs)?,
                Output::f32(gpu, "d", &o.d)?,
            ]),
            Arm::Chain | Arm::Fused => Ok(vec![
                Output::f32(gpu, "z", &o.z)?,
                Output::i8(gpu, "qs", &o.qs)?,
                Output::f32(gpu, "d", &o.d)?,
            ]),
            Arm::Rebatched => rebatched_outputs(gpu, set),
        }
    }

    fn oracle(
        &self,
        shape: Shape,
        inputs: &Inputs,
        arm: Arm,
        _: Side,
        outputs: &[Output],
    ) -> Vec<Check> {
        let get = |name| crate::harness::output::named(outputs, name);
        let mut checks = Vec::new();
        if let Some(z) = get("z").filter(|_| arm != Arm::Rebatched) {
            // The f64 norm is defined on finite rows; rows holding NaN or an infinity follow the
            // builds' shared rule, which the other checks hold them to.
            let n = shape.ncols;
            let finite: Vec<usize> = (0..shape.nrows)
                .filter(|r| inputs.x[r * n..(r + 1) * n].iter().all(|v| v.is_finite()))
                .collect();
            let pick = |v: &[f32]| -> Vec<f32> {
                finite
                    .iter()
                    .flat_map(|r| v[r * n..(r + 1) * n].iter().copied())
                    .collect()
            };
            let x = pick(&inputs.x);
            let z_ref = oracle::rms_norm_f64(&x, &inputs.w, n, EPS);
            let (v, worst) = compare::within_rel(&pick(z.as_f32()), &z_ref, oracle::Z_REL_TOL);
            checks.push(Check {
                name: format!(
                    "oracle {} z ~ f64 rms_norm, {} finite rows (rel {:.0e}; max {worst:.1e})",
                    arm.label(),
                    finite.len(),
                    oracle::Z_REL_TOL
                ),
                verdicts: vec![("z".into(), v)],
            });
        }
        let (Some(qs), Some(d)) = (get("qs"), get("d")) else {
            return checks;
        };
        if arm == Arm::Rebatched {
            return checks;
        }
        // Quantization is exact given its input: the GPU's own z, or x for quantize_q8_1.
        let source = match get("z") {
            Some(z) => z.as_f32(),
            None => &inputs.x,
        };
        let (qs_ref, d_ref) = oracle::quantize_q8_1(source);
        checks.push(Check {
            name: format!("oracle {} q8_1 == definition", arm.label()),
            verdicts: vec![
                ("qs".into(), compare::identical(qs.as_i8(), &qs_ref)),
                ("d".into(), compare::identical(d.as_f32(), &d_ref)),
            ],
        });
        checks
    }

    fn summarize(
        &self,
        timings: &[crate::harness::CaseTiming<Self>],
        out: &mut crate::harness::run::Report<'_>,
    ) -> usize {
        summary::summary(timings, out)
    }

    fn chart(run: &Run) -> Result<Figure, String> {
        Ok(chart::figure(run))
    }

    fn refusals(&self, gpu: &Gpu, rust: &Module) -> Result<Vec<String>, Error> {
        refusals::problems(gpu, rust)
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

/// The rebatched launches' outputs, put back in the case's row order (rows a batch holds as
/// padding are dropped).
fn rebatched_outputs(gpu: &Gpu, set: &Set) -> Result<Vec<Output>, Error> {
    let n = set.x.len();
    let (mut z, mut qs, mut d) = (Vec::new(), Vec::new(), Vec::new());
    for b in set.batches.iter().flatten() {
        let keep = (b.rows * set.ncols).min(n - b.first * set.ncols);
        z.extend_from_slice(&gpu.download(&b.out.z)?[..keep]);
        qs.extend_from_slice(&gpu.download(&b.out.qs)?[..keep]);
        d.extend_from_slice(&gpu.download(&b.out.d)?[..keep / 32]);
    }
    Ok(vec![
        Output::from_f32("z", z),
        Output::from_i8("qs", qs),
        Output::from_f32("d", d),
    ])
}

mod chart;
pub mod inputs;
pub mod oracle;
mod refusals;
mod summary;
