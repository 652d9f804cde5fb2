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

/// Whether the file at `path` holds exactly the concatenation of `parts`. It is read in small pieces, so a caller
/// that only needs to know whether a registry is still the one it read (or the one it wrote) does not allocate and
/// fault in a buffer of the file's size. A missing file holds nothing; any other read error is returned.
pub fn holds_exactly(path: &Path, parts: &[&[u8]]) -> io::Result<bool> {
    let mut file = match std::fs::File::open(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        other => other?,
    };
    let total: usize = parts.iter().map(|part| part.len()).sum();
    if usize::try_from(file.metadata()?.len()).ok() != Some(total) {
        return Ok(false);
    }
    const PIECE: usize = 8192;
    let mut buffer = [0u8; PIECE];
    let mut expected = parts.iter().flat_map(|part| part.chunks(PIECE));
    let mut pending: &[u8] = &[];
    loop {
        let read = io::Read::read(&mut file, &mut buffer)?;
        let mut got = buffer.get(..read).unwrap_or_default();
        if got.is_empty() {
            return Ok(pending.is_empty() && expected.next().is_none());
        }
        while !got.is_empty() {
            if pending.is_empty() {
                let Some(next) = expected.next() else { return Ok(false) };
                pending = next;
            }
            let n = pending.len().min(got.len());
            if pending[..n] != got[..n] {
                return Ok(false);
            }
            (pending, got) = (&pending[n..], &got[n..]);
        }
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
    fn holds_exactly_compares_whole_files_in_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.json");
        assert!(!holds_exactly(&file, &[b""]).unwrap(), "missing");
        let big: Vec<u8> = (0..30_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&file, &big).unwrap();
        assert!(holds_exactly(&file, &[&big]).unwrap());
        assert!(holds_exactly(&file, &[&big[..5], &big[5..20_000], b"", &big[20_000..]]).unwrap());
        let mut other = big.clone();
        other[29_999] ^= 1;
        assert!(!holds_exactly(&file, &[&other]).unwrap(), "last byte differs");
        assert!(!holds_exactly(&file, &[&big[..29_999]]).unwrap(), "shorter");
        std::fs::write(&file, b"").unwrap();
        assert!(holds_exactly(&file, &[]).unwrap());
        assert!(holds_exactly(dir.path(), &[b"x"]).is_err() || !holds_exactly(dir.path(), &[b"x"]).unwrap());
    }

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

    #[test]
    fn missing_and_empty_read_as_the_empty_document_and_only_those() {
        let valid = Document::parse(br#"{"version":1,"sessions":{"a":{}}}"#).unwrap();
        assert_eq!(ReadOutcome::Missing.document_or_empty(), Some(Document::empty()));
        assert_eq!(ReadOutcome::Empty.document_or_empty(), Some(Document::empty()));
        assert_eq!(ReadOutcome::Valid(valid.clone()).document_or_empty(), Some(valid));
        assert_eq!(ReadOutcome::Invalid("x".into()).document_or_empty(), None);
        assert_eq!(ReadOutcome::Unreadable(io::Error::other("x")).document_or_empty(), None);
    }

    /// A missing file holds nothing; a path that cannot be opened for another reason is an error, not a "no".
    #[test]
    fn holds_exactly_reads_missing_as_false_and_other_errors_as_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"ab").unwrap();
        assert!(holds_exactly(&file, &[b"a", b"b"]).unwrap());
        assert!(!holds_exactly(&dir.path().join("missing"), &[b""]).unwrap());
        assert!(holds_exactly(&file.join("below"), &[b""]).is_err());
    }
}
