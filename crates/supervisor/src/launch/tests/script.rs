//! The exact shape of the rendered pane script (§12.5) for each harness and each GEN form.

use serde_json::json;

use super::*;
use crate::launch::{GenArg, command_line, render_script};

const CRASH: &str = "echo \"[agent-box] the agent exited with status $s; this shell is kept for inspection - exit \
                     it to restart the session\"";

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
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
        assert_eq!(text(render_script(&config, &p, &gen_arg)), expected, "{gen_arg:?}");
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
    let script = text(render_script(&config, &p, &GenArg::NoLease));
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
    assert_eq!(text(render_script(&config, &p, &GenArg::Gen(GEN.into()))), format!("{shell} -l; {m} main 0 {GEN}"));
    assert_eq!(text(render_script(&config, &p, &GenArg::NoLease)), format!("{shell} -l; {m} main 0 -"));
    assert_eq!(text(render_script(&config, &p, &GenArg::Omitted)), format!("{shell} -l; {m} main 0"));
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
    let script = text(render_script(&config, &p, &GenArg::Gen("x y".into())));
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
