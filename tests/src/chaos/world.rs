//! The private world of a chaos run: a slot sandbox (real baked epilogue) under umask 022, the real supervisor
//! behind a tmux wrapper that logs every call and, when armed, SIGKILLs the supervisor right after its next
//! `new-session` (of any session, or of one name prefix), fake agents that poll their control file, and a hook log
//! filled close to its trim bound.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base::SessionName;
use nix::sys::signal::Signal;
use serde_json::Value;
use tmux::TmuxApi;

use crate::fixtures::with_stdin;
use crate::sandbox::Sandbox;

/// Lines the hook log holds before the run, so every run crosses the 400-line trim (LS-8.5) a few lines in.
pub const PREFILLED_LOG_LINES: usize = 395;

/// The sandbox and the supervisor of a run.
#[derive(Debug)]
pub struct World {
    pub sb: Sandbox,
    supervisor: Option<u32>,
    /// When the supervisor was seen dead, so it is restarted after a short pause.
    died_at: Option<Instant>,
    pub supervisor_kills: usize,
    pub kills_at_spawn: usize,
}

impl World {
    /// `env` is set on the supervisor's environment (the notifier mode's variables, issue 21).
    pub fn new(limit: usize, env: &[(&str, std::ffi::OsString)]) -> Self {
        let mut sb = Sandbox::in_slot();
        for (key, value) in env {
            sb.set_env(key, value.clone());
        }
        sb.set_umask(0o022);
        sb.set_limit(&limit.to_string());
        chaos_tmux(&mut sb);
        prefill_log(&sb);
        registry::ensure_private_dir(sb.registry().parent().unwrap()).unwrap();
        // The registry exists from the start, so the sampler may count every read that is not Valid.
        fs::write(sb.registry(), registry::document::EMPTY_DOCUMENT).unwrap();
        fs::set_permissions(sb.registry(), fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(sb.root().join("seed.json"), r#"{"version":1,"sessions":{}}"#).unwrap();
        registry::ensure_private_dir(&sb.home().join(".local/state/local-webhook")).unwrap();
        let mut world = Self { sb, supervisor: None, died_at: None, supervisor_kills: 0, kills_at_spawn: 0 };
        world.supervisor = Some(world.sb.start_supervisor());
        world
    }

    fn trigger(&self) -> PathBuf {
        self.sb.root().join("kill-supervisor-at-next-spawn")
    }

    /// Arms the wrapper: the supervisor dies right after its next successful `new-session` of a name starting with
    /// `prefix` (any name when empty). False when it is armed already: one armed kill at a time, so an arm is
    /// never silently replaced by another.
    pub fn arm_kill_at_spawn(&mut self, prefix: &str) -> bool {
        let fired = self.trigger().with_extension("fired");
        if self.trigger().exists() || fired.exists() {
            return false;
        }
        fs::write(self.trigger(), prefix).unwrap();
        true
    }

    /// The kill armed for `prefix` has fired (the wrapper renamed the trigger before its SIGKILL).
    pub fn fired_for(&self, prefix: &str) -> bool {
        fs::read_to_string(self.trigger().with_extension("fired")).is_ok_and(|p| p == prefix)
    }

    /// The kill armed for `prefix` is still waiting for its `new-session`.
    pub fn armed_for(&self, prefix: &str) -> bool {
        fs::read_to_string(self.trigger()).is_ok_and(|p| p == prefix)
    }

    /// Takes back the kill armed for `prefix`, if it has not fired.
    pub fn disarm(&self, prefix: &str) {
        if self.armed_for(prefix) {
            let _ = fs::remove_file(self.trigger());
        }
    }

    pub fn kill_supervisor(&mut self) {
        if let Some(pid) = self.supervisor {
            self.sb.signal(pid, Signal::SIGKILL);
            self.supervisor_kills += 1;
        }
    }

    /// Restarts a supervisor that died (a kill, or the armed wrapper) once it has been gone for `pause`.
    pub fn keep_supervisor(&mut self, pause: Duration) {
        let Some(pid) = self.supervisor else { return };
        if self.sb.exited(pid).is_none() {
            return;
        }
        let died_at = *self.died_at.get_or_insert_with(Instant::now);
        if died_at.elapsed() >= pause {
            self.died_at = None;
            // An arm for any next spawn is taken back; one for a named session's spawn waits for that spawn across
            // restarts (a queued session's new-session comes only with its admission, issue 24).
            if fs::read_to_string(self.trigger()).is_ok_and(|prefix| prefix.is_empty()) {
                let _ = fs::remove_file(self.trigger());
            }
            if fs::remove_file(self.trigger().with_extension("fired")).is_ok() {
                self.kills_at_spawn += 1;
            }
            self.supervisor = Some(self.sb.start_supervisor());
        }
    }

    /// The pid of the supervisor last started.
    pub fn supervisor_pid(&self) -> Option<u32> {
        self.supervisor
    }

    /// After supervisor `pid` died: `name`'s side file records a launch, but `pid` never called `new-session`
    /// for it (the wrapper logs every call with its caller) and no pane of it is up: the intent of a start whose
    /// pane never existed, if `pid` wrote that record (the caller asks only for names no agent started for).
    pub fn intent_without_pane(&self, name: &str, pid: u32) -> bool {
        let calls = fs::read_to_string(self.sb.root().join("tmux.log")).unwrap_or_default();
        let (caller, session) = (format!("{pid} "), format!(" {name} "));
        let spawned = calls
            .lines()
            .any(|l| l.starts_with(&caller) && l.contains(" new-session ") && format!("{l} ").contains(&session));
        self.recorded(name) && !spawned && !self.sb.live().iter().any(|n| n == name)
    }

    /// `name`'s lease is open and no longer carries the `restartPending` mark of a restart (L-11): a supervisor
    /// consumed it (L-13).
    pub fn restart_mark_consumed(&self, name: &str) -> bool {
        self.sb.lease(name).is_some_and(|l| l["outcome"].is_null() && l.get("restartPending").is_none())
    }

    /// True when a supervisor process is running.
    pub fn supervisor_up(&self) -> bool {
        self.supervisor.is_some_and(|pid| self.sb.exited(pid).is_none())
    }

    pub fn kill_server(&self) {
        let _ = self.sb.tmux().kill_server();
    }

    /// `agent-box-webhook-spawn` for key `chaos/<label>`, whose agent is `--as <agent>`; its exit code.
    pub fn dispatch(&self, label: &str, agent: &str, number: usize) -> i32 {
        self.sb.agent(agent).control("poll");
        let mut cmd = self.sb.cmd("agent-box-webhook-spawn");
        cmd.env("LOCAL_WEBHOOK_SPAWN_KEY", format!("chaos/{label}"))
            .env("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:chaos/*")
            .env("LOCAL_WEBHOOK_SPAWN_EVENT", "issues")
            .env("LOCAL_WEBHOOK_SPAWN_COUNT", "1")
            .env("LOCAL_WEBHOOK_SPAWN_META", format!(r#"{{"number":"{number}"}}"#))
            .env("AGENT_BOX_HOOK_SESSION_ARGS", format!(r#"["--as","{agent}"]"#));
        let out = with_stdin(cmd, format!("[github] issue #{number} opened\n"));
        out.get_output().status.code().unwrap_or(-1)
    }

    /// The name webhook-spawn (or an admission from the queue) minted for `chaos/<label>`, if it is listed.
    pub fn minted(&self, label: &str) -> Option<String> {
        self.minted_in(&self.listed(), label)
    }

    /// The names the registry lists (none when it cannot be read).
    pub fn listed(&self) -> BTreeSet<String> {
        registry::read(&self.sb.registry())
            .document_or_empty()
            .map(|doc| doc.names().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// The name minted for `chaos/<label>` among `listed`.
    pub fn minted_in(&self, listed: &BTreeSet<String>, label: &str) -> Option<String> {
        let prefix = format!("hook-chaos-{label}-");
        listed.iter().find(|n| n.strip_prefix(&prefix).is_some_and(|rest| rest.len() == 4)).cloned()
    }

    /// The slots the registry's entries hold (listed, not stopped, not crashed: RG-11.5's pending set), by a
    /// lock-free read; `None` when it cannot be read.
    pub fn held_slots(&self) -> Option<usize> {
        let doc = registry::read(&self.sb.registry()).document_or_empty()?;
        Some(doc.names().filter(|n| doc.entry(n).is_some_and(|e| !e.stopped() && e.died().is_none())).count())
    }

    /// Records and admission intents in the intake queue (docs/intake.md IN-1).
    pub fn queue_len(&self) -> usize {
        let entries = fs::read_dir(self.sb.paths().queue_dir()).into_iter().flatten().flatten();
        entries
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".json") || n.ends_with(".admit")))
            .count()
    }

    /// The gen of `name`'s lease, if it has one.
    pub fn lease_gen(&self, name: &str) -> Option<String> {
        self.sb.lease(name).and_then(|l| l["gen"].as_str().map(str::to_owned))
    }

    /// Runs an `agent-box-session` verb; its exit code.
    pub fn session(&self, args: &[&str]) -> i32 {
        self.session_out(args).0
    }

    /// Runs an `agent-box-session` verb; its exit code and its stdout.
    pub fn session_out(&self, args: &[&str]) -> (i32, String) {
        let mut cmd = self.sb.cmd("agent-box-session");
        cmd.args(args).stdin(Stdio::null()).stderr(Stdio::null());
        match cmd.output() {
            Ok(out) => (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned()),
            Err(_) => (-1, String::new()),
        }
    }

    pub fn kill_pane(&self, name: &str) {
        let _ = self.sb.tmux().kill_session(&SessionName::parse(name).unwrap());
    }

    /// Makes agent `agent` exit with `status` (it polls its control file every second).
    pub fn exit_agent(&self, agent: &str, status: u32) {
        self.sb.agent(agent).control(&format!("exit-now {status}"));
    }

    /// The GEN and LIFE of the epilogue in `name`'s launch file (`… NAME 0 GEN LIFE; …`): what its pane would
    /// report, late, once the name is gone.
    pub fn late_tokens(&self, name: &str) -> Option<Late> {
        let script = fs::read_to_string(self.sb.launch_file(name)).ok()?;
        let rest = &script[script.find(&format!(" {name} 0 "))? + name.len() + 4..];
        let words: Vec<String> =
            rest[..rest.find(';')?].split_whitespace().map(|w| w.trim_matches('\'').to_owned()).collect();
        match words.as_slice() {
            [lease_gen, life] => Some(Late { lease_gen: lease_gen.clone(), life: life.clone() }),
            _ => None,
        }
    }

    /// A second life of `name`, made the way webhook-spawn makes one (its lease's gen is the entry's life; lease
    /// first, then the entry, then the spawn line), with the old pane's late epilogues arriving between the lease
    /// and the entry. Returns the new gen, or why the late epilogues touched something.
    pub fn reuse(&self, name: &str, agent: &str, late: &Late) -> Result<String, String> {
        let key = SessionName::parse(name).unwrap();
        let paths = self.sb.paths();
        let leases = lease::LeaseDir::new(paths.lease_dir());
        let log = lease::HookLog::new(paths.hook_log());
        let new_gen = leases
            .create_with_gen(&key, "github:chaos/reused", Some("1"), lease::Gen::random(), Some(&log))
            .map_err(|e| e.to_string())?;
        self.replay_late(name, late, "before the new entry existed")?;
        self.sb.agent(agent).control("poll");
        let entry = crate::fixtures::tool(serde_json::json!({
            "ephemeral": true,
            "extraArgs": ["--as", agent],
            "initialPrompt": format!("[chaos] reused {name}"),
            "life": new_gen.as_str(),
        }));
        self.sb.add_entry(name, entry);
        let record = lease::SpawnRecord {
            name: &key,
            topic: "github:chaos/reused",
            event: "issues",
            object: Some("1"),
            count: Some(1),
            intake: None,
            claim: None,
        };
        let _ = log.append_spawn(&record);
        Ok(new_gen.to_string())
    }

    /// Runs the old pane's epilogues `NAME 1 GEN LIFE` and `NAME 0 GEN LIFE` now, and checks they changed nothing
    /// of what the name holds (L-6, L-7): its registry entry, its lease (but the supervisor's heartbeat), and its
    /// hook-log lines. `when` says when in the new life they ran.
    pub fn replay_late(&self, name: &str, late: &Late, when: &str) -> Result<(), String> {
        let before = self.held_by(name);
        for status in ["1", "0"] {
            let mut cmd = Command::new(self.sb.epilogue());
            cmd.args([name, status, &late.lease_gen, &late.life]).env_clear().stdin(Stdio::null());
            let _ = cmd.output();
        }
        let after = self.held_by(name);
        // A trim may drop old lines meanwhile; what matters is that no line of this name appeared.
        let new_line = after.2.iter().find(|l| !before.2.contains(l));
        if before.0 != after.0 || before.1 != after.1 || new_line.is_some() {
            return Err(format!(
                "late epilogues of gen {} life {} {when} changed {name}: entry {:?} -> {:?}, lease {:?} -> {:?}, new line {new_line:?}",
                late.lease_gen, late.life, before.0, after.0, before.1, after.1
            ));
        }
        Ok(())
    }

    /// What a late epilogue must leave alone: the entry, the lease without its heartbeat, the name's log lines.
    fn held_by(&self, name: &str) -> (Option<Value>, Option<Value>, Vec<String>) {
        let mut lease = self.sb.lease(name);
        if let Some(Value::Object(fields)) = &mut lease {
            fields.remove("lastSeenAt");
        }
        let text = fs::read_to_string(self.sb.paths().hook_log()).unwrap_or_default();
        let needle = format!("\"name\":\"{name}\"");
        let lines = text.lines().filter(|l| l.contains(&needle)).map(str::to_owned).collect();
        (self.sb.entry(name), lease, lines)
    }

    /// `{"used": U, "max": M}` of `agent-box-session capacity`: the used count.
    pub fn used(&self) -> Option<usize> {
        let out = self.sb.cmd("agent-box-session").arg("capacity").stdin(Stdio::null()).output().ok()?;
        let value: Value = serde_json::from_slice(&out.stdout).ok()?;
        value["used"].as_u64().and_then(|u| usize::try_from(u).ok())
    }

    /// The launch id the side file records for `name`.
    pub fn recorded(&self, name: &str) -> bool {
        let side: Option<Value> = fs::read(self.sb.side_file(name)).ok().and_then(|b| serde_json::from_slice(&b).ok());
        side.is_some_and(|s| s["launchSessionId"].is_string())
    }
}

/// The GEN and LIFE arguments of an old pane's epilogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Late {
    pub lease_gen: String,
    pub life: String,
}

/// The counting wrapper of 80 I10, which also SIGKILLs its caller after a successful `new-session` while the
/// trigger file exists and the call names a session starting with the prefix the file holds (any session when it
/// is empty); claimed with one atomic rename, so it fires once.
fn chaos_tmux(sb: &mut Sandbox) {
    let real = PathBuf::from(sb.env_var("AGENT_BOX_TMUX_BIN").unwrap());
    let wrapper = sb.root().join("bin/tmux-chaos");
    let trigger = sb.root().join("kill-supervisor-at-next-spawn");
    let text = format!(
        "#!/bin/sh\nprintf '%s %s\\n' \"$PPID\" \"$*\" >> '{log}'\n'{real}' \"$@\"; s=$?\ncase \" $* \" in *\" new-session \"*) if [ \"$s\" -eq 0 ] && [ -e '{t}' ]; then p=$(cat '{t}' 2>/dev/null); case \" $* \" in *\" $p\"*) mv '{t}' '{fired}' 2>/dev/null && kill -KILL \"$PPID\" ;; esac; fi ;; esac\nexit $s\n",
        log = sb.root().join("tmux.log").display(),
        real = real.display(),
        t = trigger.display(),
        fired = trigger.with_extension("fired").display(),
    );
    fs::write(&wrapper, text).unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    sb.set_env("AGENT_BOX_TMUX_BIN", wrapper);
}

/// Old end lines of other names, so the run's own appends cross the trim bound.
fn prefill_log(sb: &Sandbox) {
    let state = sb.state_dir();
    registry::ensure_private_dir(&state).unwrap();
    let line = |i: usize| {
        format!(
            "{{\"at\":\"2001-01-01T00:00:00Z\",\"what\":\"end\",\"name\":\"hook-prefill-{i:04}\",\"how\":\"swept\",\"lifeSeconds\":null,\"outcome\":null}}\n"
        )
    };
    let text: String = (0..PREFILLED_LOG_LINES).map(line).collect();
    let path = state.join("hook-sessions.jsonl");
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
}
