//! MLA decode: the query absorption, the value decompression, and attention over gathered slots
//! of a latent cache, each with split twins.
//!
//! - `absorb_q`: `q_lat[t, h, c] = sum_d q_nope[t, h, d] * w_kb[h, c, d]`.
//! - `decompress_v`: `out[t, h, v] = sum_c o_lat[t, h, c] * w_vb[h, v, c]`.
//! - `attn_gathered`: per token and head, scores `s_i = scale * (q_lat . lat_i + q_pe . rope_i)`
//!   over the cache rows `idx[t, i]` (a row is `kv_rank` latent floats then `d_rope` rope
//!   floats), softmax over the slots, `out = sum_i p_i * lat_i`.
//!
//! Every kernel comes as four entries stamped from one body: the unsplit kernel and its twins of
//! split 2, 4 and 8. A split changes the launch geometry only: `split` blocks share what one block
//! of the unsplit kernel computes (a slice of a head's rows for the GEMVs, a share of a head
//! group for attn_gathered), and every output element
//! is computed by the same sequence of floating-point operations in every entry, so all four
//! give the same bits by construction. The [`ServingTable`] says which split to launch per `t_q`.
//!
//! The reference .cu (`reference/mla.cu`) performs the same operations in the same order; each
//! body below states its per-output sequence, which is the contract both builds keep.

pub mod attn;
pub mod flash;
pub mod gemv;
#[cfg(not(target_arch = "nvptx64"))]
mod table;

#[cfg(not(target_arch = "nvptx64"))]
pub use table::{
    DeepRow, MlaKernel, ServingTable, TableError, TableFault, MAX_T_Q, REGRESSION_MARGIN,
};

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::{flatten, Group, Kernel, KernelSpec};

/// A launch geometry: how many blocks share what one block of the unsplit kernel computes.
/// Every split computes each output with the same operations, so the choice is speed alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Split {
    S1,
    S2,
    S4,
    S8,
}

impl Split {
    pub const ALL: [Split; 4] = [Split::S1, Split::S2, Split::S4, Split::S8];

    /// Blocks per unsplit block: 1, 2, 4 or 8.
    pub const fn factor(self) -> u32 {
        match self {
            Split::S1 => 1,
            Split::S2 => 2,
            Split::S4 => 4,
            Split::S8 => 8,
        }
    }

    /// The split of `factor` blocks, if the kernels are stamped for it.
    pub const fn from_factor(factor: u32) -> Option<Split> {
        match factor {
            1 => Some(Split::S1),
            2 => Some(Split::S2),
            4 => Some(Split::S4),
            8 => Some(Split::S8),
            _ => None,
        }
    }
}

/// Dynamic shared memory one block may have on sm_90 (227 KiB), once the launch allows it.
pub const MAX_DYNAMIC_SHARED: u64 = 227 * 1024;

/// The part `part` of `0..n` cut into `split` contiguous parts of `ceil(n / split)`: the slice of
/// outputs (rows, or column chunks) that one block of a split launch keeps. The last parts may
/// be short or empty.
pub const fn split_range(n: u32, split: u32, part: u32) -> (u32, u32) {
    let per = n.div_ceil(split);
    let begin = if part * per < n { part * per } else { n };
    let end = if begin + per < n { begin + per } else { n };
    (begin, end)
}

/// Forbidden in every kernel of the family: no division anywhere (attn_gathered's one
/// reciprocal is `rcp.rn.f32`, whose dividend is 1), and no call, which in these kernels can
/// only be a panic path that rustc left in (an integer division by a value it cannot prove
/// nonzero, say).
#[cfg(not(target_arch = "nvptx64"))]
const FORBIDS: &[&str] = &["div.rn.f32", "call.uni"];

/// What absorb_q and decompress_v are made of: the read-only weight loads, the activations
/// copied into shared memory by `cp.async`, the fused multiply-adds and the warp butterfly.
#[cfg(not(target_arch = "nvptx64"))]
const GEMV_INSNS: &[&str] = &[
    "ld.global.nc.v4.f32",
    "cp.async.cg.shared.global",
    "cp.async.wait_group 0",
    "ld.shared.v4.f32",
    "bar.sync",
    "fma.rn.f32",
    "shfl.sync.bfly.b32",
];

/// What attn_gathered is made of: the gathered rows (prefetched into L2 at entry) and their
/// indices (clamped into the pool), shared-memory tiles, fused multiply-adds, shuffles for the
/// max and the sums, libdevice's `expf` and the correctly rounded reciprocal.
#[cfg(not(target_arch = "nvptx64"))]
const ATTN_INSNS: &[&str] = &[
    "prefetch.global.L2",
    "ld.global.nc.v4.f32",
    "ld.global.nc.u32",
    "max.s32",
    "min.s32",
    "st.shared.v4.f32",
    "ld.shared.v4.f32",
    "bar.sync",
    "fma.rn.f32",
    "shfl.sync.bfly.b32",
    "max.f32",
    "cvt.sat.f32.f32",
    "fma.rm.f32",
    "ex2.approx.ftz.f32",
    "rcp.rn.f32",
];

