//! The two observers that run beside the driver: a sampler that reads the registry and every lease file over and
//! over (each must always parse), and a tailer that keeps every line the hook log ever held, in order, across the
//! trims that rewrite it to its newest 200 lines (LS-8.5).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use lease::{LeaseDir, LeaseState};
use registry::ReadOutcome;

/// What the sampler saw.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    pub registry: usize,
    pub registry_invalid: usize,
    pub lease_files: usize,
    pub lease_unreadable: usize,
    /// What the first read that was not Valid saw.
    pub first_invalid: Option<String>,
}

/// Every line of the hook log seen so far, and how often the file was trimmed under the tailer.
#[derive(Debug, Default, Clone)]
pub struct LogSeen {
    pub lines: Vec<String>,
    pub trims: usize,
    /// Reads after which no overlap with the previous read was found: lines may have been missed.
    pub gaps: usize,
    last: Vec<String>,
}

impl LogSeen {
    /// Merges one read of the file (its complete lines).
    fn merge(&mut self, now: Vec<String>) {
        if now.len() >= self.last.len() && now[..self.last.len()] == self.last[..] {
            self.lines.extend_from_slice(&now[self.last.len()..]);
        } else {
            self.trims += 1;
            // The rewrite kept the newest lines: some suffix of the previous read is a prefix of this one.
            match (0..=self.last.len()).find(|&i| now.starts_with(&self.last[i..]) && i < self.last.len()) {
                Some(i) => self.lines.extend_from_slice(&now[self.last.len() - i..]),
                None => {
                    self.gaps += 1;
                    self.lines.extend_from_slice(&now);
                }
            }
        }
        self.last = now;
    }
}

/// Both observers, running until [`Watch::stop`].
#[derive(Debug)]
pub struct Watch {
    pub samples: Arc<Mutex<Samples>>,
    pub log: Arc<Mutex<LogSeen>>,
    done: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Watch {
    pub fn start(registry: PathBuf, lease_dir: PathBuf, hook_log: PathBuf) -> Self {
        let samples = Arc::new(Mutex::new(Samples::default()));
        let log = Arc::new(Mutex::new(LogSeen::default()));
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (samples, done) = (samples.clone(), done.clone());
            std::thread::spawn(move || sample(&registry, &LeaseDir::new(lease_dir), &samples, &done))
        };
        let tailer = {
            let (log, done) = (log.clone(), done.clone());
            std::thread::spawn(move || tail(&hook_log, &log, &done))
        };
        Self { samples, log, done, threads: vec![sampler, tailer] }
    }

    /// The hook log's lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.log.lock().map(|l| l.lines.clone()).unwrap_or_default()
    }

    /// Stops both threads after one last read each.
    pub fn stop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop();
    }
}

fn sample(registry: &std::path::Path, leases: &LeaseDir, samples: &Mutex<Samples>, done: &AtomicBool) {
    while !done.load(Ordering::SeqCst) {
        let read = registry::read(registry);
        let valid = matches!(read, ReadOutcome::Valid(_));
        let listed = leases.list();
        let unreadable = listed.iter().filter(|(_, s)| matches!(s, LeaseState::Unreadable)).count();
        if let Ok(mut s) = samples.lock() {
            s.registry += 1;
            s.registry_invalid += usize::from(!valid);
            if !valid && s.first_invalid.is_none() {
                s.first_invalid = Some(format!("{read:?}"));
            }
            s.lease_files += listed.len();
            s.lease_unreadable += unreadable;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn tail(path: &std::path::Path, log: &Mutex<LogSeen>, done: &AtomicBool) {
    loop {
        let last_round = done.load(Ordering::SeqCst);
        let bytes = std::fs::read(path).unwrap_or_default();
        // A line still being appended has no newline yet; it is read complete on the next round.
        let complete = match bytes.iter().rposition(|b| *b == b'\n') {
            Some(end) => &bytes[..=end],
            None => &[][..],
        };
        let lines: Vec<String> = String::from_utf8_lossy(complete).lines().map(str::to_owned).collect();
        if let Ok(mut seen) = log.lock() {
            seen.merge(lines);
        }
        if last_round {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn merging_follows_appends_and_trims() {
        let mut seen = LogSeen::default();
        seen.merge(lines(&["a", "b", "c"]));
        seen.merge(lines(&["a", "b", "c", "d"]));
        seen.merge(lines(&["c", "d", "e"]));
        seen.merge(lines(&["c", "d", "e", "f"]));
        assert_eq!(seen.lines, lines(&["a", "b", "c", "d", "e", "f"]));
        assert_eq!((seen.trims, seen.gaps), (1, 0));
        seen.merge(lines(&["x"]));
        assert_eq!(seen.gaps, 1);
    }
}
