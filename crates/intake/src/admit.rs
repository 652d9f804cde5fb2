//! The admission step (docs/intake.md IN-11, IN-12): one queued record becomes one hook session, in one
//! registry-lock section of the caller: capacity → the ownership re-check → the admission intent → the claim
//! filter → spawn record and lease (carrying the record's key) → ephemeral entry → tombstones → the record
//! removed. [`recover`] finishes or takes back an admission a crash interrupted, from its intent.

use std::collections::BTreeSet;

use agent_box_types::intake::{How, Record};
use base::SessionName;
use lease::{EndHow, Expect, HookLog, LeaseDir, LeaseState, LogLine, SpawnRecord};
use registry::capacity::{Mode, admit, read_limit};
use registry::store::{read_for_write, write_document};
use registry::{CapacityError, Document, Paths, RegistryError, RegistryLock};
use serde_json::Value;

use crate::end::end;
use crate::name::{mint, too_long};
use crate::owner::claimed_by;
use crate::queue::{Intent, Queue, RecordId};
use crate::session::{self, filter_path, own};

/// What an admission works with: the box's files and the live set probed under the registry lock.
#[derive(Clone, Copy)]
pub struct Site<'a> {
    pub paths: &'a Paths,
    pub queue: &'a Queue,
    pub leases: &'a LeaseDir,
    pub log: &'a HookLog,
    /// The live set probed under the registry lock, or why tmux could not be asked (nothing is admitted then: the
    /// capacity and the ownership re-check both need it).
    pub live: &'a Result<BTreeSet<String>, String>,
    /// The peers report of the kickoff prompt, as of now.
    pub peers: &'a dyn Fn() -> String,
    pub now: i64,
    /// Issue 26: false on a box with a claims database, where only the supervisor admits (it takes the claim first):
    /// webhook-spawn then only queues.
    pub admit_at_once: bool,
}

/// Issue 26 (docs/boxes.md BX-4): the claim an admission was won with, taken before the registry lock.
#[derive(Debug, Clone)]
pub struct WonClaim {
    pub life: lease::Gen,
    pub box_label: String,
    /// The box whose term had ended when this one took the claim over (BX-7).
    pub taken_over_from: Option<String>,
}

impl std::fmt::Debug for Site<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Site").field("queue", &self.queue).field("live", &self.live).finish_non_exhaustive()
    }
}

/// A record that became a session.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub name: SessionName,
    pub harness: String,
    pub key: String,
    pub assignment: String,
    /// Seconds since the record was accepted.
    pub waited: i64,
    /// Warnings of the start (W1 key too long, W7 filter not written), for the caller to print or log.
    pub notes: Vec<String>,
    /// The registry as written.
    pub document: Document,
}

/// Why the oldest record waits: no slot, or the policy could not say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waiting {
    Full { used: usize, max: u64 },
    Undecided(String),
}

/// The result of one admission step.
#[derive(Debug, Clone)]
pub enum Admission {
    Admitted(Box<Admitted>),
    /// A live session claims the work: the record ended `claimed`.
    Claimed {
        by: String,
        key: String,
    },
    Waits(Waiting),
    /// It stays queued for a reason a later step may not have (a name, a write); why.
    Failed {
        key: String,
        why: String,
    },
    Empty,
}

/// Whether the prompt says how long the events waited (a record admitted as it arrived gets the prompt of before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    Say,
    Quiet,
}

/// Admits the oldest readable queued record, under `guard`.
pub fn admit_next(site: &Site<'_>, guard: &RegistryLock) -> Admission {
    let Ok(listing) = site.queue.list() else { return Admission::Empty };
    for id in &listing.queued {
        if listing.in_progress(id) {
            continue;
        }
        match site.queue.read(id) {
            Ok(record) => return admit_record(site, guard, id, &record, Waited::Say, None),
            Err(_) => continue,
        }
    }
    Admission::Empty
}

