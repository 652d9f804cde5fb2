//! The session-closed wake (30-supervisor §3, issue 12): a server-wide tmux hook that, whenever a session closes
//! (killed, its last pane exited, its server lost it), appends nothing to one file the supervisor watches with
//! inotify, so a killed pane is noticed at once instead of at the next 2 s tick.
//!
//! The hook is `set-hook -g session-closed[4242] VALUE` with VALUE the tmux command
//! `run-shell -b "<S>"`, where S is this POSIX sh command (P = the wake file, quoted by `base::quote`):
//!
//! ```text
//! exec >/dev/null 2>&1; [ -f P ] && true >>P; exit 0
//! ```
//!
//! Three parsers read S before it runs, and each gets its own quoting, innermost first:
//! 1. `/bin/sh -c S` (tmux's job runner always uses `/bin/sh`, not `default-shell`, measured on 3.3a): P is
//!    single-quoted by the workspace's one quoter, so no byte of a HOME reaches the shell as syntax.
//! 2. run-shell expands formats in its argument when the hook fires: every `#` of S is doubled (`#(…)` would run
//!    a command, `#{…}` would substitute).
//! 3. tmux's command parser reads VALUE when `set-hook` runs: inside its double quotes `\`, `"`, `$` (environment
//!    expansion), `~` (home expansion) and a newline (which drops a following `#` line as a comment) mean something,
//!    so every byte outside a plain printable set is written as a three-digit octal escape `\ooo`, which the parser
//!    turns back into exactly that byte.
//!
//! The command never prints and always exits 0: a run-shell job that prints or fails opens view mode in some other
//! session's pane (measured on 3.3a), which would cover an agent's screen. `>>` writes nothing, so a wake file
//! replaced by a symlink changes nothing behind it; `[ -f P ]` keeps a FIFO at P from blocking the job for ever
//! (and no job piles up when no supervisor runs: the append returns at once). No session name, no format of tmux's
//! and no environment value enters S, so the only data in it is the supervisor-chosen path.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use crate::escape::escape_format;

/// The hook and index the wake occupies: a fixed, high index of the `session-closed` array, so a user's own
/// `set-hook -g session-closed …` (index 0) and the wake never replace each other, and installing it again on the
/// same server overwrites the same slot instead of adding one.
pub const WAKE_HOOK_NAME: &str = "session-closed[4242]";

/// The longest VALUE the supervisor installs. A tmux client refuses a command of about 16 KiB (measured on 3.3a);
/// this bound keeps the install far below that, and no real HOME comes near it.
pub const MAX_HOOK_VALUE: usize = 4096;

/// A wake hook for one file, quoted for every layer that reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeHook {
    value: OsString,
}

/// Why no wake hook can be built for a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WakeHookError {
    #[error("the wake file path {0} is not absolute")]
    NotAbsolute(String),
    #[error("the wake file path {path} makes a hook command of {len} bytes (at most {MAX_HOOK_VALUE})")]
    TooLong { path: String, len: usize },
}

impl WakeHook {
    /// The hook that appends nothing to `wake_file` whenever a session closes.
    pub fn for_file(wake_file: &Path) -> Result<Self, WakeHookError> {
        let shown = || wake_file.display().to_string();
        if !wake_file.is_absolute() {
            return Err(WakeHookError::NotAbsolute(shown()));
        }
        let value = hook_value(&shell_command(wake_file.as_os_str().as_bytes()));
        if value.len() > MAX_HOOK_VALUE {
            return Err(WakeHookError::TooLong { path: shown(), len: value.len() });
        }
        Ok(Self { value: OsString::from_vec(value) })
    }

    /// VALUE of `set-hook -g session-closed[4242] VALUE`.
    pub fn value(&self) -> &OsStr {
        &self.value
    }
}

/// S: append nothing to the file, silently, with exit status 0 whatever happened.
pub(crate) fn shell_command(path: &[u8]) -> Vec<u8> {
    let quoted = base::quote::quote(path);
    let mut command = b"exec >/dev/null 2>&1; [ -f ".to_vec();
    command.extend_from_slice(&quoted);
    command.extend_from_slice(b" ] && true >>");
    command.extend_from_slice(&quoted);
    command.extend_from_slice(b"; exit 0");
    command
}

/// `run-shell -b "<S with # doubled, octal-escaped>"`.
pub(crate) fn hook_value(shell: &[u8]) -> Vec<u8> {
    let literal = escape_format(OsStr::from_bytes(shell)).into_vec();
    let mut value = b"run-shell -b \"".to_vec();
    for &byte in &literal {
        if is_plain(byte) {
            value.push(byte);
        } else {
            value.extend_from_slice(format!("\\{byte:03o}").as_bytes());
        }
    }
    value.push(b'"');
    value
}

/// Bytes tmux's parser copies unchanged inside double quotes: printable ASCII except `\`, `"`, `$` and `~`.
fn is_plain(byte: u8) -> bool {
    (b' '..=b'~').contains(&byte) && !matches!(byte, b'\\' | b'"' | b'$' | b'~')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(path: &str) -> String {
        WakeHook::for_file(Path::new(path)).unwrap().value().to_str().unwrap().to_owned()
    }

    #[test]
    fn a_plain_path_reads_as_the_documented_command() {
        assert_eq!(
            value("/home/agent/.local/state/agent-box/tmux-wake"),
            "run-shell -b \"exec >/dev/null 2>&1; [ -f /home/agent/.local/state/agent-box/tmux-wake ] && true >>/home/agent/.local/state/agent-box/tmux-wake; exit 0\""
        );
    }

    #[test]
    fn every_layer_gets_its_quoting() {
        let text = value("/h/a'b $(x) #(y) \"z\" ~u\\v\nw");
        // sh: single quotes with '\'' for the quote; tmux: # doubled, then \ " $ ~ and the newline as octal.
        let quoted = "'/h/a'\\134''b \\044(x) ##(y) \\042z\\042 \\176u\\134v\\012w'";
        assert_eq!(text, format!("run-shell -b \"exec >/dev/null 2>&1; [ -f {quoted} ] && true >>{quoted}; exit 0\""));
        assert!(!text[14..text.len() - 1].contains(['"', '$', '~', '\n']), "{text}");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_escaped() {
        let path = Path::new(OsStr::from_bytes(b"/h/\xff\x01"));
        let hook = WakeHook::for_file(path).unwrap();
        let text = String::from_utf8(hook.value().as_bytes().to_vec()).unwrap();
        assert!(text.contains("'/h/\\377\\001'"), "{text}");
    }

    #[test]
    fn refuses_a_relative_or_oversized_path() {
        assert!(matches!(WakeHook::for_file(Path::new("rel/x")), Err(WakeHookError::NotAbsolute(_))));
        let long = format!("/{}", "$".repeat(1000));
        assert!(matches!(WakeHook::for_file(Path::new(&long)), Err(WakeHookError::TooLong { .. })));
    }
}
