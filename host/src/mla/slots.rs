//! attn's slot indices: checked against the pool on the host as they are uploaded, the only index
//! buffer the attention launchers take.

use crate::check::{self, arg_err};
use crate::error::{ArgError, Error};
use crate::Gpu;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::Kernel;
use kernels_gpu::mla::attn;

/// Where each query's slots are in the cache: `t x n_slots` row indices, every one checked to
/// be in `0..pool` before it was uploaded. Only [`SlotIndices::new`] makes one.
pub struct SlotIndices {
    idx: CudaSlice<i32>,
    t: usize,
    n_slots: usize,
    pool: usize,
}

impl SlotIndices {
    /// Checks `idx` (`[t, n_slots]`, row-major) against a pool of `pool` cache rows, then
    /// uploads it.
    pub fn new(
        gpu: &Gpu,
        idx: &[i32],
        t: usize,
        n_slots: usize,
        pool: usize,
    ) -> Result<SlotIndices, Error> {
        check_slot_indices(idx, t, n_slots, pool)?;
        Ok(SlotIndices {
            idx: gpu.upload(idx)?,
            t,
            n_slots,
            pool,
        })
    }

    /// The checked indices on the device, for the launchers (and a peer's, which reads them as
    /// they do).
    pub fn device(&self) -> &CudaSlice<i32> {
        &self.idx
    }

    /// Query tokens.
    pub fn t(&self) -> usize {
        self.t
    }

    /// Slots per token.
    pub fn n_slots(&self) -> usize {
        self.n_slots
    }

    /// Cache rows the indices were checked against.
    pub fn pool(&self) -> usize {
        self.pool
    }
}

/// What [`SlotIndices::new`] checks: positive `t` and `n_slots` and a pool the kernels can
/// index (each an `i32` argument), `t * n_slots` indices, each in `0..pool`. The number of
/// indices is not bounded here: attn_flash addresses them in 64 bits, and attn_gathered's
/// launcher checks its own limit (`(t - 1) * n_slots` within `i32`).
pub fn check_slot_indices(
    idx: &[i32],
    t: usize,
    n_slots: usize,
    pool: usize,
) -> Result<(), ArgError> {
    let kernel = attn::mla_attn_gathered::NAME;
    check::positive_i32(kernel, "t", t)?;
    check::positive_i32(kernel, "n_slots", n_slots)?;
    check::positive_i32(kernel, "pool", pool)?;
    let need = t * n_slots;
    if idx.len() != need {
        return Err(arg_err(
            kernel,
            "idx",
            format!(
                "holds {} indices; t x n_slots is {t} x {n_slots} = {need}",
                idx.len()
            ),
        ));
    }
    match idx.iter().position(|&i| i < 0 || i as usize >= pool) {
        None => Ok(()),
        Some(at) => Err(arg_err(
            kernel,
            "idx",
            format!(
                "idx[{}][{}] = {} is outside the pool of {pool} rows",
                at / n_slots,
                at % n_slots,
                idx[at]
            ),
        )),
    }
}
