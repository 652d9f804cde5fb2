//! A stand-in for the local-webhook receiver (60-webhook-spawn §8.1, docs/intake.md IN-17), the program outside this
//! repository that runs `agent-box-webhook-spawn` once per event batch. It follows the documented contract and
//! nothing more: the `LOCAL_WEBHOOK_SPAWN_*` environment (KEY, TOPIC, EVENT and COUNT of the batch, META describing
//! its newest event with `"number"`, `"sha"` and `"delivery"`), the batch text on stdin, then the exit code: 0 is
//! done, 75 is deferred and retried later (bounded, as the real receiver drops a key that deferred longer than its
//! limit), 1 and 2 are dropped and logged, and a spawn that outlives the timeout is killed and dropped. The tests
//! and `cargo xtask intake-burst` deliver through it, so the product is driven the way the box drives it.

use std::process::Output;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};

use crate::sandbox::Sandbox;

/// One webhook event of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `X-GitHub-Delivery`: the same id again is a redelivery.
    pub delivery: Option<String>,
    /// The GitHub event type (`issues`, `check_run`, …).
    pub kind: String,
    pub number: Option<u64>,
    pub sha: Option<String>,
    /// The line the receiver renders for it.
    pub line: String,
}

impl Event {
    /// An `issues` event of issue `number`.
    pub fn issue(delivery: Option<&str>, number: u64, line: &str) -> Self {
        Self {
            delivery: delivery.map(str::to_owned),
            kind: "issues".into(),
            number: Some(number),
            sha: None,
            line: line.into(),
        }
    }

    /// A `check_run` event of commit `sha`.
    pub fn check(delivery: Option<&str>, sha: &str, line: &str) -> Self {
        Self {
            delivery: delivery.map(str::to_owned),
            kind: "check_run".into(),
            number: None,
            sha: Some(sha.into()),
            line: line.into(),
        }
    }
}

/// One batch: the events the receiver coalesced for one routing key and watch, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// `LOCAL_WEBHOOK_SPAWN_KEY`, the repository (`acme/widgets`).
    pub key: String,
    /// `LOCAL_WEBHOOK_SPAWN_TOPIC`, the watch that matched (`github:acme/*`).
    pub topic: String,
    pub events: Vec<Event>,
    /// The box's `AGENT_BOX_HOOK_SESSION_ARGS` when this batch is run: `["--as", agent]`, so the fake agent of the
    /// session it becomes records under this name (the box sets it once; a test sets it per batch to tell
    /// sessions apart).
    pub agent: Option<String>,
}

impl Batch {
    /// A batch of one event.
    pub fn one(key: &str, event: Event) -> Self {
        Self { key: key.into(), topic: "github:acme/*".into(), events: vec![event], agent: None }
    }

    /// The same batch, its session's fake agent named `agent`.
    pub fn as_agent(mut self, agent: &str) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// META of the newest event (§6.2), with its delivery id (IN-3).
    pub fn meta(&self) -> String {
        let mut meta = Map::new();
        if let Some(newest) = self.events.last() {
            meta.insert("event".into(), newest.kind.clone().into());
            if let Some(number) = newest.number {
                meta.insert("number".into(), number.into());
            }
            if let Some(sha) = &newest.sha {
                meta.insert("sha".into(), sha.clone().into());
            }
            if let Some(delivery) = &newest.delivery {
                meta.insert("delivery".into(), delivery.clone().into());
            }
        }
        Value::Object(meta).to_string()
    }

    /// The batch text on stdin: one line per event.
    pub fn text(&self) -> String {
        self.events.iter().map(|e| format!("{}\n", e.line)).collect()
    }

    /// The delivery id of the newest event, which names the batch in the receiver's log.
    pub fn delivery(&self) -> Option<&str> {
        self.events.last().and_then(|e| e.delivery.as_deref())
    }
}

/// What became of a batch, as the receiver sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Exit 0: done. `stdout` is webhook-spawn's result line; `at` when the receiver saw the exit.
    Done { stdout: String, attempts: usize, at: SystemTime },
    /// Exit 1 or 2, or killed past the timeout: dropped and logged.
    Dropped { code: Option<i32>, stderr: String },
    /// Deferred (75) for longer than the defer limit: dropped and logged.
    GaveUp { attempts: usize, stderr: String },
}

impl Fate {
    pub fn is_done(&self) -> bool {
        matches!(self, Self::Done { .. })
    }

