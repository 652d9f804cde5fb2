//! `--print-command NAME` (SUP-15.2): a dry run that prints exactly what would be spawned, taking no lock,
//! running no tmux and writing nothing.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;

use base::SessionName;
use lease::LeaseDir;
use registry::{ReadOutcome, read};

use crate::config::Config;
use crate::launch::{PrepareError, command_line, gen_argument, prepare, render_script};
use crate::side::{SideFile, SideFileIo};

/// Why the dry run printed nothing.
#[derive(Debug)]
pub enum PrintError {
    /// An illegal name or one that is not a key (exit 2).
    Usage(String),
    /// The entry cannot be rendered (exit 1).
    Render(String),
}

/// The dry-run text for `name`.
pub fn print_command(config: &Config, name: &str) -> Result<Vec<u8>, PrintError> {
    let name = SessionName::parse(name)
        .map_err(|_| PrintError::Usage(format!("'{name}' is not a session name: names are [A-Za-z0-9_-]+")))?;
    let doc = match read(config.paths.registry()) {
        ReadOutcome::Valid(doc) => doc,
        _ => return Err(PrintError::Usage(format!("no such session: '{name}'"))),
    };
    if !doc.contains(name.as_str()) {
        return Err(PrintError::Usage(format!("no such session: '{name}'")));
    }
    let entry = doc
        .entry(name.as_str())
        .ok_or_else(|| PrintError::Render(format!("session '{name}': its entry is not a JSON object")))?;
    let side = SideFile::read(&config.paths.side_file(&name)).of_life(entry.life());
    let prepared = prepare(config, &name, entry, &side).map_err(|e| match e {
        PrepareError::Fatal(problem) => PrintError::Render(format!("session '{name}': {problem}")),
        PrepareError::NotInstalled(agent) => {
            PrintError::Render(format!("session '{name}': agent '{agent}' is not installed"))
        }
    })?;
    let (gen_arg, _) = gen_argument(&LeaseDir::new(config.paths.lease_dir()).read(&name), entry.life());
    let mut out = Vec::new();
    let _ = writeln!(out, "session {name}");
    let _ = writeln!(out, "harness {}", prepared.harness.agent);
    let _ = writeln!(out, "spawn {}", prepared.spawn.as_str());
    out.extend_from_slice(b"dir ");
    out.extend_from_slice(prepared.cwd.as_os_str().as_bytes());
    out.push(b'\n');
    for (key, value) in &prepared.env {
        let _ = writeln!(out, "env {key}={value}");
    }
    out.extend_from_slice(b"command ");
    out.extend_from_slice(&command_line(&config.paths.launch_file(&name)));
    out.extend_from_slice(b"\nscript\n");
    out.extend_from_slice(&render_script(config, &prepared, &gen_arg));
    out.push(b'\n');
    Ok(out)
}
