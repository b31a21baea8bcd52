//! Launchers for the MLA decode family: argument checks, launch geometry, and the typed launch
//! of the entry a split names.
//!
//! Each kernel has a launcher that takes the split (the gate times every one) and a `_serving`
//! launcher that takes it from a [`ServingTable`] by `t`. Both run every check before touching
//! the device and name the argument at fault; the checks are plain functions of sizes, tested
//! without a GPU. A split picks one of the four stamped entries by a `match` over their launch
//! markers, never by a kernel name built at run time.
//!
//! The attention to serve with is [`attn_flash`] (the tensor cores, bits independent of `t`, no
//! limit on `n_slots` from shared memory), at every `t`; [`attn_gathered`] and its split twins,
//! with the serving table, stay as the seed's protocol.
//!
//! The limits the launchers enforce are the kernels' own, exactly (the ABI table's limits): each
//! value a kernel forms in 32 bits from its sizes is checked to stay within `i32` (`limits`),
//! and nothing either build addresses in 64 bits is bounded.
//!
//! # One decode step's attention, from another crate
//! The queries' non-rope part absorbed into the latent space, the attention over the gathered
//! latent rows on the tensor cores, and its output decompressed, for one token at the seed's
//! geometry (64 heads, kv_rank 512, d_nope and d_v 256, no rope), on the launchers' stream:
//!
//! ```no_run
//! use host::mla::{self, AbsorbShape, AttnBuffers, AttnShape, DecompressShape, FlashWorkspace};
//! use host::mla::{ServingTable, SlotIndices};
//! use host::{Gpu, Module};
//!
//! fn main() -> Result<(), host::Error> {
//!     let (t, nh, kv_rank, d_nope, d_v, pool, n_slots) = (1, 64, 512, 256, 256, 4096, 2048);
//!     let gpu = Gpu::new(0)?;
//!     let module = Module::rust(&gpu)?;
//!     let table = ServingTable::DEFAULT;
//!     let q_nope = gpu.upload(&vec![0.01f32; t * nh * d_nope])?;
//!     let w_kb = gpu.upload(&vec![0.01f32; nh * kv_rank * d_nope])?;
//!     let w_vb = gpu.upload(&vec![0.01f32; nh * d_v * kv_rank])?;
//!     let cache = gpu.upload(&vec![0.5f32; pool * kv_rank])?;
//!     let q_pe = gpu.upload(&[0.0f32])?; // d_rope 0: not read
//!     let idx: Vec<i32> = (0..n_slots as i32).collect(); // the slots' rows of the pool
//!     let idx = SlotIndices::new(&gpu, &idx, t, n_slots, pool)?; // checked on the host
//!
//!     let mut q_lat = gpu.alloc_poisoned::<f32>(t * nh * kv_rank, 0)?;
//!     let absorb = AbsorbShape { t, nh, d_nope, kv_rank };
//!     mla::absorb_q_serving(&module, &gpu, &q_nope, &w_kb, &mut q_lat, absorb, &table)?;
//!
//!     let attn = AttnShape { nh, kv_rank, d_rope: 0 };
//!     let mut ws = FlashWorkspace::new(&gpu, &attn, t, n_slots)?; // reused while t and n_slots are
//!     let mut o_lat = gpu.alloc_poisoned::<f32>(t * nh * kv_rank, 0)?;
//!     let b = AttnBuffers { q_lat: &q_lat, q_pe: &q_pe, cache: &cache, idx: &idx, out: &mut o_lat };
//!     let scale = 0.0625; // the model's softmax scale
//!     mla::attn_flash(&module, &gpu, b, attn, scale, &mut ws)?;
//!
//!     let mut out = gpu.alloc_poisoned::<f32>(t * nh * d_v, 0)?;
//!     let decompress = DecompressShape { t, nh, d_v, kv_rank };
//!     mla::decompress_v_serving(&module, &gpu, &o_lat, &w_vb, &mut out, decompress, &table)?;
//!     let out = gpu.download(&out)?; // waits for the stream
//!     assert_eq!(out.len(), t * nh * d_v);
//!     Ok(())
//! }
//! ```
//!
//! attn_gathered's indices live on the device, where checking them would cost a pass over them
//! per launch: [`SlotIndices`] checks them on the host as they are uploaded, and is the only
//! index buffer its launchers take. (The kernel also clamps every index into the pool, so even a
//! violated check reads nothing outside the cache.)

