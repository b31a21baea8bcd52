//! The gemv gate: the GEMV family's four weight formats (raw ggml Q8_0, Q8_0 repacked into
//! planes, FP8 e4m3 with a per-tensor scale, FP8 e4m3 with a block-128 scale grid) against a
//! q8_1 activation of m rows, Rust against .cu, with cuBLAS peers on the same shapes.
//!
//! Decode reads every weight byte once per token, so an m=1 GEMV's speed is the HBM bandwidth
//! it reaches; the timings rotate whole weight sets (each format's weights, the grid with its
//! plane) past twice the L2, as a model's layers do between two reads of the same projection.

use crate::families::norm_q8::oracle;
use crate::harness::chart::{Figure, Run};
use crate::harness::cli::{parse_pair, shape_refusal};
use crate::harness::compare::{geomean, within_scaled};
use crate::harness::output::{Output, POISON_F32};
use crate::harness::run::Report;
use crate::harness::{
    ArmSpec, CaseTiming, Check, Family, Footprint, Group, Label, On, Runs, Side, TimingMode,
    ValueClass,
};
use crate::peers::{Blas, BlasLt, FP8_COLUMNS};
use crate::report::{yes_no, Table};
use crate::rng;
use half::{bf16, f16};
use host::gemv::{self as launch, Activation};
use host::{CudaSlice, Error, Gpu};
use kernels_gpu::abi::F16;
use kernels_gpu::gemv::{grid_cols, grid_rows, BlockQ8_0, Format, E4M3_F16, QK};
use serde::Serialize;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::fmt;

/// The most activation rows a kernel takes; every case carries this many.
const M_MAX: usize = 8;
/// The activation rows the kernels take, every m from 1 to [`M_MAX`]: every one is checked,
/// `--batches` picks those timed.
const BATCHES: [usize; M_MAX] = [1, 2, 3, 4, 5, 6, 7, 8];
const FORMATS: [Format; 4] = [
    Format::Q8_0,
    Format::Q8_0Planar,
    Format::E4m3,
    Format::E4m3B128,
];
/// The per-tensor scale of the e4m3 weights.
const E4M3_SCALE: f32 = 1.0 / 64.0;
/// Bound of the family's kernels against the f64 oracle, relative to sum |w x| of the row.
const REL_BOUND: f64 = 1e-5;
/// Bound of the cuBLAS bf16 peer (bf16 products are exact; f32 accumulation in its own order).
const BF16_BOUND: f64 = 1e-4;
/// Bound of the cuBLASLt FP8 peer, whose accumulation is narrower than f32: up to 6.8e-4 on
/// outlier activations in the first H200 run (perf-notes, GEMV r1), 1e-4 on uniform ones.
const FP8_BOUND: f64 = 2e-3;

/// One projection's shape; the name is the sheet's (`q_proj`), empty for a custom shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub name: &'static str,
    pub in_f: usize,
    pub out_f: usize,
}

/// What one call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// One launch of a format's kernel over `m` activation rows.
    Gemv(Format, usize),
    /// `m` launches of the format's m=1 kernel, one per activation row (checked, not timed).
    ByRows(Format, usize),
    /// cuBLAS bf16 GEMM (cublasGemmEx) of the e4m3 weights in bf16 against activation rows
    /// `0..m` as `m` columns.
    Bf16(usize),
    /// cuBLASLt e4m3 matmul of the e4m3 weights against activation rows `0..m` in e4m3, as the
    /// fewest columns `N >= m` the library takes (those past `m` zero).
    Fp8(usize),
}

impl Arm {
    /// The activation rows the arm multiplies.
    fn m(self) -> usize {
        match self {
            Arm::Gemv(_, m) | Arm::ByRows(_, m) | Arm::Bf16(m) | Arm::Fp8(m) => m,
        }
    }
}

impl Label for Arm {
    fn label(&self) -> String {
        match *self {
            Arm::Gemv(f, m) => format!("{} m={m}", format_label(f)),
            Arm::ByRows(f, m) => format!("{} m={m} row by row", format_label(f)),
            Arm::Bf16(m) => format!("cublas bf16 gemm m={m}"),
            Arm::Fp8(m) => format!("cublaslt e4m3 gemm m={m}"),
        }
    }

    fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::from_iter([("m".to_string(), self.m().into())])
    }
}

