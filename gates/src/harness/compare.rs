//! Comparisons that report where they fail: the first mismatching index and both values.

/// Values compared by their bits (so NaN payloads and signed zeros count).
pub trait Bits: Copy + std::fmt::Debug {
    fn bits(self) -> u64;
}

impl Bits for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Bits for i8 {
    fn bits(self) -> u64 {
        u64::from(self as u8)
    }
}

/// The outcome of one check: `None` when it holds, else what failed.
pub type Verdict = Option<String>;

/// Byte identity of two arrays.
pub fn identical<T: Bits>(a: &[T], b: &[T]) -> Verdict {
    if a.len() != b.len() {
        return Some(format!("lengths differ: {} vs {}", a.len(), b.len()));
    }
    let diffs = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.bits() != y.bits())
        .count();
    let (i, (x, y)) = a
        .iter()
        .zip(b)
        .enumerate()
        .find(|(_, (x, y))| x.bits() != y.bits())?;
    Some(format!(
        "{diffs} of {} differ; first at [{i}]: {x:?} (0x{:x}) vs {y:?} (0x{:x})",
        a.len(),
        x.bits(),
        y.bits()
    ))
}

/// Every element of `got` is within `rel * |want|` of `want` (NaN never passes).
pub fn within_rel(got: &[f32], want: &[f64], rel: f64) -> (Verdict, f64) {
    let mut worst = 0.0f64;
    let mut first = None;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - w).abs() / w.abs().max(f64::MIN_POSITIVE);
        if err.is_nan() || err > rel {
            first.get_or_insert_with(|| format!("first at [{i}]: got {g:e}, want {w:e}"));
        }
        if err.is_nan() {
            worst = f64::INFINITY;
        } else {
            worst = worst.max(err);
        }
    }
    if got.len() != want.len() {
        first = Some(format!("lengths differ: {} vs {}", got.len(), want.len()));
    }
    (
        first.map(|f| format!("max rel err {worst:.2e} > {rel:.0e}; {f}")),
        worst,
    )
}

/// No element still holds the poison pattern the buffer was filled with before the launch.
pub fn all_written<T: Bits>(got: &[T], poison: T) -> Verdict {
    let left = got.iter().filter(|v| v.bits() == poison.bits()).count();
    let i = got.iter().position(|v| v.bits() == poison.bits())?;
    Some(format!(
        "{left} of {} elements never written; first at [{i}]",
        got.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_compares_bits_not_values() {
        assert!(identical(&[1.0f32, 2.0], &[1.0, 2.0]).is_none());
        let v = identical(&[0.0f32], &[-0.0]).unwrap();
        assert!(v.contains("first at [0]"), "{v}");
        assert!(identical(&[f32::NAN], &[f32::NAN]).is_none());
        let v = identical(&[1i8, 2, 3], &[1, 5, 6]).unwrap();
        assert!(v.starts_with("2 of 3 differ; first at [1]"), "{v}");
    }

    #[test]
    fn within_rel_fails_on_nan_and_large_errors() {
        assert!(within_rel(&[1.0], &[1.0 + 1e-7], 1e-6).0.is_none());
        assert!(within_rel(&[1.0], &[1.1], 1e-6).0.is_some());
        assert!(within_rel(&[f32::NAN], &[1.0], 1e-6).0.is_some());
    }

    #[test]
    fn all_written_finds_poison() {
        assert!(all_written(&[1i8, 2], -128).is_none());
        let v = all_written(&[1i8, -128, -128], -128).unwrap();
        assert!(v.starts_with("2 of 3"), "{v}");
    }
}
