//! The exact shape of the rendered pane script (§12.5) for each harness and each GEN form.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use serde_json::json;

use super::*;
use crate::launch::{GenArg, command_line, render_script};

const CRASH: &str = "echo \"[agent-box] the agent exited with status $s; this shell is kept for inspection - exit \
                     it to restart the session\"";

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

/// The command line of a rendered script: what follows the env-store loader, which every script starts with.
fn command(bytes: Vec<u8>) -> String {
    let script = text(bytes);
    let end = "unset _abx_f _abx_w _abx_a _abx_l _abx_k _abx_v\n";
    let at = script.find(end).unwrap_or_else(|| panic!("no loader in {script}"));
    assert!(script.starts_with("_abx_f="), "{script}");
    script[at + end.len()..].to_owned()
}

#[test]
fn default_shape_with_every_gen_form() {
    let fx = Fixture::new();
    let config = fx.config();
    let entry = json!({"agent": "claude", "boxSessionId": BID, "skipPermissions": false, "remoteControl": false,
        "extraArgs": ["--model", "opus[1m]"], "initialPrompt": "it's done"});
    let p = fx.prepare_with(&config, entry, &SideFile::default()).unwrap();
    let (claude, m) = (fx.bin("claude"), fx.bin("mark-stopped"));
    let cmd = format!("{claude} --session-id {BID} --model 'opus[1m]' -- 'it'\\''s done'");
    let pm = p.post_mortem.display().to_string();
    for (gen_arg, g) in [
        (GenArg::Gen(GEN.to_owned()), format!(" {GEN}")),
        (GenArg::NoLease, " -".to_owned()),
        (GenArg::Omitted, String::new()),
    ] {
        let expected = format!(
            "{cmd}; s=$?; if [ \"$s\" -eq 0 ]; then {m} main 0{g}; else {m} main \"$s\"{g}; {CRASH}; exec {pm}; fi"
        );
        assert_eq!(command(render_script(&config, &p, &gen_arg)), expected, "{gen_arg:?}");
    }
}

#[test]
fn env_exec_prefixes_the_harness_only() {
    let mut fx = Fixture::new();
    let env_exec = fx.dir.path().join("wrap pers/ab-env-exec");
    executable(&env_exec, "#!/bin/sh\nexec \"$@\"\n");
    fx.set("AGENT_BOX_ENV_EXEC", env_exec.clone());
    let config = fx.config();
    let p = fx.prepare_with(&config, json!({"agent": "tool", "extraArgs": ["a=b"]}), &SideFile::default()).unwrap();
    let script = command(render_script(&config, &p, &GenArg::NoLease));
    let prefix = format!("'{}' {} 'a=b'; s=$?;", env_exec.display(), fx.bin("tool"));
    assert!(script.starts_with(&prefix), "{script}");
    assert_eq!(script.matches("ab-env-exec").count(), 1);
}

#[test]
fn shell_always_parks() {
    let fx = Fixture::new();
    let config = fx.config();
    let p = fx.prepare_with(&config, json!({"agent": "shell", "extraArgs": ["-l"]}), &SideFile::default()).unwrap();
    let (shell, m) = (fx.bin("shell"), fx.bin("mark-stopped"));
    assert_eq!(command(render_script(&config, &p, &GenArg::Gen(GEN.into()))), format!("{shell} -l; {m} main 0 {GEN}"));
    assert_eq!(command(render_script(&config, &p, &GenArg::NoLease)), format!("{shell} -l; {m} main 0 -"));
    assert_eq!(command(render_script(&config, &p, &GenArg::Omitted)), format!("{shell} -l; {m} main 0"));
}

#[test]
fn hostile_paths_are_quoted_everywhere() {
    let mut fx = Fixture::new();
    let epilogue = fx.dir.path().join("ep i'logue/mark-stopped");
    executable(&epilogue, "#!/bin/sh\n");
    let login = fx.dir.path().join("$(pm)/sh");
    executable(&login, "#!/bin/sh\n");
    fx.set("AGENT_BOX_MARK_STOPPED", epilogue.clone()).set("SHELL", login.clone());
    fx.set("AGENT_BOX_AGENT_BINS", format!("tool={}", fx.bin("tool")));
    let config = fx.config();
    let p = fx.prepare_with(&config, json!({"agent": "tool"}), &SideFile::default()).unwrap();
    let script = command(render_script(&config, &p, &GenArg::Gen("x y".into())));
    let m = format!("'{}'", epilogue.display().to_string().replace('\'', "'\\''"));
    assert!(script.contains(&format!("then {m} main 0 'x y';")), "{script}");
    assert!(script.ends_with(&format!("; exec '{}'; fi", login.display())), "{script}");
}

#[test]
fn the_print_command_line_quotes_the_launch_file() {
    assert_eq!(
        command_line(Path::new("/h/.local/state/agent-box/session/main.launch")),
        b"/bin/sh /h/.local/state/agent-box/session/main.launch"
    );
    assert_eq!(command_line(Path::new("/a b/x.launch")), b"/bin/sh '/a b/x.launch'");
    assert_eq!(crate::launch::tmux_command(Path::new("/a b/x")), [OsString::from("/bin/sh"), OsString::from("/a b/x")]);
}

/// The shells a pane's `/bin/sh` may be: dash (Debian), bash in POSIX mode (NixOS), busybox when present.
fn shells() -> Vec<Vec<&'static str>> {
    let mut shells = vec![vec!["/bin/sh"]];
    for (path, args) in [("/bin/bash", vec!["/bin/bash", "--posix"]), ("/bin/busybox", vec!["/bin/busybox", "sh"])] {
        if Path::new(path).exists() {
            shells.push(args);
        }
    }
    shells
}

