//! The queue box's writers (issue 24): deliveries dispatched through `agent-box-webhook-spawn` onto a box of 2
//! slots, each with a delivery id, some of them redelivered and some about an issue an earlier one was about; and
//! its supervisor, SIGKILLed at random and started again, admitting what queued.

use std::fs::File;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::super::ledger::{Accepted, QueueAck};
use super::{Writers, locked};

/// The share of deliveries that are a redelivery of an earlier one (the issue's burst: 40 of 200).
const REDELIVERED: f64 = 0.2;
/// The share of new deliveries about the issue of an earlier one (30 of 200): they coalesce, or are claimed.
const SHARED_OBJECT: f64 = 0.2;
/// The pause between two deliveries: enough for the hook log to stay under its trim in the longest round (a
/// trimmed log would hide the spawn lines the check reads).
const PAUSE_MS: std::ops::Range<u64> = 0..40;
/// How long each supervisor runs before its SIGKILL.
const SUPERVISOR_LIFE_MS: std::ops::Range<u64> = 150..1500;

/// One delivery: its id (`X-GitHub-Delivery`, passed in META as the receiver does) and its issue number.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Delivery {
    id: String,
    object: u64,
}

impl Writers<'_> {
    /// Deliveries until stopped; every exit 0 goes into the ledger with what webhook-spawn said it did.
    pub(super) fn queue_loop(&self) {
        let mut rng = StdRng::seed_from_u64(self.seed ^ 0x9e0e);
        let mut sent: Vec<Delivery> = Vec::new();
        for j in 0.. {
            if self.stopped() {
                return;
            }
            let delivery = next_delivery(&mut rng, &sent, j);
            if !sent.contains(&delivery) {
                sent.push(delivery.clone());
            }
            if let Some(accepted) = self.deliver(&delivery) {
                locked(&self.ledger).queue.push(QueueAck { key: delivery.id.clone(), accepted });
            }
            std::thread::sleep(Duration::from_millis(rng.random_range(PAUSE_MS)));
        }
    }

    /// `agent-box-webhook-spawn` on the queue box; what its stdout said when it exited 0.
    fn deliver(&self, delivery: &Delivery) -> Option<Accepted> {
        let Delivery { id, object } = delivery;
        let mut cmd = self.world.queue.product("agent-box-webhook-spawn");
        cmd.env("LOCAL_WEBHOOK_SPAWN_KEY", "pl/q")
            .env("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:pl/*")
            .env("LOCAL_WEBHOOK_SPAWN_EVENT", "issues")
            .env("LOCAL_WEBHOOK_SPAWN_COUNT", "1")
            .env("LOCAL_WEBHOOK_SPAWN_META", format!(r#"{{"number":"{object}","delivery":"{id}"}}"#));
        let (code, out) = self.run(cmd, Some(&format!("[github] issue #{object} commented (delivery {id})\n")));
        if code != Some(0) {
            return None;
        }
        Accepted::parse(&out)
    }

    /// The queue box's tmux server for the round, and a supervisor on it, SIGKILLed after a seeded while and
    /// started again until stopped. Its stderr goes to the queue box's supervisor log.
    pub(super) fn supervisor_loop(&self) {
        let mut rng = StdRng::seed_from_u64(self.seed ^ 0x50e4);
        let Ok(mut server) = self.world.queue.start_server() else { return };
        locked(&self.pids).push(server.id());
        while !self.stopped() {
            let mut cmd = self.world.queue.product("agent-box-supervisor");
            if let Ok(log) = File::options().create(true).append(true).open(self.world.queue.supervisor_log()) {
                cmd.stderr(log);
            }
            let Some(mut child) = self.spawn(&mut cmd) else { break };
            self.sleep_unless_stopped(Duration::from_millis(rng.random_range(SUPERVISOR_LIFE_MS)));
            let killed_here = !self.stopped();
            let _ = child.kill();
            let _ = child.wait();
            self.forget(&child);
            if killed_here {
                locked(&self.ledger).supervisor_kills += 1;
            }
        }
        let _ = server.kill();
        let _ = server.wait();
        self.forget(&server);
    }

    fn sleep_unless_stopped(&self, bound: Duration) {
        let step = Duration::from_millis(10);
        let mut slept = Duration::ZERO;
        while slept < bound && !self.stopped() {
            std::thread::sleep(step);
            slept += step;
        }
    }
}

/// A redelivery of an earlier delivery, a new one about an earlier one's issue, or a new one about issue `j`.
fn next_delivery(rng: &mut StdRng, sent: &[Delivery], j: u64) -> Delivery {
    let earlier = |rng: &mut StdRng| sent[rng.random_range(..sent.len())].clone();
    if !sent.is_empty() && rng.random_bool(REDELIVERED) {
        return earlier(rng);
    }
    let object = if !sent.is_empty() && rng.random_bool(SHARED_OBJECT) { earlier(rng).object } else { j };
    Delivery { id: format!("pl-q-{j}"), object }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliveries_are_new_redelivered_or_about_an_earlier_issue() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut sent: Vec<Delivery> = Vec::new();
        let (mut again, mut shared) = (0, 0);
        for j in 0..1000 {
            let d = next_delivery(&mut rng, &sent, j);
            if sent.contains(&d) {
                again += 1;
            } else {
                assert_eq!(d.id, format!("pl-q-{j}"));
                shared += usize::from(d.object != j);
                sent.push(d);
            }
        }
        assert!((150..250).contains(&again), "{again} redeliveries");
        assert!((100..250).contains(&shared), "{shared} about an earlier issue");
    }
}
