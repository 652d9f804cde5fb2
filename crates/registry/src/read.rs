//! Lock-free reading of the registry into one of five outcomes (RG-6.2).

use std::io;
use std::path::Path;

use crate::document::Document;

/// What a read of the registry found.
#[derive(Debug)]
pub enum ReadOutcome {
    Missing,
    Empty,
    Valid(Document),
    Invalid(String),
    Unreadable(io::Error),
}

impl ReadOutcome {
    /// The document, or the empty one for Missing and Empty; `None` for Invalid and Unreadable.
    pub fn document_or_empty(self) -> Option<Document> {
        match self {
            Self::Missing | Self::Empty => Some(Document::empty()),
            Self::Valid(doc) => Some(doc),
            Self::Invalid(_) | Self::Unreadable(_) => None,
        }
    }
}

/// Reads the whole file at once, without a lock (writers replace it by rename).
pub fn read(path: &Path) -> ReadOutcome {
    match read_raw(path) {
        Raw::Missing => ReadOutcome::Missing,
        Raw::Unreadable(err) => ReadOutcome::Unreadable(err),
        Raw::Bytes(bytes) => ReadOutcome::from_bytes(&bytes),
    }
}

/// The registry's bytes before any parsing, for callers that compare two reads without parsing twice.
#[derive(Debug)]
pub enum Raw {
    Missing,
    Unreadable(io::Error),
    Bytes(Vec<u8>),
}

/// Reads the whole file at once, without a lock and without parsing.
pub fn read_raw(path: &Path) -> Raw {
    match std::fs::read(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Raw::Missing,
        Err(err) => Raw::Unreadable(err),
        Ok(bytes) => Raw::Bytes(bytes),
    }
}

impl ReadOutcome {
    /// Classifies bytes that were read: Empty, Valid or Invalid.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        if bytes.is_empty() {
            return Self::Empty;
        }
        match Document::parse(bytes) {
            Ok(doc) => Self::Valid(doc),
            Err(reason) => Self::Invalid(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_outcomes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.json");
        assert!(matches!(read(&file), ReadOutcome::Missing));
        assert!(matches!(read(&dir.path().join("no/such/dir/s.json")), ReadOutcome::Missing));
        std::fs::write(&file, b"").unwrap();
        assert!(matches!(read(&file), ReadOutcome::Empty));
        std::fs::write(&file, b"{\"sessions\":{}}\n").unwrap();
        assert!(matches!(read(&file), ReadOutcome::Valid(_)));
        std::fs::write(&file, b"{\"sessions\":{}}{}").unwrap();
        assert!(matches!(read(&file), ReadOutcome::Invalid(_)));
        assert!(matches!(read(dir.path()), ReadOutcome::Unreadable(_)), "a directory is unreadable");
    }
}
