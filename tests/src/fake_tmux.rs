//! The one in-memory tmux of the workspace's unit-level tests (30-supervisor §18 unit layer, the session views):
//! a live set in tmux order, a log of the calls made, and the answers and failures a test sets. Clones share one
//! state, so a test keeps a handle to what the code under test holds.

use std::cell::{RefCell, RefMut};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use base::SessionName;
use tmux::{Killed, NewSession, SessionId, Snapshot, TmuxApi, TmuxError, WakeHook};

/// What the fake server holds, answers and was asked.
pub struct FakeState {
    /// Live sessions, in the order tmux would list them.
    pub live: Vec<String>,
    /// When set, every listing fails with this error (tmux unreachable).
    pub unreachable: Option<TmuxError>,
    /// The answer of `current_session` (`peers` self-exclusion).
    pub current: Result<String, TmuxError>,
    /// The socket path the adapter reports.
    pub socket: PathBuf,
    /// `ensure`, `probe` (list_server), `list`, `ids`, `new NAME`, `kill NAME` (or `kill $N of server P`), `env NAME`,
    /// `hook`, in call order.
    pub calls: Vec<String>,
    /// The server pid `ensure_server_and_list` reports (a test changes it to fake a restarted server).
    pub server_pid: Option<u32>,
    /// Every `new_session` request, in call order (what a pane would have been started with).
    pub started: Vec<NewSession>,
    /// Runs inside `new_session` (before the session appears), e.g. while the supervisor holds the lock.
    pub during_new: Option<Box<dyn Fn()>>,
    /// Session environments: what `new_session` passed with `-e`, or what a test set.
    pub env: BTreeMap<String, Vec<(String, String)>>,
    /// When set, `set_wake_hook` fails with this error (a tmux without the hook).
    pub hook_refusal: Option<TmuxError>,
    /// When set, `new_session` fails with this error after recording the call (no session appears).
    pub new_refusal: Option<TmuxError>,
    /// The `$N` of each live session, given when the session is first seen and never again.
    pub ids: BTreeMap<String, u32>,
    pub next_id: u32,
}

impl Default for FakeState {
    fn default() -> Self {
        Self {
            live: Vec::new(),
            unreachable: None,
            current: Err(TmuxError::NoSuchSession),
            socket: PathBuf::from("/nonexistent/socket"),
            calls: Vec::new(),
            server_pid: Some(4242),
            started: Vec::new(),
            during_new: None,
            env: BTreeMap::new(),
            hook_refusal: None,
            new_refusal: None,
            ids: BTreeMap::new(),
            next_id: 0,
        }
    }
}

impl std::fmt::Debug for FakeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeState").field("live", &self.live).field("calls", &self.calls).finish_non_exhaustive()
    }
}

/// A fake tmux server; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct FakeTmux(Rc<RefCell<FakeState>>);

impl FakeTmux {
    /// A server on which `names` are live, in this order.
    pub fn live(names: &[&str]) -> Self {
        let fake = Self::default();
        fake.state().live = names.iter().map(|n| (*n).to_owned()).collect();
        fake
    }

    /// A server that cannot be asked: every listing fails with `err`.
    pub fn unreachable(err: TmuxError) -> Self {
        let fake = Self::default();
        fake.state().unreachable = Some(err);
        fake
    }

    /// Answers `current_session` with `answer`.
    pub fn answering_current(self, answer: Result<String, TmuxError>) -> Self {
        self.state().current = answer;
        self
    }

    /// Reports `socket` as its socket path.
    pub fn with_socket(self, socket: PathBuf) -> Self {
        self.state().socket = socket;
        self
    }

    /// The shared state, to change or inspect.
    pub fn state(&self) -> RefMut<'_, FakeState> {
        self.0.borrow_mut()
    }

    /// How many calls were made whose log entry starts with `prefix`.
    pub fn calls(&self, prefix: &str) -> usize {
        self.0.borrow().calls.iter().filter(|c| c.starts_with(prefix)).count()
    }

    /// Forgets the ids of sessions no longer live and gives one to each live session without.
    fn number_sessions(state: &mut FakeState) {
        let live = state.live.clone();
        state.ids.retain(|name, _| live.contains(name));
        for name in live {
            if !state.ids.contains_key(&name) {
                let id = state.next_id;
                state.next_id += 1;
                state.ids.insert(name, id);
            }
        }
    }

    fn listing(&self, call: &str) -> Result<Vec<String>, TmuxError> {
        let mut state = self.state();
        state.calls.push(call.to_owned());
        match &state.unreachable {
            Some(err) => Err(err.clone()),
            None => Ok(state.live.clone()),
        }
    }
}

