//! The registry lock across processes (10-registry §15 item 4, 80 RG01–RG06 at library level).

use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn registry_in(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("sessions.json")
}

#[test]
fn twenty_four_gated_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    let gate = dir.path().join("gate");
    let children: Vec<_> = (0..24)
        .map(|i| {
            example_cmd("rmw")
                .arg(&registry)
                .arg(format!("w{i}"))
                .arg("1")
                .env("RMW_GATE", &gate)
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    fs::write(&gate, b"").unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let doc = registry::Document::parse(&fs::read(&registry).unwrap()).unwrap();
    assert_eq!(doc.names().count(), 24);
}

#[test]
fn a_held_lock_blocks_a_writer_until_release() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    fs::write(&registry, b"{\"version\":1,\"sessions\":{}}\n").unwrap();
    let holder = Holder::ours(&registry);
    assert_blocked_then_writes(&registry, holder_release(holder));
}

#[test]
fn a_python_fcntl_flock_holder_excludes_us_too() {
    if Command::new("python3").arg("-V").output().is_err() {
        eprintln!("SKIP python-holder: python3 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    fs::write(&registry, b"{\"version\":1,\"sessions\":{}}\n").unwrap();
    let script = "import fcntl,sys\nf=open(sys.argv[1]+'.lock','a')\nfcntl.flock(f,fcntl.LOCK_EX)\nprint('held',flush=True)\nsys.stdin.read()\n";
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(script).arg(&registry);
    let holder = Holder::start(cmd);
    assert_blocked_then_writes(&registry, holder_release(holder));
}

fn holder_release(holder: Holder) -> impl FnOnce() {
    move || holder.release()
}

fn assert_blocked_then_writes(registry: &std::path::Path, release: impl FnOnce()) {
    let before = fs::read(registry).unwrap();
    let mut writer = example_cmd("rmw")
        .arg(registry)
        .args(["x", "1"])
        .env("REGISTRY_LOCK_WAIT", "10")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let lock = registry.with_extension("json.lock");
    agent_box_tests::wait_until("the writer to poll the lock", || fds_of_pid_on(writer.id(), &lock) == 1);
    assert!(writer.try_wait().unwrap().is_none(), "the writer must still be waiting");
    assert_eq!(fs::read(registry).unwrap(), before, "nothing written while the lock is held");
    release();
    assert!(writer.wait().unwrap().success());
    assert_eq!(read_counter(registry, "x"), 1);
}

#[test]
fn a_wedged_holder_means_refusal_within_the_bound_and_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    fs::write(&registry, b"{\"version\":1,\"sessions\":{}}\n").unwrap();
    let inode = fs::metadata(&registry).unwrap().ino();
    let _holder = Holder::ours(&registry);
    let start = Instant::now();
    let out = example_cmd("rmw").arg(&registry).args(["x", "1"]).env("REGISTRY_LOCK_WAIT", "1").output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10), "liveness: a 1 s bound must not hang");
    assert_eq!(out.status.code(), Some(75));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("(another writer held it for 1s); nothing was changed and it is safe to try again"));
    assert_eq!(fs::read(&registry).unwrap(), b"{\"version\":1,\"sessions\":{}}\n");
    assert_eq!(fs::metadata(&registry).unwrap().ino(), inode);
    assert!(registry::atomic::temp_leftovers_of(&registry).is_empty());
}

#[test]
fn a_missing_directory_is_created_0700_and_files_are_0600() {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let registry = dir.path().join("config/agent-box/sessions.json");
    assert!(example_cmd("rmw").arg(&registry).args(["x", "1"]).stdout(Stdio::null()).status().unwrap().success());
    let mode = |p: &std::path::Path| fs::metadata(p).unwrap().mode() & 0o777;
    assert_eq!(mode(&dir.path().join("config")), 0o700);
    assert_eq!(mode(&dir.path().join("config/agent-box")), 0o700);
    assert_eq!(mode(&registry), 0o600);
    assert_eq!(mode(&registry.with_extension("json.lock")), 0o600);
    assert_eq!(mode(dir.path()), 0o755, "an existing directory keeps its mode");
}

