//! The env store `~/.config/agent-box/env` (issue 20, docs/env-store.md): the variables every pane gets at each
//! spawn. One parser for every reader here and the same rules in the pane's POSIX-sh loader (the supervisor's
//! launch script), and one writer that rewrites the file atomically under the sidecar lock `env.lock`.
//!
//! Interop: the old CLI and the settings daemon write the same file (two `#` header lines, then `KEY=value`
//! lines; the daemon through a temp `.env.<random>` renamed over it, without lock or fsync). A line is read with
//! spaces, tabs and CRs around it and around its key stripped; the value is everything after the first `=`, with
//! one pair of surrounding `"…"` or `'…'` removed; blank, `#` and malformed lines are skipped; the last of a key
//! set twice wins. A rewrite keeps every line it does not change, byte for byte, malformed ones included, so a
//! hand edit the loader cannot read is never lost by a `set` of another key.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::atomic::{Durability, ensure_private_dir, parent_dir, write_atomic};
use crate::error::LockRefusal;
use crate::lock::with_file_lock;

/// The header both old writers put first.
pub const HEADER: [&str; 2] = [
    "# Managed by agent-box settings page. KEY=value, one per line.",
    "# Do not add secrets by hand here unless you know what you are doing.",
];

/// The bytes stripped around a line and around its key (CR: a file edited on another system).
pub const TRIM: &[u8] = b" \t\r";

/// A store larger than this is refused by every reader here: it is not a list of keys.
pub const MAX_BYTES: u64 = 4 << 20;

/// How long a writer waits for `env.lock` before it gives up.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The store of `home`: `~/.config/agent-box/env`.
pub fn store_path(home: &Path) -> PathBuf {
    home.join(".config/agent-box/env")
}

/// The sidecar lock of the store: `env.lock` beside it.
pub fn lock_path(store: &Path) -> PathBuf {
    parent_dir(store).join("env.lock")
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// True for a key the pane loader never exports: `AGENT_BOX_*` (the supervisor's and the pane's own names always
/// win) and the loader's own scratch variables `_abx_*`.
pub fn is_reserved(key: &str) -> bool {
    key.starts_with("AGENT_BOX_") || key.starts_with(LOADER_PREFIX)
}

/// The prefix of the pane loader's scratch variables (they are unset before the agent starts).
pub const LOADER_PREFIX: &str = "_abx_";

/// Why a value cannot be stored: the loader reads one line per variable, and sh cannot hold a NUL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("a value cannot contain a newline")]
    Newline,
    #[error("a value cannot contain a NUL byte")]
    Nul,
}

/// Checks a value before anything is written.
pub fn check_value(value: &[u8]) -> Result<(), ValueError> {
    if value.contains(&b'\n') {
        Err(ValueError::Newline)
    } else if value.contains(&0) {
        Err(ValueError::Nul)
    } else {
        Ok(())
    }
}

/// One line of the file as it was read, and the pair it holds when it holds one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    raw: Vec<u8>,
    key: Option<String>,
}

/// The store's lines in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Store {
    lines: Vec<Line>,
}

/// The pair a line holds, or `None` for a blank, comment or malformed line.
pub fn parse_line(raw: &[u8]) -> Option<(String, Vec<u8>)> {
    let line = trim(raw, TRIM);
    if line.is_empty() || line[0] == b'#' || line.contains(&0) {
        return None;
    }
    let eq = line.iter().position(|&b| b == b'=')?;
    let key = std::str::from_utf8(trim(&line[..eq], TRIM)).ok().filter(|k| is_key(k))?;
    Some((key.to_owned(), unquote(&line[eq + 1..]).to_vec()))
}

fn trim<'a>(mut bytes: &'a [u8], set: &[u8]) -> &'a [u8] {
    while let [first, rest @ ..] = bytes
        && set.contains(first)
    {
        bytes = rest;
    }
    while let [rest @ .., last] = bytes
        && set.contains(last)
    {
        bytes = rest;
    }
    bytes
}

/// One pair of surrounding `"` or `'` removed, nothing else (no escapes).
fn unquote(value: &[u8]) -> &[u8] {
    match value {
        [q, inner @ .., last] if (*q == b'"' || *q == b'\'') && q == last => inner,
        _ => value,
    }
}

/// How a value is written so that [`parse_line`] gives it back exactly: bare, unless trimming or unquoting would
/// change it, then wrapped in one pair of `"` (the loader strips exactly one pair and unescapes nothing).
pub fn encode_value(value: &[u8]) -> Vec<u8> {
    let trimmed = trim(value, TRIM).len() != value.len();
    if trimmed || unquote(value).len() != value.len() { [b"\"", value, b"\""].concat() } else { value.to_vec() }
}

impl Store {
    /// Parses the file's bytes; a last line without a newline counts.
    pub fn parse(bytes: &[u8]) -> Self {
        let mut parts: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if parts.last().is_some_and(|last| last.is_empty()) {
            parts.pop();
        }
        let lines = parts.into_iter().map(|raw| Line { raw: raw.to_vec(), key: parse_line(raw).map(|p| p.0) });
        Self { lines: lines.collect() }
    }

    /// A new store: the old writers' header and nothing else.
    pub fn with_header() -> Self {
        Self { lines: HEADER.iter().map(|h| Line { raw: h.as_bytes().to_vec(), key: None }).collect() }
    }

