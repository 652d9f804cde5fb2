//! `peers [--json]` (50-session-cli §5): who else is live on this box, on what, and what each one claims. The
//! report and its text come from `view::peers` (the webhook spawner shows the same text in its prompts); the
//! verb adds the caller's own session, the warning and the JSON.

use agent_box_types::report::PeersReport;
use agent_box_types::{VERSION, pretty};
use view::Context;
use view::peers::{Report, collect, render_text, self_name};

use crate::error::SessionError;
use crate::messages;
use crate::out::Out;

/// Runs `peers [--json]`; M34 (exit 1, nothing on stdout) when tmux could not be asked.
pub fn peers(ctx: &Context, json: bool, out: &mut Out) -> Result<(), SessionError> {
    let me = self_name(ctx);
    let report = collect(ctx, me.as_deref()).map_err(SessionError::LiveUnknown)?;
    if let Some(reason) = &report.registry_unusable {
        out.warn(messages::registry_unusable(&ctx.paths.registry().display().to_string(), reason));
    }
    let queue = crate::ls::queue_counts(ctx, out);
    let text = if json {
        render_json(&report, queue)?
    } else {
        let mut text = render_text(&report.peers);
        crate::ls::queue_lines(&mut text, queue);
        text
    };
    out.bytes(text.as_bytes());
    Ok(())
}

/// The JSON report of §12.3.
pub fn render_json(report: &Report, queue: Option<view::queue::Counts>) -> Result<String, SessionError> {
    let document = PeersReport {
        version: VERSION,
        me: report.me.clone(),
        registry: report.registry,
        sessions: report.peers.clone(),
        queue,
    };
    pretty(&document).map_err(|e| SessionError::Failed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_box_types::report::{Claims, FilterStatus, PeerKind, RegistryStatus};
    use serde_json::Value;

    #[test]
    fn json_shape_and_order() {
        let peer = agent_box_types::report::Peer {
            name: "hook-a".into(),
            kind: PeerKind::Dispatched,
            listed: false,
            harness: None,
            working_directory: None,
            died: None,
            unresolved: None,
            claims: Claims { filter: FilterStatus::Missing, enabled: false, topics: Vec::new() },
        };
        let report = Report {
            me: Some("b".into()),
            registry: RegistryStatus::Missing,
            registry_unusable: None,
            peers: vec![peer],
        };
        let text = render_json(&report, None).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["version"], 1);
        assert_eq!(value["self"], "b");
        assert_eq!(value["registry"], "missing");
        let row = value["sessions"][0].as_object().unwrap();
        let keys: Vec<&String> = row.keys().collect();
        assert_eq!(keys, ["name", "kind", "listed", "harness", "workingDirectory", "died", "unresolved", "claims"]);
        assert_eq!(row["kind"], "dispatched");
        assert_eq!(row["claims"], serde_json::json!({"filter": "missing", "enabled": false, "topics": []}));
        let parsed: PeersReport = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed.sessions[0].kind, PeerKind::Dispatched);
    }
}
