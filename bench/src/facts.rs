//! The machine facts printed at the top of every bench report (spec 90 ), and whether this machine is the
//! reference machine on which absolute timing bars are judged.

use std::fs;
use std::path::Path;

use crate::run;

/// What the report says about the machine it ran on.
#[derive(Debug, Clone)]
pub struct Facts {
    pub kernel: String,
    pub os: String,
    pub arch: &'static str,
    pub cpu: String,
    pub cores: usize,
    pub mem_kib: u64,
    pub state_fs: String,
    pub tmux: String,
    pub rustc: String,
    pub revision: String,
}

impl Facts {
    /// Gathers the facts; `state_dir` is where the bench keeps its registries.
    pub fn gather(state_dir: &Path) -> Self {
        let proc_text = |path: &str| fs::read_to_string(path).unwrap_or_default();
        Self {
            kernel: proc_text("/proc/sys/kernel/osrelease").trim().to_owned(),
            os: os_release(&proc_text("/etc/os-release")),
            arch: std::env::consts::ARCH,
            cpu: cpu_model(&proc_text("/proc/cpuinfo")),
            cores: std::thread::available_parallelism().map_or(0, usize::from),
            mem_kib: mem_total_kib(&proc_text("/proc/meminfo")),
            state_fs: fs_type(state_dir),
            tmux: command_line("tmux", &["-V"]),
            rustc: command_line("rustc", &["-V"]),
            revision: revision(),
        }
    }

    /// The reasons this is not the reference machine of Q-1.3 (x86_64, 2 cores, 24 GiB, Debian 12, Rust 1.95,
    /// tmux 3.3a, state directory on local disk); empty when it is.
    pub fn reference_mismatches(&self) -> Vec<String> {
        let mut why = Vec::new();
        if self.arch != "x86_64" {
            why.push(format!("arch {}", self.arch));
        }
        if self.cores != 2 {
            why.push(format!("{} cores", self.cores));
        }
        // "24 GiB" as sold: allow what the kernel keeps for itself.
        let gib = self.mem_kib as f64 / (1024.0 * 1024.0);
        if !(22.0..=25.0).contains(&gib) {
            why.push(format!("{gib:.1} GiB memory"));
        }
        if !self.os.starts_with("Debian GNU/Linux 12") {
            why.push(format!("OS {}", self.os));
        }
        if !self.rustc.starts_with("rustc 1.95") {
            why.push(self.rustc.clone());
        }
        if self.tmux != "tmux 3.3a" {
            why.push(self.tmux.clone());
        }
        if matches!(self.state_fs.as_str(), "tmpfs" | "ramfs" | "overlayfs" | "nfs" | "fuseblk" | "unknown") {
            why.push(format!("state directory on {}", self.state_fs));
        }
        why
    }

    /// The lines printed at the top of the report.
    pub fn lines(&self) -> Vec<String> {
        vec![
            format!("kernel     {} ({}, {})", self.kernel, self.arch, self.os),
            format!("cpu        {} ({} cores, {:.1} GiB)", self.cpu, self.cores, self.mem_kib as f64 / 1048576.0),
            format!("state fs   {}", self.state_fs),
            format!("tmux       {}", self.tmux),
            format!("rustc      {}", self.rustc),
            format!("revision   {}", self.revision),
        ]
    }

    /// The facts as the report's type.
    pub fn report(&self) -> crate::report_json::Facts {
        crate::report_json::Facts {
            kernel: self.kernel.clone(),
            os: self.os.clone(),
            arch: self.arch.to_owned(),
            cpu: self.cpu.clone(),
            cores: self.cores,
            mem_kib: self.mem_kib,
            state_fs: self.state_fs.clone(),
            tmux: self.tmux.clone(),
            rustc: self.rustc.clone(),
            revision: self.revision.clone(),
            reference_mismatches: self.reference_mismatches(),
        }
    }
}

fn os_release(text: &str) -> String {
    let pretty = text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="));
    pretty.map_or_else(|| "unknown".to_owned(), |v| v.trim_matches('"').to_owned())
}

fn cpu_model(cpuinfo: &str) -> String {
    let line = cpuinfo.lines().find(|l| l.starts_with("model name"));
    line.and_then(|l| l.split_once(':')).map_or_else(|| "unknown".to_owned(), |(_, v)| v.trim().to_owned())
}

fn mem_total_kib(meminfo: &str) -> u64 {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"));
    line.and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The file-system type of `dir` as the kernel names it in `/proc/self/mountinfo` (`ext4`, `tmpfs`, `overlay`…): the
/// type of the mount whose mount point is the longest prefix of the directory's canonical path. (`stat -f` reads the
/// superblock magic, which ext2, ext3 and ext4 share: it called ext4 "ext2/ext3".) A directory that does not exist
/// yet is judged by its nearest existing ancestor.
pub fn fs_type(dir: &Path) -> String {
    let existing = dir.ancestors().find(|a| a.exists()).unwrap_or(Path::new("/"));
    let path = fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf());
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mount_type(&mountinfo, &path).unwrap_or_else(|| "unknown".to_owned())
}

