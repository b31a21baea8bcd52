//! The peer chains: the dense layer's seven GEMMs through cuBLAS (bf16) and cuBLASLt (FP8), in
//! the step's order, each on operands of its own (the peers are timed, not compared).

use super::{Arm, Layer, Shape};
use crate::families::gemv::finite_e4m3;
use crate::harness::output::{Output, POISON_F32};
use crate::peers::{Blas, BlasLt, FP8_COLUMNS};
use crate::rng::{self, SplitMix64};
use half::bf16;
use host::{CudaSlice, Error, Gpu};

/// Each GEMM of the dense layer: its name and `(in_f, out_f)`.
fn gemms(shape: Shape) -> Vec<(&'static str, usize, usize)> {
    let super::Dims::Dense {
        hidden,
        q,
        kv,
        attn,
        ffn,
    } = shape.dims
    else {
        return Vec::new();
    };
    vec![
        ("q", hidden, q),
        ("k", hidden, kv),
        ("v", hidden, kv),
        ("o", attn, hidden),
        ("gate", hidden, ffn),
        ("up", hidden, ffn),
        ("down", ffn, hidden),
    ]
}

/// Bytes a peer chain must move: each GEMM's weights and its `m` activation rows read once,
/// its `m` output rows written once.
pub fn bytes(shape: Shape, arm: Arm) -> usize {
    let weight = if arm == Arm::Bf16 { 2 } else { 1 };
    gemms(shape)
        .iter()
        .map(|&(_, i, o)| weight * (i * o + shape.m * i) + 4 * shape.m * o)
        .sum()
}

/// Device bytes of a case's peer buffers (none off the e4m3 cases).
pub fn footprint(shape: Shape) -> usize {
    if shape.layer != Layer::E4m3 {
        return 0;
    }
    gemms(shape)
        .iter()
        .map(|&(_, i, o)| 3 * i * o + 4 * FP8_COLUMNS * (i + 3 * o))
        .sum()
}

/// The libraries, opened on the first e4m3 case.
#[derive(Default)]
pub struct PeerLibs {
    opened: bool,
    blas: Option<Blas>,
    lt: Option<BlasLt>,
}

impl PeerLibs {
    /// Opens both libraries on the first case that runs them, saying in one line which could
    /// not be loaded (the peers are then skipped).
    pub fn open(&mut self, gpu: &Gpu, shape: Shape) -> Result<(), Error> {
        if self.opened || shape.layer != Layer::E4m3 {
            return Ok(());
        }
        self.opened = true;
        match Blas::new(gpu)? {
            Ok(b) => self.blas = Some(b),
            Err(why) => println!("peer cublas bf16 gemms: skipped ({why})"),
        }
        match BlasLt::new(gpu)? {
            Ok(l) => self.lt = Some(l),
            Err(why) => println!("peer cublaslt fp8 gemms: skipped ({why})"),
        }
        Ok(())
    }

    /// Whether the peers run on `shape`: the e4m3 dense cases, where both libraries loaded.
    pub fn run(&self, shape: Shape) -> bool {
        shape.layer == Layer::E4m3 && self.blas.is_some() && self.lt.is_some()
    }
}

/// One GEMM's operands in both peers' types.
struct Gemm {
    name: &'static str,
    in_f: usize,
    out_f: usize,
    w: CudaSlice<bf16>,
    x: CudaSlice<bf16>,
    y: CudaSlice<f32>,
    w8: CudaSlice<u8>,
    x8: CudaSlice<u8>,
    c: CudaSlice<f32>,
    d: CudaSlice<f32>,
}

/// A case's peer buffers.
pub struct PeerSet {
    gemms: Vec<Gemm>,
    a_scale: CudaSlice<f32>,
    b_scale: CudaSlice<f32>,
}

/// `n` values repeating a seeded pattern of 64 Ki (the peers' speed does not depend on them).
fn pattern<T: Copy>(n: usize, seed: u64, make: impl Fn(u64) -> T) -> Vec<T> {
    let mut r = SplitMix64::new(rng::case_seed(seed, &[n as u64]));
    let base: Vec<T> = (0..n.min(1 << 16)).map(|_| make(r.next_u64())).collect();
    base.iter().copied().cycle().take(n).collect()
}

impl PeerSet {
    pub fn new(gpu: &Gpu, shape: Shape) -> Result<PeerSet, Error> {
        let m = shape.m;
        let bf = |b: u64| bf16::from_f32((b % 2001) as f32 / 1000.0 - 1.0);
        let e4m3 = |b: u64| finite_e4m3(b as u8);
        let gemms = gemms(shape)
            .into_iter()
            .map(|(name, in_f, out_f)| {
                let mut x8 = pattern(FP8_COLUMNS * in_f, 3, e4m3);
                x8[m * in_f..].fill(0);
                Ok(Gemm {
                    name,
                    in_f,
                    out_f,
                    w: gpu.upload(&pattern(in_f * out_f, 1, bf))?,
                    x: gpu.upload(&pattern(m * in_f, 2, bf))?,
                    y: gpu.alloc_poisoned(m * out_f, POISON_F32)?,
                    w8: gpu.upload(&pattern(in_f * out_f, 4, e4m3))?,
                    x8: gpu.upload(&x8)?,
                    c: gpu.upload(&vec![0.0f32; FP8_COLUMNS * out_f])?,
                    d: gpu.alloc_poisoned(FP8_COLUMNS * out_f, POISON_F32)?,
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok(PeerSet {
            gemms,
            a_scale: gpu.upload(&[1.0f32 / 64.0])?,
            b_scale: gpu.upload(&[1.0f32 / 16.0])?,
        })
    }

    /// Queues the chain of `arm`'s GEMMs.
    pub fn gemms(
        &mut self,
        gpu: &Gpu,
        libs: &mut PeerLibs,
        arm: Arm,
        shape: Shape,
    ) -> Result<(), Error> {
        for g in &mut self.gemms {
            match (arm, libs.blas.as_ref(), libs.lt.as_mut()) {
                (Arm::Bf16, Some(blas), _) => {
                    blas.gemm_bf16(gpu, &g.w, &g.x, &mut g.y, g.in_f, g.out_f, shape.m)?
                }
                (Arm::Fp8, _, Some(lt)) => lt.matmul_e4m3(
                    gpu,
                    &g.w8,
                    &g.x8,
                    &self.a_scale,
                    &self.b_scale,
                    &g.c,
                    &mut g.d,
                    g.in_f,
                    g.out_f,
                    FP8_COLUMNS,
                )?,
                _ => unreachable!("peer arms are listed only where both libraries loaded"),
            }
        }
        Ok(())
    }

    pub fn poison(&mut self, gpu: &Gpu) -> Result<(), Error> {
        for g in &mut self.gemms {
            gpu.poison(&mut g.y, POISON_F32)?;
            gpu.poison(&mut g.d, POISON_F32)?;
        }
        Ok(())
    }

    /// Each GEMM's output of `arm`.
    pub fn outputs(&self, gpu: &Gpu, arm: Arm) -> Result<Vec<Output>, Error> {
        self.gemms
            .iter()
            .map(|g| Output::f32(gpu, g.name, if arm == Arm::Bf16 { &g.y } else { &g.d }))
            .collect()
    }
}
