//! Rendering the pane script SCRIPT of §12.5: pure, byte-exact, every variable part through `Q`.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{GenArg, HarnessKind, Prepared};
use crate::config::Config;
use registry::quote::{push_quoted, push_words};

/// What the crash branch prints before the post-mortem shell takes over.
const CRASH_LINE: &[u8] = b"echo \"[agent-box] the agent exited with status $s; this shell is kept for inspection - \
exit it to restart the session\"";

/// SCRIPT without its trailing newline.
pub fn render(config: &Config, prepared: &Prepared, lease_gen: &GenArg) -> Vec<u8> {
    let mut out = Vec::new();
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
