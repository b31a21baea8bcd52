//! The f64 reference of every format and of the peers against every activation row, and the
//! oracle check of one arm's output against it.

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

/// The f64 value of every activation row (the q8_1 codes times their block scales).
pub(super) fn activation_rows(inputs: &Inputs, shape: Shape) -> Vec<Vec<f64>> {
    let (in_f, nb) = (shape.in_f, shape.in_f / QK as usize);
    (0..M_MAX)
        .map(|i| {
            launch::q8_1_row_f64(
                &inputs.x_qs[i * in_f..(i + 1) * in_f],
                &inputs.x_d[i * nb..(i + 1) * nb],
            )
        })
        .collect()
}

/// `(y, sum |w x|)` of every format's weights against every activation row.
pub(super) fn reference(inputs: &Inputs, format: Format, shape: Shape) -> Reference {
    let weights = HostWeights {
        e4m3: &inputs.e4m3,
        grid: &inputs.grid,
        q8_0: &inputs.q8_0,
    };
    let x = activation_rows(inputs, shape);
    gemv_f64(&x, shape.out_f, |r| {
        weight_row(weights, format, r, shape.in_f)
    })
}

/// `(y, sum |w x|)` of every row of `x` against the `out_f` weight rows `row(r)`, in f64 on every
/// core; row `i` of `x` gives `y[i * out_f..(i + 1) * out_f]`. A weight row is decoded once for
/// all of `x`, which is what makes the 27B shapes' references take seconds rather than minutes.
pub(super) fn gemv_f64(
    x: &[Vec<f64>],
    out_f: usize,
    row: impl Fn(usize) -> Vec<f64> + Sync,
) -> Reference {
    let rows = x.len();
    let mut y = vec![0.0; rows * out_f];
    let mut mag = vec![0.0; rows * out_f];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = out_f.div_ceil(threads).max(1);
    let results: Vec<Vec<RowReference>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..out_f)
            .step_by(chunk)
            .map(|first| {
                let row = &row;
                s.spawn(move || {
                    (first..(first + chunk).min(out_f))
                        .map(|r| {
                            let w = row(r);
                            let mut acc = vec![0.0; rows];
                            let mut abs = vec![0.0; rows];
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
        for i in 0..rows {
            y[i * out_f + r] = acc[i];
            mag[i * out_f + r] = abs[i];
        }
    }
    (y, mag)
}

/// The oracle check of `arm`'s output `y` (its m rows of `out_f`): the formats within
/// [`REL_BOUND`] of the f64 GEMV of their own weights, each peer within its bound of the f64 GEMV
/// of its own operands at the same m.
pub(super) fn oracle_check(shape: Shape, inputs: &Inputs, arm: Arm, y: &[f32]) -> Check {
    let out_f = shape.out_f;
    let check = |want: &[f64], mag: &[f64], rows: std::ops::Range<usize>, bound, what| {
        let span = rows.start * out_f..rows.end * out_f;
        let (v, worst) = within_scaled(y, &want[span.clone()], &mag[span], |_| bound);
        Check {
            name: format!(
                "oracle {} y ~ {what} (err <= {bound:.0e} x sum|wx|; max {worst:.1e})",
                arm.label()
            ),
            verdicts: vec![("y".into(), v)],
        }
    };
    match arm {
        Arm::Gemv(f, m) | Arm::ByRows(f, m) => {
            let k = FORMATS
                .iter()
                .position(|&g| g == f)
                .expect("a format of the family");
            let mut refs = inputs.refs.borrow_mut();
            let (want, mag) = refs[k].get_or_insert_with(|| reference(inputs, f, shape));
            check(want, mag, 0..m, REL_BOUND, "f64 gemv")
        }
        Arm::Bf16(_) | Arm::Fp8(_) => {
            let p = inputs.peer.get_or_init(|| peer_inputs(inputs, shape));
            let (want, mag) = p.refs.get_or_init(|| peer_reference(p, inputs, shape));
            let bound = if matches!(arm, Arm::Bf16(_)) {
                BF16_BOUND
            } else {
                FP8_BOUND
            };
            check(want, mag, peer_rows(arm), bound, "f64 gemv of its operands")
        }
    }
}
