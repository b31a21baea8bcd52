//! The launcher of the flash attention (`mla_attn_gathered_flash` then `mla_attn_flash_combine`)
//! and its workspace.
//!
//! The combine is launched as a programmatic dependent of the flash kernel
//! ([`Module::launch_dependent`]): it launches as the flash kernel's blocks exit (that kernel does
//! not trigger earlier), so its blocks spread over the SMs instead of crowding onto those the flash
//! grid leaves idle, and it waits for that kernel's writes before it reads them. Launched plainly it
//! gives the same bits. The flash
//! kernel itself is launched as the other launchers launch theirs ([`Gpu::set_programmatic`]).
//!
//! The workspace holds every chunk's partial output; its size is a function of `t`, `nh`,
//! `kv_rank` and `n_slots` ([`flash::workspace`]), so a caller makes one per shape and reuses it.
//! Unlike the seed's kernel, nothing here bounds `n_slots` by shared memory (the row length is
//! bounded instead, by [`flash::MAX_ROW`]), and no buffer is bounded in elements: the kernels
//! address the queries, the cache, the indices and the workspace in 64 bits.

use super::{AttnBuffers, AttnShape};
use crate::check::arg_err;
use crate::error::{ArgError, Error};
use crate::params::Params;
use crate::{Gpu, Module};
use cudarc::driver::{CudaSlice, LaunchConfig};
use kernels_gpu::abi::{Group, Kernel};
pub use kernels_gpu::mla::flash::FlashHeads;
use kernels_gpu::mla::flash::{self, AttnFlash, Combine, Partials};

mod wgmma;
pub use wgmma::{
    attn_flash_wgmma_with, pick_wgmma, wgmma_config, WgmmaConfig, WgmmaHeads, WGMMA_ARCH,
};

/// What [`attn_flash`] launches: the most heads a block whose shared memory fits and whose grid
/// still gives nine SMs in ten a block, else 16.
pub fn pick_heads(shape: &AttnShape, t: usize, n_slots: usize, sm_count: u32) -> FlashHeads {
    let fills = |h: FlashHeads| {
        let fits = u32::try_from(shape.kv_rank)
            .ok()
            .zip(u32::try_from(shape.d_rope).ok())
            .and_then(|(kv_rank, d_rope)| flash::shared_bytes(kv_rank, d_rope, h.tiles()))
            .is_some();
        let blocks = flash::grid(
            u32::try_from(t).unwrap_or(u32::MAX),
            u32::try_from(shape.nh).unwrap_or(u32::MAX),
            u32::try_from(n_slots).unwrap_or(u32::MAX),
            h.tiles(),
        )
        .unwrap_or(u64::MAX);
        fits && blocks.saturating_mul(10) >= 9 * u64::from(sm_count)
    };
    [FlashHeads::H64, FlashHeads::H32]
        .into_iter()
        .find(|&h| fills(h))
        .unwrap_or(FlashHeads::H16)
}

/// The chunks' partial outputs and statistics of one flash launch shape, and, on a device of
/// compute capability 9.0 and at the Hopper entries' geometry, the queries split for them: made
/// with the workspace, so that no launch allocates (a launch captured into a graph must not).
pub struct FlashWorkspace {
    o: CudaSlice<f32>,
    ml: CudaSlice<f32>,
    split_queries: Option<CudaSlice<f32>>,
    /// `(t, nh, kv_rank, n_slots)` the buffers were sized for.
    dims: (usize, usize, usize, usize),
}

impl FlashWorkspace {
    /// A workspace for `t` tokens of `n_slots` slots at `shape`.
    pub fn new(gpu: &Gpu, shape: &AttnShape, t: usize, n_slots: usize) -> Result<Self, Error> {
        let (o, ml) = workspace_lens(shape, t, n_slots)?;
        let split = match gpu.info().compute_capability {
            (9, 0) => wgmma::split_len(shape, t),
            _ => None,
        };
        Ok(FlashWorkspace {
            o: gpu.alloc_poisoned(o, 0xff)?,
            ml: gpu.alloc_poisoned(ml, 0xff)?,
            split_queries: split.map(|len| gpu.alloc_poisoned(len, 0xff)).transpose()?,
            dims: (t, shape.nh, shape.kv_rank, n_slots),
        })
    }

    /// The chunks' partial sums `[t, chunks, nh, kv_rank]` and their maxima and numerator sums
    /// `[t, chunks, nh, 2]`, as the last flash launch left them: attn_flash's; a Hopper entry
    /// writes `[t, pairs, nh, ..]` at their start, its chunks folded in pairs.
    pub fn partials(&self) -> (&CudaSlice<f32>, &CudaSlice<f32>) {
        (&self.o, &self.ml)
    }

