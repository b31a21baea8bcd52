//! The sm_80 module beside the device's own: every kernel of every family, on the same inputs
//! through both modules, must give the same bytes; those whose code differs by target (the e4m3
//! GEMVs, decoding in software below sm_89; attn_flash and its combine, launched plainly below
//! sm_90) and those whose code does not. Every other check of the gates runs on either module
//! with `--arch` or `FERROCUDA_MODULE_ARCH`.

use half::f16;
use host::mla::{self, AttnBuffers, AttnShape, FlashWorkspace, SlotIndices, Split};
use host::{gemv, norm_q8, swiglu, CudaSlice, DeviceRepr, Error, Gpu, Module, FERROCUDA};
use kernels_gpu::abi::F16;
use kernels_gpu::gemv::BlockQ8_0;

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

/// Uploads `n` values of [`value`] with `salt`, times `scale`.
pub(crate) fn values(gpu: &Gpu, n: usize, salt: u32, scale: f32) -> Result<CudaSlice<f32>, Error> {
    gpu.upload(&(0..n).map(|i| scale * value(i, salt)).collect::<Vec<_>>())
}

/// Appends a buffer's bytes to `bytes`.
pub(crate) fn keep<T: DeviceRepr + Default + Copy + ToBytes>(
    gpu: &Gpu,
    bytes: &mut Vec<u8>,
    buffer: &CudaSlice<T>,
) -> Result<(), Error> {
    bytes.extend(gpu.download(buffer)?.iter().flat_map(|v| v.bytes()));
    Ok(())
}

/// The bytes of a device element, as [`keep`] appends them.
pub(crate) trait ToBytes {
    fn bytes(&self) -> Vec<u8>;
}