use crate::check::{self, arg_err};
use crate::error::{ArgError, Error};
use crate::params::Params;
use crate::params::{DeviceIn, DeviceOut};
use crate::{Gpu, Module};
use cudarc::driver::LaunchConfig;
use kernels_gpu::abi::{Entry, Group, Kernel};
use kernels_gpu::mla::attn::{self, AttnGathered};
use kernels_gpu::mla::gemv::{self, AbsorbQ, DecompressV};
use kernels_gpu::mla::MAX_DYNAMIC_SHARED;
pub use kernels_gpu::mla::{
    DeepRow, MlaKernel, ServingTable, Split, TableError, TableFault, MAX_T_Q, REGRESSION_MARGIN,
};
use std::path::Path;

/// The entry `kernel` launches with `split`: its PTX name and the reference .cu's symbol.
pub fn entry(kernel: MlaKernel, split: Split) -> &'static str {
    match kernel {
        MlaKernel::AbsorbQ => AbsorbQ::entry(split).name,
        MlaKernel::DecompressV => DecompressV::entry(split).name,
        MlaKernel::AttnGathered => AttnGathered::entry(split).name,
    }
}

/// The split of `factor` blocks, or an error naming `split`.
pub fn split(kernel: &'static str, factor: usize) -> Result<Split, ArgError> {
    u32::try_from(factor)
        .ok()
        .and_then(Split::from_factor)
        .ok_or_else(|| {
            arg_err(
                kernel,
                "split",
                format!("{factor} is not one of 1, 2, 4, 8 (the stamped entries)"),
            )
        })
}

/// The table's split for `kernel` at `t` over a pool of `pool` cache rows (0 for the GEMVs,
/// which read none), or an error naming `t` where the table has no column.
pub fn serving_split(
    table: &ServingTable,
    kernel: MlaKernel,
    name: &'static str,
    t: usize,
    pool: usize,
) -> Result<Split, ArgError> {
    table.split(kernel, t, pool).ok_or_else(|| {
        arg_err(
            name,
            "t",
            format!("{t} is beyond the serving table (t_q 1..={MAX_T_Q})"),
        )
    })
}

/// Reads a serving table written in its text format (see [`ServingTable`]).
pub fn read_table(path: &Path) -> Result<ServingTable, Error> {
    let fail = |why: String| Error::TableFile {
        path: path.display().to_string(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    ServingTable::parse(&text).map_err(|e| match text.lines().nth(e.line - 1) {
        Some(line) => fail(format!("{e}: `{}`", line.trim())),
        None => fail(e.to_string()),
    })
}

/// Writes `table` in its text format, which [`read_table`] reads back.
pub fn write_table(path: &Path, table: &ServingTable) -> Result<(), Error> {
    std::fs::write(path, table.to_string()).map_err(|e| Error::TableFile {
        path: path.display().to_string(),
        why: e.to_string(),
    })
}

/// absorb_q's sizes: `q_nope [t, nh, d_nope]`, `w_kb [nh, kv_rank, d_nope]`, `q_lat [t, nh,
/// kv_rank]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbsorbShape {
    pub t: usize,
    pub nh: usize,
    pub d_nope: usize,
    pub kv_rank: usize,
}

/// decompress_v's sizes: `o_lat [t, nh, kv_rank]`, `w_vb [nh, d_v, kv_rank]`, `out [t, nh,
/// d_v]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecompressShape {
    pub t: usize,
    pub nh: usize,
    pub d_v: usize,
    pub kv_rank: usize,
}

