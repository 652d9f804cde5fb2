//! Bakes the registry path and the state directory into the epilogue (40-mark-stopped MS-3), refusing any value
//! that would only fail later, silently, at the end of some pane.

use std::path::{Component, Path};

const SESSIONS_VAR: &str = "AGENT_BOX_BAKE_SESSIONS_FILE";
const STATE_VAR: &str = "AGENT_BOX_BAKE_STATE_DIR";

fn main() {
    println!("cargo::rerun-if-env-changed={SESSIONS_VAR}");
    println!("cargo::rerun-if-env-changed={STATE_VAR}");
    let sessions = std::env::var_os(SESSIONS_VAR);
    let state = std::env::var_os(STATE_VAR);
    match (sessions, state) {
        (None, None) => {}
        (Some(sessions), Some(state)) => {
            let sessions = checked(SESSIONS_VAR, &sessions);
            if sessions.ends_with(".lock") {
                refuse(SESSIONS_VAR, &sessions, "must not end in .lock (the lock file is derived from it)");
            }
            let state = checked(STATE_VAR, &state);
            println!("cargo::rustc-env=AGENT_BOX_BAKED_SESSIONS_FILE={sessions}");
            println!("cargo::rustc-env=AGENT_BOX_BAKED_STATE_DIR={state}");
        }
        (Some(_), None) => refuse(STATE_VAR, "", "must be set together with AGENT_BOX_BAKE_SESSIONS_FILE"),
        (None, Some(_)) => refuse(SESSIONS_VAR, "", "must be set together with AGENT_BOX_BAKE_STATE_DIR"),
    }
}

/// MS-3.2: absolute, UTF-8, no control characters, no `.` or `..` component, no trailing `/`.
fn checked(var: &str, value: &std::ffi::OsStr) -> String {
    let Some(text) = value.to_str() else { refuse(var, &value.to_string_lossy(), "must be valid UTF-8") };
    if !text.starts_with('/') {
        refuse(var, text, "must be an absolute path");
    }
    if text.chars().any(char::is_control) {
        refuse(var, text, "must not contain control characters");
    }
    if text.len() > 1 && text.ends_with('/') {
        refuse(var, text, "must not end in '/'");
    }
    if text == "/" {
        refuse(var, text, "must name a file or directory below '/'");
    }
    let dotted = text.split('/').any(|part| part == "." || part == "..");
    if dotted || Path::new(text).components().any(|c| matches!(c, Component::CurDir | Component::ParentDir)) {
        refuse(var, text, "must not contain a '.' or '..' component");
    }
    text.to_owned()
}

fn refuse(var: &str, value: &str, why: &str) -> ! {
    eprintln!("error: {var}='{value}' {why}");
    println!("cargo::error={var}='{value}' {why}");
    std::process::exit(1)
}
