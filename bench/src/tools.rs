//! The optional public tools of spec 90 that bench uses (valgrind, strace, GNU time): found on `PATH` or not.
//! bench never installs anything; for a missing tool it prints one `apt-get install` line and carries on with
//! its built-in means. hyperfine is not used: it runs all samples of one command before the other's, and every
//! timed comparison here is sampled in rounds (Q-1.2, issue 12).

use std::env;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Paths of the tools that are installed.
#[derive(Debug, Clone, Default)]
pub struct Tools {
    pub valgrind: Option<PathBuf>,
    pub strace: Option<PathBuf>,
    /// GNU time, for the peak RSS of a short process (`-f %M`).
    pub gnu_time: Option<PathBuf>,
}

impl Tools {
    pub fn detect() -> Self {
        let path = env::var_os("PATH").unwrap_or_default();
        let find = |name: &str| find_on_path(&path, name);
        Self {
            valgrind: find("valgrind"),
            strace: find("strace"),
            // The shell keyword `time` is not it; Debian's package `time` installs /usr/bin/time.
            gnu_time: Some(PathBuf::from("/usr/bin/time")).filter(|p| is_executable(p)),
        }
    }

    /// The Debian packages of the missing tools that this run would use (`callgrind`: valgrind is wanted).
    pub fn missing_packages(&self, callgrind: bool) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.valgrind.is_none() && callgrind {
            missing.push("valgrind");
        }
        if self.strace.is_none() {
            missing.push("strace");
        }
        if self.gnu_time.is_none() {
            missing.push("time");
        }
        missing
    }

    /// One line saying what is installed.
    pub fn line(&self) -> String {
        let show = |name: &str, p: &Option<PathBuf>| format!("{name} {}", if p.is_some() { "yes" } else { "no" });
        format!(
            "tools      {}, {}, {}",
            show("valgrind", &self.valgrind),
            show("strace", &self.strace),
            show("GNU time", &self.gnu_time)
        )
    }
}

/// The message for missing tools, printed once per run.
pub fn install_hint(packages: &[&str]) -> Option<String> {
    (!packages.is_empty()).then(|| {
        format!(
            "bench: optional tools missing, using the built-in runner instead; to add them: sudo apt-get install {}",
            packages.join(" ")
        )
    })
}

fn find_on_path(path: &OsStr, name: &str) -> Option<PathBuf> {
    env::split_paths(path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

fn is_executable(file: &Path) -> bool {
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_lists_packages_once() {
        assert_eq!(install_hint(&[]), None);
        assert_eq!(
            install_hint(&["valgrind", "time"]).unwrap(),
            "bench: optional tools missing, using the built-in runner instead; to add them: sudo apt-get install valgrind time"
        );
    }

    #[test]
    fn valgrind_is_wanted_only_for_callgrind() {
        let none = Tools::default();
        assert!(!none.missing_packages(false).contains(&"valgrind"));
        assert!(none.missing_packages(true).contains(&"valgrind"));
    }

    #[test]
    fn finds_sh() {
        assert!(find_on_path(OsStr::new("/nonexistent:/bin"), "sh").is_some());
        assert!(find_on_path(OsStr::new("/nonexistent"), "sh").is_none());
    }
}
