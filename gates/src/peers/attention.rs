//! The MLA attention over gathered rows as a framework runs it: PyTorch's `rows = cache[idx]`,
//! `scores = bmm(q, rows^T) * scale`, `softmax(scores)`, `bmm(p, rows[..kv_rank])`, in f32
//! without TF32 (`scripts/torch-mla-chain.py` times the same chain in PyTorch itself). The two
//! products are cuBLAS strided-batched SGEMMs over the tokens; the gather and the softmax are
//! this peer's own kernels (`attention.cu`, compiled by NVRTC at run time, as a framework's are
//! its own). Every step writes its whole output to memory and the next reads it back, which is
//! what the fused attention kernels exist to avoid.

use super::{ptr_of, Blas, Strided};
use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use host::mla::SlotIndices;
use host::{Context, CudaSlice, Error, Gpu};
use std::sync::Arc;

/// The peer kernels' source.
pub const SOURCE: &str = include_str!("attention.cu");

/// Threads of a gather block (its row's float4s in turn) and of a softmax block (its row's
/// scores in turn).
const GATHER_THREADS: u32 = 128;
const SOFTMAX_THREADS: u32 = 256;

/// The geometry of one chain: `t` tokens of `nh` heads, queries of `kv_rank` latent and
/// `d_rope` rope values, `n_slots` gathered rows each.
#[derive(Debug, Clone, Copy)]
pub struct ChainShape {
    pub t: usize,
    pub nh: usize,
    pub kv_rank: usize,
    pub d_rope: usize,
    pub n_slots: usize,
    pub scale: f32,
}

impl ChainShape {
    /// Floats of a cache row.
    fn row(&self) -> usize {
        self.kv_rank + self.d_rope
    }
}

/// The chain's inputs and output, as the project's attention kernels take them, and its two
/// intermediate buffers.
pub struct ChainBuffers<'a> {
    pub q_lat: &'a CudaSlice<f32>,
    pub q_pe: &'a CudaSlice<f32>,
    pub cache: &'a CudaSlice<f32>,
    pub idx: &'a SlotIndices,
    pub work: &'a mut ChainWork,
    pub out: &'a mut CudaSlice<f32>,
}

/// The gathered rows (`[t][n_slots][row]`) and the scores, then weights (`[t][nh][n_slots]`).
pub struct ChainWork {
    rows: CudaSlice<f32>,
    scores: CudaSlice<f32>,
}

impl ChainWork {
    /// The intermediates of a chain of shape `s`.
    pub fn new(gpu: &Gpu, s: &ChainShape) -> Result<Self, Error> {
        Ok(ChainWork {
            rows: gpu.alloc_poisoned(s.t * s.n_slots * s.row(), 0)?,
            scores: gpu.alloc_poisoned(s.t * s.nh * s.n_slots, 0)?,
        })
    }
}

/// The peer's kernels, loaded on one device.
pub struct AttnChain {
    _module: Arc<CudaModule>,
    gather: CudaFunction,
    softmax: CudaFunction,
}

impl AttnChain {
    /// Compiles the kernels for `arch` and loads them.
    pub fn new(gpu: &Gpu, arch: &str) -> Result<Self, Error> {
        let ptx = host::reference::compile("peers/attention.cu", SOURCE, arch)?;
        let module = gpu
            .context()
            .load_module(Ptx::from_src(ptx))
            .during(|| "loading the attention peer's kernels".into())?;
        let function = |name| {
            module
                .load_function(name)
                .during(|| "finding the attention peer's kernels".into())
        };
        Ok(AttnChain {
            gather: function("peer_gather_rows")?,
            softmax: function("peer_softmax_rows")?,
            _module: module,
        })
    }

