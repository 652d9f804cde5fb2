//! Bounded reads of harness-owned files (transcripts, rollouts, filters, live ids) and depth-limited walks:
//! nothing a harness or a user leaves on disk may crash or stall preparation.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The most any single read takes from one file (§12.2 item 4, §12.3).
pub const MAX_READ: u64 = 1 << 20;

/// True when `path` names a regular file (after symlinks).
pub fn is_regular_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// Opens `path` for reading only if it is a regular file.
fn open_regular(path: &Path) -> Option<(File, u64)> {
    // O_NONBLOCK: a FIFO swapped in after any check would otherwise block the open forever.
    let file = fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path).ok()?;
    let meta = file.metadata().ok()?;
    meta.is_file().then_some((file, meta.len()))
}

/// At most the first `limit` bytes of a regular file, and whether the file is longer than that.
pub fn read_head(path: &Path, limit: u64) -> Option<(Vec<u8>, bool)> {
    let (file, len) = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).ok()?;
    Some((bytes, len > limit))
}

/// At most the last `limit` bytes of a regular file, and whether it starts after the beginning of the file.
pub fn read_tail(path: &Path, limit: u64) -> Option<(Vec<u8>, bool)> {
    let (mut file, len) = open_regular(path)?;
    let start = len.saturating_sub(limit);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).ok()?;
    Some((bytes, start > 0))
}

/// The first line of a small regular file, without surrounding whitespace.
pub fn first_line(path: &Path) -> Option<String> {
    let (bytes, _) = read_head(path, 4096)?;
    let line = bytes.split(|&b| b == b'\n').next()?;
    std::str::from_utf8(line).ok().map(|s| s.trim().to_owned())
}

/// The subdirectories of `dir` (symlinks are not followed, like `find` without `-L`), sorted for determinism.
pub fn subdirectories(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> =
        entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
    dirs.sort();
    dirs
}

/// Every non-directory entry at depth 1..=`max_depth` below `root` (`find root -maxdepth N`), directories first
/// visited breadth-first.
pub fn files_within(root: &Path, max_depth: usize) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut level = vec![root.to_path_buf()];
    for _ in 0..max_depth {
        let mut next = Vec::new();
        for dir in &level {
            let Ok(entries) = fs::read_dir(dir) else { continue };
            for entry in entries.flatten() {
                match entry.file_type() {
                    Ok(t) if t.is_dir() => next.push(entry.path()),
                    Ok(_) => files.push(entry.path()),
                    Err(_) => {}
                }
            }
        }
        level = next;
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_head(&path, 4), Some((b"0123".to_vec(), true)));
        assert_eq!(read_head(&path, 10), Some((b"0123456789".to_vec(), false)));
        assert_eq!(read_tail(&path, 4), Some((b"6789".to_vec(), true)));
        assert_eq!(read_tail(&path, 40), Some((b"0123456789".to_vec(), false)));
        assert_eq!(read_head(dir.path(), 4), None, "a directory is not read");
        assert_eq!(read_head(&dir.path().join("missing"), 4), None);
    }

    #[test]
    fn a_fifo_is_never_opened_for_a_blocking_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert_eq!(read_head(&fifo, 4), None);
        assert_eq!(read_tail(&fifo, 4), None);
        assert_eq!(first_line(&fifo), None);
        assert!(!is_regular_file(&fifo));
    }

    #[test]
    fn walks_stop_at_the_depth_limit() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("a/b/c")).unwrap();
        for file in ["one", "a/two", "a/b/three", "a/b/c/four"] {
            fs::write(root.join(file), b"").unwrap();
        }
        let mut found: Vec<_> =
            files_within(root, 3).iter().map(|p| p.strip_prefix(root).unwrap().to_owned()).collect();
        found.sort();
        assert_eq!(found, [PathBuf::from("a/b/three"), PathBuf::from("a/two"), PathBuf::from("one")]);
        assert!(files_within(&root.join("missing"), 3).is_empty());
        assert_eq!(subdirectories(root), [root.join("a")]);
    }
}
