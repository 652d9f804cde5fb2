//! One LazyFS mount: the process in the foreground (a child we can wait on, so its death is the crash), its fault
//! FIFO, and an unmount that also runs from `Drop`, so a failed run leaves no mount behind.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a fresh LazyFS may take to show up in the mount table.
const MOUNT_WAIT: Duration = Duration::from_secs(15);

/// The files of one mount, all outside it.
/// How long a command waits for a live LazyFS to have its end of the FIFO open.
const FIFO_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct Layout {
    pub binary: PathBuf,
    /// The mount point: what the writers see.
    pub mnt: PathBuf,
    /// The backing directory: what survives a power loss.
    pub backing: PathBuf,
    pub config: PathBuf,
    pub fifo: PathBuf,
    pub log: PathBuf,
}

impl Layout {
    /// The TOML configuration: a cache big enough never to evict (an eviction would write data back early and hide
    /// a missing fsync), no operation log.
    pub fn write_config(&self) -> io::Result<()> {
        let text = format!(
            "[faults]\nfifo_path=\"{}\"\n[cache]\napply_eviction=false\n[cache.simple]\ncustom_size=\"512mb\"\n\
             blocks_per_page=1\n[filesystem]\nlog_all_operations=false\nlogfile=\"{}\"\n",
            self.fifo.display(),
            self.log.display()
        );
        fs::write(&self.config, text)
    }
}

/// A running LazyFS over `layout.backing`, mounted at `layout.mnt`.
#[derive(Debug)]
pub struct Mount {
    layout: Layout,
    child: Option<Child>,
}

impl Mount {
    /// Starts LazyFS and waits until the mount is in the mount table and its FIFO exists.
    pub fn start(layout: &Layout) -> io::Result<Self> {
        unmount_path(&layout.mnt);
        let log = File::create(layout.log.with_extension("stdout"))?;
        let child = Command::new(&layout.binary)
            .arg(&layout.mnt)
            .arg("--config-path")
            .arg(&layout.config)
            .args(["-o", "allow_other", "-o", "modules=subdir", "-o"])
            .arg(format!("subdir={}", layout.backing.display()))
            .arg("-f")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let mut mount = Self { layout: layout.clone(), child: Some(child) };
        let deadline = Instant::now() + MOUNT_WAIT;
        while !(is_mounted(&layout.mnt) && layout.fifo.exists()) {
            if Instant::now() > deadline || !mount.alive() {
                return Err(io::Error::other(format!("LazyFS did not mount {}", layout.mnt.display())));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(mount)
    }

    /// The LazyFS process's pid while it has not been reaped (so the number names no other process).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// True while the LazyFS process runs (a `lazyfs::crash` ends it).
    pub fn alive(&mut self) -> bool {
        self.child.as_mut().is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Writes one command line to the FIFO. Opened non-blocking: with LazyFS gone an ordinary open would wait
    /// for a reader forever; this one fails with ENXIO instead. A live LazyFS closes and reopens its end after
    /// each command it read, so ENXIO while it runs means "not yet": retried for up to [`FIFO_WAIT`].
    pub fn command(&mut self, line: &str) -> io::Result<()> {
        let deadline = Instant::now() + FIFO_WAIT;
        loop {
            match OpenOptions::new().write(true).custom_flags(nix::libc::O_NONBLOCK).open(&self.layout.fifo) {
                Ok(mut fifo) => return fifo.write_all(format!("{line}\n").as_bytes()),
                Err(err) if err.raw_os_error() == Some(nix::libc::ENXIO) && self.alive() => {
                    if Instant::now() > deadline {
                        return Err(err);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Waits up to `bound` for the LazyFS process to end; true when it did.
    pub fn wait_exit(&mut self, bound: Duration) -> bool {
        let deadline = Instant::now() + bound;
        while self.alive() {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// The power loss itself: SIGKILL, so LazyFS writes nothing more to the backing directory, then the unmount
    /// of what is left (LazyFS may abort on unmount, which is harmless).
    pub fn power_off(&mut self) {
        if let Some(mut child) = self.child.take() {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        unmount_path(&self.layout.mnt);
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.power_off();
    }
}

/// `fusermount3 -u`, then `umount -l` when that did not do it; nothing when `mnt` is not a mount point.
pub fn unmount_path(mnt: &Path) {
    if !is_mounted(mnt) {
        return;
    }
    let quiet = |program: &str, args: &[&str]| {
        let _ = Command::new(program).args(args).arg(mnt).stdout(Stdio::null()).stderr(Stdio::null()).status();
    };
    quiet("fusermount3", &["-u"]);
    if is_mounted(mnt) {
        quiet("umount", &["-l"]);
    }
}

/// Whether `mnt` is a mount point, from `/proc/self/mountinfo` (field 5). A dead FUSE mount still counts: it must
/// be unmounted too.
pub fn is_mounted(mnt: &Path) -> bool {
    let Ok(table) = fs::read_to_string("/proc/self/mountinfo") else { return false };
    let target = mnt.to_string_lossy();
    table.lines().any(|line| line.split(' ').nth(4).is_some_and(|point| unescape(point) == target))
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(field: &str) -> String {
    field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_mounted_and_a_temp_dir_is_not() {
        assert!(is_mounted(Path::new("/")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_mounted(dir.path()));
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape("/a\\040b"), "/a b");
    }
}
