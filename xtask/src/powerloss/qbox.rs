//! The queue box of a power-loss round (issue 24, docs/intake.md): a second HOME on the same LazyFS mount whose
//! box has 2 session slots, so that most batches webhook-spawn accepts wait in its intake queue, with a real
//! supervisor admitting them on a tmux server of its own (`tmux -D`, run here as the tmux unit would) and fake
//! agents that exit 0 within a second, so slots keep freeing. Its baked epilogue, limit file, agent and seed are
//! outside the mount: only what the products write is subject to the power loss.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_box_install::bake::Profile;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tmux::{Tmux, TmuxApi, TmuxConfig};

use super::mount::Layout;
use crate::bake_epilogue;

/// HOME of the queue box under the mount point (and the backing directory).
const HOME: &str = "home/queue";
/// Session slots: low, so most batches queue.
pub const SLOTS: usize = 2;
/// `AGENT_BOX_QUEUE_MAX`: low, so the count bound ends some records `expired` (IN-9).
pub const QUEUE_MAX: usize = 8;
const SOCKET: &str = "powerloss-queue";
/// Set in every process of the queue box; a pane inherits every `AGENT_BOX_*` variable of the supervisor, so the
/// round finds (in `/proc/<pid>/environ`) and kills every process of the box, also those tmux left behind.
const MARKER_KEY: &str = "AGENT_BOX_POWERLOSS_BOX";
const MARKER_VALUE: &str = "queue";
/// How long SIGKILLed processes may take to die before LazyFS is taken to hang (as the writers' halt does).
const STUCK_AFTER: Duration = Duration::from_secs(3);
/// Past this, what is still alive is left to the unmount (a process LazyFS's death could not free).
const GIVE_UP_AFTER: Duration = Duration::from_secs(10);
/// How long a fresh tmux server may take to answer.
const SERVER_WAIT: Duration = Duration::from_secs(10);

/// The fake agent: runs 0.2 to 1 s, then exits 0, so its epilogue parks the session and the supervisor reaps it.
const AGENT: &str =
    "#!/bin/sh\ncase $(( $$ % 4 )) in 0) sleep 0.2 ;; 1) sleep 0.4 ;; 2) sleep 0.7 ;; *) sleep 1 ;; esac\nexit 0\n";

/// The fixed places of the queue box.
#[derive(Debug, Clone)]
pub struct QueueBox {
    pub home: PathBuf,
    pub paths: registry::Paths,
    backing_home: PathBuf,
    work: PathBuf,
    env: Vec<(String, OsString)>,
    bins: PathBuf,
    tmux: TmuxConfig,
}

impl QueueBox {
    /// Lays out its files under `work` (outside the mount) and bakes its epilogue.
    pub fn prepare(layout: &Layout, work: &Path, bins: PathBuf) -> Result<Self, String> {
        let home = layout.mnt.join(HOME);
        let paths = registry::Paths::for_root(&home, "agent");
        let epilogue = bake_epilogue::bake_echoed(paths.registry(), paths.state_dir(), Profile::Dev)
            .map_err(|stop| stop.message)?;
        let files = QueueFiles::under(work);
        files.write().map_err(|e| format!("cannot lay out the queue box under {}: {e}", work.display()))?;
        let tmux_bin = tmux::find_on_path("tmux", Some("/usr/bin:/bin".as_ref()))
            .ok_or_else(|| "the queue box needs tmux (apt-get install tmux)".to_owned())?;
        let tmux = TmuxConfig::new(tmux_bin, SOCKET, &files.tmux).with_conf("/dev/null");
        let env = queue_env(&home, &files, &epilogue);
        let backing_home = layout.backing.join(HOME);
        Ok(Self { home, paths, backing_home, work: work.to_path_buf(), env, bins, tmux })
    }

