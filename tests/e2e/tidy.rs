//! Tidy checks that run under plain `cargo test`: rules about the source tree that no compiler enforces.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

mod ids;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Every `.rs` file of the workspace that git tracks or would track, except the pinned outputs in `golden/`.
fn rust_files() -> Vec<PathBuf> {
    let root = workspace_root();
    let files = agent_box_tests::tree::files(&root, &["*.rs", ":(exclude)golden/**"]).unwrap();
    files.into_iter().map(|rel| root.join(rel)).collect()
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace_root()).unwrap().display().to_string()
}

#[test]
fn every_rust_file_starts_with_a_module_doc_line() {
    let offenders: Vec<String> = rust_files()
        .into_iter()
        .filter(|p| !fs::read_to_string(p).unwrap().starts_with("//!"))
        .map(|p| relative(&p))
        .collect();
    assert!(offenders.is_empty(), "files without a leading //! line saying what they are for: {offenders:#?}");
}

/// True when a line starts a process from a string literal naming tmux (`Command::new("tmux")`,
/// `Command::new("/usr/bin/tmux")`).
fn starts_tmux_from_a_literal(line: &str) -> bool {
    if line.trim_start().starts_with("//") {
        return false;
    }
    line.match_indices("Command::new(\"").any(|(at, pattern)| {
        let literal = &line[at + pattern.len()..];
        let end = literal.find('"').unwrap_or(literal.len());
        literal[..end].rsplit('/').next() == Some("tmux")
    })
}

#[test]
fn only_the_tmux_crate_runs_tmux() {
    let tmux_crate = workspace_root().join("crates/tmux");
    let offenders: Vec<String> = rust_files()
        .into_iter()
        .filter(|p| !p.starts_with(&tmux_crate))
        .filter(|p| fs::read_to_string(p).unwrap().lines().any(starts_tmux_from_a_literal))
        .map(|p| relative(&p))
        .collect();
    assert!(offenders.is_empty(), "only crates/tmux may start tmux (80 I7): {offenders:#?}");
}

#[test]
fn the_tmux_literal_detector_works() {
    // Split literals, so this file does not trip its own check.
    assert!(starts_tmux_from_a_literal(concat!("let c = Command::new(", r#""tmux");"#)));
    assert!(starts_tmux_from_a_literal(concat!("std::process::Command::new(", r#""/usr/bin/tmux").arg("ls")"#)));
    assert!(!starts_tmux_from_a_literal(r#"Command::new("tmuxinator")"#));
    assert!(!starts_tmux_from_a_literal(r#"Command::new(&config.bin)"#));
}

/// The dependencies a manifest declares, by section (`dependencies`, `dev-dependencies`, `build-dependencies`),
/// as the names code uses (`fd-lock` is `fd_lock`; a renamed workspace dependency by its key, `registry`).
fn declared_dependencies(manifest: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut declared = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
        } else if section.ends_with("dependencies") && !line.is_empty() && !line.starts_with('#') {
            let key = line.split(['=', '.']).next().unwrap_or("").trim();
            declared.push((section.clone(), key.replace('-', "_")));
        }
    }
    declared
}

/// True when Rust `source` names crate `name` as a path outside comment lines: `name::…`, `use name`, or
/// `extern crate name`.
fn names_crate(source: &str, name: &str) -> bool {
    let code: String = source.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let source = code.as_str();
    let boundary =
        |text: &str, at: usize| text[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric() && c != '_');
    [format!("{name}::"), format!("use {name};"), format!("use {name} "), format!("extern crate {name}")]
        .iter()
        .any(|needle| source.match_indices(needle.as_str()).any(|(at, _)| boundary(source, at)))
}

/// The declared dependencies of a crate no source of its kind names: `[dependencies]` and `[build-dependencies]`
/// must be used by `src/` (and `build.rs`), `[dev-dependencies]` by the tests, examples, benches or `src/`.
fn unused_dependencies(manifest: &str, sources: &[(PathBuf, String)], crate_dir: &Path) -> Vec<String> {
    let under = |dirs: &[&str]| -> Vec<&str> {
        sources
            .iter()
            .filter(|(p, _)| dirs.iter().any(|d| p.starts_with(crate_dir.join(d))))
            .map(|(_, text)| text.as_str())
            .collect()
    };
    let normal = under(&["src", "build.rs"]);
    let dev = under(&["src", "tests", "examples", "benches", "e2e"]);
    declared_dependencies(manifest)
        .into_iter()
        .filter(|(section, name)| {
            let texts = if section == "dev-dependencies" { &dev } else { &normal };
            !texts.iter().any(|text| names_crate(text, name))
        })
        .map(|(section, name)| format!("[{section}] {name}"))
        .collect()
}

/// The workspace members (the `members` list of the root manifest).
fn members() -> Vec<PathBuf> {
    let manifest = fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
    let list = manifest.split("members = [").nth(1).unwrap().split(']').next().unwrap();
    list.split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| workspace_root().join(m))
        .collect()
}

#[test]
fn no_crate_declares_a_dependency_it_does_not_use() {
    let sources: Vec<(PathBuf, String)> =
        rust_files().into_iter().map(|p| (p.clone(), fs::read_to_string(&p).unwrap())).collect();
    let mut offenders = Vec::new();
    for member in members() {
        let manifest = fs::read_to_string(member.join("Cargo.toml")).unwrap();
        for unused in unused_dependencies(&manifest, &sources, &member) {
            offenders.push(format!("{}: {unused}", relative(&member)));
        }
    }
    assert!(offenders.is_empty(), "dependencies declared and never named in code; remove them: {offenders:#?}");
}

#[test]
fn the_unused_dependency_detector_works() {
    let dir = Path::new("/w/crates/x");
    let manifest = "[package]\nname = \"x\"\n\n[dependencies]\nregistry.workspace = true\nfd-lock = \"4\"\nserde = { workspace = true }\n\n[dev-dependencies]\ntempfile.workspace = true\n";
    let src = |text: &str| (dir.join("src/lib.rs"), text.to_owned());
    let used = [
        src("use registry::Paths;\nfn f() { let _ = fd_lock::RwLock::new(1); }\nuse serde::Serialize;"),
        (dir.join("tests/t.rs"), "tempfile::tempdir()".to_owned()),
    ];
    assert!(unused_dependencies(manifest, &used, dir).is_empty());
    let unused = [
        src("use registry::Paths; // not_fd_lock::x\nstruct Xserde;"),
        (dir.join("src/other.rs"), "fn tempdir() {}".to_owned()),
    ];
    assert_eq!(
        unused_dependencies(manifest, &unused, dir),
        ["[dependencies] fd_lock", "[dependencies] serde", "[dev-dependencies] tempfile"],
        "a crate name inside another identifier does not count"
    );
}
