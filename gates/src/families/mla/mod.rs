//! The mla gate: the three MLA decode kernels (absorb_q, decompress_v, attn_gathered) and
//! their split twins, split against unsplit and Rust against .cu bit for bit at every (t_q, kv)
//! cell, each kernel against a CPU f64 oracle, timings with the L2 scrubbed before every launch,
//! the winner table and the serving table's regression check, and cuBLAS peers for the GEMVs;
//! and the flash attention (`attn_flash`, on the tensor cores) against the same oracle, Rust
//! against .cu, each token's bits alone against the batch.

use crate::harness::chart::{Figure, Run};
use crate::harness::cli::{parse_pair, shape_refusal, unsigned, whole};
use crate::harness::compare::{geomean, within_scaled};
use crate::harness::output::{Output, POISON_F32};
use crate::harness::run::Report;
use crate::harness::{
    ArmSpec, CaseTiming, Check, Family, Footprint, Group, Label, On, Runs, Side, TimingMode,
    ValueClass,
};
use crate::peers::attention::{AttnChain, ChainShape, ChainWork};
use crate::peers::Blas;
use crate::report::{yes_no, Table};
use crate::rng;
use host::mla::{
    self as launch, pick_heads, pick_wgmma, wgmma_config, AbsorbShape, AttnBuffers, AttnShape,
    DecompressShape, DeepRow, FlashHeads, FlashWorkspace, MlaKernel, ServingTable, SlotIndices,
    Split, WgmmaHeads, MAX_T_Q, REGRESSION_MARGIN, WGMMA_ARCH,
};
use host::{CudaSlice, Error, Gpu};
use serde::{Deserialize, Serialize};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// What one call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    Kernel(MlaKernel, Split),
    /// cuBLAS strided-batched SGEMM on absorb_q's or decompress_v's operands.
    Sgemm(MlaKernel),
    /// The flash attention (`mla_attn_gathered_flash` or its 32-head twin, then
    /// `mla_attn_flash_combine`).
    Flash(FlashHeads),
    /// The flash attention on Hopper's warpgroup tensor cores (`mla_attn_flash_wgmma_*` of this
    /// many heads a block, then the combine of pairs), run where the module is sm_90a's.
    Wgmma(u32),
    /// The flash attention launched once per token (`t = 1`), into one output per token.
    FlashByToken,
    /// The attention as a framework chains it: gather, cuBLAS SGEMM, softmax, SGEMM
    /// ([`crate::peers::attention`]).
    Chain,
}

impl Label for Arm {
    fn label(&self) -> String {
        match self {
            Arm::Kernel(k, s) => format!("{} split={s}", k.name()),
            Arm::Sgemm(k) => format!("{} cublas sgemm", k.name()),
            Arm::Flash(FlashHeads::H16) => "attn_flash h16".into(),
            Arm::Flash(FlashHeads::H32) => "attn_flash h32".into(),
            Arm::Flash(FlashHeads::H64) => "attn_flash h64".into(),
            Arm::Wgmma(h) => format!("attn_flash wgmma h{h}"),
            Arm::FlashByToken => "attn_flash token by token".into(),
            Arm::Chain => "attn cublas chain".into(),
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
    /// The attention chain peer's indices, intermediates and output, where it runs.
    chain: Option<ChainSet>,
}

/// What [`Arm::Chain`] writes beside the set's attention inputs.
pub struct ChainSet {
    work: ChainWork,
    out: CudaSlice<f32>,
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
    /// Deepest pool (kv) of the default cells, 2048 (the shallowest) or more
    #[arg(long, default_value_t = 262_144, allow_negative_numbers = true,
          value_parser = |s: &str| whole::<usize>(s, KV_LENS[0] as u64..=u64::MAX))]
    max_kv: usize,
    /// Scrub the L2 before every timed launch (on), or time warm back-to-back calls (off)
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    scrub: String,
    /// Rope width of the default cells, a multiple of 4 (0 is the seed's geometry)
    #[arg(long, default_value_t = 0, allow_negative_numbers = true,
          value_parser = unsigned::<usize>)]
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
    /// Skip the peer arms (cuBLAS, and the attention chain built on it)
    #[arg(long)]
    no_peers: bool,
}

