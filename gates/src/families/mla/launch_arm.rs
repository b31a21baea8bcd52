//! How each arm runs on a build or a peer, and which buffer holds its output.

use super::*;
use crate::peers::attention::ChainBuffers;

impl Set {
    /// The attention's buffers over this set's inputs, writing the flash arm's output or the
    /// seed kernel's, and the flash workspace.
    fn attention(&mut self, flash: bool) -> (AttnBuffers<'_>, &mut FlashWorkspace) {
        let out = if flash {
            &mut self.flash_out
        } else {
            &mut self.attn_out
        };
        let b = AttnBuffers {
            q_lat: &self.q_lat,
            q_pe: &self.q_pe,
            cache: &self.cache,
            idx: &self.idx,
            out,
        };
        (b, &mut self.flash_ws)
    }
}

/// Launches `arm` at `c` on `on`.
pub(super) fn enqueue(
    mla: &Mla,
    gpu: &Gpu,
    on: On<'_>,
    c: Cell,
    arm: Arm,
    set: &mut Set,
) -> Result<(), Error> {
    match (arm, on) {
        (Arm::Kernel(MlaKernel::AbsorbQ, s), On::Build(m)) => launch::absorb_q(
            m,
            gpu,
            &set.q_nope,
            &set.w_kb,
            &mut set.q_lat_out,
            c.absorb(),
            s,
        ),
        (Arm::Kernel(MlaKernel::DecompressV, s), On::Build(m)) => launch::decompress_v(
            m,
            gpu,
            &set.o_lat,
            &set.w_vb,
            &mut set.v_out,
            c.decompress(),
            s,
        ),
        (Arm::Kernel(MlaKernel::AttnGathered, s), On::Build(m)) => {
            let (b, _) = set.attention(false);
            launch::attn_gathered(m, gpu, b, c.attn(), SCALE, s)
        }
        (Arm::Flash(heads), On::Build(m)) => {
            let (b, ws) = set.attention(true);
            launch::attn_flash_with(m, gpu, b, c.attn(), SCALE, ws, heads)
        }
        (Arm::Wgmma(heads), On::Build(m)) => {
            let (b, ws) = set.attention(true);
            launch::attn_flash_wgmma_with(m, gpu, b, c.attn(), SCALE, ws, heads)
        }
        (Arm::FlashByToken, On::Build(m)) => {
            for one in &mut set.by_token {
                let b = AttnBuffers {
                    q_lat: &one.q_lat,
                    q_pe: &one.q_pe,
                    cache: &set.cache,
                    idx: &one.idx,
                    out: &mut one.out,
                };
                launch::attn_flash(m, gpu, b, c.attn(), SCALE, &mut one.ws)?;
            }
            Ok(())
        }
        (Arm::Sgemm(k), On::Peer) => {
            let blas = mla.blas.borrow();
            let Some(Ok(blas)) = blas.as_ref() else {
                unreachable!("peer arms exist only with a cuBLAS handle")
            };
            match k {
                MlaKernel::AbsorbQ => blas.heads_sgemm(
                    gpu,
                    &set.q_nope,
                    &set.w_kb,
                    &mut set.q_lat_out,
                    c.t_q,
                    c.nh,
                    c.d_nope,
                    c.kv_rank,
                ),
                _ => blas.heads_sgemm(
                    gpu,
                    &set.o_lat,
                    &set.w_vb,
                    &mut set.v_out,
                    c.t_q,
                    c.nh,
                    c.kv_rank,
                    c.d_v,
                ),
            }
        }
        (Arm::Chain, On::Peer) => {
            let (blas, chain) = (mla.blas.borrow(), mla.chain.borrow());
            let (Some(Ok(blas)), Some(Ok(chain)), Some(one)) =
                (blas.as_ref(), chain.as_ref(), set.chain.as_mut())
            else {
                unreachable!("the chain arm exists only with its handle, kernels and buffers")
            };
            let b = ChainBuffers {
                q_lat: &set.q_lat,
                q_pe: &set.q_pe,
                cache: &set.cache,
                idx: &set.idx,
                work: &mut one.work,
                out: &mut one.out,
            };
            chain.run(gpu, blas, &c.chain(), b)
        }
        _ => unreachable!("{arm:?} does not run there"),
    }
}

/// Poisons `arm`'s output.
pub(super) fn poison(gpu: &Gpu, arm: Arm, set: &mut Set) -> Result<(), Error> {
    match arm {
        // The workspace too: a partial a launch leaves unwritten shows in its output as NaN
        // (the combine's `fma(w, o, a)` keeps a NaN `o` even where `w` underflows to 0), where
        // it would otherwise keep what the arm before wrote.
        Arm::Flash(_) | Arm::Wgmma(_) => {
            set.flash_ws.poison(gpu, 0xff)?;
            gpu.poison(&mut set.flash_out, POISON_F32)
        }
        Arm::FlashByToken => set
            .by_token
            .iter_mut()
            .try_for_each(|one| gpu.poison(&mut one.out, POISON_F32)),
        Arm::Kernel(k, _) | Arm::Sgemm(k) => gpu.poison(output_of(k, set), POISON_F32),
        Arm::Chain => gpu.poison(chain_out(set), POISON_F32),
    }
}

/// `arm`'s output.
pub(super) fn download(gpu: &Gpu, arm: Arm, set: &Set) -> Result<Vec<Output>, Error> {
    let buf = match arm {
        Arm::Flash(_) | Arm::Wgmma(_) => &set.flash_out,
        Arm::FlashByToken => {
            let mut out = Vec::with_capacity(set.flash_out.len());
            for one in &set.by_token {
                out.extend(gpu.download(&one.out)?);
            }
            return Ok(vec![Output::from_f32("out", out)]);
        }
        Arm::Kernel(MlaKernel::AbsorbQ, _) | Arm::Sgemm(MlaKernel::AbsorbQ) => &set.q_lat_out,
        Arm::Kernel(MlaKernel::DecompressV, _) | Arm::Sgemm(MlaKernel::DecompressV) => &set.v_out,
        Arm::Kernel(MlaKernel::AttnGathered, _) | Arm::Sgemm(MlaKernel::AttnGathered) => {
            &set.attn_out
        }
        Arm::Chain => match &set.chain {
            Some(one) => &one.out,
            None => unreachable!("the chain arm exists only with its buffers"),
        },
    };
    Ok(vec![Output::f32(gpu, "out", buf)?])
}

pub(super) fn output_of(k: MlaKernel, set: &mut Set) -> &mut CudaSlice<f32> {
    match k {
        MlaKernel::AbsorbQ => &mut set.q_lat_out,
        MlaKernel::DecompressV => &mut set.v_out,
        MlaKernel::AttnGathered => &mut set.attn_out,
    }
}

/// The attention chain peer's output.
fn chain_out(set: &mut Set) -> &mut CudaSlice<f32> {
    match &mut set.chain {
        Some(one) => &mut one.out,
        None => unreachable!("the chain arm exists only with its buffers"),
    }
}
