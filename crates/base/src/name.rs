//! Session names, the only way a string from a user, a file or tmux becomes part of a path, and the user-name
//! check for the other name that is joined into file names.

use std::fmt;

/// Longest name `add` and webhook-spawn may create (shared with the web UI).
pub const MAX_NEW_NAME_LEN: usize = 150;

/// Names the web UI uses as URL segments, refused for new sessions.
pub const RESERVED_NAMES: [&str; 7] = ["settings", "downloads", "webhook", "sessions", "token", "ws", "auth"];

/// Why a string is not a usable session name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("a session name cannot be empty")]
    Empty,
    #[error("invalid session name: byte {index} is not a letter, digit, '-' or '_'")]
    BadChar { index: usize },
    #[error("session name is too long: at most {MAX_NEW_NAME_LEN} characters (it has {len})")]
    TooLong { len: usize },
    #[error("'{0}' is a reserved name")]
    Reserved(String),
}

/// A name that passed at least the charset rule (RG-5.1); every per-name path takes one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionName(String);

/// True for the bytes a session name may contain: ASCII letters, digits, `-` and `_`.
pub fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'
}

/// True when `user` may be joined into file names (OV-5.2).
pub fn is_usable_user(user: &str) -> bool {
    !user.is_empty()
        && user != "."
        && user != ".."
        && user.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl SessionName {
    /// The charset rule alone: what `rm`, `stop`, `restart`, the supervisor and sweeps accept.
    pub fn parse(text: &str) -> Result<Self, NameError> {
        if text.is_empty() {
            return Err(NameError::Empty);
        }
        if let Some(index) = text.bytes().position(|b| !is_name_byte(b)) {
            return Err(NameError::BadChar { index });
        }
        Ok(Self(text.to_owned()))
    }

    /// The creation rule: charset, at most 150 bytes, not reserved.
    pub fn parse_new(text: &str) -> Result<Self, NameError> {
        let name = Self::parse(text)?;
        if text.len() > MAX_NEW_NAME_LEN {
            return Err(NameError::TooLong { len: text.len() });
        }
        if RESERVED_NAMES.contains(&text) {
            return Err(NameError::Reserved(text.to_owned()));
        }
        Ok(name)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Sessions created by webhook-spawn.
    pub fn is_hook(&self) -> bool {
        self.0.starts_with("hook-")
    }
}

impl fmt::Display for SessionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SessionName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charset_accepts_letters_digits_dash_underscore() {
        assert!(SessionName::parse("a").is_ok());
        assert!(SessionName::parse("A-9_z").is_ok());
    }

    #[test]
    fn charset_rejects_empty_space_unicode_slash_dots() {
        assert_eq!(SessionName::parse(""), Err(NameError::Empty));
        for bad in ["a b", "é", "a/b", "..", ".", "a\n", "a;b", "$(id)"] {
            assert!(matches!(SessionName::parse(bad), Err(NameError::BadChar { .. })), "{bad:?}");
        }
    }

    #[test]
    fn creation_rule_bounds_length_at_150_bytes() {
        let ok = "a".repeat(150);
        let long = "a".repeat(151);
        assert!(SessionName::parse_new(&ok).is_ok());
        assert_eq!(SessionName::parse_new(&long), Err(NameError::TooLong { len: 151 }));
        assert!(SessionName::parse(&long).is_ok(), "legacy long names stay removable");
    }

    #[test]
    fn reserved_names_refused_only_on_creation() {
        for reserved in RESERVED_NAMES {
            assert_eq!(SessionName::parse_new(reserved), Err(NameError::Reserved(reserved.into())));
            assert!(SessionName::parse(reserved).is_ok());
        }
        assert!(SessionName::parse_new("Settings").is_ok(), "case-sensitive");
    }

    #[test]
    fn hook_prefix() {
        assert!(SessionName::parse("hook-a").is_ok_and(|n| n.is_hook()));
        assert!(SessionName::parse("hooka").is_ok_and(|n| !n.is_hook()));
    }
}
