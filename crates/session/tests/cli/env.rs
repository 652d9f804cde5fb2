//! `env ls|set|rm` against files shaped exactly as the old CLI and the settings daemon leave them (issue 20
//! item 3): headers, quoting, a malformed line, a key written twice, the daemon's `.env.<random>` temp beside the
//! store; and eight concurrent writers of different keys, none lost.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use agent_box_tests::Sandbox;
use agent_box_tests::fixtures::{predicate, session, with_stdin};
use registry::envstore::{HEADER, Store};

fn store(sb: &Sandbox) -> PathBuf {
    sb.home().join(".config/agent-box/env")
}

fn set(sb: &Sandbox, key: &str, value: &[u8]) {
    let mut cmd = sb.cmd("agent-box-session");
    cmd.args(["env", "set", key]);
    with_stdin(cmd, value.to_vec()).code(0).stdout(predicate::str::contains("applies at the next start"));
}

/// The settings daemon's file: its header, then its pairs in order; and its temp file, left by a killed write.
fn daemon_file(sb: &Sandbox) -> String {
    let text = format!("{}\n{}\nGH_TOKEN=ghp_daemon\nANTHROPIC_API_KEY=sk-ant-daemon\n", HEADER[0], HEADER[1]);
    fs::create_dir_all(store(sb).parent().unwrap()).unwrap();
    fs::write(store(sb), &text).unwrap();
    fs::write(store(sb).with_file_name(".env.k3j9x_2a"), "GH_TOKEN=half-written\n").unwrap();
    text
}

#[test]
fn a_daemon_file_is_kept_line_by_line_and_its_temp_left_alone() {
    let sb = Sandbox::new();
    let before = daemon_file(&sb);
    set(&sb, "OPENAI_API_KEY", b"sk-openai value with spaces ");
    let after = fs::read_to_string(store(&sb)).unwrap();
    assert_eq!(after, format!("{before}OPENAI_API_KEY=\"sk-openai value with spaces \"\n"));
    assert_eq!(fs::read_to_string(store(&sb).with_file_name(".env.k3j9x_2a")).unwrap(), "GH_TOKEN=half-written\n");
    let pairs = Store::parse(after.as_bytes()).pairs();
    assert_eq!(pairs["OPENAI_API_KEY"], b"sk-openai value with spaces ");
    assert_eq!(pairs["GH_TOKEN"], b"ghp_daemon");
    assert_eq!(fs::metadata(store(&sb)).unwrap().permissions().mode() & 0o777, 0o600);
    session(&sb, &["env", "ls"]).code(0).stdout("ANTHROPIC_API_KEY\nGH_TOKEN\nOPENAI_API_KEY\n");
    // What the daemon then does with our file: it reads each line stripped, the value after the first `=`.
    for line in after.lines().filter(|l| !l.starts_with('#')) {
        let (key, value) = line.trim().split_once('=').unwrap();
        assert!(registry::envstore::is_key(key.trim()), "{line}");
        assert!(!value.contains('\n'));
    }
}

#[test]
fn an_old_cli_file_with_quotes_a_bad_line_and_a_key_twice_round_trips() {
    let sb = Sandbox::new();
    let old = format!(
        "{}\n{}\nA=\"double quoted\"\nB='single=quoted'\nnot a pair at all\nexport C=x\nA=second wins\n",
        HEADER[0], HEADER[1]
    );
    fs::create_dir_all(store(&sb).parent().unwrap()).unwrap();
    fs::write(store(&sb), &old).unwrap();
    session(&sb, &["env", "ls", "--json"]).code(0).stdout(predicate::str::contains("\"A\",\n    \"B\"\n"));
    set(&sb, "B", b"new b");
    let after = fs::read_to_string(store(&sb)).unwrap();
    assert_eq!(after, old.replace("B='single=quoted'", "B=new b"), "every other line kept byte for byte");
    session(&sb, &["env", "rm", "A"]).code(0).stdout(predicate::str::contains("A removed from"));
    let after = fs::read_to_string(store(&sb)).unwrap();
    assert!(!after.contains("A="), "both lines of a key written twice go: {after}");
    assert!(after.contains("not a pair at all\nexport C=x\n"), "malformed lines are kept: {after}");
    assert_eq!(Store::parse(after.as_bytes()).keys(), ["B"]);
}

