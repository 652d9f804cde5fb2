//! The supervisor's per-session side file (00-overview F6, SUP-11): what it observed, where no other writer goes.

use std::path::Path;

pub use agent_box_types::side::SideFile;
use base::is_uuid;
use registry::write_atomic;
use serde_json::Value;

/// Reading and writing the side file. The document type lives in `agent_box_types`; reading stays key by key, so
/// a bad value of one key (an id that is no UUID) loses that key only.
pub trait SideFileIo: Sized {
    /// Reads a side file; missing or unparseable files say nothing.
    fn read(path: &Path) -> Self;
    /// The side file of `bytes`; only a UUID-shaped id counts (SUP-11.2).
    fn parse(bytes: &[u8]) -> Self;
    /// Compact, one line, keys in the documented order, absent values left out.
    fn to_bytes(&self) -> Vec<u8>;
    /// Writes the file with the atomic helper, creating the side directory (0700) when missing.
    fn write(&self, path: &Path) -> std::io::Result<()>;
    /// The file as it concerns the entry of life `life` (issue 17): a file of another life says nothing.
    fn of_life(self, life: Option<&str>) -> Self;
}

impl SideFileIo for SideFile {
    fn read(path: &Path) -> Self {
        std::fs::read(path).ok().map(|bytes| Self::parse(&bytes)).unwrap_or_default()
    }

    fn parse(bytes: &[u8]) -> Self {
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(bytes) else { return Self::default() };
        let uuid = |key: &str| map.get(key).and_then(Value::as_str).filter(|s| is_uuid(s)).map(str::to_owned);
        Self {
            life: uuid("life"),
            launch_session_id: uuid("launchSessionId"),
            lease_gen: uuid("leaseGen"),
            backoff_until: map.get("backoffUntil").and_then(Value::as_str).map(str::to_owned),
            quick_exits: map.get("quickExits").and_then(Value::as_u64),
            harness_missing: map.get("harnessMissing").and_then(Value::as_str).map(str::to_owned),
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        agent_box_types::line(self).unwrap_or_default()
    }

    fn write(&self, path: &Path) -> std::io::Result<()> {
        registry::ensure_private_dir(registry::atomic::parent_dir(path))?;
        write_atomic(path, &self.to_bytes()).map(drop)
    }

    fn of_life(self, life: Option<&str>) -> Self {
        match &self.life {
            Some(own) if Some(own.as_str()) != life => Self::default(),
            _ => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_valid_ids_and_ignores_bad_ones_and_extra_keys() {
        let good = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";
        let side = SideFile::parse(
            format!(r#"{{"launchSessionId":"{good}","x":1,"leaseGen":"nope","quickExits":3}}"#).as_bytes(),
        );
        assert_eq!(side.launch_session_id.as_deref(), Some(good));
        assert_eq!(side.lease_gen, None);
        assert_eq!(side.quick_exits, Some(3));
        assert_eq!(
            SideFile::parse(br#"{"launchSessionId":"0B6F3C0E-6A51-4B8E-9A3E-2F7D1C4E5A90"}"#).launch_session_id,
            None
        );
        assert_eq!(SideFile::parse(b"garbage"), SideFile::default());
        assert_eq!(SideFile::read(Path::new("/nonexistent/x.json")), SideFile::default());
    }

    #[test]
    fn writes_compact_keys_in_order() {
        let side = SideFile {
            life: None,
            launch_session_id: Some("a".into()),
            lease_gen: Some("b".into()),
            backoff_until: Some("2026-11-29T14:03:11Z".into()),
            quick_exits: Some(2),
            harness_missing: Some("claude".into()),
        };
        assert_eq!(
            side.to_bytes(),
            b"{\"launchSessionId\":\"a\",\"leaseGen\":\"b\",\"backoffUntil\":\"2026-11-29T14:03:11Z\",\"quickExits\":2,\"harnessMissing\":\"claude\"}\n"
        );
        assert_eq!(SideFile::parse(&side.to_bytes()).harness_missing.as_deref(), Some("claude"));
        let plain = SideFile { launch_session_id: Some("a".into()), ..SideFile::default() };
        assert_eq!(plain.to_bytes(), b"{\"launchSessionId\":\"a\"}\n");
    }
}
