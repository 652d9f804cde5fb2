//! Reading an entry for launch (SUP-12.0): the fatal shapes, and the values that may reach argv or env.

use registry::Entry;
use serde_json::Value;

use super::resolve::kind_of;
use super::{HarnessKind, PrepareError};

/// Keys whose string values can reach the harness command or the pane environment.
const COMMAND_KEYS: [&str; 6] =
    ["agent", "initialPrompt", "resumePrompt", "workingDirectory", "remoteControlName", "profile"];

/// The entry values launch needs, already checked for the fatal shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields<'a> {
    pub agent: &'a str,
    pub extra_args: Vec<String>,
    /// Absent, null or another type reads as empty.
    pub initial_prompt: &'a str,
    pub resume_prompt: &'a str,
}

/// Applies SUP-12.0; the error text is the `<problem>` of L14.
pub fn read<'a>(entry: Entry<'a>) -> Result<Fields<'a>, PrepareError> {
    let agent = match entry.get("agent") {
        Some(Value::String(agent)) if agent.is_empty() => return Err(fatal("agent is empty")),
        Some(Value::String(agent)) => agent.as_str(),
        _ => return Err(fatal("agent is missing or not a string")),
    };
    let extra_args = entry.extra_args().map_err(|e| PrepareError::Fatal(e.to_string()))?;
    // Checked whether or not this start uses the value: a broken entry should fail the same way every time.
    for key in COMMAND_KEYS {
        if entry.get(key).and_then(Value::as_str).is_some_and(has_nul) {
            return Err(PrepareError::Fatal(format!("{key} contains a NUL byte")));
        }
    }
    if extra_args.iter().any(|arg| has_nul(arg)) {
        return Err(fatal("extraArgs contains a NUL byte"));
    }
    // Issue 25: claude's option would take the `--` before the prompt, and then the prompt, as its value.
    if kind_of(agent) == HarnessKind::Claude
        && let Some(option) = base::claude_args::dangling_value_option(&extra_args)
    {
        return Err(PrepareError::Fatal(format!(
            "extraArgs ends in '{option}', which takes a value: claude would take the prompt for it"
        )));
    }
    Ok(Fields {
        agent,
        extra_args,
        initial_prompt: entry.initial_prompt().unwrap_or_default(),
        resume_prompt: entry.resume_prompt().unwrap_or_default(),
    })
}

fn has_nul(text: &str) -> bool {
    text.as_bytes().contains(&0)
}

fn fatal(problem: &str) -> PrepareError {
    PrepareError::Fatal(problem.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    fn entry(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    fn problem(value: Value) -> String {
        match read(Entry::of(&entry(value))) {
            Err(PrepareError::Fatal(problem)) => problem,
            other => panic!("expected a fatal shape, got {other:?}"),
        }
    }

    #[test]
    fn agent_must_be_a_non_empty_string() {
        assert_eq!(problem(json!({})), "agent is missing or not a string");
        assert_eq!(problem(json!({"agent": 7})), "agent is missing or not a string");
        assert_eq!(problem(json!({"agent": null})), "agent is missing or not a string");
        assert_eq!(problem(json!({"agent": ""})), "agent is empty");
    }

    #[test]
    fn extra_args_must_be_an_array_of_strings() {
        assert_eq!(problem(json!({"agent": "claude", "extraArgs": "--x"})), "extraArgs is not an array of strings");
        assert_eq!(problem(json!({"agent": "claude", "extraArgs": ["a", 1]})), "extraArgs is not an array of strings");
        let map = entry(json!({"agent": "claude", "extraArgs": null}));
        assert_eq!(read(Entry::of(&map)).unwrap().extra_args, Vec::<String>::new());
    }

    #[test]
    fn a_nul_anywhere_on_the_way_to_the_command_is_fatal() {
        for key in COMMAND_KEYS {
            let mut map = entry(json!({"agent": "claude"}));
            map.insert(key.into(), Value::from("a\u{0}b"));
            let expected = format!("{key} contains a NUL byte");
            assert_eq!(read(Entry::of(&map)), Err(PrepareError::Fatal(expected)), "{key}");
        }
        assert_eq!(problem(json!({"agent": "claude", "extraArgs": ["ok", "x\u{0}"]})), "extraArgs contains a NUL byte");
    }

    #[test]
    fn wrong_types_of_optional_values_read_as_absent() {
        let map = entry(json!({"agent": "tool", "initialPrompt": 3, "resumePrompt": ["x"]}));
        let fields = read(Entry::of(&map)).unwrap();
        assert_eq!((fields.agent, fields.initial_prompt, fields.resume_prompt), ("tool", "", ""));
    }
}
