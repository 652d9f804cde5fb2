//! Crash-loop backoff (SUP-9): pure arithmetic over an in-memory record, so only panes that keep vanishing
//! are slowed down.

/// A pane that stayed up this long resets the streak (SUP-9.1, SUP-9.3).
pub const GRADUATION_SECS: i64 = 600;
/// The longest delay between two starts.
pub const MAX_DELAY_SECS: i64 = 300;

/// Per-name memory created by our successful spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    pub launch_id: String,
    pub spawned_at: i64,
    pub streak: u32,
    pub not_before: i64,
    /// The absence of the current pane was already accounted for.
    pub absence_counted: bool,
    /// L10 was logged in this streak (so graduation logs L11).
    pub warned: bool,
    /// The 300 s cap was reached and logged once; L10 stays quiet for the rest of the streak.
    pub capped: bool,
}

/// `delay(1) = 0`, `delay(k) = min(2 s · 2^(k−2), 300 s)`.
pub fn delay(streak: u32) -> i64 {
    match streak {
        0 | 1 => 0,
        k => {
            let exponent = (k - 2).min(16);
            (2_i64 << exponent).min(MAX_DELAY_SECS)
        }
    }
}

/// What the first tick that finds the pane absent decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absence {
    /// No delay (long run, or the first quick exit).
    Immediate,
    /// A new delay started; log L10 when `announce`.
    Delayed { until: i64, streak: u32, announce: bool },
}

impl Backoff {
    /// A record for a pane we just started; the streak carries over from an earlier record of the same name.
    pub fn started(launch_id: &str, now: i64, previous: Option<&Backoff>) -> Self {
        let (streak, warned, capped) = previous.map_or((0, false, false), |p| (p.streak, p.warned, p.capped));
        Self {
            launch_id: launch_id.to_owned(),
            spawned_at: now,
            streak,
            not_before: now,
            absence_counted: false,
            warned,
            capped,
        }
    }

    /// SUP-9.1: called on the first tick that finds this pane absent.
    pub fn count_absence(&mut self, now: i64) -> Absence {
        self.absence_counted = true;
        if now - self.spawned_at >= GRADUATION_SECS {
            self.streak = 0;
            self.capped = false;
            self.not_before = now;
            return Absence::Immediate;
        }
        self.streak += 1;
        let wait = delay(self.streak);
        self.not_before = now + wait;
        if wait == 0 {
            return Absence::Immediate;
        }
        let announce = !self.capped;
        self.capped |= wait >= MAX_DELAY_SECS;
        self.warned |= announce;
        Absence::Delayed { until: self.not_before, streak: self.streak, announce }
    }

    /// SUP-9.3: a pane seen up for 10 minutes graduates; true when L11 should be logged.
    pub fn graduate_if_stable(&mut self, now: i64) -> bool {
        if self.streak == 0 || now - self.spawned_at < GRADUATION_SECS {
            return false;
        }
        self.streak = 0;
        self.capped = false;
        std::mem::take(&mut self.warned)
    }

    pub fn may_start(&self, now: i64) -> bool {
        now >= self.not_before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_2s_to_the_300s_cap() {
        let delays: Vec<i64> = (1..=12).map(delay).collect();
        assert_eq!(delays, [0, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(delay(1000), 300);
    }

    #[test]
    fn a_single_kill_returns_at_once_and_a_loop_slows_down() {
        let mut record = Backoff::started("id", 0, None);
        assert_eq!(record.count_absence(5), Absence::Immediate, "first quick exit: no delay");
        assert!(record.may_start(5));
        record = Backoff::started("id", 6, Some(&record));
        assert_eq!(record.count_absence(8), Absence::Delayed { until: 10, streak: 2, announce: true });
        assert!(!record.may_start(9) && record.may_start(10));
    }

    #[test]
    fn a_long_run_resets_the_streak() {
        let mut record = Backoff { streak: 5, ..Backoff::started("id", 0, None) };
        assert_eq!(record.count_absence(GRADUATION_SECS), Absence::Immediate);
        assert_eq!(record.streak, 0);
    }

    // L10
    #[test]
    fn stops_after_the_cap_is_first_reached() {
        let mut record = Backoff::started("id", 0, None);
        let mut announced = 0;
        let mut now = 0;
        for _ in 0..20 {
            record = Backoff::started("id", now, Some(&record));
            now += 1;
            if let Absence::Delayed { until, announce, .. } = record.count_absence(now) {
                announced += usize::from(announce);
                now = until;
            }
        }
        assert_eq!(announced, 9, "2, 4 … 256, then 300 once");
    }

    #[test]
    fn graduation_after_ten_minutes_up() {
        let mut record = Backoff::started("id", 0, None);
        record.count_absence(1);
        record = Backoff::started("id", 2, Some(&record));
        assert!(matches!(record.count_absence(3), Absence::Delayed { .. }));
        record = Backoff::started("id", 10, Some(&record));
        assert!(!record.graduate_if_stable(10 + GRADUATION_SECS - 1));
        assert!(record.graduate_if_stable(10 + GRADUATION_SECS), "L11 after an L10 streak");
        assert_eq!(record.streak, 0);
        assert!(!record.graduate_if_stable(10 + GRADUATION_SECS + 1));
    }
}
