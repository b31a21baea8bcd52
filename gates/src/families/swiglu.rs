//! The swiglu gate, a [`SimpleFamily`]: `y = silu(g) * u` (`kernels_gpu::swiglu`).

use crate::harness::compare::F32_SUBNORMAL_SLACK;
use crate::harness::simple::{Input, Launch, SimpleFamily};
use crate::harness::Verdict;
use kernels_gpu::abi::Kernel;

#[derive(Default)]
pub struct SwiGlu;

impl SimpleFamily for SwiGlu {
    const NAME: &'static str = "swiglu";
    const ABOUT: &'static str =
        "y = silu(g) * u (SwiGLU, between the gate/up and down GEMVs), Rust against .cu";
    const HELP: &'static str = "\
y = silu(g) * u elementwise over a decode step's gate and up outputs g, u ([m, ffn] f32). The
oracle models f32's overflow of exp(-g) (g below about -88.7: silu = g * 0, as in both builds).
Edge values: signed zeros, subnormals, g from -100 to 88, products past f32, NaN, infinities.";
    const KERNEL: &'static str = kernels_gpu::swiglu::swiglu::NAME;
    const DIMS: (&'static str, &'static str) = ("M", "FFN");
    const SHAPES: &'static [(usize, usize)] = &[(1, 17408), (8, 17408), (1, 2048), (512, 17408)];
    const EDGE_SHAPES: &'static [(usize, usize, &'static str)] = &[
        (1, 1, "one value: the tail thread alone"),
        (1, 7, "one group and a tail of three"),
        (3, 5, "rows not a multiple of the group"),
        (3, 1367, "a second block, and a tail after it"),
        (8, 17408, "a decode batch"),
        (4097, 4097, "a large ragged length"),
    ];
    const INPUTS: &'static [Input] =
        &[Input::new("g", 8.0, &EDGE_G), Input::new("u", 4.0, &EDGE_U)];
    const OUTPUTS: &'static [&'static str] = &["y"];
    const LAUNCH: Launch = |m, gpu, i, o| host::swiglu::swiglu(m, gpu, &i[0], &i[1], &mut o[0]);
    const ORACLE: &'static str = "y ~ f64 silu(g) * u (rel 1e-6 + 2^-140 |u|)";

    fn oracle(inputs: &[Vec<f32>], outputs: &[&[f32]]) -> Vec<(String, Verdict)> {
        vec![("y".into(), oracle(&inputs[0], &inputs[1], outputs[0]))]
    }
}

/// The edge values of `g` and `u`, every pair in 180 values: g where `exp(-g)` is subnormal,
/// near and past f32's overflow (rcp subnormal, then silu = g * 0), products past f32.
#[rustfmt::skip]
const EDGE_G: [f32; 20] = [
    0.0, -0.0, 1e-45, -1e-40, 1e-30, 1.0, -1.0, 20.0, -20.0, 88.0, -87.0, -88.5, -89.0, -100.0,
    1e30, -1e30, f32::MAX, INF, -INF, f32::NAN,
];
const EDGE_U: [f32; 9] = [1.0, -1.0, 0.0, -0.0, 3e-39, 1e30, -2.5, INF, f32::NAN];
const INF: f32 = f32::INFINITY;

// The oracle.

/// Relative bound: expf's 2 ulp, then four roundings of 2^-24 (the fma, rcp, two products).
const REL: f64 = 1e-6;
/// Absolute bound per unit of `|u|`: a subnormal `rcp` (g below about -87.3) is off by up to
/// 2^-150, which `|g| < 89` and `u` scale.
const ABS_U: f64 = f64::from_bits((1023 - 140) << 52);

/// `silu(g) * u` in f64, with `exp(-g)` past f32's range giving `silu = g * 0`, as both builds
/// compute it (their `rcp(inf)` is 0), and an infinite `u` times a `silu` that f32 rounds to
/// zero (`g` of a few subnormal ulps) NaN, as `(g * r) * u` is in f32.
pub fn swiglu_f64(g: f32, u: f32) -> f64 {
    let (g, u) = (f64::from(g), f64::from(u));
    let e = (-g).exp();
    let sigmoid = if e > f64::from(f32::MAX) {
        0.0
    } else {
        1.0 / (1.0 + e)
    };
    let silu = g * sigmoid;
    if u.is_infinite() && silu as f32 == 0.0 {
        return f64::NAN;
    }
    silu * u
}

/// Whether `got` is within the bound of `want`: NaN where it is NaN, and past f32's range (or
/// infinite) the infinity of its sign.
fn within(got: f32, want: f64, u: f32) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.abs() > f64::from(f32::MAX) * (1.0 + REL) {
        return got.is_infinite() && got.is_sign_negative() == want.is_sign_negative();
    }
    let err = (f64::from(got) - want).abs();
    err <= REL * want.abs() + ABS_U * f64::from(u).abs() + F32_SUBNORMAL_SLACK
}

fn oracle(g: &[f32], u: &[f32], y: &[f32]) -> Verdict {
    if y.len() != g.len() {
        return Some(format!("{} values, want {}", y.len(), g.len()));
    }
    let want: Vec<f64> = g.iter().zip(u).map(|(&g, &u)| swiglu_f64(g, u)).collect();
    let bad: Vec<usize> = (0..y.len())
        .filter(|&i| !within(y[i], want[i], u[i]))
        .collect();
    bad.first().map(|&i| {
        format!(
            "{} of {} outside; first at [{i}]: g {:e}, u {:e}: got {:e}, want {:e}",
            bad.len(),
            y.len(),
            g[i],
            u[i],
            y[i],
            want[i]
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_takes_its_own_f32_rounding_and_no_more_than_its_bound() {
        for g in EDGE_G {
            for u in EDGE_U {
                let want = swiglu_f64(g, u);
                assert!(within(want as f32, want, u), "g {g}, u {u}");
            }
        }
        // What both builds give where f32's exp(-g) overflows, and past f32's range.
        assert!(within(f32::NAN, swiglu_f64(f32::NEG_INFINITY, 1.0), 1.0));
        assert!(within(-0.0, swiglu_f64(-100.0, 1.0), 1.0));
        // A silu that rounds to zero in f32 times an infinite u, and one that does not.
        assert!(within(f32::NAN, swiglu_f64(1e-45, INF), INF));
        assert!(!within(INF, swiglu_f64(1e-45, INF), INF));
        assert!(within(INF, swiglu_f64(1e-30, INF), INF));
        assert!(within(f32::NEG_INFINITY, swiglu_f64(f32::MAX, -2.5), -2.5));
        assert!(!within(f32::MAX, swiglu_f64(f32::MAX, -2.5), -2.5));
        let (g, u) = (1.5f32, 0.75f32);
        let want = swiglu_f64(g, u);
        let ulps = |k: u32| f32::from_bits((want as f32).to_bits() + k);
        assert!(within(ulps(8), want, u) && !within(ulps(20), want, u));
        assert!(oracle(&[1.0, 2.0], &[1.0, 1.0], &[0.7310586, 0.0])
            .is_some_and(|v| v.starts_with("1 of 2")));
    }
}
