//! Every `m` from 1 to 8 (the entries stamped for 1, 2, 4 and 8 rows take any `m` they hold): in
//! both builds, every format, plain and GLU, each row of a launch of `m` rows equals that row
//! launched alone (`m = 1`, the Rust build), and nothing is written past the `m` rows of the
//! output (a poisoned row after them stays poisoned). The activation buffers hold exactly `m`
//! rows, so a read past them is compute-sanitizer's to find.

use crate::arch::values;
use crate::glu::{bits, glu, plain, Weights, SCALES};
use host::gemv::{Activation, Shape};
use host::{norm_q8, Error, Gpu, Module, FERROCUDA};
use kernels_gpu::gemv::Format;

/// `(in_f, out_f)`: the last trip and the last tile ragged, and a 27B-like row.
const SHAPES: [(usize, usize); 2] = [(1280, 100), (5120, 260)];

const FORMATS: [Format; 4] = [
    Format::Q8_0,
    Format::Q8_0Planar,
    Format::E4m3,
    Format::E4m3B128,
];

/// One launch of `format` (plain, or the GLU of `w` and `up`) of `shape.m` rows into `y`.
#[allow(clippy::too_many_arguments)]
fn launch(
    module: &Module,
    gpu: &Gpu,
    format: Format,
    (w, up): (&Weights, Option<&Weights>),
    x: Activation<'_>,
    y: host::DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    match up {
        None => plain(module, gpu, format, w, SCALES.0, x, y, shape),
        Some(up) => glu(module, gpu, format, (w, up), x, y, shape),
    }
}

pub fn every_m_gives_each_rows_own_bits(gpu: &Gpu, module: &Module) -> Result<(), String> {
    let err = |e: Error| e.to_string();
    let cu = Module::cu_of(gpu, &[FERROCUDA], module.arch()).map_err(err)?;
    let (mut failures, mut checked) = (Vec::new(), 0);
    for (s, &(in_f, out_f)) in SHAPES.iter().enumerate() {
        let w = Weights::new(gpu, in_f, out_f, 7 + s, false).map_err(err)?;
        let up = Weights::new(gpu, in_f, out_f, 11 + s, false).map_err(err)?;
        for m in 1..=8 {
            let x = values(gpu, m * in_f, 53 + (s * 8 + m) as u32, 2.0).map_err(err)?;
            let mut qs = gpu.alloc_poisoned::<i8>(m * in_f, 0).map_err(err)?;
            let mut d = gpu.alloc_poisoned::<f32>(m * in_f / 32, 0).map_err(err)?;
            norm_q8::quantize_q8_1(module, gpu, &x, &mut qs, &mut d, m * in_f).map_err(err)?;
            for format in FORMATS {
                for pair in [(&w, None), (&w, Some(&up))] {
                    let kind = if pair.1.is_some() { "GLU" } else { "plain" };
                    // Each row alone, in the Rust build.
                    let mut want = Vec::with_capacity(m * out_f);
                    for i in 0..m {
                        let qs_i = qs.slice(i * in_f..(i + 1) * in_f);
                        let d_i = d.slice(i * in_f / 32..(i + 1) * in_f / 32);
                        let one = Activation { qs: &qs_i, d: &d_i };
                        let mut y = gpu.alloc_poisoned::<f32>(out_f, 0xff).map_err(err)?;
                        let shape = Shape { m: 1, in_f, out_f };
                        launch(module, gpu, format, pair, one, &mut y, shape).map_err(err)?;
                        want.extend(bits(gpu, &y).map_err(err)?);
                    }
                    for (build, module) in [("Rust", module), (".cu", &cu)] {
                        // The m rows, then one poisoned row the launch must leave alone.
                        let mut y = gpu
                            .alloc_poisoned::<f32>((m + 1) * out_f, 0xff)
                            .map_err(err)?;
                        let x = Activation { qs: &qs, d: &d };
                        let shape = Shape { m, in_f, out_f };
                        let mut rows = y.slice_mut(0..m * out_f);
                        launch(module, gpu, format, pair, x, &mut rows, shape).map_err(err)?;
                        let got = bits(gpu, &y).map_err(err)?;
                        checked += 1;
                        let what =
                            format!("{format:?} {kind} {build} m {m} in_f {in_f} out_f {out_f}");
                        if let Some(at) = (0..m * out_f).find(|&i| got[i] != want[i]) {
                            failures.push(format!(
                                "{what}: y[{}][{}] {:#010x}, the row alone {:#010x}",
                                at / out_f,
                                at % out_f,
                                got[at],
                                want[at]
                            ));
                        }
                        if let Some(at) = (m * out_f..got.len()).find(|&i| got[i] != u32::MAX) {
                            failures.push(format!(
                                "{what}: wrote past its rows, y[{m}][{}] = {:#010x}",
                                at - m * out_f,
                                got[at]
                            ));
                        }
                    }
                }
            }
        }
    }
    if failures.is_empty() {
        println!("    {checked} launches of 1 to 8 rows give each row's own bits and write only their rows");
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}
