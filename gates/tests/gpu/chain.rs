//! Programmatic dependent launches (`Gpu::set_programmatic`): two chains of a decode step's
//! launchers, each kernel reading its predecessor's output and some overwriting what the kernel
//! before them read, give with the switch on, launched on the stream and captured as a graph and
//! replayed, the bits they give launched plainly, in both builds.

use crate::arch::{keep, values};
use half::f16;
use host::gemv::{self, Activation, Shape};
use host::mla::{self, AttnBuffers, AttnShape, FlashWorkspace, SlotIndices, Split};
use host::{norm_q8, swiglu, CudaSlice, Error, Gpu, Module, FERROCUDA};
use kernels_gpu::abi::F16;
use kernels_gpu::gemv::BlockQ8_0;

/// The hidden size of the MLP chain.
const HIDDEN: usize = 4096;
/// Its intermediate size (the gate/up GEMV gives twice as many).
const FFN: usize = 2048;

/// The MLA chain's geometry: tokens, heads, the GEMVs' sizes, the cache.
const T: usize = 2;
const NH: usize = 16;
const D_NOPE: usize = 128;
const KV_RANK: usize = 512;
const D_ROPE: usize = 64;
const POOL: usize = 700;
const N_SLOTS: usize = 300;

/// The buffers of both chains, inputs uploaded and outputs poisoned.
struct Chain {
    x: CudaSlice<f32>,
    norm_w: CudaSlice<f32>,
    z: CudaSlice<f32>,
    qs: CudaSlice<i8>,
    d: CudaSlice<f32>,
    w_e4m3: CudaSlice<u8>,
    h: CudaSlice<f32>,
    w_q8_0: CudaSlice<u8>,
    gate_up: CudaSlice<f32>,
    q_nope: CudaSlice<f32>,
    w_kb: CudaSlice<f32>,
    q_lat: CudaSlice<f32>,
    q_pe: CudaSlice<f32>,
    cache: CudaSlice<f32>,
    idx: SlotIndices,
    ws: FlashWorkspace,
    o_lat: CudaSlice<f32>,
    w_vb: CudaSlice<f32>,
}

impl Chain {
    fn new(gpu: &Gpu) -> Result<Self, Error> {
        // e4m3 codes with bit 0 clear: every magnitude but the NaN codes 0x7F and 0xFF.
        let e4m3: Vec<u8> = (0..HIDDEN * HIDDEN)
            .map(|i| ((i * 37 + i / HIDDEN) % 251) as u8 & 0xfe)
            .collect();
        let blocks: Vec<BlockQ8_0> = (0..HIDDEN / 32 * 2 * FFN)
            .map(|b| BlockQ8_0 {
                d: F16(f16::from_f32(0.001 + (b % 977) as f32 / 65536.0).to_bits()),
                qs: std::array::from_fn(|k| (b * 32 + k * 7) as u8 as i8),
            })
            .collect();
        let idx: Vec<i32> = (0..T * N_SLOTS).map(|i| (i * 37 % POOL) as i32).collect();
        let shape = attn_shape();
        Ok(Chain {
            x: values(gpu, HIDDEN, 21, 3.0)?,
            norm_w: values(gpu, HIDDEN, 22, 1.0)?,
            z: gpu.alloc_poisoned(HIDDEN, 0xff)?,
            qs: gpu.alloc_poisoned(HIDDEN, 0x55)?,
            d: gpu.alloc_poisoned(HIDDEN / 32, 0xff)?,
            w_e4m3: gpu.upload(&e4m3)?,
            h: gpu.alloc_poisoned(HIDDEN, 0xff)?,
            w_q8_0: gpu.upload(&gemv::q8_0_bytes(&blocks))?,
            gate_up: gpu.alloc_poisoned(2 * FFN, 0xff)?,
            q_nope: values(gpu, T * NH * D_NOPE, 23, 1.0)?,
            w_kb: values(gpu, NH * KV_RANK * D_NOPE, 24, 0.1)?,
            q_lat: gpu.alloc_poisoned(T * NH * KV_RANK, 0xff)?,
            q_pe: values(gpu, T * NH * D_ROPE, 25, 1.0)?,
            cache: values(gpu, POOL * (KV_RANK + D_ROPE), 26, 1.0)?,
            idx: SlotIndices::new(gpu, &idx, T, N_SLOTS, POOL)?,
            ws: FlashWorkspace::new(gpu, &shape, T, N_SLOTS)?,
            o_lat: gpu.alloc_poisoned(T * NH * KV_RANK, 0xff)?,
            w_vb: values(gpu, NH * D_NOPE * KV_RANK, 27, 0.1)?,
        })
    }

