//! The launcher of the Hopper entries (`mla_attn_flash_wgmma_queries`, one of
//! `mla_attn_flash_wgmma_*`, then `mla_attn_flash_combine_pairs`): attn_flash's chunk sums folded
//! in pairs and its outputs, bit for bit, from the warpgroup tensor cores of an sm_90a module.

use super::{check_buffers, combine_config, grid_x, launch_combine, FlashWorkspace};
use crate::check::arg_err;
use crate::error::{ArgError, Error};
use crate::mla::{AttnBuffers, AttnShape};
use crate::params::Params;
use crate::{Gpu, Module};
use cudarc::driver::LaunchConfig;
use kernels_gpu::abi::{Group, Kernel};
pub use kernels_gpu::mla::flash::wgmma::WgmmaHeads;
use kernels_gpu::mla::flash::wgmma::{self, mla_attn_flash_wgmma_queries, AttnFlashWgmma};
use kernels_gpu::mla::flash::Partials;

/// The module arch that holds the Hopper entries.
pub const WGMMA_ARCH: &str = "sm_90a";

/// The entry of `heads` heads a block for `shape`, or the argument that rules it out: rows of
/// [`wgmma::KV_RANK`] with no rope or 64 rope columns, `nh` a multiple of `heads`.
fn entry_for(shape: &AttnShape, heads: u32) -> Result<WgmmaHeads, ArgError> {
    let kernel = <mla_attn_flash_wgmma_queries as Kernel>::NAME;
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

/// Floats of the split queries of `t` tokens at `shape`, where the Hopper entries take it.
pub(super) fn split_len(shape: &AttnShape, t: usize) -> Option<usize> {
    entry_for(shape, 16).ok()?;
    let row = (shape.kv_rank + shape.d_rope) as u32;
    let len = wgmma::split_queries(u32::try_from(t).ok()?, u32::try_from(shape.nh).ok()?, row)?;
    usize::try_from(len).ok()
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

/// The three launches of a Hopper attention and what they share: the entry, the query split's,
/// the entry's and the combine's geometry, the integer arguments, the split queries' length.
pub struct WgmmaConfig {
    pub entry: WgmmaHeads,
    pub queries: LaunchConfig,
    pub main: LaunchConfig,
    pub combine: LaunchConfig,
    pub ints: super::super::AttnInts,
    pub split_len: usize,
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
    let row = entry.row();
    let (t32, nh, ns) = (ints.t as u32, ints.nh as u32, ints.n_slots as u32);
    let split_len = split_len(shape, t)
        .ok_or_else(|| arg_err(kernel, "t", "the split queries exceed the address space"))?;
    let queries = LaunchConfig {
        grid_dim: (
            grid_x(
                kernel,
                wgmma::queries_grid(t32, nh, row),
                "query split",
                "t",
            )?,
            1,
            1,
        ),
        block_dim: (wgmma::QUERIES_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
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
        queries,
        main,
        combine: combine_config(kernel, &ints)?,
        ints,
        split_len,
    })
}

/// [`super::attn_flash`] on the Hopper entry of `heads` heads a block (16, 32 or 64): the same
/// outputs, bit for bit (the workspace holds the chunks' sums folded in pairs, half of them). Refused, before any launch, by a module of another arch
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
    let Some(qs) = ws
        .split_queries
        .as_mut()
        .filter(|q| q.len() == cfg.split_len)
    else {
        return Err(arg_err(
            kernel,
            "workspace",
            "has no split queries for this shape: it was made on a device other than compute capability 9.0, or for another d_rope",
        )
        .into());
    };
    let args: <<mla_attn_flash_wgmma_queries as Kernel>::Params as Params>::Args<'_> = (
        b.q_lat,
        b.q_pe,
        qs,
        n.nh,
        n.kv_rank,
        n.d_rope,
        n.t,
        heads as i32,
    );
    // SAFETY: the queries hold `t nh kv_rank` and `t nh d_rope` floats (checked above) and the
    // split buffer `t nh row` heads and tails, as its grid covers.
    unsafe {
        module.launch_chained(
            <mla_attn_flash_wgmma_queries as Kernel>::ENTRY,
            gpu,
            cfg.queries,
            args,
            &[],
        )?
    };
    let qs = ws.split_queries.as_ref().expect("checked above");
    let args: <<AttnFlashWgmma as Group>::Params as Params>::Args<'_> = (
        qs,
        b.cache,
        b.idx.device(),
        &mut ws.o,
        &mut ws.ml,
        n.nh,
        n.n_slots,
        scale,
        n.pool,
    );
    // SAFETY: the module is sm_90a's (checked above), the split queries were just written for
    // this entry's heads, and the cache, indices and workspace hold what the entry reads and
    // writes, as for attn_flash.
    unsafe { module.launch_chained(AttnFlashWgmma::entry(cfg.entry), gpu, cfg.main, args, &[])? };
    // SAFETY: the workspace is the one the launch above just wrote, for these buffers.
    unsafe { launch_combine(module, gpu, cfg.combine, ws, b.out, &n, Partials::Pairs) }
}
