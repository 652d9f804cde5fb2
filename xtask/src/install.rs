//! `cargo xtask install [--prefix DIR] [--no-unit]` and `cargo xtask uninstall [--prefix DIR]` (issue 11): the
//! operator's path on a box without Nix, for the invoking user. Install builds the release binaries, bakes the
//! epilogue for this user's registry and state directory, renders the manual pages, then writes everything
//! through the deployment library (`agent_box_install`, which the golden renderer and the end-to-end test use
//! too) and prints the next commands. The programs are copied from `<target>/release` of cargo's target directory
//! for this checkout (`CARGO_TARGET_DIR` and `build.target-dir` count), where the build just put them. Re-running it upgrades in place: then only the supervisor's unit is to be
//! restarted, which ends no session, because the tmux server has a unit of its own (75-upgrades), which is never
//! restarted for an upgrade. Install never talks to the user manager itself. Uninstall stops both units (the end of
//! every session) and removes exactly what the manifest lists, never the registry, leases, logs or
//! `agent-box.local.env`.

use std::path::{Path, PathBuf};

use agent_box_install::bake::Profile;
use agent_box_install::{self as install, Inputs, Layout, Sources, TMUX_UNIT_NAME, UNIT_NAME};
use clap::Args;

use crate::{exit, run};

/// Arguments of `cargo xtask install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Where bin/, lib/agent-box/ and share/man/ go (default ~/.local).
    #[arg(long, value_name = "DIR")]
    prefix: Option<PathBuf>,
    /// Do not write the systemd user units (a box without a user manager, or a supervisor run by other means).
    #[arg(long)]
    no_unit: bool,
    /// The harnesses `agent-box-session add` accepts (AGENT_BOX_AGENTS).
    #[arg(long, value_name = "LIST", default_value = "claude codex shell")]
    agents: String,
    /// The harness of `add` without --harness (default: claude when it is on PATH, else codex, else shell).
    #[arg(long, value_name = "H")]
    default_agent: Option<String>,
    /// A program the supervisor runs once for each recorded lease outcome (AGENT_BOX_ON_OUTCOME; see
    /// docs/notification.md and docs/examples/notify-gh.sh).
    #[arg(long, value_name = "PATH")]
    on_outcome: Option<PathBuf>,
    /// Event batches the intake queue holds at once (AGENT_BOX_QUEUE_MAX, default 500; docs/intake.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    queue_max: Option<u64>,
    /// Seconds a queued batch may wait for a slot (AGENT_BOX_QUEUE_MAX_AGE, default 86400, at most 604800).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(60..=604_800))]
    queue_max_age: Option<u64>,
}

/// Arguments of `cargo xtask uninstall`.
#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// The prefix given to install (default ~/.local).
    #[arg(long, value_name = "DIR")]
    prefix: Option<PathBuf>,
}

/// Why a step stopped: the exit code and the line that says why.
struct Stop(u8, String);

pub fn install(args: &InstallArgs) -> u8 {
    finish(run_install(args))
}

pub fn uninstall(args: &UninstallArgs) -> u8 {
    finish(run_uninstall(args))
}

fn finish(result: Result<(), Stop>) -> u8 {
    match result {
        Ok(()) => exit::SUCCESS,
        Err(Stop(code, line)) => {
            eprintln!("install: {line}");
            code
        }
    }
}

/// `HOME`, absolute.
fn home() -> Result<PathBuf, Stop> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .ok_or_else(|| Stop(exit::USAGE, "HOME must be set to an absolute path".into()))
}

fn prefix_or_default(prefix: Option<&Path>, home: &Path) -> Result<PathBuf, Stop> {
    let prefix = prefix.map_or_else(|| home.join(".local"), Path::to_path_buf);
    std::path::absolute(&prefix).map_err(|e| Stop(exit::USAGE, format!("--prefix {}: {e}", prefix.display())))
}

