//! The GLU entries (`gemv_*_glu`): gate and up matrices in one launch with `silu(g) * u` in the
//! epilogue give, in both builds, the bits of the plain GEMV on each matrix followed by the
//! swiglu kernel, at every `m`, on shapes whose last tile and last trip are ragged, on raw Q8_0
//! rows that are not 16-byte aligned, and with e4m3 NaN codes in some rows.

use crate::arch::values;
use half::f16;
use host::gemv::{self, Activation, Shape};
use host::{norm_q8, swiglu, CudaSlice, DeviceOut, Error, Gpu, Module, FERROCUDA};
use kernels_gpu::abi::F16;
use kernels_gpu::gemv::{BlockQ8_0, Format, BATCHES};

/// `(in_f, out_f)`: one trip and 9 rows of each matrix (the last tile ragged at every `m`), 40
/// blocks a row (the last trip ragged) by 100 rows, 33 blocks (raw Q8_0 rows 2-byte aligned; not
/// a planar GLU's shape, whose scale rows must be 16-byte aligned), and a 27B-like row.
const SHAPES: [(usize, usize); 4] = [(256, 9), (1280, 100), (1056, 37), (5120, 260)];

/// One matrix in every format, from `salt`: e4m3 codes (the NaN codes 0x7F and 0xFF in row 3
/// where `nan`), its block-128 grid, and Q8_0 blocks raw and planar.
pub(crate) struct Weights {
    e4m3: CudaSlice<u8>,
    grid: CudaSlice<f32>,
    raw: CudaSlice<u8>,
    planar: (CudaSlice<i8>, CudaSlice<f16>),
}

impl Weights {
    pub(crate) fn new(
        gpu: &Gpu,
        in_f: usize,
        out_f: usize,
        salt: usize,
        nan: bool,
    ) -> Result<Self, Error> {
        let codes: Vec<u8> = (0..in_f * out_f)
            .map(|i| {
                let c = ((i * 37 + salt * 101 + i / in_f) % 251) as u8;
                if nan && i / in_f == 3 && i % 97 == 0 {
                    0x7f | (c & 0x80)
                } else {
                    c & 0xfe
                }
            })
            .collect();
        let grid: Vec<f32> = (0..out_f.div_ceil(128) * in_f.div_ceil(128))
            .map(|i| 0.25 + (i + salt) as f32 / 16.0)
            .collect();
        let blocks: Vec<BlockQ8_0> = (0..in_f / 32 * out_f)
            .map(|b| BlockQ8_0 {
                d: F16(f16::from_f32(0.001 + ((b + salt) % 977) as f32 / 8192.0).to_bits()),
                qs: std::array::from_fn(|k| ((b + salt) * 32 + k * 7) as u8 as i8),
            })
            .collect();
        let (pq, pd) = gemv::q8_0_to_planar(&blocks);
        Ok(Weights {
            e4m3: gpu.upload(&codes)?,
            grid: gpu.upload(&grid)?,
            raw: gpu.upload(&gemv::q8_0_bytes(&blocks))?,
            planar: (gpu.upload(&pq)?, gpu.upload(&pd)?),
        })
    }
}

/// The per-tensor scales of the gate and up matrices.
pub(crate) const SCALES: (f32, f32) = (0.75, 1.5);

/// `w` in `format` as a plain launch takes it, `scale` its per-tensor scale.
pub(crate) fn weights(format: Format, w: &Weights, scale: f32) -> gemv::Weights<'_> {
    match format {
        Format::Q8_0 => gemv::Weights::Q8_0(&w.raw),
        Format::Q8_0Planar => gemv::Weights::Q8_0Planar(gemv::Planar {
            wq: &w.planar.0,
            wd: &w.planar.1,
        }),
        Format::E4m3 => gemv::Weights::E4m3(gemv::E4m3 { w: &w.e4m3, scale }),
        Format::E4m3B128 => gemv::Weights::E4m3B128(gemv::E4m3B128 {
            w: &w.e4m3,
            grid: &w.grid,
        }),
    }
}

/// `y` of the plain GEMV of `format` on `w` into `y`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plain(
    module: &Module,
    gpu: &Gpu,
    format: Format,
    w: &Weights,
    scale: f32,
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    let parts = gemv::Parts::whole(shape.out_f);
    gemv::gemv_parts(module, gpu, weights(format, w, scale), x, y, shape, parts)
}

