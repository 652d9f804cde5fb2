//! Running one command of a golden artefact and framing what it printed (70 GD-4):
//! `$ <argv>`, `[env]` lines for what differs from the fixture world, `[setup]`, `[stdin]`, `[exit]`,
//! `[stdout]` and `[stderr]` with the raw bytes. Every command runs with the world's cleared environment,
//! umask 077 and pipes for stdout and stderr (GD-5), one at a time.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base::quote::quote_arg;

use super::world::{World, fixtures_dir};
use crate::bins::bin;

/// A product command is expected to answer well within this; past it the render fails instead of hanging.
const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// One command to run in a world.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The name shown after `$ ` (the installed name of the program).
    shown: String,
    path: PathBuf,
    args: Vec<OsString>,
    env: Vec<(String, Option<OsString>)>,
    stdin: Option<String>,
    no_file_growth: bool,
    /// `JOURNAL_STREAM` names the command's stderr, as systemd sets it for a unit logging to the journal.
    journal: bool,
}

/// What a command did.
#[derive(Debug, Clone)]
pub struct Captured {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Captured {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

impl Invocation {
    /// Product binary `name` from this build's target directory.
    pub fn product(name: &str) -> Self {
        Self::at(name, bin(name))
    }

    /// A program shown as `shown` but run from `path` (a baked epilogue).
    pub fn at(shown: &str, path: PathBuf) -> Self {
        Self {
            shown: shown.to_owned(),
            path,
            args: Vec::new(),
            env: Vec::new(),
            stdin: None,
            no_file_growth: false,
            journal: false,
        }
    }

    /// Runs it with stderr taken for the journal (issue 18): `JOURNAL_STREAM` is the `<dev>:<inode>` of its stderr.
    pub fn as_if_journal(mut self) -> Self {
        self.journal = true;
        self
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets `key` for this command only (an `[env]` line).
    pub fn env(mut self, key: &str, value: impl Into<OsString>) -> Self {
        self.env.push((key.to_owned(), Some(value.into())));
        self
    }

    /// Removes `key` for this command only (an `[env] KEY (unset)` line).
    pub fn unset(mut self, key: &str) -> Self {
        self.env.push((key.to_owned(), None));
        self
    }

    /// Feeds fixture `rel` (under `tests/fixtures/golden/`) on stdin; otherwise stdin is /dev/null.
    pub fn stdin_fixture(mut self, rel: &str) -> Self {
        self.stdin = Some(rel.to_owned());
        self
    }

    /// Runs with a file-size limit of 0 bytes and SIGXFSZ ignored, so every write that would grow a file fails
    /// with EFBIG, even for root (how a write failure is reached without dropping privileges).
    pub fn no_file_growth(mut self) -> Self {
        self.no_file_growth = true;
        self
    }

    /// Runs the command in `world`.
    pub fn run(&self, world: &World) -> Captured {
        let mut cmd = self.wrapped(world);
        for (key, value) in &self.env {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        match &self.stdin {
            Some(rel) => cmd.stdin(File::open(fixtures_dir().join(rel)).unwrap()),
            None => cmd.stdin(Stdio::null()),
        };
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run {}: {e}", self.path.display()));
        finish(child, &self.argv_line())
    }

    /// Runs the command and returns its GD-4 capture text with what it did.
    pub fn capture(&self, world: &World) -> (Vec<u8>, Captured) {
        let captured = self.run(world);
        (self.frame(&captured), captured)
    }

    /// `/bin/sh -c 'umask 077; … exec "$0" "$@"' <program> <args>`: sh sets what `Command` cannot without
    /// unsafe code, then replaces itself; the arguments reach the program untouched, never parsed by sh.
    fn wrapped(&self, world: &World) -> Command {
        let growth = if self.no_file_growth { "trap '' XFSZ; ulimit -f 0; " } else { "" };
        // Command substitution redirects only stdout, so /proc/self/fd/2 there is the command's own stderr.
        let journal = if self.journal {
            "JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2); export JOURNAL_STREAM; "
        } else {
            ""
        };
        let script = format!("umask 077; {growth}{journal}exec \"$0\" \"$@\"");
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(script).arg(&self.path).args(&self.args);
        cmd.env_clear().envs(world.sb.env_pairs()).current_dir(world.home());
        cmd
    }

    fn argv_line(&self) -> String {
        let words = std::iter::once(OsStr::new(&self.shown)).chain(self.args.iter().map(OsString::as_os_str));
        let quoted: Vec<String> = words.map(|w| quote_arg(&w.to_string_lossy())).collect();
        format!("$ {}", quoted.join(" "))
    }

    fn frame(&self, captured: &Captured) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(self.argv_line().as_bytes());
        out.push(b'\n');
        let mut env = self.env.clone();
        env.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, value) in env {
            let line = match value {
                Some(v) => format!("[env] {key}={}\n", quote_arg(&v.to_string_lossy())),
                None => format!("[env] {key} (unset)\n"),
            };
            out.extend_from_slice(line.as_bytes());
        }
        if self.no_file_growth {
            out.extend_from_slice(b"[setup] file size limit 0 (ulimit -f 0), SIGXFSZ ignored\n");
        }
        if self.journal {
            out.extend_from_slice(b"[setup] stderr is the journal (JOURNAL_STREAM names it)\n");
        }
        if let Some(rel) = &self.stdin {
            out.extend_from_slice(format!("[stdin] tests/fixtures/golden/{rel}\n").as_bytes());
        }
        let exit = match (captured.status.code(), captured.status.signal()) {
            (Some(code), _) => code.to_string(),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "?".to_owned(),
        };
        out.extend_from_slice(format!("[exit] {exit}\n[stdout]\n").as_bytes());
        stream(&mut out, &captured.stdout);
        out.extend_from_slice(b"[stderr]\n");
        stream(&mut out, &captured.stderr);
        out
    }
}

/// Appends a stream's bytes; one that does not end in `\n` gets `\n` and `[no newline at end]`.
fn stream(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        out.extend_from_slice(b"\n[no newline at end]\n");
    }
}

fn reader(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// Waits for `child` with a deadline, collecting both pipes.
fn finish(mut child: Child, shown: &str) -> Captured {
    let stdout = reader(child.stdout.take().unwrap());
    let stderr = reader(child.stderr.take().unwrap());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > COMMAND_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("golden: `{shown}` did not finish within {COMMAND_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Captured { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}
