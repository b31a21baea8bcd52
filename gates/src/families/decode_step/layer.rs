//! A step's layer: its sizes, its kernels in chain order, its inputs and buffers, and one
//! kernel's launch on them.
//!
//! The dense layer keeps q, k and v as one matrix of their concatenated rows, and gate and up as
//! another, in the engine's way of packing weights: the unmerged chain launches views of their
//! rows, the merged ones a single GEMV over q/k/v (its output in three parts, q, k and v, each
//! where the unmerged launches put it: [`Op::parts`]) and, as [`Fuse`] says, over gate and up (then
//! swiglu and the quantization in one launch) or the GLU entry on both (swiglu in its epilogue).

use super::{Layer, Shape};
use crate::families::gemv::{call_bytes, finite_e4m3, q8_0_scale, tile_scale};
use crate::harness::output::{Output, POISON_F32, POISON_I8};
use crate::rng::{self, SplitMix64};
use half::f16;
use host::gemv::{self, Activation, Parts};
use host::mla::{
    self, AbsorbShape, AttnBuffers, AttnShape, DecompressShape, FlashWorkspace, ServingTable,
    SlotIndices,
};
use host::norm_q8::{self, Rows};
use host::{CudaSlice, CudaView, DeviceOut, Error, Gpu, Module};
use kernels_gpu::gemv::{grid_cols, BlockQ8_0, Format, Q8_0_BLOCK_BYTES, QK, TILE};
use serde::Serialize;
use std::ops::Range;

const EPS: f32 = 1e-6;
/// The per-tensor scale of the e4m3 weights.
const E4M3_SCALE: f32 = 1.0 / 64.0;
/// The MLA attention's softmax scale (the mla gate's).
const MLA_SCALE: f32 = 1.0 / 23.323_808;

/// A layer's sizes: the dense layer's widths, or the MLA chain's geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Dims {
    Dense {
        hidden: usize,
        q: usize,
        kv: usize,
        attn: usize,
        ffn: usize,
    },
    Mla {
        nh: usize,
        kv_rank: usize,
        d_nope: usize,
        d_v: usize,
        n_slots: usize,
        pool: usize,
    },
}

impl Dims {
    /// The gate's sizes: a 27B model's dense layer, the seed's MLA geometry.
    pub fn of(layer: Layer) -> Dims {
        match layer {
            Layer::Mla => Dims::Mla {
                nh: 64,
                kv_rank: 512,
                d_nope: 256,
                d_v: 256,
                n_slots: 2048,
                pool: 32_768,
            },
            _ => Dims::Dense {
                hidden: 5120,
                q: 12_288,
                kv: 1024,
                attn: 6144,
                ffn: 17_408,
            },
        }
    }

    /// Small sizes for the GPU tests, each row count a multiple of the block-128 tile so that
    /// every projection's rows start a tile row of the scale grid.
    pub fn small(layer: Layer) -> Dims {
        match layer {
            Layer::Mla => Dims::Mla {
                nh: 16,
                kv_rank: 128,
                d_nope: 64,
                d_v: 64,
                n_slots: 100,
                pool: 300,
            },
            _ => Dims::Dense {
                hidden: 256,
                q: 512,
                kv: 128,
                attn: 384,
                ffn: 768,
            },
        }
    }
}

/// One kernel launch of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// rms_norm_zq8_f32 of the hidden state.
    Norm,
    Q,
    K,
    V,
    /// q, k and v in one GEMV over their concatenated rows.
    Qkv,
    /// quantize_q8_1 of the attention's output (an input here).
    QuantAttn,
    O,
    /// rms_norm_zq8_f32 of the o GEMV's output.
    Norm2,
    Gate,
    Up,
    /// gate and up in one GEMV (one activation row: its output is `g` then `u`).
    GateUp,
    /// swiglu of gate's and up's outputs.
    Swiglu,
    /// swiglu_q8_1 of the halves of the merged gate/up GEMV's output rows: swiglu and
    /// quantize_q8_1 in one launch.
    SwigluQ8,
    /// gate and up in one launch, swiglu in its epilogue (the GEMV's GLU entry).
    Glu,
    /// quantize_q8_1 of swiglu's output.
    QuantFfn,
    Down,
    Absorb,
    /// attn_flash and its combine.
    Attn,
    Decompress,
}