/// Either GEMV in common terms, `y[t, h, r] = sum_k x[t, h, k] * w[h, r, k]`, with the names its
/// kernel gives each size and buffer.
#[derive(Debug, Clone, Copy)]
pub struct Gemv {
    t: usize,
    nh: usize,
    k: (&'static str, usize),
    r: (&'static str, usize),
    buffers: [&'static str; 3],
    /// Whether the kernel lists `k` before `r` (absorb_q: `d_nope, kv_rank`) or after
    /// (decompress_v: `d_v, kv_rank`).
    k_first: bool,
}

impl AbsorbShape {
    pub fn gemv(self) -> Gemv {
        Gemv {
            t: self.t,
            nh: self.nh,
            k: ("d_nope", self.d_nope),
            r: ("kv_rank", self.kv_rank),
            buffers: ["q_nope", "w_kb", "q_lat"],
            k_first: true,
        }
    }
}

impl DecompressShape {
    pub fn gemv(self) -> Gemv {
        Gemv {
            t: self.t,
            nh: self.nh,
            k: ("kv_rank", self.kv_rank),
            r: ("d_v", self.d_v),
            buffers: ["o_lat", "w_vb", "out"],
            k_first: false,
        }
    }
}

impl Gemv {
    /// Elements of `x`, `w` and `y`.
    pub fn lens(&self) -> [usize; 3] {
        let (t, nh, k, r) = (self.t, self.nh, self.k.1, self.r.1);
        [t * nh * k, nh * r * k, t * nh * r]
    }
}

/// The geometry of a GEMV launch of `split` and its integer arguments in the kernel's order
/// after the buffers: `t, nh`, then the two sizes as the kernel lists them.
pub fn gemv_config(
    kernel: &'static str,
    g: &Gemv,
    split: Split,
) -> Result<(LaunchConfig, [i32; 4]), ArgError> {
    let t = check::positive_i32(kernel, "t", g.t)?;
    check::at_most(
        kernel,
        "t",
        g.t,
        gemv::MAX_T as usize,
        "the tokens one launch takes",
    )?;
    let nh = check::positive_i32(kernel, "nh", g.nh)?;
    let k = check::multiple_of(kernel, g.k.0, g.k.1, 4, false)?;
    let r = check::positive_i32(kernel, g.r.0, g.r.1)?;
    limits::gemv(kernel, g, split)?;
    check::product_i32(kernel, "nh", &[g.nh, split.factor() as usize])?;
    let smem = check::shared_bytes(
        kernel,
        g.k.0,
        gemv::shared_bytes(t as u32, k as u32),
        MAX_DYNAMIC_SHARED,
    )?;
    let cfg = LaunchConfig {
        grid_dim: (gemv::grid(nh as u32, split.factor()), 1, 1),
        block_dim: (gemv::BLOCK, 1, 1),
        shared_mem_bytes: smem,
    };
    let sizes = if g.k_first { [k, r] } else { [r, k] };
    Ok((cfg, [t, nh, sizes[0], sizes[1]]))
}

/// The buffers of a GEMV hold what the launch reads and writes.
pub fn check_gemv_buffers(
    kernel: &'static str,
    g: &Gemv,
    have: [usize; 3],
) -> Result<(), ArgError> {
    for ((name, have), need) in g.buffers.into_iter().zip(have).zip(g.lens()) {
        check::len(kernel, name, have, need)?;
    }
    Ok(())
}

/// Every GEMV entry's parameter list (absorb_q's and decompress_v's are one).
type GemvParams = <AbsorbQ as Group>::Params;

/// Checks and launches the GEMV `entry` (of split `split`).
fn launch_gemv(
    entry: Entry<GemvParams>,
    module: &Module,
    gpu: &Gpu,
    buffers: (DeviceIn<'_, f32>, DeviceIn<'_, f32>, DeviceOut<'_, f32>),
    g: Gemv,
    split: Split,
) -> Result<(), Error> {
    let (x, w, y) = buffers;
    let (cfg, [t, nh, a, b]) = gemv_config(entry.name, &g, split)?;
    check_gemv_buffers(entry.name, &g, [x.len(), w.len(), y.len()])?;
    let args: <GemvParams as Params>::Args<'_> = (x, w, y, t, nh, a, b);
    // SAFETY: the geometry is the entry's own for this split, and the buffers hold what it
    // reads and writes, both checked above.
    unsafe { module.launch_chained(entry, gpu, cfg, args, &[]) }
}

/// `q_lat = q_nope x w_kb` per head, with the entry of `split`.
pub fn absorb_q(
    module: &Module,
    gpu: &Gpu,
    q_nope: DeviceIn<'_, f32>,
    w_kb: DeviceIn<'_, f32>,
    q_lat: DeviceOut<'_, f32>,
    shape: AbsorbShape,
    split: Split,
) -> Result<(), Error> {
    let buffers = (q_nope, w_kb, q_lat);
    launch_gemv(
        AbsorbQ::entry(split),
        module,
        gpu,
        buffers,
        shape.gemv(),
        split,
    )
}

/// [`absorb_q`] with the table's split for `shape.t`.
pub fn absorb_q_serving(
    module: &Module,
    gpu: &Gpu,
    q_nope: DeviceIn<'_, f32>,
    w_kb: DeviceIn<'_, f32>,
    q_lat: DeviceOut<'_, f32>,
    shape: AbsorbShape,
    table: &ServingTable,
) -> Result<(), Error> {
    let name = gemv::mla_absorb_q::NAME;
    let split = serving_split(table, MlaKernel::AbsorbQ, name, shape.t, 0)?;
    absorb_q(module, gpu, q_nope, w_kb, q_lat, shape, split)
}

/// `out = o_lat x w_vb` per head, with the entry of `split`.
pub fn decompress_v(
    module: &Module,
    gpu: &Gpu,
    o_lat: DeviceIn<'_, f32>,
    w_vb: DeviceIn<'_, f32>,
    out: DeviceOut<'_, f32>,
    shape: DecompressShape,
    split: Split,
) -> Result<(), Error> {
    let buffers = (o_lat, w_vb, out);
    launch_gemv(
        DecompressV::entry(split),
        module,
        gpu,
        buffers,
        shape.gemv(),
        split,
    )
}

/// [`decompress_v`] with the table's split for `shape.t`.
pub fn decompress_v_serving(
    module: &Module,
    gpu: &Gpu,
    o_lat: DeviceIn<'_, f32>,
    w_vb: DeviceIn<'_, f32>,
    out: DeviceOut<'_, f32>,
    shape: DecompressShape,
    table: &ServingTable,
) -> Result<(), Error> {
    let name = gemv::mla_decompress_v::NAME;
    let split = serving_split(table, MlaKernel::DecompressV, name, shape.t, 0)?;
    decompress_v(module, gpu, o_lat, w_vb, out, shape, split)
}

/// attn_gathered's sizes besides those of its [`SlotIndices`]: `q_lat [t, nh, kv_rank]`, `q_pe
/// [t, nh, d_rope]`, `cache [pool, kv_rank + d_rope]`, `out [t, nh, kv_rank]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnShape {
    pub nh: usize,
    pub kv_rank: usize,
    pub d_rope: usize,
}

impl AttnShape {
    /// Elements of `q_lat`, `q_pe`, `cache` and `out` for `t` tokens and `pool` cache rows.
    pub fn lens(&self, t: usize, pool: usize) -> [usize; 4] {
        let lat = t * self.nh * self.kv_rank;
        [
            lat,
            t * self.nh * self.d_rope,
            pool * (self.kv_rank + self.d_rope),
            lat,
        ]
    }
}

/// The integer arguments of an attn_gathered launch, in the kernel's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnInts {
    pub nh: i32,
    pub kv_rank: i32,
    pub d_rope: i32,
    pub t: i32,
    pub n_slots: i32,
    pub pool: i32,
}

/// The integer arguments every attention launch takes, each checked, and a finite `scale`.
fn attn_ints(
    kernel: &'static str,
    shape: &AttnShape,
    (t, n_slots, pool): (usize, usize, usize),
    scale: f32,
) -> Result<AttnInts, ArgError> {
    check::finite(kernel, "scale", scale)?;
    Ok(AttnInts {
        nh: check::positive_i32(kernel, "nh", shape.nh)?,
        kv_rank: check::multiple_of(kernel, "kv_rank", shape.kv_rank, 4, false)?,
        d_rope: check::multiple_of(kernel, "d_rope", shape.d_rope, 4, true)?,
        t: check::positive_i32(kernel, "t", t)?,
        n_slots: check::positive_i32(kernel, "n_slots", n_slots)?,
        pool: check::positive_i32(kernel, "pool", pool)?,
    })
}

/// The argument a refusal of a row too long names: `d_rope` where the row has one, else
/// `kv_rank`.
fn row_arg(shape: &AttnShape) -> &'static str {
    if shape.d_rope > 0 {
        "d_rope"
    } else {
        "kv_rank"
    }
}

/// The geometry of an attn_gathered launch of `split` and its integer arguments.
pub fn attn_config(
    kernel: &'static str,
    shape: &AttnShape,
    (t, n_slots, pool): (usize, usize, usize),
    scale: f32,
    split: Split,
) -> Result<(LaunchConfig, AttnInts), ArgError> {
    let ints = attn_ints(kernel, shape, (t, n_slots, pool), scale)?;
    // No element limit on the cache: both builds address its rows in 64 bits (row index times
    // row length as `usize` / `size_t`), so a pool of fewer than 2^31 rows may hold any number
    // of floats. What the kernels compute in 32 bits is checked here.
    limits::attn(kernel, shape, (t, n_slots), split)?;
    let groups = shape.nh.div_ceil(attn::HEADS as usize);
    check::product_i32(kernel, "t", &[t, groups, split.factor() as usize])?;
    // A row whose queries alone pass what a block may have is the row's fault, whatever the slots.
    let (kv_rank, d_rope) = (ints.kv_rank as u32, ints.d_rope as u32);
    let queries = attn::query_bytes(kv_rank, d_rope, split.factor());
    check::shared_bytes(kernel, row_arg(shape), queries, MAX_DYNAMIC_SHARED)?;
    let smem = check::shared_bytes(
        kernel,
        "n_slots",
        attn::shared_bytes(ints.n_slots as u32, kv_rank, d_rope, split.factor()),
        MAX_DYNAMIC_SHARED,
    )?;
    let cfg = LaunchConfig {
        grid_dim: (
            attn::grid(ints.t as u32, ints.nh as u32, split.factor()),
            1,
            1,
        ),
        block_dim: (attn::BLOCK, 1, 1),
        shared_mem_bytes: smem,
    };
    Ok((cfg, ints))
}

/// The buffers of an attn_gathered launch hold what it reads and writes: `have` is the length
/// of `q_lat`, `q_pe`, `cache` and `out`.
pub fn check_attn_buffers(
    kernel: &'static str,
    shape: &AttnShape,
    t: usize,
    pool: usize,
    have: [usize; 4],
) -> Result<(), ArgError> {
    let names = ["q_lat", "q_pe", "cache", "out"];
    for ((name, have), need) in names.into_iter().zip(have).zip(shape.lens(t, pool)) {
        check::len(kernel, name, have, need)?;
    }
    Ok(())
}

/// Every attn_gathered entry's parameter list.
type AttnParams = <AttnGathered as Group>::Params;

/// attn_gathered's buffers: the queries, the cache, the checked indices, the output.
pub struct AttnBuffers<'a> {
    pub q_lat: DeviceIn<'a, f32>,
    pub q_pe: DeviceIn<'a, f32>,
    pub cache: DeviceIn<'a, f32>,
    pub idx: &'a SlotIndices,
    pub out: DeviceOut<'a, f32>,
}

