//! The f64 references: the heads' GEMVs and the softmax attention, with their bounds.

use super::*;

/// f64 `y[t][h][r] = sum_k x[t][h][k] w[h][r][k]` and `sum |x w|`.
pub(super) fn heads_gemv(
    x: &[f32],
    w: &[f32],
    t: usize,
    nh: usize,
    k: usize,
    r: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut y = Vec::with_capacity(t * nh * r);
    let mut mag = Vec::with_capacity(t * nh * r);
    for ti in 0..t {
        for h in 0..nh {
            let xv = &x[(ti * nh + h) * k..][..k];
            for ri in 0..r {
                let wv = &w[(h * r + ri) * k..][..k];
                let (mut s, mut a) = (0.0f64, 0.0f64);
                for (p, q) in xv.iter().zip(wv) {
                    let v = f64::from(*p) * f64::from(*q);
                    s += v;
                    a += v.abs();
                }
                y.push(s);
                mag.push(a);
            }
        }
    }
    (y, mag)
}

/// One (token, head)'s f64 attention: the output, `sum p |K|` per output, the largest
/// `scale * sum |q k|`.
pub(super) type HeadReference = (Vec<f64>, Vec<f64>, f64);

/// The f64 attention of one cell: per (t, h) the output, the per-output bound scale
/// `sum_i p_i |K_ic|`, and the largest `scale * sum |q k|` over the slots (how far rounding in
/// the scores can move the softmax).
pub(super) fn attention(inputs: &Inputs, c: Cell) -> Reference {
    let (kr, dr, row, ns) = (c.kv_rank, c.d_rope, c.row(), c.n_slots);
    let heads = c.t_q * c.nh;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = heads.div_ceil(threads);
    let parts: Vec<Vec<HeadReference>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..heads)
            .step_by(per.max(1))
            .map(|first| {
                s.spawn(move || {
                    (first..(first + per).min(heads))
                        .map(|th| {
                            let t = th / c.nh;
                            let q = &inputs.q_lat[th * kr..][..kr];
                            let qp = &inputs.q_pe[th * dr..][..dr];
                            let rows: Vec<&[f32]> = inputs.idx[t * ns..][..ns]
                                .iter()
                                .map(|&i| &inputs.cache[i as usize * row..][..row])
                                .collect();
                            let mut smax = 0.0f64;
                            let scores: Vec<f64> = rows
                                .iter()
                                .map(|r| {
                                    let (mut s, mut a) = (0.0f64, 0.0f64);
                                    for (x, y) in q.iter().chain(qp).zip(r.iter()) {
                                        let v = f64::from(*x) * f64::from(*y);
                                        s += v;
                                        a += v.abs();
                                    }
                                    smax = smax.max(a * f64::from(SCALE));
                                    s * f64::from(SCALE)
                                })
                                .collect();
                            let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                            let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
                            let sum: f64 = e.iter().sum();
                            let mut out = vec![0.0; kr];
                            let mut mag = vec![0.0; kr];
                            for (p, r) in e.iter().zip(&rows) {
                                let p = p / sum;
                                for ((o, a), v) in out.iter_mut().zip(mag.iter_mut()).zip(&r[..kr])
                                {
                                    *o += p * f64::from(*v);
                                    *a += p * f64::from(*v).abs();
                                }
                            }
                            (out, mag, smax)
                        })
                        .collect()
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    let mut out = Vec::with_capacity(heads * kr);
    let mut mag = Vec::with_capacity(heads * kr);
    let mut smax = Vec::with_capacity(heads);
    for (o, m, s) in parts.into_iter().flatten() {
        out.extend(o);
        mag.extend(m);
        smax.push(s);
    }
    (out, mag, smax)
}

/// Attention's bound per output: accumulation over the slots (`2e-5`) plus the rounding of the
/// f32 scores, which moves each softmax weight by about `4e-6 * max scale|q.k|` relative.
pub(super) fn attn_bound(smax: f64) -> f64 {
    2e-5 + 4e-6 * smax
}

/// The oracle's check of `arm`'s outputs at `c` (none for attention past [`ORACLE_MAX_KV`]).
pub(super) fn check(c: Cell, i: &Inputs, arm: Arm, outputs: &[Output]) -> Vec<Check> {
    let Some(out) = outputs.first() else {
        return Vec::new();
    };
    let k = match arm {
        Arm::Kernel(k, _) | Arm::Sgemm(k) => k,
        Arm::Flash(_) | Arm::Wgmma(_) | Arm::FlashByToken | Arm::Chain => MlaKernel::AttnGathered,
    };
    let (verdict, name) = match k {
        MlaKernel::AbsorbQ | MlaKernel::DecompressV => {
            let (want, mag, _) = i.refs[k as usize].get_or_init(|| {
                let (y, mag) = if k == MlaKernel::AbsorbQ {
                    heads_gemv(&i.q_nope, &i.w_kb, c.t_q, c.nh, c.d_nope, c.kv_rank)
                } else {
                    heads_gemv(&i.o_lat, &i.w_vb, c.t_q, c.nh, c.kv_rank, c.d_v)
                };
                (y, mag, Vec::new())
            });
            let (v, worst) = within_scaled(out.as_f32(), want, mag, |_| GEMV_BOUND);
            (
                v,
                format!("f64 gemv (err <= {GEMV_BOUND:.0e} x sum|xw|; max {worst:.1e})"),
            )
        }
        MlaKernel::AttnGathered if c.kv <= ORACLE_MAX_KV => {
            let (want, mag, smax) = i.refs[k as usize].get_or_init(|| attention(i, c));
            let (v, worst) =
                within_scaled(out.as_f32(), want, mag, |e| attn_bound(smax[e / c.kv_rank]));
            let top = smax.iter().copied().fold(0.0, f64::max);
            (
                v,
                format!(
                    "f64 softmax attention (err <= (2e-5 + 4e-6 x {top:.0}) x sum p|K|; max {worst:.1e})"
                ),
            )
        }
        MlaKernel::AttnGathered => return Vec::new(),
    };
    vec![Check {
        name: format!("oracle {} ~ {name}", arm.label()),
        verdicts: vec![("out".into(), verdict)],
    }]
}