impl Op {
    pub fn label(self) -> &'static str {
        match self {
            Op::Norm => "rms_norm_zq8_f32",
            Op::Q => "q gemv",
            Op::K => "k gemv",
            Op::V => "v gemv",
            Op::Qkv => "qkv gemv",
            Op::QuantAttn => "quantize_q8_1 attn",
            Op::O => "o gemv",
            Op::Norm2 => "rms_norm_zq8_f32 2",
            Op::Gate => "gate gemv",
            Op::Up => "up gemv",
            Op::GateUp => "gate/up gemv",
            Op::Swiglu => "swiglu",
            Op::SwigluQ8 => "swiglu_q8_1 of gate/up",
            Op::Glu => "gate/up glu gemv",
            Op::QuantFfn => "quantize_q8_1 ffn",
            Op::Down => "down gemv",
            Op::Absorb => "absorb_q",
            Op::Attn => "attn_flash",
            Op::Decompress => "decompress_v",
        }
    }

    /// Whether the launch is a GEMV.
    pub fn is_gemv(self, shape: Shape) -> bool {
        self.gemv(shape.dims).is_some()
    }

    /// A GEMV's input width and rows of its matrix (`None` for the other kernels).
    fn gemv(self, dims: Dims) -> Option<(usize, Range<usize>)> {
        let Dims::Dense {
            hidden,
            q,
            kv,
            attn,
            ffn,
        } = dims
        else {
            return None;
        };
        Some(match self {
            Op::Q => (hidden, 0..q),
            Op::K => (hidden, q..q + kv),
            Op::V => (hidden, q + kv..q + 2 * kv),
            Op::Qkv => (hidden, 0..q + 2 * kv),
            Op::O => (attn, 0..hidden),
            Op::Gate => (hidden, 0..ffn),
            Op::Up => (hidden, ffn..2 * ffn),
            Op::GateUp | Op::Glu => (hidden, 0..2 * ffn),
            Op::Down => (ffn, 0..hidden),
            _ => return None,
        })
    }

    /// Where a GEMV's output rows go: the merged q/k/v GEMV's in three parts, q, k and v, each
    /// an `[m][rows]` matrix of its own as the unmerged launches write them; any other's whole.
    pub fn parts(self, dims: Dims) -> Parts {
        match (self, dims) {
            (Op::Qkv, Dims::Dense { q, kv, .. }) => Parts([q, kv, kv]),
            _ => Parts::whole(self.gemv(dims).map_or(0, |(_, rows)| rows.len())),
        }
    }

    /// Bytes the launch must move: each input read once, each output written once.
    pub fn bytes(self, shape: Shape) -> usize {
        let m = shape.m;
        let q8_1 = |n: usize| n + n / 8;
        match shape.dims {
            Dims::Dense {
                hidden, attn, ffn, ..
            } => {
                if let Some((in_f, rows)) = self.gemv(shape.dims) {
                    let format = shape.layer.format().expect("a dense layer");
                    // The GLU writes one output of its two rows' sums.
                    let glu = if self == Op::Glu { 4 * m * ffn } else { 0 };
                    return call_bytes(format, in_f, rows.len(), m) - glu;
                }
                match self {
                    Op::Norm | Op::Norm2 => 8 * m * hidden + 4 * hidden + m * q8_1(hidden),
                    Op::QuantAttn => 4 * m * attn + m * q8_1(attn),
                    Op::QuantFfn => 4 * m * ffn + m * q8_1(ffn),
                    Op::Swiglu => 12 * m * ffn,
                    Op::SwigluQ8 => 12 * m * ffn + m * q8_1(ffn),
                    _ => unreachable!("not a dense kernel"),
                }
            }
            Dims::Mla {
                nh,
                kv_rank,
                d_nope,
                d_v,
                n_slots,
                ..
            } => {
                let lat = 4 * m * nh * kv_rank;
                match self {
                    Op::Absorb => 4 * m * nh * d_nope + 4 * nh * kv_rank * d_nope + lat,
                    Op::Attn => lat + 4 * m * n_slots * (kv_rank + 1) + lat,
                    Op::Decompress => lat + 4 * nh * d_v * kv_rank + 4 * m * nh * d_v,
                    _ => unreachable!("not an MLA kernel"),
                }
            }
        }
    }
}

/// Which launches of the dense layer's step are merged into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fuse {
    /// Every projection its own GEMV, swiglu its own kernel.
    None,
    /// q/k/v as one GEMV over their concatenated rows, gate/up as another, and swiglu and the
    /// quantization of its output in one launch reading the halves of each gate/up row.
    Merged,
    /// q/k/v as one GEMV, gate, up and swiglu as one launch of the GLU entry, at every `m`.
    Glu,
}

impl Fuse {
    pub const ALL: [Fuse; 3] = [Fuse::None, Fuse::Merged, Fuse::Glu];