    /// Fills every buffer with the byte `poison` (the split queries too, where made), so that
    /// whatever the next launch does not write shows.
    pub fn poison(&mut self, gpu: &Gpu, poison: u8) -> Result<(), Error> {
        gpu.poison(&mut self.o, poison)?;
        gpu.poison(&mut self.ml, poison)?;
        match &mut self.split_queries {
            Some(qs) => gpu.poison(qs, poison),
            None => Ok(()),
        }
    }
}

/// Elements of the workspace's two buffers, or the argument that makes them unaddressable.
pub fn workspace_lens(
    shape: &AttnShape,
    t: usize,
    n_slots: usize,
) -> Result<(usize, usize), ArgError> {
    let kernel = flash::mla_attn_gathered_flash::NAME;
    let dims = [
        ("t", t),
        ("nh", shape.nh),
        ("kv_rank", shape.kv_rank),
        ("n_slots", n_slots),
    ];
    if let Some(&(arg, n)) = dims.iter().find(|(_, n)| u32::try_from(*n).is_err()) {
        return Err(arg_err(kernel, arg, format!("{n} exceeds u32::MAX")));
    }
    let [t, nh, kv_rank, n_slots] = dims.map(|(_, n)| n as u32);
    let lens = flash::workspace(t, nh, kv_rank, n_slots)
        .and_then(|(o, ml)| Some((usize::try_from(o).ok()?, usize::try_from(ml).ok()?)));
    match lens {
        Some(lens) => Ok(lens),
        None => Err(arg_err(
            kernel,
            "n_slots",
            "the workspace exceeds the address space",
        )),
    }
}

/// The two launches' geometry and the flash kernel's integer arguments.
pub fn flash_config(
    shape: &AttnShape,
    (t, n_slots, pool): (usize, usize, usize),
    scale: f32,
    heads: FlashHeads,
) -> Result<(LaunchConfig, LaunchConfig, super::AttnInts), ArgError> {
    let kernel = AttnFlash::entry(heads).name;
    let ints = super::attn_ints(kernel, shape, (t, n_slots, pool), scale)?;
    let smem = flash::shared_bytes(ints.kv_rank as u32, ints.d_rope as u32, heads.tiles())
        .ok_or_else(|| {
            let row = u64::from(ints.kv_rank as u32) + u64::from(ints.d_rope as u32);
            arg_err(
                kernel,
                super::row_arg(shape),
                format!(
                    "kv_rank + d_rope = {row} is too long: a chunk's rows must fit the shared memory of a block (at most {} floats at 16 heads a block)",
                    flash::MAX_ROW
                ),
            )
        })?;
    // Every offset is formed in 64 bits (queries, cache rows, indices, the workspace): only the
    // .cu's head groups and chunks are counted in 32 bits.
    super::limits::flash(kernel, shape, n_slots, heads.tiles())?;
    let (t32, nh, ns) = (ints.t as u32, ints.nh as u32, ints.n_slots as u32);
    let main = LaunchConfig {
        grid_dim: (
            grid_x(
                kernel,
                flash::grid(t32, nh, ns, heads.tiles()),
                "flash",
                "n_slots",
            )?,
            1,
            1,
        ),
        block_dim: (flash::BLOCK, 1, 1),
        shared_mem_bytes: smem,
    };
    Ok((main, combine_config(kernel, &ints)?, ints))
}

/// A grid of `blocks`, or the argument `arg` that grows it most named for exceeding it.
fn grid_x(
    kernel: &'static str,
    blocks: Option<u64>,
    what: &str,
    arg: &'static str,
) -> Result<u32, ArgError> {
    blocks
        .and_then(|b| u32::try_from(b).ok())
        .filter(|&b| b <= i32::MAX as u32)
        .ok_or_else(|| {
            let blocks = blocks.map_or("more than 2^64".to_string(), |b| b.to_string());
            arg_err(
                kernel,
                arg,
                format!("{blocks} {what} blocks exceed the grid"),
            )
        })
}

