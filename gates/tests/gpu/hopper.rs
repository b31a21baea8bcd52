//! The Hopper entries (`mla_attn_flash_wgmma_*`, the sm_90a module alone) beside attn_flash:
//! on the same inputs both builds' entries, at 16, 32 and 64 heads a block, give attn_flash's
//! outputs bit for bit (Rust == .cu == attn_flash, through the combine of chunks and the combine
//! of pairs), and the two builds the same workspace (every pair's folded sums and statistics
//! written, each buffer poisoned first), at both row lengths, ragged and odd chunk counts, a slot
//! alone, pools smaller than `n_slots` (duplicates), the pool's first and last rows, and value
//! classes whose weights underflow; a module without them refuses them before launching (on any
//! device; the bits are checked where the device runs sm_90a's module).

use super::arch::values;
use host::mla::{self, AttnBuffers, AttnShape, FlashWorkspace, SlotIndices};
use host::{CudaSlice, Error, Gpu, Module, FERROCUDA};

use host::mla::{FlashHeads, WgmmaHeads, WGMMA_ARCH as HOPPER};

/// One case: `t` tokens of `nh` heads over `n_slots` slots of a pool of `pool` rows.
struct Case {
    t: usize,
    nh: usize,
    d_rope: usize,
    n_slots: usize,
    pool: usize,
    /// Multiplies the queries: 1 for uniform scores, 40 for scores whose weights underflow
    /// but at the maximum.
    q_scale: f32,
    /// A slot whose row is scaled up, dominating its token's softmax.
    dominant: Option<usize>,
}

const CASES: [Case; 9] = [
    Case {
        t: 1,
        nh: 64,
        d_rope: 0,
        n_slots: 2048,
        pool: 4096,
        q_scale: 1.0,
        dominant: None,
    },
    Case {
        t: 3,
        nh: 64,
        d_rope: 0,
        n_slots: 300,
        pool: 700,
        q_scale: 40.0,
        dominant: None,
    },
    Case {
        t: 2,
        nh: 128,
        d_rope: 64,
        n_slots: 2048,
        pool: 3000,
        q_scale: 1.0,
        dominant: Some(7),
    },
    Case {
        t: 8,
        nh: 16,
        d_rope: 64,
        n_slots: 65,
        pool: 40,
        q_scale: 1.0,
        dominant: None,
    },
    Case {
        t: 1,
        nh: 32,
        d_rope: 0,
        n_slots: 1,
        pool: 5,
        q_scale: 1.0,
        dominant: None,
    },
    Case {
        t: 2,
        nh: 64,
        d_rope: 64,
        n_slots: 7,
        pool: 9,
        q_scale: 40.0,
        dominant: None,
    },
    Case {
        t: 1,
        nh: 128,
        d_rope: 64,
        n_slots: 129,
        pool: 200,
        q_scale: 1.0,
        dominant: Some(128),
    },
    Case {
        t: 4,
        nh: 64,
        d_rope: 0,
        n_slots: 192,
        pool: 100,
        q_scale: 1.0,
        dominant: None,
    },
    Case {
        t: 1,
        nh: 16,
        d_rope: 0,
        n_slots: 6000,
        pool: 9000,
        q_scale: 1.0,
        dominant: None,
    },
];

/// The case's slot indices: a stride through the pool, with the pool's first and last rows among
/// them (the launchers refuse indices outside the pool).
fn indices(c: &Case) -> Vec<i32> {
    (0..c.t * c.n_slots)
        .map(|i| match i % 97 {
            3 => 0,
            5 => c.pool as i32 - 1,
            _ => ((i * 37 + i / 5) % c.pool) as i32,
        })
        .collect()
}

/// The case's inputs on the device: queries, the cache (the dominant slot's row scaled by 8).
fn inputs(gpu: &Gpu, c: &Case) -> Result<[CudaSlice<f32>; 3], Error> {
    let kv = kernels_gpu::mla::flash::wgmma::KV_RANK as usize;
    let q_lat = values(gpu, c.t * c.nh * kv, 21, c.q_scale)?;
    let q_pe = values(gpu, (c.t * c.nh * c.d_rope).max(1), 22, c.q_scale)?;
    let row = kv + c.d_rope;
    let mut cache = gpu.download(&values(gpu, c.pool * row, 23, 1.0)?)?;
    if let Some(slot) = c.dominant {
        let r = indices(c)[slot] as usize;
        cache[r * row..(r + 1) * row]
            .iter_mut()
            .for_each(|v| *v *= 8.0);
    }
    Ok([q_lat, q_pe, gpu.upload(&cache)?])
}

