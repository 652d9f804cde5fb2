//! Self-heal and seeding across processes (10-registry §15 items 6 and 7).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use crate::common::*;

fn heal(registry: &Path, seed: Option<&Path>, passes: u32) -> Vec<String> {
    let mut cmd = example_cmd("regctl");
    cmd.arg("heal").arg(registry).arg(seed.map_or("-".into(), |s| s.as_os_str().to_owned())).arg(passes.to_string());
    run_lines(cmd)
}

fn run_lines(mut cmd: Command) -> Vec<String> {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

fn quarantines(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("sessions.json.corrupt-"))
        .collect();
    found.sort();
    found
}

#[test]
fn invalid_registry_is_quarantined_and_reseeded_once() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("sessions.json");
    let seed = dir.path().join("seed.json");
    fs::write(&seed, b"{\"version\":1,\"sessions\":{\"main\":{\"agent\":\"tool\"}}}\n").unwrap();
    fs::write(&registry, b"not json").unwrap();
    fs::set_permissions(&registry, fs::Permissions::from_mode(0o640)).unwrap();
    let lines = heal(&registry, Some(&seed), 2);
    let kept = quarantines(dir.path());
    assert_eq!(kept.len(), 1);
    assert_eq!(fs::read(&kept[0]).unwrap(), b"not json");
    assert_eq!(fs::metadata(&kept[0]).unwrap().mode() & 0o777, 0o640, "the rename keeps the mode");
    let stamp = kept[0].file_name().unwrap().to_str().unwrap().trim_start_matches("sessions.json.corrupt-").to_owned();
    assert!(stamp.len() == 15 && stamp.as_bytes()[8] == b'-', "{stamp}");
    assert_eq!(fs::read(&registry).unwrap(), fs::read(&seed).unwrap());
    let messages: Vec<_> = lines.iter().filter(|l| l.starts_with("message ")).collect();
    assert_eq!(messages.len(), 1, "{lines:?}");
    assert!(messages[0].contains("is not a valid sessions.json (not JSON"));
    assert!(messages[0].contains("and wrote a fresh registry"));
    assert_eq!(lines.iter().filter(|l| *l == "document yes").count(), 2);
}

#[test]
fn two_quarantines_in_one_second_get_a_suffix() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("sessions.json");
    for _ in 0..3 {
        fs::write(&registry, b"[]").unwrap();
        heal(&registry, None, 1);
    }
    let kept = quarantines(dir.path());
    assert_eq!(kept.len(), 3);
    let names: Vec<String> = kept.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(names.iter().any(|n| n.ends_with("-2")), "{names:?}");
    assert_eq!(fs::read(&registry).unwrap(), registry::document::EMPTY_DOCUMENT);
}

#[test]
fn unreadable_registry_is_never_quarantined_and_warned_once_per_streak() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf");
    fs::create_dir(&conf).unwrap();
    let registry = conf.join("sessions.json");
    fs::write(&registry, b"{\"version\":1,\"sessions\":{\"main\":{}}}").unwrap();
    chown_tree(dir.path());
    fs::set_permissions(&registry, fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = example_cmd("regctl");
    cmd.arg("heal").arg(&registry).arg("-").arg("3");
    let lines = run_lines(unprivileged(cmd));
    assert_eq!(lines.iter().filter(|l| l.starts_with("message cannot read")).count(), 1, "{lines:?}");
    assert_eq!(lines.iter().filter(|l| *l == "document no").count(), 3);
    assert!(quarantines(&conf).is_empty());
    fs::set_permissions(&registry, fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(fs::read(&registry).unwrap(), b"{\"version\":1,\"sessions\":{\"main\":{}}}");
    assert!(heal(&dir.path().join("conf"), None, 1).contains(&"document no".to_string()), "a directory is unreadable");
}

#[test]
fn a_failed_quarantine_writes_nothing_and_warns_once() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf");
    fs::create_dir(&conf).unwrap();
    let registry = conf.join("sessions.json");
    fs::write(&registry, b"{broken").unwrap();
    fs::write(conf.join("sessions.json.lock"), b"").unwrap();
    chown_tree(dir.path());
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o500)).unwrap();
    let mut cmd = example_cmd("regctl");
    cmd.arg("heal").arg(&registry).arg("-").arg("3");
    let lines = run_lines(unprivileged(cmd));
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o700)).unwrap();
    let warnings: Vec<_> = lines.iter().filter(|l| l.contains("could not be set aside")).collect();
    assert_eq!(warnings.len(), 1, "{lines:?}");
    assert_eq!(fs::read(&registry).unwrap(), b"{broken");
    assert!(quarantines(&conf).is_empty());
    assert_eq!(fs::read_dir(&conf).unwrap().count(), 2, "no temp, no new file");
}

#[test]
fn seeding_waits_for_the_lock_holder() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("sessions.json");
    let seed = dir.path().join("seed.json");
    fs::write(&seed, b"{\"version\":1,\"sessions\":{\"main\":{}}}").unwrap();
    let holder = Holder::ours(&registry);
    let lines = heal(&registry, Some(&seed), 1);
    assert!(lines.iter().any(|l| l.starts_with("lock-refused")), "{lines:?}");
    assert!(!registry.exists(), "no repair without the lock");
    holder.release();
    heal(&registry, Some(&seed), 1);
    assert_eq!(fs::read(&registry).unwrap(), fs::read(&seed).unwrap());
}

#[test]
fn a_bad_seed_gives_the_empty_document_and_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("sessions.json");
    let seed = dir.path().join("seed.json");
    fs::write(&seed, b"{\"version\":1,\"sessions\":[]}").unwrap();
    let lines = heal(&registry, Some(&seed), 2);
    let messages: Vec<_> = lines.iter().filter(|l| l.starts_with("message ")).collect();
    assert_eq!(messages.len(), 1, "{lines:?}");
    assert!(messages[0].contains(&format!("ignoring seed {}: not a sessions.json", seed.display())));
    assert_eq!(fs::read(&registry).unwrap(), registry::document::EMPTY_DOCUMENT);
    fs::write(&registry, b"").unwrap();
    heal(&registry, Some(&dir.path().join("absent.json")), 1);
    assert_eq!(fs::read(&registry).unwrap(), registry::document::EMPTY_DOCUMENT, "an absent seed too");
}

#[test]
fn an_existing_registry_is_never_replaced_by_the_seed() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("sessions.json");
    let seed = dir.path().join("seed.json");
    fs::write(&seed, b"{\"version\":1,\"sessions\":{\"main\":{}}}").unwrap();
    fs::write(&registry, b"{\"version\":1,\"sessions\":{\"x\":{}}}").unwrap();
    heal(&registry, Some(&seed), 1);
    assert_eq!(fs::read(&registry).unwrap(), b"{\"version\":1,\"sessions\":{\"x\":{}}}");
}

/// RG-12.4: only a taken quarantine name is retried; a registry that cannot be moved at all fails at once with
/// the reason.
#[test]
fn a_quarantine_that_cannot_move_the_registry_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let err = registry::heal::quarantine(&dir.path().join("sessions.json")).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}