/// Admits record `id` (IN-11), with the claim it was won with on a box with a claims database (BX-4).
pub fn admit_record(
    site: &Site<'_>,
    guard: &RegistryLock,
    id: &RecordId,
    record: &Record,
    waited: Waited,
    claim: Option<&WonClaim>,
) -> Admission {
    let key = record.key.clone();
    let failed = |why: String| Admission::Failed { key: key.clone(), why };
    let live = match site.live {
        Ok(live) => live,
        Err(reason) => return Admission::Waits(Waiting::Undecided(CapacityError::Probe(reason.clone()).to_string())),
    };
    let mut doc = match read_for_write(guard.registry()) {
        Ok(doc) => doc,
        Err(err) => return Admission::Waits(Waiting::Undecided(registry_reason(guard, err))),
    };
    if let Some(by) = claimed_by(site.paths, &doc, record) {
        return match end(site.queue, site.log, id, record, How::Claimed, site.now, Some(&by)) {
            Ok(()) => Admission::Claimed { by, key },
            Err(err) => failed(format!("could not end it as claimed by '{by}': {err}")),
        };
    }
    // W17: the draws of 60 §5.5 found no free name.
    let Some(name) = mint(&record.name_stem, |n| doc.contains(n)) else {
        return failed(format!("no free session name for key '{}'", crate::prose::prose(&record.routing_key, 1000)));
    };
    if let Some(waiting) = capacity(site, live, &doc, &name) {
        return Admission::Waits(waiting);
    }
    let life = claim.map_or_else(lease::Gen::random, |c| c.life.clone());
    let intent = Intent { name: name.to_string(), lease_gen: life.to_string(), at: base::time::format_iso(site.now) };
    if let Err(err) = site.queue.write_intent(id, &intent) {
        return failed(format!("could not record its admission: {err}"));
    }
    let started = start(site, guard, &mut doc, (record, id), &name, &life, waited, claim);
    match started {
        Ok(notes) => {
            let at = base::time::format_iso(site.now);
            // The session exists: a failure from here on is finished by `recover` from the intent.
            let _ =
                site.queue.bury(record, How::Admitted, Some(name.as_str()), &at).and_then(|()| site.queue.remove(id));
            let waited = (site.now - id.accepted_secs()).max(0);
            let harness = record.harness.clone();
            let assignment = record.assignment.clone();
            Admission::Admitted(Box::new(Admitted { name, harness, key, assignment, waited, notes, document: doc }))
        }
        Err(why) => {
            let _ = site.queue.remove_intent(id);
            failed(why)
        }
    }
}

fn registry_reason(guard: &RegistryLock, err: RegistryError) -> String {
    let registry = guard.registry().display().to_string();
    match err {
        RegistryError::Invalid { reason, .. } => format!("{registry} does not parse ({reason})"),
        RegistryError::Unreadable { source, .. } => format!("{registry} cannot be read ({source})"),
        other => other.to_string(),
    }
}

/// Check mode for one more session (60 §4 step 9: no shell exemption for dispatched work).
fn capacity(site: &Site<'_>, live: &BTreeSet<String>, doc: &Document, name: &SessionName) -> Option<Waiting> {
    let decision = read_limit(site.paths.limit_file(), site.paths.meminfo_file())
        .and_then(|limit| admit(doc.sessions(), live, limit, &[name.as_str()], Mode::Check));
    match decision {
        Ok(_) => None,
        Err(CapacityError::Refused { used, max }) => Some(Waiting::Full { used, max }),
        Err(err) => Some(Waiting::Undecided(err.to_string())),
    }
}

