//! `add [NAME] [options] [-- EXTRA_ARGS…]` (50-session-cli §8): validate, then name, admit and insert in one
//! registry-lock section.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use base::{SessionName, new_uuid_v4};
use rand::RngExt;
use registry::{Document, NewEntry, RegistryLock, new_entry};
use view::Context;

use crate::cli::AddArgs;
use crate::error::SessionError;
use crate::locked::{read_locked, with_locked, write_locked};
use crate::messages;
use crate::out::Out;

/// What validation settled before the lock is taken.
struct Validated {
    name: Option<SessionName>,
    harness: String,
    remote_control: bool,
    origin: String,
    cwd: Option<String>,
}

/// Runs `add`: validate, then name, admit and insert in one locked section; M22 on stdout.
pub fn add(ctx: &Context, args: &AddArgs, out: &mut Out) -> Result<(), SessionError> {
    if args.agent.is_some() {
        out.warn(messages::AGENT_DEPRECATED);
    }
    if args.profile.is_some() {
        return Err(usage(messages::not_in_build("--profile", "profiles need the external profile tool")));
    }
    if args.whatsapp.is_some() {
        return Err(usage(messages::not_in_build("--whatsapp", "WhatsApp routing is not included")));
    }
    let valid = validate(ctx, args)?;
    let name = with_locked(ctx, out, |guard| insert(ctx, guard, args, &valid))?;
    out.line(&messages::added(name.as_str(), &valid.harness, args.prompt.is_some()));
    Ok(())
}

/// §8.1 steps 6–9 under the lock: re-read, name, admit, insert, write.
fn insert(ctx: &Context, guard: &RegistryLock, args: &AddArgs, valid: &Validated) -> Result<SessionName, SessionError> {
    let mut doc = read_locked(guard)?;
    let name = match &valid.name {
        Some(name) if doc.contains(name.as_str()) => return Err(SessionError::Exists(name.to_string())),
        Some(name) => name.clone(),
        None => mint_name(ctx, &doc, valid)?,
    };
    if valid.harness != "shell" {
        ctx.check_capacity(doc.sessions(), &[name.as_str()])?;
    }
    let entry = build_entry(args, valid);
    doc.insert_new(&name, entry).map_err(|_| SessionError::Exists(name.to_string()))?;
    write_locked(guard, &doc)?;
    Ok(name)
}

/// §8.1 steps 1–5, in order.
fn validate(ctx: &Context, args: &AddArgs) -> Result<Validated, SessionError> {
    let name = match &args.name {
        Some(raw) => {
            Some(SessionName::parse_new(raw).map_err(|reason| SessionError::BadName { raw: raw.clone(), reason })?)
        }
        None => None,
    };
    let remote_control = match args.remote_control.as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(usage(messages::BAD_REMOTE_CONTROL)),
    };
    if !matches!(args.origin.as_str(), "user" | "agent" | "webhook") {
        return Err(usage(messages::BAD_ORIGIN));
    }
    let harness = harness(ctx, args)?;
    // Issue 25: claude would take the `--` before the prompt, and the prompt, as the option's value.
    if harness == "claude"
        && let Some(option) = base::claude_args::dangling_value_option(&args.extra_args)
    {
        return Err(usage(messages::extra_args_dangling(option)));
    }
    let cwd = args.cwd.as_deref().map(|cwd| canonical_cwd(ctx, cwd)).transpose()?;
    Ok(Validated {
        name,
        remote_control: remote_control.unwrap_or_else(|| registry::document::default_remote_control(&harness)),
        harness,
        origin: args.origin.clone(),
        cwd,
    })
}

/// §8.1 step 4: M9, M10, M8.
fn harness(ctx: &Context, args: &AddArgs) -> Result<String, SessionError> {
    let Some(agents) = ctx.agents.as_deref() else { return Err(usage(messages::NO_AGENTS)) };
    let chosen = args.harness.clone().or_else(|| args.agent.clone()).or_else(|| ctx.default_agent.clone());
    let Some(harness) = chosen else { return Err(usage(messages::NO_DEFAULT_AGENT)) };
    if !agents.split_whitespace().any(|word| word == harness) {
        return Err(SessionError::HarnessUnavailable { harness, agents: agents.to_owned() });
    }
    Ok(harness)
}

