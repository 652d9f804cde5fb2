//! The supervisor's stderr lines (30-supervisor §13): one line per message, the program prefix, no timestamps,
//! and the once-per-streak latches that keep a persistent condition from flooding the journal.
//!
//! Issue 18: when stderr is the journal (`JOURNAL_STREAM` names the device and inode of fd 2, as systemd sets it
//! for a unit whose output goes to journald), every line starts with the sd-daemon priority prefix (`<3>` error,
//! `<4>` warning, `<6>` info), so `journalctl -p warning -u agent-box` shows the problems only. Anywhere else
//! (a terminal, a file, a test's pipe) the lines are as before.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;

/// The prefix of every line.
pub const PREFIX: &str = "agent-box-supervisor: ";

/// How much a line matters, as syslog(3) numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Something the supervisor should do could not be done (a write, a spawn, tmux).
    Error = 3,
    /// A condition an operator may have to act on (a crash, a loss, a refusal, a skipped entry).
    Warning = 4,
    /// What happened in the normal course (starts, sweeps, recoveries).
    Info = 6,
}

/// Where lines go: stderr, or a buffer in unit tests.
#[derive(Debug, Default)]
pub struct Log {
    captured: Option<Vec<String>>,
    /// stderr is the journal: lines carry the priority prefix.
    journal: bool,
}

impl Log {
    pub fn stderr() -> Self {
        Self { captured: None, journal: stderr_is_journal(std::env::var_os("JOURNAL_STREAM").as_deref()) }
    }

    /// A log that keeps its lines in memory (tests).
    pub fn capturing() -> Self {
        Self { captured: Some(Vec::new()), journal: false }
    }

    /// An info line.
    pub fn line(&mut self, text: &str) {
        self.at(Priority::Info, text);
    }

    pub fn warn(&mut self, text: &str) {
        self.at(Priority::Warning, text);
    }

    pub fn error(&mut self, text: &str) {
        self.at(Priority::Error, text);
    }

    pub fn at(&mut self, priority: Priority, text: &str) {
        match &mut self.captured {
            Some(lines) => lines.push(text.to_owned()),
            None => eprintln!("{}", render(self.journal, priority, text)),
        }
    }

    /// Captured lines (empty for a stderr log).
    pub fn lines(&self) -> &[String] {
        self.captured.as_deref().unwrap_or(&[])
    }
}

/// One line as written: the priority prefix only when stderr is the journal.
pub fn render(journal: bool, priority: Priority, text: &str) -> String {
    if journal { format!("<{}>{PREFIX}{text}", priority as u8) } else { format!("{PREFIX}{text}") }
}

/// True when `JOURNAL_STREAM` (`<device>:<inode>`, decimal) names the file behind fd 2: only then is stderr the
/// journal (a child that inherited the variable but has its stderr redirected must not print prefixes).
pub fn stderr_is_journal(stream: Option<&OsStr>) -> bool {
    let Some((dev, ino)) = stream.and_then(OsStr::to_str).and_then(|s| s.split_once(':')) else { return false };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else { return false };
    std::fs::metadata("/proc/self/fd/2").is_ok_and(|meta| meta.dev() == dev && meta.ino() == ino)
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
    fn the_priority_prefix_only_for_the_journal() {
        assert_eq!(render(true, Priority::Warning, "x"), "<4>agent-box-supervisor: x");
        assert_eq!(render(true, Priority::Error, "x"), "<3>agent-box-supervisor: x");
        assert_eq!(render(true, Priority::Info, "x"), "<6>agent-box-supervisor: x");
        assert_eq!(render(false, Priority::Error, "x"), "agent-box-supervisor: x");
        let meta = std::fs::metadata("/proc/self/fd/2").unwrap();
        let own = format!("{}:{}", meta.dev(), meta.ino());
        assert!(stderr_is_journal(Some(OsStr::new(&own))));
        assert!(!stderr_is_journal(Some(OsStr::new(&format!("{}:{}", meta.dev(), meta.ino() + 1)))));
        assert!(!stderr_is_journal(Some(OsStr::new("garbage"))) && !stderr_is_journal(None));
    }

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
