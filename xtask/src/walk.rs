//! A small recursive file listing, so the commands need no directory-walking crate.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Every non-directory entry under `root`, as paths relative to `root`, sorted. A directory whose relative
/// path `prune` accepts is not entered. Symbolic links are listed but never followed, so a `result` link
/// into the Nix store cannot drag the whole store into the walk.
pub fn files(root: &Path, prune: impl Fn(&Path) -> bool) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    collect(root, Path::new(""), &prune, &mut found)?;
    found.sort();
    Ok(found)
}

fn collect(root: &Path, rel: &Path, prune: &dyn Fn(&Path) -> bool, found: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(root.join(rel))? {
        let entry = entry?;
        let child = rel.join(entry.file_name());
        if !entry.file_type()?.is_dir() {
            found.push(child);
        } else if !prune(&child) {
            collect(root, &child, prune, found)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_files_relative_and_sorted_and_prunes() {
        let root = std::env::temp_dir().join(format!("xtask-walk-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::create_dir_all(root.join("skip")).unwrap();
        fs::write(root.join("z.txt"), "").unwrap();
        fs::write(root.join("a/b/c.nix"), "").unwrap();
        fs::write(root.join("skip/d.nix"), "").unwrap();

        let listed = files(&root, |rel| rel == Path::new("skip"));
        fs::remove_dir_all(&root).unwrap();
        assert_eq!(listed.unwrap(), vec![PathBuf::from("a/b/c.nix"), PathBuf::from("z.txt")]);
    }

    #[test]
    fn missing_root_is_not_found() {
        let err = files(Path::new("/nonexistent/xtask-walk"), |_| false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
