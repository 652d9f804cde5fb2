//! Lock-free reading shared by the read-only verbs (50-session-cli §3.10): the registry, leases and the
//! supervisor's side file, plus the small text and JSON helpers their reports have in common. Nothing here
//! creates a file or a directory.

use std::path::Path;

use registry::{Document, Paths, ReadOutcome, SessionName};
use serde_json::{Map, Value};

use crate::messages;

/// What the registry read found, as the `registry` field of the JSON reports names it (§12.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryStatus {
    Ok,
    /// Missing or empty: no entries, and nothing to warn about.
    Missing,
    /// Invalid or unreadable: no entries, and warning M33.
    Unreadable,
}

impl RegistryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Missing => "missing",
            Self::Unreadable => "unreadable",
        }
    }
}

/// The registry as a read-only verb sees it: a document (empty unless valid) and the M33 text when it could
/// not be used. The caller decides whether and when to print the warning.
#[derive(Debug)]
pub struct RegistryView {
    pub status: RegistryStatus,
    pub doc: Document,
    pub warning: Option<String>,
}

impl RegistryView {
    /// Whether `name` is a key of `sessions` (an entry that is not an object is still listed).
    pub fn lists(&self, name: &str) -> bool {
        self.doc.contains(name)
    }
}

/// Reads the registry without a lock; a missing file is not created (RG-6.4).
pub fn read_registry(paths: &Paths) -> RegistryView {
    let file = paths.registry();
    let unusable = |reason: String| RegistryView {
        status: RegistryStatus::Unreadable,
        doc: Document::empty(),
        warning: Some(messages::registry_unusable(&file.display().to_string(), &reason)),
    };
    match registry::read(file) {
        ReadOutcome::Valid(doc) => RegistryView { status: RegistryStatus::Ok, doc, warning: None },
        ReadOutcome::Missing | ReadOutcome::Empty => {
            RegistryView { status: RegistryStatus::Missing, doc: Document::empty(), warning: None }
        }
        ReadOutcome::Invalid(reason) => unusable(reason),
        ReadOutcome::Unreadable(err) => unusable(err.to_string()),
    }
}

/// The outcome of `name`'s lease when it is unresolved (§3.13); a name failing the charset has none (§3.5).
pub fn unresolved_outcome(paths: &Paths, name: &str) -> Option<String> {
    let name = SessionName::parse(name).ok()?;
    lease::LeaseDir::new(paths.lease_dir()).outcome(&name).map(|o| o.to_string())
}

/// A crash-loop backoff that is still running: the side file's `backoffUntil`, verbatim, and its instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    pub raw: String,
    pub until: i64,
}

/// The backoff of `name` from its supervisor side file, when it ends after `now` (§4.3).
pub fn backoff(paths: &Paths, name: &str, now: i64) -> Option<Backoff> {
    let name = SessionName::parse(name).ok()?;
    let bytes = std::fs::read(paths.side_file(&name)).ok()?;
    backoff_in(&bytes, now)
}

/// The `backoffUntil` of a side file's bytes when it is a `YYYY-MM-DDTHH:MM:SSZ` time later than `now`.
pub fn backoff_in(side_file: &[u8], now: i64) -> Option<Backoff> {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(side_file) else { return None };
    let raw = map.get("backoffUntil")?.as_str()?;
    let until = registry::time::parse_iso(raw)?;
    (until > now).then(|| Backoff { raw: raw.to_owned(), until })
}

/// A `died` value as its compact JSON text (`1`, `"x"`, `false`), the form §3.13 displays.
pub fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// `text` left-aligned in `width` characters; a longer text is never cut (`%-Ns`).
pub fn pad(text: &str, width: usize) -> String {
    format!("{text:<width$}")
}

/// A report document: pretty-printed with two-space indentation and exactly one trailing newline (§12.1).
pub fn json_document(map: Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
    text.push('\n');
    text
}

/// A JSON object whose first key is `"version": 1`, to which a report appends its own keys in order.
pub fn versioned() -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("version".into(), Value::from(1));
    map
}

/// `Some(text)` as a JSON string, `None` as null.
pub fn string_or_null(text: Option<&str>) -> Value {
    text.map_or(Value::Null, Value::from)
}

/// True when `a` and `b` name the same file (device and inode); false when either cannot be examined.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// A stand-in for tmux in unit tests: a fixed live set, or a fixed "unavailable" failure.
#[cfg(test)]
pub(crate) mod fake {
    use std::path::PathBuf;

    use registry::SessionName;
    use tmux::{Killed, NewSession, TmuxApi, TmuxError};

    use crate::context::Context;

    #[derive(Debug, Clone)]
    pub struct FakeTmux {
        pub live: Result<Vec<String>, TmuxError>,
        pub current: Result<String, TmuxError>,
        pub socket: PathBuf,
    }

    impl FakeTmux {
        pub fn live(names: &[&str]) -> Self {
            Self {
                live: Ok(names.iter().map(|n| (*n).to_owned()).collect()),
                current: Err(TmuxError::NoSuchSession),
                socket: PathBuf::from("/nonexistent/socket"),
            }
        }
    }

