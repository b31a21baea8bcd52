//! The launcher of the Hopper entries (one of `mla_attn_flash_wgmma_*`, then
//! `mla_attn_flash_combine`): attn_flash's workspace and outputs, bit for bit, from the warpgroup
//! tensor cores of an sm_90a module.

use super::{check_buffers, combine_config, grid_x, launch_combine, FlashWorkspace};
use crate::check::arg_err;
use crate::error::{ArgError, Error};
use crate::mla::{AttnBuffers, AttnShape};
use crate::params::Params;
use crate::{Gpu, Module};
use cudarc::driver::LaunchConfig;
use kernels_gpu::abi::Group;
pub use kernels_gpu::mla::flash::wgmma::WgmmaHeads;
use kernels_gpu::mla::flash::wgmma::{self, AttnFlashWgmma};

/// The module arch that holds the Hopper entries.
pub const WGMMA_ARCH: &str = "sm_90a";

/// The entry of `heads` heads a block for `shape`, or the argument that rules it out: rows of
/// [`wgmma::KV_RANK`] with no rope or 64 rope columns, `nh` a multiple of `heads`.
fn entry_for(shape: &AttnShape, heads: u32) -> Result<WgmmaHeads, ArgError> {
    let kernel = AttnFlashWgmma::entry(WgmmaHeads::H16).name;
    if shape.kv_rank != wgmma::KV_RANK as usize {
        return Err(arg_err(
            kernel,
            "kv_rank",
            format!(
                "is {}; the Hopper entries take {} (attn_flash takes any)",
                shape.kv_rank,
                wgmma::KV_RANK
            ),
        ));
    }
    if WgmmaHeads::of(heads, 0).is_none() {
        return Err(arg_err(
            kernel,
            "heads",
            format!("is {heads}; the Hopper entries take 16, 32 or 64 heads a block"),
        ));
    }
    let d_rope = u32::try_from(shape.d_rope).unwrap_or(u32::MAX);
    let entry = WgmmaHeads::of(heads, d_rope).ok_or_else(|| {
        arg_err(
            kernel,
            "d_rope",
            format!("is {}; the Hopper entries take 0 or 64", shape.d_rope),
        )
    })?;
    if shape.nh == 0 || !shape.nh.is_multiple_of(heads as usize) {
        return Err(arg_err(
            kernel,
            "nh",
            format!(
                "is {}, not a multiple of the entry's {heads} heads",
                shape.nh
            ),
        ));
    }
    Ok(entry)
}

/// The Hopper entry [`super::attn_flash`] launches in place of attn_flash's own, or `None`: on the
/// sm_90a module, at the entries' geometry, for wide launches of many slots, where the entries
/// outrun attn_flash's (the bounds and their measurements are in perf-notes), with fewer heads
/// a block below the widest launches; the next heads that divide `nh` where those do not.
pub fn pick_wgmma(arch: &str, shape: &AttnShape, t: usize, n_slots: usize) -> Option<u32> {
    let rows = t.checked_mul(shape.nh)?;
    if arch != WGMMA_ARCH || n_slots < 2048 || rows < 256 {
        return None;
    }
    let first = if rows >= 512 { 64 } else { 32 };
    WgmmaHeads::HEADS
        .into_iter()
        .rev()
        .filter(|&h| h <= first)
        .find(|&h| entry_for(shape, h).is_ok())
}

/// The two launches of a Hopper attention and what they share: the entry, the entry's and the
/// combine's geometry, the integer arguments.
pub struct WgmmaConfig {
    pub entry: WgmmaHeads,
    pub main: LaunchConfig,
    pub combine: LaunchConfig,
    pub ints: super::super::AttnInts,
}

/// The launches of the Hopper entry of `heads` heads a block at `shape`, or the argument that
/// rules them out (the checks of [`super::flash_config`], and the entries' own geometry).
pub fn wgmma_config(
    shape: &AttnShape,
    (t, n_slots, pool): (usize, usize, usize),
    scale: f32,
    heads: u32,
) -> Result<WgmmaConfig, ArgError> {
    let entry = entry_for(shape, heads)?;
    let kernel = AttnFlashWgmma::entry(entry).name;
    let ints = super::super::attn_ints(kernel, shape, (t, n_slots, pool), scale)?;
    let tiles = heads / kernels_gpu::mla::flash::TILE_HEADS;
    super::super::limits::flash(kernel, shape, n_slots, tiles)?;
    let (t32, nh, ns) = (ints.t as u32, ints.nh as u32, ints.n_slots as u32);
    let main = LaunchConfig {
        grid_dim: (
            grid_x(kernel, wgmma::grid(t32, nh, ns, heads), "flash", "n_slots")?,
            1,
            1,
        ),
        block_dim: (wgmma::BLOCK, 1, 1),
        shared_mem_bytes: wgmma::shared_bytes(heads),
    };
    Ok(WgmmaConfig {
        entry,
        main,
        combine: combine_config(kernel, &ints)?,
        ints,
    })
}

/// [`super::attn_flash`] on the Hopper entry of `heads` heads a block (16, 32 or 64): the same
/// workspace and outputs, bit for bit. Refused, before any launch, by a module of another arch
/// than sm_90a and by shapes the entries do not take (see `kernels_gpu::mla::flash::wgmma`).
pub fn attn_flash_wgmma_with(
    module: &Module,
    gpu: &Gpu,
    b: AttnBuffers<'_>,
    shape: AttnShape,
    scale: f32,
    ws: &mut FlashWorkspace,
    heads: u32,
) -> Result<(), Error> {
    let (t, n_slots, pool) = (b.idx.t(), b.idx.n_slots(), b.idx.pool());
    let cfg = wgmma_config(&shape, (t, n_slots, pool), scale, heads)?;
    let kernel = AttnFlashWgmma::entry(cfg.entry).name;
    if module.arch() != WGMMA_ARCH {
        return Err(arg_err(
            kernel,
            "module",
            format!(
                "is built for {}; the Hopper entries are in the {WGMMA_ARCH} module alone",
                module.arch()
            ),
        )
        .into());
    }
    check_buffers(kernel, &b, &shape, ws)?;
    let n = cfg.ints;
    let args: <<AttnFlashWgmma as Group>::Params as Params>::Args<'_> = (
        b.q_lat,
        b.q_pe,
        b.cache,
        b.idx.device(),
        &mut ws.o,
        &mut ws.ml,
        n.nh,
        n.n_slots,
        scale,
        n.pool,
    );
    // SAFETY: the module is sm_90a's (checked above), and the queries, cache, indices and
    // workspace hold what the entry reads and writes, as for attn_flash.
    unsafe { module.launch_chained(AttnFlashWgmma::entry(cfg.entry), gpu, cfg.main, args, &[])? };
    // SAFETY: the workspace is the one the launch above just wrote, for these buffers.
    unsafe { launch_combine(module, gpu, cfg.combine, ws, b.out, &n) }
}