/// The type of the mount of `mountinfo` whose mount point (field 5, octal escapes undone) is the longest prefix of
/// `path`; the type is the first field after the ` - ` separator. Later lines win a tie (a mount over a mount).
fn mount_type(mountinfo: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let (before, after) = line.split_once(" - ")?;
        let point = unescape_octal(before.split(' ').nth(4)?);
        let fs_type = after.split(' ').next()?;
        let point_path = Path::new(&point);
        if path.starts_with(point_path) && best.as_ref().is_none_or(|(len, _)| point.len() >= *len) {
            best = Some((point.len(), fs_type.to_owned()));
        }
    }
    best.map(|(_, fs_type)| fs_type)
}

/// mountinfo writes space, tab, newline and backslash in paths as `\ooo`.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        let octal = bytes.get(at + 1..at + 4).filter(|d| byte == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(digits) => {
                out.push(digits.iter().fold(0u8, |acc, d| acc.wrapping_mul(8).wrapping_add(d - b'0')));
                at += 4;
            }
            None => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The first output line of `program args`, or `unknown`.
fn command_line(program: &str, args: &[&str]) -> String {
    let mut cmd = run::command(program);
    cmd.args(args);
    first_line(&mut cmd)
}

fn first_line(cmd: &mut std::process::Command) -> String {
    match run::output(cmd) {
        Ok(out) if out.status.success() => {
            String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("unknown").trim().to_owned()
        }
        _ => "unknown".to_owned(),
    }
}

/// `git rev-parse HEAD`, marked when tracked files differ from it. `--no-optional-locks` keeps `status` from
/// refreshing the index: bench only reads the repository.
fn revision() -> String {
    let head = command_line("git", &["rev-parse", "--short=12", "HEAD"]);
    let mut status = run::command("git");
    status.args(["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"]);
    match run::output(&mut status) {
        Ok(out) if out.status.success() && !out.stdout.is_empty() => format!("{head} (with uncommitted changes)"),
        _ => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> Facts {
        Facts {
            kernel: "6.1.0".into(),
            os: "Debian GNU/Linux 12 (bookworm)".into(),
            arch: "x86_64",
            cpu: "x".into(),
            cores: 2,
            mem_kib: 24_683_656,
            state_fs: "ext4".into(),
            tmux: "tmux 3.3a".into(),
            rustc: "rustc 1.95.0 (59807616e 2026-04-14)".into(),
            revision: "abc".into(),
        }
    }

    #[test]
    fn reference_machine_is_recognised() {
        assert!(reference().reference_mismatches().is_empty());
        let other = Facts { cores: 8, state_fs: "tmpfs".into(), ..reference() };
        assert_eq!(other.reference_mismatches(), ["8 cores", "state directory on tmpfs"]);
    }

    #[test]
    fn the_file_system_type_is_the_longest_mount_point_prefix() {
        let mountinfo = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:21 / /dev/shm rw,nosuid shared:2 - tmpfs tmpfs rw
24 22 0:22 / /work/my\\040dir rw shared:3 - overlay overlay rw
25 22 0:23 / /dev/shmx rw - xfs /dev/sdb rw
";
        let at = |p: &str| mount_type(mountinfo, Path::new(p));
        assert_eq!(at("/home/agent").as_deref(), Some("ext4"));
        assert_eq!(at("/dev/shm/agent-box").as_deref(), Some("tmpfs"));
        assert_eq!(at("/dev/shmx/a").as_deref(), Some("xfs"), "a prefix of path components, not of text");
        assert_eq!(at("/work/my dir/x").as_deref(), Some("overlay"));
        assert_eq!(unescape_octal("a\\134b\\011"), "a\\b\t");
    }

    #[test]
    fn the_file_system_type_of_this_machine_is_named() {
        let here = fs_type(Path::new("/proc/self"));
        assert_eq!(here, "proc");
        assert_ne!(fs_type(Path::new("/no/such/dir/below/root")), "unknown");
    }

    #[test]
    fn parses_proc_texts() {
        assert_eq!(cpu_model("processor\t: 0\nmodel name\t: AMD EPYC\n"), "AMD EPYC");
        assert_eq!(mem_total_kib("MemTotal:       24683656 kB\nMemFree: 1 kB\n"), 24_683_656);
        assert_eq!(
            os_release("NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"),
            "Debian GNU/Linux 12 (bookworm)"
        );
        assert_eq!(os_release(""), "unknown");
    }
}