/// Who and where, from the invoking user's environment.
fn inputs(args: &InstallArgs) -> Result<Inputs, Stop> {
    let home = home()?;
    let prefix = prefix_or_default(args.prefix.as_deref(), &home)?;
    let path_var = std::env::var_os("PATH");
    let tmux = tmux::find_on_path("tmux", path_var.as_deref()).ok_or_else(|| {
        Stop(
            exit::SETUP,
            "tmux is required and is not on PATH; install it (Debian: sudo apt-get install tmux) and run again".into(),
        )
    })?;
    let user =
        std::env::var("USER").ok().filter(|u| !u.is_empty()).or_else(registry::paths::passwd_name).unwrap_or_default();
    let on_path = |h: &str| tmux::find_on_path(h, path_var.as_deref()).is_some();
    let default_agent = args
        .default_agent
        .clone()
        .unwrap_or_else(|| ["claude", "codex"].into_iter().find(|h| on_path(h)).unwrap_or("shell").to_owned());
    let mut agents: Vec<String> = args.agents.split_whitespace().map(str::to_owned).collect();
    if !agents.contains(&default_agent) {
        agents.push(default_agent.clone());
    }
    let inherited = path_var.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let inputs = Inputs {
        user,
        path: install::unit_path(&prefix, &inherited),
        home,
        prefix,
        tmux,
        agents,
        default_agent,
        unit: !args.no_unit,
        queue: install::QueueBounds { max_records: args.queue_max, max_age_secs: args.queue_max_age },
    };
    inputs.check().map_err(|e| Stop(exit::USAGE, e.to_string()))?;
    Ok(inputs)
}

fn run_install(args: &InstallArgs) -> Result<(), Stop> {
    let inputs = inputs(args)?;
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    // A manifest from an earlier install makes this run an upgrade, which the last lines explain differently.
    let upgrade = layout.manifest.is_file();
    println!("install: for user {} (HOME {}), prefix {}", inputs.user, inputs.home.display(), inputs.prefix.display());
    // Which checkout is built and which target directory the programs come from: with a target directory shared
    // between checkouts, the one thing to be sure of.
    println!(
        "install: from the checkout {}, target directory {}",
        run::workspace_root().display(),
        run::target_dir().display()
    );
    let release = build_release()?;
    let paths = registry::Paths::for_root(&inputs.home, &inputs.user);
    println!("install: baking the epilogue for {} (first time: about a minute)…", paths.registry().display());
    let epilogue = crate::bake_epilogue::bake_echoed(paths.registry(), paths.state_dir(), Profile::Epilogue)
        .map_err(|stop| Stop(stop.code, stop.message))?;
    let sources = Sources {
        supervisor: release.join("agent-box-supervisor"),
        session: release.join("agent-box-session"),
        webhook_spawn: release.join("agent-box-webhook-spawn"),
        epilogue,
        man_pages: crate::man::pages(),
    };
    let written = install::install(&inputs, &sources).map_err(|e| Stop(exit::SETUP, e.to_string()))?;
    if let Some(program) = &args.on_outcome {
        install::add_on_outcome(&layout.env_file, program).map_err(|e| Stop(exit::USAGE, e.to_string()))?;
    }
    for path in &written {
        println!("installed {}", path.display());
    }
    if inputs.unit {
        verify_units(&[&layout.tmux_unit_file, &layout.unit_file], &inputs.prefix);
    }
    if upgrade {
        upgrade_steps(&inputs);
    } else {
        next_steps(&inputs);
    }
    Ok(())
}

/// `cargo build --release --locked` of the three clap programs (the epilogue is baked separately).
fn build_release() -> Result<PathBuf, Stop> {
    let mut cmd = run::command("cargo");
    cmd.args(["build", "--release", "--locked", "--bins"]);
    for package in ["agent-box-supervisor", "agent-box-session", "agent-box-webhook-spawn"] {
        cmd.args(["--package", package]);
    }
    match run::status(&mut cmd) {
        Ok(status) if status.success() => Ok(run::target_dir().join("release")),
        Ok(status) => Err(Stop(exit::SETUP, format!("the release build failed ({status})"))),
        Err(err) => Err(Stop(exit::SETUP, format!("cannot run cargo: {err}"))),
    }
}