    /// The arm labels' word for it.
    pub fn label(self) -> &'static str {
        match self {
            Fuse::None => "",
            Fuse::Merged => " merged",
            Fuse::Glu => " glu",
        }
    }
}

/// The step's kernels in order, merged as `fuse` says.
pub fn chain(shape: Shape, fuse: Fuse) -> Vec<Op> {
    if shape.layer == Layer::Mla {
        return vec![Op::Absorb, Op::Attn, Op::Decompress];
    }
    let mut ops = vec![Op::Norm];
    ops.extend(if fuse == Fuse::None {
        vec![Op::Q, Op::K, Op::V]
    } else {
        vec![Op::Qkv]
    });
    ops.extend([Op::QuantAttn, Op::O, Op::Norm2]);
    ops.extend(match fuse {
        Fuse::None => vec![Op::Gate, Op::Up, Op::Swiglu, Op::QuantFfn],
        Fuse::Merged => vec![Op::GateUp, Op::SwigluQ8],
        Fuse::Glu => vec![Op::Glu, Op::QuantFfn],
    });
    ops.push(Op::Down);
    ops
}

/// The GEMVs of the step's chain alone, in order (none for MLA).
pub fn gemvs(shape: Shape, fuse: Fuse) -> Vec<Op> {
    chain(shape, fuse)
        .into_iter()
        .filter(|op| op.is_gemv(shape))
        .collect()
}

/// Device bytes of a case's buffers (and as much host memory to make them), with room for
/// the intermediate buffers and the peers'.
pub fn footprint(shape: Shape) -> usize {
    let kernels: usize = chain(shape, Fuse::None)
        .iter()
        .map(|op| op.bytes(shape))
        .sum();
    3 * kernels + super::peers::footprint(shape)
}

/// One dense matrix in its weight format, as the host makes it.
pub enum HostWeights {
    Q8_0(Vec<BlockQ8_0>),
    E4m3(Vec<u8>),
    E4m3B128(Vec<u8>, Vec<f32>),
}

/// A case's host inputs.
pub enum Inputs {
    Dense {
        x: Vec<f32>,
        attn: Vec<f32>,
        norm_w: Vec<f32>,
        norm2_w: Vec<f32>,
        /// q/k/v, o, gate/up, down.
        weights: [HostWeights; 4],
    },
    Mla {
        q_nope: Vec<f32>,
        w_kb: Vec<f32>,
        w_vb: Vec<f32>,
        cache: Vec<f32>,
        idx: Vec<i32>,
    },
}

impl Inputs {
    pub fn new(shape: Shape, seed: u64) -> Inputs {
        let m = shape.m;
        let vec = |part, n, scale| rng::vec_f32(rng::case_seed(seed, &[part]), n, scale);
        match shape.dims {
            Dims::Dense {
                hidden,
                q,
                kv,
                attn,
                ffn,
            } => {
                let format = shape.layer.format().expect("a dense layer");
                let w = |part, in_f, rows| {
                    host_weights(format, in_f, rows, rng::case_seed(seed, &[part]))
                };
                Inputs::Dense {
                    x: vec(1, m * hidden, 4.0),
                    attn: vec(2, m * attn, 4.0),
                    norm_w: vec(3, hidden, 1.0),
                    norm2_w: vec(4, hidden, 1.0),
                    weights: [
                        w(5, hidden, q + 2 * kv),
                        w(6, attn, hidden),
                        w(7, hidden, 2 * ffn),
                        w(8, ffn, hidden),
                    ],
                }
            }
            Dims::Mla {
                nh,
                kv_rank,
                d_nope,
                d_v,
                n_slots,
                pool,
            } => {
                let mut pick = SplitMix64::new(rng::case_seed(seed, &[9]));
                Inputs::Mla {
                    q_nope: vec(1, m * nh * d_nope, 1.0),
                    w_kb: vec(2, nh * kv_rank * d_nope, 0.05),
                    w_vb: vec(3, nh * d_v * kv_rank, 0.05),
                    cache: vec(4, pool * kv_rank, 1.0),
                    idx: (0..m * n_slots)
                        .map(|_| (pick.next_u64() % pool as u64) as i32)
                        .collect(),
                }
            }
        }
    }
}

