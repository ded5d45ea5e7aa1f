//! Samples of one figure, and how they are summarised: median and p99 (and
//! the maximum where a tail matters), in milliseconds.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default)]
pub struct Samples {
    sorted: Vec<f64>,
}

impl Samples {
    /// From durations in milliseconds (any order).
    pub fn from_ms(mut ms: Vec<f64>) -> Samples {
        ms.sort_by(f64::total_cmp);
        Samples { sorted: ms }
    }

    pub fn from_durations(durations: impl IntoIterator<Item = Duration>) -> Samples {
        Samples::from_ms(durations.into_iter().map(|d| d.as_secs_f64() * 1e3).collect())
    }

    /// Times `f` `runs` times, after `warmup` untimed runs.
    pub fn time(runs: usize, warmup: usize, mut f: impl FnMut()) -> Samples {
        for _ in 0..warmup {
            f();
        }
        Samples::from_durations((0..runs).map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        }))
    }

    /// The value at quantile `q` (nearest rank).
    pub fn quantile(&self, q: f64) -> f64 {
        if self.sorted.is_empty() {
            return f64::NAN;
        }
        let rank = (q * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }

    pub fn median(&self) -> f64 {
        self.quantile(0.5)
    }

    pub fn p99(&self) -> f64 {
        self.quantile(0.99)
    }

    pub fn max(&self) -> f64 {
        self.sorted.last().copied().unwrap_or(f64::NAN)
    }

    pub fn min(&self) -> f64 {
        self.sorted.first().copied().unwrap_or(f64::NAN)
    }
}

/// A duration in ms as the report writes it: three significant digits or so.
pub fn ms(value: f64) -> String {
    if value.is_nan() {
        "n/a".into()
    } else if value.abs() >= 100.0 {
        format!("{value:.0} ms")
    } else if value.abs() >= 10.0 {
        format!("{value:.1} ms")
    } else {
        format!("{value:.2} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let s = Samples::from_ms((1..=100).rev().map(f64::from).collect());
        assert_eq!(s.median(), 50.0);
        assert_eq!(s.p99(), 99.0);
        assert_eq!(s.max(), 100.0);
        assert_eq!(Samples::from_ms(vec![3.0]).p99(), 3.0);
    }
}