    /// The result line of a batch that was done, else "".
    pub fn stdout(&self) -> &str {
        match self {
            Self::Done { stdout, .. } => stdout,
            _ => "",
        }
    }
}

/// One line of the receiver's own log: every run of webhook-spawn and every batch it dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub delivery: Option<String>,
    pub key: String,
    /// The exit code of the run (`None`: killed), or `None` with `dropped` for the drop itself.
    pub code: Option<i32>,
    pub dropped: bool,
    pub text: String,
}

/// The receiver: how long to wait before retrying a deferred batch, how long a batch may keep deferring, and how
/// long one spawn may take.
#[derive(Debug)]
pub struct Receiver<'a> {
    sb: &'a Sandbox,
    pub retry_every: Duration,
    pub defer_limit: Duration,
    pub spawn_timeout: Duration,
    log: Mutex<Vec<LogLine>>,
}

impl<'a> Receiver<'a> {
    /// The test scale of the real receiver's once a minute and 300 s: a retry every 250 ms for up to 30 s, and
    /// the real receiver's spawn timeout of 60 s.
    pub fn new(sb: &'a Sandbox) -> Self {
        Self {
            sb,
            retry_every: Duration::from_millis(250),
            defer_limit: Duration::from_secs(30),
            spawn_timeout: Duration::from_secs(60),
            log: Mutex::new(Vec::new()),
        }
    }

    /// Delivers `batch` to the end: runs webhook-spawn, and again after each 75 until it is done, dropped, or has
    /// deferred for longer than the limit (60 §8.1).
    pub fn deliver(&self, batch: &Batch) -> Fate {
        let mut first_refusal: Option<Instant> = None;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let out = self.run_once(batch);
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            match out.status.code() {
                Some(0) => {
                    let stdout = String::from_utf8_lossy(&out.stdout).trim_end().to_owned();
                    return Fate::Done { stdout, attempts, at: SystemTime::now() };
                }
                Some(75) => {
                    let since = *first_refusal.get_or_insert_with(Instant::now);
                    if since.elapsed() >= self.defer_limit {
                        self.note(batch, None, true, &format!("dropped after deferring for {:?}", self.defer_limit));
                        return Fate::GaveUp { attempts, stderr };
                    }
                    std::thread::sleep(self.retry_every);
                }
                code => {
                    self.note(batch, None, true, &format!("dropped: exit {code:?}: {}", stderr.trim_end()));
                    return Fate::Dropped { code, stderr };
                }
            }
        }
    }

    /// One run of webhook-spawn for `batch`, logged.
    pub fn run_once(&self, batch: &Batch) -> Output {
        let mut cmd = self.sb.cmd("agent-box-webhook-spawn");
        cmd.env("LOCAL_WEBHOOK_SPAWN_SOURCE", "github")
            .env("LOCAL_WEBHOOK_SPAWN_KEY", &batch.key)
            .env("LOCAL_WEBHOOK_SPAWN_TOPIC", &batch.topic)
            .env("LOCAL_WEBHOOK_SPAWN_EVENT", batch.events.last().map_or("", |e| e.kind.as_str()))
            .env("LOCAL_WEBHOOK_SPAWN_COUNT", batch.events.len().to_string())
            .env("LOCAL_WEBHOOK_SPAWN_META", batch.meta());
        if let Some(agent) = &batch.agent {
            cmd.env("AGENT_BOX_HOOK_SESSION_ARGS", Value::from(vec!["--as", agent.as_str()]).to_string());
        }
        let mut cmd = assert_cmd::Command::from_std(cmd);
        cmd.timeout(self.spawn_timeout).write_stdin(batch.text());
        let out = cmd.output().unwrap_or_else(|err| panic!("cannot run agent-box-webhook-spawn: {err}"));
        let first = |bytes: &[u8]| String::from_utf8_lossy(bytes).lines().next().unwrap_or_default().to_owned();
        let text = if out.status.success() { first(&out.stdout) } else { first(&out.stderr) };
        self.note(batch, out.status.code(), false, &text);
        out
    }

    fn note(&self, batch: &Batch, code: Option<i32>, dropped: bool, text: &str) {
        let line = LogLine {
            delivery: batch.delivery().map(str::to_owned),
            key: batch.key.clone(),
            code,
            dropped,
            text: text.to_owned(),
        };
        self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(line);
    }

    /// Every line of its log so far.
    pub fn log(&self) -> Vec<LogLine> {
        self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The batches it dropped.
    pub fn dropped(&self) -> Vec<LogLine> {
        self.log().into_iter().filter(|l| l.dropped).collect()
    }
}
