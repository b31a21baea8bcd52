//! The bandwidth ceiling: a kernel that only reads.
//!
//! Gates report a memory-bound kernel's achieved bandwidth against what a pure read stream
//! reaches on the same device in the same run, not against a datasheet figure.

use crate::abi::F32x4;
#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::{Kernel, KernelSpec};
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::kernel;

/// Threads per block of `read_stream`.
pub const READ_BLOCK: u32 = 512;
/// Blocks per multiprocessor of `read_stream` (enough resident warps to keep HBM busy).
pub const READ_GRID_PER_SM: u32 = 4;
/// Independent 16-byte loads each thread has in flight per loop trip.
pub const READ_UNROLL: u32 = 4;

/// Every lane of a loaded vector feeds the sum, so no load can be narrowed.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn sum4(v: F32x4) -> f32 {
    (v.x + v.y) + (v.z + v.w)
}

/// Sums `n4` `F32x4`s with a grid-stride loop, [`READ_UNROLL`] independent loads a trip while a
/// whole trip fits, then one load a step for the rest, so any `n4` is read exactly once and
/// nothing past it. The sum is stored only if it equals a value random data does not produce,
/// which keeps the loads alive without a write stream of its own.
///
/// # Launch
/// grid `READ_GRID_PER_SM * SMs`, block [`READ_BLOCK`]; any `n4 >= 0` (the launcher passes whole
/// sweeps of `READ_UNROLL * grid * block`, so that the ceiling times the unrolled loop alone).
///
/// # Safety
/// `x` holds `n4` `F32x4`s; `sink` holds one f32.
#[kernel]
pub unsafe fn read_stream(x: *const F32x4, sink: *mut f32, n4: i64) {
    let stride = (grid_dim_x() * block_dim_x()) as i64;
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as i64;
    let mut acc = 0.0f32;
    while i + 3 * stride < n4 {
        let a = load_nc(x.add(i as usize));
        let b = load_nc(x.add((i + stride) as usize));
        let c = load_nc(x.add((i + 2 * stride) as usize));
        let e = load_nc(x.add((i + 3 * stride) as usize));
        acc += sum4(a) + sum4(b) + sum4(c) + sum4(e);
        i += READ_UNROLL as i64 * stride;
    }
    while i < n4 {
        acc += sum4(load_nc(x.add(i as usize)));
        i += stride;
    }
    if acc == -1.0 {
        *sink = acc;
    }
}

/// The family's kernels, for the tests (see [`KernelSpec`]).
#[cfg(not(target_arch = "nvptx64"))]
pub const KERNELS: &[KernelSpec] = &[KernelSpec {
    name: read_stream::NAME,
    max_block: READ_BLOCK,
    requires: &["ld.global.nc.v4.f32"],
    forbids: &[],
    only_on: None,
}];

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;

    /// `read_stream`'s two loops on the CPU, for every thread of a small grid and every `n4` up to
    /// three sweeps and a bit: each index below `n4` is read once and none at or past it (an
    /// index past it would panic here).
    #[test]
    fn every_index_is_read_once_for_any_n4() {
        let stride = 3 * 64;
        let unroll = READ_UNROLL as usize;
        for n4 in 0..3 * unroll * stride + 7 {
            let mut reads = std::vec![0u8; n4];
            for thread in 0..stride {
                let mut i = thread;
                while i + 3 * stride < n4 {
                    for k in 0..unroll {
                        reads[i + k * stride] += 1;
                    }
                    i += unroll * stride;
                }
                while i < n4 {
                    reads[i] += 1;
                    i += stride;
                }
            }
            assert!(reads.iter().all(|&r| r == 1), "n4 {n4}");
        }
    }
}