/// `rows` rows of `in_f` random weights in `format`: every finite e4m3 code, Q8_0 blocks of any
/// quants with scales in `[2^-10, 2^-6)`, block-128 tile scales from `2^-6` to `2^-2`.
fn host_weights(format: Format, in_f: usize, rows: usize, seed: u64) -> HostWeights {
    let mut r = SplitMix64::new(seed);
    let n = in_f * rows;
    let mut bytes = |n: usize| -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend(r.next_u64().to_le_bytes().map(finite_e4m3));
        }
        v.truncate(n);
        v
    };
    match format {
        Format::Q8_0 | Format::Q8_0Planar => {
            let quants = bytes(n);
            let scales = bytes(2 * n / QK as usize);
            HostWeights::Q8_0(
                quants
                    .as_chunks::<{ QK as usize }>()
                    .0
                    .iter()
                    .zip(scales.as_chunks::<2>().0)
                    .map(|(q, s)| BlockQ8_0 {
                        d: q8_0_scale(u64::from(u16::from_le_bytes(*s))),
                        qs: q.map(|b| b as i8),
                    })
                    .collect(),
            )
        }
        Format::E4m3 => HostWeights::E4m3(bytes(n)),
        Format::E4m3B128 => {
            let grid = bytes(rows.div_ceil(TILE as usize) * in_f.div_ceil(TILE as usize))
                .into_iter()
                .map(|b| tile_scale(u64::from(b)))
                .collect();
            HostWeights::E4m3B128(bytes(n), grid)
        }
    }
}

/// One dense matrix on the device.
enum Weights {
    Q8_0(CudaSlice<u8>),
    Planar(CudaSlice<i8>, CudaSlice<f16>),
    E4m3(CudaSlice<u8>),
    E4m3B128(CudaSlice<u8>, CudaSlice<f32>),
}

impl Weights {
    fn upload(gpu: &Gpu, format: Format, host: &HostWeights) -> Result<Weights, Error> {
        Ok(match (format, host) {
            (Format::Q8_0, HostWeights::Q8_0(b)) => {
                Weights::Q8_0(gpu.upload(&gemv::q8_0_bytes(b))?)
            }
            (Format::Q8_0Planar, HostWeights::Q8_0(b)) => {
                let (qs, d) = gemv::q8_0_to_planar(b);
                Weights::Planar(gpu.upload(&qs)?, gpu.upload(&d)?)
            }
            (Format::E4m3, HostWeights::E4m3(w)) => Weights::E4m3(gpu.upload(w)?),
            (Format::E4m3B128, HostWeights::E4m3B128(w, g)) => {
                Weights::E4m3B128(gpu.upload(w)?, gpu.upload(g)?)
            }
            _ => unreachable!("the host weights are made in the case's format"),
        })
    }

    /// Views of rows `rows` of the matrix, `in_f` columns wide, in every plane its format has.
    fn rows(&self, in_f: usize, rows: Range<usize>) -> View<'_> {
        let blocks = in_f / QK as usize;
        let span = |per_row: usize| rows.start * per_row..rows.end * per_row;
        match self {
            Weights::Q8_0(w) => View::Q8_0(w.slice(span(blocks * Q8_0_BLOCK_BYTES as usize))),
            Weights::Planar(qs, d) => View::Planar(qs.slice(span(in_f)), d.slice(span(blocks))),
            Weights::E4m3(w) => View::E4m3(w.slice(span(in_f))),
            Weights::E4m3B128(w, grid) => {
                let (tile, cols) = (TILE as usize, grid_cols(in_f as u32) as usize);
                debug_assert!(rows.start.is_multiple_of(tile));
                let g = grid.slice(rows.start / tile * cols..rows.end.div_ceil(tile) * cols);
                View::E4m3B128(w.slice(span(in_f)), g)
            }
        }
    }

    /// `y = W[rows] x` for `m` activation rows of `in_f`, the rows a view of the matrix, the
    /// output rows in `parts` of `y`.
    #[allow(clippy::too_many_arguments)]
    fn gemv(
        &self,
        module: &Module,
        gpu: &Gpu,
        in_f: usize,
        rows: Range<usize>,
        parts: Parts,
        m: usize,
        x: Activation<'_>,
        y: DeviceOut<'_, f32>,
    ) -> Result<(), Error> {
        let shape = gemv::Shape {
            m,
            in_f,
            out_f: rows.len(),
        };
        let view = self.rows(in_f, rows);
        let w = match &view {
            View::Q8_0(w) => gemv::Weights::Q8_0(w),
            View::Planar(wq, wd) => gemv::Weights::Q8_0Planar(gemv::Planar { wq, wd }),
            View::E4m3(w) => gemv::Weights::E4m3(gemv::E4m3 {
                w,
                scale: E4M3_SCALE,
            }),
            View::E4m3B128(w, grid) => gemv::Weights::E4m3B128(gemv::E4m3B128 { w, grid }),
        };
        gemv::gemv_parts(module, gpu, w, x, y, shape, parts)
    }

    /// `y = swiglu(W[..ffn] x, W[ffn..] x)` by the GLU entry, the gate and up matrices views of
    /// the first and last `ffn` rows.
    #[allow(clippy::too_many_arguments)]
    fn glu(
        &self,
        module: &Module,
        gpu: &Gpu,
        in_f: usize,
        ffn: usize,
        m: usize,
        x: Activation<'_>,
        y: DeviceOut<'_, f32>,
    ) -> Result<(), Error> {
        let shape = gemv::Shape {
            m,
            in_f,
            out_f: ffn,
        };
        match (self.rows(in_f, 0..ffn), self.rows(in_f, ffn..2 * ffn)) {
            (View::Q8_0(g), View::Q8_0(u)) => gemv::gemv_q8_0_glu(module, gpu, &g, &u, x, y, shape),
            (View::Planar(gq, gd), View::Planar(uq, ud)) => {
                let gate = gemv::Planar { wq: &gq, wd: &gd };
                let up = gemv::Planar { wq: &uq, wd: &ud };
                gemv::gemv_q8_0_planar_glu(module, gpu, gate, up, x, y, shape)
            }
            (View::E4m3(g), View::E4m3(u)) => {
                let e4m3 = |w| gemv::E4m3 {
                    w,
                    scale: E4M3_SCALE,
                };
                gemv::gemv_e4m3_glu(module, gpu, e4m3(&g), e4m3(&u), x, y, shape)
            }
            (View::E4m3B128(gw, gg), View::E4m3B128(uw, ug)) => {
                let gate = gemv::E4m3B128 { w: &gw, grid: &gg };
                let up = gemv::E4m3B128 { w: &uw, grid: &ug };
                gemv::gemv_e4m3_b128_glu(module, gpu, gate, up, x, y, shape)
            }
            _ => unreachable!("both halves are views of one matrix"),
        }
    }
}

