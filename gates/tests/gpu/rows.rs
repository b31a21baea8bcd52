//! Every `m` from 1 to 8 (the entries stamped for 1, 2, 4 and 8 rows take any `m` they hold): in
//! both builds, every format, plain and GLU, each row of a launch of `m` rows equals that row
//! launched alone (`m = 1`, the Rust build), and nothing is written past the `m` rows of the
//! output (a poisoned row after them stays poisoned). The activation buffers hold exactly `m`
//! rows, so a read past them is compute-sanitizer's to find.

use crate::arch::values;
use crate::glu::{bits, glu, outcome, plain, weights, Weights, SCALES};
use host::gemv::{gemv_parts, Activation, Parts, Shape};
use host::{norm_q8, CudaSlice, Error, Gpu, Module, FERROCUDA};
use kernels_gpu::gemv::{self as k, Format};

/// `(in_f, out_f)`: the last trip and the last tile ragged, and a 27B-like row.
const SHAPES: [(usize, usize); 2] = [(1280, 100), (5120, 260)];

const FORMATS: [Format; 4] = [
    Format::Q8_0,
    Format::Q8_0Planar,
    Format::E4m3,
    Format::E4m3B128,
];

/// A q8_1 activation of exactly `m` rows of `in_f`, from seeded values.
fn q8_1_rows(
    gpu: &Gpu,
    module: &Module,
    m: usize,
    in_f: usize,
    seed: u32,
) -> Result<(CudaSlice<i8>, CudaSlice<f32>), Error> {
    let x = values(gpu, m * in_f, seed, 2.0)?;
    let mut qs = gpu.alloc_poisoned::<i8>(m * in_f, 0)?;
    let mut d = gpu.alloc_poisoned::<f32>(m * in_f / 32, 0)?;
    norm_q8::quantize_q8_1(module, gpu, &x, &mut qs, &mut d, m * in_f)?;
    Ok((qs, d))
}

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
            let (qs, d) = q8_1_rows(gpu, module, m, in_f, 53 + (s * 8 + m) as u32).map_err(err)?;
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
    let held = "launches of 1 to 8 rows give each row's own bits and write only their rows";
    outcome(format!("{checked} {held}"), failures)
}

/// `(in_f, [rows of each part])`: q, k and v of unequal sizes with ragged tiles; an empty first
/// part; one part alone.
const PARTS: [(usize, [usize; 3]); 3] = [
    (1280, [100, 37, 23]),
    (5120, [0, 132, 128]),
    (256, [9, 0, 0]),
];

/// One launch over the concatenated rows of up to three projections, each part of the output
/// (`host::gemv::Parts`) checked against the whole launch's rows of that part: the same bits at
/// every `m`, in every format and both builds, nothing written past the parts.
pub fn parts_hold_each_projections_rows(gpu: &Gpu, module: &Module) -> Result<(), String> {
    let err = |e: Error| e.to_string();
    let cu = Module::cu_of(gpu, &[FERROCUDA], module.arch()).map_err(err)?;
    let (mut failures, mut checked) = (Vec::new(), 0);
    for (s, &(in_f, rows)) in PARTS.iter().enumerate() {
        let out_f: usize = rows.iter().sum();
        let parts = Parts(rows);
        let w = Weights::new(gpu, in_f, out_f, 13 + s, true).map_err(err)?;
        for m in 1..=8 {
            let (qs, d) = q8_1_rows(gpu, module, m, in_f, 71 + (s * 8 + m) as u32).map_err(err)?;
            let x = Activation { qs: &qs, d: &d };
            let shape = Shape { m, in_f, out_f };
            for format in FORMATS {
                let w = weights(format, &w, SCALES.0);
                let mut whole = gpu.alloc_poisoned::<f32>(m * out_f, 0xff).map_err(err)?;
                let all = Parts::whole(out_f);
                gemv_parts(module, gpu, w, x, &mut whole, shape, all).map_err(err)?;
                let whole = bits(gpu, &whole).map_err(err)?;
                // Part p's row i is the whole output's row i, columns first_p.. of it.
                let mut want = Vec::with_capacity(m * out_f);
                let mut first = 0;
                for r in rows {
                    for i in 0..m {
                        want.extend_from_slice(&whole[i * out_f + first..][..r]);
                    }
                    first += r;
                }
                for (build, module) in [("Rust", module), (".cu", &cu)] {
                    let mut y = gpu
                        .alloc_poisoned::<f32>((m + 1) * out_f, 0xff)
                        .map_err(err)?;
                    let mut held = y.slice_mut(0..m * out_f);
                    gemv_parts(module, gpu, w, x, &mut held, shape, parts).map_err(err)?;
                    let got = bits(gpu, &y).map_err(err)?;
                    checked += 1;
                    let what = format!("{format:?} {build} m {m} in_f {in_f} parts {rows:?}");
                    if let Some(at) = (0..m * out_f).find(|&i| got[i] != want[i]) {
                        let p = (0..3)
                            .find(|&p| parts.range(p, m).contains(&at))
                            .unwrap_or(3);
                        failures.push(format!(
                            "{what}: y[{at}] (part {p}) {:#010x}, the whole launch's {:#010x}",
                            got[at], want[at]
                        ));
                    }
                    if let Some(at) = (m * out_f..got.len()).find(|&i| got[i] != u32::MAX) {
                        failures.push(format!(
                            "{what}: wrote past the parts, y[{at}] = {:#010x}",
                            got[at]
                        ));
                    }
                }
            }
        }
    }
    let held = "launches into parts give each part the whole launch's rows and write only them";
    outcome(format!("{checked} {held}"), failures)
}

