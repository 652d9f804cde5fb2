//! The accept step of webhook-spawn (docs/intake.md IN-2…IN-7): under the registry lock, a batch is a duplicate
//! (its keys seen within the redelivery window), or joins the queued record of its assignment, or becomes a new
//! record, durable before the caller exits 0; a new record that nothing waits before is admitted at once.

use std::time::SystemTime;

use agent_box_types::intake::{Batch, How, Record};
use registry::RegistryLock;

use crate::admit::{Admission, Admitted, Site, Waited, Waiting, admit_record};
use crate::bounds::Bounds;
use crate::end::{end, line};
use crate::error::IntakeError;
use crate::queue::{Listing, Queue, RecordId};

/// One batch as webhook-spawn resolved it: the record it would be on its own.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub record: Record,
}

impl Incoming {
    fn batch(&self) -> Option<&Batch> {
        self.record.batches.first()
    }
    fn keys(&self) -> &[String] {
        self.batch().map_or(&[], |b| b.keys.as_slice())
    }
}

/// What became of an accepted batch; every variant is durable and means exit 0.
#[derive(Debug, Clone)]
pub enum Accepted {
    /// A session was started for it at once.
    Admitted(Box<Admitted>),
    /// It waits at `position` (1 = next) of `queued`; `why` says what holds it (a full box, an undecidable policy,
    /// an admission that failed), `None` when older records wait before it.
    Queued { key: String, position: usize, queued: usize, why: Option<String> },
    /// It joined the queued record of the same assignment.
    Coalesced { key: String, into: String, position: usize, events: usize },
    /// Its keys were seen before: nothing changed. `how` is what their record became.
    Duplicate { key: String, how: String, name: Option<String> },
    /// A live session already claims its work: it ended `claimed` at once.
    Claimed { key: String, by: String },
}

/// Accepts `incoming` under `guard` (IN-2…IN-7); an error means nothing of it was acknowledged (exit 75).
pub fn accept(
    site: &Site<'_>,
    guard: &RegistryLock,
    incoming: &Incoming,
    bounds: &Bounds,
) -> Result<Accepted, IntakeError> {
    let key = incoming.record.key.clone();
    if let Some(duplicate) = seen_before(site, incoming) {
        return Ok(duplicate);
    }
    let listing = site.queue.list()?;
    if let Some(joined) = join_queued(site, &listing, incoming)? {
        return Ok(joined);
    }
    let mut queued = listing.queued.len();
    // A record being admitted may already be a session (a crash after its lease, IN-12): the next tick finishes
    // it, so it is not the one to expire.
    let expirable = listing.queued.iter().filter(|id| !listing.intents.contains(id));
    for oldest in expirable.take(excess(queued, bounds)) {
        if let Ok(record) = site.queue.read(oldest) {
            end(site.queue, site.log, oldest, &record, How::Expired, site.now, None)
                .map_err(|err| IntakeError::write(site.queue.dir(), err))?;
            queued -= 1;
        }
    }
    let id = RecordId::new(Queue::next_seq(&listing, SystemTime::now()), &incoming.record.assignment);
    site.queue.create(&id, &incoming.record)?;
    let alone = site.admit_at_once && queued == 0 && listing.intents.is_empty();
    let why = if alone {
        match admit_record(site, guard, &id, &incoming.record, Waited::Quiet, None) {
            Admission::Admitted(admitted) => return Ok(Accepted::Admitted(admitted)),
            Admission::Claimed { by, key } => return Ok(Accepted::Claimed { key, by }),
            Admission::Waits(Waiting::Full { used, max }) => {
                Some(format!("the box is full: {used} of {max} session slots in use"))
            }
            Admission::Waits(Waiting::Undecided(why)) | Admission::Failed { why, .. } => Some(why),
            Admission::Empty => None,
        }
    } else {
        None
    };
    drop(site.log.append_intake(&line(&incoming.record, &id, "queued", site.now, None)));
    Ok(Accepted::Queued { key, position: queued + 1, queued: queued + 1, why })
}

/// How many of the oldest records must end so that one more fits under the count bound (IN-9).
fn excess(queued: usize, bounds: &Bounds) -> usize {
    let max = usize::try_from(bounds.max_records).unwrap_or(usize::MAX);
    (queued + 1).saturating_sub(max)
}

/// IN-3: every key of the batch has a tombstone written within the redelivery window.
fn seen_before(site: &Site<'_>, incoming: &Incoming) -> Option<Accepted> {
    let now = SystemTime::now();
    let stones: Vec<_> = incoming.keys().iter().map(|key| site.queue.tombstone(key, now)).collect();
    if stones.is_empty() || stones.iter().any(Option::is_none) {
        return None;
    }
    let first = stones.into_iter().flatten().next()?;
    let how = first.how.as_str().to_owned();
    let id = RecordId::new(0, &incoming.record.assignment);
    let mut noted = line(&incoming.record, &id, "duplicate", site.now, Some(&how));
    noted.waited_seconds = 0;
    drop(site.log.append_intake(&noted));
    Some(Accepted::Duplicate { key: incoming.record.key.clone(), how, name: first.name })
}

/// IN-5: the queued record of the same assignment takes the batch (or already holds its keys: a duplicate). A
/// record with an admission intent is not joined: a crash interrupted its admission, which may already have given
/// its session its prompt (IN-12), so a batch appended now could reach no prompt while its key is buried as
/// admitted. The batch waits as a record of its own, which the ownership re-check then ends claimed by that session.
fn join_queued(site: &Site<'_>, listing: &Listing, incoming: &Incoming) -> Result<Option<Accepted>, IntakeError> {
    let assignment = &incoming.record.assignment;
    for (index, id) in listing.queued.iter().enumerate().filter(|(_, id)| id.is_for(assignment)) {
        let Ok(mut record) = site.queue.read(id) else { continue };
        if record.assignment != *assignment {
            continue;
        }
        let known: Vec<&String> = record.batches.iter().flat_map(|b| &b.keys).collect();
        let key = incoming.record.key.clone();
        if incoming.keys().iter().all(|k| known.contains(&k)) {
            let mut noted = line(&record, id, "duplicate", site.now, Some("queued"));
            noted.key = key.clone();
            drop(site.log.append_intake(&noted));
            return Ok(Some(Accepted::Duplicate { key, how: "queued".to_owned(), name: None }));
        }
        // A record being admitted or ended takes no more batches (a redelivery of its own keys is still answered
        // as a duplicate, above): its session may already have its prompt, or its end be announced (IN-12); the
        // batch becomes a record of its own.
        if listing.in_progress(id) {
            continue;
        }
        record.batches.extend(incoming.record.batches.iter().cloned());
        site.queue.replace(id, &record)?;
        let mut noted = line(&record, id, "coalesced", site.now, None);
        noted.key = key.clone();
        drop(site.log.append_intake(&noted));
        let into = record.key.clone();
        return Ok(Some(Accepted::Coalesced { key, into, position: index + 1, events: record.batches.len() }));
    }
    Ok(None)
}