    impl TmuxApi for FakeTmux {
        fn ensure_server_and_list(&self) -> Result<Vec<String>, TmuxError> {
            self.live.clone()
        }
        fn list_sessions(&self) -> Result<Vec<String>, TmuxError> {
            self.live.clone()
        }
        fn has_session(&self, name: &SessionName) -> Result<bool, TmuxError> {
            Ok(self.live.clone()?.iter().any(|n| n == name.as_str()))
        }
        fn new_session(&self, _: &NewSession) -> Result<(), TmuxError> {
            Err(TmuxError::NotInstalled)
        }
        fn kill_session(&self, _: &SessionName) -> Result<Killed, TmuxError> {
            Err(TmuxError::NotInstalled)
        }
        fn display(&self, _: &SessionName, _: &str) -> Result<String, TmuxError> {
            Err(TmuxError::NotInstalled)
        }
        fn current_session(&self, _: Option<&str>) -> Result<String, TmuxError> {
            self.current.clone()
        }
        fn set_global_option(&self, _: &str, _: &str) -> Result<(), TmuxError> {
            Err(TmuxError::NotInstalled)
        }
        fn show_global_option(&self, _: &str) -> Result<Option<String>, TmuxError> {
            Err(TmuxError::NotInstalled)
        }
        fn version(&self) -> Result<Option<(u32, u32)>, TmuxError> {
            Ok(Some((3, 3)))
        }
        fn kill_server(&self) -> Result<(), TmuxError> {
            Ok(())
        }
        fn socket_path(&self) -> PathBuf {
            self.socket.clone()
        }
    }

    /// A context for HOME `home` (user `agent`) whose tmux is `tmux`; `extra` adds environment variables.
    pub fn context(home: &std::path::Path, tmux: FakeTmux, extra: &[(&str, &str)]) -> Context {
        let home = home.as_os_str().to_owned();
        let lookup = |key: &str| -> Option<std::ffi::OsString> {
            match key {
                "HOME" => Some(home.clone()),
                "USER" => Some("agent".into()),
                "AGENT_BOX_TMUX_BIN" => Some("/nonexistent/tmux".into()),
                "AGENT_BOX_TMUX_TMPDIR" => Some("/nonexistent".into()),
                _ => extra.iter().find(|(k, _)| *k == key).map(|(_, v)| (*v).into()),
            }
        };
        let mut ctx = Context::from_lookup(lookup).unwrap();
        ctx.tmux = Box::new(tmux);
        ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_future_backoff_is_kept_verbatim_and_a_past_or_odd_one_is_ignored() {
        let now = registry::time::parse_iso("2026-11-29T14:00:00Z").unwrap();
        let future = br#"{"launchSessionId":"x","backoffUntil":"2026-11-29T14:03:11Z","quickExits":3}"#;
        assert_eq!(backoff_in(future, now), Some(Backoff { raw: "2026-11-29T14:03:11Z".into(), until: now + 191 }));
        assert_eq!(backoff_in(br#"{"backoffUntil":"2026-11-29T13:59:59Z"}"#, now), None);
        assert_eq!(backoff_in(br#"{"backoffUntil":"2026-11-29T14:00:00Z"}"#, now), None, "now is not later");
        assert_eq!(backoff_in(br#"{"backoffUntil":"2026-11-29 14:03:11"}"#, now), None);
        assert_eq!(backoff_in(br#"{"backoffUntil":1795944123}"#, now), None);
        assert_eq!(backoff_in(b"not json", now), None);
        assert_eq!(backoff_in(b"[]", now), None);
    }

    #[test]
    fn died_values_show_as_compact_json() {
        assert_eq!(compact(&Value::from(1)), "1");
        assert_eq!(compact(&Value::from("x")), "\"x\"");
        assert_eq!(compact(&Value::Bool(false)), "false");
    }

    #[test]
    fn padding_never_cuts() {
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(pad("abcdef", 4), "abcdef");
        assert_eq!(pad("é", 3), "é  ", "pads by characters, not bytes");
    }

    #[test]
    fn documents_are_pretty_with_one_trailing_newline() {
        let mut map = versioned();
        map.insert("used".into(), Value::from(0));
        assert_eq!(json_document(map), "{\n  \"version\": 1,\n  \"used\": 0\n}\n");
    }

    #[test]
    fn registry_outcomes_map_to_the_report_status() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::for_root(dir.path(), "agent");
        let view = read_registry(&paths);
        assert_eq!((view.status, view.warning.is_none()), (RegistryStatus::Missing, true));
        assert!(!paths.registry().exists(), "reading never creates the registry");
        std::fs::create_dir_all(paths.registry().parent().unwrap()).unwrap();
        std::fs::write(paths.registry(), "").unwrap();
        assert_eq!(read_registry(&paths).status, RegistryStatus::Missing);
        std::fs::write(paths.registry(), "not json").unwrap();
        let view = read_registry(&paths);
        assert_eq!(view.status, RegistryStatus::Unreadable);
        let warning = view.warning.unwrap();
        assert!(warning.contains("does not parse or cannot be read (not JSON"), "{warning}");
        assert!(warning.ends_with("; showing no listed session"), "{warning}");
        std::fs::write(paths.registry(), r#"{"sessions":{"a":3}}"#).unwrap();
        let view = read_registry(&paths);
        assert_eq!(view.status, RegistryStatus::Ok);
        assert!(view.lists("a") && !view.lists("b"));
    }

    #[test]
    fn lookups_by_a_name_failing_the_charset_answer_none() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::for_root(dir.path(), "agent");
        assert_eq!(unresolved_outcome(&paths, "../x"), None);
        assert_eq!(backoff(&paths, "a b", 0), None);
    }
}
