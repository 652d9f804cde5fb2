//! Reading a running process from `/proc`: CPU times (`stat` fields 14–17), scheduler run time (`schedstat`) and
//! memory (`status`), as spec 90 §4 measures the supervisor; and which processes have a file open, to name the
//! holder of a lock that outlived its writer (§7).

use std::fs;
use std::path::Path;

use nix::unistd::{SysconfVar, sysconf};

use super::fail::{Context, Outcome};

/// CPU time of a process in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTicks {
    /// utime + stime: the process itself.
    pub own: u64,
    /// cutime + cstime: its waited-for children (the tmux clients it ran).
    pub children: u64,
}

/// Fields 14–17 of `/proc/<pid>/stat`.
pub fn cpu_ticks(pid: u32) -> Outcome<CpuTicks> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).context(|| format!("reading /proc/{pid}/stat"))?;
    parse_cpu_ticks(&text).context(|| format!("unexpected /proc/{pid}/stat: {text}"))
}

fn parse_cpu_ticks(stat: &str) -> Option<CpuTicks> {
    // The command name (field 2) may hold spaces and parentheses; fields after the last ')' are plain.
    let after_name = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<u64> = after_name.split_whitespace().skip(1).map(|f| f.parse().unwrap_or(0)).collect();
    // After the name, index 0 is field 4 (ppid); field k sits at index k − 4.
    let field = |k: usize| fields.get(k - 4).copied();
    Some(CpuTicks { own: field(14)? + field(15)?, children: field(16)? + field(17)? })
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of the `stat` times.
pub fn clock_ticks_per_second() -> Outcome<f64> {
    let value = sysconf(SysconfVar::CLK_TCK).context(|| "sysconf(_SC_CLK_TCK)".into())?;
    value.filter(|v| *v > 0).map(|v| v as f64).context(|| "sysconf(_SC_CLK_TCK) gave no value".into())
}

/// Nanoseconds the process's main thread has run (first field of `/proc/<pid>/schedstat`); finer than clock ticks,
/// and exact for a single-threaded program such as the supervisor. None when the kernel does not keep it.
pub fn run_time_ns(pid: u32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Nanoseconds every thread of the process has run, the sum of `/proc/<pid>/task/*/schedstat` (a supervisor with
/// a claims database has a client thread, issue 26); threads that ended are not counted. None without schedstat.
pub fn process_run_time_ns(pid: u32) -> Option<u64> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0;
    for task in tasks.flatten() {
        let text = fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// `VmRSS` and `VmHWM` of `/proc/<pid>/status`, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    pub rss_kib: u64,
    pub hwm_kib: u64,
}

pub fn memory(pid: u32) -> Outcome<Memory> {
    let text = fs::read_to_string(format!("/proc/{pid}/status")).context(|| format!("reading /proc/{pid}/status"))?;
    let field = |key: &str| status_kib(&text, key).context(|| format!("no {key} in /proc/{pid}/status"));
    Ok(Memory { rss_kib: field("VmRSS")?, hwm_kib: field("VmHWM")? })
}

fn status_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
    line.split_whitespace().next()?.parse().ok()
}

/// Every process with `path` open, as `pid N (ppid P, exe E)`, from a scan of `/proc/*/fd`. Processes that end
/// or deny access during the scan are skipped.
pub fn processes_with_open(path: &Path) -> Vec<String> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let Ok(procs) = fs::read_dir("/proc") else { return Vec::new() };
    procs
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| has_open(*pid, &target))
        .map(describe)
        .collect()
}

fn has_open(pid: u32, target: &Path) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.filter_map(Result::ok).any(|fd| fs::read_link(fd.path()).is_ok_and(|link| link == target))
}

fn describe(pid: u32) -> String {
    let exe = fs::read_link(format!("/proc/{pid}/exe")).map_or_else(|_| "?".to_owned(), |p| p.display().to_string());
    let ppid = fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| parse_ppid(&s));
    format!("pid {pid} (ppid {}, exe {exe})", ppid.map_or_else(|| "?".to_owned(), |p| p.to_string()))
}

fn parse_ppid(stat: &str) -> Option<u32> {
    stat.get(stat.rfind(')')? + 1..)?.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_times_after_an_awkward_name() {
        let stat = "1234 (a b) c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 555 0 0";
        assert_eq!(parse_cpu_ticks(stat), Some(CpuTicks { own: 10, children: 3 }));
        assert_eq!(parse_cpu_ticks("garbage"), None);
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        assert!(cpu_ticks(me).is_ok());
        let mem = memory(me).unwrap();
        assert!(mem.rss_kib > 0 && mem.hwm_kib >= mem.rss_kib);
        assert!(clock_ticks_per_second().unwrap() >= 1.0);
    }

    #[test]
    fn finds_this_process_holding_a_file_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held");
        let file = fs::File::create(&path).unwrap();
        let found = processes_with_open(&path);
        assert!(found.iter().any(|p| p.starts_with(&format!("pid {} (ppid ", std::process::id()))), "{found:?}");
        drop(file);
        assert!(processes_with_open(&path).is_empty());
        assert_eq!(parse_ppid("12 (a) b) S 7 12"), Some(7));
    }

    #[test]
    fn status_fields() {
        assert_eq!(status_kib("VmHWM:\t  5000 kB\nVmRSS:\t  4000 kB\n", "VmRSS"), Some(4000));
        assert_eq!(status_kib("VmRSS:\t  4000 kB\n", "VmHWM"), None);
    }
}