/// Rows of one dense matrix on the device, as views of its planes.
enum View<'a> {
    Q8_0(CudaView<'a, u8>),
    Planar(CudaView<'a, i8>, CudaView<'a, f16>),
    E4m3(CudaView<'a, u8>),
    E4m3B128(CudaView<'a, u8>, CudaView<'a, f32>),
}

/// A q8_1 activation's planes.
struct Q8 {
    qs: CudaSlice<i8>,
    d: CudaSlice<f32>,
}

impl Q8 {
    fn new(gpu: &Gpu, n: usize) -> Result<Q8, Error> {
        Ok(Q8 {
            qs: gpu.alloc_poisoned(n, POISON_I8)?,
            d: gpu.alloc_poisoned(n / QK as usize, POISON_F32)?,
        })
    }

    fn act(&self) -> Activation<'_> {
        Activation {
            qs: &self.qs,
            d: &self.d,
        }
    }

    /// rms_norm_zq8_f32 of the rows of `x` into `z` and these planes.
    fn norm(
        &mut self,
        module: &Module,
        gpu: &Gpu,
        x: &CudaSlice<f32>,
        w: &CudaSlice<f32>,
        z: &mut CudaSlice<f32>,
    ) -> Result<(), Error> {
        let rows = Rows {
            nrows: x.len() / w.len(),
            ncols: w.len(),
        };
        norm_q8::rms_norm_zq8_f32(module, gpu, x, w, z, &mut self.qs, &mut self.d, rows, EPS)
    }

    /// quantize_q8_1 of all of `x` into these planes.
    fn quantize(&mut self, module: &Module, gpu: &Gpu, x: &CudaSlice<f32>) -> Result<(), Error> {
        norm_q8::quantize_q8_1(module, gpu, x, &mut self.qs, &mut self.d, x.len())
    }

    fn poison(&mut self, gpu: &Gpu) -> Result<(), Error> {
        gpu.poison(&mut self.qs, POISON_I8)?;
        gpu.poison(&mut self.d, POISON_F32)
    }
}

/// The dense layer's device buffers.
pub struct Dense {
    x: CudaSlice<f32>,
    attn: CudaSlice<f32>,
    norm_w: CudaSlice<f32>,
    norm2_w: CudaSlice<f32>,
    w_qkv: Weights,
    w_o: Weights,
    w_gu: Weights,
    w_down: Weights,
    z: CudaSlice<f32>,
    xq: Q8,
    q: CudaSlice<f32>,
    k: CudaSlice<f32>,
    v: CudaSlice<f32>,
    qkv: CudaSlice<f32>,
    aq: Q8,
    o: CudaSlice<f32>,
    z2: CudaSlice<f32>,
    x2q: Q8,
    g: CudaSlice<f32>,
    u: CudaSlice<f32>,
    gu: CudaSlice<f32>,
    h: CudaSlice<f32>,
    hq: Q8,
    y: CudaSlice<f32>,
}

