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
use kernels_gpu::norm_q8::{
    self as k, QUANTIZE_BLOCK, QUANTIZE_UNROLL_FROM, SWIGLU_Q8_BLOCK, UNROLL,
};

/// The most rows of one `swiglu_q8_1` launch: a row is `blockIdx.y`, and this is CUDA's largest
/// grid extent along y.
pub const SWIGLU_Q8_MAX_ROWS: usize = 65_535;

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

/// Geometry of `swiglu_q8_1` for `rows` of `ncols` outputs whose inputs are `ld` floats apart:
/// a thread per column group of 4, grid `(ceil(ncols/4 / SWIGLU_Q8_BLOCK), nrows)`. Returns the
/// kernel's `ncols` and `ld`.
pub fn swiglu_q8_config(rows: Rows, ld: usize) -> Result<(LaunchConfig, i32, i32), ArgError> {
    let name = k::swiglu_q8_1::NAME;
    let ncols = check::q8_len(name, "ncols", rows.ncols)?;
    if rows.nrows == 0 || rows.nrows > SWIGLU_Q8_MAX_ROWS {
        return Err(arg_err(
            name,
            "nrows",
            format!(
                "{} is not in 1..={SWIGLU_Q8_MAX_ROWS} (a row is blockIdx.y)",
                rows.nrows
            ),
        ));
    }
    if ld < rows.ncols || !ld.is_multiple_of(4) {
        return Err(arg_err(
            name,
            "ld",
            format!(
                "{ld} is not a multiple of 4 (rows are read as float4) of at least ncols {}",
                rows.ncols
            ),
        ));
    }
    let ld = check::positive_i32(name, "ld", ld)?;
    let cfg = LaunchConfig {
        grid_dim: (
            (rows.ncols as u32 / 4).div_ceil(SWIGLU_Q8_BLOCK),
            rows.nrows as u32,
            1,
        ),
        block_dim: (SWIGLU_Q8_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    Ok((cfg, ncols, ld))
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

/// `swiglu` of each row of `g` and `u` into `y`, and `quantize_q8_1` of `y`, in one launch: row
/// `r` reads `g[r * ld..r * ld + ncols]` (and `u` alike), so that `g` and `u` may be the two
/// halves of one `[nrows][2 ffn]` output (`ld = 2 ffn`); `y`, `qs` and `d` are dense, and
/// bit-identical to `swiglu` then `quantize_q8_1`.
#[allow(clippy::too_many_arguments)]
pub fn swiglu_q8_1(
    module: &Module,
    gpu: &Gpu,
    g: DeviceIn<'_, f32>,
    u: DeviceIn<'_, f32>,
    ld: usize,
    y: DeviceOut<'_, f32>,
    qs: DeviceOut<'_, i8>,
    d: DeviceOut<'_, f32>,
    rows: Rows,
) -> Result<(), Error> {
    let name = k::swiglu_q8_1::NAME;
    let (cfg, ncols, ld32) = swiglu_q8_config(rows, ld)?;
    let span = (rows.nrows - 1) * ld + rows.ncols;
    check::len(name, "g", g.len(), span)?;
    check::len(name, "u", u.len(), span)?;
    check::len(name, "y", y.len(), rows.elems())?;
    check::q8_1_planes(name, qs.len(), d.len(), rows.elems())?;
    let entry = k::swiglu_q8_1::ENTRY;
    // SAFETY: geometry and buffer extents checked above; the launch checks the float4 buffers'
    // alignment.
    unsafe { module.launch_chained(entry, gpu, cfg, (g, u, y, qs, d, ncols, ld32), &[]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swiglu_q8_geometry_is_a_thread_a_group_and_a_row_a_grid_row() {
        let rows = |nrows, ncols| Rows { nrows, ncols };
        let (cfg, ncols, ld) = swiglu_q8_config(rows(8, 17408), 34816).unwrap();
        assert_eq!((cfg.grid_dim, cfg.block_dim), ((17, 8, 1), (256, 1, 1)));
        assert_eq!((ncols, ld), (17408, 34816));
        let (cfg, ..) = swiglu_q8_config(rows(SWIGLU_Q8_MAX_ROWS, 32), 36).unwrap();
        assert_eq!(cfg.grid_dim, (1, 65535, 1));
        for (bad_rows, bad_ld, arg) in [
            (rows(1, 48), 48, "ncols"),
            (rows(0, 32), 32, "nrows"),
            (rows(SWIGLU_Q8_MAX_ROWS + 1, 32), 32, "nrows"),
            (rows(2, 64), 60, "ld"),
            (rows(2, 64), 66, "ld"),
            (rows(2, 64), 1 << 31, "ld"),
        ] {
            assert_eq!(swiglu_q8_config(bad_rows, bad_ld).unwrap_err().arg, arg);
        }
    }

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
