//! One decode step's attention path, chained the way an engine chains it: on the engine's own
//! context and stream, with its weights and KV cache as views of two large allocations.
//!
//! RMSNorm and q8_1 of the hidden state (one launch), the e4m3 q projection to the queries'
//! non-rope part, absorb_q into the latent space, the attention over 2048 gathered latent rows on
//! the tensor cores, and decompress_v, for one token at the seed's MLA geometry (64 heads,
//! kv_rank 512, d_nope and d_v 256, no rope) and a 5120-wide hidden state. The step is captured
//! once as a graph and replayed; the example prints the step's device time.
//!
//! ```text
//! cargo run --release -p host --example decode_step [-- REPLAYS]
//! ```

use cudarc::driver::CudaContext;
use host::gemv::{self, Activation, Shape};
use host::mla::{self, AbsorbShape, AttnBuffers, AttnShape, DecompressShape, FlashWorkspace};
use host::mla::{ServingTable, SlotIndices};
use host::norm_q8::{self, Rows};
use host::{CudaSlice, CudaView, Error, Gpu, Module};
use std::process::ExitCode;

const HIDDEN: usize = 5120;
const NH: usize = 64;
const KV_RANK: usize = 512;
const D_NOPE: usize = 256;
const D_V: usize = 256;
const POOL: usize = 65536;
const N_SLOTS: usize = 2048;

/// Where each weight lives in the engine's allocations: element offsets, each a multiple of
/// what the kernels read at once (16 bytes), as an engine's packer would place them.
struct Layout {
    norm: usize,
    w_kb: usize,
    w_vb: usize,
    f32_len: usize,
    q_proj: usize,
    u8_len: usize,
}

impl Layout {
    fn new() -> Self {
        let norm = 64;
        let w_kb = norm + HIDDEN;
        let w_vb = w_kb + NH * KV_RANK * D_NOPE;
        let f32_len = w_vb + NH * D_V * KV_RANK;
        Layout {
            norm,
            w_kb,
            w_vb,
            f32_len,
            q_proj: 4096,
            u8_len: 4096 + HIDDEN * NH * D_NOPE,
        }
    }
}

/// The step's inputs that an engine keeps: views of its weight allocations, the cache, the
/// step's slots.
struct Weights<'a> {
    norm_w: CudaView<'a, f32>,
    w_kb: CudaView<'a, f32>,
    w_vb: CudaView<'a, f32>,
    q_proj: CudaView<'a, u8>,
    cache: &'a CudaSlice<f32>,
    q_pe: &'a CudaSlice<f32>,
    idx: &'a SlotIndices,
}

/// The step's activations and the attention's workspace.
struct Activations {
    x: CudaSlice<f32>,
    z: CudaSlice<f32>,
    xq: CudaSlice<i8>,
    xd: CudaSlice<f32>,
    q_nope: CudaSlice<f32>,
    q_lat: CudaSlice<f32>,
    o_lat: CudaSlice<f32>,
    out: CudaSlice<f32>,
    ws: FlashWorkspace,
}

/// Queues one step on the module's stream.
fn enqueue(module: &Module, gpu: &Gpu, w: &Weights<'_>, a: &mut Activations) -> Result<(), Error> {
    let table = ServingTable::DEFAULT;
    let rows = Rows {
        nrows: 1,
        ncols: HIDDEN,
    };
    let (x, norm_w) = (&a.x, &w.norm_w);
    norm_q8::rms_norm_zq8_f32(
        module, gpu, x, norm_w, &mut a.z, &mut a.xq, &mut a.xd, rows, 1e-6,
    )?;
    let act = Activation {
        qs: &a.xq,
        d: &a.xd,
    };
    let shape = Shape {
        m: 1,
        in_f: HIDDEN,
        out_f: NH * D_NOPE,
    };
    gemv::gemv_e4m3(module, gpu, &w.q_proj, 0.01, act, &mut a.q_nope, shape)?;
    let absorb = AbsorbShape {
        t: 1,
        nh: NH,
        d_nope: D_NOPE,
        kv_rank: KV_RANK,
    };
    mla::absorb_q_serving(
        module,
        gpu,
        &a.q_nope,
        &w.w_kb,
        &mut a.q_lat,
        absorb,
        &table,
    )?;
    let attn = AttnShape {
        nh: NH,
        kv_rank: KV_RANK,
        d_rope: 0,
    };
    let b = AttnBuffers {
        q_lat: &a.q_lat,
        q_pe: w.q_pe,
        cache: w.cache,
        idx: w.idx,
        out: &mut a.o_lat,
    };
    mla::attn_flash(module, gpu, b, attn, 0.0625, &mut a.ws)?;
    let decompress = DecompressShape {
        t: 1,
        nh: NH,
        d_v: D_V,
        kv_rank: KV_RANK,
    };
    mla::decompress_v_serving(
        module, gpu, &a.o_lat, &w.w_vb, &mut a.out, decompress, &table,
    )
}

