//! Adversarial inputs for the norm_q8 family: values that take the kernels' corner paths (the
//! Numerics section of `kernels_gpu::norm_q8`), each case named, for GPU tests that hold both
//! builds, the chain, the fused kernel and the oracles to them. The seeded inputs of `rng` are
//! never zero and never near a corner, so they reach none of this.
//!
//! - [`q8_blocks`]: 32-value blocks for `quantize_q8_1`: zeros and signed zeros, a single
//!   nonzero, exact rounding halves at several scales, the smallest normal scale, subnormal
//!   scales whose `round(x / d)` reaches 128 (which an i8 would wrap), scales that underflow to
//!   zero, huge magnitudes, scattered zeros.
//! - [`edge_rows`]: rows for `rms_norm` and `rms_norm_zq8_f32`: zero rows, a single nonzero, a
//!   block far below the rest of its row (so that its `z` has a subnormal q8_1 scale), a zero
//!   block, rows whose squares or whose sum of squares overflow f32, rows of tiny and of
//!   subnormal values, one huge value among ones.
//! - [`nonfinite_blocks`], [`nonfinite_rows`]: NaN and infinities. Their outputs follow the same
//!   rules in both builds, but `z` has no f64 oracle: compare the builds and the chain with the
//!   fused kernel, and `qs` / `d` with `oracle::quantize_q8_1` of the GPU's `z`.
//!
//! The cases of [`q8_blocks`] and [`edge_rows`] are finite and inside the oracles' domain
//! (`oracle::rms_norm_f64` with `eps >= 1e-6` and weights below 8 in magnitude, checked with
//! `compare::within_rel`). Every call returns the same cases in the same order;
//! [`concat`](fn@concat) lays cases end to end as the blocks or rows of one launch.

use kernels_gpu::norm_q8::QK8_1;

const BLOCK: usize = QK8_1 as usize;

/// One adversarial input: a block of 32 values or a row of `ncols`.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// What the case exercises, for failure messages.
    pub name: &'static str,
    pub values: Vec<f32>,
}

impl Case {
    fn new(name: &'static str, values: impl Into<Vec<f32>>) -> Case {
        Case {
            name,
            values: values.into(),
        }
    }
}

/// The cases end to end: the input of one launch whose blocks (or rows) are the cases.
pub fn concat(cases: &[Case]) -> Vec<f32> {
    cases
        .iter()
        .flat_map(|c| c.values.iter().copied())
        .collect()
}

/// `2^e` for the exponents of normal f32.
fn pow2(e: i32) -> f32 {
    assert!((-126..=127).contains(&e));
    f32::from_bits(((127 + e) as u32) << 23)
}

/// A block of `fill` with `values` at the given lanes.
fn block_with(fill: f32, values: &[(usize, f32)]) -> Vec<f32> {
    let mut block = vec![fill; BLOCK];
    for &(i, v) in values {
        block[i] = v;
    }
    block
}

/// Values whose `x / d` is exactly a half (and the extremes that fix `amax = 127`), times `2^e`:
/// `d = 2^e` exactly, and every quotient is exact.
fn halves(e: i32) -> Vec<f32> {
    let units = [
        127.0, -127.0, 126.5, -126.5, 100.5, -63.5, 2.5, -2.5, 1.5, -1.5, 0.5, -0.5,
    ];
    let mut block: Vec<f32> = units.iter().map(|&u| u * pow2(e)).collect();
    block.resize(BLOCK, 0.0);
    block
}

/// `amax = (127 k + 63) * 2^-149`: `amax / 127` rounds down to `d = k` subnormal ulps, so
/// `amax / d = 127 + 63 / k` rounds to 128 or more for `k <= 126`.
fn saturating(k: u32) -> Vec<f32> {
    let amax = f32::from_bits(127 * k + 63);
    block_with(
        0.0,
        &[
            (0, amax),
            (1, -amax),
            (2, amax / 2.0),
            (3, f32::from_bits(1)),
            (30, -f32::from_bits(k)),
        ],
    )
}