/// §8.2: absolute, physical and inside the canonical HOME.
fn canonical_cwd(ctx: &Context, cwd: &OsStr) -> Result<String, SessionError> {
    let home = ctx.paths.home();
    let canonical_home = std::fs::canonicalize(home)
        .ok()
        .filter(|h| h.is_dir())
        .ok_or_else(|| usage(messages::home_unusable(&home.display().to_string())))?;
    let expanded = expand(home, cwd);
    let shown = String::from_utf8_lossy(expanded.as_os_str().as_bytes()).into_owned();
    if expanded.to_str().is_none() {
        return Err(usage(messages::cwd_not_utf8(&shown)));
    }
    let resolved = std::fs::canonicalize(&expanded).map_err(|_| usage(messages::cwd_missing(&shown)))?;
    if !resolved.is_dir() {
        return Err(usage(messages::cwd_not_dir(&shown)));
    }
    let resolved_text = resolved.to_string_lossy().into_owned();
    let home_text = canonical_home.to_string_lossy().into_owned();
    if resolved != canonical_home && !resolved_text.starts_with(&format!("{home_text}/")) {
        return Err(usage(messages::cwd_outside_home(&shown, &resolved_text, &home_text)));
    }
    Ok(resolved_text)
}

fn usage(text: impl Into<String>) -> SessionError {
    SessionError::Usage(text.into())
}

/// `~` and `~/…` become HOME; any other relative path is joined to the current directory.
fn expand(home: &Path, cwd: &OsStr) -> PathBuf {
    let bytes = cwd.as_bytes();
    if bytes == b"~" {
        return home.to_path_buf();
    }
    if let Some(rest) = bytes.strip_prefix(b"~/") {
        return home.join(OsStr::from_bytes(rest));
    }
    let path = Path::new(cwd);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir().map(|dir| dir.join(path)).unwrap_or_else(|_| path.to_path_buf())
}

/// §8.4: the harness, then the directory's basename with `-2`…`-9`, then random suffixes.
fn mint_name(ctx: &Context, doc: &Document, valid: &Validated) -> Result<SessionName, SessionError> {
    let mintable = |candidate: &str| SessionName::parse_new(candidate).ok().filter(|n| !doc.contains(n.as_str()));
    if let Some(name) = mintable(&valid.harness) {
        return Ok(name);
    }
    let home = std::fs::canonicalize(ctx.paths.home()).ok();
    let base = valid.cwd.as_deref().filter(|cwd| home.as_deref() != Some(Path::new(cwd))).map(basename_base);
    if let Some(base) = base.filter(|b| !b.is_empty() && b.len() <= 148) {
        let tries = std::iter::once(base.clone()).chain((2..=9).map(|n| format!("{base}-{n}")));
        if let Some(name) = tries.filter_map(|candidate| mintable(&candidate)).next() {
            return Ok(name);
        }
    }
    let stem = if valid.harness.len() > 145 || SessionName::parse(&valid.harness).is_err() {
        "session"
    } else {
        &valid.harness
    };
    let mut rng = rand::rng();
    for _ in 0..64 {
        if let Some(name) = mintable(&format!("{stem}-{:04x}", rng.random_range(0..=0xffffu32))) {
            return Ok(name);
        }
    }
    Err(SessionError::NoFreeName(valid.harness.clone()))
}

/// The directory basename made name-safe (§8.4 item 2).
fn basename_base(cwd: &str) -> String {
    let trimmed = cwd.strip_suffix('/').unwrap_or(cwd);
    let last = trimmed.rsplit('/').next().unwrap_or("");
    let safe: String =
        last.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' }).collect();
    let safe = safe.strip_prefix('-').unwrap_or(&safe);
    safe.strip_suffix('-').unwrap_or(safe).to_owned()
}

/// The entry of §8.5 through the registry's shared constructor.
fn build_entry(args: &AddArgs, valid: &Validated) -> serde_json::Map<String, serde_json::Value> {
    let (id, life) = (new_uuid_v4(), new_uuid_v4());
    let hook = args.hook.as_deref().and_then(|pair| match pair {
        [source, repository] => Some((source.as_str(), repository.as_str())),
        _ => None,
    });
    let entry = NewEntry {
        remote_control: valid.remote_control,
        working_directory: valid.cwd.as_deref(),
        extra_args: &args.extra_args,
        initial_prompt: args.prompt.as_deref(),
        resume_prompt: args.resume_prompt.as_deref(),
        ephemeral: args.ephemeral,
        ..NewEntry::new(&valid.harness, &id, &valid.origin, base::time::now_epoch(), &life)
    };
    new_entry(&entry.with_hook(hook))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basenames_become_name_safe() {
        assert_eq!(basename_base("/home/agent/src/my app/"), "my-app");
        assert_eq!(basename_base("/home/agent/.dotdir"), "dotdir");
        assert_eq!(basename_base("/home/agent/x.y-"), "x-y");
        assert_eq!(basename_base("/home/agent/é"), "");
    }

    #[test]
    fn tilde_expands_to_home() {
        let home = Path::new("/home/agent");
        assert_eq!(expand(home, OsStr::new("~")), PathBuf::from("/home/agent"));
        assert_eq!(expand(home, OsStr::new("~/src")), PathBuf::from("/home/agent/src"));
        assert_eq!(expand(home, OsStr::new("/abs")), PathBuf::from("/abs"));
    }
}
