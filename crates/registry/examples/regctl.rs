//! `regctl hold REGISTRY` (take the lock, print `held`, keep it until stdin closes),
//! `regctl lock-at REGISTRY SECONDS` (the epilogue's lock, then release),
//! `regctl heal REGISTRY SEED|- PASSES` (self-heal passes, printing each message): process-level test helpers.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use registry::{HealLatches, lock_wait_from_env, self_heal, with_lock};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["hold", registry] => hold(Path::new(registry)),
        ["lock-at", registry, secs] => match secs.parse::<f64>() {
            Ok(secs) => lock_at_once(Path::new(registry), Duration::from_secs_f64(secs)),
            Err(_) => usage(),
        },
        ["heal", registry, seed, passes] => match passes.parse::<u32>() {
            Ok(passes) => heal(Path::new(registry), (*seed != "-").then(|| Path::new(*seed)), passes),
            Err(_) => usage(),
        },
        _ => usage(),
    }
}

fn hold(registry: &Path) -> ExitCode {
    let held = with_lock(registry, lock_wait_from_env().wait, registry::LockPolicy::FRONT_END, |_| {
        println!("held");
        let _ = std::io::stdout().flush();
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    });
    match held {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("regctl: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

fn lock_at_once(registry: &Path, wait: Duration) -> ExitCode {
    match with_lock(registry, wait, registry::LockPolicy::EPILOGUE, |_| ()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("regctl: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

fn heal(registry: &Path, seed: Option<&Path>, passes: u32) -> ExitCode {
    let mut latches = HealLatches::default();
    for _ in 0..passes {
        let outcome = self_heal(registry, seed, Duration::ZERO, &mut latches);
        for message in &outcome.messages {
            println!("message {message}");
        }
        if let Some(err) = &outcome.lock_refused {
            println!("lock-refused {err}");
        }
        println!("document {}", if outcome.document.is_some() { "yes" } else { "no" });
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: regctl hold REGISTRY | lock-at REGISTRY SECONDS | heal REGISTRY SEED|- PASSES");
    ExitCode::from(2)
}