/// Checks and launches the attn_gathered `entry` (of split `split`).
fn launch_attn(
    entry: Entry<AttnParams>,
    module: &Module,
    gpu: &Gpu,
    b: AttnBuffers<'_>,
    shape: AttnShape,
    scale: f32,
    split: Split,
) -> Result<(), Error> {
    let (t, pool) = (b.idx.t(), b.idx.pool());
    let (cfg, n) = attn_config(entry.name, &shape, (t, b.idx.n_slots(), pool), scale, split)?;
    let have = [b.q_lat.len(), b.q_pe.len(), b.cache.len(), b.out.len()];
    check_attn_buffers(entry.name, &shape, t, pool, have)?;
    let args: <AttnParams as Params>::Args<'_> = (
        b.q_lat,
        b.q_pe,
        b.cache,
        b.idx.device(),
        b.out,
        n.nh,
        n.kv_rank,
        n.d_rope,
        n.t,
        n.n_slots,
        scale,
        n.pool,
    );
    // SAFETY: the geometry is the entry's own for this split, the buffers hold what it reads
    // and writes, and every index is in the pool whose rows `cache` holds, all checked above.
    unsafe { module.launch_chained(entry, gpu, cfg, args, &[]) }
}

/// Attention of every token's heads over its gathered cache rows, with the entry of `split`.
pub fn attn_gathered(
    module: &Module,
    gpu: &Gpu,
    buffers: AttnBuffers<'_>,
    shape: AttnShape,
    scale: f32,
    split: Split,
) -> Result<(), Error> {
    launch_attn(
        AttnGathered::entry(split),
        module,
        gpu,
        buffers,
        shape,
        scale,
        split,
    )
}

/// [`attn_gathered`] with the table's split for the indices' `t` and pool.
pub fn attn_gathered_serving(
    module: &Module,
    gpu: &Gpu,
    buffers: AttnBuffers<'_>,
    shape: AttnShape,
    scale: f32,
    table: &ServingTable,
) -> Result<(), Error> {
    let name = attn::mla_attn_gathered::NAME;
    let split = serving_split(
        table,
        MlaKernel::AttnGathered,
        name,
        buffers.idx.t(),
        buffers.idx.pool(),
    )?;
    attn_gathered(module, gpu, buffers, shape, scale, split)
}

mod flash;
mod limits;
mod slots;
pub use flash::{
    attn_flash, attn_flash_wgmma_with, attn_flash_with, flash_config, pick_heads, pick_wgmma,
    wgmma_config, workspace_lens, FlashHeads, FlashWorkspace, WgmmaConfig, WgmmaHeads, WGMMA_ARCH,
};
pub use limits::{attn_last_first_head, gemv_row_loop_end};
pub use slots::{check_slot_indices, SlotIndices};

#[cfg(test)]
mod flash_tests;
#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod tests;