impl ToBytes for f32 {
    fn bytes(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

impl ToBytes for i8 {
    fn bytes(&self) -> Vec<u8> {
        vec![*self as u8]
    }
}

/// Every output of every family's kernels through `module`, as bytes in one vector.
fn outputs(gpu: &Gpu, module: &Module) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    norm_q8_outputs(gpu, module, &mut bytes)?;
    gemv_outputs(gpu, module, &mut bytes)?;
    mla_gemv_outputs(gpu, module, &mut bytes)?;
    attn_outputs(gpu, module, &mut bytes)?;

    let n = 1001;
    let (g, u) = (values(gpu, n, 5, 8.0)?, values(gpu, n, 6, 1.0)?);
    let mut y = gpu.alloc_poisoned::<f32>(n, 0xff)?;
    swiglu::swiglu(module, gpu, &g, &u, &mut y)?;
    keep(gpu, &mut bytes, &y)?;

    let rows = norm_q8::Rows {
        nrows: 3,
        ncols: 288,
    };
    let (g, u) = (
        values(gpu, 3 * 320, 9, 8.0)?,
        values(gpu, 3 * 320, 10, 1.0)?,
    );
    let mut y = gpu.alloc_poisoned::<f32>(rows.elems(), 0xff)?;
    let mut qs = gpu.alloc_poisoned::<i8>(rows.elems(), 0x55)?;
    let mut d = gpu.alloc_poisoned::<f32>(rows.elems() / 32, 0xff)?;
    norm_q8::swiglu_q8_1(module, gpu, &g, &u, 320, &mut y, &mut qs, &mut d, rows)?;
    keep(gpu, &mut bytes, &y)?;
    keep(gpu, &mut bytes, &qs)?;
    keep(gpu, &mut bytes, &d)?;
    Ok(bytes)
}

/// rms_norm and the fused rms_norm_zq8_f32 at both block geometries (below 256 rows a thread
/// per virtual thread, from 256 on four each), one row wider than a 1024-thread block's trip.
fn norm_q8_outputs(gpu: &Gpu, module: &Module, bytes: &mut Vec<u8>) -> Result<(), Error> {
    for rows in [
        norm_q8::Rows {
            nrows: 3,
            ncols: 4096 + 160,
        },
        norm_q8::Rows {
            nrows: 256,
            ncols: 1024 + 96,
        },
    ] {
        let n = rows.elems();
        let (x, w) = (values(gpu, n, 7, 3.0)?, values(gpu, rows.ncols, 8, 1.0)?);
        let mut z = gpu.alloc_poisoned::<f32>(n, 0xff)?;
        norm_q8::rms_norm(module, gpu, &x, &w, &mut z, rows, 1e-6)?;
        keep(gpu, bytes, &z)?;
        let mut qs = gpu.alloc_poisoned::<i8>(n, 0x55)?;
        let mut d = gpu.alloc_poisoned::<f32>(n / 32, 0xff)?;
        norm_q8::rms_norm_zq8_f32(module, gpu, &x, &w, &mut z, &mut qs, &mut d, rows, 1e-6)?;
        keep(gpu, bytes, &z)?;
        keep(gpu, bytes, &qs)?;
        keep(gpu, bytes, &d)?;
    }
    Ok(())
}

/// Every GEMV format at every m (the quantized activation kept too): the e4m3 weights hold every
/// byte code (both NaN codes among them, which make their rows NaN) in every position of a
/// pair, the Q8_0 weights every quant with finite f16 scales, raw and planar.
fn gemv_outputs(gpu: &Gpu, module: &Module, bytes: &mut Vec<u8>) -> Result<(), Error> {
    let (in_f, out_f) = (512, 384);
    let codes: Vec<u8> = (0..in_f * out_f)
        .map(|i| (i * 7 + i / in_f) as u8)
        .collect();
    let w = gpu.upload(&codes)?;
    let grid: Vec<f32> = (0..gemv_grid_len(in_f, out_f))
        .map(|i| 0.5 + i as f32 / 8.0)
        .collect();
    let grid = gpu.upload(&grid)?;
    let blocks: Vec<BlockQ8_0> = (0..in_f / 32 * out_f)
        .map(|b| BlockQ8_0 {
            d: F16(f16::from_f32(0.001 + b as f32 / 4096.0).to_bits()),
            qs: std::array::from_fn(|k| (b * 32 + k) as u8 as i8),
        })
        .collect();
    let q8_0 = gpu.upload(&gemv::q8_0_bytes(&blocks))?;
    let (pq, pd) = gemv::q8_0_to_planar(&blocks);
    let (pq, pd) = (gpu.upload(&pq)?, gpu.upload(&pd)?);
    for m in [1, 2, 4, 8] {
        let x = values(gpu, m * in_f, 1, 1.0)?;
        let mut qs = gpu.alloc_poisoned::<i8>(m * in_f, 0)?;
        let mut d = gpu.alloc_poisoned::<f32>(m * in_f / 32, 0)?;
        norm_q8::quantize_q8_1(module, gpu, &x, &mut qs, &mut d, m * in_f)?;
        keep(gpu, bytes, &qs)?;
        keep(gpu, bytes, &d)?;
        let shape = gemv::Shape { m, in_f, out_f };
        let mut y = gpu.alloc_poisoned::<f32>(m * out_f, 0xff)?;
        let act = || gemv::Activation { qs: &qs, d: &d };
        gemv::gemv_e4m3(module, gpu, &w, 0.75, act(), &mut y, shape)?;
        keep(gpu, bytes, &y)?;
        gemv::gemv_e4m3_b128(module, gpu, &w, &grid, act(), &mut y, shape)?;
        keep(gpu, bytes, &y)?;
        gemv::gemv_q8_0(module, gpu, &q8_0, act(), &mut y, shape)?;
        keep(gpu, bytes, &y)?;
        gemv::gemv_q8_0_planar(module, gpu, &pq, &pd, act(), &mut y, shape)?;
        keep(gpu, bytes, &y)?;
        // The GLU entries, the matrix as gate and as up.
        let e4m3 = |scale| gemv::E4m3 { w: &w, scale };
        gemv::gemv_e4m3_glu(module, gpu, e4m3(0.75), e4m3(1.5), act(), &mut y, shape)?;
        keep(gpu, bytes, &y)?;
        let b128 = gemv::E4m3B128 { w: &w, grid: &grid };
        gemv::gemv_e4m3_b128_glu(module, gpu, b128, b128, act(), &mut y, shape)?;
        keep(gpu, bytes, &y)?;
        gemv::gemv_q8_0_glu(module, gpu, &q8_0, &q8_0, act(), &mut y, shape)?;
        keep(gpu, bytes, &y)?;
        let planar = gemv::Planar { wq: &pq, wd: &pd };
        gemv::gemv_q8_0_planar_glu(module, gpu, planar, planar, act(), &mut y, shape)?;
        keep(gpu, bytes, &y)?;
    }
    Ok(())
}

/// absorb_q and decompress_v at every split, at t 1 and 8.
fn mla_gemv_outputs(gpu: &Gpu, module: &Module, bytes: &mut Vec<u8>) -> Result<(), Error> {
    let (nh, d_nope, kv_rank, d_v) = (4, 128, 512, 128);
    let w_kb = values(gpu, nh * kv_rank * d_nope, 9, 0.1)?;
    let w_vb = values(gpu, nh * d_v * kv_rank, 10, 0.1)?;
    for t in [1, 8] {
        let q_nope = values(gpu, t * nh * d_nope, 11, 1.0)?;
        let o_lat = values(gpu, t * nh * kv_rank, 12, 1.0)?;
        let absorb = mla::AbsorbShape {
            t,
            nh,
            d_nope,
            kv_rank,
        };
        let decompress = mla::DecompressShape {
            t,
            nh,
            d_v,
            kv_rank,
        };
        for split in Split::ALL {
            let mut q_lat = gpu.alloc_poisoned::<f32>(t * nh * kv_rank, 0xff)?;
            mla::absorb_q(module, gpu, &q_nope, &w_kb, &mut q_lat, absorb, split)?;
            keep(gpu, bytes, &q_lat)?;
            let mut out = gpu.alloc_poisoned::<f32>(t * nh * d_v, 0xff)?;
            mla::decompress_v(module, gpu, &o_lat, &w_vb, &mut out, decompress, split)?;
            keep(gpu, bytes, &out)?;
        }
    }
    Ok(())
}

/// attn_flash with its combine at 16, 32 and 64 heads, and attn_gathered at every split.
fn attn_outputs(gpu: &Gpu, module: &Module, bytes: &mut Vec<u8>) -> Result<(), Error> {
    for (t, nh) in [(1, 16), (2, 32), (1, 64)] {
        let (kv_rank, d_rope, pool, n_slots) = (512, 64, 700, 300);
        let shape = AttnShape {
            nh,
            kv_rank,
            d_rope,
        };
        let q_lat = values(gpu, t * nh * kv_rank, 2, 1.0)?;
        let q_pe = values(gpu, t * nh * d_rope, 3, 1.0)?;
        let cache = values(gpu, pool * (kv_rank + d_rope), 4, 1.0)?;
        let idx: Vec<i32> = (0..t * n_slots).map(|i| (i * 37 % pool) as i32).collect();
        let idx = SlotIndices::new(gpu, &idx, t, n_slots, pool)?;
        let mut ws = FlashWorkspace::new(gpu, &shape, t, n_slots)?;
        let mut out = gpu.alloc_poisoned::<f32>(t * nh * kv_rank, 0xff)?;
        for split in std::iter::once(None).chain(Split::ALL.map(Some)) {
            let b = AttnBuffers {
                q_lat: &q_lat,
                q_pe: &q_pe,
                cache: &cache,
                idx: &idx,
                out: &mut out,
            };
            match split {
                None => mla::attn_flash(module, gpu, b, shape, 0.07, &mut ws)?,
                Some(split) => mla::attn_gathered(module, gpu, b, shape, 0.07, split)?,
            }
            keep(gpu, bytes, &out)?;
        }
    }
    Ok(())
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
