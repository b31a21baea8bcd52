//! Launchers for the norm_q8 family: argument checks, launch geometry, typed launch.
//!
//! The checks are plain functions of sizes, so they are tested without a GPU; every launcher
//! runs them before touching the device.

use crate::check::{self, arg_err};
use crate::error::{ArgError, Error};
use crate::params::{DeviceIn, DeviceOut};
use crate::{Gpu, Module};
use cudarc::driver::LaunchConfig;
use kernels_gpu::abi::Kernel;
use kernels_gpu::norm_q8::{self as k, QUANTIZE_BLOCK, QUANTIZE_UNROLL_FROM, UNROLL};

/// A batch of rows of `ncols` floats each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    pub nrows: usize,
    pub ncols: usize,
}

impl Rows {
    pub fn elems(self) -> usize {
        self.nrows * self.ncols
    }
}

fn check_eps(kernel: &'static str, eps: f32) -> Result<(), ArgError> {
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(arg_err(
            kernel,
            "eps",
            format!("{eps} is not a finite non-negative number"),
        ));
    }
    Ok(())
}

/// Geometry of `rms_norm` and `rms_norm_zq8_f32`: one block per row of
/// `kernels_gpu::norm_q8::row_block_dim(nrows, ncols)` threads, the only block sizes the kernels
/// take; either gives each row the same bits. Their shared memory is a static `.shared` array,
/// so no dynamic shared memory is passed.
pub fn rows_config(kernel: &'static str, rows: Rows) -> Result<(LaunchConfig, i32), ArgError> {
    let ncols = check::q8_len(kernel, "ncols", rows.ncols)?;
    if rows.nrows == 0 || rows.nrows > i32::MAX as usize {
        return Err(arg_err(
            kernel,
            "nrows",
            format!("{} is not in 1..=2^31-1 (one block per row)", rows.nrows),
        ));
    }
    let cfg = LaunchConfig {
        grid_dim: (rows.nrows as u32, 1, 1),
        block_dim: (k::row_block_dim(rows.nrows as u32, ncols as u32), 1, 1),
        shared_mem_bytes: 0,
    };
    Ok((cfg, ncols))
}

