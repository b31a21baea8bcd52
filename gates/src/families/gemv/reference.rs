//! The f64 reference of every format against every activation row.

use super::*;

/// The host weights of a case, shared by the threads that decode them.
#[derive(Clone, Copy)]
pub(super) struct HostWeights<'a> {
    e4m3: &'a [u8],
    grid: &'a [f32],
    q8_0: &'a [BlockQ8_0],
}

/// The f64 value of every weight of row `r` in `format`.
pub(super) fn weight_row(w: HostWeights<'_>, format: Format, r: usize, in_f: usize) -> Vec<f64> {
    let row = &w.e4m3[r * in_f..(r + 1) * in_f];
    match format {
        Format::Q8_0 | Format::Q8_0Planar => {
            let nb = in_f / QK as usize;
            launch::q8_0_row_f64(&w.q8_0[r * nb..(r + 1) * nb])
        }
        Format::E4m3 => launch::e4m3_row_f64(row, E4M3_SCALE),
        Format::E4m3B128 => launch::e4m3_b128_row_f64(row, w.grid, r),
    }
}

/// `(y, sum |w x|)` of every activation row against every weight row, in f64, on every core.
pub(super) fn reference(inputs: &Inputs, format: Format, shape: Shape) -> Reference {
    let (in_f, out_f) = (shape.in_f, shape.out_f);
    let nb = in_f / QK as usize;
    let x: Vec<Vec<f64>> = (0..M_MAX)
        .map(|i| {
            launch::q8_1_row_f64(
                &inputs.x_qs[i * in_f..(i + 1) * in_f],
                &inputs.x_d[i * nb..(i + 1) * nb],
            )
        })
        .collect();
    let weights = HostWeights {
        e4m3: &inputs.e4m3,
        grid: &inputs.grid,
        q8_0: &inputs.q8_0,
    };
    let mut y = vec![0.0; M_MAX * out_f];
    let mut mag = vec![0.0; M_MAX * out_f];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = out_f.div_ceil(threads);
    let results: Vec<Vec<RowReference>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..out_f)
            .step_by(chunk.max(1))
            .map(|first| {
                let x = &x;
                s.spawn(move || {
                    (first..(first + chunk).min(out_f))
                        .map(|r| {
                            let w = weight_row(weights, format, r, in_f);
                            let mut acc = [0.0; M_MAX];
                            let mut abs = [0.0; M_MAX];
                            for (i, xi) in x.iter().enumerate() {
                                for (wv, xv) in w.iter().zip(xi) {
                                    acc[i] += wv * xv;
                                    abs[i] += (wv * xv).abs();
                                }
                            }
                            (r, acc, abs)
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    for (r, acc, abs) in results.into_iter().flatten() {
        for i in 0..M_MAX {
            y[i * out_f + r] = acc[i];
            mag[i * out_f + r] = abs[i];
        }
    }
    (y, mag)
}