/// `in_f` of the pipeline-depth test: seven trips, the last ragged, so that the deep pipeline's
/// ring wraps and its last stage is partly empty (a multiple of 256, as every layout takes).
const DEPTH_IN_F: usize = 6400;

/// `out_f` of its two launches: one whose grid has more blocks than the device has SMs (two or
/// three stages) and one whose grid has at most one an SM (the deep pipeline,
/// `gemv::MMA_DEEP_STAGES`), both with a ragged last tile at every `m`.
const DEPTH_ROWS: (usize, usize) = (4100, 260);

/// Both Q8_0 layouts at every `m` their eight-row entry takes (5 to 8), both builds: a launch of
/// few rows, which the launcher gives the deeper pipeline, gives the bits of the same rows in a
/// launch of many, which runs the usual stages. The weights of the
/// small launch are the first rows of the large one's (`Weights::new` makes a row from its index
/// alone).
pub fn deep_pipeline_gives_the_usual_bits(gpu: &Gpu, module: &Module) -> Result<(), String> {
    let err = |e: Error| e.to_string();
    let cu = Module::cu_of(gpu, &[FERROCUDA], module.arch()).map_err(err)?;
    let (in_f, (large, small)) = (DEPTH_IN_F, DEPTH_ROWS);
    let (sm_count, max_shared) = (gpu.info().sm_count, gpu.info().max_shared_per_block);
    let (mut failures, mut checked) = (Vec::new(), 0);
    let big = Weights::new(gpu, in_f, large, 17, true).map_err(err)?;
    let few = Weights::new(gpu, in_f, small, 17, true).map_err(err)?;
    for m in 1..=8 {
        let (qs, d) = q8_1_rows(gpu, module, m, in_f, 97 + m as u32).map_err(err)?;
        let x = Activation { qs: &qs, d: &d };
        let stamped = k::Batch::covering(m).expect("m <= 8").m();
        for format in FORMATS {
            if !k::deepens(format, stamped) {
                continue;
            }
            let deep = |out_f: usize| {
                let blocks = k::grid_blocks(format, stamped, out_f as u32);
                k::deep_shared_bytes(format, stamped, blocks, sm_count, max_shared)
            };
            if deep(large).is_some() {
                return Err(format!(
                    "{format:?} m {m}: {large} rows are a deep launch on {sm_count} SMs"
                ));
            }
            if deep(small).is_none() {
                // This device's blocks do not hold the deep stages at this m.
                continue;
            }
            for (build, module) in [("Rust", module), (".cu", &cu)] {
                let run = |w: &Weights, out_f: usize| -> Result<Vec<u32>, Error> {
                    let mut y = gpu.alloc_poisoned::<f32>(m * out_f, 0xff)?;
                    let shape = Shape { m, in_f, out_f };
                    plain(module, gpu, format, w, SCALES.0, x, &mut y, shape)?;
                    bits(gpu, &y)
                };
                let (want, got) = (
                    run(&big, large).map_err(err)?,
                    run(&few, small).map_err(err)?,
                );
                checked += 1;
                let at = (0..m * small).find(|&i| got[i] != want[i / small * large + i % small]);
                if let Some(at) = at {
                    let (i, r) = (at / small, at % small);
                    failures.push(format!(
                        "{format:?} {build} m {m}: y[{i}][{r}] {:#010x} deep, {:#010x} at the usual depth",
                        got[at],
                        want[i * large + r]
                    ));
                }
            }
        }
    }
    if checked == 0 {
        return Err(format!(
            "no format and m deepens on {sm_count} SMs of {max_shared} B a block: nothing checked"
        ));
    }
    let held = "launches of few rows (the deep pipeline) give the rows' bits of launches of many";
    outcome(format!("{checked} {held}"), failures)
}
