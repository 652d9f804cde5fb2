//! Why a spawn added no session (60-webhook-spawn §8, §11): each error knows its exit code and the stderr lines
//! that report it; `main` prints them after the spawn's warnings.

use base::exit;

use crate::messages;

/// The failure of one spawn or render.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// A bad command line or configuration: no retry can succeed, the batch is dropped (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The refusal path of §8.4: nothing of the batch was written and a retry can succeed (exit 75). `cause` is
    /// the first line; `record_failed` is W19 when the refusal record could not be updated; W9 follows.
    #[error("{cause}")]
    Deferred { cause: String, record_failed: Option<String> },
}

impl SpawnError {
    /// The exit code of §8.1.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => exit::USAGE,
            Self::Deferred { .. } => exit::TEMPFAIL,
        }
    }

    /// The stderr lines that report the error, in order, without the program prefix.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Self::Usage(text) => vec![text.clone()],
            Self::Deferred { cause, record_failed } => {
                let mut lines = vec![cause.clone()];
                lines.extend(record_failed.iter().cloned());
                lines.push(messages::DEFERRED.to_owned());
                lines
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deferral_ends_with_w9() {
        let deferred = SpawnError::Deferred { cause: "busy".into(), record_failed: Some("w19".into()) };
        assert_eq!(deferred.exit_code(), 75);
        assert_eq!(deferred.lines(), ["busy", "w19", messages::DEFERRED]);
        assert_eq!(SpawnError::Usage("bad".into()).lines(), ["bad"]);
    }
}
