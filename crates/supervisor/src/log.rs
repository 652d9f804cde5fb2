//! The supervisor's stderr lines (30-supervisor §13): one line per message, the program prefix, no timestamps,
//! and the once-per-streak latches that keep a persistent condition from flooding the journal.

use std::collections::BTreeSet;

/// The prefix of every line.
pub const PREFIX: &str = "agent-box-supervisor: ";

/// Where lines go: stderr, or a buffer in unit tests.
#[derive(Debug, Default)]
pub struct Log {
    captured: Option<Vec<String>>,
}

impl Log {
    pub fn stderr() -> Self {
        Self { captured: None }
    }

    /// A log that keeps its lines in memory (tests).
    pub fn capturing() -> Self {
        Self { captured: Some(Vec::new()) }
    }

    pub fn line(&mut self, text: &str) {
        match &mut self.captured {
            Some(lines) => lines.push(text.to_owned()),
            None => eprintln!("{PREFIX}{text}"),
        }
    }

    /// Captured lines (empty for a stderr log).
    pub fn lines(&self) -> &[String] {
        self.captured.as_deref().unwrap_or(&[])
    }
}

/// A once-per-streak latch for one condition.
#[derive(Debug, Default, Clone, Copy)]
pub struct Latch(bool);

impl Latch {
    /// True the first time the condition is seen in a streak.
    pub fn raise(&mut self) -> bool {
        !std::mem::replace(&mut self.0, true)
    }

    /// The condition cleared; true when a streak ended.
    pub fn clear(&mut self) -> bool {
        std::mem::replace(&mut self.0, false)
    }
}

/// Once-per-streak latches keyed by session name.
#[derive(Debug, Default, Clone)]
pub struct NameLatches(BTreeSet<String>);

impl NameLatches {
    /// True the first time `name` shows the condition in a streak.
    pub fn raise(&mut self, name: &str) -> bool {
        self.0.insert(name.to_owned())
    }

    pub fn clear(&mut self, name: &str) {
        self.0.remove(name);
    }

    /// Keeps only names that `keep` accepts (T7).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.0.retain(|n| keep(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latches_fire_once_per_streak() {
        let mut latch = Latch::default();
        assert!(latch.raise());
        assert!(!latch.raise());
        assert!(latch.clear());
        assert!(!latch.clear());
        assert!(latch.raise());
        let mut names = NameLatches::default();
        assert!(names.raise("a") && !names.raise("a") && names.raise("b"));
        names.clear("a");
        assert!(names.raise("a"));
    }
}
