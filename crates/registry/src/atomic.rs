//! The one atomic durable write (temp file, fsync, rename, fsync of the directory) and private directories.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

/// Characters of the random part of a temp name.
const TEMP_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const TEMP_SUFFIX_LEN: usize = 8;
const TEMP_TRIES: usize = 8;

/// What happened after the rename; the new content is visible in both cases (RG-8.3).
#[derive(Debug)]
pub enum Durability {
    Synced,
    /// The directory fsync failed; callers may warn, never retry.
    DirectoryNotSynced(io::Error),
}

/// Replaces `target` with `bytes`: temp file beside it (0600, `O_EXCL`), fsync, rename, fsync of the directory.
/// On any failure before the rename the temp file is removed and `target` is untouched.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<Durability> {
    write_atomic_parts(target, &[bytes])
}

/// [`write_atomic`] of the concatenation of `parts`, without building it in memory first (the epilogue writes a
/// registry as the bytes before its entry, the entry, and the bytes after it).
pub fn write_atomic_parts(target: &Path, parts: &[&[u8]]) -> io::Result<Durability> {
    let dir = parent_dir(target);
    let (temp_path, file) = create_temp(target)?;
    if let Err(err) = fill_and_sync(file, parts).and_then(|()| fs::rename(&temp_path, target)) {
        let _ = fs::remove_file(&temp_path);
        return Err(err);
    }
    Ok(match File::open(dir).and_then(|d| d.sync_all()) {
        Ok(()) => Durability::Synced,
        Err(err) => Durability::DirectoryNotSynced(err),
    })
}

/// Creates `target` with `bytes` only when no file has that name (issue 24, the intake queue): temp file beside it
/// (0600), fsync, a hard link under the final name (which fails instead of replacing), the temp removed, fsync of
/// the directory. `Ok(false)` when `target` already existed: nothing was changed.
pub fn create_durable(target: &Path, bytes: &[u8]) -> io::Result<bool> {
    let dir = parent_dir(target);
    let (temp_path, file) = create_temp(target)?;
    let linked = fill_and_sync(file, &[bytes]).and_then(|()| fs::hard_link(&temp_path, target));
    let _ = fs::remove_file(&temp_path);
    match linked {
        Ok(()) => File::open(dir)?.sync_all().map(|()| true),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(err) => Err(err),
    }
}

