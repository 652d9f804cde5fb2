//! The registry's error type and its mapping to the exit codes every program shares. Capacity refusals are
//! not among them: the capacity policy reads the document, so its error stays its own (the front ends map it).

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use base::exit;
use base::name::NameError;

/// Everything that can go wrong at the registry boundary.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("could not lock {path} ({reason}); nothing was changed and it is safe to try again")]
    LockRefused { path: PathBuf, reason: LockRefusal },
    #[error("registry lock already held by this process")]
    AlreadyHeld,
    #[error("cannot read {path}: {source}")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} does not parse ({reason}); nothing was changed")]
    Invalid { path: PathBuf, reason: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Name(#[from] NameError),
    #[error("session '{0}' already exists")]
    Exists(String),
    #[error("no such session: '{0}'")]
    NoSuchEntry(String),
}

impl RegistryError {
    /// The exit code of 00-overview §7 for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::LockRefused { .. } => exit::TEMPFAIL,
            Self::Name(_) | Self::Exists(_) | Self::NoSuchEntry(_) => exit::USAGE,
            Self::AlreadyHeld | Self::Unreadable { .. } | Self::Invalid { .. } | Self::Write { .. } => exit::FAILURE,
        }
    }
}

/// Why the registry lock was not obtained (RG-7.5).
#[derive(Debug, thiserror::Error)]
pub enum LockRefusal {
    #[error("cannot open {lock}: {source}")]
    Open {
        lock: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("another writer held it for {}s", seconds_text(*.0))]
    TimedOut(Duration),
    #[error("flock failed: {0}")]
    Flock(#[source] io::Error),
    #[error("{0}")]
    BadInheritedFd(String),
}

/// Seconds without trailing zeros: `10`, `1.5`, `0`.
fn seconds_text(d: Duration) -> String {
    let text = format!("{:.3}", d.as_secs_f64());
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_line_matches_rg_7_5() {
        let err = RegistryError::LockRefused {
            path: "/h/sessions.json".into(),
            reason: LockRefusal::TimedOut(Duration::from_secs(10)),
        };
        assert_eq!(
            err.to_string(),
            "could not lock /h/sessions.json (another writer held it for 10s); nothing was changed and it is safe to try again"
        );
        assert_eq!(err.exit_code(), 75);
        assert_eq!(LockRefusal::TimedOut(Duration::from_millis(1500)).to_string(), "another writer held it for 1.5s");
        assert_eq!(LockRefusal::TimedOut(Duration::ZERO).to_string(), "another writer held it for 0s");
    }

    #[test]
    fn exit_codes_follow_the_comments_of_rg_13() {
        assert_eq!(RegistryError::AlreadyHeld.exit_code(), 1);
        assert_eq!(RegistryError::Exists("a".into()).exit_code(), 2);
        assert_eq!(RegistryError::Name(NameError::Empty).exit_code(), 2);
    }
}
