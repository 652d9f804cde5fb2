//! The decision table of 30-supervisor §5 as a pure function of what one tick saw for one registry key.

use registry::Entry;

/// What the tick does for one key (D1–D12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// D1: the key fails the name charset; never started, its files never touched.
    IgnoreBadKey,
    /// D3: the value is not an object.
    NotAnObject,
    /// D2, D4, D5, D7: nothing to do.
    Nothing,
    /// D9: crashed, its post-mortem pane is up: nothing to do but say so once (L21).
    PostMortem,
    /// D6: parked ephemeral entry with no pane: reap it.
    Reap,
    /// D8: running: heartbeat and backoff graduation.
    Running,
    /// D10: never launched: first spawn.
    FirstSpawn,
    /// D11: launched, crashed, pane gone (restart or post-mortem shell exited): respawn, no vanished mark.
    RespawnAfterCrash,
    /// D12: launched, pane gone without an epilogue: mark the lease vanished, then respawn.
    RespawnVanished,
}

/// What is known about one key this tick.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    pub key_valid: bool,
    /// `None` when the value is not an object.
    pub entry: Option<Entry<'a>>,
    pub pane_present: bool,
    /// SUP-11.2: the side file has a valid launch id, or `hasRun` is true (only read when it matters).
    pub launched: bool,
}

/// The decision table of §5.
pub fn decide(seen: &Seen<'_>) -> Action {
    if !seen.key_valid {
        return Action::IgnoreBadKey;
    }
    let Some(entry) = seen.entry else { return Action::NotAnObject };
    let died = entry.died().is_some();
    match (entry.stopped(), seen.pane_present) {
        (true, true) => Action::Nothing,
        (true, false) if died => Action::Nothing,
        (true, false) if entry.ephemeral() => Action::Reap,
        (true, false) => Action::Nothing,
        (false, true) if died => Action::PostMortem,
        (false, true) => Action::Running,
        (false, false) if !seen.launched => Action::FirstSpawn,
        (false, false) if died => Action::RespawnAfterCrash,
        (false, false) => Action::RespawnVanished,
    }
}

/// True when the action needs the side file to tell whether the entry was launched.
pub fn needs_launch_state(entry: Entry<'_>, pane_present: bool) -> bool {
    !entry.stopped() && !pane_present
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn decide_for(entry: &Map<String, Value>, pane_present: bool, launched: bool) -> Action {
        decide(&Seen { key_valid: true, entry: Some(Entry::of(entry)), pane_present, launched })
    }

    // D1–D12
    #[test]
    fn every_row_of_the_decision_table_gives_its_action() {
        let plain = map(json!({"agent": "tool"}));
        let bad = Seen { key_valid: false, entry: Some(Entry::of(&plain)), pane_present: true, launched: true };
        assert_eq!(decide(&bad), Action::IgnoreBadKey, "D1");
        let odd = Seen { key_valid: true, entry: None, pane_present: false, launched: false };
        assert_eq!(decide(&odd), Action::NotAnObject, "D3");
        let stopped = map(json!({"stopped": true}));
        assert_eq!(decide_for(&stopped, true, true), Action::Nothing, "D4");
        assert_eq!(decide_for(&stopped, false, true), Action::Nothing, "D5");
        let ephemeral = map(json!({"stopped": true, "ephemeral": true}));
        assert_eq!(decide_for(&ephemeral, false, true), Action::Reap, "D6");
        assert_eq!(decide_for(&ephemeral, true, true), Action::Nothing, "D4 for an ephemeral pane still up");
        let crashed_parked = map(json!({"stopped": true, "ephemeral": true, "died": 1}));
        assert_eq!(decide_for(&crashed_parked, false, true), Action::Nothing, "D7: a crash is never reaped");
        assert_eq!(decide_for(&plain, true, true), Action::Running, "D8");
        let died = map(json!({"died": 3}));
        assert_eq!(decide_for(&died, true, true), Action::PostMortem, "D9: the post-mortem shell stays");
        assert_eq!(decide_for(&plain, false, false), Action::FirstSpawn, "D10");
        assert_eq!(decide_for(&died, false, true), Action::RespawnAfterCrash, "D11");
        assert_eq!(decide_for(&plain, false, true), Action::RespawnVanished, "D12");
    }

    #[test]
    fn only_json_true_parks_and_any_died_value_counts() {
        let string_true = map(json!({"stopped": "true"}));
        assert_eq!(decide_for(&string_true, false, false), Action::FirstSpawn);
        let died_text = map(json!({"died": "x"}));
        assert_eq!(decide_for(&died_text, true, true), Action::PostMortem);
        let died_null = map(json!({"died": null}));
        assert_eq!(decide_for(&died_null, true, true), Action::Running);
    }

    /// The side file is read exactly when the decision depends on it: wherever `needs_launch_state` is false,
    /// `launched` changes nothing, and where it is true it tells D10 from D11/D12.
    #[test]
    fn the_launch_state_is_needed_exactly_where_it_changes_the_action() {
        let entries =
            [json!({}), json!({"died": 1}), json!({"stopped": true}), json!({"stopped": true, "ephemeral": true})];
        for entry in entries.map(map) {
            for pane_present in [false, true] {
                let differs = decide_for(&entry, pane_present, true) != decide_for(&entry, pane_present, false);
                let needed = needs_launch_state(Entry::of(&entry), pane_present);
                assert_eq!(needed, differs, "{entry:?}, pane present: {pane_present}");
            }
        }
    }
}
