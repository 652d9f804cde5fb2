//! Spawn mode (60-webhook-spawn §4, issue 24): everything slow or fallible outside the lock, then ONE
//! registry-lock section in which the batch is accepted by the intake queue (docs/intake.md): a duplicate, joined
//! to the queued record of its assignment, or a new record, admitted at once when nothing waits before it and a
//! slot is free. Exit 0 means the batch is durably recorded; 75 only that nothing could be written.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::Read;

use agent_box_types::intake::{Batch as RecordBatch, RECORD_NOTE, Record};
use intake::key::{Inputs, assignment, delivery_ids, input_key, object};
use intake::{Accepted, Bounds, Incoming, Queue, Site};
use lease::{HookLog, LeaseDir, RefusalRecord};
use view::Context;

use crate::claim::parse_meta;
use crate::error::SpawnError;
use crate::inputs::{Batch, dangling_for, extra_args, harness, read_batch, report_profiles, seed_problem};
use crate::messages;
use crate::name::{sanitised, too_long};
use crate::out::Out;
use crate::prompt::{bounded_peers, peers_unavailable};

/// Everything settled before the lock.
struct Plan {
    incoming: Incoming,
    peers: String,
    bounds: Bounds,
}

/// Why planning stopped before the lock.
enum Stop {
    Usage(String),
    Refused(String),
}

/// Runs spawn mode: `Ok` when the batch is durably recorded (its line in `out`) or empty.
pub fn spawn(env: &impl Fn(&str) -> Option<OsString>, stdin: &mut impl Read, out: &mut Out) -> Result<(), SpawnError> {
    let ctx = Context::from_lookup(env).map_err(|problem| SpawnError::Usage(problem.0))?;
    let plan = match plan(&ctx, env, stdin, out) {
        Ok(Some(plan)) => plan,
        Ok(None) => return Ok(()),
        Err(Stop::Usage(text)) => return Err(SpawnError::Usage(text)),
        Err(Stop::Refused(cause)) => return Err(defer(&ctx, env, cause)),
    };
    let accepted = registry::with_lock(ctx.paths.registry(), ctx.lock_wait, registry::LockPolicy::FRONT_END, |guard| {
        let live: Result<BTreeSet<String>, String> = ctx.live_set().map(|live| live.into_iter().collect());
        let (queue, leases, log) = parts(&ctx);
        let peers = || plan.peers.clone();
        let site = Site {
            paths: &ctx.paths,
            queue: &queue,
            leases: &leases,
            log: &log,
            live: &live,
            peers: &peers,
            now: base::time::now_epoch(),
            // Issue 26: with a claims database only the supervisor admits, once it holds the claim (BX-1); the
            // variable (the installed wrappers export it) or the supervisor's marker says there is one.
            admit_at_once: env("AGENT_BOX_CLAIMS").is_none_or(|v| v.is_empty())
                && !intake::marker::configured(ctx.paths.state_dir()),
        };
        intake::accept(&site, guard, &plan.incoming, &plan.bounds).map_err(|err| err.to_string())
    })
    .map_err(|err| err.to_string())
    .and_then(|accepted| accepted);
    match accepted {
        Ok(accepted) => {
            report(&plan, accepted, out);
            Ok(())
        }
        Err(cause) => Err(defer(&ctx, env, cause)),
    }
}

fn parts(ctx: &Context) -> (Queue, LeaseDir, HookLog) {
    (Queue::new(ctx.paths.queue_dir()), LeaseDir::new(ctx.paths.lease_dir()), HookLog::new(ctx.paths.hook_log()))
}

/// The stdout line and the warnings of what became of the batch.
fn report(plan: &Plan, accepted: Accepted, out: &mut Out) {
    let harness = &plan.incoming.record.harness;
    let line = match accepted {
        Accepted::Admitted(admitted) => {
            admitted.notes.iter().for_each(|note| out.warn(note.clone()));
            messages::added(admitted.name.as_str(), harness)
        }
        Accepted::Queued { position, queued, why, .. } => messages::queued(position, queued, why.as_deref()),
        Accepted::Coalesced { into, position, events, .. } => messages::coalesced(&into, position, events),
        Accepted::Duplicate { key, how, name } => messages::duplicate(&key, &how, name.as_deref()),
        Accepted::Claimed { by, .. } => messages::claimed(&by),
    };
    out.added(line);
}

