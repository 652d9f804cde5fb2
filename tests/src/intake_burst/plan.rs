//! The seeded plan of an intake burst: the distinct assignments (an issue number, or every fifth a commit sha, on
//! one of four repositories), the later deliveries that share an object with one of them (a comment on the same
//! issue, another check of the same commit: each with its own delivery id), the redeliveries (a delivery sent
//! again, same id and same text), and how long each session's agent runs. One seed, one plan.

use std::ops::Range;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use crate::receiver::{Batch, Event};

/// How many later deliveries a delivery that shares an object may come after its assignment's first: close
/// behind it, as the events of one issue do, so it finds the first still waiting.
const SHARE_WINDOW: usize = 10;

/// What a delivery is to the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The first delivery of assignment `.0`.
    First(usize),
    /// A later delivery, with its own id, of the object of assignment `.0`.
    Shared(usize),
    /// An earlier delivery sent again (the same id, the same text).
    Redelivery,
}

/// One delivery: its batch (its delivery id is its label, `d<n>`), its kind, its assignment and how long the
/// agent of a session it starts runs.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub label: String,
    pub batch: Batch,
    pub kind: Kind,
    pub assignment: usize,
    pub agent_secs: f64,
}

/// The deliveries in the order they are sent, and the assignments they make.
#[derive(Debug, Clone)]
pub struct Plan {
    pub deliveries: Vec<Delivery>,
    /// Each assignment as the queue names it: `github:<repo>#<object>`.
    pub assignments: Vec<String>,
}

impl Plan {
    /// `deliveries` in all, `redelivered` of them a second send of an earlier one and `shared` a new delivery for
    /// the object of an earlier assignment; the rest are distinct assignments. Agents run `agent_secs` seconds.
    pub fn new(seed: u64, deliveries: usize, redelivered: usize, shared: usize, agent_secs: Range<f64>) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let distinct = deliveries.saturating_sub(redelivered + shared).max(1);
        let secs = |rng: &mut StdRng| {
            if agent_secs.is_empty() { agent_secs.start } else { rng.random_range(agent_secs.clone()) }
        };
        let mut order: Vec<Kind> = (0..distinct).map(Kind::First).collect();
        order.shuffle(&mut rng);
        for _ in 0..shared {
            let assignment = rng.random_range(0..distinct);
            let first = order.iter().position(|k| *k == Kind::First(assignment)).unwrap_or(0);
            let at = rng.random_range(first + 1..=(first + SHARE_WINDOW).min(order.len()));
            order.insert(at, Kind::Shared(assignment));
        }
        let mut plan = Self { deliveries: Vec::new(), assignments: (0..distinct).map(assignment_name).collect() };
        let mut counts = vec![0usize; distinct];
        for kind in order {
            let index = plan.deliveries.len();
            let (Kind::First(a) | Kind::Shared(a)) = kind else { continue };
            counts[a] += 1;
            let label = format!("d{index}");
            let batch = batch_of(a, counts[a], &label);
            plan.deliveries.push(Delivery { label, batch, kind, assignment: a, agent_secs: secs(&mut rng) });
        }
        plan.redeliver(&mut rng, redelivered);
        plan
    }

    /// Sends `count` distinct earlier deliveries a second time, each at a random later point.
    fn redeliver(&mut self, rng: &mut StdRng, count: usize) {
        let mut labels: Vec<String> = self.deliveries.iter().map(|d| d.label.clone()).collect();
        labels.shuffle(rng);
        for label in labels.into_iter().take(count) {
            let first = self.position(&label);
            let again = Delivery { kind: Kind::Redelivery, ..self.deliveries[first].clone() };
            let at = rng.random_range(first + 1..=self.deliveries.len());
            self.deliveries.insert(at, again);
        }
    }

    fn position(&self, label: &str) -> usize {
        self.deliveries.iter().position(|d| d.label == label).unwrap_or(0)
    }
}

fn repo(assignment: usize) -> String {
    format!("acme/r{}", assignment % 4)
}

/// Every fifth assignment is a commit's CI (a sha object), the others an issue (a number object).
fn sha(assignment: usize) -> Option<String> {
    (assignment % 5 == 4).then(|| format!("{:040x}", 0xc0ffee_u64.wrapping_mul(assignment as u64 + 1)))
}

fn number(assignment: usize) -> u64 {
    1000 + assignment as u64
}

fn assignment_name(assignment: usize) -> String {
    let object = sha(assignment).unwrap_or_else(|| number(assignment).to_string());
    format!("github:{}#{object}", repo(assignment))
}

/// The `nth` delivery of `assignment`'s object, with delivery id `label`; the session's agent is `label` too.
fn batch_of(assignment: usize, nth: usize, label: &str) -> Batch {
    let repo = repo(assignment);
    let event = match sha(assignment) {
        Some(sha) => {
            let line = format!("[github] check run {nth} of {} on {repo} failed (delivery {label})", &sha[..8]);
            Event::check(Some(label), &sha, &line)
        }
        None => {
            let n = number(assignment);
            let line = format!("[github] issue #{n} event {nth} on {repo} (delivery {label})");
            Event::issue(Some(label), n, &line)
        }
    };
    let mut batch = Batch::one(&repo, event).as_agent(label);
    batch.topic = "github:acme/*".into();
    batch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_plan_with_the_asked_mix() {
        let a = Plan::new(5, 200, 40, 30, 1.0..20.0);
        let b = Plan::new(5, 200, 40, 30, 1.0..20.0);
        let labels = |p: &Plan| p.deliveries.iter().map(|d| d.label.clone()).collect::<Vec<_>>();
        assert_eq!(labels(&a), labels(&b));
        assert_eq!(a.deliveries.len(), 200);
        let count = |f: fn(&Kind) -> bool| a.deliveries.iter().filter(|d| f(&d.kind)).count();
        assert_eq!(count(|k| matches!(k, Kind::First(_))), 130);
        assert_eq!(count(|k| matches!(k, Kind::Shared(_))), 30);
        assert_eq!(count(|k| *k == Kind::Redelivery), 40);
        for (at, delivery) in a.deliveries.iter().enumerate() {
            let first = a.deliveries.iter().position(|d| d.label == delivery.label).unwrap();
            assert!(first <= at, "a redelivery comes after its first send");
            if let Kind::Shared(assignment) = delivery.kind {
                let opened = a.deliveries.iter().position(|d| d.kind == Kind::First(assignment)).unwrap();
                assert!(opened < at, "a shared object comes after its assignment's first delivery");
            }
        }
        assert_eq!(a.assignments.len(), 130);
        assert!(a.assignments.iter().any(|x| x.len() > 40), "some objects are commits");
    }
}