/// 32-value blocks for `quantize_q8_1`, finite, in a fixed order.
pub fn q8_blocks() -> Vec<Case> {
    let tiny = f32::from_bits(1);
    vec![
        Case::new("all +0", vec![0.0; BLOCK]),
        Case::new("all -0", vec![-0.0; BLOCK]),
        Case::new(
            "+0 and -0",
            (0..BLOCK)
                .map(|i| if i % 2 == 0 { 0.0 } else { -0.0 })
                .collect::<Vec<_>>(),
        ),
        Case::new("one nonzero, first lane", block_with(0.0, &[(0, 1.5)])),
        Case::new("one nonzero, last lane", block_with(0.0, &[(31, -3.25)])),
        Case::new(
            "one tiny nonzero among -0",
            block_with(-0.0, &[(13, 1e-30)]),
        ),
        Case::new("halves, d = 1", halves(0)),
        Case::new("halves, d = 2^-20", halves(-20)),
        Case::new("halves, d = 2^100", halves(100)),
        Case::new("halves, d = 2^-126 (smallest normal d)", halves(-126)),
        Case::new(
            "just below halves, d = 1",
            block_with(
                0.0,
                &[
                    (0, 127.0),
                    (1, 0.49999997),
                    (2, -0.49999997),
                    (3, 2.4999998),
                    (4, -126.49999),
                ],
            ),
        ),
        Case::new("subnormal d = 1 ulp, saturates", saturating(1)),
        Case::new("subnormal d = 2 ulps, saturates", saturating(2)),
        Case::new("subnormal d = 64 ulps, saturates", saturating(64)),
        Case::new("subnormal d = 126 ulps, saturates", saturating(126)),
        Case::new(
            "d underflows to 0",
            block_with(
                0.0,
                &[(0, f32::from_bits(63)), (1, -f32::from_bits(63)), (7, tiny)],
            ),
        ),
        Case::new("smallest subnormal, alone", block_with(-0.0, &[(5, -tiny)])),
        Case::new(
            "huge: f32::MAX",
            block_with(
                1.0,
                &[
                    (0, f32::MAX),
                    (1, -f32::MAX),
                    (2, f32::MAX / 2.0),
                    (3, -0.0),
                ],
            ),
        ),
        Case::new(
            "huge and tiny",
            block_with(-1e-38, &[(0, 3e38), (1, -tiny), (2, 1e-45), (3, 0.0)]),
        ),
        Case::new("all equal", vec![5.0; BLOCK]),
        Case::new(
            "every fourth zero",
            (0..BLOCK)
                .map(|i| if i % 4 == 0 { 0.0 } else { i as f32 - 15.5 })
                .collect::<Vec<_>>(),
        ),
    ]
}

/// A row of ordinary values around ±1.
fn unit_row(ncols: usize) -> Vec<f32> {
    (0..ncols)
        .map(|i| {
            let v = 1.0 + (i % 7) as f32 / 8.0;
            if i % 2 == 0 {
                v
            } else {
                -v
            }
        })
        .collect()
}

/// `values` times `sign` alternating along the row.
fn alternating(ncols: usize, v: f32) -> Vec<f32> {
    (0..ncols)
        .map(|i| if i % 2 == 0 { v } else { -v })
        .collect()
}

/// Rows of `ncols` (a positive multiple of 32) for `rms_norm` and `rms_norm_zq8_f32`, finite,
/// in a fixed order.
pub fn edge_rows(ncols: usize) -> Vec<Case> {
    assert!(
        ncols >= BLOCK && ncols.is_multiple_of(BLOCK),
        "ncols {ncols}"
    );
    let last_block = ncols - BLOCK;
    let with_block = |block: &[f32], at: usize| {
        let mut row = unit_row(ncols);
        row[at..at + BLOCK].copy_from_slice(block);
        row
    };
    let mut one = vec![0.0; ncols];
    one[ncols / 2] = 2.0;
    let mut one_last = vec![-0.0; ncols];
    one_last[ncols - 1] = -0.75;
    let mut huge_one = vec![1.0; ncols];
    huge_one[1] = 1e19;
    let mut sparse = unit_row(ncols);
    sparse.iter_mut().step_by(16).for_each(|v| *v = 0.0);
    vec![
        Case::new("all +0", vec![0.0; ncols]),
        Case::new("all -0", vec![-0.0; ncols]),
        Case::new("one nonzero", one),
        Case::new("one nonzero, last column, among -0", one_last),
        Case::new(
            "a zero block among unit values",
            with_block(&[0.0; BLOCK], 0),
        ),
        Case::new(
            "a block near 2^-140 among unit values",
            with_block(&saturating(64), last_block),
        ),
        Case::new(
            "a block at the smallest subnormals among unit values",
            with_block(&saturating(1), last_block),
        ),
        Case::new("every 16th value zero", sparse),
        Case::new("squares overflow f32 (±1e20)", alternating(ncols, 1e20)),
        Case::new(
            "the sum of squares overflows f32 (±1e19)",
            alternating(ncols, 1e19),
        ),
        Case::new("one value of 1e19 among ones", huge_one),
        Case::new("large values (±1e15)", alternating(ncols, 1e15)),
        Case::new("squares underflow f32 (±1e-30)", alternating(ncols, 1e-30)),
        Case::new("subnormal values (±1e-40)", alternating(ncols, 1e-40)),
    ]
}

