//! `capacity [--json]` (50-session-cli §6): the capacity policy in check mode with no targets, against the
//! registry read without a lock. A read-only verb: takes no lock and creates nothing, not even a missing
//! registry.

use std::collections::BTreeSet;

use agent_box_types::report::CapacityReport;
use agent_box_types::{VERSION, pretty};
use registry::capacity::{Sets, sets};
use registry::{CapacityError, ReadOutcome, Usage};
use serde_json::{Map, Value};
use view::Context;

use crate::error::SessionError;
use crate::out::Out;

/// Runs `capacity [--json]`; any policy error is M19 (exit 75, nothing on stdout).
pub fn capacity(ctx: &Context, json: bool, out: &mut Out) -> Result<(), SessionError> {
    let (usage, sets) = evaluate(ctx)?;
    let queued = crate::ls::queue_counts(ctx, out).map(|c| c.queued);
    let text = if json { render_json(usage, &sets, queued)? } else { render_text(usage, queued) };
    out.bytes(text.as_bytes());
    Ok(())
}

/// Registry, then limit, then the live probe: the first failure is the policy error (10-registry RG-11).
fn evaluate(ctx: &Context) -> Result<(Usage, Sets), CapacityError> {
    let sessions = registry_sessions(ctx)?;
    let limit = registry::read_limit(ctx.paths.limit_file(), ctx.paths.meminfo_file())?;
    let live: BTreeSet<String> = ctx.live_set().map_err(CapacityError::Probe)?.into_iter().collect();
    let usage = registry::admit(&sessions, &live, limit, &[], registry::Mode::Check)?;
    Ok((usage, sets(&sessions, &live)))
}

/// The `sessions` object; a missing or empty registry has none, one that cannot be used is a policy error.
fn registry_sessions(ctx: &Context) -> Result<Map<String, Value>, CapacityError> {
    let file = ctx.paths.registry().display().to_string();
    match registry::read(ctx.paths.registry()) {
        ReadOutcome::Valid(doc) => Ok(doc.sessions().clone()),
        ReadOutcome::Missing | ReadOutcome::Empty => Ok(Map::new()),
        ReadOutcome::Invalid(reason) => Err(CapacityError::Limit(format!("{file} does not parse ({reason})"))),
        ReadOutcome::Unreadable(err) => Err(CapacityError::Limit(format!("cannot read {file} ({err})"))),
    }
}

/// The old helper's `{"used": 1, "max": 2}` with issue 24's `"queued": N` added (still one JSON object; `null` when
/// the queue could not be read).
pub fn render_text(usage: Usage, queued: Option<usize>) -> String {
    let queued = queued.map_or_else(|| "null".to_owned(), |n| n.to_string());
    format!("{{\"used\": {}, \"max\": {}, \"queued\": {queued}}}\n", usage.used, usage.max)
}

/// The JSON report of §12.4; every name list is sorted (byte order).
pub fn render_json(usage: Usage, sets: &Sets, queued: Option<usize>) -> Result<String, SessionError> {
    let names = |set: &BTreeSet<String>| set.iter().cloned().collect();
    let used = u64::try_from(usage.used).unwrap_or(u64::MAX);
    let report = CapacityReport {
        version: VERSION,
        used,
        max: usage.max,
        free: usage.max.saturating_sub(used),
        live: names(&sets.live),
        counted: names(&sets.used),
        died: names(&sets.died),
        queued,
    };
    pretty(&report).map_err(|e| SessionError::Failed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_box_tests::fake_tmux::FakeTmux;
    use tmux::TmuxError;

    use crate::testing::context;

    fn limit_files(dir: &std::path::Path, limit: &str) -> Vec<(String, String)> {
        std::fs::write(dir.join("limit"), limit).unwrap();
        std::fs::write(dir.join("meminfo"), "MemTotal: 1024 kB\n").unwrap();
        vec![
            ("AGENT_BOX_SESSION_LIMIT_FILE".into(), dir.join("limit").display().to_string()),
            ("AGENT_BOX_MEMINFO_FILE".into(), dir.join("meminfo").display().to_string()),
        ]
    }

    fn run(ctx: &Context, json: bool) -> (u8, String) {
        let mut out = Out::new();
        let code = capacity(ctx, json, &mut out).map_or_else(|e| e.exit_code(), |()| 0);
        (code, out.text())
    }

    #[test]
    fn sets_and_free_slots() {
        let home = tempfile::tempdir().unwrap();
        let env = limit_files(home.path(), "3\n");
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let ctx = context(home.path(), FakeTmux::live(&["b", "_connect-x", "z", "c"]), &env);
        std::fs::create_dir_all(ctx.paths.registry().parent().unwrap()).unwrap();
        std::fs::write(ctx.paths.registry(), r#"{"sessions":{"c":{"died":1},"a":{},"s":{"stopped":true},"b":{}}}"#)
            .unwrap();
        assert_eq!(run(&ctx, false), (0, "{\"used\": 3, \"max\": 3, \"queued\": 0}\n".to_owned()));
        let (code, text) = run(&ctx, true);
        assert_eq!(code, 0);
        let expected = CapacityReport {
            version: 1,
            used: 3,
            max: 3,
            free: 0,
            live: vec!["b".into(), "c".into(), "z".into()],
            counted: vec!["a".into(), "b".into(), "z".into()],
            died: vec!["c".into()],
            queued: Some(0),
        };
        assert_eq!(serde_json::from_str::<CapacityReport>(&text).unwrap(), expected);
        assert_eq!(text, pretty(&expected).unwrap());
    }

    #[test]
    fn policy_errors_print_nothing_and_exit_75() {
        let home = tempfile::tempdir().unwrap();
        let env = limit_files(home.path(), "0");
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let ctx = context(home.path(), FakeTmux::live(&[]), &env);
        assert_eq!(run(&ctx, false), (75, String::new()));
        let env = limit_files(home.path(), "2");
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let broken = FakeTmux::unreachable(TmuxError::Timeout);
        assert_eq!(run(&context(home.path(), broken, &env), true), (75, String::new()));
        let ctx = context(home.path(), FakeTmux::live(&[]), &env);
        assert_eq!(run(&ctx, false), (0, "{\"used\": 0, \"max\": 2, \"queued\": 0}\n".to_owned()));
        assert!(!ctx.paths.registry().exists(), "a missing registry is not created");
        std::fs::create_dir_all(ctx.paths.registry().parent().unwrap()).unwrap();
        std::fs::write(ctx.paths.registry(), "{").unwrap();
        assert_eq!(run(&ctx, false), (75, String::new()));
    }
}
