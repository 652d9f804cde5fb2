//! Second test of SUP-12.6a: whole launch files for hostile entries, run by `/bin/sh <file>` with a recording
//! fake harness and a recording fake epilogue; both must receive exactly the intended argv, and nothing injected
//! may run.

use std::process::{Command, Stdio};

use serde_json::json;

use super::*;
use crate::launch::{GenArg, render_script};
use base::quote::quote;

/// Where the recorders write, and the marker an injection would create.
struct Recorders {
    harness_record: PathBuf,
    epilogue_record: PathBuf,
    control: PathBuf,
    marker: PathBuf,
}

fn sh_word(path: &Path) -> String {
    String::from_utf8(quote(path.as_os_str().as_bytes())).unwrap()
}

/// A sh script that writes its arguments NUL-separated to `record`, then exits with the status in `control`.
fn recorder(record: &Path, control: Option<&Path>) -> String {
    let exit = control.map_or("exit 0".to_owned(), |c| format!("exit \"$(cat {})\"", sh_word(c)));
    format!("#!/bin/sh\nprintf '%s\\0' \"$@\" > {}\npwd > {}.cwd\n{exit}\n", sh_word(record), sh_word(record))
}

/// Installs the recording harness as every harness, the recording epilogue, an env-exec wrapper and `PM`.
fn hostile_fixture() -> (Fixture, Recorders) {
    let mut fx = Fixture::new();
    let root = fx.dir.path().join("rec ords #'x");
    let rec = Recorders {
        harness_record: root.join("harness"),
        epilogue_record: root.join("epilogue"),
        control: root.join("status"),
        marker: fx.dir.path().join("marker"),
    };
    for harness in ["claude", "tool", "shell"] {
        executable(&fx.bins.join(harness), &recorder(&rec.harness_record, Some(&rec.control)));
    }
    let epilogue = fx.dir.path().join("ep i'logue $(x)/agent-box-mark-stopped");
    executable(&epilogue, &recorder(&rec.epilogue_record, None));
    let env_exec = fx.dir.path().join("env exec/ab-env-exec");
    executable(&env_exec, "#!/bin/sh\nexec \"$@\"\n");
    // No `shell` pair, so `PM` is `$SHELL` = /bin/true and the crash branch ends at once.
    let bins = format!("claude={} tool={}", fx.bin("claude"), fx.bin("tool"));
    fx.set("AGENT_BOX_MARK_STOPPED", epilogue).set("AGENT_BOX_ENV_EXEC", env_exec).set("SHELL", "/bin/true");
    fx.set("AGENT_BOX_AGENT_BINS", bins);
    (fx, rec)
}

fn read_record(path: &Path) -> Vec<Vec<u8>> {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    let mut items: Vec<Vec<u8>> = bytes.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
    assert_eq!(items.pop(), Some(Vec::new()), "NUL-terminated");
    items
}

/// Renders, writes SCRIPT + "\n" and runs it as the pane would; returns sh's exit code and stdout.
fn run(fx: &Fixture, rec: &Recorders, prepared: &Prepared, gen_arg: &GenArg, status: u8) -> (i32, String) {
    for stale in [&rec.harness_record, &rec.epilogue_record] {
        let _ = fs::remove_file(stale);
    }
    fs::create_dir_all(rec.control.parent().unwrap()).unwrap();
    fs::write(&rec.control, status.to_string()).unwrap();
    let mut script = render_script(&fx.config(), prepared, gen_arg);
    script.push(b'\n');
    let launch_file = fx.dir.path().join("state dir/main.launch");
    fs::create_dir_all(launch_file.parent().unwrap()).unwrap();
    fs::write(&launch_file, &script).unwrap();
    let output =
        Command::new("/bin/sh").arg(&launch_file).current_dir(&prepared.cwd).stdin(Stdio::null()).output().unwrap();
    assert!(output.stderr.is_empty(), "sh complained: {}", String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), String::from_utf8(output.stdout).unwrap())
}

fn intended_args(prepared: &Prepared) -> Vec<Vec<u8>> {
    prepared.argv[1..].iter().map(|a| a.as_bytes().to_vec()).collect()
}

fn epilogue_args(status: &str, gen_arg: &GenArg) -> Vec<Vec<u8>> {
    let mut args = vec![b"main".to_vec(), status.as_bytes().to_vec()];
    match gen_arg {
        GenArg::Gen(g) => args.push(g.as_bytes().to_vec()),
        GenArg::NoLease => args.push(b"-".to_vec()),
        GenArg::Omitted => {}
    }
    args
}