/// 32-value blocks with NaN or infinities for `quantize_q8_1`.
pub fn nonfinite_blocks() -> Vec<Case> {
    vec![
        Case::new(
            "a NaN among values",
            block_with(1.0, &[(3, f32::NAN), (4, -127.0)]),
        ),
        Case::new("all NaN", vec![f32::NAN; BLOCK]),
        Case::new("+inf among values", block_with(2.0, &[(0, f32::INFINITY)])),
        Case::new(
            "+inf and -inf",
            block_with(
                0.0,
                &[(1, f32::INFINITY), (2, f32::NEG_INFINITY), (3, -7.0)],
            ),
        ),
        Case::new(
            "NaN and inf",
            block_with(-0.0, &[(8, f32::NAN), (9, f32::NEG_INFINITY), (10, 1.0)]),
        ),
    ]
}

/// Rows of `ncols` with NaN or infinities for `rms_norm` and `rms_norm_zq8_f32`.
pub fn nonfinite_rows(ncols: usize) -> Vec<Case> {
    assert!(
        ncols >= BLOCK && ncols.is_multiple_of(BLOCK),
        "ncols {ncols}"
    );
    let with = |at: usize, v: f32| {
        let mut row = unit_row(ncols);
        row[at] = v;
        row
    };
    vec![
        Case::new("a NaN in the row", with(ncols / 3, f32::NAN)),
        Case::new("+inf in the row", with(0, f32::INFINITY)),
        Case::new("-inf in the row", with(ncols - 1, f32::NEG_INFINITY)),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::oracle::{quantize_q8_1, rms_norm_f64, Z_REL_TOL};
    use super::*;
    use crate::harness::compare::within_rel;
    use std::collections::BTreeSet;

    const NCOLS: [usize; 6] = [32, 64, 1408, 1536, 4096, 8192];

    fn find<'a>(cases: &'a [Case], name: &str) -> &'a Case {
        cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case `{name}`"))
    }

    fn assert_well_formed(cases: &[Case], len: usize, finite: bool) {
        let names: BTreeSet<&str> = cases.iter().map(|c| c.name).collect();
        assert_eq!(names.len(), cases.len(), "case names repeat");
        for c in cases {
            assert_eq!(c.values.len(), len, "{}", c.name);
            assert_eq!(
                c.values.iter().all(|v| v.is_finite()),
                finite,
                "{}: finite",
                c.name
            );
        }
    }

    /// `round(x / d)` before saturation, for every value of a block, and the block's `d`.
    fn raw_quotients(block: &[f32]) -> (Vec<f32>, f32) {
        let (_, d) = quantize_q8_1(block);
        (block.iter().map(|&v| (v / d[0]).round()).collect(), d[0])
    }

    #[test]
    fn blocks_are_32_finite_values_with_distinct_names_and_the_same_every_call() {
        assert_well_formed(&q8_blocks(), BLOCK, true);
        assert_well_formed(&nonfinite_blocks(), BLOCK, false);
        assert_eq!(q8_blocks(), q8_blocks());
        assert_eq!(concat(&q8_blocks()).len(), q8_blocks().len() * BLOCK);
    }

    #[test]
    fn the_blocks_are_what_their_names_say() {
        let cases = q8_blocks();
        for name in ["all +0", "all -0", "+0 and -0"] {
            let (qs, d) = quantize_q8_1(&find(&cases, name).values);
            assert!(d[0] == 0.0 && qs.iter().all(|&q| q == 0), "{name}");
        }
        for name in ["one nonzero, first lane", "one tiny nonzero among -0"] {
            let values = &find(&cases, name).values;
            assert_eq!(values.iter().filter(|&&v| v != 0.0).count(), 1, "{name}");
        }
        for (name, e) in [
            ("halves, d = 1", 0),
            ("halves, d = 2^-20", -20),
            ("halves, d = 2^100", 100),
            ("halves, d = 2^-126 (smallest normal d)", -126),
        ] {
            let values = &find(&cases, name).values;
            let (_, d) = quantize_q8_1(values);
            assert_eq!(d[0], pow2(e), "{name}");
            let halves = values
                .iter()
                .filter(|&&v| (v / d[0]).fract().abs() == 0.5)
                .count();
            assert!(halves >= 10, "{name}: {halves} exact halves");
        }
        for k in [1, 2, 64, 126] {
            let name = format!(
                "subnormal d = {k} ulp{}, saturates",
                if k == 1 { "" } else { "s" }
            );
            let (raw, d) = raw_quotients(&find(&cases, &name).values);
            assert_eq!(d.to_bits(), k, "{name}");
            assert!(
                raw.iter().any(|q| q.abs() >= 128.0),
                "{name}: nothing to saturate"
            );
        }
        for name in ["d underflows to 0", "smallest subnormal, alone"] {
            let (raw, d) = raw_quotients(&find(&cases, name).values);
            assert_eq!(d, 0.0, "{name}");
            assert!(raw.iter().any(|q| q.is_infinite()), "{name}");
        }
        let (_, d) = quantize_q8_1(&find(&cases, "huge: f32::MAX").values);
        assert_eq!(d[0], f32::MAX / 127.0);
    }

    #[test]
    fn rows_have_ncols_finite_values_and_distinct_names() {
        for ncols in NCOLS {
            assert_well_formed(&edge_rows(ncols), ncols, true);
            assert_well_formed(&nonfinite_rows(ncols), ncols, false);
        }
    }

    /// Every finite row is inside the f64 oracle's domain: its `z` is finite, and far from the
    /// f32 overflow boundary of the sum of squares on either side.
    #[test]
    fn rows_are_inside_the_oracle_domain_and_hit_their_corners() {
        for ncols in NCOLS {
            let rows = edge_rows(ncols);
            for row in &rows {
                let z = rms_norm_f64(&row.values, &vec![-7.5; ncols], ncols, 1e-6);
                assert!(z.iter().all(|v| v.is_finite()), "{ncols} {}", row.name);
                let sum: f64 = row.values.iter().map(|&v| v as f64 * v as f64).sum();
                let margin = sum / f32::MAX as f64;
                assert!(
                    !(0.5..2.0).contains(&margin),
                    "{ncols} {}: sum of squares near f32::MAX",
                    row.name
                );
            }
            for name in [
                "squares overflow f32 (±1e20)",
                "the sum of squares overflows f32 (±1e19)",
            ] {
                let row = &find(&rows, name).values;
                let sum = row.iter().fold(0.0f32, |s, &v| v.mul_add(v, s));
                assert_eq!(sum, f32::INFINITY, "{ncols} {name}");
                let z = rms_norm_f64(row, &vec![1.0; ncols], ncols, 1e-6);
                assert!(z.iter().all(|&v| v == 0.0), "{ncols} {name}");
            }
            // The far-below block's z (with weights of 1) has a subnormal q8_1 scale.
            for name in [
                "a block near 2^-140 among unit values",
                "a block at the smallest subnormals among unit values",
            ] {
                let row = &find(&rows, name).values;
                let z = rms_norm_f64(row, &vec![1.0; ncols], ncols, 1e-6);
                let last: Vec<f32> = z[ncols - BLOCK..].iter().map(|&v| v as f32).collect();
                let (_, d) = quantize_q8_1(&last);
                assert!(d[0] < f32::MIN_POSITIVE, "{ncols} {name}: d = {:e}", d[0]);
                // And the oracle comparison still holds for an f32 z one rounding off.
                let (verdict, _) = within_rel(&last, &z[ncols - BLOCK..], Z_REL_TOL);
                assert!(verdict.is_none(), "{ncols} {name}: {verdict:?}");
            }
        }
    }
}
