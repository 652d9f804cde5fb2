//! The operator's path on a box without Nix (issue 11), end to end: install into a temporary prefix and HOME
//! (`--no-unit`, with the debug build and an epilogue baked for that HOME, through the library `cargo xtask
//! install` uses), start the installed supervisor with only the installed environment file (plus the private
//! tmux socket every test uses), add a session with the installed wrapper, see it live, attach to it from a pane
//! of a second tmux server, then uninstall and find only the user's data left. Also: both user units (the tmux
//! server's and the supervisor's, 75-upgrades UP-2.4) pass `systemd-analyze verify`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use agent_box_install::{self as install, Inputs, Layout, Sources, read_env_file};
use agent_box_tests::bins::bin;
use agent_box_tests::{Sandbox, wait_until};
use base::SessionName;
use nix::sys::signal::Signal;
use tmux::{NewSession, Tmux, TmuxApi, TmuxConfig};

/// The test knobs of the private tmux server: the only variables a test adds to the installed environment.
const KNOBS: [&str; 3] = ["AGENT_BOX_TMUX_SOCKET", "AGENT_BOX_TMUX_TMPDIR", "AGENT_BOX_TMUX_CONF"];

fn inputs(sb: &Sandbox, unit: bool) -> Inputs {
    let prefix = sb.root().join("prefix");
    // The sandbox's fake harnesses are on this PATH, so `claude` resolves from PATH in installed mode.
    let inherited = format!("{}:/usr/bin:/bin", sb.root().join("bin").display());
    Inputs {
        user: "agent".into(),
        home: sb.home().to_path_buf(),
        path: install::unit_path(&prefix, &inherited),
        prefix,
        tmux: PathBuf::from(sb.env_var("AGENT_BOX_TMUX_BIN").unwrap()),
        agents: vec!["claude".into(), "shell".into()],
        default_agent: "claude".into(),
        unit,
        queue: install::QueueBounds::default(),
    }
}

fn sources(sb: &Sandbox) -> Sources {
    Sources {
        supervisor: bin("agent-box-supervisor"),
        session: bin("agent-box-session"),
        webhook_spawn: bin("agent-box-webhook-spawn"),
        epilogue: sb.epilogue(),
        // The unit's Documentation= names this page; systemd-analyze verify looks it up through MANPATH.
        man_pages: vec![(
            "agent-box-supervisor.1".into(),
            b".TH AGENT-BOX-SUPERVISOR 1\n.SH NAME\nagent-box-supervisor \\- keeps the sessions alive\n".to_vec(),
        )],
    }
}

/// A program of the install, with only `env` (and the test knobs, `USER`, `TERM`) in its environment.
fn installed(sb: &Sandbox, program: &Path, env: &[(String, String)]) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v))).env("USER", "agent").current_dir(sb.home());
    for knob in KNOBS {
        cmd.env(knob, sb.env_var(knob).unwrap());
    }
    cmd
}

/// Every file (not directory) under `dir`.
fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let Ok(entries) = fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.insert(path);
        }
    }
    found
}

#[test]
fn install_run_add_attach_uninstall_on_a_fresh_home() {
    let sb = Sandbox::in_slot();
    let inputs = inputs(&sb, false);
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    let written = install::install(&inputs, &sources(&sb)).unwrap();
    assert!(written.contains(&layout.epilogue()), "{written:?}");
    assert!(!layout.unit_file.exists() && !layout.tmux_unit_file.exists(), "--no-unit: {written:?}");

    // The supervisor with only the installed environment file: installed mode supplies seed, harnesses, epilogue.
    let env = read_env_file(&fs::read_to_string(&layout.env_file).unwrap());
    assert!(env.iter().all(|(k, _)| k != "AGENT_BOX_SESSIONS_SEED" && k != "AGENT_BOX_AGENT_BINS"), "{env:?}");
    let log = fs::File::create(sb.supervisor_log_path()).unwrap();
    let mut cmd = installed(&sb, &layout.bin.join("agent-box-supervisor"), &env);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    let pid = sb.spawn_tracked(cmd);
    wait_until("the installed supervisor's start line", || sb.log_count("started (") == 1);

    // The wrapper carries AGENT_BOX_AGENTS and the default harness; the operator exports nothing.
    let operator =
        vec![("HOME".to_owned(), sb.home().display().to_string()), ("PATH".to_owned(), "/usr/bin:/bin".to_owned())];
    let wrapper = layout.bin.join("agent-box-session");
    let added = installed(&sb, &wrapper, &operator).args(["add", "main"]).output().unwrap();
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    wait_until("main live", || sb.is_live("main"));
    wait_until("the spawn line", || sb.log_count("started 'main' (first start, harness claude, pane pid ") == 1);
    let ls = installed(&sb, &wrapper, &operator).arg("ls").output().unwrap();
    let text = String::from_utf8_lossy(&ls.stdout);
    assert!(text.contains("main                     claude   live"), "{text}");
    assert!(ls.stderr.is_empty(), "a supervisor runs: no warning; {}", String::from_utf8_lossy(&ls.stderr));

    attach_from_another_server(&sb, &wrapper, &operator);

    sb.signal(pid, Signal::SIGTERM);
    assert_eq!(sb.wait_exit(pid, Duration::from_secs(30)), Some(0));
    let data_before: BTreeSet<PathBuf> = files_under(sb.home()).into_iter().filter(|p| !written.contains(p)).collect();
    let removed = install::uninstall(&inputs.prefix).unwrap();
    assert!(removed.contains(&layout.manifest), "{removed:?}");
    assert!(!inputs.prefix.exists(), "every directory the install created is gone");
    assert_eq!(files_under(sb.home()), data_before, "uninstall left exactly the user's data");
    assert!(sb.registry().is_file(), "the registry stays");
}

