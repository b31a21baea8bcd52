//! The gemv-e4m3 gate: the GEMV family's four weight formats (raw ggml Q8_0, Q8_0 repacked into
//! planes, FP8 e4m3 with a per-tensor scale, FP8 e4m3 with a block-128 scale grid) against a
//! q8_1 activation of m rows, Rust against .cu, with cuBLAS peers on the same shapes.
//!
//! Decode reads every weight byte once per token, so an m=1 GEMV's speed is the HBM bandwidth
//! it reaches; the timings rotate whole weight sets (each format's weights, the grid with its
//! plane) past twice the L2, as a model's layers do between two reads of the same projection.

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
use crate::{oracle, rng};
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
const BATCHES: [usize; 4] = [1, 2, 4, 8];
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

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.name.is_empty() {
            write!(f, "{} ", self.name)?;
        }
        write!(f, "{}->{}", self.in_f, self.out_f)
    }
}

/// The seed's shape sheets: the projections of a 27B and of a 1.7B model (in_f -> out_f).
const SHEET_27B: [(&str, usize, usize); 6] = [
    ("q_proj", 5120, 12288),
    ("k/v_proj", 5120, 1024),
    ("o_proj", 6144, 5120),
    ("gate/up_proj", 5120, 17408),
    ("down_proj", 17408, 5120),
    ("square-ref", 5120, 5120),
];
const SHEET_1P7B: [(&str, usize, usize); 5] = [
    ("q_proj", 2048, 2048),
    ("k/v_proj", 2048, 1024),
    ("o_proj", 2048, 2048),
    ("gate/up_proj", 2048, 6144),
    ("down_proj", 6144, 2048),
];

fn sheet(rows: &[(&'static str, usize, usize)]) -> Vec<Shape> {
    rows.iter()
        .map(|&(name, in_f, out_f)| Shape { name, in_f, out_f })
        .collect()
}

/// `27b`, `1p7b`, or `INxOUT` (in_f a multiple of 32, both within the kernels' i32 indexing).
fn parse_shapes(item: &str) -> Result<Vec<Shape>, String> {
    match item {
        "27b" => return Ok(sheet(&SHEET_27B)),
        "1p7b" => return Ok(sheet(&SHEET_1P7B)),
        _ => {}
    }
    let (in_f, out_f) =
        parse_pair(item, ("IN", "OUT")).map_err(|e| format!("{e} (nor 27b or 1p7b)"))?;
    let shape = launch::Shape {
        m: M_MAX,
        in_f,
        out_f,
    };
    let x = launch::ActivationLens {
        qs: M_MAX * in_f,
        d: M_MAX * in_f / QK as usize,
    };
    launch::q8_0_launch(shape, out_f * (in_f / 32) * 34, x, M_MAX * out_f)
        .map_err(shape_refusal)?;
    host::check::product_i32("gemv", "in_f x out_f", &[in_f, out_f]).map_err(shape_refusal)?;
    Ok(vec![Shape {
        name: "",
        in_f,
        out_f,
    }])
}

fn format_label(f: Format) -> &'static str {
    match f {
        Format::Q8_0 => "q8_0",
        Format::Q8_0Planar => "q8_0 planar",
        Format::E4m3 => "e4m3",
        Format::E4m3B128 => "e4m3 b128",
    }
}

/// What one call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// One launch of a format's kernel over `m` activation rows.
    Gemv(Format, usize),
    /// `m` launches of the format's m=1 kernel, one per activation row (checked, not timed).
    ByRows(Format, usize),
    /// cuBLAS bf16 GEMV (cublasGemmEx) of the e4m3 weights in bf16 against activation row 0.
    Bf16,
    /// cuBLASLt e4m3 matmul of the e4m3 weights against activation row 0 in e4m3, N padded.
    Fp8,
}

impl Label for Arm {
    fn label(&self) -> String {
        match *self {
            Arm::Gemv(f, m) => format!("{} m={m}", format_label(f)),
            Arm::ByRows(f, m) => format!("{} m={m} row by row", format_label(f)),
            Arm::Bf16 => "cublas bf16 gemv".into(),
            Arm::Fp8 => "cublaslt e4m3 gemm".into(),
        }
    }
}

/// A format's f64 reference: `y`, and `sum |w x|` (the scale of its rounding error), per
/// activation row and weight row.
type Reference = (Vec<f64>, Vec<f64>);

/// One weight row's references against every activation row: `(row, y, sum |w x|)`.
type RowReference = (usize, [f64; M_MAX], [f64; M_MAX]);

/// Host data of one case: weights in every format and an activation of `M_MAX` (8) rows.
pub struct Inputs {
    e4m3: Vec<u8>,
    grid: Vec<f32>,
    q8_0: Vec<BlockQ8_0>,
    x_qs: Vec<i8>,
    x_d: Vec<f32>,
    /// The planar repack of `q8_0`: quants and f16 scales.
    planar: (Vec<i8>, Vec<f16>),
    /// The peers' operands, derived once per case on first use (every buffer set and both peer
    /// oracles share them).
    peer: OnceCell<PeerInputs>,
    /// The f64 references of each format (in [`FORMATS`] order), made on first use:
    /// `(y, sum |w x|)` per activation row and weight row.
    refs: RefCell<[Option<Reference>; 4]>,
}

/// The peers' operands, derived from the same weights and activation row 0.
struct PeerInputs {
    w_bf16: Vec<bf16>,
    x_bf16: Vec<bf16>,
    x_e4m3: Vec<u8>,
    b_scale: f32,
}

