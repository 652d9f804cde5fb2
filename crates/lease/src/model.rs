//! The lease document and its vocabulary: generations, outcomes, expectations and operation results.

use std::fmt;

use serde_json::{Map, Value};

/// One incarnation of a lease: lowercase UUID v4 text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Gen(String);

impl Gen {
    /// Accepts only the UUID shape, the one form allowed into a shell command.
    pub fn parse(text: &str) -> Option<Self> {
        base::is_uuid(text).then(|| Self(text.to_owned()))
    }
    pub fn random() -> Self {
        Self(base::new_uuid_v4())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Gen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a writer expects of the lease it touches (LS-6.3, LS-6.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// The lease must carry exactly this gen.
    Gen(Gen),
    /// The pane started unleased: no present lease may be touched.
    NoLease,
    /// Any present lease (the name itself is going away, or no gen was ever handed out).
    Any,
    /// A mangled token: matches nothing (40 MS-4.4).
    Nothing,
}

impl Expect {
    /// The epilogue's third argument: absent or `any` → Any, `-` → NoLease, a UUID → Gen, anything else →
    /// Nothing. `any` stands in for an absent GEN when a LIFE argument follows it (issue 17).
    pub fn from_arg(arg: Option<&str>) -> Self {
        match arg {
            None | Some("any") => Self::Any,
            Some("-") => Self::NoLease,
            Some(text) => Gen::parse(text).map_or(Self::Nothing, Self::Gen),
        }
    }

    /// Whether a present, readable lease with `gen` meets the expectation.
    pub(crate) fn met_by(&self, lease: &Lease) -> bool {
        match self {
            Self::Gen(g) => lease.gen_value() == Some(g.as_str()),
            Self::Any => true,
            Self::NoLease | Self::Nothing => false,
        }
    }
}

/// A recorded ending: `vanished`, `died:N`, `stopped`, or a value some other writer left (kept verbatim).
///
/// Every one of them is unresolved (LS-3): the box cannot say the work finished. `stopped` is written by
/// `agent-box-session stop` (LS-6.3), so the audit tells an operator's stop from a reap nobody accounted for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Vanished,
    Died(u32),
    Stopped,
    Other(String),
}

impl Outcome {
    pub fn parse(text: &str) -> Self {
        match text {
            "vanished" => return Self::Vanished,
            "stopped" => return Self::Stopped,
            _ => {}
        }
        let died = text.strip_prefix("died:").filter(|n| !n.starts_with('0') && !n.is_empty());
        match died.filter(|n| n.bytes().all(|b| b.is_ascii_digit())).and_then(|n| n.parse().ok()) {
            Some(status) => Self::Died(status),
            None => Self::Other(text.to_owned()),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Vanished => f.write_str("vanished"),
            Self::Died(status) => write!(f, "died:{status}"),
            Self::Stopped => f.write_str("stopped"),
            Self::Other(text) => f.write_str(text),
        }
    }
}

/// How a hook session's life ended, as written in the hook log's `how`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndHow {
    Exited,
    Died(u32),
    Rm,
    Reaped,
    Swept,
    /// webhook-spawn wrote the spawn record and then deferred the batch (issue 18): the session never started.
    Refused,
    /// Issue 26 (docs/boxes.md BX-8): another box holds the assignment's claim now; the local session ended.
    Elsewhere(String),
    /// Issue 26 (BX-6): the operator gave the claim up for another box to take (`agent-box-session release`).
    Released,
}

impl fmt::Display for EndHow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited => f.write_str("exited"),
            Self::Died(status) => write!(f, "died:{status}"),
            Self::Rm => f.write_str("rm"),
            Self::Reaped => f.write_str("reaped"),
            Self::Swept => f.write_str("swept"),
            Self::Refused => f.write_str("refused"),
            Self::Elsewhere(_) => f.write_str("elsewhere"),
            Self::Released => f.write_str("released"),
        }
    }
}

/// A lease file as read: any JSON object, key order and unknown keys kept (LS-2.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    map: Map<String, Value>,
}

