//! The mla-decode gate: the three MLA decode kernels (absorb_q, decompress_v, attn_gathered) and
//! their split twins, split against unsplit and Rust against .cu bit for bit at every (t_q, kv)
//! cell, each kernel against a CPU f64 oracle, timings with the L2 scrubbed before every launch,
//! the winner table and the serving table's regression check, and cuBLAS peers for the GEMVs;
//! and the flash attention (`attn_flash`, on the tensor cores) against the same oracle, Rust
//! against .cu, each token's bits alone against the batch.

use crate::harness::cli::{parse_pair, shape_refusal};
use crate::harness::compare::{geomean, within_scaled};
use crate::harness::output::{Output, POISON_F32};
use crate::harness::run::Report;
use crate::harness::{
    ArmSpec, CaseTiming, Check, Family, Footprint, Group, Label, On, Runs, Side, TimingMode,
    ValueClass,
};
use crate::peers::Blas;
use crate::report::{yes_no, Table};
use crate::rng;
use host::mla::{
    self as launch, AbsorbShape, AttnBuffers, AttnShape, DecompressShape, DeepRow, FlashHeads,
    FlashWorkspace, MlaKernel, ServingTable, SlotIndices, Split, MAX_T_Q, REGRESSION_MARGIN,
};
use host::{CudaSlice, Error, Gpu};
use serde::Serialize;
use std::cell::{OnceCell, RefCell};
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The seed's geometry (glm5-class MLA with a top-k gather).
const NH: usize = 64;
const KV_RANK: usize = 512;
const D_NOPE: usize = 256;
const D_V: usize = 256;
const N_SLOTS: usize = 2048;
/// DeepSeek-V3.2's decode attention: 128 heads, d_nope 128, d_v 128, a rope of 64 and a top-k
/// gather of 2048 slots (`--geometry v3.2`).
const V32: (usize, usize, usize, usize) = (128, 128, 128, 64);
/// The scores' scale, `1/sqrt(544)` as the seed uses it.
const SCALE: f32 = 1.0 / 23.323_808;
const T_QS: [usize; 4] = [1, 2, 4, 8];
const KV_LENS: [usize; 4] = [2048, 32_768, 131_072, 262_144];
/// Cells whose attention is checked against the f64 oracle (the oracle costs
/// `t * nh * n_slots * kv_rank` multiply-adds twice; every t_q has cells at these depths).
const ORACLE_MAX_KV: usize = 32_768;
/// The GEMVs' bound against the f64 oracle, relative to `sum |x w|` of each output.
const GEMV_BOUND: f64 = 1e-5;

/// One (t_q, kv) cell and its geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cell {
    pub t_q: usize,
    pub kv: usize,
    pub nh: usize,
    pub kv_rank: usize,
    pub d_nope: usize,
    pub d_v: usize,
    pub d_rope: usize,
    pub n_slots: usize,
}

impl Cell {
    /// The seed's geometry at `(t_q, kv)`: 2048 gathered slots, or the whole pool below that.
    fn seed(t_q: usize, kv: usize, d_rope: usize) -> Cell {
        Cell {
            t_q,
            kv,
            nh: NH,
            kv_rank: KV_RANK,
            d_nope: D_NOPE,
            d_v: D_V,
            d_rope,
            n_slots: N_SLOTS.min(kv),
        }
    }

    /// The cell of `geometry` at `(t_q, kv)`: the seed's with its rope width, or V3.2's.
    fn of(geometry: &str, t_q: usize, kv: usize, d_rope: usize) -> Cell {
        match geometry {
            "v3.2" => {
                let (nh, d_nope, d_v, d_rope) = V32;
                Cell {
                    nh,
                    d_nope,
                    d_v,
                    d_rope,
                    ..Cell::seed(t_q, kv, 0)
                }
            }
            _ => Cell::seed(t_q, kv, d_rope),
        }
    }

    fn absorb(self) -> AbsorbShape {
        AbsorbShape {
            t: self.t_q,
            nh: self.nh,
            d_nope: self.d_nope,
            kv_rank: self.kv_rank,
        }
    }

    fn decompress(self) -> DecompressShape {
        DecompressShape {
            t: self.t_q,
            nh: self.nh,
            d_v: self.d_v,
            kv_rank: self.kv_rank,
        }
    }

    fn attn(self) -> AttnShape {
        AttnShape {
            nh: self.nh,
            kv_rank: self.kv_rank,
            d_rope: self.d_rope,
        }
    }

    fn row(self) -> usize {
        self.kv_rank + self.d_rope
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{} kv{}", self.t_q, self.kv)?;
        if self.nh != NH {
            write!(f, " nh{}", self.nh)?;
        }
        if self.n_slots != N_SLOTS.min(self.kv) {
            write!(f, " slots{}", self.n_slots)?;
        }
        if self.d_rope != 0 {
            write!(f, " rope{}", self.d_rope)?;
        }
        Ok(())
    }
}

/// What one call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    Kernel(MlaKernel, Split),
    /// cuBLAS strided-batched SGEMM on absorb_q's or decompress_v's operands.
    Sgemm(MlaKernel),
    /// The flash attention (`mla_attn_gathered_flash` or its 32-head twin, then
    /// `mla_attn_flash_combine`).
    Flash(FlashHeads),
    /// The flash attention launched once per token (`t = 1`), into one output per token.
    FlashByToken,
}

impl Label for Arm {
    fn label(&self) -> String {
        match self {
            Arm::Kernel(k, s) => format!("{} split={s}", k.name()),
            Arm::Sgemm(k) => format!("{} cublas sgemm", k.name()),
            Arm::Flash(FlashHeads::H16) => "attn_flash h16".into(),
            Arm::Flash(FlashHeads::H32) => "attn_flash h32".into(),
            Arm::FlashByToken => "attn_flash token by token".into(),
        }
    }
}

pub struct Inputs {
    q_nope: Vec<f32>,
    w_kb: Vec<f32>,
    o_lat: Vec<f32>,
    w_vb: Vec<f32>,
    q_lat: Vec<f32>,
    q_pe: Vec<f32>,
    cache: Vec<f32>,
    idx: Vec<i32>,
    /// Each kernel's f64 reference, made on the first oracle check that needs it (every split
    /// of both builds is checked against the same one).
    refs: [OnceLock<Reference>; 3],
}

/// An f64 reference: the outputs, the scale of each output's rounding error, and (for
/// attention) the largest `scale * sum |q k|` per (token, head).
type Reference = (Vec<f64>, Vec<f64>, Vec<f64>);

pub struct Set {
    q_nope: CudaSlice<f32>,
    w_kb: CudaSlice<f32>,
    q_lat_out: CudaSlice<f32>,
    o_lat: CudaSlice<f32>,
    w_vb: CudaSlice<f32>,
    v_out: CudaSlice<f32>,
    q_lat: CudaSlice<f32>,
    q_pe: CudaSlice<f32>,
    cache: CudaSlice<f32>,
    idx: SlotIndices,
    attn_out: CudaSlice<f32>,
    flash_ws: FlashWorkspace,
    flash_out: CudaSlice<f32>,
    /// Each token's inputs, output and workspace for [`Arm::FlashByToken`].
    by_token: Vec<TokenSet>,
}