/// Runs the loader over `store` with `shell`, then `env -0`: the environment the agent would start with.
fn loaded(shell: &[&str], dir: &Path, store: &[u8], own: &[(String, String)]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let path = dir.join("cfg dir/env");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, store).unwrap();
    let mut script = Vec::new();
    crate::launch::script::push_loader(&mut script, &path, own);
    script.extend_from_slice(b"exec env -0\n");
    let file = dir.join("loader.sh");
    fs::write(&file, &script).unwrap();
    let mut cmd = Command::new(shell[0]);
    cmd.args(&shell[1..]).arg(&file).env_clear().env("PATH", "/usr/bin:/bin");
    cmd.env("UNIT_ONLY", "unit").env("OVERRIDDEN", "unit");
    cmd.envs(own.iter().map(|(k, v)| (k, v)));
    let output = cmd.stdin(Stdio::null()).output().unwrap();
    assert!(output.stderr.is_empty(), "{shell:?}: {}", String::from_utf8_lossy(&output.stderr));
    let mut vars = BTreeMap::new();
    for item in output.stdout.split(|&b| b == 0).filter(|i| !i.is_empty()) {
        let eq = item.iter().position(|&b| b == b'=').unwrap();
        vars.insert(item[..eq].to_vec(), item[eq + 1..].to_vec());
    }
    for shell_own in [&b"PWD"[..], b"SHLVL", b"_", b"OLDPWD"] {
        vars.remove(shell_own);
    }
    vars
}

/// Issue 20: every shape of line the two old writers and a hand edit leave, and values with spaces, `=`, quotes,
/// `$()`, backquotes and a trailing backslash, reach the agent byte for byte, never evaluated, exactly as the
/// Rust reader reads them; reserved and pane-own keys never change; the loader leaves no variable behind.
#[test]
fn the_loader_exports_the_store_byte_for_byte_and_evaluates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pwned = dir.path().join("pwned");
    let mut store = format!(
        "{}\n{}\nV1=a b=c \"d\" 'e' $(touch {p}) `touch {p}` \\\nV2=\"  padded  \"\nV3='single $(touch {p})'\n\
         V4=\\\"back\\\\slash\\\\\n  V5 = spaced key\t\nV6=*\nV7=~root\nV8=$HOME\nV9=a\tb\nV10=crlf\r\nV12=\"\n\
         V13=''\nV14=\nOVERRIDDEN=store\nAGENT_BOX_SESSION_ID=evil\nLOCAL_WEBHOOK_SESSION=evil\n_abx_l=evil\n\
         export X=1\n1BAD=x\n# C=1\nnot a pair\nV6=last wins\n",
        registry::envstore::HEADER[0],
        registry::envstore::HEADER[1],
        p = pwned.display()
    )
    .into_bytes();
    store.extend_from_slice(b"V11=\xff\xfe\nLAST=no newline at end");
    let mut parsed = registry::envstore::Store::parse(&store);
    for (i, value) in [&b" lead"[..], b"trail\\", b"\"q\"", b"'", b"$(touch x) `y` \\"].iter().enumerate() {
        parsed.set(&format!("W{i}"), value);
    }
    let store = parsed.to_bytes();
    let own =
        vec![("AGENT_BOX_SESSION_ID".to_owned(), "own".to_owned()), ("LOCAL_WEBHOOK_SESSION".into(), "own".into())];
    let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = [("PATH", "/usr/bin:/bin"), ("UNIT_ONLY", "unit")]
        .iter()
        .chain(&[("AGENT_BOX_SESSION_ID", "own"), ("LOCAL_WEBHOOK_SESSION", "own")])
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    for (key, value) in registry::envstore::Store::parse(&store).pairs() {
        if !registry::envstore::is_reserved(&key) && !own.iter().any(|(k, _)| *k == key) {
            expected.insert(key.into_bytes(), value);
        }
    }
    assert_eq!(
        expected[&b"V1"[..]],
        format!("a b=c \"d\" 'e' $(touch {p}) `touch {p}` \\", p = pwned.display()).as_bytes()
    );
    assert_eq!(expected[&b"V6"[..]], b"last wins");
    assert_eq!(expected[&b"OVERRIDDEN"[..]], b"store", "the store comes after the unit");
    for shell in shells() {
        assert_eq!(loaded(&shell, dir.path(), &store, &own), expected, "{shell:?}");
    }
    assert!(!pwned.exists(), "a value was evaluated");
}

#[test]
fn a_missing_or_unreadable_store_starts_the_pane_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut script = Vec::new();
    crate::launch::script::push_loader(&mut script, &dir.path().join("no such/env"), &[]);
    script.extend_from_slice(b"echo started\n");
    let file = dir.path().join("l.sh");
    fs::write(&file, &script).unwrap();
    let out = Command::new("/bin/sh").arg(&file).stdin(Stdio::null()).output().unwrap();
    assert_eq!((out.stdout.as_slice(), out.stderr.as_slice()), (&b"started\n"[..], &b""[..]));
    fs::create_dir_all(dir.path().join("no such/env")).unwrap();
    let out = Command::new("/bin/sh").arg(&file).stdin(Stdio::null()).output().unwrap();
    assert_eq!((out.stdout.as_slice(), out.stderr.as_slice()), (&b"started\n"[..], &b""[..]), "a directory");
}
