//! agent-box-supervisor as a library: configuration, side files, harness launch and the reconcile loop.
//! The binary in `main.rs` is a thin front over it.
//!
//! When a tick runs (SUP-3, with the session-closed wake of issue 12). The loop waits in one `poll(2)` for the first
//! of five sources, then runs one tick:
//! 1. the timer, 2 s after the previous tick ended (`AGENT_BOX_TICK_SECS` changes it, for tests and bench only);
//! 2. a change of the registry in its directory (inotify on the directory; 50 ms settle);
//! 3. a tmux session that closed: the supervisor owns the wake file `~/.local/state/agent-box/tmux-wake` (F21;
//!    created empty, 0600, a regular file; re-created when it goes away) and watches it with inotify for
//!    `IN_CLOSE_WRITE`. On every server it meets (the first tick, and the first tick that sees a new server pid) it
//!    runs one extra tmux process, `set-hook -g session-closed[4242] 'run-shell -b "…"'`, whose shell command is
//!    `exec >/dev/null 2>&1; [ -f P ] && true >>P; exit 0` with P the wake file (the exact quoting of each layer is in
//!    the `tmux` crate, module `hook`). When tmux destroys a session (kill-session, the last pane exited, a killed
//!    pane) its server runs that job, which opens P for appending and closes it: the loop wakes, waits 10 ms so a
//!    burst of closes folds into one tick, and ticks. An idle tick therefore stays one tmux process and no write;
//!    the install is one call per server, never per tick;
//! 4. a record written to the intake queue `~/.local/state/agent-box/queue/` (issue 24: inotify on the directory,
//!    50 ms settle), so a batch queued while a slot is free is admitted at once;
//! 5. SIGTERM, SIGINT or SIGHUP (self-pipe): the loop exits.
//!
//! Failure modes of the wake, each falling back to the timer: a wake file that cannot be created or watched is
//! logged once per streak (`cannot watch <file> for ended sessions …`) and retried before every wait; a path whose
//! hook command would exceed 4 KiB (a HOME of thousands of bytes) is logged once at start and no hook is installed;
//! a tmux that refuses `set-hook` is logged once per server (`tmux did not accept the session-closed hook …`) and not
//! asked again on that server; a server that cannot be asked at that moment is asked again at the next tick. When no
//! supervisor runs, the hook's job still only opens an existing regular file and exits 0 at once, so nothing hangs
//! or piles up; it never prints and never fails, because a run-shell job that does opens view mode in some pane.
//! `--once` installs no hook and watches nothing.
//!
//! Choices where the specification is silent:
//! - Claim-filter temps (`filter.<user>-<name>.json.tmp-XXXXXXXX`) are swept with the registry temps, under the
//!   registry lock: webhook-spawn writes the filter inside its registry-lock section, so one a lock holder can see
//!   was left by a killed spawner.
//! - A first start (an entry never launched) begins a new backoff record: nothing of an earlier life of the
//!   same name carries over.
//! - `new-session` answering "duplicate session" logs nothing: the pane appeared between the snapshot and the
//!   spawn, and the next tick sees it running.
//! - A supervisor killed between `new-session` and the side-file record (SUP-7.1 steps 5 and 7) leaves a live
//!   pane nothing says was launched. The first tick of the next supervisor adopts such panes (`adopt.rs`, proposed
//!   as 30 §2 step 6a and line L20), so a later kill of one is D12 (`vanished`), not a first spawn.

mod adopt;
pub mod backoff;
mod boxes;
pub mod cli;
pub mod config;
pub mod decide;
mod intake;
mod intent;
pub mod launch;
mod life;
pub mod log;
pub mod messages;
pub mod notify;
mod notify_intake;
pub mod print;
pub mod run;
pub mod side;
mod spawn;
pub mod supervisor;
mod sweep;
mod wake;

pub use supervisor::Supervisor;