/// Removes `target` and makes the removal durable (fsync of its directory); a missing file is no error.
pub fn remove_durable(target: &Path) -> io::Result<()> {
    match fs::remove_file(target) {
        Ok(()) => File::open(parent_dir(target))?.sync_all(),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

fn fill_and_sync(mut file: File, parts: &[&[u8]]) -> io::Result<()> {
    // The umask may have narrowed the create mode; the result must be exactly 0600 (RG-8.4).
    file.set_permissions(Permissions::from_mode(0o600))?;
    for part in parts {
        file.write_all(part)?;
    }
    file.sync_all()
}

fn create_temp(target: &Path) -> io::Result<(PathBuf, File)> {
    create_first_free(|| temp_path_for(target))
}

/// Creates the first of up to [`TEMP_TRIES`] names from `next` that does not exist yet (`O_EXCL`): a name taken
/// by someone else is a collision, so the next one is tried; any other error ends the attempt.
fn create_first_free(mut next: impl FnMut() -> PathBuf) -> io::Result<(PathBuf, File)> {
    let mut last_err = io::Error::new(io::ErrorKind::AlreadyExists, "no free temp name");
    for _ in 0..TEMP_TRIES {
        let candidate = next();
        match OpenOptions::new().write(true).create_new(true).mode(0o600).open(&candidate) {
            Ok(file) => return Ok((candidate, file)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last_err = err,
            Err(err) => return Err(err),
        }
    }
    Err(last_err)
}

/// `<target>.tmp-<8 random [a-z0-9]>`.
pub fn temp_path_for(target: &Path) -> PathBuf {
    let suffix = random_suffix();
    let mut os = target.as_os_str().to_owned();
    os.push(".tmp-");
    os.push(suffix);
    PathBuf::from(os)
}

/// Eight random `[a-z0-9]` characters. std's OS-seeded hasher keys are enough: `O_EXCL` guarantees uniqueness,
/// the randomness only keeps collisions rare. (A `rand` generator would open `/dev/random` in the static
/// epilogue, which costs more than the whole edit on a fast disk.)
fn random_suffix() -> String {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    suffix_of(RandomState::new().hash_one((std::process::id(), CALLS.fetch_add(1, Ordering::Relaxed))))
}

/// The suffix of 64 random bits: their first eight base-36 digits, lowest first, as characters of the alphabet.
fn suffix_of(mut bits: u64) -> String {
    (0..TEMP_SUFFIX_LEN)
        .map(|_| {
            let index = usize::try_from(bits % 36).unwrap_or(0);
            bits /= 36;
            char::from(TEMP_ALPHABET[index])
        })
        .collect()
}

/// True when `file_name` is exactly `<base>.tmp-<8 [a-z0-9]>`.
pub fn is_temp_of(file_name: &str, base: &str) -> bool {
    file_name.strip_prefix(base).and_then(|rest| rest.strip_prefix(".tmp-")).is_some_and(is_temp_suffix)
}

/// True when `file_name` ends in `.tmp-<8 [a-z0-9]>` after a non-empty base.
pub fn is_any_temp(file_name: &str) -> bool {
    match file_name.len().checked_sub(TEMP_SUFFIX_LEN + 5) {
        Some(cut) if cut > 0 && file_name.is_char_boundary(cut) => is_temp_of(file_name, &file_name[..cut]),
        _ => false,
    }
}

fn is_temp_suffix(suffix: &str) -> bool {
    suffix.len() == TEMP_SUFFIX_LEN && suffix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The temp leftovers of `target` in its directory (`<name>.tmp-XXXXXXXX`), by a lock-free listing.
pub fn temp_leftovers_of(target: &Path) -> Vec<PathBuf> {
    let Some(base) = target.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    list_matching(parent_dir(target), |name| is_temp_of(name, base))
}

/// Every `*.tmp-XXXXXXXX` file in `dir` (the lease directory's leftovers).
pub fn temp_leftovers_in(dir: &Path) -> Vec<PathBuf> {
    list_matching(dir, is_any_temp)
}

fn list_matching(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| e.file_name().to_str().is_some_and(&keep))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Creates every missing directory of `dir` with mode 0700; existing directories keep their mode (RG-8.5).
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        ensure_private_dir(parent)?;
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => fs::set_permissions(dir, Permissions::from_mode(0o700)),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(err) => Err(err),
    }
}

/// The directory a file lives in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// True only when `path` does not exist ("no such file"): a decision taken from state must never read an I/O
/// error, a permission error or a broken mount as absence (issue 18), so every other error answers false and the
/// caller's next operation on the path reports it.
pub fn is_absent(path: &Path) -> bool {
    matches!(std::fs::symlink_metadata(path), Err(err) if err.kind() == io::ErrorKind::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn writes_0600_and_replaces_the_inode() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.json");
        fs::write(&target, b"old").unwrap();
        fs::set_permissions(&target, Permissions::from_mode(0o644)).unwrap();
        let before = fs::metadata(&target).unwrap().ino();
        write_atomic(&target, b"new").unwrap();
        let meta = fs::metadata(&target).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_ne!(meta.ino(), before);
        assert!(temp_leftovers_of(&target).is_empty());
    }

    #[test]
    fn failure_at_rename_leaves_target_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("occupied");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("inside"), b"keep").unwrap();
        assert!(write_atomic(&target, b"x").is_err());
        assert_eq!(fs::read(target.join("inside")).unwrap(), b"keep");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("occupied")]);
    }

    #[test]
    fn missing_directory_is_an_error_not_a_creation() {
        let dir = tempfile::tempdir().unwrap();
        assert!(write_atomic(&dir.path().join("no/such/f"), b"x").is_err());
        assert!(!dir.path().join("no").exists());
    }

    #[test]
    fn temp_names_are_recognised_exactly() {
        assert!(is_temp_of("sessions.json.tmp-ab12cd34", "sessions.json"));
        assert!(!is_temp_of("sessions.json.tmp-AB12cd34", "sessions.json"));
        assert!(!is_temp_of("sessions.json.tmp-ab12cd3", "sessions.json"));
        assert!(!is_temp_of("sessions.json.XXXXXX", "sessions.json"));
        assert!(is_any_temp("x.json.tmp-ab12cd34"));
        assert!(!is_any_temp(".tmp-ab12cd34"));
        let name = temp_path_for(Path::new("/d/f.json"));
        assert!(is_temp_of(name.file_name().unwrap().to_str().unwrap(), "f.json"));
    }

    #[test]
    fn private_dirs_are_0700_and_existing_ones_keep_their_mode() {
        let root = tempfile::tempdir().unwrap();
        let existing = root.path().join("open");
        fs::create_dir(&existing).unwrap();
        fs::set_permissions(&existing, Permissions::from_mode(0o755)).unwrap();
        let deep = existing.join("a/b");
        ensure_private_dir(&deep).unwrap();
        assert_eq!(fs::metadata(&existing).unwrap().mode() & 0o777, 0o755);
        assert_eq!(fs::metadata(existing.join("a")).unwrap().mode() & 0o777, 0o700);
        assert_eq!(fs::metadata(&deep).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_taken_temp_name_is_a_collision_and_the_next_name_is_tried() {
        let dir = tempfile::tempdir().unwrap();
        let taken = dir.path().join("f.tmp-taken000");
        fs::write(&taken, b"someone else's").unwrap();
        let mut names = vec![taken.clone(), dir.path().join("f.tmp-free0000")].into_iter();
        let (path, _file) = create_first_free(|| names.next().unwrap()).unwrap();
        assert_eq!(path, dir.path().join("f.tmp-free0000"));
        assert_eq!(fs::read(&taken).unwrap(), b"someone else's", "a taken name is never opened");
    }

    #[test]
    fn only_a_collision_is_retried_and_every_name_taken_is_already_exists() {
        let dir = tempfile::tempdir().unwrap();
        // A name in a missing directory fails with NotFound: no other name can help, so none is tried.
        let mut names = vec![dir.path().join("no/f.tmp-aaaaaaaa"), dir.path().join("f.tmp-bbbbbbbb")].into_iter();
        let err = create_first_free(|| names.next().unwrap()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(!dir.path().join("f.tmp-bbbbbbbb").exists());
        let taken = dir.path().join("f.tmp-cccccccc");
        fs::write(&taken, b"").unwrap();
        let mut tries = 0;
        let err = create_first_free(|| {
            tries += 1;
            taken.clone()
        })
        .unwrap_err();
        assert_eq!((err.kind(), tries), (io::ErrorKind::AlreadyExists, TEMP_TRIES));
    }

    #[test]
    fn a_suffix_is_eight_base_36_digits_lowest_first_over_the_whole_alphabet() {
        assert_eq!(suffix_of(0), "aaaaaaaa");
        assert_eq!(suffix_of(1), "baaaaaaa");
        assert_eq!(suffix_of(35), "9aaaaaaa");
        assert_eq!(suffix_of(36), "abaaaaaa");
        assert_eq!(suffix_of(25 + 26 * 36 + 35 * 36 * 36), "z09aaaaa");
        assert_eq!(suffix_of(36u64.pow(8) - 1), "99999999");
        assert_eq!(suffix_of(36u64.pow(8)), "aaaaaaaa", "only eight digits are used");
        assert!(is_temp_suffix(&random_suffix()));
    }

    #[test]
    fn leftovers_are_exactly_the_temp_files_of_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.json");
        for name in
            ["f.json", "f.json.tmp-ab12cd34", "f.json.tmp-zz99yy88", "f.json.tmp-AB12cd34", "g.json.tmp-ab12cd34"]
        {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        fs::create_dir(dir.path().join("f.json.tmp-dir00000")).unwrap();
        let of = |names: &[&str]| names.iter().map(|n| dir.path().join(n)).collect::<Vec<_>>();
        assert_eq!(temp_leftovers_of(&target), of(&["f.json.tmp-ab12cd34", "f.json.tmp-zz99yy88"]));
        assert_eq!(
            temp_leftovers_in(dir.path()),
            of(&["f.json.tmp-ab12cd34", "f.json.tmp-zz99yy88", "g.json.tmp-ab12cd34"])
        );
        assert!(temp_leftovers_in(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn a_file_where_a_directory_belongs_is_an_error() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("file");
        fs::write(&file, b"keep").unwrap();
        assert_eq!(ensure_private_dir(&file).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert!(ensure_private_dir(&file.join("below")).is_err());
        assert_eq!(fs::read(&file).unwrap(), b"keep");
    }

    /// `new/..` exists only once `new` is made, so its own creation meets EEXIST for a directory: what a
    /// concurrent creator of the same directory causes, without a race.
    #[test]
    fn a_directory_that_appears_before_it_is_created_is_accepted() {
        let root = tempfile::tempdir().unwrap();
        ensure_private_dir(&root.path().join("new/..")).unwrap();
        assert!(root.path().join("new").is_dir());
    }

    #[test]
    fn the_parent_of_a_bare_name_is_the_current_directory() {
        assert_eq!(parent_dir(Path::new("f.json")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/d/f.json")), Path::new("/d"));
        assert_eq!(parent_dir(Path::new("d/f.json")), Path::new("d"));
    }

    #[test]
    fn only_no_such_file_is_absence() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("file");
        fs::write(&file, b"").unwrap();
        std::os::unix::fs::symlink(root.path().join("nowhere"), root.path().join("dangling")).unwrap();
        assert!(is_absent(&root.path().join("missing")));
        assert!(!is_absent(&file));
        assert!(!is_absent(&root.path().join("dangling")), "a dangling symlink is there");
        assert!(!is_absent(&file.join("below")), "ENOTDIR is an error, not absence");
    }
}