/// Device buffers for the row-by-row arms: each activation row and each output row alone.
struct RowBufs {
    qs: CudaSlice<i8>,
    d: CudaSlice<f32>,
    y: CudaSlice<f32>,
}

struct PeerBufs {
    w_bf16: CudaSlice<bf16>,
    x_bf16: CudaSlice<bf16>,
    x_e4m3: CudaSlice<u8>,
    a_scale: CudaSlice<f32>,
    b_scale: CudaSlice<f32>,
    c: CudaSlice<f32>,
    y: CudaSlice<f32>,
}

/// Device buffers of one case.
pub struct Set {
    x_qs: CudaSlice<i8>,
    x_d: CudaSlice<f32>,
    e4m3: CudaSlice<u8>,
    grid: CudaSlice<f32>,
    q8_0: CudaSlice<u8>,
    wq: CudaSlice<i8>,
    wd: CudaSlice<f16>,
    y: CudaSlice<f32>,
    rows: Option<Vec<RowBufs>>,
    peer: Option<PeerBufs>,
}

/// Which peers a shape can run, found on its first upload.
#[derive(Default)]
struct Peers {
    blas: Option<Blas>,
    lt: Option<BlasLt>,
    /// Per shape, the peer arms that ran (a peer that refuses a shape is skipped with a line).
    usable: HashMap<(usize, usize), Vec<Arm>>,
    said: Vec<String>,
}

pub struct Gemv {
    peers: RefCell<Peers>,
    no_peers: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Skip the cuBLAS and cuBLASLt peer arms
    #[arg(long)]
    no_peers: bool,
}

fn say_once(peers: &mut Peers, line: String) {
    if !peers.said.contains(&line) {
        println!("{line}");
        peers.said.push(line);
    }
}

impl Gemv {
    /// The peer arms of `shape` as its first upload found them.
    fn peer_arms(&self, shape: Shape) -> Vec<Arm> {
        self.peers
            .borrow()
            .usable
            .get(&(shape.in_f, shape.out_f))
            .cloned()
            .unwrap_or_default()
    }

    /// Opens the libraries once and runs each peer once on this set: what fails is skipped for
    /// the shape, with one line saying why.
    fn probe_peers(&self, gpu: &Gpu, shape: Shape, set: &mut Set) -> Result<(), Error> {
        let key = (shape.in_f, shape.out_f);
        if self.peers.borrow().usable.contains_key(&key) || set.peer.is_none() {
            return Ok(());
        }
        let mut peers = self.peers.borrow_mut();
        if peers.blas.is_none() {
            match Blas::new(gpu)? {
                Ok(b) => peers.blas = Some(b),
                Err(why) => say_once(
                    &mut peers,
                    format!("peer cublas bf16 gemv: skipped ({why})"),
                ),
            }
        }
        if peers.lt.is_none() {
            match BlasLt::new(gpu)? {
                Ok(l) => peers.lt = Some(l),
                Err(why) => say_once(
                    &mut peers,
                    format!("peer cublaslt e4m3 gemm: skipped ({why})"),
                ),
            }
        }
        let mut usable = Vec::new();
        for arm in [Arm::Bf16, Arm::Fp8] {
            let ran = run_peer(&mut peers, gpu, shape, arm, set).and_then(|_| gpu.synchronize());
            match ran {
                Ok(()) => usable.push(arm),
                Err(e) => say_once(
                    &mut peers,
                    format!("peer {}: skipped for {shape} ({e})", arm.label()),
                ),
            }
        }
        peers.usable.insert(key, usable);
        Ok(())
    }
}

/// Enqueues one peer call on `set`.
fn run_peer(
    peers: &mut Peers,
    gpu: &Gpu,
    shape: Shape,
    arm: Arm,
    set: &mut Set,
) -> Result<(), Error> {
    let p = set
        .peer
        .as_mut()
        .expect("peer buffers exist where peers run");
    let missing = |what| Error::Peer {
        library: what,
        during: "running a peer".into(),
        status: "the library is not loaded".into(),
    };
    match arm {
        Arm::Bf16 => peers
            .blas
            .as_ref()
            .ok_or_else(|| missing("cuBLAS"))?
            .gemv_bf16(gpu, &p.w_bf16, &p.x_bf16, &mut p.y, shape.in_f, shape.out_f),
        Arm::Fp8 => peers
            .lt
            .as_mut()
            .ok_or_else(|| missing("cuBLASLt"))?
            .matmul_e4m3(
                gpu,
                &set.e4m3,
                &p.x_e4m3,
                &p.a_scale,
                &p.b_scale,
                &p.c,
                &mut p.y,
                shape.in_f,
                shape.out_f,
            ),
        _ => unreachable!("not a peer arm"),
    }
}

/// The e4m3 code nearest to `v` (ties to the even code), saturating at +-448.
fn encode_e4m3(v: f32) -> u8 {
    let sign = if v.is_sign_negative() { 0x80 } else { 0 };
    let a = v.abs();
    let mut best = 0u8;
    for code in 0u8..0x7F {
        let cv = f16::from_bits(E4M3_F16[code as usize].0).to_f32();
        let bv = f16::from_bits(E4M3_F16[best as usize].0).to_f32();
        let (dc, db) = ((cv - a).abs(), (bv - a).abs());
        if dc < db || (dc == db && code % 2 == 0) {
            best = code;
        }
    }
    best | sign
}