/// Filter, prompt, spawn record and lease, entry; every failure takes back what this step wrote.
#[allow(clippy::too_many_arguments)]
fn start(
    site: &Site<'_>,
    guard: &RegistryLock,
    doc: &mut Document,
    (record, id): (&Record, &RecordId),
    name: &SessionName,
    life: &lease::Gen,
    waited: Waited,
    claim: Option<&WonClaim>,
) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    if too_long(&record.name_stem) {
        notes.push(format!("this session is called '{name}' instead"));
    }
    let filter = filter_path(record, name);
    // W7: a filter that cannot be written starts the session unsubscribed.
    let seeded = record.seed
        && match session::write_filter(record, name, site.now) {
            Ok(()) => true,
            Err(reason) => {
                notes.push(format!(
                    "could not write {} ({reason}); the session starts unsubscribed, so its CI may start a duplicate",
                    filter.display()
                ));
                false
            }
        };
    let unfilter = || {
        if seeded {
            let _ = std::fs::remove_file(&filter);
        }
    };
    let waited_secs = (waited == Waited::Say).then(|| (site.now - id.accepted_secs()).max(0));
    let from = claim.and_then(|c| c.taken_over_from.as_deref());
    let prompt = session::prompt(record, name, seeded, &(site.peers)(), waited_secs, from);
    let box_label = claim.map(|c| c.box_label.as_str());
    if record.seed
        && let Err(err) = lease_with_spawn(site, record, name, life, box_label)
    {
        unfilter();
        return Err(format!(
            "could not create the lease for '{name}' ({err}); not starting work the box could not account for"
        ));
    }
    let written = doc
        .insert_new(name, session::entry(record, &prompt, life.as_str(), site.now))
        .and_then(|()| write_document(guard, doc));
    if let Err(err) = written {
        unfilter();
        if record.seed {
            let _ = site.leases.finish(name, &EndHow::Refused, &Expect::Gen(life.clone()), Some(site.log));
        }
        return Err(format!("could not write {} ({err}); nothing of this batch was kept", guard.registry().display()));
    }
    Ok(notes)
}

/// The spawn record, then the lease, in one step under the lease lock (issue 18: every lease has its spawn
/// record), both carrying the record's key.
fn lease_with_spawn(
    site: &Site<'_>,
    record: &Record,
    name: &SessionName,
    life: &lease::Gen,
    box_label: Option<&str>,
) -> Result<(), String> {
    let own = own(record);
    let object = session::lease_object(record);
    let spawn = SpawnRecord {
        name,
        topic: &own,
        event: session::newest_event(record),
        object: object.as_deref(),
        count: session::count(record),
        intake: Some(&record.key),
        claim: box_label.map(|label| (record.assignment.as_str(), label)),
    };
    site.leases.create_with_spawn(&spawn, life.clone(), site.log).map(drop).map_err(|err| err.to_string())
}

/// What [`recover`] did with one interrupted admission or end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// The session had been made (its lease or entry is there): the admission was finished.
    Finished { key: String, name: String },
    /// Nothing of the session was made: the record waits again; an orphan spawn record got its end record.
    TakenBack { key: String, name: String },
    /// An end (claimed, expired, removed) was begun: it was finished, its end record written again.
    Ended { key: String, how: How },
    /// The record was already gone; only its intent was left.
    Cleared,
}

/// Finishes or takes back every admission a crash interrupted (IN-12), under `guard`: an intent whose lease (or,
/// unseeded, entry) exists is rolled forward; one whose session was never made is rolled back. Every end that
/// was begun is finished.
pub fn recover(site: &Site<'_>, guard: &RegistryLock) -> Vec<Recovered> {
    let Ok(listing) = site.queue.list() else { return Vec::new() };
    let mut done = recover_ends(site, &listing);
    for id in &listing.intents {
        let record = site.queue.read(id);
        let intent = site.queue.read_intent(id);
        let (Ok(record), Some(intent)) = (record, intent) else {
            let cleared = site.queue.remove_intent(id).is_ok() && !listing.queued.contains(id);
            if cleared {
                done.push(Recovered::Cleared);
            }
            continue;
        };
        done.extend(recover_one(site, guard, id, &record, &intent));
    }
    done
}

