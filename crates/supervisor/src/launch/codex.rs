//! Finding the codex rollout a launch wrote (§12.2 item 4): by the stamp in its first prompt, never "last".

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use base::is_uuid;

use super::files::{self, MAX_READ};

/// Rollouts live at `sessions/YYYY/MM/DD/rollout-….jsonl`.
const ROLLOUT_DEPTH: usize = 4;
/// A codex session id is the last 36 characters of its rollout's file stem.
const ID_LEN: usize = 36;

/// The stamp a fresh codex start carries in front of its prompt, so the rollout can be found again.
pub fn stamp(bid: &str) -> String {
    format!("[agent-box session {bid}]")
}

/// The codex session id to resume for `bid`, if a rollout carries its stamp.
pub fn find_target(codex_home: &Path, bid: &str) -> Option<String> {
    let needle = stamp(bid);
    let matched = rollouts_newest_first(&codex_home.join("sessions"))
        .into_iter()
        .find(|path| files::read_head(path, MAX_READ).is_some_and(|(head, _)| contains(&head, needle.as_bytes())))?;
    // The first match decides: a newer rollout of this launch with an unusable name is not skipped for an older one.
    session_id_of(&matched)
}

fn rollouts_newest_first(sessions: &Path) -> Vec<PathBuf> {
    let mut rollouts: Vec<(SystemTime, PathBuf)> = files::files_within(sessions, ROLLOUT_DEPTH)
        .into_iter()
        .filter(|p| p.as_os_str().as_encoded_bytes().ends_with(b".jsonl"))
        .filter_map(|p| {
            let meta = std::fs::metadata(&p).ok().filter(|m| m.is_file())?;
            Some((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), p))
        })
        .collect();
    rollouts.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    rollouts.into_iter().map(|(_, p)| p).collect()
}

fn session_id_of(rollout: &Path) -> Option<String> {
    let stem = rollout.file_stem()?.as_encoded_bytes();
    let tail = stem.get(stem.len().checked_sub(ID_LEN)?..)?;
    std::str::from_utf8(tail).ok().filter(|id| is_uuid(id)).map(str::to_owned)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::Duration;

    const BID: &str = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";
    const OLD: &str = "11111111-2222-4333-8444-555555555555";
    const NEW: &str = "66666666-7777-4888-9999-aaaaaaaaaaaa";

    fn rollout(home: &Path, rel: &str, body: &[u8], age_secs: u64) -> PathBuf {
        let path = home.join("sessions").join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, body).unwrap();
        let mtime = SystemTime::now() - Duration::from_secs(age_secs);
        fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
        path
    }

    fn line(bid: &str) -> Vec<u8> {
        format!("{{\"type\":\"message\",\"content\":\"{} do it\"}}\n", stamp(bid)).into_bytes()
    }

    #[test]
    fn the_newest_stamped_rollout_wins() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(find_target(home.path(), BID), None, "no sessions directory");
        rollout(home.path(), &format!("2025/01/01/rollout-2025-01-01T00-00-00-{OLD}.jsonl"), &line(BID), 100);
        rollout(home.path(), &format!("2025/01/02/rollout-2025-01-02T00-00-00-{NEW}.jsonl"), &line(BID), 10);
        rollout(home.path(), "2025/01/03/rollout-x-99999999-2222-4333-8444-555555555555.jsonl", &line(OLD), 1);
        assert_eq!(find_target(home.path(), BID).as_deref(), Some(NEW));
    }

    #[test]
    fn no_stamp_no_target() {
        let home = tempfile::tempdir().unwrap();
        rollout(home.path(), &format!("2025/01/01/rollout-{OLD}.jsonl"), b"{\"type\":\"message\"}\n", 5);
        rollout(home.path(), &format!("2025/01/01/rollout-{NEW}.txt"), &line(BID), 1);
        assert_eq!(find_target(home.path(), BID), None);
    }

    #[test]
    fn stamps_beyond_the_first_mib_or_below_depth_four_are_not_seen() {
        let home = tempfile::tempdir().unwrap();
        let mut body = vec![b'x'; MAX_READ as usize];
        body.extend(line(BID));
        rollout(home.path(), &format!("2025/01/01/rollout-{OLD}.jsonl"), &body, 5);
        rollout(home.path(), &format!("2025/01/01/deep/rollout-{NEW}.jsonl"), &line(BID), 1);
        assert_eq!(find_target(home.path(), BID), None);
    }

    #[test]
    fn a_matching_rollout_needs_a_uuid_shaped_name() {
        let home = tempfile::tempdir().unwrap();
        rollout(home.path(), &format!("a/rollout-{OLD}.jsonl"), &line(BID), 50);
        rollout(home.path(), "a/rollout-short.jsonl", &line(BID), 1);
        assert_eq!(find_target(home.path(), BID), None, "the first match decides");
        assert_eq!(session_id_of(Path::new(&format!("/x/{OLD}.jsonl"))).as_deref(), Some(OLD));
        assert_eq!(session_id_of(Path::new("/x/a.jsonl")), None);
    }
}