impl Dense {
    /// The output of GEMV `op`.
    fn gemv_out(&self, op: Op) -> &CudaSlice<f32> {
        match op {
            Op::Q => &self.q,
            Op::K => &self.k,
            Op::V => &self.v,
            Op::Qkv => &self.qkv,
            Op::O => &self.o,
            Op::Gate => &self.g,
            Op::Up => &self.u,
            Op::GateUp => &self.gu,
            Op::Glu => &self.h,
            Op::Down => &self.y,
            _ => unreachable!("not a GEMV"),
        }
    }
}

/// The MLA chain's device buffers.
pub struct Mla {
    q_nope: CudaSlice<f32>,
    w_kb: CudaSlice<f32>,
    w_vb: CudaSlice<f32>,
    cache: CudaSlice<f32>,
    q_pe: CudaSlice<f32>,
    idx: SlotIndices,
    q_lat: CudaSlice<f32>,
    o_lat: CudaSlice<f32>,
    out: CudaSlice<f32>,
    ws: FlashWorkspace,
}

pub enum Body {
    Dense(Box<Dense>),
    Mla(Box<Mla>),
}

impl Body {
    pub fn upload(gpu: &Gpu, shape: Shape, inputs: &Inputs) -> Result<Body, Error> {
        let m = shape.m;
        let out = |n| gpu.alloc_poisoned::<f32>(n, POISON_F32);
        Ok(match (shape.dims, inputs) {
            (
                Dims::Dense {
                    hidden,
                    q,
                    kv,
                    attn,
                    ffn,
                },
                Inputs::Dense {
                    x,
                    attn: a,
                    norm_w,
                    norm2_w,
                    weights,
                },
            ) => {
                let format = shape.layer.format().expect("a dense layer");
                let [w_qkv, w_o, w_gu, w_down] = weights;
                let w = |h| Weights::upload(gpu, format, h);
                Body::Dense(Box::new(Dense {
                    x: gpu.upload(x)?,
                    attn: gpu.upload(a)?,
                    norm_w: gpu.upload(norm_w)?,
                    norm2_w: gpu.upload(norm2_w)?,
                    w_qkv: w(w_qkv)?,
                    w_o: w(w_o)?,
                    w_gu: w(w_gu)?,
                    w_down: w(w_down)?,
                    z: out(m * hidden)?,
                    xq: Q8::new(gpu, m * hidden)?,
                    q: out(m * q)?,
                    k: out(m * kv)?,
                    v: out(m * kv)?,
                    qkv: out(m * (q + 2 * kv))?,
                    aq: Q8::new(gpu, m * attn)?,
                    o: out(m * hidden)?,
                    z2: out(m * hidden)?,
                    x2q: Q8::new(gpu, m * hidden)?,
                    g: out(m * ffn)?,
                    u: out(m * ffn)?,
                    gu: out(m * 2 * ffn)?,
                    h: out(m * ffn)?,
                    hq: Q8::new(gpu, m * ffn)?,
                    y: out(m * hidden)?,
                }))
            }
            (
                Dims::Mla {
                    nh,
                    kv_rank,
                    d_v,
                    n_slots,
                    pool,
                    ..
                },
                Inputs::Mla {
                    q_nope,
                    w_kb,
                    w_vb,
                    cache,
                    idx,
                },
            ) => {
                let attn = AttnShape {
                    nh,
                    kv_rank,
                    d_rope: 0,
                };
                Body::Mla(Box::new(Mla {
                    q_nope: gpu.upload(q_nope)?,
                    w_kb: gpu.upload(w_kb)?,
                    w_vb: gpu.upload(w_vb)?,
                    cache: gpu.upload(cache)?,
                    q_pe: gpu.upload(&[0.0f32])?,
                    idx: SlotIndices::new(gpu, idx, m, n_slots, pool)?,
                    q_lat: out(m * nh * kv_rank)?,
                    o_lat: out(m * nh * kv_rank)?,
                    out: out(m * nh * d_v)?,
                    ws: FlashWorkspace::new(gpu, &attn, m, n_slots)?,
                }))
            }
            _ => unreachable!("inputs are made for their shape"),
        })
    }