/// Steps 1–5: configuration, batch, claim inputs, keys, peers. `Ok(None)` = empty batch.
fn plan(
    ctx: &Context,
    env: &impl Fn(&str) -> Option<OsString>,
    stdin: &mut impl Read,
    out: &mut Out,
) -> Result<Option<Plan>, Stop> {
    let text = |k: &str| env(k).map(|v| v.to_string_lossy().into_owned());
    let harness = harness(text("AGENT_BOX_DEFAULT_AGENT").as_deref(), text("AGENT_BOX_AGENTS").as_deref())
        .map_err(Stop::Usage)?;
    let (mut args, args_ok) = extra_args(text("AGENT_BOX_HOOK_SESSION_ARGS").as_deref());
    if !args_ok {
        out.warn(messages::ARGS_UNUSABLE);
    }
    if let Some(option) = dangling_for(&harness, &args) {
        out.warn(messages::args_dangling(option));
        args.clear();
    }
    let batch = Batch::from_env(env);
    report_profiles(batch.config.as_deref(), text("AGENT_BOX_HOOK_PROFILE").as_deref(), &harness, out);
    let (bounds, problems) = Bounds::from_lookup(env);
    problems.iter().for_each(|problem| out.warn(messages::bound_ignored(&problem.to_string())));
    let Some(batch_text) = read_batch(stdin).map_err(|e| Stop::Refused(messages::stdin_failed(&e.to_string())))? else {
        return Ok(None);
    };
    let key_set = env("LOCAL_WEBHOOK_SPAWN_KEY").is_some();
    let seed = match seed_problem(&batch, key_set, env("LOCAL_WEBHOOK_SPAWN_SOURCE").is_some()) {
        Ok(()) => true,
        Err(why) => {
            if let Some(why) = why {
                out.warn(messages::unclaimable(&why));
            }
            false
        }
    };
    let meta = parse_meta(batch.meta.as_deref());
    if meta.is_none() {
        out.warn(messages::META_UNUSABLE);
    }
    let clean = sanitised(&batch.key);
    if too_long(&clean) {
        out.warn(messages::key_too_long(&batch.key_prose()));
    }
    let peers = match view::peers::report_text(ctx, None) {
        Ok(report) => bounded_peers(&report),
        Err(reason) => peers_unavailable(&reason),
    };
    let object = object(meta.as_ref());
    let record = record(ctx, &batch, batch_text, (harness, args, seed), clean, object);
    Ok(Some(Plan { incoming: Incoming { record }, peers, bounds }))
}

/// The record this batch would be on its own.
fn record(
    ctx: &Context,
    batch: &Batch,
    text: String,
    (harness, args, seed): (String, Vec<String>, bool),
    name_stem: String,
    object: Option<String>,
) -> Record {
    let count_text = batch.count.map(|c| c.to_string()).unwrap_or_default();
    let mut keys = delivery_ids(batch.meta.as_deref());
    if keys.is_empty() {
        keys.push(input_key(&Inputs {
            source: &batch.source,
            routing_key: &batch.key,
            event: &batch.event,
            topic: &batch.topic,
            note: &batch.note,
            count: &count_text,
            meta: batch.meta.as_deref(),
            text: &text,
        }));
    }
    let now = base::time::format_iso(base::time::now_epoch());
    let key = keys[0].clone();
    Record {
        note_text: RECORD_NOTE.to_owned(),
        version: 1,
        assignment: assignment(&batch.own(), seed, object.as_deref(), &key),
        key,
        source: batch.source.clone(),
        routing_key: batch.key_text(),
        name_stem,
        topic: batch.topic.clone(),
        note: batch.note.clone(),
        object,
        harness,
        args,
        seed,
        filter_dir: ctx.paths.webhook_state_dir().display().to_string(),
        user: ctx.paths.user().to_owned(),
        accepted_at: now.clone(),
        batches: vec![RecordBatch {
            keys,
            at: now,
            event: batch.event.clone(),
            count: batch.count,
            meta: batch.meta.clone(),
            text,
        }],
        outcome: None,
        ended_at: None,
        notified_at: None,
        notify: None,
        elsewhere: None,
    }
}

/// §8.4: the refusal record, then the deferral (its cause, W19 when the record failed, W9; exit 75).
fn defer(ctx: &Context, env: &impl Fn(&str) -> Option<OsString>, cause: String) -> SpawnError {
    let text = |k: &str| env(k).map(|v| v.to_string_lossy().into_owned()).unwrap_or_default();
    let record = RefusalRecord::new(ctx.paths.refusal_record());
    let (topic, key) = (text("LOCAL_WEBHOOK_SPAWN_TOPIC"), text("LOCAL_WEBHOOK_SPAWN_KEY"));
    let bumped = record.bump(None, None, &topic, &key, &cause);
    let record_failed =
        bumped.err().map(|err| messages::record_failed(&record.path().display().to_string(), &err.to_string()));
    SpawnError::Deferred { cause, record_failed }
}