impl TmuxApi for FakeTmux {
    fn ensure_server_and_list(&self) -> Result<Snapshot, TmuxError> {
        let sessions = self.listing("ensure")?;
        Ok(Snapshot { server_pid: self.0.borrow().server_pid, sessions })
    }
    fn list_server(&self) -> Result<Snapshot, TmuxError> {
        let sessions = self.listing("probe")?;
        Ok(Snapshot { server_pid: self.0.borrow().server_pid, sessions })
    }
    fn list_sessions(&self) -> Result<Vec<String>, TmuxError> {
        self.listing("list")
    }
    fn has_session(&self, name: &SessionName) -> Result<bool, TmuxError> {
        Ok(self.0.borrow().live.iter().any(|n| n == name.as_str()))
    }
    fn new_session(&self, request: &NewSession) -> Result<Option<u32>, TmuxError> {
        if let Some(hook) = self.0.borrow().during_new.as_ref() {
            hook();
        }
        let mut state = self.state();
        state.calls.push(format!("new {}", request.name));
        state.started.push(request.clone());
        if let Some(err) = state.new_refusal.clone() {
            return Err(err);
        }
        if !state.live.iter().any(|n| n == request.name.as_str()) {
            state.ids.remove(request.name.as_str());
            state.live.push(request.name.to_string());
            state.env.insert(request.name.to_string(), request.env.clone());
        }
        Ok(Some(4243))
    }
    fn kill_session(&self, name: &SessionName) -> Result<Killed, TmuxError> {
        let mut state = self.state();
        state.calls.push(format!("kill {name}"));
        let before = state.live.len();
        state.live.retain(|n| n != name.as_str());
        state.ids.remove(name.as_str());
        Ok(if state.live.len() < before { Killed::Yes } else { Killed::AlreadyGone })
    }
    fn session_ids(&self) -> Result<Vec<(String, SessionId)>, TmuxError> {
        let live = self.listing("ids")?;
        let mut state = self.state();
        Self::number_sessions(&mut state);
        let pid = state.server_pid.unwrap_or_default();
        Ok(live
            .into_iter()
            .filter_map(|name| Some((name.clone(), SessionId::new(pid, *state.ids.get(&name)?))))
            .collect())
    }
    fn kill_session_id(&self, id: &SessionId) -> Result<Killed, TmuxError> {
        let mut state = self.state();
        state.calls.push(format!("kill {id}"));
        Self::number_sessions(&mut state);
        let pid = state.server_pid.unwrap_or_default();
        let found = state.ids.iter().find(|(_, n)| SessionId::new(pid, **n) == *id).map(|(name, _)| name.clone());
        let Some(name) = found else { return Ok(Killed::AlreadyGone) };
        state.live.retain(|n| *n != name);
        state.ids.remove(&name);
        Ok(Killed::Yes)
    }
    fn display(&self, _: &SessionName, _: &str) -> Result<String, TmuxError> {
        Ok(String::new())
    }
    fn session_environment(&self, name: &SessionName, key: &str) -> Result<Option<String>, TmuxError> {
        self.state().calls.push(format!("env {name}"));
        let state = self.0.borrow();
        if !state.live.iter().any(|n| n == name.as_str()) {
            return Err(TmuxError::NoSuchSession);
        }
        let env = state.env.get(name.as_str()).map(Vec::as_slice).unwrap_or_default();
        Ok(env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))
    }
    fn current_session(&self, _: Option<&str>) -> Result<String, TmuxError> {
        self.0.borrow().current.clone()
    }
    fn set_global_option(&self, _: &str, _: &str) -> Result<(), TmuxError> {
        Ok(())
    }
    fn set_wake_hook(&self, _: &WakeHook) -> Result<(), TmuxError> {
        let mut state = self.state();
        state.calls.push("hook".to_owned());
        match state.unreachable.as_ref().or(state.hook_refusal.as_ref()) {
            Some(err) => Err(err.clone()),
            None => Ok(()),
        }
    }
    fn show_global_option(&self, _: &str) -> Result<Option<String>, TmuxError> {
        Ok(None)
    }
    fn version(&self) -> Result<Option<(u32, u32)>, TmuxError> {
        Ok(Some((3, 3)))
    }
    fn kill_server(&self) -> Result<(), TmuxError> {
        Ok(())
    }
    fn socket_path(&self) -> PathBuf {
        self.0.borrow().socket.clone()
    }
}

/// The environment of a unit-level context for HOME `home` (user `agent`) whose tmux is never run: the variables
/// of `extra`, and nothing else.
pub fn fake_env(home: &Path, extra: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let home = home.as_os_str().to_owned();
    let extra: Vec<(String, String)> = extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    move |key: &str| -> Option<OsString> {
        match key {
            "HOME" => Some(home.clone()),
            "USER" => Some("agent".into()),
            "AGENT_BOX_TMUX_BIN" => Some("/nonexistent/tmux".into()),
            "AGENT_BOX_TMUX_TMPDIR" => Some("/nonexistent".into()),
            _ => extra.iter().find(|(k, _)| k == key).map(|(_, v)| v.into()),
        }
    }
}
