//! The fake agent (80 I8): a POSIX sh script that records its argv, environment and working directory, then
//! obeys a control file; and readers for what it recorded.
//!
//! The control file is read *before* the start is announced (the argv record renamed into place): a test that
//! waits for a start and then writes `exit-now N` is then always seen by that start's poll loop. Read after the
//! announcement, a command written in between was taken as the start's own command, which `exit-now` is not, and
//! the agent ran on for ever (issue 25: the chaos fate "restart then exit 0" failing on a loaded machine).

use std::fs;
use std::path::{Path, PathBuf};

/// The script, with `@ROOT@` replaced by the sandbox root (single-quoted, so the root must not contain `'`).
const SCRIPT: &str = r#"#!/bin/sh
root='@ROOT@'
name=
prev=
for a in "$@"; do
  if [ "$prev" = "--as" ]; then name=$a; break; fi
  prev=$a
done
[ -n "$name" ] || name=$(tmux display-message -p '#S' 2>/dev/null)
[ -n "$name" ] || name=unknown
dir="$root/agents"
mkdir -p "$dir"
k=1
while ! mkdir "$dir/$name.$k.claim" 2>/dev/null; do k=$((k+1)); done
printf '%s\0' "$@" > "$dir/$name.$k.argv.tmp"
env -0 > "$dir/$name.$k.env"
pwd -P > "$dir/$name.$k.cwd"
echo $$ > "$dir/$name.$k.pid"
ctl=$(cat "$dir/$name.ctl" 2>/dev/null)
mv "$dir/$name.$k.argv.tmp" "$dir/$name.$k.argv"
case "$ctl" in
  "exit "*) exit ${ctl#exit } ;;
  "exit-after "*) set -- $ctl; sleep "$2"; exit "$3" ;;
  poll)
    while :; do
      sleep 1
      ctl=$(cat "$dir/$name.ctl" 2>/dev/null)
      case "$ctl" in "exit-now "*) exit ${ctl#exit-now } ;; esac
    done ;;
esac
while :; do sleep 3600; done
"#;

/// The fake agent's source for a sandbox rooted at `root`.
pub fn script(root: &Path) -> String {
    SCRIPT.replace("@ROOT@", &root.display().to_string())
}

/// What one start of a fake agent recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub argv: Vec<Vec<u8>>,
    pub env: Vec<(String, String)>,
    pub cwd: String,
}

impl Start {
    pub fn argv_strings(&self) -> Vec<String> {
        self.argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect()
    }
    pub fn env_var(&self, key: &str) -> Option<&str> {
        self.env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// The records of agent `name` under `root/agents`.
#[derive(Debug, Clone)]
pub struct AgentRecords {
    dir: PathBuf,
    name: String,
}

impl AgentRecords {
    pub fn new(root: &Path, name: &str) -> Self {
        Self { dir: root.join("agents"), name: name.to_owned() }
    }

    /// How many times the agent has started and recorded its argv. Claim numbers are consecutive, but a start
    /// killed before it recorded (a `stop` right after a spawn) leaves a gap; counting stopped at the first gap
    /// once and hid every later start, so the count skips gaps instead.
    pub fn starts(&self) -> usize {
        self.recorded().len()
    }

    /// The claim numbers of the starts that recorded their argv, in order.
    fn recorded(&self) -> Vec<usize> {
        (1..).take_while(|k| self.file(*k, "claim").exists()).filter(|k| self.file(*k, "argv").exists()).collect()
    }

    /// The claim number of recorded start `i` (1-based); past the last, a number no start has.
    fn claim_of(&self, i: usize) -> usize {
        self.recorded().get(i.wrapping_sub(1)).copied().unwrap_or(usize::MAX)
    }

    /// Recorded start number `i` (1-based).
    pub fn start(&self, i: usize) -> Start {
        let k = self.claim_of(i);
        let split = |bytes: Vec<u8>| -> Vec<Vec<u8>> {
            let mut parts: Vec<Vec<u8>> = bytes.split(|b| *b == 0).map(<[u8]>::to_vec).collect();
            parts.pop();
            parts
        };
        let argv = split(fs::read(self.file(k, "argv")).unwrap());
        let env = split(fs::read(self.file(k, "env")).unwrap_or_default())
            .into_iter()
            .filter_map(|kv| {
                let text = String::from_utf8_lossy(&kv).into_owned();
                text.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned()))
            })
            .collect();
        let cwd = fs::read_to_string(self.file(k, "cwd")).unwrap_or_default().trim_end_matches('\n').to_owned();
        Start { argv, env, cwd }
    }

    /// The latest start.
    pub fn last(&self) -> Start {
        self.start(self.starts())
    }

    /// The pid of recorded start `i`.
    pub fn pid(&self, i: usize) -> u32 {
        let k = self.claim_of(i);
        fs::read_to_string(self.file(k, "pid")).unwrap().trim().parse().unwrap()
    }

    /// When start `k` began recording (the modification time of its argv record, the first one it writes), if it did.
    pub fn started_at(&self, i: usize) -> Option<std::time::SystemTime> {
        let k = self.claim_of(i);
        fs::metadata(self.file(k, "argv")).ok()?.modified().ok()
    }

    /// Makes the next starts obey `command`: `run`, `exit N`, `exit-after S N`, or `poll` (re-read the control
    /// file every second, so a later `exit-now N` ends that running start).
    pub fn control(&self, command: &str) {
        fs::create_dir_all(&self.dir).unwrap();
        fs::write(self.dir.join(format!("{}.ctl", self.name)), command).unwrap();
    }

    fn file(&self, k: usize, ext: &str) -> PathBuf {
        self.dir.join(format!("{}.{k}.{ext}", self.name))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};
    use std::time::{Duration, Instant};

    /// A `mv` that does its move, then waits for `release` to exist: the agent is held right after it announced
    /// its start, the instant in which the chaos driver wrote its command.
    fn holding_mv(bin: &Path, release: &Path) {
        let text = format!(
            "#!/bin/sh\n/bin/mv \"$@\"; s=$?\nwhile [ ! -e '{}' ]; do sleep 0.02; done\nexit $s\n",
            release.display()
        );
        fs::create_dir_all(bin).unwrap();
        fs::write(bin.join("mv"), text).unwrap();
        fs::set_permissions(bin.join("mv"), fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The agent's process group, killed on drop (also on a failed assertion): its `sleep` must not outlive it.
    struct Group(Child);

    impl Drop for Group {
        fn drop(&mut self) {
            if let Ok(pid) = i32::try_from(self.0.id()) {
                let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            }
            let _ = self.0.wait();
        }
    }

    // issue 25 item 1
    #[test]
    fn a_command_written_right_after_a_start_is_announced_is_obeyed_by_that_start() {
        let root = tempfile::tempdir().unwrap();
        let (bin, release) = (root.path().join("bin"), root.path().join("release"));
        holding_mv(&bin, &release);
        let agent = root.path().join("agent");
        fs::write(&agent, script(root.path())).unwrap();
        let records = AgentRecords::new(root.path(), "x");
        records.control("poll");
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let child = Command::new("sh").arg(&agent).args(["--as", "x"]).env("PATH", path).process_group(0).spawn();
        let mut child = Group(child.unwrap());
        let deadline = Instant::now() + Duration::from_secs(10);
        while records.starts() == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(records.starts(), 1, "the start was announced");
        records.control("exit-now 7");
        fs::write(&release, "").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.and_then(|s| s.code()), Some(7), "the start obeys the exit-now written after it announced");
    }
}
