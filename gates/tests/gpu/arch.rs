//! The sm_80 module beside the device's own: the kernels whose code differs by target (the e4m3
//! GEMVs, decoding in software below sm_89; attn_flash and its combine, launched plainly below
//! sm_90) and a kernel that does not (swiglu), on the same inputs through both modules, must give
//! the same bytes. Every other check of the gates runs on either module with `--arch` or
//! `FERROCUDA_MODULE_ARCH`.

use host::mla::{self, AttnBuffers, AttnShape, FlashWorkspace, SlotIndices};
use host::{gemv, norm_q8, swiglu, Error, Gpu, Module, FERROCUDA};

/// The oldest target built, run beside the device's own.
const OLDEST: &str = "sm_80";

/// Deterministic values in [-1, 1) from an index.
fn value(i: usize, salt: u32) -> f32 {
    let h = (i as u32 ^ salt)
        .wrapping_mul(0x9E37_79B9)
        .rotate_left(13)
        .wrapping_mul(0x85EB_CA6B);
    (h >> 8) as f32 / (1u32 << 23) as f32 - 1.0
}

/// Every output of the kernels above, through `module`, as bytes in one vector.
fn outputs(gpu: &Gpu, module: &Module) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    let mut keep = |v: Vec<f32>| bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));

    // The e4m3 GEMVs at every m, on weights that hold every byte code (both NaN codes among
    // them, which make their rows NaN) in every position of a pair.
    let (in_f, out_f) = (512, 384);
    let w: Vec<u8> = (0..in_f * out_f)
        .map(|i| (i * 7 + i / in_f) as u8)
        .collect();
    let w = gpu.upload(&w)?;
    let grid: Vec<f32> = (0..gemv_grid_len(in_f, out_f))
        .map(|i| 0.5 + i as f32 / 8.0)
        .collect();
    let grid = gpu.upload(&grid)?;
    for m in [1, 2, 4, 8] {
        let x: Vec<f32> = (0..m * in_f).map(|i| value(i, 1)).collect();
        let x = gpu.upload(&x)?;
        let mut qs = gpu.alloc_poisoned::<i8>(m * in_f, 0)?;
        let mut d = gpu.alloc_poisoned::<f32>(m * in_f / 32, 0)?;
        norm_q8::quantize_q8_1(module, gpu, &x, &mut qs, &mut d, m * in_f)?;
        let shape = gemv::Shape { m, in_f, out_f };
        let mut y = gpu.alloc_poisoned::<f32>(m * out_f, 0xff)?;
        let act = gemv::Activation { qs: &qs, d: &d };
        gemv::gemv_e4m3(module, gpu, &w, 0.75, act, &mut y, shape)?;
        keep(gpu.download(&y)?);
        let act = gemv::Activation { qs: &qs, d: &d };
        gemv::gemv_e4m3_b128(module, gpu, &w, &grid, act, &mut y, shape)?;
        keep(gpu.download(&y)?);
    }

    // attn_flash with its combine, at 16, 32 and 64 heads.
    for (t, nh) in [(1, 16), (2, 32), (1, 64)] {
        let (kv_rank, d_rope, pool, n_slots) = (512, 64, 700, 300);
        let row = kv_rank + d_rope;
        let shape = AttnShape {
            nh,
            kv_rank,
            d_rope,
        };
        let q_lat = gpu.upload(
            &(0..t * nh * kv_rank)
                .map(|i| value(i, 2))
                .collect::<Vec<_>>(),
        )?;
        let q_pe = gpu.upload(
            &(0..t * nh * d_rope)
                .map(|i| value(i, 3))
                .collect::<Vec<_>>(),
        )?;
        let cache = gpu.upload(&(0..pool * row).map(|i| value(i, 4)).collect::<Vec<_>>())?;
        let idx: Vec<i32> = (0..t * n_slots).map(|i| (i * 37 % pool) as i32).collect();
        let idx = SlotIndices::new(gpu, &idx, t, n_slots, pool)?;
        let mut ws = FlashWorkspace::new(gpu, &shape, t, n_slots)?;
        let mut out = gpu.alloc_poisoned::<f32>(t * nh * kv_rank, 0xff)?;
        let b = AttnBuffers {
            q_lat: &q_lat,
            q_pe: &q_pe,
            cache: &cache,
            idx: &idx,
            out: &mut out,
        };
        mla::attn_flash(module, gpu, b, shape, 0.07, &mut ws)?;
        keep(gpu.download(&out)?);
    }

    let n = 1001;
    let g = gpu.upload(&(0..n).map(|i| 8.0 * value(i, 5)).collect::<Vec<_>>())?;
    let u = gpu.upload(&(0..n).map(|i| value(i, 6)).collect::<Vec<_>>())?;
    let mut y = gpu.alloc_poisoned::<f32>(n, 0xff)?;
    swiglu::swiglu(module, gpu, &g, &u, &mut y)?;
    keep(gpu.download(&y)?);
    Ok(bytes)
}

/// The block-128 scale grid's length for the shape.
fn gemv_grid_len(in_f: usize, out_f: usize) -> usize {
    in_f.div_ceil(128) * out_f.div_ceil(128)
}

/// The sm_80 module and the device's own give the same bytes, in both builds (the .cu compiled
/// by NVRTC for each arch).
pub fn the_oldest_module_gives_the_devices_bits(gpu: &Gpu, _: &Module) -> Result<(), String> {
    let err = |e: Error| e.to_string();
    let own = host::module_arch(gpu).map_err(err)?;
    for (label, load) in [
        (
            "rust",
            Module::rust_of as fn(&Gpu, &[host::KernelCrate], &str) -> _,
        ),
        ("cu", Module::cu_of),
    ] {
        let oldest = load(gpu, &[FERROCUDA], OLDEST).map_err(err)?;
        let theirs = load(gpu, &[FERROCUDA], own).map_err(err)?;
        let (a, b) = (
            outputs(gpu, &oldest).map_err(err)?,
            outputs(gpu, &theirs).map_err(err)?,
        );
        if let Some(at) = a.iter().zip(&b).position(|(x, y)| x != y) {
            return Err(format!(
                "{label} build: the {OLDEST} module's outputs differ from the {own} module's at \
                 byte {at} of {}",
                a.len()
            ));
        }
    }
    Ok(())
}
