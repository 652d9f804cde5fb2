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
    pub fn report(&self) -> agent_box_types::bench::Facts {
        agent_box_types::bench::Facts {
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

/// The file-system type of `dir` as `stat -f -c %T` names it (the spec's wording, so the report and a reader
/// checking by hand agree).
pub fn fs_type(dir: &Path) -> String {
    let mut cmd = run::command("stat");
    cmd.args(["-f", "-c", "%T"]).arg(dir);
    first_line(&mut cmd)
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
            state_fs: "ext2/ext3".into(),
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
