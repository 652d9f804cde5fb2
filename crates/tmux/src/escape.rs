//! Keeps data literal where tmux expands formats (`#{…}`, `#(…)`), and builds exact session targets (TMX-2).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use base::SessionName;

/// Doubles every `#`, so tmux's format expansion yields the text unchanged and never runs a `#(…)` command.
pub fn escape_format(text: &OsStr) -> OsString {
    let mut escaped = Vec::with_capacity(text.len());
    for &byte in text.as_bytes() {
        if byte == b'#' {
            escaped.push(b'#');
        }
        escaped.push(byte);
    }
    OsString::from_vec(escaped)
}

/// `=NAME`: the `=` prefix makes tmux match the session name exactly instead of by prefix or pattern,
/// so `a` never addresses `a1`.
pub(crate) fn exact_session(name: &SessionName) -> OsString {
    let mut target = OsString::from("=");
    target.push(escape_format(OsStr::new(name.as_str())));
    target
}

/// `=NAME:`: the session's current pane. Commands whose target is a pane read a bare `=NAME` as a window
/// or pane and, when they may fail silently (display-message), answer for no session at all (measured
/// on 3.3a); the trailing `:` says that `=NAME` is the session part.
pub(crate) fn exact_session_pane(name: &SessionName) -> OsString {
    let mut target = exact_session(name);
    target.push(":");
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> SessionName {
        SessionName::parse(text).unwrap()
    }

    #[test]
    fn every_hash_is_doubled() {
        assert_eq!(escape_format(OsStr::new("/srv/#(touch x)/#{pane_pid}")), "/srv/##(touch x)/##{pane_pid}");
        assert_eq!(escape_format(OsStr::new("##")), "####");
        assert_eq!(escape_format(OsStr::new("plain")), "plain");
        assert_eq!(escape_format(OsStr::new("")), "");
    }

    #[test]
    fn non_utf8_bytes_survive_escaping() {
        let raw = OsStr::from_bytes(b"/tmp/\xff#");
        assert_eq!(escape_format(raw).as_bytes(), b"/tmp/\xff##");
    }

    #[test]
    fn targets_are_exact() {
        assert_eq!(exact_session(&name("a")), "=a");
        assert_eq!(exact_session_pane(&name("a-1")), "=a-1:");
    }
}
