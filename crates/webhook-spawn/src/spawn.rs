//! Spawn mode (60-webhook-spawn §4): everything slow or fallible outside the lock, then ONE registry-lock section
//! for admission, claim seed, entry, lease and log line, so a refused batch leaves nothing behind.

use std::ffi::OsString;
use std::io::Read;

use agent_box_types::filter::{FilterSeed, SeededTopic};
use base::{SessionName, new_uuid_v4};
use lease::{EndHow, HookLog, LeaseDir, RefusalRecord, SpawnRecord};
use registry::store::{read_for_write, write_document};
use registry::{CapacityError, NewEntry, RegistryError, RegistryLock, new_entry};
use view::Context;

use crate::claim::{Meta, note, parse_meta, predicate};
use crate::error::SpawnError;
use crate::inputs::{Batch, extra_args, harness, read_batch, report_profiles, seed_problem};
use crate::messages;
use crate::name::{mint, sanitised, too_long};
use crate::out::Out;
use crate::prompt::{
    Parts, assign_sentence, assignment_armed, bounded_batch, bounded_peers, peers_unavailable, render,
};
use crate::prose::prose;

/// Everything settled before the lock.
struct Plan {
    harness: String,
    args: Vec<String>,
    batch: Batch,
    text: String,
    seed: bool,
    meta: Option<Meta>,
    peers: String,
}

/// Why a batch is deferred: the cause line and, for a capacity refusal, the admission's figures.
struct Refusal {
    cause: String,
    counts: Option<(usize, u64)>,
}

impl Refusal {
    fn because(cause: String) -> Self {
        Self { cause, counts: None }
    }
}

/// Why planning stopped before the lock.
enum Stop {
    Usage(String),
    Refused(Refusal),
}

/// Runs spawn mode (§4): `Ok` when the batch is done, an entry added (its line in `out`) or the batch empty.
pub fn spawn(env: &impl Fn(&str) -> Option<OsString>, stdin: &mut impl Read, out: &mut Out) -> Result<(), SpawnError> {
    let ctx = Context::from_lookup(env).map_err(|problem| SpawnError::Usage(problem.0))?;
    let plan = match plan(&ctx, env, stdin, out) {
        Ok(Some(plan)) => plan,
        Ok(None) => return Ok(()),
        Err(Stop::Usage(text)) => return Err(SpawnError::Usage(text)),
        Err(Stop::Refused(refusal)) => return Err(defer(&ctx, env, refusal)),
    };
    let added = registry::with_lock(ctx.paths.registry(), ctx.lock_wait, registry::LockPolicy::FRONT_END, |guard| {
        critical_section(&ctx, guard, &plan, out)
    })
    .map_err(|e| Refusal::because(e.to_string()))
    .and_then(|added| added);
    match added {
        Ok(name) => {
            if too_long(&sanitised(&plan.batch.key)) {
                out.warn(messages::called_instead(name.as_str()));
            }
            out.added(messages::added(name.as_str(), &plan.harness));
            Ok(())
        }
        Err(refusal) => Err(defer(&ctx, env, refusal)),
    }
}

