//! Snapshot trees: comparing a fresh render with `golden/` and making `golden/` equal to it (70 GD-6, GD-7).
//! Paths are relative to the snapshot root and always use `/`, so reports read the same on every machine.
//! A `scope` tells which part of `golden/` a check owns (the nix step owns `nix/`, the main check the rest).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Relative path (with `/`) → file bytes.
pub type Tree = BTreeMap<String, Vec<u8>>;

/// Which relative paths of a snapshot directory a check owns.
pub type Scope<'a> = &'a dyn Fn(&str) -> bool;

/// Per-file and total line budgets of the diff output (GD-6.3).
const LINES_PER_FILE: usize = 200;
const LINES_IN_ALL: usize = 2000;

/// The top-level file of `golden/` that is documentation, never a snapshot (GD-6.2).
pub const README: &str = "README.md";

/// Every regular file under `dir`, recursively; a missing directory is an empty tree.
pub fn read_tree(dir: &Path) -> io::Result<Tree> {
    let mut tree = Tree::new();
    match fs::metadata(dir) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(tree),
        Err(err) => return Err(err),
        Ok(_) => {}
    }
    collect(dir, "", &mut tree)?;
    Ok(tree)
}

fn collect(dir: &Path, prefix: &str, tree: &mut Tree) -> io::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<io::Result<_>>()?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect(&entry.path(), &rel, tree)?;
        } else if kind.is_file() {
            tree.insert(rel, fs::read(entry.path())?);
        }
    }
    Ok(())
}

/// Replaces `dir` with exactly the files of `tree` (directories created as needed).
pub fn write_tree(dir: &Path, tree: &Tree) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    fs::create_dir_all(dir)?;
    for (rel, bytes) in tree {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(path, bytes)?;
    }
    Ok(())
}

/// The result of comparing a render with the snapshots it is checked against.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Drift {
    /// Files present on both sides whose bytes differ.
    pub differ: Vec<String>,
    /// Files rendered but not in `golden/` (a new artefact without its snapshot).
    pub missing: Vec<String>,
    /// Files in `golden/` that the render no longer produces (stale snapshots).
    pub unexpected: Vec<String>,
    /// The human report: a diff per differing file, then one line per missing or unexpected file.
    pub report: String,
}

impl Drift {
    pub fn is_clean(&self) -> bool {
        self.differ.is_empty() && self.missing.is_empty() && self.unexpected.is_empty()
    }

    /// `golden: <d> differ, <m> missing, <u> unexpected` and the bless hint (GD-6.5).
    pub fn summary(&self) -> String {
        format!(
            "golden: {} differ, {} missing, {} unexpected\n{}\n",
            self.differ.len(),
            self.missing.len(),
            self.unexpected.len(),
            BLESS_HINT
        )
    }
}

/// The line that tells how to accept a new render (GD-6.5).
pub const BLESS_HINT: &str =
    "golden: to accept the new output run: cargo xtask golden --bless  (then review and commit golden/)";

/// Compares the in-scope files of `golden_dir` with those of `rendered_dir` (GD-6.2, GD-6.3).
pub fn compare(golden_dir: &Path, rendered_dir: &Path, scope: Scope<'_>) -> io::Result<Drift> {
    let golden = scoped(read_tree(golden_dir)?, scope);
    let rendered = scoped(read_tree(rendered_dir)?, scope);
    let mut drift = Drift::default();
    let mut budget = LINES_IN_ALL;
    for (rel, bytes) in &rendered {
        match golden.get(rel) {
            None => drift.missing.push(rel.clone()),
            Some(old) if old != bytes => {
                let diff = unified_diff(&golden_dir.join(rel), &rendered_dir.join(rel), rel, old, bytes);
                budget = append_budgeted(&mut drift.report, &diff, budget);
                drift.differ.push(rel.clone());
            }
            Some(_) => {}
        }
    }
    drift.unexpected = golden.keys().filter(|rel| !rendered.contains_key(*rel)).cloned().collect();
    for rel in &drift.missing {
        let _ = writeln!(drift.report, "golden: missing golden/{rel} (rendered, but no snapshot exists)");
    }
    for rel in &drift.unexpected {
        let _ = writeln!(drift.report, "golden: unexpected golden/{rel} (a snapshot that nothing renders)");
    }
    Ok(drift)
}

