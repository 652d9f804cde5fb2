//! The queue's bounds (docs/intake.md IN-9): how many records may wait and for how long, and how long a key
//! is remembered after its record left the queue.

use std::ffi::OsString;

/// `AGENT_BOX_QUEUE_MAX`: records that may wait at once.
pub const MAX_RECORDS_ENV: &str = "AGENT_BOX_QUEUE_MAX";
/// `AGENT_BOX_QUEUE_MAX_AGE`: whole seconds a record may wait.
pub const MAX_AGE_ENV: &str = "AGENT_BOX_QUEUE_MAX_AGE";

pub const DEFAULT_MAX_RECORDS: u64 = 500;
/// One day: events older than that are rarely still worth an agent's first look, and the operator is told.
pub const DEFAULT_MAX_AGE_SECS: u64 = 86_400;
pub const MAX_RECORDS_RANGE: std::ops::RangeInclusive<u64> = 1..=100_000;
/// At most the redelivery window, so a record never outlives the memory of its keys.
pub const MAX_AGE_RANGE: std::ops::RangeInclusive<u64> = 60..=REDELIVERY_WINDOW_SECS;
/// GitHub redelivers a delivery for up to 7 days: a key is a duplicate for that long after its record ended.
pub const REDELIVERY_WINDOW_SECS: u64 = 7 * 86_400;

/// The two bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub max_records: u64,
    pub max_age_secs: u64,
}

impl Default for Bounds {
    fn default() -> Self {
        Self { max_records: DEFAULT_MAX_RECORDS, max_age_secs: DEFAULT_MAX_AGE_SECS }
    }
}

/// A bound variable that is set but not a whole number in its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var} must be a whole number from {low} to {high} (it is '{value}')")]
pub struct BoundProblem {
    pub var: &'static str,
    pub value: String,
    pub low: u64,
    pub high: u64,
}

impl Bounds {
    /// Reads both variables; unset or empty means the default. Every problem is returned, with the default in
    /// its place: the supervisor refuses to start on one, webhook-spawn warns and queues (a bound never drops a
    /// batch).
    pub fn from_lookup(env: &impl Fn(&str) -> Option<OsString>) -> (Self, Vec<BoundProblem>) {
        let mut problems = Vec::new();
        let mut read = |var: &'static str, range: std::ops::RangeInclusive<u64>, default: u64| {
            let Some(value) = env(var).map(|v| v.to_string_lossy().trim().to_owned()).filter(|v| !v.is_empty()) else {
                return default;
            };
            match value.parse::<u64>() {
                Ok(number) if range.contains(&number) => number,
                _ => {
                    problems.push(BoundProblem { var, value, low: *range.start(), high: *range.end() });
                    default
                }
            }
        };
        let max_records = read(MAX_RECORDS_ENV, MAX_RECORDS_RANGE, DEFAULT_MAX_RECORDS);
        let max_age_secs = read(MAX_AGE_ENV, MAX_AGE_RANGE, DEFAULT_MAX_AGE_SECS);
        (Self { max_records, max_age_secs }, problems)
    }

    pub fn max_age(&self) -> i64 {
        i64::try_from(self.max_age_secs).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(pairs: &[(&str, &str)]) -> (Bounds, Vec<BoundProblem>) {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Bounds::from_lookup(&|key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| OsString::from(v)))
    }

    #[test]
    fn defaults_values_and_problems() {
        assert_eq!(bounds(&[]), (Bounds::default(), vec![]));
        assert_eq!(
            bounds(&[(MAX_RECORDS_ENV, "3"), (MAX_AGE_ENV, " 600 ")]).0,
            Bounds { max_records: 3, max_age_secs: 600 }
        );
        let (kept, problems) = bounds(&[(MAX_RECORDS_ENV, "0"), (MAX_AGE_ENV, "8d")]);
        assert_eq!(kept, Bounds::default(), "a bad value keeps the default");
        assert_eq!(problems.len(), 2);
        assert_eq!(
            problems[1].to_string(),
            "AGENT_BOX_QUEUE_MAX_AGE must be a whole number from 60 to 604800 (it is '8d')"
        );
        assert_eq!(bounds(&[(MAX_AGE_ENV, "604801")]).1.len(), 1, "never past the redelivery window");
    }

    // IN-9: the maximum age the supervisor expires by and `queue` shows is the configured number of seconds.
    #[test]
    fn in9_the_maximum_age_is_the_configured_seconds() {
        assert_eq!(Bounds::default().max_age(), 86_400);
        assert_eq!(bounds(&[(MAX_AGE_ENV, "600")]).0.max_age(), 600);
        assert_eq!(Bounds { max_records: 1, max_age_secs: u64::MAX }.max_age(), i64::MAX, "saturates");
    }
}