/// IN-12: a record with an end intent is ended as the intent says (its end record was announced, or was about
/// to be: it must not be admitted now); an end intent without its record only goes.
fn recover_ends(site: &Site<'_>, listing: &crate::queue::Listing) -> Vec<Recovered> {
    let mut done = Vec::new();
    for id in &listing.ends {
        if !listing.queued.contains(id) {
            if site.queue.remove_end(id).is_ok() {
                done.push(Recovered::Cleared);
            }
            continue;
        }
        let (Ok(record), Some(intent)) = (site.queue.read(id), site.queue.read_end(id)) else { continue };
        if end(site.queue, site.log, id, &record, intent.how, site.now, intent.by.as_deref()).is_ok() {
            done.push(Recovered::Ended { key: record.key.clone(), how: intent.how });
        }
    }
    done
}

fn recover_one(
    site: &Site<'_>,
    guard: &RegistryLock,
    id: &RecordId,
    record: &Record,
    intent: &Intent,
) -> Option<Recovered> {
    let name = SessionName::parse(&intent.name).ok()?;
    let key = record.key.clone();
    let doc = read_for_write(guard.registry()).ok()?;
    let lease_made =
        matches!(site.leases.read(&name), LeaseState::Present(l) if l.gen_value() == Some(&intent.lease_gen));
    let entry_made = doc.entry(name.as_str()).is_some_and(|e| e.life() == Some(intent.lease_gen.as_str()));
    // An end that is not `refused`: the session ran and ended. A `refused` one is the admission giving up (its
    // lease could not be written) before it could remove its intent: nothing ran, so it is taken back.
    let ended = logged_after(site.log, &name, &intent.at, "end", |how| how != Some("refused"));
    if lease_made || entry_made || ended {
        if lease_made && !entry_made && !ended {
            finish_entry(site, guard, doc, record, &name, &intent.lease_gen)?;
        }
        let at = base::time::format_iso(site.now);
        site.queue.bury(record, How::Admitted, Some(name.as_str()), &at).ok()?;
        site.queue.remove(id).ok()?;
        return Some(Recovered::Finished { key, name: name.to_string() });
    }
    if logged_after(site.log, &name, &intent.at, "spawn", |_| true) {
        drop(site.log.append_end(&name, &EndHow::Refused, None));
    }
    let _ = std::fs::remove_file(filter_path(record, &name));
    site.queue.remove_intent(id).ok()?;
    Some(Recovered::TakenBack { key, name: name.to_string() })
}

/// The entry of an admission whose lease was written before the crash (roll forward).
fn finish_entry(
    site: &Site<'_>,
    guard: &RegistryLock,
    mut doc: Document,
    record: &Record,
    name: &SessionName,
    life: &str,
) -> Option<()> {
    let seeded = filter_path(record, name).exists();
    let prompt = session::prompt(record, name, seeded, &(site.peers)(), None, None);
    doc.insert_new(name, session::entry(record, &prompt, life, site.now)).ok()?;
    write_document(guard, &doc).ok()
}

/// Whether the hook log holds a `what` line of `name` written no earlier than `since` whose `how` satisfies `how`
/// (the log is bounded, so this reads at most its 400 lines).
fn logged_after(
    log: &HookLog,
    name: &SessionName,
    since: &str,
    what: &str,
    how: impl Fn(Option<&str>) -> bool,
) -> bool {
    let Ok(lines) = log.tail(lease::TRIM_ABOVE_LINES + 1) else { return false };
    lines.iter().any(|line| match line {
        LogLine::Parsed(value) => {
            is(value, "what", what)
                && is(value, "name", name.as_str())
                && value.get("at").and_then(Value::as_str).is_some_and(|at| at >= since)
                && how(value.get("how").and_then(Value::as_str))
        }
        LogLine::Raw(_) => false,
    })
}

fn is(value: &Value, key: &str, text: &str) -> bool {
    value.get(key).and_then(Value::as_str) == Some(text)
}