/// One token's copy of the attention's inputs, for a launch of `t = 1`.
pub struct TokenSet {
    q_lat: CudaSlice<f32>,
    q_pe: CudaSlice<f32>,
    idx: SlotIndices,
    out: CudaSlice<f32>,
    ws: FlashWorkspace,
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Deepest pool (kv) of the default cells
    #[arg(long, default_value_t = 262_144)]
    max_kv: usize,
    /// Scrub the L2 before every timed launch (on), or time warm back-to-back calls (off)
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    scrub: String,
    /// Rope width of the default cells (0 is the seed's geometry)
    #[arg(long, default_value_t = 0)]
    d_rope: usize,
    /// Geometry of every cell: the seed's (64 heads, d_nope and d_v 256, --d-rope), or
    /// DeepSeek-V3.2's decode attention (128 heads, d_nope and d_v 128, d_rope 64)
    #[arg(long, default_value = "seed", value_parser = ["seed", "v3.2"])]
    geometry: String,
    /// The serving table to check [default: the compiled-in one]
    #[arg(long, value_name = "PATH")]
    table: Option<PathBuf>,
    /// Write the table this run measured (the fastest split per t_q over all depths, and a deep-pool row for attn_gathered where one is needed)
    #[arg(long, value_name = "PATH")]
    write_table: Option<PathBuf>,
    /// Skip the cuBLAS peer arms
    #[arg(long)]
    no_peers: bool,
}

pub struct Mla {
    args: Args,
    table: ServingTable,
    blas: RefCell<Option<Result<Blas, String>>>,
    /// The device's f32 FMA peak in FLOP/s (SMs x 128 lanes x 2 x clock), read on the first
    /// upload where the driver reports a clock.
    fma_peak: OnceCell<Option<f64>>,
    /// The device's SMs, read on the first upload (the launcher's choice of flash entry).
    sm_count: OnceCell<u32>,
}

impl Mla {
    /// The flash entry the launcher takes at `c`.
    fn flash_pick(&self, c: Cell) -> FlashHeads {
        let sms = self.sm_count.get().copied().unwrap_or(1);
        FlashHeads::pick(&c.attn(), c.t_q, c.n_slots, sms)
    }
}

impl Mla {
    fn peers_on(&self, gpu: &Gpu) -> Result<bool, Error> {
        if self.args.no_peers {
            return Ok(false);
        }
        let mut blas = self.blas.borrow_mut();
        if blas.is_none() {
            let made = Blas::new(gpu)?;
            if let Err(why) = &made {
                println!("peer cublas sgemm: skipped ({why})");
            }
            *blas = Some(made);
        }
        Ok(matches!(*blas, Some(Ok(_))))
    }
}

/// `T_QxKV` (the seed's geometry at that cell).
fn parse_cell(item: &str, geometry: &str, d_rope: usize) -> Result<Cell, String> {
    let (t_q, kv) = parse_pair(item, ("T_Q", "KV"))?;
    if !(1..=MAX_T_Q).contains(&t_q) {
        return Err(format!(
            "t_q {t_q} is not in 1..={MAX_T_Q} (the serving table's widths)"
        ));
    }
    let cell = Cell::of(geometry, t_q, kv, d_rope);
    host::check::positive_i32("mla-decode", "kv", kv).map_err(shape_refusal)?;
    host::check::product_i32("mla-decode", "kv", &[kv, cell.row()]).map_err(shape_refusal)?;
    Ok(cell)
}

fn uniform(seed: u64, part: u64, n: usize) -> Vec<f32> {
    rng::vec_f32(rng::case_seed(seed, &[part]), n, 1.0)
}

/// f64 `y[t][h][r] = sum_k x[t][h][k] w[h][r][k]` and `sum |x w|`.
fn heads_gemv(
    x: &[f32],
    w: &[f32],
    t: usize,
    nh: usize,
    k: usize,
    r: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut y = Vec::with_capacity(t * nh * r);
    let mut mag = Vec::with_capacity(t * nh * r);
    for ti in 0..t {
        for h in 0..nh {
            let xv = &x[(ti * nh + h) * k..][..k];
            for ri in 0..r {
                let wv = &w[(h * r + ri) * k..][..k];
                let (mut s, mut a) = (0.0f64, 0.0f64);
                for (p, q) in xv.iter().zip(wv) {
                    let v = f64::from(*p) * f64::from(*q);
                    s += v;
                    a += v.abs();
                }
                y.push(s);
                mag.push(a);
            }
        }
    }
    (y, mag)
}

/// One (token, head)'s f64 attention: the output, `sum p |K|` per output, the largest
/// `scale * sum |q k|`.
type HeadReference = (Vec<f64>, Vec<f64>, f64);

