//! What claude left on disk: transcripts under `~/.claude/projects`, the live id of a launch (F7), and the two
//! transcript questions of §12.3 (was there a real reply; is the last turn still open).

use std::path::{Path, PathBuf};

use base::is_uuid;
use registry::Paths;
use serde_json::Value;

use super::files::{self, MAX_READ};

/// Transcripts are looked for at most this deep below `~/.claude/projects` (`find -maxdepth 3`).
const TRANSCRIPT_DEPTH: usize = 3;
/// The open-turn check looks at no more than this many final lines.
const TAIL_LINES: usize = 200;
/// The model claude writes on records it made up itself (errors, interruptions), not a reply.
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// The transcript `<id>.jsonl` of a launch id, shallowest first.
pub fn transcript(home: &Path, id: &str) -> Option<PathBuf> {
    let file_name = format!("{id}.jsonl");
    let mut level = vec![home.join(".claude/projects")];
    for depth in 1..=TRANSCRIPT_DEPTH {
        if let Some(found) = level.iter().map(|dir| dir.join(&file_name)).find(|p| files::is_regular_file(p)) {
            return Some(found);
        }
        if depth < TRANSCRIPT_DEPTH {
            level = level.iter().flat_map(|dir| files::subdirectories(dir)).collect();
        }
    }
    None
}

/// The newer id claude continued under after `/clear`, when it is a UUID other than `bid` (§12.2 item 3).
pub fn live_id(paths: &Paths, bid: &str) -> Option<String> {
    files::first_line(&paths.live_id_dir().join(bid)).filter(|id| is_uuid(id) && id != bid)
}

/// Rule 3 of §12.3: true unless every assistant record is synthetic.
///
/// Only the first MiB is read; a longer transcript that shows no real reply there still counts as a conversation,
/// so a kickoff prompt is not fired a second time into it.
pub fn has_real_assistant(path: &Path) -> bool {
    let Some((bytes, truncated)) = files::read_head(path, MAX_READ) else { return true };
    truncated || bytes.split(|&b| b == b'\n').filter_map(parse_record).any(|record| is_real_assistant(&record))
}

/// The `auto` notice signal of §12.3: the final turn did not end with an assistant `end_turn`.
pub fn last_turn_open(path: &Path) -> bool {
    let Some((bytes, mid_file)) = files::read_tail(path, MAX_READ) else { return true };
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if bytes.ends_with(b"\n") {
        lines.pop();
    }
    if mid_file && !lines.is_empty() {
        // The window starts inside a line; that fragment is not a record.
        lines.remove(0);
    }
    let window = &lines[lines.len().saturating_sub(TAIL_LINES)..];
    let Some(last) = window.last() else { return true };
    if parse_record(last).is_none() {
        return true;
    }
    match window.iter().rev().filter_map(|line| parse_record(line)).find(is_turn_record) {
        Some(record) => !ends_turn(&record),
        None => true,
    }
}

fn parse_record(line: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(line).ok().filter(Value::is_object)
}

fn record_type(record: &Value) -> Option<&str> {
    record.get("type").and_then(Value::as_str)
}

fn is_turn_record(record: &Value) -> bool {
    matches!(record_type(record), Some("user" | "assistant"))
}

fn is_real_assistant(record: &Value) -> bool {
    record_type(record) == Some("assistant")
        && record.pointer("/message/model").and_then(Value::as_str) != Some(SYNTHETIC_MODEL)
}

