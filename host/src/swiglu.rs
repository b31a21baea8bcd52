//! Launcher for the swiglu family.

use crate::check::same_len;
use crate::params::{DeviceIn, DeviceOut};
use crate::{ArgError, Error, Gpu, LaunchConfig, Module};
use kernels_gpu::abi::Kernel;
use kernels_gpu::swiglu::{self as k, BLOCK};

/// `swiglu`'s geometry and `n` for `g`, `u` and `y` of these lengths (equal, positive, within
/// `i32`).
pub fn config(g: usize, u: usize, y: usize) -> Result<(LaunchConfig, i32), ArgError> {
    let n = same_len(k::swiglu::NAME, &[("g", g), ("u", u), ("y", y)])?;
    Ok((crate::blocks(k::grid(n as u32), BLOCK), n))
}

/// `y = silu(g) * u`, elementwise.
pub fn swiglu(
    module: &Module,
    gpu: &Gpu,
    g: DeviceIn<'_, f32>,
    u: DeviceIn<'_, f32>,
    y: DeviceOut<'_, f32>,
) -> Result<(), Error> {
    let (cfg, n) = config(g.len(), u.len(), y.len())?;
    // SAFETY: three allocations of `n` floats (checked above), which the driver aligns to 256 B.
    unsafe { module.launch_chained(k::swiglu::ENTRY, gpu, cfg, (g, u, y, n), &[]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_empty_mismatched_and_past_i32_lengths() {
        let grid = |n| config(n, n, n).map(|c| c.0.grid_dim.0);
        let max = i32::MAX as usize;
        let odd_one_named = [((7, 8, 8), "g"), ((8, 9, 8), "u"), ((8, 8, 7), "y")];
        for (lens, arg) in [((0, 0, 0), "y")].into_iter().chain(odd_one_named) {
            assert_eq!(config(lens.0, lens.1, lens.2).unwrap_err().arg, arg);
        }
        assert_eq!(grid(max + 1).unwrap_err().arg, "y");
        assert_eq!(
            [grid(1), grid(1024), grid(1025), grid(max)],
            [Ok(1), Ok(1), Ok(2), Ok(1 << 21)]
        );
    }
}
