//! Why an intake step could not record what it was asked to (the caller defers: exit 75 in webhook-spawn, a retry
//! at the next tick in the supervisor).

use std::path::{Path, PathBuf};

/// Nothing of the step was acknowledged (W25: webhook-spawn defers the batch, exit 75).
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error("could not write {path} ({source}); the batch was not queued")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("could not read the intake queue {path} ({source}); the batch was not queued")]
    List { path: PathBuf, source: std::io::Error },
}

impl IntakeError {
    pub(crate) fn write(path: &Path, source: std::io::Error) -> Self {
        Self::Write { path: path.to_path_buf(), source }
    }
    pub(crate) fn list(path: &Path, source: std::io::Error) -> Self {
        Self::List { path: path.to_path_buf(), source }
    }
}
