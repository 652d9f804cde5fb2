//! The identity of one tmux session (issue 25): the server that runs it and the id that server gave it, so that a
//! caller which found a session under a lock ends later that session and no other.
//!
//! A session name is not an identity: the supervisor starts a new session under the same name as soon as the old
//! one is gone. tmux gives every session an id `$N` that the server never hands out again, but a new server counts
//! from `$0` again, so the server's pid is part of the identity.

use std::fmt;

/// One session on one server. Only the adapter builds it, from what tmux listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionId {
    server_pid: u32,
    number: u32,
}

impl SessionId {
    /// The pid of the server that gave the id.
    pub fn server_pid(&self) -> u32 {
        self.server_pid
    }

    /// The `N` of `$N`.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// `$N`, the target tmux resolves to exactly this session.
    pub(crate) fn target(&self) -> String {
        format!("${}", self.number)
    }

    /// A line of [`SESSION_ID_FORMAT`]: `PID $N NAME`; `None` for anything else (a line tmux did not write so).
    pub(crate) fn parse_line(line: &str) -> Option<(String, Self)> {
        let (pid, rest) = line.split_once(' ')?;
        let (id, name) = rest.split_once(' ')?;
        let number = id.strip_prefix('$')?;
        let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        if !digits(pid) || !digits(number) || name.is_empty() {
            return None;
        }
        Some((name.to_owned(), Self { server_pid: pid.parse().ok()?, number: number.parse().ok()? }))
    }

    /// For the in-memory fake of the tests.
    pub fn new(server_pid: u32, number: u32) -> Self {
        Self { server_pid, number }
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${} of server {}", self.number, self.server_pid)
    }
}

/// What `list-sessions -F` prints per session: the server's pid (`#{pid}` is the server's in any context), the
/// session's id, its name last (a name may hold spaces). Ours, not data.
pub(crate) const SESSION_ID_FORMAT: &str = "#{pid} #{session_id} #{session_name}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_line_gives_name_and_identity_and_nothing_else_parses() {
        let (name, id) = SessionId::parse_line("4242 $17 hook-a b").unwrap();
        assert_eq!((name.as_str(), id.server_pid(), id.target()), ("hook-a b", 4242, "$17".to_owned()));
        for bad in ["", "4242", "4242 $17", "4242 17 a", "x $1 a", "4242 $ a", "4242 $1x a", "-1 $1 a", "4242 $1 "] {
            assert_eq!(SessionId::parse_line(bad), None, "{bad:?}");
        }
        assert_eq!(SessionId::new(7, 3).to_string(), "$3 of server 7");
    }
}