/// Geometry of `quantize_q8_1`: blocks of `QUANTIZE_BLOCK` threads, one column group (4 values)
/// per thread while `n / 4 < QUANTIZE_UNROLL_FROM` (a latency-bound launch), `UNROLL` per thread
/// from there on: grid `ceil(n/4 / 256)`, or `ceil(n/4 / 1024)` from `n/4 = 2^17` on.
pub fn quantize_config(n: usize) -> Result<(LaunchConfig, i32), ArgError> {
    let n32 = check::q8_len(k::quantize_q8_1::NAME, "n", n)?;
    let groups = n as u32 / 4;
    let per_thread = if groups >= QUANTIZE_UNROLL_FROM {
        UNROLL
    } else {
        1
    };
    let cfg = LaunchConfig {
        grid_dim: (groups.div_ceil(QUANTIZE_BLOCK * per_thread), 1, 1),
        block_dim: (QUANTIZE_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    Ok((cfg, n32))
}

/// `z = rms_norm(x) * w` for every row.
pub fn rms_norm(
    module: &Module,
    gpu: &Gpu,
    x: DeviceIn<'_, f32>,
    w: DeviceIn<'_, f32>,
    z: DeviceOut<'_, f32>,
    rows: Rows,
    eps: f32,
) -> Result<(), Error> {
    let name = k::rms_norm::NAME;
    let (cfg, ncols) = rows_config(name, rows)?;
    check_eps(name, eps)?;
    check::len(name, "x", x.len(), rows.elems())?;
    check::len(name, "w", w.len(), rows.ncols)?;
    check::len(name, "z", z.len(), rows.elems())?;
    // SAFETY: geometry and buffer extents checked above.
    unsafe { module.launch_chained(k::rms_norm::ENTRY, gpu, cfg, (x, w, z, ncols, eps), &[]) }
}

/// q8_1 planes of the first `n` values of `x`: `qs[n]` and `d[n / 32]`.
pub fn quantize_q8_1(
    module: &Module,
    gpu: &Gpu,
    x: DeviceIn<'_, f32>,
    qs: DeviceOut<'_, i8>,
    d: DeviceOut<'_, f32>,
    n: usize,
) -> Result<(), Error> {
    let name = k::quantize_q8_1::NAME;
    let (cfg, n32) = quantize_config(n)?;
    check::len(name, "x", x.len(), n)?;
    check::q8_1_planes(name, qs.len(), d.len(), n)?;
    // SAFETY: geometry and buffer extents checked above.
    unsafe { module.launch_chained(k::quantize_q8_1::ENTRY, gpu, cfg, (x, qs, d, n32), &[]) }
}

/// `rms_norm` and `quantize_q8_1` of its output, one launch.
#[allow(clippy::too_many_arguments)]
pub fn rms_norm_zq8_f32(
    module: &Module,
    gpu: &Gpu,
    x: DeviceIn<'_, f32>,
    w: DeviceIn<'_, f32>,
    z: DeviceOut<'_, f32>,
    qs: DeviceOut<'_, i8>,
    d: DeviceOut<'_, f32>,
    rows: Rows,
    eps: f32,
) -> Result<(), Error> {
    let name = k::rms_norm_zq8_f32::NAME;
    let (cfg, ncols) = rows_config(name, rows)?;
    check_eps(name, eps)?;
    check::len(name, "x", x.len(), rows.elems())?;
    check::len(name, "w", w.len(), rows.ncols)?;
    check::len(name, "z", z.len(), rows.elems())?;
    check::q8_1_planes(name, qs.len(), d.len(), rows.elems())?;
    let entry = k::rms_norm_zq8_f32::ENTRY;
    // SAFETY: geometry and buffer extents checked above.
    unsafe { module.launch_chained(entry, gpu, cfg, (x, w, z, qs, d, ncols, eps), &[]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ncols_must_be_a_positive_multiple_of_32() {
        for bad in [0, 1, 31, 33, 4095, 4100] {
            let err = rows_config(
                "rms_norm",
                Rows {
                    nrows: 1,
                    ncols: bad,
                },
            )
            .unwrap_err();
            assert_eq!(err.arg, "ncols");
            assert!(err.to_string().contains("multiple of 32"), "{err}");
        }
        for good in [32, 1536, 4096, 8192] {
            rows_config(
                "rms_norm",
                Rows {
                    nrows: 1,
                    ncols: good,
                },
            )
            .unwrap();
        }
    }

    #[test]
    fn nrows_must_fit_the_grid() {
        let err = rows_config(
            "rms_norm",
            Rows {
                nrows: 0,
                ncols: 32,
            },
        )
        .unwrap_err();
        assert_eq!(err.arg, "nrows");
        let too_many = i32::MAX as usize + 1;
        let err = rows_config(
            "rms_norm",
            Rows {
                nrows: too_many,
                ncols: 32,
            },
        )
        .unwrap_err();
        assert_eq!(err.arg, "nrows");
    }

    #[test]
    fn row_geometry_is_one_block_per_row_of_the_virtual_threads_or_a_quarter() {
        let cases = [
            (1, 32, 128),
            (1, 1408, 384),
            (1, 1536, 384),
            (1, 4096, 1024),
            (1, 8192, 1024),
            (4096, 32, 32),
            (4096, 1536, 96),
            (4096, 4096, 256),
            (4096, 8192, 256),
            (4096, 65536, 256),
        ];
        for (nrows, ncols, block) in cases {
            let (cfg, n) = rows_config("rms_norm", Rows { nrows, ncols }).unwrap();
            assert_eq!(cfg.grid_dim, (nrows as u32, 1, 1));
            assert_eq!(cfg.block_dim, (block, 1, 1), "{nrows}x{ncols}");
            assert_eq!(
                cfg.shared_mem_bytes, 0,
                "the scratch is static shared memory"
            );
            assert_eq!(n as usize, ncols);
        }
    }

    #[test]
    fn quantize_geometry_covers_every_group_of_four() {
        let from = QUANTIZE_UNROLL_FROM as usize * 4;
        for (n, per_thread) in [
            (32, 1),
            (4096 * 3, 1),
            (from - 32, 1),
            (from, UNROLL),
            (4096 * 4096 + 32, UNROLL),
        ] {
            let (cfg, _) = quantize_config(n).unwrap();
            let per_block = (QUANTIZE_BLOCK * per_thread * 4) as usize;
            assert_eq!(cfg.block_dim.0, QUANTIZE_BLOCK);
            assert!(cfg.grid_dim.0 as usize * per_block >= n);
            assert!((cfg.grid_dim.0 as usize - 1) * per_block < n);
        }
        assert_eq!(quantize_config(48).unwrap_err().arg, "n");
        assert!(quantize_config(1 << 31)
            .unwrap_err()
            .why
            .contains("i32::MAX"));
    }

    #[test]
    fn bad_eps_is_named() {
        for eps in [f32::NAN, -1.0, f32::INFINITY] {
            assert_eq!(check_eps("rms_norm", eps).unwrap_err().arg, "eps");
        }
        check_eps("rms_norm", 1e-6).unwrap();
    }
}
