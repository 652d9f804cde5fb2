//! Why a bench section could not run: one message, with context added on the way up, so a section can use `?`
//! on anything fallible instead of `unwrap`.

use std::fmt::Display;

/// A section (or the setup) could not be carried out; bench exits 96 for it (Q-1.6: setup cannot run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The result type of everything a section does.
pub type Outcome<T> = Result<T, Failure>;

/// Attaches what was being done to an error or a missing value.
pub trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Outcome<T>;
}

impl<T, E: Display> Context<T> for Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Outcome<T> {
        self.map_err(|e| Failure(format!("{}: {e}", what())))
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: impl FnOnce() -> String) -> Outcome<T> {
        self.ok_or_else(|| Failure(what()))
    }
}

/// A failure with just a message.
pub fn fail<T>(message: impl Into<String>) -> Outcome<T> {
    Err(Failure(message.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_prefixes_the_cause() {
        let err: Result<(), std::io::Error> = Err(std::io::Error::other("boom"));
        assert_eq!(err.context(|| "reading x".into()), Err(Failure("reading x: boom".into())));
        assert_eq!(None::<u8>.context(|| "no value".into()), Err(Failure("no value".into())));
    }
}