/// Makes the in-scope part of `golden_dir` equal to `rendered_dir`: writes new and changed files, deletes
/// stale ones (never `README.md` at the top), and returns one `A|M|D <path>` line per change (GD-7).
pub fn bless(golden_dir: &Path, rendered_dir: &Path, scope: Scope<'_>) -> io::Result<Vec<String>> {
    let golden = scoped(read_tree(golden_dir)?, scope);
    let rendered = scoped(read_tree(rendered_dir)?, scope);
    let mut changes = Vec::new();
    for (rel, bytes) in &rendered {
        let mark = match golden.get(rel) {
            None => "A",
            Some(old) if old != bytes => "M",
            Some(_) => continue,
        };
        let path = golden_dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&path, bytes)?;
        changes.push(format!("{mark} golden/{rel}"));
    }
    for rel in golden.keys().filter(|rel| !rendered.contains_key(*rel)) {
        fs::remove_file(golden_dir.join(rel))?;
        remove_empty_parents(golden_dir, &golden_dir.join(rel));
        changes.push(format!("D golden/{rel}"));
    }
    changes.sort_by(|a, b| a[2..].cmp(&b[2..]));
    Ok(changes)
}

/// The files whose bytes differ between two renders, or that only one of them has (GD-7's stability test).
pub fn unstable(first: &Tree, second: &Tree) -> Vec<String> {
    let mut names: Vec<String> =
        first.iter().filter(|(rel, bytes)| second.get(*rel) != Some(*bytes)).map(|(rel, _)| rel.clone()).collect();
    names.extend(second.keys().filter(|rel| !first.contains_key(*rel)).cloned());
    names.sort();
    names
}

/// A leaked environment path in a rendered file (GD-6.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    pub file: String,
    pub offset: usize,
    pub needle: String,
}

impl std::fmt::Display for Leak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "golden: leak: rendered/{} holds '{}' at byte offset {}", self.file, self.needle, self.offset)
    }
}

/// The first occurrence of each needle in each file of `tree`.
pub fn leaks(tree: &Tree, needles: &[String]) -> Vec<Leak> {
    let mut found = Vec::new();
    for (rel, bytes) in tree {
        for needle in needles.iter().filter(|n| !n.is_empty()) {
            if let Some(offset) = find(bytes, needle.as_bytes()) {
                found.push(Leak { file: rel.clone(), offset, needle: needle.clone() });
            }
        }
    }
    found
}

/// The first index of `needle` in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn scoped(tree: Tree, scope: Scope<'_>) -> Tree {
    tree.into_iter().filter(|(rel, _)| rel != README && scope(rel)).collect()
}

fn remove_empty_parents(root: &Path, file: &Path) {
    let mut dir: Option<PathBuf> = file.parent().map(Path::to_path_buf);
    while let Some(current) = dir {
        if current == root || fs::remove_dir(&current).is_err() {
            break;
        }
        dir = current.parent().map(Path::to_path_buf);
    }
}

/// `diff -u` between the two files with `golden/<rel>` and `rendered/<rel>` labels; without a `diff`
/// program, the first differing line and both lengths.
fn unified_diff(old_path: &Path, new_path: &Path, rel: &str, old: &[u8], new: &[u8]) -> String {
    let out = Command::new("diff")
        .arg("-u")
        .arg("--label")
        .arg(format!("golden/{rel}"))
        .arg("--label")
        .arg(format!("rendered/{rel}"))
        .arg(old_path)
        .arg(new_path)
        .output();
    match out {
        Ok(out) if out.status.code() == Some(1) => String::from_utf8_lossy(&out.stdout).into_owned(),
        _ => first_difference(rel, old, new),
    }
}