    /// The keys set, sorted, each once.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.lines.iter().filter_map(|l| l.key.clone()).collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Every pair, the last of a key set twice winning (what the loader exports, reserved keys included).
    pub fn pairs(&self) -> BTreeMap<String, Vec<u8>> {
        self.lines.iter().filter_map(|l| parse_line(&l.raw)).collect()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.lines.iter().any(|l| l.key.as_deref() == Some(key))
    }

    /// Sets `key`: its first line becomes `KEY=<value>`, later lines of it go; every other line stays.
    pub fn set(&mut self, key: &str, value: &[u8]) {
        let raw = [key.as_bytes(), b"=", &encode_value(value)].concat();
        let line = Line { raw, key: Some(key.to_owned()) };
        match self.lines.iter().position(|l| l.key.as_deref() == Some(key)) {
            Some(first) => {
                self.lines[first] = line;
                let mut index = 0;
                self.lines.retain(|l| {
                    index += 1;
                    index - 1 == first || l.key.as_deref() != Some(key)
                });
            }
            None => self.lines.push(line),
        }
    }

    /// Removes every line of `key`; true when there was one.
    pub fn remove(&mut self, key: &str) -> bool {
        let before = self.lines.len();
        self.lines.retain(|l| l.key.as_deref() != Some(key));
        before != self.lines.len()
    }

    /// The file's bytes: every line followed by a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for line in &self.lines {
            out.extend_from_slice(&line.raw);
            out.push(b'\n');
        }
        out
    }
}

/// What went wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot read {}: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not a regular file", .0.display())]
    NotAFile(PathBuf),
    #[error("{} is larger than {MAX_BYTES} bytes", .0.display())]
    TooLarge(PathBuf),
    #[error("cannot write {}: {source}", .path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Lock(#[from] LockRefusal),
}

/// Reads the store: `Ok(None)` only when it does not exist (issue 18: absence only on ENOENT).
pub fn read(path: &Path) -> Result<Option<Store>, StoreError> {
    let read_err = |source| StoreError::Read { path: path.to_path_buf(), source };
    // O_NONBLOCK: a FIFO put in its place must not stall a spawn or a verb.
    let file = match fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(read_err(err)),
    };
    let meta = file.metadata().map_err(read_err)?;
    if !meta.is_file() {
        return Err(StoreError::NotAFile(path.to_path_buf()));
    }
    if meta.len() > MAX_BYTES {
        return Err(StoreError::TooLarge(path.to_path_buf()));
    }
    let mut bytes = Vec::new();
    File::take(file, MAX_BYTES + 1).read_to_end(&mut bytes).map_err(read_err)?;
    Ok(Some(Store::parse(&bytes)))
}

/// Reads, changes and rewrites the store under `env.lock` (created with its directory, 0700, when missing).
/// `change` returns whether anything changed and its own answer; nothing is written when nothing changed.
pub fn edit<R>(
    path: &Path,
    wait: Duration,
    change: impl FnOnce(&mut Store) -> (bool, R),
) -> Result<(R, Option<Durability>), StoreError> {
    let write_err = |source| StoreError::Write { path: path.to_path_buf(), source };
    ensure_private_dir(parent_dir(path)).map_err(write_err)?;
    with_file_lock(&lock_path(path), wait, true, |_| {
        let mut store = read(path)?.unwrap_or_else(Store::with_header);
        let (changed, answer) = change(&mut store);
        if !changed {
            return Ok((answer, None));
        }
        let durability = write_atomic(path, &store.to_bytes()).map_err(write_err)?;
        Ok((answer, Some(durability)))
    })?
}

/// Reads one line from the terminal on `fd` with echo off, restoring the terminal's mode afterwards (also when
/// the read fails). `ready` runs once echo is off (the caller prints its prompt there, so nothing typed after the
/// prompt can be echoed or flushed away). The newline is not part of the answer.
pub fn read_line_without_echo(fd: std::os::fd::BorrowedFd<'_>, ready: impl FnOnce()) -> io::Result<Vec<u8>> {
    use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
    let saved = tcgetattr(fd).map_err(io::Error::from)?;
    let mut quiet = saved.clone();
    quiet.local_flags.remove(LocalFlags::ECHO);
    quiet.local_flags.insert(LocalFlags::ECHONL);
    tcsetattr(fd, SetArg::TCSAFLUSH, &quiet).map_err(io::Error::from)?;
    ready();
    let mut line = Vec::new();
    let result = read_until_newline(fd, &mut line);
    let restored = tcsetattr(fd, SetArg::TCSAFLUSH, &saved).map_err(io::Error::from);
    result.and(restored).map(|()| line)
}

fn read_until_newline(fd: std::os::fd::BorrowedFd<'_>, line: &mut Vec<u8>) -> io::Result<()> {
    let mut byte = [0u8; 1];
    loop {
        match nix::unistd::read(fd, &mut byte) {
            Ok(0) => return Ok(()),
            Ok(_) if byte[0] == b'\n' => return Ok(()),
            Ok(_) => line.push(byte[0]),
            Err(nix::errno::Errno::EINTR) => {}
            Err(err) => return Err(err.into()),
        }
    }
}

#[cfg(test)]
mod tests;