/// The workspace (the chunks' partial sums, then their statistics) and the outputs of attn_flash's
/// own 16-head entry (`heads` None: not `attn_flash`, which takes a Hopper entry at some of the
/// cases) or of the Hopper entry of `heads` heads, on `module`, every buffer poisoned first.
fn outputs(
    gpu: &Gpu,
    module: &Module,
    c: &Case,
    heads: Option<u32>,
) -> Result<[Vec<f32>; 3], Error> {
    let kv = kernels_gpu::mla::flash::wgmma::KV_RANK as usize;
    let shape = AttnShape {
        nh: c.nh,
        kv_rank: kv,
        d_rope: c.d_rope,
    };
    let [q_lat, q_pe, cache] = inputs(gpu, c)?;
    let idx = SlotIndices::new(gpu, &indices(c), c.t, c.n_slots, c.pool)?;
    let mut ws = FlashWorkspace::new(gpu, &shape, c.t, c.n_slots)?;
    ws.poison(gpu, 0xff)?;
    let mut out = gpu.alloc_poisoned::<f32>(c.t * c.nh * kv, 0xff)?;
    let b = AttnBuffers {
        q_lat: &q_lat,
        q_pe: &q_pe,
        cache: &cache,
        idx: &idx,
        out: &mut out,
    };
    match heads {
        None => mla::attn_flash_with(module, gpu, b, shape, 0.07, &mut ws, FlashHeads::H16)?,
        Some(h) => mla::attn_flash_wgmma_with(module, gpu, b, shape, 0.07, &mut ws, h)?,
    }
    let (o_part, ml) = ws.partials();
    Ok([
        gpu.download(o_part)?,
        gpu.download(ml)?,
        gpu.download(&out)?,
    ])
}

/// The first output whose bits differ, as a message.
fn first_difference(a: &[f32], b: &[f32]) -> Option<String> {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x.to_bits() != y.to_bits())?;
    Some(format!(
        "output {at} of {}: {:e} against {:e}",
        a.len(),
        a[at],
        b[at]
    ))
}

pub fn hopper_entries_give_attn_flash_bits(gpu: &Gpu, _: &Module) -> Result<(), String> {
    let err = |e: Error| e.to_string();
    // The newest module without the entries that the device runs refuses them before launching.
    let others: Vec<&str> = FERROCUDA
        .modules
        .iter()
        .map(|m| m.arch)
        .filter(|a| *a != HOPPER)
        .collect();
    let plain = host::arch::fitting_arch(&others, gpu.info().compute_capability)
        .ok_or("no module without the Hopper entries fits the device")?;
    let module = Module::rust_of(gpu, &[FERROCUDA], plain).map_err(err)?;
    match outputs(gpu, &module, &CASES[0], Some(16)) {
        Err(Error::Arg(e)) if e.arg == "module" => {}
        Err(e) => return Err(format!("{plain}: refused for another reason: {e}")),
        Ok(_) => {
            return Err(format!(
                "{plain}: the Hopper entry was launched outside {HOPPER}"
            ))
        }
    }
    let arch = host::module_arch(gpu).map_err(err)?;
    if arch != HOPPER {
        return Ok(());
    }
    let rust = Module::rust_of(gpu, &[FERROCUDA], arch).map_err(err)?;
    let cu = Module::cu_of(gpu, &[FERROCUDA], arch).map_err(err)?;
    for c in &CASES {
        let what = format!(
            "t {} nh {} d_rope {} n_slots {} pool {} q x{}{}",
            c.t,
            c.nh,
            c.d_rope,
            c.n_slots,
            c.pool,
            c.q_scale,
            c.dominant
                .map_or(String::new(), |s| format!(", slot {s} dominant"))
        );
        let flash = outputs(gpu, &rust, c, None).map_err(err)?;
        if flash.iter().flatten().any(|v| v.is_nan()) {
            return Err(format!("{what}: attn_flash left a value unwritten or NaN"));
        }
        // The pairs' part of the workspace: `[t, pairs, nh, kv_rank]` sums, `[.., 2]` statistics.
        let pairs = c.t * kernels_gpu::mla::flash::pairs(c.n_slots as u32) as usize * c.nh;
        let kv = kernels_gpu::mla::flash::wgmma::KV_RANK as usize;
        for heads in WgmmaHeads::HEADS
            .into_iter()
            .filter(|h| c.nh % *h as usize == 0)
        {
            let rust_ws = outputs(gpu, &rust, c, Some(heads)).map_err(err)?;
            let cu_ws = outputs(gpu, &cu, c, Some(heads)).map_err(err)?;
            for (build, hopper) in [("rust", &rust_ws), ("cu", &cu_ws)] {
                if let Some(d) = first_difference(&hopper[2], &flash[2]) {
                    return Err(format!(
                        "{what}: the {build} build's {heads}-head Hopper entry differs from attn_flash at output {d}"
                    ));
                }
                let written = [&hopper[0][..pairs * kv], &hopper[1][..pairs * 2]];
                if written.iter().any(|w| w.iter().any(|v| v.is_nan())) {
                    return Err(format!(
                        "{what}: the {build} build's {heads}-head Hopper entry left a pair's sum or statistic unwritten or NaN"
                    ));
                }
            }
            let names = ["pair's sum", "pair's statistic"];
            let lens = [pairs * kv, pairs * 2];
            for ((name, len), (a, b)) in names.iter().zip(lens).zip(rust_ws.iter().zip(&cu_ws)) {
                if let Some(d) = first_difference(&a[..len], &b[..len]) {
                    return Err(format!(
                        "{what}: the {heads}-head Hopper entry's {name} differs between the builds at {d}"
                    ));
                }
            }
        }
    }
    Ok(())
}