    /// Enqueues the chain on the gate's stream: gather, scores (and the rope's scores added to
    /// them), softmax, weighted sum.
    pub fn run(
        &self,
        gpu: &Gpu,
        blas: &Blas,
        s: &ChainShape,
        b: ChainBuffers<'_>,
    ) -> Result<(), Error> {
        let (t, nh, kr, dr, n, row) = (s.t, s.nh, s.kv_rank, s.d_rope, s.n_slots, s.row());
        let pool = b.idx.pool();
        assert!(kr.is_multiple_of(4) && dr.is_multiple_of(4));
        assert!((b.idx.t(), b.idx.n_slots()) == (t, n));
        assert!(b.q_lat.len() >= t * nh * kr && b.q_pe.len() >= t * nh * dr);
        assert!(b.cache.len() >= pool * row);
        assert!(b.out.len() >= t * nh * kr);
        assert!(b.work.rows.len() >= t * n * row && b.work.scores.len() >= t * nh * n);
        let address = |buf: &CudaSlice<f32>| ptr_of(gpu, buf) as u64;
        let (cache, idx) = (address(b.cache), ptr_of(gpu, b.idx.device()) as u64);
        let (rows, scores) = (address(&b.work.rows), address(&b.work.scores));
        let (q_lat, q_pe, out) = (address(b.q_lat), address(b.q_pe), address(b.out));
        let (row4, pool, n_i32) = ((row / 4) as i32, pool as i32, n as i32);
        let blocks = |n: usize, threads: u32| LaunchConfig {
            grid_dim: (n as u32, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let operand = |o: Operand| {
            let base = match o.buf {
                Buf::Rows => rows,
                Buf::Scores => scores,
                Buf::QLat => q_lat,
                Buf::QPe => q_pe,
                Buf::Out => out,
            };
            Strided {
                at: base as *const f32,
                ld: o.ld,
                stride: o.stride,
            }
            .offset(o.offset)
        };
        // SAFETY (each product): every batch's operands lie within the buffers asserted above
        // (`Product`'s extents, which the tests check against these shapes).
        let product = |p: Product| unsafe {
            let (a, b, c) = (operand(p.a), operand(p.b), operand(p.c));
            blas.sgemm_batched(p.trans_a, p.mnk, p.alpha, a, b, p.beta, c, t)
        };
        let stream = gpu.stream();
        // SAFETY: `rows` holds `t n` rows of `row` floats, each gathered from a clamped index
        // into the pool's `pool` rows (the extents asserted above).
        unsafe {
            stream
                .launch_builder(&self.gather)
                .arg(&cache)
                .arg(&idx)
                .arg(&rows)
                .arg(&row4)
                .arg(&pool)
                .launch(blocks(t * n, GATHER_THREADS))
        }
        .during(|| "running the attention peer's gather".into())?;
        s.scores().try_for_each(product)?;
        // SAFETY: `scores` holds `t nh` rows of `n` floats.
        unsafe {
            stream
                .launch_builder(&self.softmax)
                .arg(&scores)
                .arg(&n_i32)
                .launch(blocks(t * nh, SOFTMAX_THREADS))
        }
        .during(|| "running the attention peer's softmax".into())?;
        product(s.weighted_sum())
    }
}

/// The buffers the chain's products read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Buf {
    Rows,
    Scores,
    QLat,
    QPe,
    Out,
}

/// A product's operand: the first matrix `offset` floats into `buf`, its leading dimension, and
/// the floats from one token's matrix to the next.
#[derive(Debug, Clone, Copy)]
struct Operand {
    buf: Buf,
    offset: usize,
    ld: usize,
    stride: usize,
}

/// One strided-batched SGEMM over the tokens, column-major as cuBLAS takes it:
/// `C = alpha op(A) B + beta C`, `(m, n, k)` op(A)'s rows, C's columns and the inner extent.
#[derive(Debug, Clone, Copy)]
struct Product {
    trans_a: bool,
    mnk: (usize, usize, usize),
    alpha: f32,
    a: Operand,
    b: Operand,
    beta: f32,
    c: Operand,
}

impl ChainShape {
    /// The scores, `scale * q . row` for every (token, head, slot), as column-major
    /// `scores^T (n x nh) = rows (the transposed kv_rank x n view, ld row) q_lat^T (kv_rank x
    /// nh)`, then the rope's part (the rows' last `d_rope` columns against `q_pe`) added the
    /// same way where there is one. Row-major, the scores are `[t][nh][n_slots]`.
    fn scores(&self) -> impl Iterator<Item = Product> {
        let (nh, kr, dr, n, row) = (self.nh, self.kv_rank, self.d_rope, self.n_slots, self.row());
        let op = |buf, offset, ld, stride| Operand {
            buf,
            offset,
            ld,
            stride,
        };
        let rows = |offset| op(Buf::Rows, offset, row, n * row);
        let scores = op(Buf::Scores, 0, n, nh * n);
        let part = |k, at, q, beta| Product {
            trans_a: true,
            mnk: (n, nh, k),
            alpha: self.scale,
            a: rows(at),
            b: op(q, 0, k, nh * k),
            beta,
            c: scores,
        };
        let rope = (dr > 0).then(|| part(dr, kr, Buf::QPe, 1.0));
        std::iter::once(part(kr, 0, Buf::QLat, 0.0)).chain(rope)
    }