#[test]
fn a_read_only_directory_refuses_and_leaves_no_temp() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf");
    fs::create_dir(&conf).unwrap();
    let registry = conf.join("sessions.json");
    fs::write(&registry, b"{\"version\":1,\"sessions\":{}}\n").unwrap();
    fs::write(conf.join("sessions.json.lock"), b"").unwrap();
    chown_tree(dir.path());
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o500)).unwrap();
    let mut cmd = example_cmd("rmw");
    cmd.arg(&registry).args(["x", "1"]).env("REGISTRY_LOCK_WAIT", "0");
    let out = unprivileged(cmd).output().unwrap();
    assert!(matches!(out.status.code(), Some(1 | 75)), "{out:?}");
    assert_eq!(fs::read(&registry).unwrap(), b"{\"version\":1,\"sessions\":{}}\n");
    let leftovers: Vec<_> = fs::read_dir(&conf).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 2, "{leftovers:?}");
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o700)).unwrap();
}

/// Puts `fd` at descriptor number `at` in the child (without close-on-exec).
fn pass_fd(cmd: &mut Command, fd: i32, at: i32) {
    agent_box_tests::held::pass_fd(cmd, fd, at);
}

#[test]
fn an_inherited_lock_is_adopted_and_stays_with_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    let lock = registry.with_extension("json.lock");
    registry::with_file_lock(&lock, Duration::ZERO, false, |held| {
        let mut cmd = example_cmd("rmw");
        cmd.arg(&registry).args(["x", "1"]).env("AGENT_BOX_REGISTRY_LOCK_FD", "7").env("REGISTRY_LOCK_WAIT", "2");
        pass_fd(&mut cmd, held.raw_fd(), 7);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(read_counter(&registry, "x"), 1);
        assert!(!lock_is_free(&lock), "the parent's lock survives the child");
    })
    .unwrap();
    assert!(lock_is_free(&lock));
}

#[test]
fn a_bogus_inherited_fd_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    fs::write(&registry, b"{\"version\":1,\"sessions\":{}}\n").unwrap();
    fs::write(registry.with_extension("json.lock"), b"").unwrap();
    let devnull = fs::File::open("/dev/null").unwrap();
    for open_on_devnull in [false, true] {
        let mut cmd = example_cmd("rmw");
        cmd.arg(&registry).args(["x", "1"]).env("AGENT_BOX_REGISTRY_LOCK_FD", "9");
        if open_on_devnull {
            pass_fd(&mut cmd, devnull.as_raw_fd(), 9);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(75));
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains("AGENT_BOX_REGISTRY_LOCK_FD=9 is not an open descriptor of"), "{stderr}");
        assert_eq!(fs::read(&registry).unwrap(), b"{\"version\":1,\"sessions\":{}}\n");
    }
}

/// RG-7.6: a descriptor of another file, even beside the lock file on the same device, is not the lock.
#[test]
fn an_inherited_fd_of_another_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    fs::write(&registry, b"{\"version\":1,\"sessions\":{}}\n").unwrap();
    fs::write(registry.with_extension("json.lock"), b"").unwrap();
    let neighbour = fs::File::open(&registry).unwrap();
    let mut cmd = example_cmd("rmw");
    cmd.arg(&registry).args(["x", "1"]).env("AGENT_BOX_REGISTRY_LOCK_FD", "9");
    pass_fd(&mut cmd, neighbour.as_raw_fd(), 9);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(75));
    assert!(String::from_utf8_lossy(&out.stderr).contains("AGENT_BOX_REGISTRY_LOCK_FD=9 is not an open descriptor of"));
    assert_eq!(fs::read(&registry).unwrap(), b"{\"version\":1,\"sessions\":{}}\n");
}