pub struct Mla {
    args: Args,
    table: ServingTable,
    blas: RefCell<Option<Result<Blas, String>>>,
    /// The attention chain peer's kernels, or why it cannot run (made with the cuBLAS handle).
    chain: RefCell<Option<Result<AttnChain, String>>>,
    /// The device's f32 FMA peak in FLOP/s (SMs x 128 lanes x 2 x clock), read on the first
    /// upload where the driver reports a clock.
    fma_peak: OnceCell<Option<f64>>,
    /// The device's SMs, read on the first upload (the launcher's choice of flash entry).
    sm_count: OnceCell<u32>,
    /// The arch of the run's modules (whether they hold the Hopper entries, and the chain peer's
    /// module), as the runner tells it ([`Family::run_on`]).
    arch: OnceCell<String>,
}

impl Mla {
    /// The flash arm whose entry the launcher takes at `c`.
    fn flash_pick(&self, c: Cell) -> Arm {
        let arch = self.arch.get().map_or("", String::as_str);
        launcher_pick(arch, self.sm_count.get().copied().unwrap_or(1), c)
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
        let on = matches!(*blas, Some(Ok(_)));
        let mut chain = self.chain.borrow_mut();
        if on && chain.is_none() {
            let arch = match self.arch.get() {
                Some(arch) => arch.clone(),
                None => host::module_arch(gpu)?.to_string(),
            };
            let made = AttnChain::new(gpu, &arch).map_err(|e| e.to_string());
            if let Err(why) = &made {
                println!("peer attn cublas chain: skipped ({why})");
            }
            *chain = Some(made);
        }
        Ok(on)
    }

    /// Whether the attention chain peer runs.
    fn chain_on(&self) -> bool {
        matches!(*self.chain.borrow(), Some(Ok(_)))
    }
}

impl Family for Mla {
    type Shape = Cell;
    type Arm = Arm;
    type Inputs = Inputs;
    type Set = Set;
    type Args = Args;

    const NAME: &'static str = "mla";
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
                 of 64 slots and 16 heads, then a combine of the chunks (in pairs, the pairs
                 in order)
  attn_flash wgmma  attn_flash's operations on Hopper's warpgroup tensor cores, a block per
                 token, pair of chunks and 16, 32 or 64 heads, each pair folded as the
                 combine folds it (arms `attn_flash wgmma hN`);
                 where the modules are sm_90a's and kv_rank is 512 with d_rope 0 or 64
--geometry v3.2 runs every cell at DeepSeek-V3.2's decode attention instead (128 heads,
d_nope 128, d_v 128, d_rope 64, 2048 slots).

Checks per cell, on seeded inputs:
  rust == cu             every kernel and split, outputs byte-identical between the builds
  split == unsplit       each kernel's twins against its unsplit kernel, in each build
  attn_flash by token    attn_flash over the batch against each token launched alone (t = 1;
                         at t_q 1, a second launch), and against every other entry (32 and
                         64 heads a block, the Hopper entries): the same bits
  oracle                 absorb_q and decompress_v within 1e-5 x sum |x w| of a CPU f64 GEMV
                         (the cuBLAS peers too); attn_gathered, on the cells with kv <= 32k,
                         within (2e-5 + 4e-6 x max scale|q.k|) x sum p|K| of an f64 softmax
                         (attn_flash and the attention chain peer too)
  all written            outputs poisoned (NaN) before every launch; none may remain
