//! Runs one client process with captured output and a hard deadline, without sleeping in a loop.
//!
//! Output is read with `poll(2)` on both pipes until EOF or the deadline: a tmux server daemonises and
//! detaches from the client's stdio, so EOF comes as soon as the client exits. A client that closes its
//! output but keeps running is still bounded: its exit is awaited on a helper thread with the time left.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

/// A client that ran to completion.
#[derive(Debug)]
pub(crate) struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

#[derive(Debug)]
pub(crate) enum RunError {
    /// The program could not be spawned.
    NotStarted(io::Error),
    /// The deadline passed; the client was killed.
    TimedOut,
    /// Reading its output or waiting for it failed; the client was killed.
    Io(io::Error),
}

/// Runs `command` with stdin from `/dev/null` and both outputs captured, killing it (SIGKILL) at `timeout`.
pub(crate) fn run(mut command: Command, timeout: Duration) -> Result<Finished, RunError> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let deadline = Instant::now() + timeout;
    let mut child = command.spawn().map_err(RunError::NotStarted)?;
    let result = capture(&mut child, deadline);
    if result.is_err() {
        // Never leave a client running behind an error; kill and reap so no zombie stays.
        let _ = child.kill();
        let _ = child.wait();
    }
    result
}

fn capture(child: &mut Child, deadline: Instant) -> Result<Finished, RunError> {
    let mut pipes =
        [Pipe::new(child.stdout.take().map(OwnedFd::from)), Pipe::new(child.stderr.take().map(OwnedFd::from))];
    read_until_eof(&mut pipes, deadline)?;
    let status = wait_until(child, deadline)?;
    let [stdout, stderr] = pipes.map(|pipe| pipe.bytes);
    Ok(Finished { status, stdout, stderr })
}

/// One output pipe; `fd` is dropped (closed) at EOF.
struct Pipe {
    fd: Option<OwnedFd>,
    bytes: Vec<u8>,
}

impl Pipe {
    fn new(fd: Option<OwnedFd>) -> Self {
        Self { fd, bytes: Vec::new() }
    }

    /// One `read(2)`; poll said it will not block.
    fn read_available(&mut self) -> Result<(), RunError> {
        let Some(fd) = &self.fd else { return Ok(()) };
        let mut buffer = [0u8; 8192];
        match nix::unistd::read(fd.as_fd(), &mut buffer) {
            Ok(0) => self.fd = None,
            Ok(count) => self.bytes.extend_from_slice(&buffer[..count]),
            Err(Errno::EINTR | Errno::EAGAIN) => {}
            Err(errno) => return Err(RunError::Io(errno.into())),
        }
        Ok(())
    }
}

fn read_until_eof(pipes: &mut [Pipe; 2], deadline: Instant) -> Result<(), RunError> {
    while pipes.iter().any(|pipe| pipe.fd.is_some()) {
        let timeout = poll_timeout_until(deadline).ok_or(RunError::TimedOut)?;
        let ready = readable(pipes, timeout)?;
        for (pipe, is_ready) in pipes.iter_mut().zip(ready) {
            if is_ready {
                pipe.read_available()?;
            }
        }
    }
    Ok(())
}

/// Which pipes can be read (or are at EOF) within `timeout`; none when it passes or a signal interrupts.
fn readable(pipes: &[Pipe; 2], timeout: PollTimeout) -> Result<[bool; 2], RunError> {
    let open: Vec<usize> = (0..pipes.len()).filter(|&index| pipes[index].fd.is_some()).collect();
    let mut poll_fds: Vec<PollFd<'_>> = open
        .iter()
        .filter_map(|&index| pipes[index].fd.as_ref())
        .map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN))
        .collect();
    let mut ready = [false; 2];
    match poll(&mut poll_fds, timeout) {
        Ok(_) => {}
        Err(Errno::EINTR) => return Ok(ready),
        Err(errno) => return Err(RunError::Io(errno.into())),
    }
    for (&index, poll_fd) in open.iter().zip(&poll_fds) {
        // POLLHUP and POLLERR count: the read then returns EOF or the error.
        ready[index] = poll_fd.revents().is_some_and(|events| !events.is_empty());
    }
    Ok(ready)
}