fn ends_turn(record: &Value) -> bool {
    record_type(record) == Some("assistant")
        && record.pointer("/message/stop_reason").and_then(Value::as_str) == Some("end_turn")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const BID: &str = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";

    fn write(dir: &Path, lines: &[&str]) -> PathBuf {
        let path = dir.join("t.jsonl");
        fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        path
    }

    const USER: &str = r#"{"type":"user","message":{"role":"user","content":"hi"}}"#;
    const DONE: &str = r#"{"type":"assistant","message":{"model":"claude-x","stop_reason":"end_turn"}}"#;
    const TOOL: &str = r#"{"type":"assistant","message":{"model":"claude-x","stop_reason":"tool_use"}}"#;
    const SYNTH: &str = r#"{"type":"assistant","message":{"model":"<synthetic>","stop_reason":"stop_sequence"}}"#;
    const SUMMARY: &str = r#"{"type":"summary","summary":"x"}"#;

    #[test]
    fn transcripts_are_found_within_depth_three_only() {
        let home = tempfile::tempdir().unwrap();
        let projects = home.path().join(".claude/projects");
        fs::create_dir_all(projects.join("a/b/c")).unwrap();
        assert_eq!(transcript(home.path(), BID), None);
        fs::write(projects.join(format!("a/b/c/{BID}.jsonl")), b"").unwrap();
        assert_eq!(transcript(home.path(), BID), None, "depth 4 is too deep");
        fs::write(projects.join(format!("a/b/{BID}.jsonl")), b"").unwrap();
        assert_eq!(transcript(home.path(), BID), Some(projects.join(format!("a/b/{BID}.jsonl"))));
        fs::write(projects.join(format!("a/{BID}.jsonl")), b"").unwrap();
        assert_eq!(transcript(home.path(), BID), Some(projects.join(format!("a/{BID}.jsonl"))));
    }

    #[test]
    fn a_fifo_named_like_a_transcript_is_not_one() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".claude/projects/p");
        fs::create_dir_all(&dir).unwrap();
        nix::unistd::mkfifo(&dir.join(format!("{BID}.jsonl")), nix::sys::stat::Mode::from_bits_truncate(0o600))
            .unwrap();
        assert_eq!(transcript(home.path(), BID), None);
    }

    #[test]
    fn real_assistant_records() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!has_real_assistant(&write(dir.path(), &[USER, SYNTH, SYNTH])));
        assert!(!has_real_assistant(&write(dir.path(), &[USER])));
        assert!(!has_real_assistant(&write(dir.path(), &[])));
        assert!(has_real_assistant(&write(dir.path(), &[USER, SYNTH, TOOL, "garbage"])));
        let no_model = r#"{"type":"assistant","message":{}}"#;
        assert!(has_real_assistant(&write(dir.path(), &[USER, no_model])));
    }

    #[test]
    fn open_and_closed_turns() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!last_turn_open(&write(dir.path(), &[USER, DONE])));
        assert!(!last_turn_open(&write(dir.path(), &[USER, DONE, SUMMARY])), "other records are skipped");
        assert!(last_turn_open(&write(dir.path(), &[USER, DONE, USER])));
        assert!(last_turn_open(&write(dir.path(), &[USER, TOOL])));
        assert!(last_turn_open(&write(dir.path(), &[USER, DONE, "{\"type\":\"assi"])), "torn last line");
        assert!(last_turn_open(&write(dir.path(), &[SUMMARY])), "no user/assistant record");
        assert!(last_turn_open(&write(dir.path(), &[])));
        assert!(last_turn_open(&dir.path().join("missing.jsonl")));
    }

    #[test]
    fn only_the_last_200_lines_count() {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = vec![USER, DONE];
        lines.extend([SUMMARY; 200]);
        assert!(last_turn_open(&write(dir.path(), &lines)), "the closing record is beyond the window");
        lines.remove(2);
        assert!(!last_turn_open(&write(dir.path(), &lines)));
    }

    #[test]
    fn huge_transcripts_are_read_only_at_their_ends() {
        let dir = tempfile::tempdir().unwrap();
        let filler = format!(r#"{{"type":"user","message":{{"content":"{}"}}}}"#, "x".repeat(4000));
        let mut lines: Vec<&str> = vec![USER, SYNTH];
        lines.extend(std::iter::repeat_n(filler.as_str(), 600));
        lines.push(DONE);
        let path = write(dir.path(), &lines);
        assert!(fs::metadata(&path).unwrap().len() > 2 * MAX_READ);
        assert!(!last_turn_open(&path));
        assert!(has_real_assistant(&path), "beyond the first MiB it is taken as a conversation");
        let long_line = format!(r#"{{"type":"user","message":{{"content":"{}"}}}}"#, "y".repeat(3 << 20));
        let path = write(dir.path(), &[DONE, &long_line]);
        assert!(last_turn_open(&path), "a final line longer than the window cannot be read whole");
    }

    #[test]
    fn live_ids_must_be_other_uuids() {
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::for_root(home.path(), "agent");
        fs::create_dir_all(paths.live_id_dir()).unwrap();
        let other = "11111111-2222-4333-8444-555555555555";
        assert_eq!(live_id(&paths, BID), None);
        fs::write(paths.live_id_dir().join(BID), format!("{other}\nextra\n")).unwrap();
        assert_eq!(live_id(&paths, BID).as_deref(), Some(other));
        fs::write(paths.live_id_dir().join(BID), format!("{BID}\n")).unwrap();
        assert_eq!(live_id(&paths, BID), None);
        fs::write(paths.live_id_dir().join(BID), "not-a-uuid\n").unwrap();
        assert_eq!(live_id(&paths, BID), None);
    }
}