/// What attn_gathered_flash is made of: the gathered rows (through L1) and the queries staged by
/// `cp.async` (zero filled past the row), 3xTF32 tensor-core products, the softmax's shuffles and
/// `expf`, and the workspace's `float2` stores.
#[cfg(not(target_arch = "nvptx64"))]
const FLASH_INSNS: &[&str] = &[
    "ld.global.nc.u32",
    "cp.async.ca.shared.global",
    "cp.async.cg.shared.global",
    "cp.async.wait_group 0",
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    "st.shared.v2.f32",
    "bar.sync",
    "shfl.sync.bfly.b32",
    "max.f32",
    "ex2.approx.ftz.f32",
    "st.global.v2.f32",
];

/// What the Hopper entries are made of: the warpgroup's 3xTF32 products, the stage ring's
/// barriers, bulk copies of the split queries and `cp.async` copies of the rows through L1 (their
/// indices clamped into the pool), `setmaxnreg` handing the producer's share of the register file
/// to the consumers, and the softmax's shuffles and `expf`.
#[cfg(not(target_arch = "nvptx64"))]
const WGMMA_INSNS: &[&str] = &[
    "wgmma.mma_async.sync.aligned.m64n",
    "wgmma.fence.sync.aligned",
    "wgmma.commit_group.sync.aligned",
    "wgmma.wait_group.sync.aligned",
    "mbarrier.try_wait.parity.shared::cta.b64",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
    "cp.async.mbarrier.arrive.noinc.shared::cta.b64",
    "cp.async.ca.shared.global",
    "ld.global.nc.u32",
    "max.s32",
    "min.s32",
    "setmaxnreg.inc.sync.aligned.u32",
    "setmaxnreg.dec.sync.aligned.u32",
    "fence.proxy.async.shared::cta",
    "shfl.sync.bfly.b32",
    "ex2.approx.ftz.f32",
    "st.global.v2.f32",
];

/// What the Hopper entries' query split is made of: the tf32 split's rounding add and mask.
#[cfg(not(target_arch = "nvptx64"))]
const QUERY_SPLIT_INSNS: &[&str] = &["and.b32", "sub.rn.f32"];

/// What the combine is made of: the chunks' statistics loaded and their sums copied to shared
/// memory (`cp.async`, waited for before the fold), `expf`, fused multiply-adds and the
/// correctly rounded reciprocal.
#[cfg(not(target_arch = "nvptx64"))]
const COMBINE_INSNS: &[&str] = &[
    "ld.global.nc.f32",
    "cp.async.cg.shared.global",
    "cp.async.wait_group 0",
    "ld.shared.v4.f32",
    "max.f32",
    "ex2.approx.ftz.f32",
    "fma.rn.f32",
    "rcp.rn.f32",
];

#[cfg(not(target_arch = "nvptx64"))]
const fn spec(max_block: u32, requires: &'static [&'static str]) -> KernelSpec {
    KernelSpec {
        name: "",
        max_block,
        requires,
        forbids: FORBIDS,
        only_on: None,
    }
}

/// The family's kernels, for the tests (see [`KernelSpec`]).
#[cfg(not(target_arch = "nvptx64"))]
pub const KERNELS: &[KernelSpec] = &flatten::<24>(&[
    &spec(gemv::BLOCK, GEMV_INSNS).each::<_, 4>(gemv::AbsorbQ::ENTRIES),
    &spec(gemv::BLOCK, GEMV_INSNS).each::<_, 4>(gemv::DecompressV::ENTRIES),
    &spec(attn::BLOCK, ATTN_INSNS).each::<_, 4>(attn::AttnGathered::ENTRIES),
    &spec(flash::BLOCK, FLASH_INSNS).each::<_, 3>(flash::AttnFlash::ENTRIES),
    &spec(flash::COMBINE_BLOCK, COMBINE_INSNS).each::<_, 2>(flash::Combine::ENTRIES),
    &KernelSpec {
        only_on: Some("sm_90a"),
        ..spec(flash::wgmma::BLOCK, WGMMA_INSNS)
    }
    .each::<_, 6>(flash::wgmma::AttnFlashWgmma::ENTRIES),
    &[KernelSpec {
        name: flash::wgmma::mla_attn_flash_wgmma_queries::NAME,
        ..spec(flash::wgmma::QUERIES_BLOCK, QUERY_SPLIT_INSNS)
    }],
]);
