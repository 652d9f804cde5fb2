//! bench section `intake` (issue 24, docs/intake.md; bars Q13 and Q14): what the durable intake queue costs. (a)
//! webhook-spawn's run to exit 0 when its batch is admitted at once against when it queues on a full box, both
//! sampled in the same rounds; (b) a slot freed (an agent exits 0 on a full box with records waiting) to the
//! agent of the oldest queued record running, Q13; (c) the supervisor's idle tick with 500 records waiting on a
//! full box against one with none, sampled in the same rounds, Q14.

mod exit;
mod slot;
mod tick;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use agent_box_tests::Sandbox;

use super::Bench;
use super::fail::{Context, Outcome, fail};
use super::report::Metric;
use super::world::echo_product;

const SECTION: &str = "intake";

/// The intake section.
pub fn run(bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    exit::admitted_against_queued(metrics)?;
    slot::slot_to_agent(bench, metrics)?;
    tick::queued_against_none(metrics)
}

/// `agent-box-webhook-spawn` in `sandbox` for issue `object` of `acme/widgets` with delivery id `delivery`, the
/// fake agent's `args` as `AGENT_BOX_HOOK_SESSION_ARGS`; and the batch for its stdin.
pub(crate) fn dispatch(sandbox: &Sandbox, delivery: &str, object: usize, args: &[&str]) -> (Command, String) {
    let mut cmd = sandbox.cmd("agent-box-webhook-spawn");
    cmd.env("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets")
        .env("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:acme/*")
        .env("LOCAL_WEBHOOK_SPAWN_EVENT", "issues")
        .env("LOCAL_WEBHOOK_SPAWN_COUNT", "1")
        .env("LOCAL_WEBHOOK_SPAWN_META", format!(r#"{{"number":"{object}","delivery":"{delivery}"}}"#));
    if !args.is_empty() {
        cmd.env("AGENT_BOX_HOOK_SESSION_ARGS", serde_json::Value::from(args.to_vec()).to_string());
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    (cmd, format!("[github] issue #{object} opened by bench (delivery {delivery})\n"))
}

/// The echo line of a [`dispatch`]: the batch's variables before the command (the rest of the environment is the
/// sandbox's, printed once per section).
pub(crate) fn echo_dispatch(cmd: &Command) -> String {
    let vars: Vec<String> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?, v?.to_string_lossy())))
        .filter(|(k, _)| k.starts_with("LOCAL_WEBHOOK_SPAWN_") || *k == "AGENT_BOX_HOOK_SESSION_ARGS")
        .map(|(k, v)| format!("{k}={}", base::quote::quote_arg(&v)))
        .collect();
    format!("$ {} {}", vars.join(" "), echo_product(cmd).trim_start_matches("$ "))
}

/// Runs a [`dispatch`] to its exit: the wall time from spawn to exit in ms (the batch written to stdin in
/// between), once it exited 0 with a stdout line starting with `want`.
pub(crate) fn run_dispatch((mut cmd, batch): (Command, String), want: &str) -> Outcome<f64> {
    let started = Instant::now();
    let mut child = cmd.spawn().context(|| "starting agent-box-webhook-spawn".into())?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(batch.as_bytes()).context(|| "writing the batch".into())?;
    }
    let out = child.wait_with_output().context(|| "waiting for agent-box-webhook-spawn".into())?;
    let ms = ms(started.elapsed());
    expect(&out, want)?;
    Ok(ms)
}

fn expect(out: &Output, want: &str) -> Outcome<()> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && stdout.starts_with(want) {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    fail(format!(
        "agent-box-webhook-spawn exited with {} and said {:?} (wanted a line starting {want:?}); stderr: {}",
        out.status,
        stdout.trim(),
        stderr.trim()
    ))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