/// The host weights of a case, shared by the threads that decode them.
#[derive(Clone, Copy)]
struct HostWeights<'a> {
    e4m3: &'a [u8],
    grid: &'a [f32],
    q8_0: &'a [BlockQ8_0],
}

/// The f64 value of every weight of row `r` in `format`.
fn weight_row(w: HostWeights<'_>, format: Format, r: usize, in_f: usize) -> Vec<f64> {
    let row = &w.e4m3[r * in_f..(r + 1) * in_f];
    match format {
        Format::Q8_0 | Format::Q8_0Planar => {
            let nb = in_f / QK as usize;
            launch::q8_0_row_f64(&w.q8_0[r * nb..(r + 1) * nb])
        }
        Format::E4m3 => launch::e4m3_row_f64(row, E4M3_SCALE),
        Format::E4m3B128 => launch::e4m3_b128_row_f64(row, w.grid, r),
    }
}

/// `(y, sum |w x|)` of every activation row against every weight row, in f64, on every core.
fn reference(inputs: &Inputs, format: Format, shape: Shape) -> Reference {
    let (in_f, out_f) = (shape.in_f, shape.out_f);
    let nb = in_f / QK as usize;
    let x: Vec<Vec<f64>> = (0..M_MAX)
        .map(|i| {
            launch::q8_1_row_f64(
                &inputs.x_qs[i * in_f..(i + 1) * in_f],
                &inputs.x_d[i * nb..(i + 1) * nb],
            )
        })
        .collect();
    let weights = HostWeights {
        e4m3: &inputs.e4m3,
        grid: &inputs.grid,
        q8_0: &inputs.q8_0,
    };
    let mut y = vec![0.0; M_MAX * out_f];
    let mut mag = vec![0.0; M_MAX * out_f];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = out_f.div_ceil(threads);
    let results: Vec<Vec<RowReference>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..out_f)
            .step_by(chunk.max(1))
            .map(|first| {
                let x = &x;
                s.spawn(move || {
                    (first..(first + chunk).min(out_f))
                        .map(|r| {
                            let w = weight_row(weights, format, r, in_f);
                            let mut acc = [0.0; M_MAX];
                            let mut abs = [0.0; M_MAX];
                            for (i, xi) in x.iter().enumerate() {
                                for (wv, xv) in w.iter().zip(xi) {
                                    acc[i] += wv * xv;
                                    abs[i] += (wv * xv).abs();
                                }
                            }
                            (r, acc, abs)
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    for (r, acc, abs) in results.into_iter().flatten() {
        for i in 0..M_MAX {
            y[i * out_f + r] = acc[i];
            mag[i * out_f + r] = abs[i];
        }
    }
    (y, mag)
}

impl Family for Gemv {
    type Shape = Shape;
    type Arm = Arm;
    type Inputs = Inputs;
    type Set = Set;
    type Args = Args;

    const NAME: &'static str = "gemv-e4m3";
    const ABOUT: &'static str =
        "GEMV of Q8_0, planar Q8_0, e4m3 and e4m3 block-128 weights, Rust against .cu and cuBLAS";
    const HELP: &'static str = "\
The GEMV family: y = W x for a q8_1 activation x of m rows (m in 1, 2, 4, 8) and weights in
four formats: raw ggml Q8_0 (34-byte blocks), Q8_0 repacked into an i8 plane and an f16 scale
plane, FP8 e4m3 with one f32 scale per tensor, and FP8 e4m3 with an f32 scale per 128 x 128
tile. Rust build against the reference CUDA C++ build (NVRTC, default options).

Per case (a shape and a value class), on seeded inputs:
  rust == cu              every format and m, y byte-identical between the builds
  m rows == row by row    each format at m = 2, 4, 8: every row of the m-row launch equals the
                          m = 1 launch on that row, in each build (batch invariance)
  planar == raw           Q8_0 planar against raw Q8_0 at every m, in each build
  oracle                  every arm's y within 1e-5 x sum |w x| of a CPU f64 GEMV of the same
                          weights (f16 scales through the half crate, e4m3 through the shared
                          256-entry table) and the same activation; the cuBLAS bf16 peer within
                          1e-4 and the cuBLASLt FP8 peer within 2e-3 of theirs
  all written             outputs are poisoned (NaN) before every call; none may remain

Shapes (--shapes): 27b (q_proj 5120->12288, k/v 5120->1024, o 6144->5120, gate/up
5120->17408, down 17408->5120, square 5120->5120; the default), 1p7b, or INxOUT (in_f a
multiple of 32).
Value classes: uniform (weights of every finite code, activation uniform in [-4, 4));
zeros (a sixteenth of the weights and of the activation exactly 0); outliers (four activation
values per row a thousand times larger, so most of their blocks quantize to 0); padding
(activation rows 0 and 4 all zeros, so the timed m = 1 arms read a padding row).

Timings (skipped with --no-timing): the m = 1 arm of each format in both builds, and the peers
(cuBLAS bf16 GEMV through cublasGemmEx; cuBLASLt e4m3 x e4m3 GEMM with the activation padded to
16 columns), interleaved per round, DRAM-cold: graphs of calls rotating through whole weight
sets (every format's weights, the grid with its plane) past twice the L2. Reported per case:
us, GB/s and % of the read-stream ceiling per arm, Rust/.cu; then the seed's table
(e4m3_us, blk_us, q8_0_us, ratio = q8_0/e4m3, ratio_blk = q8_0/blk, blk/e4m3 = t_e4m3/t_blk,
blk GB/s), geomeans against the 34/32 byte line, the peers, and the performance targets.
Peers that cannot run (no library, a shape the library refuses) are skipped with one line.

Exit status: 0 all checks passed, 1 a check failed, 2 the gate could not run.";

    fn new(args: &Args) -> Result<Self, String> {
        Ok(Gemv {
            peers: RefCell::default(),
            no_peers: args.no_peers,
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
        let n = shape.in_f * shape.out_f;
        let q8 = n / 32 * 34;
        let grid =
            grid_rows(shape.out_f as u32) as usize * grid_cols(shape.in_f as u32) as usize * 4;
        let set = n
            + grid
            + 2 * q8
            + 2 * n
            + M_MAX * (shape.in_f * 2 + shape.out_f * 4)
            + FP8_COLUMNS * (shape.in_f + 8 * shape.out_f);
        Footprint {
            // Every format's weights and the f64 references, held at once.
            host_bytes: set + n * 8 + 4 * M_MAX * shape.out_f * 16,
            set_bytes: set,
        }
    }

    fn timing(&self) -> TimingMode {
        TimingMode::Rotate
    }

    fn inputs(&self, shape: Shape, class: ValueClass, seed: u64) -> Inputs {
        let (in_f, out_f) = (shape.in_f, shape.out_f);
        let n = in_f * out_f;
        let mut bytes = rng::SplitMix64::new(rng::case_seed(seed, &[1]));
        let mut pick = rng::SplitMix64::new(rng::case_seed(seed, &[2]));
        let zero = |pick: &mut rng::SplitMix64| {
            class == ValueClass::Zeros && pick.next_u64().is_multiple_of(16)
        };
        let mut e4m3 = Vec::with_capacity(n);
        while e4m3.len() < n {
            for b in bytes.next_u64().to_le_bytes() {
                // Every finite code; NaN codes (0x7F, 0xFF) get their own test.
                let b = if b & 0x7F == 0x7F { b & 0xB0 } else { b };
                e4m3.push(if zero(&mut pick) { 0 } else { b });
            }
        }
        e4m3.truncate(n);
        let mut g = rng::SplitMix64::new(rng::case_seed(seed, &[3]));
        let grid = (0..grid_rows(out_f as u32) as usize * grid_cols(in_f as u32) as usize)
            .map(|_| 2f32.powi(-6 + (g.next_u64() % 5) as i32))
            .collect();
        let q8_0: Vec<BlockQ8_0> = (0..n / QK as usize)
            .map(|_| {
                let r = bytes.next_u64();
                // d in [2^-10, 2^-6): f16 exponent field 5..=8, any mantissa.
                let d = F16((((5 + (r & 3)) << 10) | ((r >> 2) & 0x3FF)) as u16);
                let mut qs = [0i8; 32];
                for chunk in qs.chunks_mut(8) {
                    let v = bytes.next_u64().to_le_bytes();
                    for (q, b) in chunk.iter_mut().zip(v) {
                        *q = if zero(&mut pick) { 0 } else { b as i8 };
                    }
                }
                BlockQ8_0 { d, qs }
            })
            .collect();
        let mut x = rng::vec_f32(rng::case_seed(seed, &[4]), M_MAX * in_f, 4.0);
        for (i, row) in x.chunks_exact_mut(in_f).enumerate() {
            match class {
                ValueClass::Zeros => row.iter_mut().for_each(|v| {
                    if pick.next_u64().is_multiple_of(16) {
                        *v = 0.0
                    }
                }),
                ValueClass::Outliers => {
                    for _ in 0..4 {
                        row[pick.next_u64() as usize % in_f] *= 1000.0;
                    }
                }
                ValueClass::Padding if i % 4 == 0 => row.fill(0.0),
                _ => {}
            }
        }
        let (x_qs, x_d) = oracle::quantize_q8_1(&x);
        Inputs {
            planar: launch::q8_0_to_planar(&q8_0),
            e4m3,
            grid,
            q8_0,
            x_qs,
            x_d,
            peer: OnceCell::new(),
            refs: RefCell::default(),
        }
    }

    fn upload(&self, gpu: &Gpu, shape: Shape, inputs: &Inputs) -> Result<Set, Error> {
        let (qs, d) = &inputs.planar;
        let peers_on =
            !self.no_peers && shape.in_f.is_multiple_of(16) && shape.out_f.is_multiple_of(16);
        let peer = if peers_on {
            let p = inputs.peer.get_or_init(|| peer_inputs(inputs, shape));
            Some(PeerBufs {
                w_bf16: gpu.upload(&p.w_bf16)?,
                x_bf16: gpu.upload(&p.x_bf16)?,
                x_e4m3: gpu.upload(&p.x_e4m3)?,
                a_scale: gpu.upload(&[E4M3_SCALE])?,
                b_scale: gpu.upload(&[p.b_scale])?,
                c: gpu.alloc_poisoned(FP8_COLUMNS * shape.out_f, 0)?,
                y: gpu.alloc_poisoned(FP8_COLUMNS * shape.out_f, POISON_F32)?,
            })
        } else {
            None
        };
        let mut set = Set {
            x_qs: gpu.upload(&inputs.x_qs)?,
            x_d: gpu.upload(&inputs.x_d)?,
            e4m3: gpu.upload(&inputs.e4m3)?,
            grid: gpu.upload(&inputs.grid)?,
            q8_0: gpu.upload(&launch::q8_0_bytes(&inputs.q8_0))?,
            wq: gpu.upload(qs)?,
            wd: gpu.upload(d)?,
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
        let grid = grid_rows(out_f as u32) as usize * grid_cols(in_f as u32) as usize * 4;
        let act = |m: usize| m * (in_f + in_f / 8) + 4 * m * out_f;
        let weights = |f| match f {
            Format::Q8_0 | Format::Q8_0Planar => n / 32 * 34,
            Format::E4m3 => n,
            Format::E4m3B128 => n + grid,
        };
        let mut arms = Vec::new();
        for f in FORMATS {
            for m in BATCHES {
                arms.push(ArmSpec {
                    arm: Arm::Gemv(f, m),
                    runs: Runs::Builds,
                    timed: m == 1,
                    bytes: weights(f) + act(m),
                });
                if m > 1 {
                    arms.push(ArmSpec {
                        arm: Arm::ByRows(f, m),
                        runs: Runs::Builds,
                        timed: false,
                        bytes: m * (weights(f) + act(1)),
                    });
                }
            }
        }
        for arm in self.peer_arms(shape) {
            let bytes = match arm {
                Arm::Bf16 => 2 * n + 2 * in_f + 4 * out_f,
                _ => n + FP8_COLUMNS * (in_f + 4 * out_f),
            };
            arms.push(ArmSpec {
                arm,
                runs: Runs::Peer,
                timed: true,
                bytes,
            });
        }
        arms
    }

    fn groups(&self, _: Shape) -> Vec<Group<Arm>> {
        let mut groups = Vec::new();
        for f in FORMATS {
            for m in [2, 4, 8] {
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
                let w = Weights {
                    e4m3: &set.e4m3,
                    grid: &set.grid,
                    q8_0: &set.q8_0,
                    wq: &set.wq,
                    wd: &set.wd,
                };
                run_format(module, gpu, f, w, x, &mut set.y, s)
            }
            (Arm::ByRows(f, m), On::Build(module)) => {
                if set.rows.is_none() {
                    set.rows = Some(row_bufs(gpu, shape, set)?);
                }
                let w = Weights {
                    e4m3: &set.e4m3,
                    grid: &set.grid,
                    q8_0: &set.q8_0,
                    wq: &set.wq,
                    wd: &set.wd,
                };
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
            (Arm::Bf16 | Arm::Fp8, On::Peer) => {
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
            Arm::Bf16 | Arm::Fp8 => {
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
            Arm::Bf16 | Arm::Fp8 => {
                let p = set
                    .peer
                    .as_ref()
                    .expect("peer buffers exist where peers run");
                gpu.download(&p.y)?[..out_f].to_vec()
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
        let Some(y) = outputs.first() else {
            return Vec::new();
        };
        let out_f = shape.out_f;
        let (want, mag, bound, what) = match arm {
            Arm::Gemv(f, m) | Arm::ByRows(f, m) => {
                let k = FORMATS
                    .iter()
                    .position(|&g| g == f)
                    .expect("a format of the family");
                let mut refs = inputs.refs.borrow_mut();
                let (want, mag) = refs[k].get_or_insert_with(|| reference(inputs, f, shape));
                (
                    want[..m * out_f].to_vec(),
                    mag[..m * out_f].to_vec(),
                    REL_BOUND,
                    "f64 gemv",
                )
            }
            Arm::Bf16 | Arm::Fp8 => {
                let p = inputs.peer.get_or_init(|| peer_inputs(inputs, shape));
                let (want, mag, bound) = peer_reference(p, inputs, shape, arm);
                (want, mag, bound, "f64 gemv of its operands")
            }
        };
        let (v, worst) = within_scaled(y.as_f32(), &want, &mag, |_| bound);
        vec![Check {
            name: format!(
                "oracle {} y ~ {what} (err <= {bound:.0e} x sum|wx|; max {worst:.1e})",
                arm.label()
            ),
            verdicts: vec![("y".into(), v)],
        }]
    }

    fn summarize(&self, timings: &[CaseTiming<Self>], out: &mut Report<'_>) -> usize {
        summary(timings, out);
        0
    }
}

/// Device weights of every format, borrowed together.
#[derive(Clone, Copy)]
struct Weights<'a> {
    e4m3: &'a CudaSlice<u8>,
    grid: &'a CudaSlice<f32>,
    q8_0: &'a CudaSlice<u8>,
    wq: &'a CudaSlice<i8>,
    wd: &'a CudaSlice<f16>,
}

fn run_format(
    module: &host::Module,
    gpu: &Gpu,
    f: Format,
    w: Weights<'_>,
    x: Activation<'_>,
    y: &mut CudaSlice<f32>,
    s: launch::Shape,
) -> Result<(), Error> {
    match f {
        Format::Q8_0 => launch::gemv_q8_0(module, gpu, w.q8_0, x, y, s),
        Format::Q8_0Planar => launch::gemv_q8_0_planar(module, gpu, w.wq, w.wd, x, y, s),
        Format::E4m3 => launch::gemv_e4m3(module, gpu, w.e4m3, E4M3_SCALE, x, y, s),
        Format::E4m3B128 => launch::gemv_e4m3_b128(module, gpu, w.e4m3, w.grid, x, y, s),
    }
}

/// Each activation row in buffers of its own, and an output row for each.
fn row_bufs(gpu: &Gpu, shape: Shape, set: &Set) -> Result<Vec<RowBufs>, Error> {
    let (in_f, nb) = (shape.in_f, shape.in_f / QK as usize);
    let copy_err = |source| Error::Driver {
        during: "copying an activation row".into(),
        source,
    };
    (0..M_MAX)
        .map(|i| {
            let mut qs = gpu.alloc_poisoned::<i8>(in_f, 0)?;
            let mut d = gpu.alloc_poisoned::<f32>(nb, 0)?;
            gpu.stream()
                .memcpy_dtod(&set.x_qs.slice(i * in_f..(i + 1) * in_f), &mut qs)
                .map_err(copy_err)?;
            gpu.stream()
                .memcpy_dtod(&set.x_d.slice(i * nb..(i + 1) * nb), &mut d)
                .map_err(copy_err)?;
            Ok(RowBufs {
                qs,
                d,
                y: gpu.alloc_poisoned(shape.out_f, POISON_F32)?,
            })
        })
        .collect()
}

/// The peers' operands: the e4m3 weights in bf16 (exact), activation row 0 dequantized to bf16,
/// and the same row in e4m3 with a scale that maps its largest magnitude to 448.
fn peer_inputs(inputs: &Inputs, shape: Shape) -> PeerInputs {
    let in_f = shape.in_f;
    let nb = in_f / QK as usize;
    let w_bf16 = inputs
        .e4m3
        .iter()
        .map(|&b| bf16::from_f64(launch::e4m3_f64(b) * f64::from(E4M3_SCALE)))
        .collect();
    let x0 = launch::q8_1_row_f64(&inputs.x_qs[..in_f], &inputs.x_d[..nb]);
    let x_bf16 = x0.iter().map(|&v| bf16::from_f64(v)).collect();
    let amax = x0.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let b_scale = if amax > 0.0 {
        (amax / 448.0) as f32
    } else {
        1.0
    };
    let mut x_e4m3 = vec![0u8; FP8_COLUMNS * in_f];
    for (q, &v) in x_e4m3.iter_mut().zip(&x0) {
        *q = encode_e4m3((v / f64::from(b_scale)) as f32);
    }
    PeerInputs {
        w_bf16,
        x_bf16,
        x_e4m3,
        b_scale,
    }
}

/// The f64 reference of a peer on its own operands, and its bound.
fn peer_reference(
    p: &PeerInputs,
    inputs: &Inputs,
    shape: Shape,
    arm: Arm,
) -> (Vec<f64>, Vec<f64>, f64) {
    let in_f = shape.in_f;
    let x: Vec<f64> = match arm {
        Arm::Bf16 => p.x_bf16.iter().map(|v| v.to_f64()).collect(),
        _ => p.x_e4m3[..in_f]
            .iter()
            .map(|&b| launch::e4m3_f64(b) * f64::from(p.b_scale))
            .collect(),
    };
    let bound = if arm == Arm::Bf16 {
        BF16_BOUND
    } else {
        FP8_BOUND
    };
    let (mut y, mut mag) = (
        Vec::with_capacity(shape.out_f),
        Vec::with_capacity(shape.out_f),
    );
    for r in 0..shape.out_f {
        let w = launch::e4m3_row_f64(&inputs.e4m3[r * in_f..(r + 1) * in_f], E4M3_SCALE);
        y.push(w.iter().zip(&x).map(|(a, b)| a * b).sum());
        mag.push(w.iter().zip(&x).map(|(a, b)| (a * b).abs()).sum());
    }
    (y, mag, bound)
}

/// The seed's per-shape row, with the Rust build's times, and the .cu build's beside them.
#[derive(Serialize)]
struct SeedRow {
    case: String,
    shape: String,
    in_f: usize,
    out_f: usize,
    copies: usize,
    iters: usize,
    e4m3_us: f64,
    blk_us: f64,
    q8_0_us: f64,
    q8_0_planar_us: f64,
    ratio_e4m3: f64,
    ratio_blk: f64,
    blk_over_e4m3: f64,
    #[serde(rename = "blk_GBs")]
    blk_gbs: f64,
    grid_bytes: usize,
    cu_e4m3_us: f64,
    cu_blk_us: f64,
    cu_q8_0_us: f64,
    cu_q8_0_planar_us: f64,
    rust_over_cu_geomean: f64,
    min_pct_ceiling: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cublas_bf16_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cublaslt_e4m3_us: Option<f64>,
}

fn summary(timings: &[CaseTiming<Gemv>], out: &mut Report<'_>) {
    let ceiling = out.ceiling_gbps;
    let us =
        |t: &CaseTiming<Gemv>, arm, side| t.arm(arm).and_then(|a| a.on(side)).map(|s| s.median_us);
    let mut seed = Table::new(&[
        "case",
        "cp",
        "e4m3_us",
        "blk_us",
        "q8_0_us",
        "planar_us",
        "ratio",
        "ratio_blk",
        "blk/e4m3",
        "blk_GB/s",
        "rust/cu",
        "min %ceil",
    ]);
    let mut peers = Table::new(&[
        "case",
        "e4m3 GB/s",
        "bf16 GB/s",
        "e4m3 > bf16",
        "e4m3 us",
        "fp8 us",
        "e4m3 < fp8",
    ]);
    let mut rows: Vec<(usize, &CaseTiming<Gemv>, SeedRow)> = Vec::new();
    for t in timings {
        let rust = |f| us(t, Arm::Gemv(f, 1), Side::Rust).unwrap_or(f64::NAN);
        let cu = |f| us(t, Arm::Gemv(f, 1), Side::Cu).unwrap_or(f64::NAN);
        let (a, k, b, p) = (
            rust(Format::E4m3),
            rust(Format::E4m3B128),
            rust(Format::Q8_0),
            rust(Format::Q8_0Planar),
        );
        let blk_bytes = t
            .arm(Arm::Gemv(Format::E4m3B128, 1))
            .map_or(0, |a| a.spec.bytes);
        let grid_bytes =
            grid_rows(t.shape.out_f as u32) as usize * grid_cols(t.shape.in_f as u32) as usize * 4;
        let min_pct = t
            .arms
            .iter()
            .filter(|a| matches!(a.spec.arm, Arm::Gemv(..)))
            .filter_map(|a| a.gbps(Side::Rust))
            .fold(f64::INFINITY, f64::min)
            * 100.0
            / ceiling;
        let row = SeedRow {
            case: t.label(),
            shape: t.shape.name.to_string(),
            in_f: t.shape.in_f,
            out_f: t.shape.out_f,
            copies: t.copies,
            iters: t.calls,
            e4m3_us: a,
            blk_us: k,
            q8_0_us: b,
            q8_0_planar_us: p,
            ratio_e4m3: b / a,
            ratio_blk: b / k,
            blk_over_e4m3: a / k,
            blk_gbs: blk_bytes as f64 / k / 1e3,
            grid_bytes,
            cu_e4m3_us: cu(Format::E4m3),
            cu_blk_us: cu(Format::E4m3B128),
            cu_q8_0_us: cu(Format::Q8_0),
            cu_q8_0_planar_us: cu(Format::Q8_0Planar),
            rust_over_cu_geomean: geomean(FORMATS.iter().map(|&f| rust(f) / cu(f))),
            min_pct_ceiling: min_pct,
            cublas_bf16_us: us(t, Arm::Bf16, Side::Peer),
            cublaslt_e4m3_us: us(t, Arm::Fp8, Side::Peer),
        };
        seed.row(vec![
            t.label(),
            t.copies.to_string(),
            format!("{a:.2}"),
            format!("{k:.2}"),
            format!("{b:.2}"),
            format!("{p:.2}"),
            format!("{:.4}x", row.ratio_e4m3),
            format!("{:.4}x", row.ratio_blk),
            format!("{:.4}x", row.blk_over_e4m3),
            format!("{:.0}", row.blk_gbs),
            format!("{:.3}", row.rust_over_cu_geomean),
            format!("{min_pct:.0}%"),
        ]);
        let e4m3_gbps = t
            .arm(Arm::Gemv(Format::E4m3, 1))
            .and_then(|x| x.gbps(Side::Rust));
        let bf16_gbps = t.arm(Arm::Bf16).and_then(|x| x.gbps(Side::Peer));
        if bf16_gbps.is_some() || row.cublaslt_e4m3_us.is_some() {
            let fmt = |v: Option<f64>, p: usize| v.map_or("-".into(), |v| format!("{v:.p$}"));
            peers.row(vec![
                t.label(),
                fmt(e4m3_gbps, 0),
                fmt(bf16_gbps, 0),
                yes_no(e4m3_gbps.zip(bf16_gbps).map(|(e, b)| e > b)),
                format!("{a:.2}"),
                fmt(row.cublaslt_e4m3_us, 2),
                yes_no(row.cublaslt_e4m3_us.map(|f| a < f)),
            ]);
        }
        out.row("seed", &row);
        rows.push((t.shape.in_f * t.shape.out_f, t, row));
    }
    out.table("the seed's table (m = 1, Rust build; ratio = q8_0/e4m3, ratio_blk = q8_0/blk, blk/e4m3 = t_e4m3/t_blk)", seed);
    let uniform: Vec<&(usize, &CaseTiming<Gemv>, SeedRow)> = rows
        .iter()
        .filter(|(_, t, _)| t.class == ValueClass::Uniform)
        .collect();
    if !uniform.is_empty() {
        let g = |f: fn(&SeedRow) -> f64| geomean(uniform.iter().map(|(_, _, r)| f(r)));
        let (ge, gb) = (g(|r| r.ratio_e4m3), g(|r| r.ratio_blk));
        out.line(format!(
            "GEOMEAN ratio (q8_0/e4m3) over {} uniform shapes: {ge:.4}x => delta_pp {:+.2}",
            uniform.len(),
            100.0 * (ge - 1.0)
        ));
        out.line(format!(
            "GEOMEAN ratio_blk (q8_0/blk) over {} uniform shapes: {gb:.4}x => delta_pp {:+.2}",
            uniform.len(),
            100.0 * (gb - 1.0)
        ));
        out.line(
            "byte-stream ceiling: 34/32 = 1.0625x => +6.25pp if perfectly bandwidth-bound"
                .to_string(),
        );
    }
    if !peers.is_empty() {
        out.table("peers (m = 1)", peers);
    }
    out.table(
        "targets (benchmarks: reported, never gated)",
        targets(&uniform, ceiling),
    );
}

/// The bars on the four largest uniform shapes, and Rust/.cu on the others.
fn targets(uniform: &[&(usize, &CaseTiming<Gemv>, SeedRow)], ceiling: f64) -> Table {
    let mut by_size: Vec<_> = uniform.to_vec();
    by_size.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut t = Table::new(&["target", "measured", "holds"]);
    let largest: Vec<_> = by_size.iter().take(4).collect();
    if largest.is_empty() {
        return t;
    }
    let names: Vec<String> = largest.iter().map(|(_, c, _)| c.label()).collect();
    let min_pct = largest
        .iter()
        .map(|(_, _, r)| r.min_pct_ceiling)
        .fold(f64::INFINITY, f64::min);
    t.row(vec![
        format!(
            "every Rust m=1 arm >= 85% of the ceiling ({})",
            names.join(", ")
        ),
        format!("min {min_pct:.1}% of {ceiling:.0} GB/s"),
        yes_no(Some(min_pct >= 85.0)),
    ]);
    // What a pure read of each shape's e4m3 bytes reaches, in the same rounds: the bar's
    // ceiling is a 2 GiB stream, which pays a launch's fixed costs on a hundred times the bytes.
    let streams: Vec<f64> = largest
        .iter()
        .filter_map(|(_, c, _)| c.stream.map(|st| st.gbps()))
        .collect();
    if streams.len() == largest.len() {
        let (lo, hi) = streams.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), g| {
            (lo.min(*g), hi.max(*g))
        });
        let vs_stream = largest
            .iter()
            .zip(&streams)
            .flat_map(|((_, c, _), g)| {
                FORMATS.map(|f| {
                    c.arm(Arm::Gemv(f, 1))
                        .and_then(|a| a.gbps(Side::Rust))
                        .map_or(f64::NAN, |a| a / g)
                })
            })
            .fold(f64::INFINITY, f64::min);
        t.row(vec![
            "a read stream of each shape's e4m3 bytes, same rounds".into(),
            format!(
                "{:.1}% to {:.1}% of {ceiling:.0} GB/s",
                100.0 * lo / ceiling,
                100.0 * hi / ceiling
            ),
            "-".into(),
        ]);
        t.row(vec![
            "every Rust m=1 arm against that stream (GB/s over GB/s)".into(),
            format!("min {:.1}%", 100.0 * vs_stream),
            "-".into(),
        ]);
    }
    let rust = geomean(largest.iter().flat_map(|(_, c, _)| {
        FORMATS.map(|f| {
            c.arm(Arm::Gemv(f, 1))
                .and_then(|a| a.on(Side::Rust))
                .map_or(f64::NAN, |s| s.median_us)
        })
    }));
    let cu = geomean(largest.iter().flat_map(|(_, c, _)| {
        FORMATS.map(|f| {
            c.arm(Arm::Gemv(f, 1))
                .and_then(|a| a.on(Side::Cu))
                .map_or(f64::NAN, |s| s.median_us)
        })
    }));
    t.row(vec![
        "Rust geomean time <= .cu geomean".into(),
        format!("{rust:.2} us vs {cu:.2} us ({:.3})", rust / cu),
        yes_no(Some(rust <= cu)),
    ]);
    let blk = largest
        .iter()
        .map(|(_, _, r)| r.blk_over_e4m3)
        .fold(f64::INFINITY, f64::min);
    t.row(vec![
        "blk/e4m3 >= 0.98".into(),
        format!("min {blk:.4}"),
        yes_no(Some(blk >= 0.98)),
    ]);
    let beats: Vec<Option<bool>> = largest
        .iter()
        .map(|(_, c, r)| {
            let e = c
                .arm(Arm::Gemv(Format::E4m3, 1))
                .and_then(|a| a.gbps(Side::Rust))?;
            let b = c.arm(Arm::Bf16).and_then(|a| a.gbps(Side::Peer))?;
            let f = r.cublaslt_e4m3_us?;
            Some(e > b && r.e4m3_us < f)
        })
        .collect();
    t.row(vec![
        "Rust e4m3 more GB/s than cuBLAS bf16 and faster than cuBLASLt FP8".into(),
        format!(
            "{} of {} shapes",
            beats.iter().filter(|b| **b == Some(true)).count(),
            beats.len()
        ),
        yes_no(if beats.iter().any(Option::is_none) {
            None
        } else {
            Some(beats.iter().all(|b| *b == Some(true)))
        }),
    ]);
    for (_, c, _) in by_size.iter().skip(4) {
        // The arm with the largest ratio, named with its Rust time.
        let worst = FORMATS
            .iter()
            .filter_map(|&f| {
                let arm = Arm::Gemv(f, 1);
                let a = c.arm(arm)?;
                let (rust, cu) = (a.on(Side::Rust)?, a.on(Side::Cu)?);
                Some((rust.median_us / cu.median_us, arm, rust.median_us))
            })
            .max_by(|a, b| a.0.total_cmp(&b.0));
        t.row(vec![
            format!("{}: worst Rust/.cu <= 1.03", c.label()),
            worst.map_or("-".into(), |(ratio, arm, us)| {
                format!("{ratio:.3} ({} {us:.2} us)", arm.label())
            }),
            yes_no(worst.map(|(ratio, ..)| ratio <= 1.03)),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sheets_and_custom_shapes_parse() {
        assert_eq!(parse_shapes("27b").unwrap().len(), 6);
        assert_eq!(parse_shapes("1p7b").unwrap().len(), 5);
        assert_eq!(parse_shapes("160x129").unwrap()[0].out_f, 129);
        assert!(parse_shapes("100x5")
            .unwrap_err()
            .contains("multiple of 32"));
        assert!(parse_shapes("65536x65536").is_err());
        assert!(parse_shapes("5120").is_err());
    }

    #[test]
    fn e4m3_encoding_is_the_nearest_code() {
        for code in 0u8..0x7F {
            let v = f16::from_bits(E4M3_F16[code as usize].0).to_f32();
            assert_eq!(encode_e4m3(v), code, "{v}");
            assert_eq!(encode_e4m3(-v), code | 0x80, "{v}");
        }
        assert_eq!(encode_e4m3(1e9), 0x7E);
        assert_eq!(encode_e4m3(0.0), 0);
    }
}