    /// The output, `sum_i p_i row_i[..kv_rank]` for every (token, head), as column-major
    /// `out^T (kv_rank x nh) = rows^T (the kv_rank x n view) p^T (n x nh)`.
    fn weighted_sum(&self) -> Product {
        let (nh, kr, n, row) = (self.nh, self.kv_rank, self.n_slots, self.row());
        Product {
            trans_a: false,
            mnk: (kr, nh, n),
            alpha: 1.0,
            a: Operand {
                buf: Buf::Rows,
                offset: 0,
                ld: row,
                stride: n * row,
            },
            b: Operand {
                buf: Buf::Scores,
                offset: 0,
                ld: n,
                stride: nh * n,
            },
            beta: 0.0,
            c: Operand {
                buf: Buf::Out,
                offset: 0,
                ld: kr,
                stride: nh * kr,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffers of a chain on the host, indexed by [`Buf`].
    struct Host {
        bufs: Vec<Vec<f32>>,
    }

    fn at(b: Buf) -> usize {
        b as usize
    }

    impl Host {
        /// `p` over `t` tokens as cuBLAS computes it (column-major, f64 sums), every index of
        /// every operand checked against its buffer.
        fn product(&mut self, p: Product, t: usize) {
            let (m, n, k) = p.mnk;
            let (a, b) = (
                self.bufs[at(p.a.buf)].clone(),
                self.bufs[at(p.b.buf)].clone(),
            );
            let c = &mut self.bufs[at(p.c.buf)];
            for i in 0..t {
                for col in 0..n {
                    for r in 0..m {
                        let mut sum = 0.0f64;
                        for kk in 0..k {
                            let ai = p.a.offset + i * p.a.stride;
                            let ai = if p.trans_a {
                                ai + kk + r * p.a.ld
                            } else {
                                ai + r + kk * p.a.ld
                            };
                            let bi = p.b.offset + i * p.b.stride + kk + col * p.b.ld;
                            sum += f64::from(a[ai]) * f64::from(b[bi]);
                        }
                        let ci = p.c.offset + i * p.c.stride + r + col * p.c.ld;
                        let prior = if p.beta == 0.0 { 0.0 } else { p.beta * c[ci] };
                        c[ci] = (f64::from(p.alpha) * sum) as f32 + prior;
                    }
                }
            }
        }
    }

    /// The chain's products, with the gather and the softmax as its kernels do them, on the host
    /// against a direct f64 attention: the operands' layouts (leading dimensions, strides, the
    /// rope's offset) are what the scores and the output need, and stay within the buffers the
    /// launcher sizes.
    #[test]
    fn the_chains_products_compute_the_attention() {
        for d_rope in [0, 4] {
            let s = ChainShape {
                t: 2,
                nh: 3,
                kv_rank: 8,
                d_rope,
                n_slots: 5,
                scale: 0.3,
            };
            let pool = 7;
            let (t, nh, kr, dr, n, row) = (s.t, s.nh, s.kv_rank, s.d_rope, s.n_slots, s.row());
            let value = |i: usize| ((i * 37 + 11) % 23) as f32 / 11.0 - 1.0;
            let cache: Vec<f32> = (0..pool * row).map(value).collect();
            let idx: Vec<usize> = (0..t * n).map(|i| (i * 5 + 3) % pool).collect();
            let q_lat: Vec<f32> = (0..t * nh * kr).map(|i| value(i + 100)).collect();
            let q_pe: Vec<f32> = (0..t * nh * dr).map(|i| value(i + 300)).collect();
            let rows: Vec<f32> = idx
                .iter()
                .flat_map(|&i| cache[i * row..][..row].to_vec())
                .collect();
            let mut h = Host {
                bufs: vec![Vec::new(); 5],
            };
            h.bufs[at(Buf::Rows)] = rows;
            h.bufs[at(Buf::Scores)] = vec![f32::NAN; t * nh * n];
            h.bufs[at(Buf::QLat)] = q_lat.clone();
            h.bufs[at(Buf::QPe)] = q_pe.clone();
            h.bufs[at(Buf::Out)] = vec![f32::NAN; t * nh * kr];
            for p in s.scores() {
                h.product(p, t);
            }
            for r in h.bufs[at(Buf::Scores)].chunks_mut(n) {
                let m = r.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let sum: f32 = r.iter().map(|v| (v - m).exp()).sum();
                r.iter_mut().for_each(|v| *v = (*v - m).exp() / sum);
            }
            h.product(s.weighted_sum(), t);
            for ti in 0..t {
                for hd in 0..nh {
                    let q: Vec<f64> = q_lat[(ti * nh + hd) * kr..][..kr]
                        .iter()
                        .chain(&q_pe[(ti * nh + hd) * dr..][..dr])
                        .map(|&v| f64::from(v))
                        .collect();
                    let gathered: Vec<&[f32]> = idx[ti * n..][..n]
                        .iter()
                        .map(|&i| &cache[i * row..][..row])
                        .collect();
                    let scores: Vec<f64> = gathered
                        .iter()
                        .map(|r| {
                            let dot: f64 =
                                q.iter().zip(r.iter()).map(|(a, &b)| a * f64::from(b)).sum();
                            dot * f64::from(s.scale)
                        })
                        .collect();
                    let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|v| (v - m).exp()).collect();
                    let sum: f64 = e.iter().sum();
                    for c in 0..kr {
                        let want: f64 = e
                            .iter()
                            .zip(&gathered)
                            .map(|(p, r)| p / sum * f64::from(r[c]))
                            .sum();
                        let got = f64::from(h.bufs[at(Buf::Out)][(ti * nh + hd) * kr + c]);
                        assert!(
                            (got - want).abs() <= 1e-5,
                            "d_rope {d_rope}, token {ti}, head {hd}, column {c}: {got} against {want}"
                        );
                    }
                }
            }
        }
    }

    /// The peer's kernels compile under NVRTC for the primary module's arch and declare the two
    /// entries the chain looks up (skipped where libnvrtc cannot be loaded).
    #[test]
    fn attention_peer_source_compiles() {
        match host::reference::compile("peers/attention.cu", SOURCE, "sm_90") {
            Ok(ptx) => {
                for name in ["peer_gather_rows", "peer_softmax_rows"] {
                    assert!(
                        ptx.contains(&format!(".entry {name}(")),
                        "no entry {name} in:\n{ptx}"
                    );
                }
            }
            Err(host::Error::NoNvrtc) => {
                assert!(
                    std::env::var_os("FERROCUDA_REQUIRE_CPU_TOOLS").is_none(),
                    "libnvrtc not found, and FERROCUDA_REQUIRE_CPU_TOOLS is set"
                );
                eprintln!("attention_peer_source_compiles: skipped: libnvrtc not found");
            }
            Err(e) => panic!("peers/attention.cu: {e}"),
        }
    }
}