Value classes: uniform (every input in [-1, 1)); outliers (q_lat 300 times larger and eight
cache rows per token 10 times larger: most softmax weights underflow to zero, a few scores are
huge); edge (per token, slots gathering row 0, row pool - 1 and one row many times over,
four rows of zeros, and one row that is head 0's query scaled by 8, dominating its softmax).

Timings (skipped with --no-timing): every kernel and split in both builds and the peers: cuBLAS
strided-batched SGEMMs of the two GEMVs, and the attention as a framework chains it (PyTorch's
cache[idx], bmm, softmax, bmm: a gather kernel, a cuBLAS strided-batched SGEMM for the scores
and one more for the rope's where d_rope > 0, a row softmax kernel, an SGEMM for the weighted
sum; f32, no TF32), one call per sample between two events, with a
read stream of four times the L2 before every launch (--scrub on) or back to back (--scrub
off), interleaved in rounds (--rounds, default 10), medians. Reported: the per-(t_q, kv) winner
table against the serving table (--table, default compiled in); one REGRESSION line per cell
where the table's split is slower than the fastest by more than the margin (5%), which fails the
gate; Rust/.cu per cell and its geomean; the GEMVs against the read-stream ceiling and the peer;
attn_gathered's bandwidth on the gathered rows; attn_flash against the seed kernel and the
chain, with its roofline. --write-table PATH writes the fastest split per
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
            chain: RefCell::default(),
            fma_peak: OnceCell::new(),
            sm_count: OnceCell::new(),
            arch: OnceCell::new(),
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
        let chain = c.t_q * (c.n_slots * c.row() + c.nh * (c.n_slots + c.kv_rank)) * f;
        let set = gemv + acts + c.kv * c.row() * f + c.t_q * c.n_slots * 4 + chain;
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

    fn inputs(&self, c: Cell, class: ValueClass, seed: u64) -> Inputs {
        inputs::make(c, class, seed)
    }

    fn run_on(&self, arch: &str) {
        // One family value serves one run, on one set of modules.
        let _ = self.arch.set(arch.to_string());
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
            chain: if self.chain_on() {
                Some(ChainSet {
                    work: ChainWork::new(gpu, &c.chain())?,
                    out: gpu.alloc_poisoned(t * nh * c.kv_rank, POISON_F32)?,
                })
            } else {
                None
            },
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
        for arm in flash_entries(c)
            .map(Arm::Flash)
            .chain(self.wgmma_entries(c).map(Arm::Wgmma))
        {
            arms.push(ArmSpec {
                arm,
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
        if self.chain_on() {
            arms.push(ArmSpec {
                arm: Arm::Chain,
                runs: Runs::Peer,
                timed: true,
                bytes: attn,
            });
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
        arms.extend(self.wgmma_entries(c).map(Arm::Wgmma));
        arms.push(Arm::FlashByToken);
        groups.push(Group {
            name: "attn_flash h16 == h32 == h64 == the Hopper entries == each token alone (t = 1)"
                .into(),
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
        launch_arm::enqueue(self, gpu, on, c, arm, set)
    }

    fn poison(&self, gpu: &Gpu, arm: Arm, set: &mut Set) -> Result<(), Error> {
        launch_arm::poison(gpu, arm, set)
    }

    fn download(&self, gpu: &Gpu, arm: Arm, set: &Set) -> Result<Vec<Output>, Error> {
        launch_arm::download(gpu, arm, set)
    }

    fn oracle(&self, c: Cell, i: &Inputs, arm: Arm, _: Side, outputs: &[Output]) -> Vec<Check> {
        oracle::check(c, i, arm, outputs)
    }

    fn summarize(&self, timings: &[CaseTiming<Self>], out: &mut Report<'_>) -> usize {
        summary(self, timings, out)
    }

    fn chart(run: &Run) -> Result<Figure, String> {
        chart::figure(run)
    }

    fn refusals(&self, gpu: &Gpu, rust: &host::Module) -> Result<Vec<String>, Error> {
        refusals::problems(gpu, rust)
    }
}

/// The flash arm whose entry `host::mla::attn_flash` launches at `c` on a device of `sms` SMs
/// running the module of `arch`.
fn launcher_pick(arch: &str, sms: u32, c: Cell) -> Arm {
    match pick_wgmma(arch, &c.attn(), c.t_q, c.n_slots) {
        Some(heads) => Arm::Wgmma(heads),
        None => Arm::Flash(pick_heads(&c.attn(), c.t_q, c.n_slots, sms)),
    }
}

impl Mla {
    /// The Hopper entries' heads a block that a cell can launch: where the run's modules are
    /// sm_90a's and the launcher takes the cell's shape at that many heads.
    fn wgmma_entries(&self, c: Cell) -> impl Iterator<Item = u32> {
        let on = self.arch.get().is_some_and(|a| a == WGMMA_ARCH);
        WgmmaHeads::HEADS.into_iter().filter(move |&h| {
            on && wgmma_config(&c.attn(), (c.t_q, c.n_slots, c.kv), SCALE, h).is_ok()
        })
    }
}

/// The flash entries a cell can launch: 16 heads a block always, 32 where its rows fit.
fn flash_entries(c: Cell) -> impl Iterator<Item = FlashHeads> {
    FlashHeads::ALL.into_iter().filter(move |h| {
        kernels_gpu::mla::flash::shared_bytes(c.kv_rank as u32, c.d_rope as u32, h.tiles())
            .is_some()
    })
}

mod cell;
mod chart;
mod inputs;
mod launch_arm;
mod oracle;
mod refusals;
mod tables;

use cell::parse_cell;
use inputs::token_sets;
use tables::summary;

#[cfg(test)]
mod tests;