/// A format's f64 reference: `y`, and `sum |w x|` (the scale of its rounding error), per
/// activation row and weight row.
type Reference = (Vec<f64>, Vec<f64>);

/// One weight row's references against every activation row: `(row, y, sum |w x|)`.
type RowReference = (usize, Vec<f64>, Vec<f64>);

/// Host data of one case: weights in every format and an activation of `M_MAX` (8) rows.
pub struct Inputs {
    e4m3: Vec<u8>,
    grid: Vec<f32>,
    q8_0: Vec<BlockQ8_0>,
    x_qs: Vec<i8>,
    x_d: Vec<f32>,
    /// The planar repack of `q8_0`: quants and f16 scales.
    planar: (Vec<i8>, Vec<f16>),
    /// The peers' operands, derived once per case on first use (every buffer set and every peer
    /// oracle share them).
    peer: OnceCell<PeerInputs>,
    /// The f64 references of each format (in [`FORMATS`] order), made on first use:
    /// `(y, sum |w x|)` per activation row and weight row.
    refs: RefCell<[Option<Reference>; FORMATS.len()]>,
}

/// Device buffers for the row-by-row arms: each activation row and each output row alone.
struct RowBufs {
    qs: CudaSlice<i8>,
    d: CudaSlice<f32>,
    y: CudaSlice<f32>,
}

/// Device buffers of one case.
pub struct Set {
    x_qs: CudaSlice<i8>,
    x_d: CudaSlice<f32>,
    w: Weights,
    y: CudaSlice<f32>,
    rows: Option<Vec<RowBufs>>,
    peer: Option<PeerBufs>,
}

pub struct Gemv {
    peers: RefCell<Peers>,
    no_peers: bool,
    /// The m timed, ascending (`--batches`).
    batches: Vec<usize>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Skip the cuBLAS and cuBLASLt peer arms
    #[arg(long)]
    no_peers: bool,
    /// Activation rows m timed: a comma-separated list of m and ranges A-B, from 1 to 8 (every
    /// m is checked)
    // A leading `-` is a value, so that `-1` is refused as no m rather than as an unknown flag.
    #[arg(
        long,
        value_name = "M,A-B,...",
        default_value = "1-8",
        allow_hyphen_values = true
    )]
    batches: String,
}

impl Family for Gemv {
    type Shape = Shape;
    type Arm = Arm;
    type Inputs = Inputs;
    type Set = Set;
    type Args = Args;

    const NAME: &'static str = "gemv";
    const ABOUT: &'static str =
        "GEMV of Q8_0, planar Q8_0, e4m3 and e4m3 block-128 weights, Rust against .cu and cuBLAS";
    const HELP: &'static str = "\
The GEMV family: y = W x for a q8_1 activation x of m rows (m from 1 to 8) and weights in
four formats: raw ggml Q8_0 (34-byte blocks), Q8_0 repacked into an i8 plane and an f16 scale
plane, FP8 e4m3 with one f32 scale per tensor, and FP8 e4m3 with an f32 scale per 128 x 128
tile. Rust build against the reference CUDA C++ build (NVRTC, default options).

Per case (a shape and a value class), on seeded inputs:
  rust == cu              every format and m, y byte-identical between the builds
  m rows == row by row    each format at m = 2 to 8: every row of the m-row launch equals the
                          m = 1 launch on that row, in each build (batch invariance)
  planar == raw           Q8_0 planar against raw Q8_0 at every m, in each build
  oracle                  every arm's y within 1e-5 x sum |w x| of a CPU f64 GEMV of the same
                          weights (f16 scales through the half crate, e4m3 through the shared
                          256-entry table) and the same activation; the peers at every m, cuBLAS
                          bf16 within 1e-4 and cuBLASLt FP8 within 2e-3 x sum |w x| of an f64
                          GEMV of their own operands
  all written             outputs are poisoned (NaN) before every call; none may remain

Shapes (--shapes): 27b (q_proj 5120->12288, k/v 5120->1024, o 6144->5120, gate/up
5120->17408, down 17408->5120, square 5120->5120; the default), 1p7b, or INxOUT (in_f a
multiple of 32).
Value classes: uniform (weights of every finite code, activation uniform in [-4, 4));
zeros (a sixteenth of the weights and of the activation exactly 0); outliers (four activation
values per row a thousand times larger, so most of their blocks quantize to 0); padding
(activation rows 0 and 4 all zeros, so every timed m reads a padding row).

Timings (skipped with --no-timing): each format at every m of --batches (default 1-8) in
both builds, and at the same m the peers: cuBLAS bf16 (cublasGemmEx, n = m activation columns)
and the cuBLASLt e4m3 x e4m3 GEMM at the fewest columns N >= m it takes. For N the gate tries
m, m + 1, ... up to 16 on each shape's first upload and keeps the first the library runs; the
columns past m are zeros, and the tables and JSONL rows give N. Every m is an arm of its own,
timed separately even where two m run the same N. The row-by-row arms are checked, not timed.
Arms are interleaved per round, DRAM-cold: graphs of calls rotating through whole weight sets
(every format's weights, the grid with its plane) past twice the L2. Bytes per call: weights +
activation + outputs (cuBLAS bf16: 2 x weights + m x (2 in_f + 4 out_f); cuBLASLt: weights +
N x (in_f + 4 out_f)).
Reported per case: us, GB/s and % of the read-stream ceiling per arm, Rust/.cu. Then, at
m = 1, the seed's table (e4m3_us, blk_us, q8_0_us, ratio = q8_0/e4m3, ratio_blk = q8_0/blk,
blk/e4m3 = t_e4m3/t_blk, blk GB/s), geomeans against the 34/32 byte line, the peers, and the
performance targets. Then every timed m: per case and arm (each format, Rust build, and both
peers) us and GB/s at each m, and GB/s at m as a % of the same arm's at m = 1; each format's
slowest against both peers per uniform shape and m; and the batch targets, each met or not
met with its numbers: every format's GB/s at m = 8 within 10% of its m = 1 on the four
largest uniform shapes, every format faster than both peers at every m shape by shape, and
Rust/.cu geomean <= 1.00 at every m. Targets are reported, never part of the exit status.
Peers that cannot run (no library, a shape or m the library refuses) are skipped with one line.

Exit status: 0 all checks passed, 1 a check failed, 2 the gate could not run.";

