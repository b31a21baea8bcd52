//! How a format's launch runs, and the activation rows the row-by-row arm launches on.

use super::*;

pub(super) fn run_format(
    module: &host::Module,
    gpu: &Gpu,
    f: Format,
    w: &Weights,
    x: Activation<'_>,
    y: &mut CudaSlice<f32>,
    s: launch::Shape,
) -> Result<(), Error> {
    match f {
        Format::Q8_0 => launch::gemv_q8_0(module, gpu, &w.q8_0, x, y, s),
        Format::Q8_0Planar => launch::gemv_q8_0_planar(module, gpu, &w.wq, &w.wd, x, y, s),
        Format::E4m3 => launch::gemv_e4m3(module, gpu, &w.e4m3, E4M3_SCALE, x, y, s),
        Format::E4m3B128 => launch::gemv_e4m3_b128(module, gpu, &w.e4m3, &w.grid, x, y, s),
    }
}

/// Each activation row in buffers of its own, and an output row for each.
pub(super) fn row_bufs(gpu: &Gpu, shape: Shape, set: &Set) -> Result<Vec<RowBufs>, Error> {
    let (in_f, nb) = (shape.in_f, shape.in_f / QK as usize);
    let copy_err = |source| Error::Driver {
        during: "copying an activation row".into(),
        source,
    };
    (0..M_MAX)
        .map(|i| {
            let mut qs = gpu.alloc_poisoned::<i8>(in_f, 0)?;
            let mut d = gpu.alloc_poisoned::<f32>(nb, 0)?;
            gpu.stream()
                .memcpy_dtod(&set.x_qs.slice(i * in_f..(i + 1) * in_f), &mut qs)
                .map_err(copy_err)?;
            gpu.stream()
                .memcpy_dtod(&set.x_d.slice(i * nb..(i + 1) * nb), &mut d)
                .map_err(copy_err)?;
            Ok(RowBufs {
                qs,
                d,
                y: gpu.alloc_poisoned(shape.out_f, POISON_F32)?,
            })
        })
        .collect()
}