/// The combine's launch for the flash launch of `ints`.
fn combine_config(kernel: &'static str, ints: &super::AttnInts) -> Result<LaunchConfig, ArgError> {
    let (t, nh, kv) = (ints.t as u32, ints.nh as u32, ints.kv_rank as u32);
    Ok(LaunchConfig {
        grid_dim: (
            grid_x(kernel, flash::combine_grid(t, nh, kv), "combine", "nh")?,
            1,
            1,
        ),
        block_dim: (flash::COMBINE_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// Attention of every token's heads over its gathered cache rows on the tensor cores, chunk by
/// chunk (`mla_attn_gathered_flash` or its 32- or 64-head twin, as [`pick_heads`] says, or on
/// an sm_90a module the Hopper entry [`pick_wgmma`] names), then the chunks combined
/// (`mla_attn_flash_combine`): the same function as [`super::attn_gathered`], with bits that
/// depend on `n_slots` and the row length only, never on `t`, the entry or the GPU (see
/// `kernels_gpu::mla::flash`).
pub fn attn_flash(
    module: &Module,
    gpu: &Gpu,
    b: AttnBuffers<'_>,
    shape: AttnShape,
    scale: f32,
    ws: &mut FlashWorkspace,
) -> Result<(), Error> {
    let (t, n_slots) = (b.idx.t(), b.idx.n_slots());
    if let Some(heads) = wgmma::pick_wgmma(module.arch(), &shape, t, n_slots) {
        return attn_flash_wgmma_with(module, gpu, b, shape, scale, ws, heads);
    }
    let heads = pick_heads(&shape, t, n_slots, gpu.info().sm_count);
    attn_flash_with(module, gpu, b, shape, scale, ws, heads)
}

/// [`attn_flash`] with the entry `heads`.
pub fn attn_flash_with(
    module: &Module,
    gpu: &Gpu,
    b: AttnBuffers<'_>,
    shape: AttnShape,
    scale: f32,
    ws: &mut FlashWorkspace,
    heads: FlashHeads,
) -> Result<(), Error> {
    let (t, n_slots, pool) = (b.idx.t(), b.idx.n_slots(), b.idx.pool());
    let kernel = AttnFlash::entry(heads).name;
    let (main, combine, n) = flash_config(&shape, (t, n_slots, pool), scale, heads)?;
    check_buffers(kernel, &b, &shape, ws)?;
    let args: <<AttnFlash as Group>::Params as Params>::Args<'_> = (
        b.q_lat,
        b.q_pe,
        b.cache,
        b.idx.device(),
        &mut ws.o,
        &mut ws.ml,
        n.nh,
        n.kv_rank,
        n.d_rope,
        n.t,
        n.n_slots,
        scale,
        n.pool,
    );
    // SAFETY: the geometry is the kernel's own, the buffers and the workspace hold what it reads
    // and writes, and every index is in the pool whose rows `cache` holds, all checked above.
    unsafe { module.launch_chained(AttnFlash::entry(heads), gpu, main, args, &[])? };
    // SAFETY: the workspace is the one the flash launch just wrote, for these buffers.
    unsafe { launch_combine(module, gpu, combine, ws, b.out, &n, Partials::Chunks) }
}

/// The buffers' lengths and the workspace's shape checked against the launch.
fn check_buffers(
    kernel: &'static str,
    b: &AttnBuffers<'_>,
    shape: &AttnShape,
    ws: &FlashWorkspace,
) -> Result<(), ArgError> {
    let (t, n_slots, pool) = (b.idx.t(), b.idx.n_slots(), b.idx.pool());
    let have = [b.q_lat.len(), b.q_pe.len(), b.cache.len(), b.out.len()];
    super::check_attn_buffers(kernel, shape, t, pool, have)?;
    if ws.dims != (t, shape.nh, shape.kv_rank, n_slots) {
        let (wt, wnh, wkv, wns) = ws.dims;
        return Err(arg_err(
            kernel,
            "workspace",
            format!(
                "was made for t {wt}, nh {wnh}, kv_rank {wkv}, n_slots {wns}; the launch has t {t}, nh {}, kv_rank {}, n_slots {n_slots}",
                shape.nh, shape.kv_rank
            ),
        ));
    }
    Ok(())
}

/// The combine of the `partials` a flash launch just wrote to `ws`, into `out`.
///
/// # Safety
/// `ws` was written by a flash launch of `n` on this stream, as `partials` says, and `out` holds
/// its output.
unsafe fn launch_combine(
    module: &Module,
    gpu: &Gpu,
    combine: LaunchConfig,
    ws: &FlashWorkspace,
    out: crate::params::DeviceOut<'_, f32>,
    n: &super::AttnInts,
    partials: Partials,
) -> Result<(), Error> {
    let args: <<Combine as Group>::Params as Params>::Args<'_> =
        (&ws.o, &ws.ml, out, n.nh, n.kv_rank, n.t, n.n_slots);
    // SAFETY: as the caller says; the combine waits for the flash launch to finish before it
    // reads the workspace.
    unsafe { module.launch_dependent_entry(Combine::entry(partials), gpu, combine, args) }
}
