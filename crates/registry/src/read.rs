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
    match std::fs::read(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => ReadOutcome::Missing,
        Err(err) => ReadOutcome::Unreadable(err),
        Ok(bytes) if bytes.is_empty() => ReadOutcome::Empty,
        Ok(bytes) => match Document::parse(&bytes) {
            Ok(doc) => ReadOutcome::Valid(doc),
            Err(reason) => ReadOutcome::Invalid(reason),
        },
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
