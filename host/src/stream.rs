//! Launcher for the read-stream ceiling kernel.

use crate::check::{arg_err, len};
use crate::error::{ArgError, Error};
use crate::params::{DeviceIn, DeviceOut};
use crate::{Gpu, Module};
use cudarc::driver::LaunchConfig;
use kernels_gpu::abi::Kernel;
use kernels_gpu::stream::{self as k, READ_BLOCK, READ_GRID_PER_SM, READ_UNROLL};

/// `read_stream`'s geometry on a device with `sm_count` multiprocessors: [`READ_GRID_PER_SM`]
/// blocks per SM of [`READ_BLOCK`] threads.
fn launch_config(sm_count: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (READ_GRID_PER_SM * sm_count.max(1), 1, 1),
        block_dim: (READ_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The number of floats one launch of [`read_stream`] reads of `len` on a device with
/// `sm_count` multiprocessors: the largest whole number of grid sweeps that fits. The kernel
/// reads any length correctly; whole sweeps keep its tail loop out of the ceiling.
pub fn sweep_floats(sm_count: u32, len: usize) -> Result<usize, ArgError> {
    let sweep = (launch_config(sm_count).grid_dim.0 * READ_BLOCK * READ_UNROLL) as usize * 4;
    let n = len / sweep * sweep;
    if n == 0 {
        return Err(arg_err(
            k::read_stream::NAME,
            "x",
            format!("holds {len} floats, fewer than one sweep of the grid ({sweep})"),
        ));
    }
    Ok(n)
}

/// Reads the first [`sweep_floats`] floats of `x` once; returns how many bytes it reads.
pub fn read_stream(
    module: &Module,
    gpu: &Gpu,
    x: DeviceIn<'_, f32>,
    sink: DeviceOut<'_, f32>,
) -> Result<usize, Error> {
    let n = sweep_floats(gpu.info().sm_count, x.len())?;
    launch(module, gpu, x, sink, n)
}

/// Reads every float of `x` once (its length a multiple of 4) with the grid of
/// [`read_stream`]: the same kernel as the ceiling over a buffer of any size, for comparing a
/// kernel with a pure read of as many bytes (a size the grid's sweeps do not divide ends in the
/// kernel's one-load tail loop). Returns the bytes read.
pub fn read_stream_all(
    module: &Module,
    gpu: &Gpu,
    x: DeviceIn<'_, f32>,
    sink: DeviceOut<'_, f32>,
) -> Result<usize, Error> {
    check_whole(x.len())?;
    launch(module, gpu, x, sink, x.len())
}

/// Launches `read_stream` over the first `n` floats of `x` (`n` a multiple of 4, at most its
/// length) into `sink`, once its length is checked; returns the bytes read.
fn launch(
    module: &Module,
    gpu: &Gpu,
    x: DeviceIn<'_, f32>,
    sink: DeviceOut<'_, f32>,
    n: usize,
) -> Result<usize, Error> {
    check_sink(sink.len())?;
    let cfg = launch_config(gpu.info().sm_count);
    // SAFETY: `x` holds `n / 4` float4s (the callers' checks); `sink` holds one float.
    unsafe { module.launch::<k::read_stream>(gpu, cfg, (x, sink, (n / 4) as i64))? };
    Ok(n * 4)
}

/// What [`read_stream_all`] checks of `x`: a positive multiple of 4 floats.
fn check_whole(x: usize) -> Result<(), ArgError> {
    if x == 0 || !x.is_multiple_of(4) {
        return Err(arg_err(
            k::read_stream::NAME,
            "x",
            format!("holds {x} floats; it needs a positive multiple of 4"),
        ));
    }
    Ok(())
}

/// Every launch's check of `sink`: one float.
fn check_sink(sink: usize) -> Result<(), ArgError> {
    len(k::read_stream::NAME, "sink", sink, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_whole_sweeps_only() {
        assert_eq!(launch_config(132).grid_dim.0, 528);
        let n = sweep_floats(132, 1 << 28).unwrap();
        let sweep = 528 * 512 * 4 * 4;
        assert_eq!(n % sweep, 0);
        assert!((1 << 28) - n < sweep);
        assert!(sweep_floats(132, 100).is_err());
    }

    #[test]
    fn a_whole_buffer_read_takes_any_multiple_of_four_floats() {
        assert!(check_whole(4).is_ok());
        assert!(check_whole(7_864_324).is_ok());
        for x in [0, 6] {
            assert_eq!(check_whole(x).unwrap_err().arg, "x");
        }
    }

    #[test]
    fn every_read_needs_a_sink_of_one_float() {
        assert!(check_sink(1).is_ok());
        assert_eq!(check_sink(0).unwrap_err().arg, "sink");
    }
}
