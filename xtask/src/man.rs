//! `cargo xtask man [--out DIR]` (issue 11): the manual pages of the four programs, rendered by clap_mangen from
//! the same command definitions as their parsers (the epilogue has no clap, so its page is built here from its
//! usage text). `install` puts them under `<prefix>/share/man/man1/`.

use std::fs;
use std::path::PathBuf;

use clap::{Arg, ArgAction, Command, CommandFactory};

use crate::{exit, run};

/// `(file name, roff bytes)` for every program.
pub fn pages() -> Vec<(String, Vec<u8>)> {
    let commands = [
        supervisor::cli::Cli::command(),
        session::cli::Cli::command(),
        webhook_spawn::cli::Cli::command(),
        epilogue_command(),
    ];
    commands.into_iter().flat_map(render).collect()
}

/// The page of a command and of each visible subcommand (`agent-box-session-attach.1`, …).
fn render(command: Command) -> Vec<(String, Vec<u8>)> {
    let mut command = command.version(env!("CARGO_PKG_VERSION"));
    command.build();
    let mut pages = Vec::new();
    let name = command.get_name().to_owned();
    let mut bytes = Vec::new();
    if clap_mangen::Man::new(command.clone()).render(&mut bytes).is_ok() {
        pages.push((format!("{name}.1"), bytes));
    }
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let mut bytes = Vec::new();
        let file = format!("{name}-{}.1", sub.get_name());
        let sub = sub.clone().bin_name(format!("{name} {}", sub.get_name()));
        if clap_mangen::Man::new(sub).title(file.trim_end_matches(".1").to_owned()).render(&mut bytes).is_ok() {
            pages.push((file, bytes));
        }
    }
    pages
}

/// `agent-box-mark-stopped` as clap would describe it (it has no parser of its own, 40-mark-stopped OV-3.2).
fn epilogue_command() -> Command {
    Command::new("agent-box-mark-stopped")
        .about("The pane epilogue of agent-box sessions: records how the agent process ended")
        .long_about(
            "The pane's shell runs it once after the agent process ended. STATUS 0 parks the session (\"stopped\": \
             true in sessions.json; a lease for GEN is resolved); STATUS N>0 records the crash (\"died\": N; the \
             lease gets the outcome died:N). GEN is the lease generation the pane was started for; '-' means it \
             started without a lease. Paths are fixed when the binary is built (--print-paths shows them); no \
             environment variable is read. It prints nothing and always exits 0.",
        )
        .disable_version_flag(true)
        .arg(Arg::new("NAME").help("The session name"))
        .arg(Arg::new("STATUS").help("The agent's exit status"))
        .arg(Arg::new("GEN").help("The lease generation, or - for none"))
        .arg(Arg::new("print-paths").long("print-paths").action(ArgAction::SetTrue).help("Print the baked paths"))
        .arg(Arg::new("version").long("version").action(ArgAction::SetTrue).help("Print the version"))
}

/// Writes every page into `out` (default `<target>/man/`); exit code of XT-1.6.
pub fn run(out: Option<PathBuf>) -> u8 {
    let dir = out.unwrap_or_else(|| run::target_dir().join("man"));
    if let Err(err) = fs::create_dir_all(&dir) {
        eprintln!("man: cannot create {}: {err}", dir.display());
        return exit::SETUP;
    }
    for (name, bytes) in pages() {
        let path = dir.join(name);
        if let Err(err) = fs::write(&path, bytes) {
            eprintln!("man: cannot write {}: {err}", path.display());
            return exit::SETUP;
        }
        println!("wrote {}", path.display());
    }
    exit::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command as Process;

    #[test]
    fn every_page_has_name_and_synopsis_and_renders_with_man() {
        let pages = pages();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        for program in
            ["agent-box-supervisor", "agent-box-session", "agent-box-webhook-spawn", "agent-box-mark-stopped"]
        {
            assert!(names.contains(&format!("{program}.1").as_str()), "{names:?}");
        }
        assert!(names.contains(&"agent-box-session-attach.1"), "{names:?}");
        let dir = tempfile::tempdir().unwrap();
        let man = tmux::find_on_path("man", std::env::var_os("PATH").as_deref());
        if man.is_none() {
            println!("SKIP: man is not installed; checked the NAME and SYNOPSIS sections only");
        }
        for (name, bytes) in &pages {
            let text = String::from_utf8_lossy(bytes);
            assert!(text.contains(".SH NAME") && text.contains(".SH SYNOPSIS"), "{name}");
            let Some(man) = &man else { continue };
            let path = dir.path().join(name);
            fs::write(&path, bytes).unwrap();
            let out = Process::new(man)
                .arg("-l")
                .arg(&path)
                .env("MANPAGER", "cat")
                .env("PAGER", "cat")
                .env("MANWIDTH", "100")
                .output()
                .unwrap();
            let shown = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            assert!(shown.contains("NAME") && shown.contains("SYNOPSIS"), "{name}: {shown}");
        }
    }
}