fn first_difference(rel: &str, old: &[u8], new: &[u8]) -> String {
    let line = old.split(|b| *b == b'\n').zip(new.split(|b| *b == b'\n')).take_while(|(a, b)| a == b).count() + 1;
    format!(
        "golden/{rel} and rendered/{rel} differ from line {line} (golden {} bytes, rendered {} bytes)\n",
        old.len(),
        new.len()
    )
}

/// Appends at most `LINES_PER_FILE` lines of `diff` within the remaining total `budget`; returns what is left.
fn append_budgeted(report: &mut String, diff: &str, budget: usize) -> usize {
    let lines: Vec<&str> = diff.lines().collect();
    let allowed = lines.len().min(LINES_PER_FILE).min(budget);
    for line in &lines[..allowed] {
        report.push_str(line);
        report.push('\n');
    }
    if allowed < lines.len() {
        let _ = writeln!(report, "golden: … {} more diff line(s) not shown", lines.len() - allowed);
    }
    budget - allowed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> Tree {
        files.iter().map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec())).collect()
    }

    #[test]
    fn compare_classifies_and_bless_repairs() {
        let tmp = tempfile::tempdir().unwrap();
        let (golden, rendered) = (tmp.path().join("golden"), tmp.path().join("rendered"));
        write_tree(
            &golden,
            &tree(&[("README.md", "doc"), ("a.txt", "one\n"), ("old/x.txt", "x"), ("nix/n.json", "1")]),
        )
        .unwrap();
        write_tree(&rendered, &tree(&[("a.txt", "two\n"), ("b.txt", "b")])).unwrap();
        let not_nix = |rel: &str| !rel.starts_with("nix/");
        let drift = compare(&golden, &rendered, &not_nix).unwrap();
        assert_eq!(drift.differ, ["a.txt"]);
        assert_eq!(drift.missing, ["b.txt"]);
        assert_eq!(drift.unexpected, ["old/x.txt"]);
        assert!(drift.report.contains("--- golden/a.txt"), "{}", drift.report);
        assert!(drift.report.contains("+two"), "{}", drift.report);
        let changes = bless(&golden, &rendered, &not_nix).unwrap();
        assert_eq!(changes, ["M golden/a.txt", "A golden/b.txt", "D golden/old/x.txt"]);
        assert!(!golden.join("old").exists());
        assert_eq!(fs::read(golden.join("README.md")).unwrap(), b"doc");
        assert_eq!(fs::read(golden.join("nix/n.json")).unwrap(), b"1");
        assert!(compare(&golden, &rendered, &not_nix).unwrap().is_clean());
        assert!(bless(&golden, &rendered, &not_nix).unwrap().is_empty());
    }

    #[test]
    fn budgets_cut_long_diffs() {
        let diff: String = (0..300).map(|i| format!("+{i}\n")).collect();
        let mut report = String::new();
        let left = append_budgeted(&mut report, &diff, 2000);
        assert_eq!(left, 1800);
        assert_eq!(report.lines().count(), 201);
        assert!(report.ends_with("100 more diff line(s) not shown\n"));
    }

    #[test]
    fn unstable_and_leaks() {
        let a = tree(&[("x", "1"), ("y", "/tmp/abc")]);
        let b = tree(&[("x", "2"), ("y", "/tmp/abc"), ("z", "")]);
        assert_eq!(unstable(&a, &b), ["x", "z"]);
        let found = leaks(&a, &["/tmp/".to_owned()]);
        assert_eq!(found, [Leak { file: "y".into(), offset: 0, needle: "/tmp/".into() }]);
    }

    #[test]
    fn first_difference_names_the_line() {
        assert!(first_difference("p", b"a\nb\n", b"a\nc\n").contains("from line 2"));
    }
}