fn hostile_entry(agent: &str, rec: &Recorders, cwd: &Path) -> serde_json::Value {
    let m = rec.marker.display();
    let prompt = format!(
        "say \"hi\" $(touch {m}) `touch {m}` 'q' \\ $HOME ~ *\nsecond line; touch {m} # not a comment\r\tend 😀"
    );
    json!({
        "agent": agent,
        "boxSessionId": BID,
        "initialPrompt": prompt,
        "extraArgs": ["--model", format!("'; touch {m}; '"), "a=b", "", "-n", "$(touch x)", "--add-dir", "~/x $HOME"],
        "workingDirectory": cwd.to_str().unwrap(),
        "remoteControlName": "rc'; touch x",
    })
}

#[test]
fn hostile_launch_files_deliver_exact_argv_to_harness_and_epilogue() {
    let (fx, rec) = hostile_fixture();
    let cwd = fx.dir.path().join("work dir #1 it's");
    fs::create_dir_all(&cwd).unwrap();
    let config = fx.config();
    let claude = fx.prepare_with(&config, hostile_entry("claude", &rec, &cwd), &SideFile::default()).unwrap();
    assert_eq!(claude.cwd, cwd);
    assert!(claude.prompt.contains("$(touch"), "the prompt is the kickoff prompt");
    let cases = [
        (0u8, GenArg::Gen(GEN.to_owned()), "0"),
        (0, GenArg::NoLease, "0"),
        (0, GenArg::Omitted, "0"),
        (3, GenArg::Gen(GEN.to_owned()), "3"),
        (3, GenArg::NoLease, "3"),
        (3, GenArg::Omitted, "3"),
    ];
    for (status, gen_arg, reported) in cases {
        let (code, stdout) = run(&fx, &rec, &claude, &gen_arg, status);
        assert_eq!(read_record(&rec.harness_record), intended_args(&claude), "harness, status {status} {gen_arg:?}");
        assert_eq!(read_record(&rec.epilogue_record), epilogue_args(reported, &gen_arg), "epilogue {gen_arg:?}");
        let cwd_seen = fs::read_to_string(rec.harness_record.with_file_name("harness.cwd")).unwrap();
        assert_eq!(cwd_seen.trim_end_matches('\n'), cwd.to_str().unwrap());
        assert_eq!(code, 0, "the epilogue or the post-mortem shell (/bin/true) ends the script");
        let crash_line = format!(
            "[agent-box] the agent exited with status {status}; this shell is kept for inspection - exit it to restart \
             the session\n"
        );
        assert_eq!(stdout, if status == 0 { String::new() } else { crash_line });
    }
    assert!(!rec.marker.exists(), "an injected command ran");
    assert!(!cwd.join("x").exists() && !fx.dir.path().join("x").exists());
}

#[test]
fn hostile_generic_and_shell_sessions_run_exactly() {
    let (fx, rec) = hostile_fixture();
    let cwd = fx.dir.path().join("w #'");
    fs::create_dir_all(&cwd).unwrap();
    let config = fx.config();
    let tool = fx.prepare_with(&config, hostile_entry("tool", &rec, &cwd), &SideFile::default()).unwrap();
    assert_eq!(tool.argv.last().map(|a| a.as_bytes()), Some(tool.prompt.as_bytes()), "generic: prompt last");
    let (code, _) = run(&fx, &rec, &tool, &GenArg::Gen(GEN.into()), 0);
    assert_eq!((code, read_record(&rec.harness_record)), (0, intended_args(&tool)));
    assert_eq!(read_record(&rec.epilogue_record), epilogue_args("0", &GenArg::Gen(GEN.into())));

    let mut with_shell = config.clone();
    with_shell.agent_bins.push(("shell".into(), fx.bins.join("shell")));
    let shell = fx.prepare_with(&with_shell, hostile_entry("shell", &rec, &cwd), &SideFile::default()).unwrap();
    let (code, stdout) = run(&fx, &rec, &shell, &GenArg::NoLease, 7);
    assert_eq!(read_record(&rec.harness_record), intended_args(&shell), "shell: extraArgs only");
    assert_eq!(read_record(&rec.epilogue_record), epilogue_args("0", &GenArg::NoLease), "a shell always parks");
    assert_eq!((code, stdout.as_str()), (0, ""));
    assert!(!rec.marker.exists());
}