/// Steps 1–5: configuration, batch, claim inputs, peers. `Ok(None)` = empty batch.
fn plan(
    ctx: &Context,
    env: &impl Fn(&str) -> Option<OsString>,
    stdin: &mut impl Read,
    out: &mut Out,
) -> Result<Option<Plan>, Stop> {
    let text = |k: &str| env(k).map(|v| v.to_string_lossy().into_owned());
    let harness = harness(text("AGENT_BOX_DEFAULT_AGENT").as_deref(), text("AGENT_BOX_AGENTS").as_deref())
        .map_err(Stop::Usage)?;
    let (args, args_ok) = extra_args(text("AGENT_BOX_HOOK_SESSION_ARGS").as_deref());
    if !args_ok {
        out.warn(messages::ARGS_UNUSABLE);
    }
    let batch = Batch::from_env(env);
    report_profiles(batch.config.as_deref(), text("AGENT_BOX_HOOK_PROFILE").as_deref(), &harness, out);
    let read = read_batch(stdin).map_err(|e| Stop::Refused(Refusal::because(messages::stdin_failed(&e.to_string()))));
    let Some(batch_text) = read? else {
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
    let peers = match view::peers::report_text(ctx, None) {
        Ok(report) => bounded_peers(&report),
        Err(reason) => peers_unavailable(&reason),
    };
    Ok(Some(Plan { harness, args, batch, text: batch_text, seed, meta, peers }))
}

/// Steps 7–14 under `guard`; the name of the added session, or why the batch waits.
fn critical_section(ctx: &Context, guard: &RegistryLock, plan: &Plan, out: &mut Out) -> Result<SessionName, Refusal> {
    let mut doc = read_for_write(guard.registry()).map_err(|e| {
        let registry = guard.registry().display().to_string();
        Refusal::because(match e {
            RegistryError::Invalid { reason, .. } => messages::registry_unusable(&registry, &reason),
            RegistryError::Unreadable { source, .. } => messages::registry_unusable(&registry, &source.to_string()),
            other => other.to_string(),
        })
    })?;
    let clean = sanitised(&plan.batch.key);
    let name = mint(&clean, |n| doc.contains(n))
        .ok_or_else(|| Refusal::because(messages::no_free_name(&plan.batch.key_prose())))?;
    if too_long(&clean) {
        out.warn(messages::key_too_long(&plan.batch.key_prose()));
    }
    admit(ctx, &doc, &name)?;
    let filter = ctx.paths.filter_file(&name);
    let seeded = plan.seed && write_filter(&filter, plan, out);
    let prompt = prompt(plan, &name, seeded);
    let life = lease::Gen::random();
    let entry = build_entry(plan, &prompt, life.as_str());
    let leased = plan.seed.then(|| record_assignment(ctx, &name, plan, &life)).transpose().inspect_err(|_| {
        if seeded {
            let _ = std::fs::remove_file(&filter);
        }
    })?;
    let written = doc.insert_new(&name, entry).and_then(|()| write_document(guard, &doc));
    if let Err(err) = written {
        if seeded {
            let _ = std::fs::remove_file(&filter);
        }
        if leased.is_some() {
            // LS-5.1: a batch that is not accepted leaves no lease behind; its spawn record gets its end.
            let log = HookLog::new(ctx.paths.hook_log());
            let leases = LeaseDir::new(ctx.paths.lease_dir());
            let _ = leases.finish(&name, &EndHow::Refused, &lease::Expect::Gen(life), Some(&log));
        }
        let reason = match err {
            RegistryError::Write { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        return Err(Refusal::because(messages::registry_write_failed(
            &guard.registry().display().to_string(),
            &reason,
        )));
    }
    Ok(name)
}

/// Step 9: check mode for every harness (a dispatched batch never gets the shell exemption).
fn admit(ctx: &Context, doc: &registry::Document, name: &SessionName) -> Result<(), Refusal> {
    match ctx.check_capacity(doc.sessions(), &[name.as_str()]) {
        Ok(_) => Ok(()),
        Err(err @ CapacityError::Refused { used, max }) => {
            Err(Refusal { cause: err.to_string(), counts: Some((used, max)) })
        }
        Err(err) => Err(Refusal::because(err.to_string())),
    }
}

/// Step 10: the claim filter (§6.1); false (after W7) when it could not be written.
fn write_filter(path: &std::path::Path, plan: &Plan, out: &mut Out) -> bool {
    let own_prose = format!("{}:{}", plan.batch.source, plan.batch.key_prose());
    let stamp = base::time::format_iso_millis(base::time::now_epoch());
    let topic = SeededTopic {
        topic: plan.batch.own(),
        note: note(plan.meta.as_ref(), &plan.batch.key_prose(), &own_prose, &prose(&plan.batch.event, 64)),
        include: predicate(plan.meta.as_ref()),
        ignore_senders: vec!["@self".to_owned()],
        renew_on_event: true,
        subscribed_at: stamp.clone(),
        last_activity_at: stamp,
    };
    let seed =
        FilterSeed { note: agent_box_types::filter::NOTE.to_owned(), enabled: true, ttl_hours: 2, topics: vec![topic] };
    let written = agent_box_types::pretty(&seed)
        .map_err(std::io::Error::other)
        .and_then(|text| registry::write_atomic(path, text.as_bytes()));
    match written {
        Ok(_) => true,
        Err(err) => {
            out.warn(messages::filter_failed(&path.display().to_string(), &err.to_string()));
            false
        }
    }
}

/// Step 11: the prompt of §7.4 with this batch's values.
fn prompt(plan: &Plan, name: &SessionName, seeded: bool) -> String {
    let topic = Some(prose(&plan.batch.topic, 1000)).filter(|t| !t.is_empty()).unwrap_or_else(|| "?".into());
    let own = format!("{}:{}", plan.batch.source, plan.batch.key_prose());
    let key = plan.batch.key_prose();
    render(&Parts {
        topic: &topic,
        note: &prose(&plan.batch.note, 1000),
        assign: assignment_armed(&plan.text).then(assign_sentence),
        name: name.as_str(),
        ownership: seeded.then_some((own.as_str(), key.as_str())),
        claude: plan.harness == "claude",
        peers: &plan.peers,
        batch: &bounded_batch(&plan.text),
    })
}

/// §4.1: the shared constructor, ephemeral, origin webhook, `hook` only with the seed.
fn build_entry(plan: &Plan, prompt: &str, life: &str) -> serde_json::Map<String, serde_json::Value> {
    let id = new_uuid_v4();
    let repository = plan.batch.key_text();
    let entry = NewEntry {
        extra_args: &plan.args,
        initial_prompt: Some(prompt),
        ephemeral: true,
        ..NewEntry::new(&plan.harness, &id, "webhook", base::time::now_epoch(), life)
    };
    new_entry(&entry.with_hook(plan.seed.then_some((plan.batch.source.as_str(), repository.as_str()))))
}

/// Steps 13–14, before the insert (LS-5.1), in one step under the lease lock that keeps the hook log an audit
/// trail across a power loss (issue 18 item 2; each append is durable): an older life's lease left under this name
/// is settled (`swept`), then the spawn record, then the lease, whose gen is the entry's life token (issue 17), so
/// every lease has its spawn record before it exists. A lease that cannot be created defers the batch (issue 18
/// item 3): accepted work the box does not track could be lost without a trace, which is what the lease exists to
/// prevent; the receiver keeps the batch and retries. A busy lease lock writes nothing; a failed lease write leaves
/// its spawn record a `refused` end record.
fn record_assignment(ctx: &Context, name: &SessionName, plan: &Plan, life: &lease::Gen) -> Result<(), Refusal> {
    let log = HookLog::new(ctx.paths.hook_log());
    let leases = LeaseDir::new(ctx.paths.lease_dir());
    let own = plan.batch.own();
    let object = plan.meta.as_ref().and_then(|m| m.number).map(|n| n.to_string());
    let record =
        SpawnRecord { name, topic: &own, event: &plan.batch.event, object: object.as_deref(), count: plan.batch.count };
    leases
        .create_with_spawn(&record, life.clone(), &log)
        .map(drop)
        .map_err(|err| Refusal::because(messages::lease_failed(name.as_str(), &err.to_string())))
}

/// §8.4: the refusal record, then the deferral (its cause, W19 when the record failed, W9; exit 75).
fn defer(ctx: &Context, env: &impl Fn(&str) -> Option<OsString>, refusal: Refusal) -> SpawnError {
    let text = |k: &str| env(k).map(|v| v.to_string_lossy().into_owned()).unwrap_or_default();
    let record = RefusalRecord::new(ctx.paths.refusal_record());
    let (live, max) = refusal.counts.map_or((None, None), |(used, max)| (Some(used), Some(max)));
    let (topic, key) = (text("LOCAL_WEBHOOK_SPAWN_TOPIC"), text("LOCAL_WEBHOOK_SPAWN_KEY"));
    let bumped = record.bump(live, max, &topic, &key, &refusal.cause);
    let record_failed =
        bumped.err().map(|err| messages::record_failed(&record.path().display().to_string(), &err.to_string()));
    SpawnError::Deferred { cause: refusal.cause, record_failed }
}