    /// rms_norm_zq8_f32 -> gemv_e4m3 (m = 1) -> quantize_q8_1 of its output into the same q8_1
    /// planes -> gemv_q8_0 -> swiglu into the first half of the e4m3 GEMV's output; then
    /// absorb_q -> attn_flash (and its combine) -> decompress_v into absorb_q's input.
    fn enqueue(&mut self, gpu: &Gpu, module: &Module) -> Result<(), Error> {
        let rows = norm_q8::Rows {
            nrows: 1,
            ncols: HIDDEN,
        };
        let (qs, d) = (&mut self.qs, &mut self.d);
        norm_q8::rms_norm_zq8_f32(
            module,
            gpu,
            &self.x,
            &self.norm_w,
            &mut self.z,
            qs,
            d,
            rows,
            1e-6,
        )?;
        let up = Shape {
            m: 1,
            in_f: HIDDEN,
            out_f: HIDDEN,
        };
        let act = Activation {
            qs: &self.qs,
            d: &self.d,
        };
        gemv::gemv_e4m3(module, gpu, &self.w_e4m3, 1.0 / 256.0, act, &mut self.h, up)?;
        norm_q8::quantize_q8_1(module, gpu, &self.h, &mut self.qs, &mut self.d, HIDDEN)?;
        let gate_up = Shape {
            m: 1,
            in_f: HIDDEN,
            out_f: 2 * FFN,
        };
        let act = Activation {
            qs: &self.qs,
            d: &self.d,
        };
        gemv::gemv_q8_0(module, gpu, &self.w_q8_0, act, &mut self.gate_up, gate_up)?;
        let (g, u) = (self.gate_up.slice(..FFN), self.gate_up.slice(FFN..));
        swiglu::swiglu(module, gpu, &g, &u, &mut self.h.slice_mut(..FFN))?;

        let absorb = mla::AbsorbShape {
            t: T,
            nh: NH,
            d_nope: D_NOPE,
            kv_rank: KV_RANK,
        };
        mla::absorb_q(
            module,
            gpu,
            &self.q_nope,
            &self.w_kb,
            &mut self.q_lat,
            absorb,
            Split::S1,
        )?;
        let b = AttnBuffers {
            q_lat: &self.q_lat,
            q_pe: &self.q_pe,
            cache: &self.cache,
            idx: &self.idx,
            out: &mut self.o_lat,
        };
        mla::attn_flash(module, gpu, b, attn_shape(), 0.07, &mut self.ws)?;
        let decompress = mla::DecompressShape {
            t: T,
            nh: NH,
            d_v: D_NOPE,
            kv_rank: KV_RANK,
        };
        let (o_lat, w_vb) = (&self.o_lat, &self.w_vb);
        mla::decompress_v(
            module,
            gpu,
            o_lat,
            w_vb,
            &mut self.q_nope,
            decompress,
            Split::S1,
        )
    }

    /// Every buffer a kernel of the chains wrote, as bytes.
    fn outputs(&self, gpu: &Gpu) -> Result<Vec<u8>, Error> {
        let mut bytes = Vec::new();
        keep(gpu, &mut bytes, &self.z)?;
        keep(gpu, &mut bytes, &self.qs)?;
        keep(gpu, &mut bytes, &self.d)?;
        keep(gpu, &mut bytes, &self.h)?;
        keep(gpu, &mut bytes, &self.gate_up)?;
        keep(gpu, &mut bytes, &self.q_lat)?;
        keep(gpu, &mut bytes, &self.o_lat)?;
        keep(gpu, &mut bytes, &self.q_nope)?;
        Ok(bytes)
    }
}

fn attn_shape() -> AttnShape {
    AttnShape {
        nh: NH,
        kv_rank: KV_RANK,
        d_rope: D_ROPE,
    }
}

/// The chains on fresh buffers, on the stream or captured and replayed once.
fn run(gpu: &Gpu, module: &Module, captured: bool) -> Result<Vec<u8>, Error> {
    let mut chain = Chain::new(gpu)?;
    if captured {
        let graph = gpu.capture(|| chain.enqueue(gpu, module))?;
        gpu.replay(&graph)?;
    } else {
        chain.enqueue(gpu, module)?;
    }
    chain.outputs(gpu)
}

/// Plain, then programmatic on the stream, then programmatic in a graph: the same bytes.
fn compare(gpu: &Gpu, module: &Module) -> Result<(), String> {
    let err = |e: Error| e.to_string();
    gpu.set_programmatic(false);
    let plain = run(gpu, module, false).map_err(err)?;
    gpu.set_programmatic(true);
    for (how, captured) in [("on the stream", false), ("in a graph", true)] {
        let chained = run(gpu, module, captured).map_err(err)?;
        if let Some(at) = plain.iter().zip(&chained).position(|(a, b)| a != b) {
            return Err(format!(
                "programmatic launches {how} differ from plain ones at byte {at} of {}",
                plain.len()
            ));
        }
    }
    Ok(())
}

/// [`compare`] for the module under test and the .cu build of its arch; the switch is left off.
pub fn programmatic_chains_give_the_plain_bits(gpu: &Gpu, module: &Module) -> Result<(), String> {
    let cu = Module::cu_of(gpu, &[FERROCUDA], module.arch()).map_err(|e| e.to_string())?;
    for (label, module) in [("rust", module), ("cu", &cu)] {
        let compared = compare(gpu, module);
        gpu.set_programmatic(false);
        compared.map_err(|e| format!("{label} build ({}): {e}", module.arch()))?;
    }
    Ok(())
}