/// The f64 attention of one cell: per (t, h) the output, the per-output bound scale
/// `sum_i p_i |K_ic|`, and the largest `scale * sum |q k|` over the slots (how far rounding in
/// the scores can move the softmax).
fn attention(inputs: &Inputs, c: Cell) -> Reference {
    let (kr, dr, row, ns) = (c.kv_rank, c.d_rope, c.row(), c.n_slots);
    let heads = c.t_q * c.nh;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = heads.div_ceil(threads);
    let parts: Vec<Vec<HeadReference>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..heads)
            .step_by(per.max(1))
            .map(|first| {
                s.spawn(move || {
                    (first..(first + per).min(heads))
                        .map(|th| {
                            let t = th / c.nh;
                            let q = &inputs.q_lat[th * kr..][..kr];
                            let qp = &inputs.q_pe[th * dr..][..dr];
                            let rows: Vec<&[f32]> = inputs.idx[t * ns..][..ns]
                                .iter()
                                .map(|&i| &inputs.cache[i as usize * row..][..row])
                                .collect();
                            let mut smax = 0.0f64;
                            let scores: Vec<f64> = rows
                                .iter()
                                .map(|r| {
                                    let (mut s, mut a) = (0.0f64, 0.0f64);
                                    for (x, y) in q.iter().chain(qp).zip(r.iter()) {
                                        let v = f64::from(*x) * f64::from(*y);
                                        s += v;
                                        a += v.abs();
                                    }
                                    smax = smax.max(a * f64::from(SCALE));
                                    s * f64::from(SCALE)
                                })
                                .collect();
                            let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                            let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
                            let sum: f64 = e.iter().sum();
                            let mut out = vec![0.0; kr];
                            let mut mag = vec![0.0; kr];
                            for (p, r) in e.iter().zip(&rows) {
                                let p = p / sum;
                                for ((o, a), v) in out.iter_mut().zip(mag.iter_mut()).zip(&r[..kr])
                                {
                                    *o += p * f64::from(*v);
                                    *a += p * f64::from(*v).abs();
                                }
                            }
                            (out, mag, smax)
                        })
                        .collect()
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    let mut out = Vec::with_capacity(heads * kr);
    let mut mag = Vec::with_capacity(heads * kr);
    let mut smax = Vec::with_capacity(heads);
    for (o, m, s) in parts.into_iter().flatten() {
        out.extend(o);
        mag.extend(m);
        smax.push(s);
    }
    (out, mag, smax)
}

/// Attention's bound per output: accumulation over the slots (`2e-5`) plus the rounding of the
/// f32 scores, which moves each softmax weight by about `4e-6 * max scale|q.k|` relative.
fn attn_bound(smax: f64) -> f64 {
    2e-5 + 4e-6 * smax
}

impl Family for Mla {
    type Shape = Cell;
    type Arm = Arm;
    type Inputs = Inputs;
    type Set = Set;
    type Args = Args;

    const NAME: &'static str = "mla-decode";
    const ABOUT: &'static str =
        "MLA decode: absorb_q, decompress_v, attn_gathered and their split twins, Rust against .cu";
    const HELP: &'static str = "\
The MLA decode family at the seed's geometry (64 heads, kv_rank 512, d_nope 256, d_v 256,
d_rope 0, a gather of 2048 slots from a pool of kv cached rows, fewer where the pool is
smaller), per (t_q, kv) cell, t_q in 1, 2, 4, 8 and kv in 2k, 32k, 128k, 256k:
  absorb_q       q_lat[t,h,:] = W_kb[h] q_nope[t,h,:]
  decompress_v   out[t,h,:]   = W_vb[h] o_lat[t,h,:]
  attn_gathered  softmax over the gathered slots of scale * (q_lat . latent + q_pe . rope),
                 then the weighted sum of the gathered latent rows
Each kernel has twins of split 2, 4 and 8 that change the launch geometry only.
  attn_flash     the same attention on the tensor cores (3xTF32), a block per token, chunk
                 of 64 slots and 16 heads, then a combine of the chunks in order
--geometry v3.2 runs every cell at DeepSeek-V3.2's decode attention instead (128 heads,
d_nope 128, d_v 128, d_rope 64, 2048 slots).

Checks per cell, on seeded inputs:
  rust == cu             every kernel and split, outputs byte-identical between the builds
  split == unsplit       each kernel's twins against its unsplit kernel, in each build
  attn_flash by token    attn_flash over the batch against each token launched alone (t = 1;
                         at t_q 1, a second launch): the same bits
  oracle                 absorb_q and decompress_v within 1e-5 x sum |x w| of a CPU f64 GEMV
                         (the cuBLAS peers too); attn_gathered, on the cells with kv <= 32k,
                         within (2e-5 + 4e-6 x max scale|q.k|) x sum p|K| of an f64 softmax
                         (attn_flash too)
  all written            outputs poisoned (NaN) before every launch; none may remain
Value classes: uniform (every input in [-1, 1)); outliers (q_lat 300 times larger and eight
cache rows per token 10 times larger: most softmax weights underflow to zero, a few scores are
huge); edge (per token, slots gathering row 0, row pool - 1 and one row many times over,
four rows of zeros, and one row that is head 0's query scaled by 8, dominating its softmax).

Timings (skipped with --no-timing): every kernel and split in both builds and the cuBLAS
strided-batched SGEMM peers of the two GEMVs, one launch per sample between two events, with a
read stream of four times the L2 before every launch (--scrub on) or back to back (--scrub
off), interleaved in rounds (--rounds, default 10), medians. Reported: the per-(t_q, kv) winner
table against the serving table (--table, default compiled in); one REGRESSION line per cell
where the table's split is slower than the fastest by more than the margin (5%), which fails the
gate; Rust/.cu per cell and its geomean; the GEMVs against the read-stream ceiling and the peer;
attn_gathered's bandwidth on the gathered rows. --write-table PATH writes the fastest split per
t_q over all measured depths in the table's text format, which --table and the launchers read,
with an attn_gathered>=N row for pools of N rows and more where one row cannot hold every depth;
with it the default cells cover every t_q from 1 to 8 (a t_q that --shapes leaves out takes the
nearest measured t_q below).

Shapes (--shapes): T_QxKV cells (t_q 1..=8); --max-kv bounds the default cells, --d-rope sets
their rope width.

Exit status: 0 all checks passed and no regression, 1 a check failed or a regression, 2 the
gate could not run.";

    fn new(args: &Args) -> Result<Self, String> {
        let table = match &args.table {
            Some(p) => launch::read_table(p).map_err(|e| format!("--table: {e}"))?,
            None => ServingTable::DEFAULT,
        };
        if let Some(p) = &args.write_table {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("--write-table {}: {e}", p.display()))?;
        }
        if !args.d_rope.is_multiple_of(4) {
            return Err(format!("--d-rope {}: not a multiple of 4", args.d_rope));
        }
        Ok(Mla {
            args: args.clone(),
            table,
            blas: RefCell::default(),
            fma_peak: OnceCell::new(),
            sm_count: OnceCell::new(),
        })
    }

    /// The seed's cells; with `--write-table`, every t_q the table has, so that the table it
    /// writes is measured at every width.
    fn default_shapes(&self) -> Vec<Cell> {
        let widths: Vec<usize> = if self.args.write_table.is_some() {
            (1..=MAX_T_Q).collect()
        } else {
            T_QS.to_vec()
        };
        KV_LENS
            .iter()
            .filter(|&&kv| kv <= self.args.max_kv)
            .flat_map(|&kv| {
                widths
                    .iter()
                    .map(move |&t| Cell::of(&self.args.geometry, t, kv, self.args.d_rope))
            })
            .collect()
    }

    fn parse_shapes(&self, item: &str) -> Result<Vec<Cell>, String> {
        parse_cell(item, &self.args.geometry, self.args.d_rope).map(|c| vec![c])
    }

    fn no_default_shapes(&self) -> String {
        let (kv, least) = (self.args.max_kv, KV_LENS[0]);
        format!("--max-kv {kv}: leaves no default cell (the smallest is {least})")
    }

    fn edge_shapes(&self) -> Vec<(Cell, &'static str)> {
        let with = |t, kv, n_slots, d_rope| Cell {
            n_slots,
            ..Cell::seed(t, kv, d_rope)
        };
        vec![
            (with(3, 4096, 2048, 0), "t_q 3, off the measured widths"),
            (with(1, 4096, 1, 0), "one slot"),
            (with(2, 4096, 7, 0), "seven slots, fewer than a warp's rows"),
            (
                with(2, 100, 256, 0),
                "a pool smaller than the slots (indices repeat)",
            ),
            (with(2, 4096, 2048, 64), "d_rope 64"),
            (with(8, 2048, 2048, 64), "t_q 8 with d_rope 64"),
            (with(3, 4096, 65, 0), "a chunk and one slot (attn_flash)"),
            (
                Cell {
                    nh: 20,
                    kv_rank: 36,
                    d_rope: 4,
                    ..with(2, 512, 300, 0)
                },
                "20 heads (a partial head group), rows of 40 floats (not a multiple of 8)",
            ),
        ]
    }

    fn classes(&self) -> &'static [ValueClass] {
        &[ValueClass::Uniform, ValueClass::Outliers, ValueClass::Edge]
    }

    fn footprint(&self, c: Cell) -> Footprint {
        let f = 4;
        let gemv = c.nh * c.kv_rank * (c.d_nope + c.d_v) * f;
        let acts = c.t_q * c.nh * (c.d_nope + 3 * c.kv_rank + c.d_v + c.d_rope) * f;
        let set = gemv + acts + c.kv * c.row() * f + c.t_q * c.n_slots * 4;
        Footprint {
            host_bytes: 3 * set,
            set_bytes: set,
        }
    }

    fn timing(&self) -> TimingMode {
        if self.args.scrub == "on" {
            TimingMode::Scrub
        } else {
            TimingMode::Warm
        }
    }

    fn default_rounds(&self) -> usize {
        10
    }

    /// The unsplit kernels, the serving table's splits and the peers; the winner table has
    /// every split.
    fn plotted(&self, c: Cell, arm: Arm) -> bool {
        match arm {
            Arm::Kernel(_, Split::S1) | Arm::Sgemm(_) => true,
            Arm::Flash(h) => h == self.flash_pick(c),
            Arm::Kernel(k, s) => self.table.split(k, c.t_q, c.kv) == Some(s),
            Arm::FlashByToken => false,
        }
    }

    fn inputs(&self, c: Cell, class: ValueClass, seed: u64) -> Inputs {
        let (t, nh) = (c.t_q, c.nh);
        let mut q_lat = uniform(seed, 5, t * nh * c.kv_rank);
        let mut cache = uniform(seed, 7, c.kv * c.row());
        let mut pick = rng::SplitMix64::new(rng::case_seed(seed, &[8]));
        let idx: Vec<i32> = (0..t * c.n_slots)
            .map(|_| (pick.next_u64() % c.kv as u64) as i32)
            .collect();
        let mut idx = idx;
        if class == ValueClass::Edge {
            edge_attention(c, &q_lat, &mut cache, &mut idx);
        }
        if class == ValueClass::Outliers {
            q_lat.iter_mut().for_each(|v| *v *= 300.0);
            for ti in 0..t {
                for _ in 0..8 {
                    let slot = pick.next_u64() as usize % c.n_slots;
                    let r = idx[ti * c.n_slots + slot] as usize;
                    cache[r * c.row()..(r + 1) * c.row()]
                        .iter_mut()
                        .for_each(|v| *v *= 10.0);
                }
            }
        }
        Inputs {
            q_nope: uniform(seed, 1, t * nh * c.d_nope),
            w_kb: uniform(seed, 2, nh * c.kv_rank * c.d_nope),
            o_lat: uniform(seed, 3, t * nh * c.kv_rank),
            w_vb: uniform(seed, 4, nh * c.d_v * c.kv_rank),
            q_lat,
            q_pe: uniform(seed, 6, t * nh * c.d_rope),
            cache,
            idx,
            refs: Default::default(),
        }
    }

    fn upload(&self, gpu: &Gpu, c: Cell, i: &Inputs) -> Result<Set, Error> {
        // The peers' handle is made once, on the first upload, so that `arms` knows of it.
        self.peers_on(gpu)?;
        self.sm_count.get_or_init(|| gpu.info().sm_count);
        self.fma_peak.get_or_init(|| {
            let info = gpu.info();
            info.sm_clock_khz
                .map(|khz| f64::from(info.sm_count) * 128.0 * 2.0 * f64::from(khz) * 1e3)
        });
        let (t, nh) = (c.t_q, c.nh);
        Ok(Set {
            q_nope: gpu.upload(&i.q_nope)?,
            w_kb: gpu.upload(&i.w_kb)?,
            q_lat_out: gpu.alloc_poisoned(t * nh * c.kv_rank, POISON_F32)?,
            o_lat: gpu.upload(&i.o_lat)?,
            w_vb: gpu.upload(&i.w_vb)?,
            v_out: gpu.alloc_poisoned(t * nh * c.d_v, POISON_F32)?,
            q_lat: gpu.upload(&i.q_lat)?,
            // A zero-rope geometry still passes a buffer; the kernel reads none of it.
            q_pe: gpu.upload(if i.q_pe.is_empty() {
                &[0.0; 4]
            } else {
                &i.q_pe
            })?,
            cache: gpu.upload(&i.cache)?,
            idx: SlotIndices::new(gpu, &i.idx, t, c.n_slots, c.kv)?,
            attn_out: gpu.alloc_poisoned(t * nh * c.kv_rank, POISON_F32)?,
            flash_ws: FlashWorkspace::new(gpu, &c.attn(), t, c.n_slots)?,
            flash_out: gpu.alloc_poisoned(t * nh * c.kv_rank, POISON_F32)?,
            by_token: token_sets(gpu, c, i)?,
        })
    }

    fn arms(&self, c: Cell) -> Vec<ArmSpec<Arm>> {
        let f = 4;
        let (t, nh) = (c.t_q, c.nh);
        let absorb = (nh * c.kv_rank * c.d_nope + t * nh * (c.d_nope + c.kv_rank)) * f;
        let decompress = (nh * c.d_v * c.kv_rank + t * nh * (c.kv_rank + c.d_v)) * f;
        let attn =
            (t * c.n_slots * c.row() + t * nh * (2 * c.kv_rank + c.d_rope)) * f + t * c.n_slots * 4;
        let bytes = |k| match k {
            MlaKernel::AbsorbQ => absorb,
            MlaKernel::DecompressV => decompress,
            MlaKernel::AttnGathered => attn,
        };
        let mut arms: Vec<ArmSpec<Arm>> = MlaKernel::ALL
            .iter()
            .flat_map(|&k| {
                Split::ALL.map(|s| ArmSpec {
                    arm: Arm::Kernel(k, s),
                    runs: Runs::Builds,
                    timed: true,
                    bytes: bytes(k),
                })
            })
            .collect();
        for heads in flash_entries(c) {
            arms.push(ArmSpec {
                arm: Arm::Flash(heads),
                runs: Runs::Builds,
                timed: true,
                bytes: attn,
            });
        }
        arms.push(ArmSpec {
            arm: Arm::FlashByToken,
            runs: Runs::Builds,
            timed: false,
            bytes: attn,
        });
        let peers = matches!(*self.blas.borrow(), Some(Ok(_)));
        if peers {
            for k in [MlaKernel::AbsorbQ, MlaKernel::DecompressV] {
                arms.push(ArmSpec {
                    arm: Arm::Sgemm(k),
                    runs: Runs::Peer,
                    timed: true,
                    bytes: bytes(k),
                });
            }
        }
        arms
    }

    /// absorb_q's weights: the GEMVs are the arms held to a share of the ceiling, and a cold
    /// read of their 32 MB is what they are compared with.
    fn stream_bytes(&self, c: Cell) -> usize {
        c.nh * c.kv_rank * c.d_nope * 4
    }

    fn groups(&self, c: Cell) -> Vec<Group<Arm>> {
        let mut groups: Vec<Group<Arm>> = MlaKernel::ALL
            .iter()
            .map(|&k| Group {
                name: format!("{} split == unsplit", k.name()),
                arms: Split::ALL.map(|s| Arm::Kernel(k, s)).to_vec(),
            })
            .collect();
        let mut arms: Vec<Arm> = flash_entries(c).map(Arm::Flash).collect();
        arms.push(Arm::FlashByToken);
        groups.push(Group {
            name: "attn_flash h16 == h32 == each token alone (t = 1)".into(),
            arms,
        });
        groups
    }

    fn enqueue(
        &self,
        gpu: &Gpu,
        on: On<'_>,
        c: Cell,
        arm: Arm,
        set: &mut Set,
    ) -> Result<(), Error> {
        match (arm, on) {
            (Arm::Kernel(MlaKernel::AbsorbQ, s), On::Build(m)) => launch::absorb_q(
                m,
                gpu,
                &set.q_nope,
                &set.w_kb,
                &mut set.q_lat_out,
                c.absorb(),
                s,
            ),
            (Arm::Kernel(MlaKernel::DecompressV, s), On::Build(m)) => launch::decompress_v(
                m,
                gpu,
                &set.o_lat,
                &set.w_vb,
                &mut set.v_out,
                c.decompress(),
                s,
            ),
            (Arm::Kernel(MlaKernel::AttnGathered, s), On::Build(m)) => {
                let b = AttnBuffers {
                    q_lat: &set.q_lat,
                    q_pe: &set.q_pe,
                    cache: &set.cache,
                    idx: &set.idx,
                    out: &mut set.attn_out,
                };
                launch::attn_gathered(m, gpu, b, c.attn(), SCALE, s)
            }
            (Arm::Flash(heads), On::Build(m)) => {
                let b = AttnBuffers {
                    q_lat: &set.q_lat,
                    q_pe: &set.q_pe,
                    cache: &set.cache,
                    idx: &set.idx,
                    out: &mut set.flash_out,
                };
                launch::attn_flash_with(m, gpu, b, c.attn(), SCALE, &mut set.flash_ws, heads)
            }
            (Arm::FlashByToken, On::Build(m)) => {
                for one in &mut set.by_token {
                    let b = AttnBuffers {
                        q_lat: &one.q_lat,
                        q_pe: &one.q_pe,
                        cache: &set.cache,
                        idx: &one.idx,
                        out: &mut one.out,
                    };
                    launch::attn_flash(m, gpu, b, c.attn(), SCALE, &mut one.ws)?;
                }
                Ok(())
            }
            (Arm::Sgemm(k), On::Peer) => {
                let blas = self.blas.borrow();
                let Some(Ok(blas)) = blas.as_ref() else {
                    unreachable!("peer arms exist only with a cuBLAS handle")
                };
                match k {
                    MlaKernel::AbsorbQ => blas.heads_sgemm(
                        gpu,
                        &set.q_nope,
                        &set.w_kb,
                        &mut set.q_lat_out,
                        c.t_q,
                        c.nh,
                        c.d_nope,
                        c.kv_rank,
                    ),
                    _ => blas.heads_sgemm(
                        gpu,
                        &set.o_lat,
                        &set.w_vb,
                        &mut set.v_out,
                        c.t_q,
                        c.nh,
                        c.kv_rank,
                        c.d_v,
                    ),
                }
            }
            _ => unreachable!("{arm:?} does not run there"),
        }
    }

    fn poison(&self, gpu: &Gpu, arm: Arm, set: &mut Set) -> Result<(), Error> {
        match arm {
            Arm::Flash(_) => gpu.poison(&mut set.flash_out, POISON_F32),
            Arm::FlashByToken => set
                .by_token
                .iter_mut()
                .try_for_each(|one| gpu.poison(&mut one.out, POISON_F32)),
            Arm::Kernel(k, _) | Arm::Sgemm(k) => gpu.poison(output_of(k, set), POISON_F32),
        }
    }

    fn download(&self, gpu: &Gpu, arm: Arm, set: &Set) -> Result<Vec<Output>, Error> {
        let buf = match arm {
            Arm::Flash(_) => &set.flash_out,
            Arm::FlashByToken => {
                let mut out = Vec::with_capacity(set.flash_out.len());
                for one in &set.by_token {
                    out.extend(gpu.download(&one.out)?);
                }
                return Ok(vec![Output::from_f32("out", out)]);
            }
            Arm::Kernel(MlaKernel::AbsorbQ, _) | Arm::Sgemm(MlaKernel::AbsorbQ) => &set.q_lat_out,
            Arm::Kernel(MlaKernel::DecompressV, _) | Arm::Sgemm(MlaKernel::DecompressV) => {
                &set.v_out
            }
            Arm::Kernel(MlaKernel::AttnGathered, _) | Arm::Sgemm(MlaKernel::AttnGathered) => {
                &set.attn_out
            }
        };
        Ok(vec![Output::f32(gpu, "out", buf)?])
    }

    fn oracle(&self, c: Cell, i: &Inputs, arm: Arm, _: Side, outputs: &[Output]) -> Vec<Check> {
        let Some(out) = outputs.first() else {
            return Vec::new();
        };
        let k = match arm {
            Arm::Kernel(k, _) | Arm::Sgemm(k) => k,
            Arm::Flash(_) | Arm::FlashByToken => MlaKernel::AttnGathered,
        };
        let (verdict, name) = match k {
            MlaKernel::AbsorbQ | MlaKernel::DecompressV => {
                let (want, mag, _) = i.refs[k as usize].get_or_init(|| {
                    let (y, mag) = if k == MlaKernel::AbsorbQ {
                        heads_gemv(&i.q_nope, &i.w_kb, c.t_q, c.nh, c.d_nope, c.kv_rank)
                    } else {
                        heads_gemv(&i.o_lat, &i.w_vb, c.t_q, c.nh, c.kv_rank, c.d_v)
                    };
                    (y, mag, Vec::new())
                });
                let (v, worst) = within_scaled(out.as_f32(), want, mag, |_| GEMV_BOUND);
                (
                    v,
                    format!("f64 gemv (err <= {GEMV_BOUND:.0e} x sum|xw|; max {worst:.1e})"),
                )
            }
            MlaKernel::AttnGathered if c.kv <= ORACLE_MAX_KV => {
                let (want, mag, smax) = i.refs[k as usize].get_or_init(|| attention(i, c));
                let (v, worst) =
                    within_scaled(out.as_f32(), want, mag, |e| attn_bound(smax[e / c.kv_rank]));
                let top = smax.iter().copied().fold(0.0, f64::max);
                (
                    v,
                    format!(
                        "f64 softmax attention (err <= (2e-5 + 4e-6 x {top:.0}) x sum p|K|; max {worst:.1e})"
                    ),
                )
            }
            MlaKernel::AttnGathered => return Vec::new(),
        };
        vec![Check {
            name: format!("oracle {} ~ {name}", arm.label()),
            verdicts: vec![("out".into(), verdict)],
        }]
    }

    fn summarize(&self, timings: &[CaseTiming<Self>], out: &mut Report<'_>) -> usize {
        summary(self, timings, out)
    }

    fn refusals(&self, gpu: &Gpu, rust: &host::Module) -> Result<Vec<String>, Error> {
        let mut problems = Vec::new();
        let c = Cell::seed(1, 64, 0);
        let x = gpu.alloc_poisoned::<f32>(c.nh * c.d_nope, 0)?;
        let w = gpu.alloc_poisoned::<f32>(c.nh * c.kv_rank * c.d_nope, 0)?;
        let mut y = gpu.alloc_poisoned::<f32>(c.nh * c.kv_rank, POISON_F32)?;
        let mut short = c.absorb();
        short.t = 2;
        let too_wide = AbsorbShape { t: 9, ..c.absorb() };
        for (shape, arg) in [(short, "q_nope"), (too_wide, "t")] {
            let got = launch::absorb_q(rust, gpu, &x, &w, &mut y, shape, Split::S1);
            if !matches!(&got, Err(Error::Arg(e)) if e.arg == arg) {
                problems.push(format!(
                    "absorb_q {shape:?} not refused as `{arg}`: {got:?}"
                ));
            }
        }
        let bad = [0, 1, 64];
        match SlotIndices::new(gpu, &bad, 1, 3, 64) {
            Err(Error::Arg(e)) if e.arg == "idx" => {}
            other => problems.push(format!(
                "index 64 of a pool of 64 not refused: {:?}",
                other.err()
            )),
        }
        match SlotIndices::new(gpu, &[], 1, 0, 64) {
            Err(Error::Arg(e)) if e.arg == "n_slots" => {}
            other => problems.push(format!("zero slots not refused: {:?}", other.err())),
        }
        if launch::split("mla_absorb_q", 3).is_ok() {
            problems.push("split 3 not refused".into());
        }
        gpu.synchronize()?;
        if gpu.download(&y)?.iter().any(|v| v.to_bits() != u32::MAX) {
            problems.push("a refused launch wrote to q_lat".into());
        }
        Ok(problems)
    }
}

/// The flash entries a cell can launch: 16 heads a block always, 32 where its rows fit.
fn flash_entries(c: Cell) -> impl Iterator<Item = FlashHeads> {
    FlashHeads::ALL.into_iter().filter(move |h| {
        kernels_gpu::mla::flash::shared_bytes(c.kv_rank as u32, c.d_rope as u32, h.tiles())
            .is_some()
    })
}

/// Each token's inputs copied into buffers of their own, with an output and a workspace each.
fn token_sets(gpu: &Gpu, c: Cell, i: &Inputs) -> Result<Vec<TokenSet>, Error> {
    let (nh, kr, dr, ns) = (c.nh, c.kv_rank, c.d_rope, c.n_slots);
    let (lat, pe, idx) = (&i.q_lat, &i.q_pe, &i.idx);
    (0..c.t_q)
        .map(|t| {
            let q_pe = if dr == 0 {
                gpu.upload(&[0.0f32; 4])?
            } else {
                gpu.upload(&pe[t * nh * dr..][..nh * dr])?
            };
            Ok(TokenSet {
                q_lat: gpu.upload(&lat[t * nh * kr..][..nh * kr])?,
                q_pe,
                idx: SlotIndices::new(gpu, &idx[t * ns..][..ns], 1, ns, c.kv)?,
                out: gpu.alloc_poisoned(nh * kr, POISON_F32)?,
                ws: FlashWorkspace::new(gpu, &c.attn(), 1, ns)?,
            })
        })
        .collect()
}

/// The edge class's attention inputs: per token, slots that gather row 0, row `pool - 1` and one
/// row many times over (duplicates), four rows of zeros (padding), and one slot whose row is
/// head 0's query scaled up, so that it dominates head 0's softmax.
fn edge_attention(c: Cell, q_lat: &[f32], cache: &mut [f32], idx: &mut [i32]) {
    let (row, ns, last) = (c.row(), c.n_slots, c.kv as i32 - 1);
    for t in 0..c.t_q {
        let slots = &mut idx[t * ns..][..ns];
        let repeated = slots[ns / 2];
        for (i, v) in slots.iter_mut().enumerate() {
            match i % 8 {
                0 => *v = 0,
                1 => *v = last,
                2 | 5 => *v = repeated,
                _ => {}
            }
        }
        for &r in slots.iter().skip(3).step_by(ns.div_ceil(4).max(1)).take(4) {
            cache[r as usize * row..][..row].fill(0.0);
        }
        let dominant = slots[ns - 1] as usize;
        let q = &q_lat[t * c.nh * c.kv_rank..][..c.kv_rank];
        for (v, &x) in cache[dominant * row..][..c.kv_rank].iter_mut().zip(q) {
            *v = 8.0 * x;
        }
    }
}

fn output_of(k: MlaKernel, set: &mut Set) -> &mut CudaSlice<f32> {
    match k {
        MlaKernel::AbsorbQ => &mut set.q_lat_out,
        MlaKernel::DecompressV => &mut set.v_out,
        MlaKernel::AttnGathered => &mut set.attn_out,
    }
}

/// One measured (kernel, t_q, kv) cell of the winner table.
#[derive(Serialize)]
struct Winner {
    kernel: &'static str,
    t_q: usize,
    kv: usize,
    class: ValueClass,
    /// Rust build, median us per split 1, 2, 4, 8.
    us: [f64; 4],
    best: u32,
    table: u32,
    table_over_best: f64,
    table_over_unsplit: f64,
    regression: bool,
    rust_over_cu: [f64; 4],
}

impl Winner {
    /// The fastest split's time (NaN times left out).
    fn fastest_us(&self) -> f64 {
        self.us.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

fn split_us(t: &CaseTiming<Mla>, k: MlaKernel, side: Side) -> [f64; 4] {
    Split::ALL.map(|s| {
        t.arm(Arm::Kernel(k, s))
            .and_then(|a| a.on(side))
            .map_or(f64::NAN, |st| st.median_us)
    })
}

fn summary(mla: &Mla, timings: &[CaseTiming<Mla>], out: &mut Report<'_>) -> usize {
    let mut t = Table::new(&[
        "kernel",
        "t_q",
        "kv",
        "class",
        "split=1",
        "split=2",
        "split=4",
        "split=8",
        "best",
        "table",
        "table/best",
        "table/unsplit",
        "rust/cu max",
    ]);
    let mut regressions = Vec::new();
    let mut winners = Vec::new();
    for case in timings {
        for k in MlaKernel::ALL {
            let us = split_us(case, k, Side::Rust);
            let cu = split_us(case, k, Side::Cu);
            let b = (0..4).min_by(|&a, &b| us[a].total_cmp(&us[b])).unwrap_or(0);
            let sel = mla
                .table
                .split(k, case.shape.t_q, case.shape.kv)
                .unwrap_or(Split::S1);
            let si = split_index(sel);
            let w = Winner {
                kernel: k.name(),
                t_q: case.shape.t_q,
                kv: case.shape.kv,
                class: case.class,
                us,
                best: Split::ALL[b].factor(),
                table: sel.factor(),
                table_over_best: us[si] / us[b],
                table_over_unsplit: us[si] / us[0],
                // The table was measured at the seed's geometry; elsewhere it is only reported.
                regression: us[si] / us[b] > REGRESSION_MARGIN && mla.args.geometry == "seed",
                rust_over_cu: std::array::from_fn(|i| us[i] / cu[i]),
            };
            t.row(vec![
                k.name().into(),
                w.t_q.to_string(),
                w.kv.to_string(),
                case.class.label().into(),
                format!("{:.1}", us[0]),
                format!("{:.1}", us[1]),
                format!("{:.1}", us[2]),
                format!("{:.1}", us[3]),
                w.best.to_string(),
                w.table.to_string(),
                format!("{:.3}", w.table_over_best),
                format!("{:.3}", w.table_over_unsplit),
                format!("{:.3}", w.rust_over_cu.iter().copied().fold(0.0, f64::max)),
            ]);
            if w.regression {
                regressions.push(format!(
                    "REGRESSION {} t_q={} kv={} {}: table split={} {:.1} us vs fastest split={} {:.1} us ({:+.1}%), margin {:.0}%",
                    w.kernel, w.t_q, w.kv, case.class.label(), w.table, us[si], w.best, us[b],
                    100.0 * (w.table_over_best - 1.0), 100.0 * (REGRESSION_MARGIN - 1.0)
                ));
            }
            out.row("winner", &w);
            winners.push(w);
        }
    }
    out.table(
        "per-(t_q, kv) winner table (Rust build, median us; table = the serving table's split)",
        t,
    );
    for r in &regressions {
        out.line(r.clone());
    }
    let ratios: Vec<f64> = winners.iter().flat_map(|w| w.rust_over_cu).collect();
    let worst = ratios.iter().copied().fold(0.0, f64::max);
    out.line(format!(
        "Rust/.cu over {} cells x splits: geomean {:.3}, worst {worst:.3} (targets: <= 1.03 geomean, <= 1.10 each)",
        ratios.len(),
        geomean(ratios.iter().copied())
    ));
    gemv_table(mla, timings, out);
    attn_table(mla, timings, out);
    flash_table(mla, timings, out);
    if let Some(path) = &mla.args.write_table {
        let table = measured_table(&winners, mla.table);
        match launch::write_table(path, &table) {
            Ok(()) => out.line(format!(
                "serving table measured by this run written to {}:\n{table}",
                path.display()
            )),
            Err(e) => out.line(format!("could not write the measured table: {e}")),
        }
    }
    regressions.len()
}

/// The measured table: per kernel and `t_q`, the split whose worst ratio to a cell's fastest
/// split is smallest over every measured depth (uniform class); widths not measured take the
/// nearest measured width below, or `base`'s entry where there is none. attn_gathered also gets
/// a deep-pool row from the measured depth that leaves the fewest cells outside the margin,
/// where some depth leaves fewer than one row for all depths does.
fn measured_table(winners: &[Winner], base: ServingTable) -> ServingTable {
    let uniform: Vec<&Winner> = winners
        .iter()
        .filter(|w| w.class == ValueClass::Uniform)
        .collect();
    let of = |k: MlaKernel| -> Vec<&Winner> {
        uniform
            .iter()
            .copied()
            .filter(|w| w.kernel == k.name())
            .collect()
    };
    let shallow =
        |k: MlaKernel| std::array::from_fn(|i| base.split(k, i + 1, 0).unwrap_or(Split::S1));
    let mut table = base.with_deep(None);
    for k in MlaKernel::ALL {
        table = with_row(table, k, fastest_row(&of(k), shallow(k)));
    }
    let attn = of(MlaKernel::AttnGathered);
    let misses = |t: &ServingTable| {
        attn.iter()
            .filter(|w| {
                let sel = t
                    .split(MlaKernel::AttnGathered, w.t_q, w.kv)
                    .unwrap_or(Split::S1);
                w.us[split_index(sel)] > REGRESSION_MARGIN * w.fastest_us()
            })
            .count()
    };
    let mut depths: Vec<usize> = attn.iter().map(|w| w.kv).collect();
    depths.sort_unstable();
    depths.dedup();
    let mut best = (misses(&table), table);
    for &from_pool in depths.iter().skip(1) {
        let (near, far): (Vec<&Winner>, Vec<&Winner>) = attn.iter().partition(|w| w.kv < from_pool);
        let near_row = fastest_row(&near, shallow(MlaKernel::AttnGathered));
        let candidate =
            with_row(table, MlaKernel::AttnGathered, near_row).with_deep(Some(DeepRow {
                from_pool,
                splits: fastest_row(&far, near_row),
            }));
        let m = misses(&candidate);
        if m < best.0 {
            best = (m, candidate);
        }
    }
    best.1
}

/// Per `t_q`, the split whose worst ratio to a cell's fastest split over `cells` of that `t_q`
/// is smallest; a width without cells takes the pick of the nearest width below, or
/// `fallback`'s entry where there is none.
fn fastest_row(cells: &[&Winner], fallback: [Split; MAX_T_Q]) -> [Split; MAX_T_Q] {
    let mut row = fallback;
    let mut last: Option<Split> = None;
    for (i, entry) in row.iter_mut().enumerate() {
        let at: Vec<&&Winner> = cells.iter().filter(|w| w.t_q == i + 1).collect();
        let worst = |s: usize| {
            at.iter()
                .map(|w| w.us[s] / w.fastest_us())
                .fold(0.0, f64::max)
        };
        let pick = if at.is_empty() {
            last
        } else {
            (0..4)
                .min_by(|&a, &b| worst(a).total_cmp(&worst(b)))
                .map(|s| Split::ALL[s])
        };
        if let Some(s) = pick {
            *entry = s;
            last = Some(s);
        }
    }
    row
}

/// `table` with `row` as `kernel`'s splits.
fn with_row(table: ServingTable, kernel: MlaKernel, row: [Split; MAX_T_Q]) -> ServingTable {
    (1..=MAX_T_Q).fold(table, |t, t_q| {
        t.with(kernel, t_q, row[t_q - 1]).unwrap_or(t)
    })
}

/// The index of `split` in [`Split::ALL`] (and in a [`Winner`]'s times).
fn split_index(split: Split) -> usize {
    Split::ALL.iter().position(|&s| s == split).unwrap_or(0)
}

/// The GEMVs with the serving table's split against the ceiling and the cuBLAS peer.
fn gemv_table(mla: &Mla, timings: &[CaseTiming<Mla>], out: &mut Report<'_>) {
    let ceiling = out.ceiling_gbps;
    let mut t = Table::new(&[
        "kernel",
        "case",
        "table split",
        "rust us",
        "GB/s",
        "% ceiling",
        "cold read us",
        "% of the read",
        "cublas us",
        "faster than cublas",
    ]);
    for case in timings {
        let stream = case.stream.map(|st| st.gbps());
        for k in [MlaKernel::AbsorbQ, MlaKernel::DecompressV] {
            let sel = mla
                .table
                .split(k, case.shape.t_q, case.shape.kv)
                .unwrap_or(Split::S1);
            let Some(arm) = case.arm(Arm::Kernel(k, sel)) else {
                continue;
            };
            let (Some(st), Some(gbps)) = (arm.on(Side::Rust), arm.gbps(Side::Rust)) else {
                continue;
            };
            let peer = case
                .arm(Arm::Sgemm(k))
                .and_then(|a| a.on(Side::Peer))
                .map(|s| s.median_us);
            t.row(vec![
                k.name().into(),
                case.label(),
                sel.to_string(),
                format!("{:.2}", st.median_us),
                format!("{gbps:.0}"),
                format!("{:.0}%", 100.0 * gbps / ceiling),
                case.stream
                    .map_or("-".into(), |st| format!("{:.2}", st.stats.median_us)),
                stream.map_or("-".into(), |g| format!("{:.0}%", 100.0 * gbps / g)),
                peer.map_or("-".into(), |p| format!("{p:.2}")),
                yes_no(peer.map(|p| st.median_us < p)),
            ]);
        }
    }
    out.table(
        "absorb_q and decompress_v at the table's split (targets at t_q = 1: >= 80% of the ceiling, faster than cuBLAS; cold read: read_stream over absorb_q's weight bytes, scrubbed like them)",
        t,
    );
}

/// The flash attention per cell: Rust against .cu, against the seed's kernel at the table's
/// split, and its roofline (bytes against the run's read ceiling, FLOPs against the f32 FMA
/// peak).
fn flash_table(mla: &Mla, timings: &[CaseTiming<Mla>], out: &mut Report<'_>) {
    let peak = mla.fma_peak.get().copied().flatten();
    let mut t = Table::new(&[
        "case",
        "entry",
        "rust us",
        "cu us",
        "rust/cu",
        "seed kernel us",
        "speedup",
        "GB/s",
        "% ceiling",
        "GFLOP",
        "TFLOP/s",
        "% f32 FMA peak",
    ]);
    let mut ratios = Vec::new();
    for case in timings {
        for heads in flash_entries(case.shape) {
            let c = case.shape;
            let Some(arm) = case.arm(Arm::Flash(heads)) else {
                continue;
            };
            let (Some(rust), Some(cu)) = (arm.on(Side::Rust), arm.on(Side::Cu)) else {
                continue;
            };
            let split = mla
                .table
                .split(MlaKernel::AttnGathered, c.t_q, c.kv)
                .unwrap_or(Split::S1);
            let seed = case
                .arm(Arm::Kernel(MlaKernel::AttnGathered, split))
                .and_then(|a| a.on(Side::Rust))
                .map(|s| s.median_us);
            let flop = 2.0 * (c.t_q * c.nh * c.n_slots * (c.row() + c.kv_rank)) as f64;
            let tflops = flop / (rust.median_us * 1e-6) / 1e12;
            let gbps = arm.gbps(Side::Rust).unwrap_or(f64::NAN);
            ratios.push(rust.median_us / cu.median_us);
            let pick = if heads == mla.flash_pick(c) {
                " (launcher's)"
            } else {
                ""
            };
            t.row(vec![
                case.label(),
                format!("{}{pick}", arm.spec.arm.label()),
                format!("{:.2}", rust.median_us),
                format!("{:.2}", cu.median_us),
                format!("{:.3}", rust.median_us / cu.median_us),
                seed.map_or("-".into(), |s| format!("{s:.1}")),
                seed.map_or("-".into(), |s| format!("{:.1}x", s / rust.median_us)),
                format!("{gbps:.0}"),
                format!("{:.0}%", 100.0 * gbps / out.ceiling_gbps),
                format!("{:.3}", flop / 1e9),
                format!("{tflops:.1}"),
                peak.map_or("-".into(), |p| format!("{:.0}%", 100.0 * tflops * 1e12 / p)),
            ]);
        }
    }
    if ratios.is_empty() {
        return;
    }
    out.table(
        "attn_flash (targets, seed geometry: <= 8 us at t_q 1, <= 25 us at t_q 8; FLOPs: 2 x t x nh x n_slots x (row + kv_rank), f32 work, which 3xTF32 does as three tensor-core products)",
        t,
    );
    out.line(format!(
        "attn_flash Rust/.cu over {} cells: geomean {:.3}, worst {:.3} (targets: <= 1.03 geomean, <= 1.10 each)",
        ratios.len(),
        geomean(ratios.iter().copied()),
        ratios.iter().copied().fold(0.0, f64::max)
    ));
}

/// attn_gathered's bandwidth on the rows it gathers, at the table's split.
fn attn_table(mla: &Mla, timings: &[CaseTiming<Mla>], out: &mut Report<'_>) {
    let mut t = Table::new(&["case", "table split", "rust us", "gathered MB", "GB/s"]);
    for case in timings {
        let sel = mla
            .table
            .split(MlaKernel::AttnGathered, case.shape.t_q, case.shape.kv)
            .unwrap_or(Split::S1);
        let Some(arm) = case.arm(Arm::Kernel(MlaKernel::AttnGathered, sel)) else {
            continue;
        };
        let (Some(st), Some(gbps)) = (arm.on(Side::Rust), arm.gbps(Side::Rust)) else {
            continue;
        };
        t.row(vec![
            case.label(),
            sel.to_string(),
            format!("{:.1}", st.median_us),
            format!("{:.1}", arm.spec.bytes as f64 / 1e6),
            format!("{gbps:.0}"),
        ]);
    }
    out.table(
        "attn_gathered (bytes: the gathered rows, queries, indices and outputs)",
        t,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_parse_and_refuse_widths_beyond_the_table() {
        let c = parse_cell("4x32768", "seed", 0).unwrap();
        assert_eq!((c.t_q, c.kv, c.n_slots), (4, 32768, 2048));
        assert_eq!(parse_cell("1x100", "seed", 0).unwrap().n_slots, 100);
        assert!(parse_cell("9x2048", "seed", 0)
            .unwrap_err()
            .contains("1..=8"));
        assert!(parse_cell("0x2048", "seed", 0).is_err());
        assert!(parse_cell("1x0", "seed", 0).is_err());
        assert!(parse_cell("1x9999999", "seed", 0)
            .unwrap_err()
            .contains("i32::MAX"));
    }

    /// A uniform cell of `kernel` with the Rust times `us` of splits 1, 2, 4 and 8.
    fn winner(kernel: &'static str, t_q: usize, kv: usize, us: [f64; 4]) -> Winner {
        Winner {
            kernel,
            t_q,
            kv,
            class: ValueClass::Uniform,
            us,
            best: 0,
            table: 0,
            table_over_best: 0.0,
            table_over_unsplit: 0.0,
            regression: false,
            rust_over_cu: [1.0; 4],
        }
    }

    #[test]
    fn the_measured_table_takes_the_split_with_the_smallest_worst_ratio() {
        let w = |t_q, kv, us| winner("absorb_q", t_q, kv, us);
        let cells = [
            w(1, 2048, [10.0, 6.0, 5.0, 5.1]),
            w(1, 32768, [10.0, 6.0, 5.3, 5.0]),
            w(2, 2048, [4.0, 5.0, 6.0, 7.0]),
        ];
        let t = measured_table(&cells, ServingTable::DEFAULT);
        assert_eq!(t.split(MlaKernel::AbsorbQ, 1, 0), Some(Split::S8));
        assert_eq!(t.split(MlaKernel::AbsorbQ, 2, 0), Some(Split::S1));
        // Unmeasured widths follow the nearest measured one below.
        assert_eq!(t.split(MlaKernel::AbsorbQ, 3, 0), Some(Split::S1));
        assert_eq!(
            t.split(MlaKernel::AttnGathered, 1, 0),
            ServingTable::DEFAULT.split(MlaKernel::AttnGathered, 1, 0)
        );
        assert_eq!(t.deep(), None);
    }

    #[test]
    fn a_deep_pool_row_is_written_where_one_row_cannot_hold_every_depth() {
        let w = |t_q, kv, us| winner("attn_gathered", t_q, kv, us);
        // Split 8 is fastest up to 128k rows and split 2 from 256k, by more than the margin.
        let cells = [
            w(3, 2048, [230.0, 160.0, 190.0, 132.0]),
            w(3, 131072, [240.0, 168.0, 220.0, 138.0]),
            w(3, 262144, [248.0, 168.0, 218.0, 194.0]),
            w(8, 2048, [217.0, 154.0, 205.0, 287.0]),
            w(8, 262144, [262.0, 179.0, 251.0, 415.0]),
        ];
        let t = measured_table(&cells, ServingTable::DEFAULT);
        let deep = t.deep().expect("a deep row");
        assert_eq!(deep.from_pool, 262144);
        assert_eq!(t.split(MlaKernel::AttnGathered, 3, 131072), Some(Split::S8));
        assert_eq!(t.split(MlaKernel::AttnGathered, 3, 262144), Some(Split::S2));
        assert_eq!(t.split(MlaKernel::AttnGathered, 8, 262144), Some(Split::S2));
        // The text form reads back to the same table.
        assert_eq!(ServingTable::parse(&t.to_string()), Ok(t));
        // Where one row holds every depth, none is written.
        let t = measured_table(&cells[3..], ServingTable::DEFAULT);
        assert_eq!(t.deep(), None);
    }

    #[test]
    fn attention_bounds_grow_with_the_scores() {
        assert!(attn_bound(0.0) < attn_bound(100.0));
    }
}