    fn new(args: &Args) -> Result<Self, String> {
        Ok(Gemv {
            peers: RefCell::default(),
            no_peers: args.no_peers,
            batches: parse_batches(&args.batches)?,
        })
    }

    fn default_shapes(&self) -> Vec<Shape> {
        sheet(&SHEET_27B)
    }

    fn parse_shapes(&self, item: &str) -> Result<Vec<Shape>, String> {
        parse_shapes(item)
    }

    fn edge_shapes(&self) -> Vec<(Shape, &'static str)> {
        [
            (32, 1, "one block, one output row"),
            (160, 129, "ragged lanes, out_f past a block of rows"),
            (32, 129, "one block per row, 129 rows"),
            (160, 1, "five blocks, one row"),
            (
                200 * 32,
                300,
                "in_f and out_f not multiples of 128 (partial grid tiles)",
            ),
            (
                4096 + 32,
                257,
                "in_f not a multiple of 256 (raw Q8_0 rows not 16-byte aligned)",
            ),
            (2048, 1024, "the 1.7B k/v shape"),
            (
                1056,
                40_000,
                "more row groups than resident warps at every m (raw Q8_0 and e4m3 warps take several), ragged trips",
            ),
        ]
        .map(|(in_f, out_f, why)| {
            (
                Shape {
                    name: "",
                    in_f,
                    out_f,
                },
                why,
            )
        })
        .to_vec()
    }

