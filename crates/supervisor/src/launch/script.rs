//! Rendering the pane script SCRIPT of §12.5: pure, byte-exact, every variable part through `Q`.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{GenArg, HarnessKind, Prepared};
use crate::config::Config;
use base::quote::{push_quoted, push_words};

/// What the crash branch prints before the post-mortem shell takes over.
const CRASH_LINE: &[u8] = b"echo \"[agent-box] the agent exited with status $s; this shell is kept for inspection - \
exit it to restart the session\"";

/// The env-store loader (issue 20, docs/env-store.md), before the command line: a POSIX-sh read loop over the
/// store, read when the pane starts. No `eval` and no `.`: a value is only ever the operand of `export "K=V"`, so
/// it reaches the agent byte for byte and is never parsed. The line rules are those of `registry::envstore`:
/// spaces, tabs and CRs trimmed around the line and the key, one pair of quotes stripped, `#`, blank and
/// malformed lines skipped, the last of a key winning. `AGENT_BOX_*`, the loader's own `_abx_*` and the pane's
/// own variables (§12.7, added by [`push_loader`]) are never exported, so they always win.
const LOADER_HEAD: &[u8] = b"if [ -f \"$_abx_f\" ] && [ -r \"$_abx_f\" ]; then
_abx_w=$(printf ' \\t\\r'); _abx_a=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_
while IFS= read -r _abx_l || [ -n \"$_abx_l\" ]; do
_abx_l=${_abx_l#\"${_abx_l%%[!$_abx_w]*}\"}; _abx_l=${_abx_l%\"${_abx_l##*[!$_abx_w]}\"}
case $_abx_l in '#'*) continue ;; *=*) ;; *) continue ;; esac
_abx_k=${_abx_l%%=*}; _abx_v=${_abx_l#*=}
_abx_k=${_abx_k#\"${_abx_k%%[!$_abx_w]*}\"}; _abx_k=${_abx_k%\"${_abx_k##*[!$_abx_w]}\"}
case $_abx_k in ''|[!$_abx_a]*|*[!0123456789$_abx_a]*|AGENT_BOX_*|_abx_*";

const LOADER_TAIL: &[u8] = b") continue ;; esac
case $_abx_v in \\\"*\\\"|\\'*\\') _abx_v=${_abx_v#?}; _abx_v=${_abx_v%?} ;; esac
export \"$_abx_k=$_abx_v\"
done < \"$_abx_f\"
fi
unset _abx_f _abx_w _abx_a _abx_l _abx_k _abx_v
";

/// The loader lines for the store at `store`, the pane's own variable names (§12.7) added to the skipped keys.
pub fn push_loader(out: &mut Vec<u8>, store: &Path, own: &[(String, String)]) {
    out.extend_from_slice(b"_abx_f=");
    push_quoted(out, store.as_os_str().as_bytes());
    out.push(b'\n');
    out.extend_from_slice(LOADER_HEAD);
    // The names are keys of §12.7 (letters and '_'): bare words in a case pattern.
    for (key, _) in own.iter().filter(|(k, _)| !k.starts_with("AGENT_BOX_")) {
        out.push(b'|');
        push_quoted(out, key.as_bytes());
    }
    out.extend_from_slice(LOADER_TAIL);
}

/// SCRIPT without its trailing newline: the env-store loader, then the command line of §12.5.
pub fn render(config: &Config, prepared: &Prepared, lease_gen: &GenArg) -> Vec<u8> {
    let mut out = Vec::new();
    push_loader(&mut out, &registry::envstore::store_path(config.paths.home()), &prepared.env);
    if let Some(env_exec) = &config.env_exec {
        push_quoted(&mut out, env_exec.as_os_str().as_bytes());
        out.push(b' ');
    }
    push_words(&mut out, prepared.argv.iter().map(|a| a.as_bytes()));
    if prepared.harness.kind == HarnessKind::Shell {
        // Leaving a shell is always deliberate: park whatever the status.
        out.extend_from_slice(b"; ");
        push_epilogue(&mut out, config, prepared, b"0", lease_gen);
        return out;
    }
    // The status is kept in `s` before any test, so a failing epilogue cannot take the crash branch.
    out.extend_from_slice(b"; s=$?; if [ \"$s\" -eq 0 ]; then ");
    push_epilogue(&mut out, config, prepared, b"0", lease_gen);
    out.extend_from_slice(b"; else ");
    push_epilogue(&mut out, config, prepared, b"\"$s\"", lease_gen);
    out.extend_from_slice(b"; ");
    out.extend_from_slice(CRASH_LINE);
    out.extend_from_slice(b"; exec ");
    push_quoted(&mut out, prepared.post_mortem.as_os_str().as_bytes());
    out.extend_from_slice(b"; fi");
    out
}

/// `M N <status>G LIFE`; `status` is shell text written as is (`0` or `"$s"`).
fn push_epilogue(out: &mut Vec<u8>, config: &Config, prepared: &Prepared, status: &[u8], lease_gen: &GenArg) {
    push_quoted(out, config.mark_stopped.as_os_str().as_bytes());
    out.push(b' ');
    push_quoted(out, prepared.name.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status);
    match lease_gen {
        GenArg::Gen(lease_gen) => {
            out.push(b' ');
            push_quoted(out, lease_gen.as_bytes());
        }
        GenArg::NoLease => out.extend_from_slice(b" -"),
        GenArg::Omitted if prepared.life.is_some() => out.extend_from_slice(b" any"),
        GenArg::Omitted => {}
    }
    // LIFE (issue 17): the epilogue writes the entry only while it still names this life.
    if let Some(life) = &prepared.life {
        out.push(b' ');
        push_quoted(out, life.as_bytes());
    }
}

/// The `command` line of `--print-command`: `/bin/sh Q(<launch file>)`.
pub fn command_line(launch_file: &Path) -> Vec<u8> {
    let mut out = b"/bin/sh ".to_vec();
    push_quoted(&mut out, launch_file.as_os_str().as_bytes());
    out
}