#[test]
fn a_bad_key_or_value_writes_nothing_and_a_value_is_never_printed() {
    let sb = Sandbox::new();
    let before = daemon_file(&sb);
    for (key, value, text) in [
        ("1X", &b"v"[..], "is not a variable name"),
        ("X", b"two\nlines", "cannot contain a newline"),
        ("X", b"nul\0byte", "cannot contain a NUL"),
        ("AGENT_BOX_X", b"v", "is reserved"),
    ] {
        let mut cmd = sb.cmd("agent-box-session");
        cmd.args(["env", "set", key]);
        with_stdin(cmd, value.to_vec()).code(2).stderr(predicate::str::contains(text)).stdout("");
    }
    assert_eq!(fs::read_to_string(store(&sb)).unwrap(), before);
    let out = session(&sb, &["env", "set", "SCRIPTED", "argv-secret-1"]).code(0);
    out.stderr(predicate::str::contains("visible to every local user in ps"));
    let all = [session(&sb, &["env", "ls"]), session(&sb, &["env", "ls", "--json"]), session(&sb, &["env", "rm", "X"])];
    for out in all {
        let output = out.get_output();
        for secret in ["argv-secret-1", "ghp_daemon", "sk-ant-daemon"] {
            assert!(!String::from_utf8_lossy(&output.stdout).contains(secret));
            assert!(!String::from_utf8_lossy(&output.stderr).contains(secret));
        }
    }
}

#[test]
fn eight_concurrent_writers_of_different_keys_lose_none() {
    let sb = Sandbox::new();
    daemon_file(&sb);
    for round in 0..3 {
        let children: Vec<_> = (0..8)
            .map(|i| {
                let mut cmd = sb.cmd("agent-box-session");
                cmd.args(["env", "set", &format!("K{round}_{i}")]).stdin(std::process::Stdio::piped());
                let mut child = cmd.stdout(std::process::Stdio::null()).spawn().unwrap();
                use std::io::Write;
                child.stdin.take().unwrap().write_all(format!("v{round}-{i}").as_bytes()).unwrap();
                child
            })
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let pairs = Store::parse(&fs::read(store(&sb)).unwrap()).pairs();
        for i in 0..8 {
            assert_eq!(pairs[&format!("K{round}_{i}")], format!("v{round}-{i}").as_bytes(), "round {round}");
        }
        assert_eq!(pairs["GH_TOKEN"], b"ghp_daemon");
    }
    assert!(store(&sb).with_file_name("env.lock").exists());
}

/// On a terminal the value is asked for without echo: through a pty (`script`), the typed value never comes back.
#[test]
fn on_a_terminal_the_value_is_asked_for_without_echo() {
    use std::io::{Read, Write};
    if !std::path::Path::new("/usr/bin/script").exists() {
        eprintln!("SKIP: no /usr/bin/script to give the CLI a terminal");
        return;
    }
    let sb = Sandbox::new();
    let program = agent_box_tests::bins::bin("agent-box-session");
    let mut child = std::process::Command::new("/usr/bin/script")
        .args(["-qec", &format!("{} env set TTY_KEY", program.display()), "/dev/null"])
        .env_clear()
        .envs(sb.env_pairs())
        .current_dir(sb.home())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 256];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
            let _ = tx.send(all.clone());
        }
    });
    let prompted = |seen: &[u8]| String::from_utf8_lossy(seen).contains("(not echoed, Enter ends it): ");
    let mut seen = Vec::new();
    while !prompted(&seen) {
        seen = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the prompt");
    }
    // The prompt comes only once echo is off, so what is typed after it is never echoed.
    child.stdin.take().unwrap().write_all(b"tty-secret-42\n").unwrap();
    assert!(child.wait().unwrap().success());
    while let Ok(more) = rx.recv_timeout(std::time::Duration::from_millis(500)) {
        seen = more;
    }
    let shown = String::from_utf8_lossy(&seen);
    assert!(shown.contains("TTY_KEY set in") && !shown.contains("tty-secret-42"), "{shown}");
    assert_eq!(Store::parse(&fs::read(store(&sb)).unwrap()).pairs()["TTY_KEY"], b"tty-secret-42");
}
