//! A value axis from zero: round tick steps (1, 2 or 5 times a power of ten) and their labels.

/// Ticks from 0 up to the first tick at or above `max`, about five of them.
pub fn ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let exp = raw.log10().floor() as i32;
    // A tick is (i x mantissa) scaled by a power of ten, divided rather than multiplied below
    // 1 so that 0.6 is 6 / 10, not 3 x 0.2 = 0.6000000000000001.
    let scale = |v: f64| {
        if exp < 0 {
            v / 10f64.powi(-exp)
        } else {
            v * 10f64.powi(exp)
        }
    };
    let mantissa = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|&f| scale(f) >= raw * 0.999)
        .unwrap_or(10.0);
    let n = (max / scale(mantissa) - 1e-9).ceil().max(1.0) as usize;
    (0..=n).map(|i| scale(i as f64 * mantissa)).collect()
}

/// A tick's label: as many decimals as the step needs, none from 1 up.
pub fn label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil() as usize
    };
    format!("{value:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(
            ticks(4013.0),
            vec![0.0, 1000.0, 2000.0, 3000.0, 4000.0, 5000.0]
        );
        assert_eq!(ticks(18.0), vec![0.0, 5.0, 10.0, 15.0, 20.0]);
        assert_eq!(ticks(1.0), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(ticks(0.0), ticks(1.0));
        for max in [0.37, 3.0, 97.5, 171.9, 4652.0] {
            let t = ticks(max);
            assert!(*t.last().unwrap() >= max, "{max}: {t:?}");
            assert!((3..=8).contains(&t.len()), "{max}: {t:?}");
        }
    }

    #[test]
    fn labels_carry_the_decimals_of_the_step() {
        assert_eq!(label(1000.0, 1000.0), "1000");
        assert_eq!(label(0.4, 0.2), "0.4");
        assert_eq!(label(0.05, 0.05), "0.05");
    }
}