/// RG-7.6: an inherited descriptor of the lock file is locked before the section runs; one the parent does not
/// hold the lock on, while another holder does, is refused after the wait, and nothing is written.
#[test]
fn an_inherited_fd_without_the_lock_waits_for_it_and_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    let lock = registry.with_extension("json.lock");
    registry::with_file_lock(&lock, Duration::ZERO, false, |_| {
        let unlocked = fs::File::open(&lock).unwrap();
        let mut cmd = example_cmd("rmw");
        cmd.arg(&registry).args(["x", "1"]).env("AGENT_BOX_REGISTRY_LOCK_FD", "7").env("REGISTRY_LOCK_WAIT", "0");
        pass_fd(&mut cmd, unlocked.as_raw_fd(), 7);
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(75), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(!registry.exists() || read_counter(&registry, "x") == 0);
    })
    .unwrap();
}

/// RG-7.6 item 3: a front end (here `rmw`) makes an inherited lock descriptor close-on-exec first thing, so no
/// child it starts can keep the parent's lock alive.
#[test]
fn a_front_end_makes_an_inherited_lock_descriptor_close_on_exec() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    let gate = dir.path().join("gate");
    registry::with_file_lock(&registry.with_extension("json.lock"), Duration::ZERO, false, |held| {
        let mut cmd = example_cmd("rmw");
        cmd.arg(&registry).args(["x", "1"]).env("AGENT_BOX_REGISTRY_LOCK_FD", "7").env("RMW_GATE", &gate);
        pass_fd(&mut cmd, held.raw_fd(), 7);
        let mut child = cmd.stdout(Stdio::null()).spawn().unwrap();
        let fdinfo = format!("/proc/{}/fdinfo/7", child.id());
        agent_box_tests::wait_until("the child's fd 7 to be close-on-exec", || close_on_exec(&fdinfo));
        fs::write(&gate, b"").unwrap();
        assert!(child.wait().unwrap().success());
    })
    .unwrap();
}

/// Whether `/proc/PID/fdinfo/FD` shows `O_CLOEXEC` in its octal `flags:` line.
fn close_on_exec(fdinfo: &str) -> bool {
    let text = fs::read_to_string(fdinfo).unwrap_or_default();
    let flags = text.lines().find_map(|line| line.strip_prefix("flags:")).map(str::trim);
    flags.and_then(|octal| u32::from_str_radix(octal, 8).ok()).is_some_and(|f| f & 0o2_000_000 != 0)
}

#[test]
fn no_child_inherits_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    let mut child = registry::with_lock(&registry, Duration::ZERO, registry::LockPolicy::SUPERVISOR, |_| {
        Command::new("sleep").arg("30").stdin(Stdio::null()).spawn().unwrap()
    })
    .unwrap();
    let start = Instant::now();
    let status = example_cmd("regctl").arg("lock-at").arg(&registry).arg("2").status().unwrap();
    assert!(status.success() && start.elapsed() < Duration::from_secs(2), "a leaked descriptor keeps the lock");
    assert_eq!(fds_of_pid_on(child.id(), &registry.with_extension("json.lock")), 0);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn lock_at_never_adopts_an_inherited_descriptor_or_reads_the_wait_variable() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(&dir);
    let lock = registry.with_extension("json.lock");
    registry::with_file_lock(&lock, Duration::ZERO, false, |held| {
        let mut cmd = example_cmd("regctl");
        cmd.arg("lock-at").arg(&registry).arg("0");
        cmd.env("AGENT_BOX_REGISTRY_LOCK_FD", "7").env("REGISTRY_LOCK_WAIT", "3600");
        pass_fd(&mut cmd, held.raw_fd(), 7);
        let start = Instant::now();
        let status = cmd.status().unwrap();
        assert_eq!(status.code(), Some(75), "adopting fd 7 would have let it through");
        assert!(start.elapsed() < Duration::from_secs(2), "REGISTRY_LOCK_WAIT must be ignored");
    })
    .unwrap();
    let missing = dir.path().join("nope/sessions.json");
    let status = example_cmd("regctl").arg("lock-at").arg(&missing).arg("0").status().unwrap();
    assert_eq!(status.code(), Some(75));
    assert!(!dir.path().join("nope").exists(), "lock_at never creates a directory");
}