/// `attach` run in a pane of a second server (with `$TMUX` of that server set) reaches `main` on the box's
/// server: tmux then counts one client attached to it.
fn attach_from_another_server(sb: &Sandbox, wrapper: &Path, operator: &[(String, String)]) {
    let outer_socket = format!("{}-outer", sb.socket());
    let mut parent: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        operator.iter().map(|(k, v)| (k.into(), v.into())).collect();
    parent.push(("USER".into(), "agent".into()));
    parent.push(("TERM".into(), "xterm".into()));
    for knob in KNOBS {
        parent.push((knob.into(), sb.env_var(knob).unwrap().into()));
    }
    let bin = PathBuf::from(sb.env_var("AGENT_BOX_TMUX_BIN").unwrap());
    let outer =
        Tmux::new(TmuxConfig::new(bin, outer_socket, sb.tmux_dir()).with_conf("/dev/null")).with_parent_env(parent);
    let request = NewSession {
        name: SessionName::parse("operator").unwrap(),
        cwd: sb.home().into(),
        env: vec![],
        argv: vec![wrapper.into(), "attach".into(), "main".into()],
    };
    outer.new_session(&request).unwrap();
    let main = SessionName::parse("main").unwrap();
    wait_until("a client attached to main", || sb.tmux().display(&main, "#{session_attached}").as_deref() == Ok("1"));
    let _ = outer.kill_server();
}

// UP05
#[test]
fn both_user_units_pass_systemd_analyze_verify() {
    let Some(tool) = tmux::find_on_path("systemd-analyze", std::env::var_os("PATH").as_deref()) else {
        println!("SKIP: systemd-analyze is not installed (ci setup installs the Debian package systemd as root)");
        return;
    };
    let sb = Sandbox::new();
    let inputs = inputs(&sb, true);
    let written = install::install(&inputs, &sources(&sb)).unwrap();
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    assert!(written.contains(&layout.unit_file) && written.contains(&layout.tmux_unit_file), "{written:?}");
    // A user manager's runtime directory for the verifier alone, so it works as root and without a login too.
    let runtime = sb.root().join("xdg-runtime");
    registry::ensure_private_dir(&runtime).unwrap();
    // The install's own verification (issue 18 item 4): no MANPATH or anything else from the test's side.
    match install::verify_units(&tool, &[&layout.tmux_unit_file, &layout.unit_file], &inputs.prefix, Some(&runtime)) {
        install::Verified::Clean => {}
        install::Verified::Complaints(said) => {
            let about_the_unit: Vec<&str> = said.lines().filter(|l| l.contains("agent-box")).collect();
            assert!(about_the_unit.is_empty(), "systemd-analyze complains about the units:\n{said}");
        }
        install::Verified::NotRun(err) => panic!("cannot run {}: {err}", tool.display()),
    }
}

/// Issue 18 item 4: a crash loop never ends in systemd's start limit. The default limit is 5 starts in 10 s;
/// with `RestartSec=1s` a tmux that exits at once reaches it in 4 s and the unit (and every session) stays down for
/// good. Each installed unit either disables the limit or restarts slowly enough never to reach it.
#[test]
fn a_crash_loop_of_either_unit_never_reaches_the_start_limit() {
    let sb = Sandbox::new();
    let inputs = inputs(&sb, true);
    for (name, text) in
        [("agent-box-tmux", install::tmux_unit_text(&inputs)), ("agent-box", install::unit_text(&inputs))]
    {
        let value = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('=')).map(str::to_owned);
        let secs = |v: Option<String>, default: f64| {
            v.map_or(default, |v| v.trim_end_matches('s').parse::<f64>().unwrap_or_else(|_| panic!("{name}: {v}")))
        };
        let interval = secs(value("StartLimitIntervalSec"), 10.0);
        let burst = value("StartLimitBurst").map_or(5.0, |b| b.parse::<f64>().unwrap());
        let restart = secs(value("RestartSec"), 0.1);
        assert_eq!(value("Restart").as_deref(), Some("always"), "{name}");
        let reachable = interval > 0.0 && (burst - 1.0) * restart < interval;
        assert!(!reachable, "{name}: {burst} starts {restart} s apart fit in the {interval} s start limit:\n{text}");
    }
}
