//! What the demo reads and prints: the state of a session from `agent-box-session ls --json`, and the text of
//! `ls`, `leases` and `log` after each milestone.

use std::process::Stdio;

use serde_json::Value;

use super::world::World;

impl World {
    /// The `ls` STATE of one session as its text form (`live`, `died(3)`, `live, UNRESOLVED ASSIGNMENT (…)`).
    pub fn state(&self, name: &str) -> String {
        let Ok(out) = self.product("agent-box-session").args(["ls", "--json"]).stderr(Stdio::null()).output() else {
            return "agent-box-session did not run".into();
        };
        let Ok(doc) = serde_json::from_slice::<Value>(&out.stdout) else { return "no listing".into() };
        let rows = doc["sessions"].as_array().cloned().unwrap_or_default();
        let Some(row) = rows.iter().find(|r| r["name"] == name) else { return "absent".into() };
        let state = match row["state"].as_str() {
            Some("died") => format!("died({})", row["died"]),
            Some(other) => other.to_owned(),
            None => "?".to_owned(),
        };
        match row["unresolved"].as_str() {
            Some(outcome) => format!("{state}, UNRESOLVED ASSIGNMENT ({outcome})"),
            None => state,
        }
    }

    pub fn print_ls(&self) {
        self.print_verb(&["ls"]);
    }

    pub fn print_leases(&self) {
        if !self.quiet() {
            self.print_verb(&["leases"]);
        }
    }

    pub fn print_log(&self) {
        if !self.quiet() {
            self.print_verb(&["log"]);
        }
    }

    fn print_verb(&self, args: &[&str]) {
        println!("$ agent-box-session {}", args.join(" "));
        let _ = self.product("agent-box-session").args(args).stdout(Stdio::inherit()).status();
    }
}