    fn classes(&self) -> &'static [ValueClass] {
        &[
            ValueClass::Uniform,
            ValueClass::Zeros,
            ValueClass::Outliers,
            ValueClass::Padding,
        ]
    }

    fn footprint(&self, shape: Shape) -> Footprint {
        let (in_f, out_f) = (shape.in_f, shape.out_f);
        let n = in_f * out_f;
        let q8 = n / 32 * 34;
        let grid = grid_rows(out_f as u32) as usize * grid_cols(in_f as u32) as usize * 4;
        // bf16 weights and activation rows, each m's e4m3 activation, c and the output.
        let peers =
            2 * n + 2 * M_MAX * in_f + BATCHES.len() * FP8_COLUMNS * in_f + FP8_COLUMNS * 8 * out_f;
        let set = n + grid + 2 * q8 + M_MAX * (in_f * 2 + out_f * 4) + peers;
        // The f64 references (y and sum |w x|) of the four formats and of the peers.
        let refs = (4 * M_MAX + PEER_ROWS) * out_f * 16;
        Footprint {
            // Every format's weights and the f64 references, held at once.
            host_bytes: set + n * 8 + refs,
            set_bytes: set,
        }
    }

    fn timing(&self) -> TimingMode {
        TimingMode::Rotate
    }

    fn inputs(&self, shape: Shape, class: ValueClass, seed: u64) -> Inputs {
        inputs::make(shape, class, seed)
    }

    fn upload(&self, gpu: &Gpu, shape: Shape, inputs: &Inputs) -> Result<Set, Error> {
        let (qs, d) = &inputs.planar;
        let peers_on =
            !self.no_peers && shape.in_f.is_multiple_of(16) && shape.out_f.is_multiple_of(16);
        let peer = if peers_on {
            Some(peer_bufs(gpu, shape, inputs)?)
        } else {
            None
        };
        let mut set = Set {
            x_qs: gpu.upload(&inputs.x_qs)?,
            x_d: gpu.upload(&inputs.x_d)?,
            w: Weights {
                e4m3: gpu.upload(&inputs.e4m3)?,
                grid: gpu.upload(&inputs.grid)?,
                q8_0: gpu.upload(&launch::q8_0_bytes(&inputs.q8_0))?,
                wq: gpu.upload(qs)?,
                wd: gpu.upload(d)?,
            },
            y: gpu.alloc_poisoned(M_MAX * shape.out_f, POISON_F32)?,
            rows: None,
            peer,
        };
        self.probe_peers(gpu, shape, &mut set)?;
        Ok(set)
    }

    fn arms(&self, shape: Shape) -> Vec<ArmSpec<Arm>> {
        let (in_f, out_f) = (shape.in_f, shape.out_f);
        let n = in_f * out_f;
        let timed = |m| self.batches.contains(&m);
        let mut arms = Vec::new();
        for f in FORMATS {
            for m in BATCHES {
                arms.push(ArmSpec {
                    arm: Arm::Gemv(f, m),
                    runs: Runs::Builds,
                    timed: timed(m),
                    bytes: call_bytes(f, in_f, out_f, m),
                });
                if m > 1 {
                    arms.push(ArmSpec {
                        arm: Arm::ByRows(f, m),
                        runs: Runs::Builds,
                        timed: false,
                        bytes: m * call_bytes(f, in_f, out_f, 1),
                    });
                }
            }
        }
        for arm in self.peer_arms(shape) {
            let columns = self
                .peer_columns(shape, arm)
                .expect("a peer that ran has its columns");
            let bytes = match arm {
                Arm::Bf16(m) => 2 * n + m * (2 * in_f + 4 * out_f),
                _ => n + columns * (in_f + 4 * out_f),
            };
            arms.push(ArmSpec {
                arm,
                runs: Runs::Peer,
                timed: timed(arm.m()),
                bytes,
            });
        }
        arms
    }

    fn groups(&self, _: Shape) -> Vec<Group<Arm>> {
        let mut groups = Vec::new();
        for f in FORMATS {
            for m in BATCHES.into_iter().skip(1) {
                groups.push(Group {
                    name: format!("{} m={m} rows == m=1 launches", format_label(f)),
                    arms: vec![Arm::Gemv(f, m), Arm::ByRows(f, m)],
                });
            }
        }
        for m in BATCHES {
            groups.push(Group {
                name: format!("q8_0 planar == raw, m={m}"),
                arms: vec![Arm::Gemv(Format::Q8_0, m), Arm::Gemv(Format::Q8_0Planar, m)],
            });
        }
        groups
    }

    fn enqueue(
        &self,
        gpu: &Gpu,
        on: On<'_>,
        shape: Shape,
        arm: Arm,
        set: &mut Set,
    ) -> Result<(), Error> {
        let (in_f, out_f) = (shape.in_f, shape.out_f);
        match (arm, on) {
            (Arm::Gemv(f, m), On::Build(module)) => {
                let x = Activation {
                    qs: &set.x_qs,
                    d: &set.x_d,
                };
                let s = launch::Shape { m, in_f, out_f };
                run_format(module, gpu, f, &set.w, x, &mut set.y, s)
            }
            (Arm::ByRows(f, m), On::Build(module)) => {
                if set.rows.is_none() {
                    set.rows = Some(row_bufs(gpu, shape, set)?);
                }
                let w = &set.w;
                for row in set.rows.as_mut().expect("made above").iter_mut().take(m) {
                    let x = Activation {
                        qs: &row.qs,
                        d: &row.d,
                    };
                    let s = launch::Shape { m: 1, in_f, out_f };
                    run_format(module, gpu, f, w, x, &mut row.y, s)?;
                }
                Ok(())
            }
            (Arm::Bf16(_) | Arm::Fp8(_), On::Peer) => {
                run_peer(&mut self.peers.borrow_mut(), gpu, shape, arm, set)
            }
            _ => unreachable!("{arm:?} does not run there"),
        }
    }

    fn poison(&self, gpu: &Gpu, arm: Arm, set: &mut Set) -> Result<(), Error> {
        match arm {
            Arm::Gemv(..) => gpu.poison(&mut set.y, POISON_F32),
            Arm::ByRows(..) => set
                .rows
                .iter_mut()
                .flatten()
                .try_for_each(|r| gpu.poison(&mut r.y, POISON_F32)),
            Arm::Bf16(_) | Arm::Fp8(_) => {
                let p = set
                    .peer
                    .as_mut()
                    .expect("peer buffers exist where peers run");
                gpu.poison(&mut p.y, POISON_F32)
            }
        }
    }

    fn download(&self, gpu: &Gpu, arm: Arm, set: &Set) -> Result<Vec<Output>, Error> {
        let out_f = set.y.len() / M_MAX;
        let y = match arm {
            Arm::Gemv(_, m) => gpu.download(&set.y)?[..m * out_f].to_vec(),
            Arm::ByRows(_, m) => {
                let mut y = Vec::with_capacity(m * out_f);
                for row in set.rows.iter().flatten().take(m) {
                    y.extend(gpu.download(&row.y)?);
                }
                y
            }
            Arm::Bf16(m) | Arm::Fp8(m) => {
                let p = set
                    .peer
                    .as_ref()
                    .expect("peer buffers exist where peers run");
                gpu.download(&p.y)?[..m * out_f].to_vec()
            }
        };
        Ok(vec![Output::from_f32("y", y)])
    }

    fn oracle(
        &self,
        shape: Shape,
        inputs: &Inputs,
        arm: Arm,
        _: Side,
        outputs: &[Output],
    ) -> Vec<Check> {
        outputs
            .first()
            .map(|y| oracle_check(shape, inputs, arm, y.as_f32()))
            .into_iter()
            .collect()
    }

    fn summarize(&self, timings: &[CaseTiming<Self>], out: &mut Report<'_>) -> usize {
        if self.batches.contains(&1) {
            summary(timings, out);
        }
        every_m::summary(self, timings, out);
        0
    }

    fn chart(run: &Run) -> Result<Figure, String> {
        Ok(chart::figure(run))
    }
}