impl Lease {
    /// Parses a lease file; anything but a JSON object is unreadable.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        match serde_json::from_slice(bytes) {
            Ok(Value::Object(map)) => Some(Self { map }),
            _ => None,
        }
    }
    pub(crate) fn from_map(map: Map<String, Value>) -> Self {
        Self { map }
    }
    pub fn raw(&self) -> &Map<String, Value> {
        &self.map
    }
    pub(crate) fn raw_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.map
    }
    fn text(&self, key: &str) -> Option<&str> {
        self.map.get(key).and_then(Value::as_str)
    }
    pub fn topic(&self) -> Option<&str> {
        self.text("topic")
    }
    pub fn object(&self) -> Option<&str> {
        self.text("object")
    }
    pub fn claimed_at(&self) -> Option<&str> {
        self.text("claimedAt")
    }
    /// The gen when it is a string (a non-string gen reads as null).
    pub fn gen_value(&self) -> Option<&str> {
        self.text("gen")
    }
    /// The gen when it is UUID-shaped, the only form handed to a pane.
    pub fn valid_gen(&self) -> Option<Gen> {
        self.gen_value().and_then(Gen::parse)
    }
    /// The outcome when it is a non-empty string (what `ls` calls unresolved).
    pub fn outcome(&self) -> Option<Outcome> {
        self.text("outcome").filter(|s| !s.is_empty()).map(Outcome::parse)
    }
    /// The raw outcome text when it is a string (reported verbatim in end records).
    pub fn outcome_text(&self) -> Option<&str> {
        self.text("outcome")
    }
    /// True when `outcome` holds anything but null: the first outcome wins.
    /// Issue 26: the claim of the assignment in the claims database (`{"assignment", "box"}`), when it has one.
    pub fn claim(&self) -> Option<(&str, &str)> {
        let claim = self.map.get("claim")?.as_object()?;
        Some((claim.get("assignment")?.as_str()?, claim.get("box")?.as_str()?))
    }

    pub fn outcome_is_set(&self) -> bool {
        self.map.get("outcome").is_some_and(|v| !v.is_null())
    }
    pub fn ended_at(&self) -> Option<&str> {
        self.text("endedAt")
    }
    pub fn last_seen_at(&self) -> Option<&str> {
        self.text("lastSeenAt")
    }
    /// `restart` marked this lease and the supervisor has not yet seen the pane it ended (issue 17).
    pub fn restart_pending(&self) -> bool {
        self.map.get("restartPending") == Some(&Value::Bool(true))
    }
    /// The supervisor saw this lease's life delisted (its side file swept): no new life may take it over.
    pub fn orphaned(&self) -> bool {
        self.map.get("orphanedAt").is_some_and(Value::is_string)
    }
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(&self.map).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

/// A lease file's state as seen by a lock-free reader.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseState {
    Absent,
    Unreadable,
    Present(Lease),
}

/// What a lease operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    Written,
    Touched,
    Cleared,
    NothingToClear,
    AlreadySet,
    Fresh,
    Frozen,
    Stale,
    Unverifiable,
    Absent,
    Unreadable,
    /// The absence of the pane was the operator's `restart` (issue 17): its mark was consumed, no outcome written.
    Restarted,
    /// `restart` of a leased session: recorded on the lease; with `stopped`, the assignment was revived.
    RestartRecorded {
        revived: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_parse_and_print() {
        assert_eq!(Outcome::parse("vanished"), Outcome::Vanished);
        assert_eq!(Outcome::parse("died:1"), Outcome::Died(1));
        assert_eq!(Outcome::parse("stopped"), Outcome::Stopped);
        assert_eq!(Outcome::Stopped.to_string(), "stopped");
        for other in ["died:01", "died:", "died:-1", "died:x", "gone", "died:99999999999"] {
            assert_eq!(Outcome::parse(other), Outcome::Other(other.into()), "{other}");
            assert_eq!(Outcome::parse(other).to_string(), other);
        }
        assert_eq!(Outcome::Died(7).to_string(), "died:7");
    }

    #[test]
    fn expectation_from_the_epilogue_argument() {
        assert_eq!(Expect::from_arg(None), Expect::Any);
        assert_eq!(Expect::from_arg(Some("-")), Expect::NoLease);
        let g = "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f";
        assert_eq!(Expect::from_arg(Some(g)), Expect::Gen(Gen::parse(g).unwrap()));
        assert_eq!(Expect::from_arg(Some("9F1C2D3E-4B5A-4C6D-8E7F-0A1B2C3D4E5F")), Expect::Nothing);
        assert_eq!(Expect::from_arg(Some("")), Expect::Nothing);
    }

    #[test]
    fn lenient_reading_of_old_and_hand_written_leases() {
        let lease = Lease::parse(br#"{"gen":7,"outcome":"","x":1}"#).unwrap();
        assert_eq!(lease.gen_value(), None, "a non-string gen reads as null");
        assert_eq!(lease.outcome(), None);
        assert!(lease.outcome_is_set(), "an empty string is still a first outcome");
        for bad in [&b"{\"topic\":"[..], b"[]", b"", b"null"] {
            assert!(Lease::parse(bad).is_none());
        }
    }

    #[test]
    fn a_lease_reads_its_topic_object_and_orphan_mark() {
        let lease =
            Lease::parse(br#"{"topic":"github:a/b","object":"42","orphanedAt":"2025-11-29T14:03:11Z"}"#).unwrap();
        assert_eq!((lease.topic(), lease.object(), lease.orphaned()), (Some("github:a/b"), Some("42"), true));
        let bare = Lease::parse(br#"{"topic":1,"orphanedAt":null}"#).unwrap();
        assert_eq!((bare.topic(), bare.object(), bare.orphaned()), (None, None, false));
    }
}