/// `systemd-analyze --user verify` of both units when the tool is there (with the install's manual pages on its
/// search path); its complaints are printed, never fatal here (the units are verified in the tests).
fn verify_units(units: &[&Path], prefix: &Path) {
    let Some(tool) = tmux::find_on_path("systemd-analyze", std::env::var_os("PATH").as_deref()) else {
        println!("install: systemd-analyze not found; the units were not verified");
        return;
    };
    match install::verify_units(&tool, units, prefix, None) {
        install::Verified::Clean => println!("install: {TMUX_UNIT_NAME} and {UNIT_NAME} verified"),
        install::Verified::Complaints(said) => println!("install: systemd-analyze says:\n{said}"),
        install::Verified::NotRun(err) => println!("install: cannot run systemd-analyze: {err}"),
    }
}

fn next_steps(inputs: &Inputs) {
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    println!();
    println!("next:");
    if inputs.unit {
        println!("  systemctl --user daemon-reload");
        println!("  systemctl --user enable --now {TMUX_UNIT_NAME} {UNIT_NAME}");
        println!(
            "  sudo loginctl enable-linger {}   # keeps the sessions running without a login (boot, logout)",
            inputs.user
        );
        println!("  journalctl --user -u {UNIT_NAME} -f   # what the supervisor does");
        println!("  to stop everything: systemctl --user stop {UNIT_NAME} {TMUX_UNIT_NAME}");
    } else {
        let uid = nix::unistd::getuid().as_raw();
        println!("  no unit: start the supervisor yourself with the environment file, e.g.");
        println!("  mkdir -p -m 0700 /run/user/{uid}/agent-box   # the socket directory every program looks for");
        println!("  (set -a; . {}; set +a; exec agent-box-supervisor)", layout.env_file.display());
    }
    println!("  agent-box-session add main --harness {}", inputs.default_agent);
    println!("  agent-box-session ls");
    println!("  agent-box-session attach main");
    let on_path = std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d == layout.bin));
    if !on_path {
        println!(
            "  note: {} is not on your PATH; add it (e.g. in ~/.profile: PATH=\"{}:$PATH\")",
            layout.bin.display(),
            layout.bin.display()
        );
    }
    println!("  man agent-box-session   (MANPATH may need {})", inputs.prefix.join("share/man").display());
}

/// After a re-install: the supervisor's unit is restarted (the sessions keep running), the tmux unit is not.
fn upgrade_steps(inputs: &Inputs) {
    println!();
    println!("upgrade: the programs were replaced in place; the running panes keep their agents.");
    if inputs.unit {
        println!("  systemctl --user daemon-reload");
        println!("  systemctl --user restart {UNIT_NAME}   # the new supervisor; every session keeps running");
        println!(
            "  {TMUX_UNIT_NAME} is not restarted: that would end every session (a change to it takes effect at its next start)"
        );
        println!(
            "  from an install before the tmux unit existed, this one restart still ends the sessions once (the old unit held the server); they come back resumed"
        );
    } else {
        println!("  restart the supervisor you run by hand; the tmux server and its sessions keep running");
    }
}

fn run_uninstall(args: &UninstallArgs) -> Result<(), Stop> {
    let home = home()?;
    let prefix = prefix_or_default(args.prefix.as_deref(), &home)?;
    let layout = Layout::new(&prefix, &home);
    if layout.unit_file.is_file() || layout.tmux_unit_file.is_file() {
        stop_units();
    }
    let removed = install::uninstall(&prefix).map_err(|e| Stop(exit::CHECK_FAILED, e.to_string()))?;
    for path in removed {
        println!("removed {}", path.display());
    }
    println!(
        "kept: the registry, leases and logs (~/.config/agent-box, ~/.local/state/agent-box) and agent-box.local.env"
    );
    Ok(())
}

/// Stops and disables the supervisor, then the tmux server (which ends every session). Best effort: a user manager
/// that does not answer (no login session, CI) is reported, not fatal.
fn stop_units() {
    let Some(systemctl) = tmux::find_on_path("systemctl", std::env::var_os("PATH").as_deref()) else { return };
    let mut cmd = std::process::Command::new(systemctl);
    cmd.args(["--user", "disable", "--now", UNIT_NAME, TMUX_UNIT_NAME]);
    if !run::status(&mut cmd).is_ok_and(|s| s.success()) {
        println!(
            "uninstall: could not stop {UNIT_NAME} and {TMUX_UNIT_NAME} through the user manager; stop them yourself if they run"
        );
    }
}
