//! The lines the ci step tests: `git diff` from the merge base with main (on main itself: from the previous
//! commit) to the working tree, restricted to the files `.cargo/mutants.toml` examines.

use std::path::PathBuf;

use crate::run;

/// Where the diff is written for `cargo mutants --in-diff`.
fn diff_file() -> PathBuf {
    run::target_dir().join("mutants/ci.diff")
}

/// The diff to test, or `None` (said on stdout) when no examined line changed or there is nothing to compare with.
pub fn changed_lines() -> Result<Option<PathBuf>, String> {
    let Some((base, what)) = base() else {
        println!("SKIP: mutants: no main branch and no previous commit to compare with; nothing to test");
        return Ok(None);
    };
    let config = std::fs::read_to_string(run::workspace_root().join(".cargo/mutants.toml"))
        .map_err(|err| format!("cannot read .cargo/mutants.toml: {err}"))?;
    let mut cmd = run::command("git");
    cmd.args(["diff", "--no-color", "--no-ext-diff", &base, "--"]).args(pathspecs(&config));
    let diff = git_output(&mut cmd)?;
    let short = base.get(..10).unwrap_or(&base);
    if diff.trim().is_empty() {
        println!("mutants: no examined line changed since {what} ({short}); nothing to test");
        return Ok(None);
    }
    let file = diff_file();
    let written = file.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&file, &diff));
    written.map_err(|err| format!("cannot write {}: {err}", file.display()))?;
    println!("mutants: testing the mutants of the lines changed since {what} ({short})");
    Ok(Some(file))
}

/// The commit to diff from: the merge base with `main` when HEAD is not on it, else HEAD's parent; `None` in a
/// checkout with neither (a single commit, or no git).
fn base() -> Option<(String, &'static str)> {
    let head = rev("HEAD")?;
    let merge_base = ["main", "origin/main"].iter().find_map(|branch| merge_base(branch));
    if let Some(merge_base) = merge_base.filter(|merge_base| *merge_base != head) {
        return Some((merge_base, "the merge base with main"));
    }
    rev("HEAD~1").map(|parent| (parent, "the previous commit"))
}

fn rev(name: &str) -> Option<String> {
    let mut cmd = run::command("git");
    cmd.args(["rev-parse", "--verify", "--quiet", &format!("{name}^{{commit}}")]);
    git_output(&mut cmd).ok().map(|out| out.trim().to_owned()).filter(|out| !out.is_empty())
}

fn merge_base(branch: &str) -> Option<String> {
    rev(branch)?;
    let mut cmd = run::command("git");
    cmd.args(["merge-base", "HEAD", branch]);
    git_output(&mut cmd).ok().map(|out| out.trim().to_owned()).filter(|out| !out.is_empty())
}

/// Stdout of a git command that must succeed.
fn git_output(cmd: &mut std::process::Command) -> Result<String, String> {
    let out = run::output(cmd).map_err(|err| format!("cannot run git: {err}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("git failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// git pathspecs of the configuration's `examine_globs` and `exclude_globs`, so the diff holds only examined files
/// (and a change elsewhere costs nothing, not even installing cargo-mutants).
fn pathspecs(config: &str) -> Vec<String> {
    let examine = string_array(config, "examine_globs").into_iter().map(|glob| format!(":(glob){glob}"));
    let exclude = string_array(config, "exclude_globs").into_iter().map(|glob| format!(":(glob,exclude){glob}"));
    examine.chain(exclude).collect()
}

/// The strings of a TOML array `key = [ "a", "b" ]` (one level, no escapes: all the configuration uses).
fn string_array(config: &str, key: &str) -> Vec<String> {
    let Some(start) = config.lines().position(|line| line.trim_start().starts_with(&format!("{key} ="))) else {
        return Vec::new();
    };
    let mut text = String::new();
    for line in config.lines().skip(start) {
        let code = line.split_once('#').map_or(line, |(code, _)| code);
        text.push_str(code);
        if code.contains(']') {
            break;
        }
    }
    let inner = text.split_once('[').map_or("", |(_, rest)| rest);
    let inner = inner.split_once(']').map_or(inner, |(list, _)| list);
    inner.split('"').skip(1).step_by(2).map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_read_across_lines_without_comments() {
        let config =
            "# head\nexamine_globs = [\n  \"a/**/*.rs\", # first\n  \"b.rs\",\n]\nexclude_globs = [\"**/fuzz.rs\"]\n";
        assert_eq!(string_array(config, "examine_globs"), ["a/**/*.rs", "b.rs"]);
        assert_eq!(string_array(config, "exclude_globs"), ["**/fuzz.rs"]);
        assert!(string_array(config, "exclude_re").is_empty());
    }

    /// The real configuration gives pathspecs for every examined crate and keeps the fuzz oracles out.
    #[test]
    fn the_configuration_gives_pathspecs_of_the_examined_files() {
        let config = std::fs::read_to_string(run::workspace_root().join(".cargo/mutants.toml")).unwrap();
        let specs = pathspecs(&config);
        for crate_dir in ["registry", "lease", "mark-stopped"] {
            assert!(specs.contains(&format!(":(glob)crates/{crate_dir}/src/**/*.rs")), "{specs:?}");
        }
        assert!(specs.contains(&":(glob)crates/supervisor/src/decide.rs".to_owned()), "{specs:?}");
        assert!(specs.contains(&":(glob,exclude)**/fuzz.rs".to_owned()), "{specs:?}");
    }
}