    /// Queues one kernel of the step.
    pub fn launch(
        &mut self,
        op: Op,
        module: &Module,
        gpu: &Gpu,
        shape: Shape,
    ) -> Result<(), Error> {
        let m = shape.m;
        match (self, shape.dims) {
            (Body::Dense(d), Dims::Dense { hidden, ffn, .. }) => {
                let dims = shape.dims;
                let gemv = |w: &Weights, x: &Q8, y: DeviceOut<'_, f32>| {
                    let (in_f, rows) = op.gemv(dims).expect("a GEMV");
                    let parts = op.parts(dims);
                    w.gemv(module, gpu, in_f, rows, parts, m, x.act(), y)
                };
                match op {
                    Op::Norm => d.xq.norm(module, gpu, &d.x, &d.norm_w, &mut d.z),
                    Op::Q => gemv(&d.w_qkv, &d.xq, &mut d.q),
                    Op::K => gemv(&d.w_qkv, &d.xq, &mut d.k),
                    Op::V => gemv(&d.w_qkv, &d.xq, &mut d.v),
                    Op::Qkv => gemv(&d.w_qkv, &d.xq, &mut d.qkv),
                    Op::QuantAttn => d.aq.quantize(module, gpu, &d.attn),
                    Op::O => gemv(&d.w_o, &d.aq, &mut d.o),
                    Op::Norm2 => d.x2q.norm(module, gpu, &d.o, &d.norm2_w, &mut d.z2),
                    Op::Gate => gemv(&d.w_gu, &d.x2q, &mut d.g),
                    Op::Up => gemv(&d.w_gu, &d.x2q, &mut d.u),
                    Op::GateUp => gemv(&d.w_gu, &d.x2q, &mut d.gu),
                    Op::Swiglu => host::swiglu::swiglu(module, gpu, &d.g, &d.u, &mut d.h),
                    Op::SwigluQ8 => {
                        let rows = Rows {
                            nrows: m,
                            ncols: ffn,
                        };
                        let (g, u) = (&d.gu, &d.gu.slice(ffn..));
                        let (qs, dq) = (&mut d.hq.qs, &mut d.hq.d);
                        norm_q8::swiglu_q8_1(module, gpu, g, u, 2 * ffn, &mut d.h, qs, dq, rows)
                    }
                    Op::Glu => d
                        .w_gu
                        .glu(module, gpu, hidden, ffn, m, d.x2q.act(), &mut d.h),
                    Op::QuantFfn => d.hq.quantize(module, gpu, &d.h),
                    Op::Down => gemv(&d.w_down, &d.hq, &mut d.y),
                    Op::Absorb | Op::Attn | Op::Decompress => unreachable!("not a dense kernel"),
                }
            }
            (
                Body::Mla(a),
                Dims::Mla {
                    nh,
                    kv_rank,
                    d_nope,
                    d_v,
                    ..
                },
            ) => {
                let table = ServingTable::DEFAULT;
                match op {
                    Op::Absorb => {
                        let s = AbsorbShape {
                            t: m,
                            nh,
                            d_nope,
                            kv_rank,
                        };
                        mla::absorb_q_serving(
                            module,
                            gpu,
                            &a.q_nope,
                            &a.w_kb,
                            &mut a.q_lat,
                            s,
                            &table,
                        )
                    }
                    Op::Attn => {
                        let b = AttnBuffers {
                            q_lat: &a.q_lat,
                            q_pe: &a.q_pe,
                            cache: &a.cache,
                            idx: &a.idx,
                            out: &mut a.o_lat,
                        };
                        let s = AttnShape {
                            nh,
                            kv_rank,
                            d_rope: 0,
                        };
                        mla::attn_flash(module, gpu, b, s, MLA_SCALE, &mut a.ws)
                    }
                    Op::Decompress => {
                        let s = DecompressShape {
                            t: m,
                            nh,
                            d_v,
                            kv_rank,
                        };
                        mla::decompress_v_serving(
                            module, gpu, &a.o_lat, &a.w_vb, &mut a.out, s, &table,
                        )
                    }
                    _ => unreachable!("not an MLA kernel"),
                }
            }
            _ => unreachable!("a body is uploaded for its shape"),
        }
    }

    /// Poisons what `op` writes, or with `None` everything any kernel of the step writes.
    pub fn poison_outputs(&mut self, gpu: &Gpu, op: Option<Op>) -> Result<(), Error> {
        let p = |b: &mut CudaSlice<f32>| gpu.poison(b, POISON_F32);
        match self {
            Body::Dense(d) => {
                let all = op.is_none();
                let is = |o: Op| all || op == Some(o);
                if is(Op::Norm) {
                    p(&mut d.z)?;
                    d.xq.poison(gpu)?;
                }
                for (o, b) in [
                    (Op::Q, &mut d.q),
                    (Op::K, &mut d.k),
                    (Op::V, &mut d.v),
                    (Op::Qkv, &mut d.qkv),
                    (Op::O, &mut d.o),
                    (Op::Gate, &mut d.g),
                    (Op::Up, &mut d.u),
                    (Op::GateUp, &mut d.gu),
                    (Op::Down, &mut d.y),
                ] {
                    if is(o) {
                        p(b)?;
                    }
                }
                if is(Op::QuantAttn) {
                    d.aq.poison(gpu)?;
                }
                if is(Op::Norm2) {
                    p(&mut d.z2)?;
                    d.x2q.poison(gpu)?;
                }
                if all || matches!(op, Some(Op::Swiglu | Op::SwigluQ8 | Op::Glu)) {
                    p(&mut d.h)?;
                }
                if is(Op::QuantFfn) || is(Op::SwigluQ8) {
                    d.hq.poison(gpu)?;
                }
                Ok(())
            }
            Body::Mla(a) => {
                let all = op.is_none();
                if all || op == Some(Op::Absorb) {
                    p(&mut a.q_lat)?;
                }
                if all || op == Some(Op::Attn) {
                    p(&mut a.o_lat)?;
                }
                if all || op == Some(Op::Decompress) {
                    p(&mut a.out)?;
                }
                Ok(())
            }
        }
    }

    /// What `op` writes, or with `None` the step's outputs the arms are compared on.
    pub fn outputs(&self, gpu: &Gpu, op: Option<Op>) -> Result<Vec<Output>, Error> {
        let f = |name, b: &CudaSlice<f32>| Output::f32(gpu, name, b);
        let q8 = |q: &Q8| -> Result<Vec<Output>, Error> {
            Ok(vec![
                Output::i8(gpu, "qs", &q.qs)?,
                Output::f32(gpu, "d", &q.d)?,
            ])
        };
        match self {
            Body::Dense(d) => Ok(match op {
                None => vec![
                    f("q", &d.q)?,
                    f("k", &d.k)?,
                    f("v", &d.v)?,
                    f("o", &d.o)?,
                    f("swiglu", &d.h)?,
                    f("down", &d.y)?,
                ],
                Some(Op::Norm) => [vec![f("z", &d.z)?], q8(&d.xq)?].concat(),
                Some(Op::Norm2) => [vec![f("z", &d.z2)?], q8(&d.x2q)?].concat(),
                Some(Op::QuantAttn) => q8(&d.aq)?,
                Some(Op::QuantFfn) => q8(&d.hq)?,
                Some(Op::Swiglu) => vec![f("y", &d.h)?],
                Some(Op::SwigluQ8) => [vec![f("y", &d.h)?], q8(&d.hq)?].concat(),
                // Named by the kernel, so that the GEMVs of one arm keep their outputs apart.
                Some(op) => vec![f(op.label(), d.gemv_out(op))?],
            }),
            Body::Mla(a) => Ok(match op {
                None => vec![
                    f("q_lat", &a.q_lat)?,
                    f("o_lat", &a.o_lat)?,
                    f("out", &a.out)?,
                ],
                Some(Op::Absorb) => vec![f("y", &a.q_lat)?],
                Some(Op::Attn) => vec![f("y", &a.o_lat)?],
                Some(Op::Decompress) => vec![f("y", &a.out)?],
                Some(_) => unreachable!("not an MLA kernel"),
            }),
        }
    }

    /// The merged step's outputs under the unmerged names: q, k and v, the three parts of the
    /// merged GEMV's output ([`Op::parts`]).
    pub fn merged_outputs(&self, gpu: &Gpu, shape: Shape) -> Result<Vec<Output>, Error> {
        let Body::Dense(d) = self else {
            return self.outputs(gpu, None);
        };
        let (qkv, parts) = (gpu.download(&d.qkv)?, Op::Qkv.parts(shape.dims));
        let part = |p: usize| qkv[parts.range(p, shape.m)].to_vec();
        let f = |name, b: &CudaSlice<f32>| Output::f32(gpu, name, b);
        Ok(vec![
            Output::from_f32("q", part(0)),
            Output::from_f32("k", part(1)),
            Output::from_f32("v", part(2)),
            f("o", &d.o)?,
            f("swiglu", &d.h)?,
            f("down", &d.y)?,
        ])
    }
}
