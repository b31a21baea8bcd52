//! The timing protocols: device time from CUDA events, arms interleaved within each round,
//! medians over rounds with the spread beside them.
//!
//! [`interleaved`] times graphs of back-to-back calls: a graph replays its launches without the
//! host's per-launch cost in between, so a kernel of a few microseconds is timed as the device
//! runs it, not as fast as the host can enqueue it. [`interleaved_cold`] times one call at a
//! time after a scrub of the L2, for kernels whose serving context leaves the L2 cold.

use host::{Error, Gpu};

/// One thing being timed: a graph of `calls` identical calls (each one or more launches).
pub struct Arm {
    pub graph: host::CudaGraph,
    pub calls: usize,
}

/// Median and spread of per-call device time over rounds, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub rounds: usize,
}

impl Stats {
    pub fn of(samples: &[f64]) -> Stats {
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median_us = if n == 0 {
            f64::NAN
        } else if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Stats {
            median_us,
            min_us: s.first().copied().unwrap_or(f64::NAN),
            max_us: s.last().copied().unwrap_or(f64::NAN),
            rounds: n,
        }
    }

    /// Spread as a fraction of the median: (max - min) / median.
    pub fn spread(&self) -> f64 {
        (self.max_us - self.min_us) / self.median_us
    }
}

/// Runs every arm once to warm up, then `rounds` rounds in which each arm is timed once; the
/// order rotates every round so no arm always follows the same neighbour.
pub fn interleaved(gpu: &Gpu, arms: &[Arm], rounds: usize) -> Result<Vec<Stats>, Error> {
    for arm in arms {
        gpu.replay(&arm.graph)?;
    }
    gpu.synchronize()?;
    let mut samples = vec![Vec::with_capacity(rounds); arms.len()];
    for round in 0..rounds {
        for k in 0..arms.len() {
            let i = (round + k) % arms.len();
            let arm = &arms[i];
            let ms = gpu.time_ms(|| gpu.replay(&arm.graph))?;
            samples[i].push(ms as f64 * 1e3 / arm.calls as f64);
        }
    }
    Ok(samples.iter().map(|s| Stats::of(s)).collect())
}

/// Times `arms` calls one at a time: each sample runs `scrub` (untimed), then one call of arm
/// `i` between two events. Every arm is warmed up twice first (each after a scrub); then come
/// `rounds` rounds in which each arm is sampled once, in an order that rotates every round.
pub fn interleaved_cold(
    gpu: &Gpu,
    arms: usize,
    rounds: usize,
    mut scrub: impl FnMut() -> Result<(), Error>,
    mut call: impl FnMut(usize) -> Result<(), Error>,
) -> Result<Vec<Stats>, Error> {
    for i in 0..arms {
        for _ in 0..2 {
            scrub()?;
            call(i)?;
        }
    }
    gpu.synchronize()?;
    let mut samples = vec![Vec::with_capacity(rounds); arms];
    for round in 0..rounds {
        for k in 0..arms {
            let i = (round + k) % arms;
            scrub()?;
            let ms = gpu.time_ms(|| call(i))?;
            samples[i].push(ms as f64 * 1e3);
        }
    }
    Ok(samples.iter().map(|s| Stats::of(s)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_take_the_median_and_the_extremes() {
        let s = Stats::of(&[3.0, 1.0, 2.0]);
        assert_eq!(
            (s.median_us, s.min_us, s.max_us, s.rounds),
            (2.0, 1.0, 3.0, 3)
        );
        assert_eq!(Stats::of(&[4.0, 1.0, 2.0, 3.0]).median_us, 2.5);
        assert!((Stats::of(&[1.0, 2.0, 3.0]).spread() - 1.0).abs() < 1e-12);
    }
}
