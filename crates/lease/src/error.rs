//! The lease crate's error type: lock trouble or an I/O failure; never a reason to change an exit code.

use std::io;
use std::path::{Path, PathBuf};

use registry::LockRefusal;

/// Why a lease, hook-log or refusal-record operation changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("lease lock {path} busy for 2 s")]
    Busy { path: PathBuf },
    #[error("cannot open lease lock {path}: {source}")]
    LockOpen {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl LeaseError {
    pub(crate) fn from_refusal(lock: &Path, refusal: LockRefusal) -> Self {
        match refusal {
            LockRefusal::TimedOut(_) => Self::Busy { path: lock.to_path_buf() },
            LockRefusal::Open { source, .. } | LockRefusal::Flock(source) => {
                Self::LockOpen { path: lock.to_path_buf(), source }
            }
            LockRefusal::BadInheritedFd(text) => {
                Self::LockOpen { path: lock.to_path_buf(), source: io::Error::other(text) }
            }
        }
    }

    pub(crate) fn io(path: &Path, source: io::Error) -> Self {
        Self::Io { path: path.to_path_buf(), source }
    }
}
