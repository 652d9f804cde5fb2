//! Summary statistics of a sample set (spec 90: median, p95, min, max, median absolute deviation).

/// The figures reported for one metric's samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    /// Median absolute deviation from the median: a spread figure that one outlier cannot move.
    pub mad: f64,
}

impl Summary {
    /// The summary of `values`; `None` for an empty set (a metric without samples has nothing to report).
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let median = median_of_sorted(&sorted);
        let mut deviations: Vec<f64> = sorted.iter().map(|v| (v - median).abs()).collect();
        deviations.sort_by(f64::total_cmp);
        Some(Self {
            n: sorted.len(),
            median,
            p95: percentile_of_sorted(&sorted, 95.0),
            p99: percentile_of_sorted(&sorted, 99.0),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            mad: median_of_sorted(&deviations),
        })
    }
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 { sorted[mid] } else { (sorted[mid - 1] + sorted[mid]) / 2.0 }
}

/// Nearest-rank percentile: the smallest sample with at least `p` % of the samples at or below it, so the
/// figure is always a value that was actually measured.
fn percentile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_medians() {
        assert_eq!(Summary::of(&[3.0, 1.0, 2.0]).unwrap().median, 2.0);
        assert_eq!(Summary::of(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
    }

    #[test]
    fn nearest_rank_percentiles_and_extremes() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Summary::of(&values).unwrap();
        assert_eq!((s.p95, s.p99, s.min, s.max, s.n), (95.0, 99.0, 1.0, 100.0, 100));
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!((one.median, one.p95, one.mad), (7.0, 7.0, 0.0));
    }

    #[test]
    fn mad_ignores_one_outlier() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, 1000.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mad, 1.0);
    }

    #[test]
    fn empty_has_no_summary() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
    }
}