/// The time left until `deadline`, rounded up to whole milliseconds so poll never spins on a sub-millisecond
/// remainder; `None` once it has passed.
fn poll_timeout_until(deadline: Instant) -> Option<PollTimeout> {
    let left = deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero())?;
    let millis = left.as_nanos().div_ceil(1_000_000);
    Some(u32::try_from(millis).ok().and_then(|ms| PollTimeout::try_from(ms).ok()).unwrap_or(PollTimeout::MAX))
}

/// Reaps the client, waiting at most until `deadline` for it to exit.
fn wait_until(child: &mut Child, deadline: Instant) -> Result<ExitStatus, RunError> {
    if let Some(status) = child.try_wait().map_err(RunError::Io)? {
        return Ok(status);
    }
    let exited = exit_notice(child)?;
    let left = deadline.saturating_duration_since(Instant::now());
    match exited.recv_timeout(left) {
        Ok(()) | Err(RecvTimeoutError::Disconnected) => child.wait().map_err(RunError::Io),
        Err(RecvTimeoutError::Timeout) => Err(RunError::TimedOut),
    }
}

/// A channel that receives once the child has exited. The helper thread waits with `WNOWAIT`, so the
/// child stays a zombie until `Child::wait` reaps it: its pid cannot be reused while a kill may still
/// target it.
fn exit_notice(child: &Child) -> Result<mpsc::Receiver<()>, RunError> {
    let raw_pid = i32::try_from(child.id()).map_err(|err| RunError::Io(io::Error::other(err)))?;
    let pid = Pid::from_raw(raw_pid);
    let (sender, receiver) = mpsc::channel();
    thread::Builder::new()
        .name("tmux-exit-wait".to_owned())
        .spawn(move || {
            let _ = waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT);
            let _ = sender.send(());
        })
        .map_err(RunError::Io)?;
    Ok(receiver)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Command {
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(script);
        command
    }

    #[test]
    fn captures_both_outputs_and_status() {
        let finished = run(shell("echo out; echo err >&2; exit 3"), Duration::from_secs(5)).unwrap();
        assert_eq!(finished.stdout, b"out\n");
        assert_eq!(finished.stderr, b"err\n");
        assert_eq!(finished.status.code(), Some(3));
    }

    #[test]
    fn reads_output_larger_than_a_pipe_buffer() {
        let finished = run(shell("head -c 200000 /dev/zero; head -c 100000 /dev/zero >&2"), Duration::from_secs(5));
        let finished = finished.unwrap();
        assert_eq!(finished.stdout.len(), 200_000);
        assert_eq!(finished.stderr.len(), 100_000);
    }

    #[test]
    fn stdin_is_dev_null() {
        let finished = run(shell("readlink /proc/$$/fd/0; cat; echo done"), Duration::from_secs(5)).unwrap();
        assert_eq!(finished.stdout, b"/dev/null\ndone\n");
    }

    #[test]
    fn a_silent_hang_is_killed_at_the_deadline() {
        let started = Instant::now();
        let result = run(shell("exec sleep 30"), Duration::from_millis(300));
        assert!(matches!(result, Err(RunError::TimedOut)), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn a_client_that_closes_its_output_and_hangs_is_still_bounded() {
        let started = Instant::now();
        let result = run(shell("exec >&- 2>&-; exec sleep 30"), Duration::from_millis(300));
        assert!(matches!(result, Err(RunError::TimedOut)), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn a_missing_program_is_not_started() {
        let result = run(Command::new("/nonexistent/tmux"), Duration::from_secs(1));
        assert!(matches!(result, Err(RunError::NotStarted(_))), "{result:?}");
    }
}
