//! The `axpby` gate, a `SimpleFamily` of the gates' harness declared outside the gates crate: its
//! kernel crate is [`KERNELS`](crate::KERNELS) ([`SimpleFamily::KERNEL_CRATES`]), which the
//! runner loads beside ferrocuda's own, and everything else (both builds, Rust == .cu, the
//! oracle, poisoned outputs, timing against the read-stream ceiling, JSONL, charts, the GPU tests)
//! is the harness's.

use gates::harness::compare::F32_SUBNORMAL_SLACK;
use gates::harness::simple::{Input, Launch, SimpleFamily};
use gates::harness::Verdict;
use host::KernelCrate;

/// The gate's `a`, above 1 so that `a x` can pass f32's range inside the fma.
pub const A: f32 = 1.5;
/// The gate's `b`, below 1 in magnitude so that `b y` never does.
pub const B: f32 = -0.75;

#[derive(Default)]
pub struct Axpby;

impl SimpleFamily for Axpby {
    const NAME: &'static str = "axpby";
    const ABOUT: &'static str = "z = a x + b y (the example kernel crate), Rust against .cu";
    const HELP: &'static str = "\
z = a x + b y elementwise over x, y ([m, d] f32), a = 1.5 and b = -0.75, as fmaf(a, x, b * y)
in both builds. Edge values: signed zeros, subnormals, f32::MAX (whose a x passes f32's range
inside the fma, and 1.5 MAX - 0.75 MAX is finite), NaN, infinities.";
    const KERNEL_CRATES: &'static [KernelCrate] = &[crate::KERNELS];
    const KERNEL: &'static str = <user_kernels_gpu::axpby as ferrocuda_abi::Kernel>::NAME;
    const DIMS: (&'static str, &'static str) = ("M", "D");
    const SHAPES: &'static [(usize, usize)] = &[(1, 7168), (8, 7168), (512, 7168)];
    const EDGE_SHAPES: &'static [(usize, usize, &'static str)] = &[
        (1, 1, "one value: the tail thread alone"),
        (1, 6, "one group and a tail of two"),
        (3, 1367, "a second block, and a tail after it"),
        (8, 7168, "a decode batch"),
    ];
    const INPUTS: &'static [Input] =
        &[Input::new("x", 4.0, &EDGE_X), Input::new("y", 4.0, &EDGE_Y)];
    const OUTPUTS: &'static [&'static str] = &["z"];
    const LAUNCH: Launch = |m, gpu, i, o| crate::axpby(m, gpu, &i[0], &i[1], &mut o[0], A, B);
    const ORACLE: &'static str = "z ~ f64 a x + b y (2^-24 (|z| + |b y|) + subnormal slack)";

    fn oracle(inputs: &[Vec<f32>], outputs: &[&[f32]]) -> Vec<(String, Verdict)> {
        vec![("z".into(), oracle(&inputs[0], &inputs[1], outputs[0]))]
    }
}

/// The edge values of `x` and `y`, every pair in 99 values.
#[rustfmt::skip]
const EDGE_X: [f32; 11] = [
    0.0, -0.0, 1e-45, -3e-39, 1.0, -2.5, 1e30, f32::MAX, -f32::MAX, INF, f32::NAN,
];
#[rustfmt::skip]
const EDGE_Y: [f32; 9] = [0.0, -0.0, 1e-45, 2.0, -1e30, f32::MAX, -f32::MAX, -INF, f32::NAN];
const INF: f32 = f32::INFINITY;

/// One rounding of f32 round-to-nearest, relative.
const REL: f64 = f64::from_bits((1023 - 24) << 52);
/// Where f32 rounds to infinity: its largest value and half an ulp of it.
const OVERFLOW: f64 = f32::MAX as f64 + f64::from_bits((1023 + 103) << 52);

/// Whether `got` is `a x + b y` (`want`, exact in f64 but for its last rounding) within the two
/// roundings both builds make, `b y` then the fma: `2^-24` of `|b y|` and of `|want|`, and the
/// subnormal spacing; infinite exactly where that bound reaches past f32's range.
fn within(got: f32, want: f64, by: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    let slack = REL * (want.abs() + by.abs()) + F32_SUBNORMAL_SLACK;
    if got.is_infinite() {
        return got.is_sign_negative() == want.is_sign_negative() && want.abs() + slack >= OVERFLOW;
    }
    (f64::from(got) - want).abs() <= slack
}

fn oracle(x: &[f32], y: &[f32], z: &[f32]) -> Verdict {
    if z.len() != x.len() {
        return Some(format!("{} values, want {}", z.len(), x.len()));
    }
    let (a, b) = (f64::from(A), f64::from(B));
    let bad: Vec<usize> = (0..z.len())
        .filter(|&i| {
            let by = b * f64::from(y[i]);
            !within(z[i], a * f64::from(x[i]) + by, by)
        })
        .collect();
    bad.first().map(|&i| {
        format!(
            "{} of {} outside; first at [{i}]: x {:e}, y {:e}: got {:e}",
            bad.len(),
            z.len(),
            x[i],
            y[i],
            z[i]
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the fma gives passes at every pair of edge values; `a * x + b * y` rounded product
    /// by product, which overflows where the fma does not, is refused, and so is a value three
    /// ulps off.
    #[test]
    fn the_oracle_takes_the_fma_and_refuses_a_rounded_product() {
        let fused = |x: f32, y: f32| A.mul_add(x, B * y);
        for x in EDGE_X {
            for y in EDGE_Y {
                let by = f64::from(B) * f64::from(y);
                let want = f64::from(A) * f64::from(x) + by;
                assert!(within(fused(x, y), want, by), "x {x}, y {y}");
            }
        }
        let (x, y) = (f32::MAX, f32::MAX);
        assert!(fused(x, y).is_finite() && fused(x, y) > 0.7 * f32::MAX);
        assert_eq!(A * x + B * y, INF);
        assert!(oracle(&[x], &[y], &[A * x + B * y]).is_some_and(|v| v.starts_with("1 of 1")));
        let x = 1.0 + f32::EPSILON;
        let by = f64::from(B) * f64::from(x);
        let exact = f64::from(A) * f64::from(x) + by;
        assert!(within(fused(x, x), exact, by));
        let ulps = |k: u32| f32::from_bits(fused(x, x).to_bits() + k);
        assert!(!within(ulps(3), exact, by));
    }
}