    /// A product of the queue box with exactly its environment, run in its HOME, all three streams closed.
    pub fn product(&self, name: &str) -> Command {
        let mut cmd = Command::new(self.bins.join(name));
        cmd.env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// A fresh HOME on the backing directory (the mount must be down), as [`super::world::World::reset`] makes,
    /// and empty logs of the supervisor's runs.
    pub fn reset(&self) -> io::Result<()> {
        super::world::fresh_home(&self.backing_home)?;
        fs::write(self.supervisor_log(), "")?;
        fs::write(self.once_log(), "")
    }

    /// Where the stderr of the round's supervisors goes (outside the mount, for a failed round's reader).
    pub fn supervisor_log(&self) -> PathBuf {
        self.work.join("queue-supervisor.log")
    }

    /// Where the stderr of the `--once` after the remount goes.
    pub fn once_log(&self) -> PathBuf {
        self.work.join("queue-once.log")
    }

    /// The box's tmux server in the foreground (`tmux -D`, its working directory outside the mount), once it
    /// answers. The caller kills it; [`QueueBox::kill_strays`] finds it too.
    pub fn start_server(&self) -> io::Result<Child> {
        let client = self.client();
        let mut cmd = client.foreground_server();
        cmd.current_dir(&self.work).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = cmd.spawn()?;
        let deadline = Instant::now() + SERVER_WAIT;
        while !client.list_server().is_ok_and(|s| s.server_pid == Some(child.id())) {
            if Instant::now() > deadline || !matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(io::Error::other("the queue box's tmux server did not answer"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(child)
    }

    fn client(&self) -> Tmux {
        let parent: Vec<(OsString, OsString)> = self.env.iter().map(|(k, v)| (k.into(), v.clone())).collect();
        Tmux::new(self.tmux.clone()).with_parent_env(parent)
    }

    /// SIGKILLs every process of the box (the tmux server, its panes' agents and epilogues, anything orphaned)
    /// until none is left. One blocked in a FUSE request LazyFS never answers cannot die: after [`STUCK_AFTER`]
    /// `lazyfs` is killed, which is a power loss all the same; true when it was.
    pub fn kill_strays(&self, lazyfs: Option<u32>) -> bool {
        let started = Instant::now();
        let mut hung = false;
        loop {
            let strays = marked_processes();
            if strays.is_empty() || started.elapsed() > GIVE_UP_AFTER {
                return hung;
            }
            for pid in strays {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            if let Some(pid) = lazyfs.filter(|_| !hung && started.elapsed() > STUCK_AFTER) {
                hung = true;
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The box's files outside the mount.
struct QueueFiles {
    agent: PathBuf,
    limit: PathBuf,
    seed: PathBuf,
    tmux: PathBuf,
}

impl QueueFiles {
    fn under(work: &Path) -> Self {
        Self {
            agent: work.join("queue-agent"),
            limit: work.join("queue-session-limit"),
            seed: work.join("queue-seed.json"),
            tmux: work.join("qtmux"),
        }
    }

    fn write(&self) -> io::Result<()> {
        fs::create_dir_all(&self.tmux)?;
        fs::set_permissions(&self.tmux, fs::Permissions::from_mode(0o700))?;
        fs::write(&self.agent, AGENT)?;
        fs::set_permissions(&self.agent, fs::Permissions::from_mode(0o755))?;
        fs::write(&self.limit, SLOTS.to_string())?;
        fs::write(&self.seed, registry::Document::empty().to_bytes())
    }
}

/// The variables of every process of the box: those of the main box's products, with its own HOME, limit,
/// agent, epilogue and tmux server (external: the round runs it, as the units do), the queue bound, a seed (the
/// supervisor needs one) and the marker.
fn queue_env(home: &Path, files: &QueueFiles, epilogue: &Path) -> Vec<(String, OsString)> {
    let agent = format!("tool={}", files.agent.display());
    let pairs: [(&str, OsString); 18] = [
        ("HOME", home.into()),
        ("USER", "agent".into()),
        ("LOGNAME", "agent".into()),
        ("PATH", "/usr/bin:/bin".into()),
        ("LANG", "C.UTF-8".into()),
        ("TZ", "UTC".into()),
        ("AGENT_BOX_TMUX_TMPDIR", files.tmux.clone().into()),
        ("AGENT_BOX_TMUX_SOCKET", SOCKET.into()),
        ("AGENT_BOX_TMUX_CONF", "/dev/null".into()),
        ("AGENT_BOX_TMUX_SERVER", "external".into()),
        ("AGENT_BOX_SESSION_LIMIT_FILE", files.limit.clone().into()),
        ("AGENT_BOX_SESSIONS_SEED", files.seed.clone().into()),
        ("AGENT_BOX_AGENTS", "tool".into()),
        ("AGENT_BOX_DEFAULT_AGENT", "tool".into()),
        ("AGENT_BOX_AGENT_BINS", agent.into()),
        ("AGENT_BOX_MARK_STOPPED", epilogue.into()),
        ("AGENT_BOX_QUEUE_MAX", QUEUE_MAX.to_string().into()),
        (MARKER_KEY, MARKER_VALUE.into()),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The pids whose environment holds the marker (never this process).
fn marked_processes() -> Vec<i32> {
    let me = std::process::id();
    let marker = format!("{MARKER_KEY}={MARKER_VALUE}");
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| *pid != me)
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
        })
        .filter_map(|pid| i32::try_from(pid).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_process_of_the_box_carries_the_marker() {
        let files = QueueFiles::under(Path::new("/w"));
        let env = queue_env(Path::new("/m/home/queue"), &files, Path::new("/e"));
        let pairs: Vec<String> = env.iter().map(|(k, v)| format!("{k}={}", v.to_string_lossy())).collect();
        assert!(pairs.iter().any(|p| *p == format!("{MARKER_KEY}={MARKER_VALUE}")), "{pairs:?}");
        assert!(pairs.iter().any(|p| p == "AGENT_BOX_QUEUE_MAX=8"));
        assert!(pairs.iter().any(|p| p == "AGENT_BOX_TMUX_SERVER=external"));
    }

    #[test]
    fn a_marked_child_is_found_and_an_unmarked_one_is_not() {
        let mut marked = Command::new("sleep").arg("30").env(MARKER_KEY, MARKER_VALUE).spawn().unwrap();
        let mut plain = Command::new("sleep").arg("30").spawn().unwrap();
        let found = marked_processes();
        let _ = (marked.kill(), plain.kill(), marked.wait(), plain.wait());
        assert!(found.contains(&(marked.id() as i32)));
        assert!(!found.contains(&(plain.id() as i32)));
    }
}