fn main() -> ExitCode {
    let replays = match std::env::args().nth(1).map(|a| a.parse::<u32>()) {
        None => 100,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("decode_step: REPLAYS is a positive whole number");
            return ExitCode::from(2);
        }
    };
    match run(replays) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("decode_step: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(replays: u32) -> Result<(), String> {
    let (report, sound) = step_time(replays).map_err(|e| e.to_string())?;
    println!("{report}");
    sound
        .then_some(())
        .ok_or_else(|| "an output was not finite, or a replay changed the bits".into())
}

/// Runs the step once, then times `replays` replays of its graph, back to back as a decode loop
/// runs them; the report line, and whether every output was finite and every replay gave the
/// first step's bits.
fn step_time(replays: u32) -> Result<(String, bool), Error> {
    // The engine's context and stream; the launchers queue there.
    let ctx = CudaContext::new(0).map_err(|source| Error::Driver {
        during: "opening device 0".into(),
        source,
    })?;
    // The step is replayed as a graph, and cudarc's per-buffer events between streams would be
    // waits on events recorded outside the capture: an engine that captures turns them off.
    // SAFETY: every buffer of this context is used on `stream` alone.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().map_err(|source| Error::Driver {
        during: "creating a stream".into(),
        source,
    })?;
    let gpu = Gpu::on_stream(stream)?;
    let module = Module::rust(&gpu)?;

    // The engine's weights: f32 tensors in one allocation, e4m3 bytes in another.
    let at = Layout::new();
    let f32_weights: Vec<f32> = (0..at.f32_len)
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 8000.0)
        .collect();
    let f32_weights = gpu.upload(&f32_weights)?;
    let u8_weights: Vec<u8> = (0..at.u8_len)
        .map(|i| (i * 37 % 251) as u8 & 0x7e)
        .collect();
    let u8_weights = gpu.upload(&u8_weights)?;

    // The latent cache and the step's gathered slots (a top-k selection, spread over the pool).
    let cache: Vec<f32> = (0..POOL * KV_RANK)
        .map(|i| ((i * 613 % 997) as f32 - 498.0) / 1000.0)
        .collect();
    let cache = gpu.upload(&cache)?;
    let slots: Vec<i32> = (0..N_SLOTS).map(|s| (s * 31 % POOL) as i32).collect();
    let idx = SlotIndices::new(&gpu, &slots, 1, N_SLOTS, POOL)?;
    let q_pe = gpu.upload(&[0.0f32])?; // d_rope 0: not read

    // The step's activations, made once and reused by every replay.
    let attn = AttnShape {
        nh: NH,
        kv_rank: KV_RANK,
        d_rope: 0,
    };
    let mut acts = Activations {
        x: gpu.upload(&vec![0.25f32; HIDDEN])?,
        z: gpu.alloc_poisoned(HIDDEN, 0)?,
        xq: gpu.alloc_poisoned(HIDDEN, 0)?,
        xd: gpu.alloc_poisoned(HIDDEN / 32, 0)?,
        q_nope: gpu.alloc_poisoned(NH * D_NOPE, 0)?,
        q_lat: gpu.alloc_poisoned(NH * KV_RANK, 0)?,
        o_lat: gpu.alloc_poisoned(NH * KV_RANK, 0)?,
        out: gpu.alloc_poisoned(NH * D_V, 0)?,
        ws: FlashWorkspace::new(&gpu, &attn, 1, N_SLOTS)?,
    };
    let weights = Weights {
        norm_w: f32_weights.slice(at.norm..at.norm + HIDDEN),
        w_kb: f32_weights.slice(at.w_kb..at.w_kb + NH * KV_RANK * D_NOPE),
        w_vb: f32_weights.slice(at.w_vb..at.w_vb + NH * D_V * KV_RANK),
        q_proj: u8_weights.slice(at.q_proj..at.q_proj + HIDDEN * NH * D_NOPE),
        cache: &cache,
        q_pe: &q_pe,
        idx: &idx,
    };
    let step = |acts: &mut Activations| enqueue(&module, &gpu, &weights, acts);
    step(&mut acts)?;
    let first = gpu.download(&acts.out)?;
    let graph = gpu.capture(|| step(&mut acts))?;
    gpu.replay(&graph)?; // the first replay pays the graph's own set-up
    let ms = gpu.time_ms(|| (0..replays).try_for_each(|_| gpu.replay(&graph)))?;
    let again = gpu.download(&acts.out)?;
    let same = first
        .iter()
        .zip(&again)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    let finite = first.iter().all(|v| v.is_finite());
    let report = format!(
        "decode step on {} ({} SMs), the caller's stream, weights as views: {:.2} us a step over \
         {replays} graph replays (rms_norm_zq8_f32, gemv_e4m3, absorb_q, attn_flash and its \
         combine, decompress_v); out[0..4] = {:?}; every output finite: {finite}; replays give \
         the first step's bits: {same}",
        gpu.info().name,
        gpu.info().sm_count,
        1000.0 * ms / replays as f32,
        &first[..4],
    );
    Ok((report, finite && same))
}
