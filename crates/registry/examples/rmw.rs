//! `rmw REGISTRY KEY COUNT [OWN_KEY]`: COUNT locked read-modify-writes, each incrementing `sessions.KEY.count`
//! (and `sessions.OWN_KEY.count`), printing `committed <n>` after each durable write. With `RMW_GATE=<path>`
//! it waits for that file to exist before starting, so many processes can be released together.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use base::SessionName;
use registry::{Document, RegistryError, edit, lock_wait_from_env, with_lock};
use serde_json::{Map, Value};

fn main() -> ExitCode {
    // As every front end does first (RG-7.6 item 3): an inherited lock descriptor is made close-on-exec.
    registry::lock::protect_inherited_lock_fd();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (registry, key, count, own) = match args.as_slice() {
        [r, k, c] => (r, k, c, None),
        [r, k, c, o] => (r, k, c, Some(o)),
        _ => return usage(),
    };
    let (Ok(key), Ok(count)) = (SessionName::parse(key), count.parse::<u64>()) else { return usage() };
    let own = match own.map(|o| SessionName::parse(o)).transpose() {
        Ok(own) => own,
        Err(_) => return usage(),
    };
    if let Ok(gate) = std::env::var("RMW_GATE") {
        wait_for(Path::new(&gate));
    }
    let wait = lock_wait_from_env().wait;
    let mut out = std::io::stdout().lock();
    let started = Instant::now();
    for _ in 0..count {
        let committed = with_lock(Path::new(registry), wait, registry::LockPolicy::FRONT_END, |guard| {
            edit(guard, |doc| Ok((increment(doc, &key, own.as_ref()), true)))
        })
        .and_then(|edited| edited);
        match committed {
            Ok(n) => {
                let _ = writeln!(out, "committed {n}");
                let _ = out.flush();
            }
            Err(err) => return fail(&err),
        }
    }
    let _ = writeln!(out, "elapsed_us {}", started.elapsed().as_micros());
    ExitCode::SUCCESS
}

fn increment(doc: &mut Document, key: &SessionName, own: Option<&SessionName>) -> u64 {
    if let Some(own) = own {
        bump(doc, own);
    }
    bump(doc, key)
}

fn bump(doc: &mut Document, key: &SessionName) -> u64 {
    if doc.entry(key.as_str()).is_none() {
        let _ = doc.insert_new(key, Map::new());
    }
    let Some(mut entry) = doc.entry_mut(key) else { return 0 };
    let next = entry.view().get("count").and_then(Value::as_u64).unwrap_or(0) + 1;
    entry.set("count", Value::from(next));
    next
}

fn wait_for(gate: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !gate.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn fail(err: &RegistryError) -> ExitCode {
    eprintln!("rmw: {err}");
    ExitCode::from(err.exit_code())
}

fn usage() -> ExitCode {
    eprintln!("usage: rmw REGISTRY KEY COUNT [OWN_KEY]");
    ExitCode::from(2)
}