/// Device weights of every format.
struct Weights {
    e4m3: CudaSlice<u8>,
    grid: CudaSlice<f32>,
    q8_0: CudaSlice<u8>,
    wq: CudaSlice<i8>,
    wd: CudaSlice<f16>,
}

/// Bytes one GEMV call must move: the weights in `format` once, the `m` q8_1 activation rows
/// (a byte a value and a float a block) and the `m` output rows.
pub(crate) fn call_bytes(format: Format, in_f: usize, out_f: usize, m: usize) -> usize {
    let n = in_f * out_f;
    let weights = match format {
        Format::Q8_0 | Format::Q8_0Planar => n / 32 * 34,
        Format::E4m3 => n,
        Format::E4m3B128 => {
            n + 4 * grid_rows(out_f as u32) as usize * grid_cols(in_f as u32) as usize
        }
    };
    weights + m * (in_f + in_f / 8) + 4 * m * out_f
}

mod batches;
mod chart;
mod every_m;
mod inputs;
mod launch_arm;
mod peers;
mod reference;
mod shapes;
mod tables;

#[cfg(test)]
mod tests;

use batches::{batch_index, parse_batches, peer_rows, PEER_ROWS};
pub(crate) use inputs::{finite_e4m3, q8_0_scale, tile_scale};
use launch_arm::{row_bufs, run_format};
use peers::{peer_bufs, peer_inputs, peer_reference, run_peer, PeerBufs, PeerInputs, Peers};
use reference::{activation_rows, gemv_f64, oracle_check};
use shapes::{format_label, parse_shapes, sheet, SHEET_27B};
use tables::summary;