/// The GLU of `format` on the gate and up matrices into `y`.
pub(crate) fn glu<'a>(
    module: &Module,
    gpu: &Gpu,
    format: Format,
    (g, u): (&'a Weights, &'a Weights),
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    match format {
        Format::Q8_0 => gemv::gemv_q8_0_glu(module, gpu, &g.raw, &u.raw, x, y, shape),
        Format::Q8_0Planar => {
            let planar = |w: &'a Weights| gemv::Planar {
                wq: &w.planar.0,
                wd: &w.planar.1,
            };
            gemv::gemv_q8_0_planar_glu(module, gpu, planar(g), planar(u), x, y, shape)
        }
        Format::E4m3 => {
            let e4m3 = |w: &'a Weights, scale| gemv::E4m3 { w: &w.e4m3, scale };
            let (gate, up) = (e4m3(g, SCALES.0), e4m3(u, SCALES.1));
            gemv::gemv_e4m3_glu(module, gpu, gate, up, x, y, shape)
        }
        Format::E4m3B128 => {
            let b128 = |w: &'a Weights| gemv::E4m3B128 {
                w: &w.e4m3,
                grid: &w.grid,
            };
            gemv::gemv_e4m3_b128_glu(module, gpu, b128(g), b128(u), x, y, shape)
        }
    }
}

/// The bits of a buffer.
pub(crate) fn bits(gpu: &Gpu, y: &CudaSlice<f32>) -> Result<Vec<u32>, Error> {
    Ok(gpu.download(y)?.iter().map(|v| v.to_bits()).collect())
}

pub fn glu_gives_the_plain_gemvs_and_swiglu(gpu: &Gpu, module: &Module) -> Result<(), String> {
    let err = |e: Error| e.to_string();
    let cu = Module::cu_of(gpu, &[FERROCUDA], module.arch()).map_err(err)?;
    let mut failures = Vec::new();
    let mut checked = 0;
    for (s, &(in_f, out_f)) in SHAPES.iter().enumerate() {
        let gate = Weights::new(gpu, in_f, out_f, 2 * s, s == 1).map_err(err)?;
        let up = Weights::new(gpu, in_f, out_f, 2 * s + 1, false).map_err(err)?;
        for m in BATCHES.map(|m| m as usize) {
            let shape = Shape { m, in_f, out_f };
            let x = values(gpu, m * in_f, 31 + s as u32, 2.0).map_err(err)?;
            let mut qs = gpu.alloc_poisoned::<i8>(m * in_f, 0).map_err(err)?;
            let mut d = gpu.alloc_poisoned::<f32>(m * in_f / 32, 0).map_err(err)?;
            norm_q8::quantize_q8_1(module, gpu, &x, &mut qs, &mut d, m * in_f).map_err(err)?;
            let act = || Activation { qs: &qs, d: &d };
            for format in [
                Format::Q8_0,
                Format::Q8_0Planar,
                Format::E4m3,
                Format::E4m3B128,
            ] {
                if format == Format::Q8_0Planar && !in_f.is_multiple_of(256) {
                    continue;
                }
                let poisoned = || gpu.alloc_poisoned::<f32>(m * out_f, 0xff);
                let (mut g, mut u, mut chain) = (
                    poisoned().map_err(err)?,
                    poisoned().map_err(err)?,
                    poisoned().map_err(err)?,
                );
                plain(module, gpu, format, &gate, SCALES.0, act(), &mut g, shape).map_err(err)?;
                plain(module, gpu, format, &up, SCALES.1, act(), &mut u, shape).map_err(err)?;
                swiglu::swiglu(module, gpu, &g, &u, &mut chain).map_err(err)?;
                let want = bits(gpu, &chain).map_err(err)?;
                for (build, module) in [("Rust", module), (".cu", &cu)] {
                    let mut y = poisoned().map_err(err)?;
                    glu(module, gpu, format, (&gate, &up), act(), &mut y, shape).map_err(err)?;
                    let got = bits(gpu, &y).map_err(err)?;
                    checked += 1;
                    if let Some(at) = (0..want.len()).find(|&i| got[i] != want[i]) {
                        failures.push(format!(
                            "{format:?} {build} m {m} in_f {in_f} out_f {out_f}: y[{}][{}] {:#010x}, \
                             the chain's {:#010x}",
                            at / out_f,
                            at % out_f,
                            got[at],
                            want[at]
                        ));
                    }
                }
            }
        }
    }
    outcome(
        format!("{checked} GLU launches equal their chains bit for bit"),
        failures,
    )
}

/// A test's end: its line of what held, or every failure.
pub(crate) fn outcome(held: String, failures: Vec<String>) -> Result<(), String> {
    if failures.is_empty() {
        println!("    {held}");
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}
