//! `leasectl DIR LOG OP NAME [ARG]`: one lease operation in its own process, printing its result
//! (tests that need real processes: concurrency, lock liveness, unprivileged runs).

use std::process::ExitCode;

use base::SessionName;
use lease::{EndHow, Expect, HookLog, LeaseDir, Outcome};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, log, op, name, rest @ ..] = args.as_slice() else {
        eprintln!("usage: leasectl DIR LOG OP NAME [ARG]");
        return ExitCode::from(2);
    };
    let Ok(name) = SessionName::parse(name) else {
        eprintln!("leasectl: bad name");
        return ExitCode::from(2);
    };
    let leases = LeaseDir::new(dir.into());
    let log = HookLog::new(log.into());
    let arg = rest.first().map(String::as_str);
    let result = match op.as_str() {
        "create" => leases.create(&name, "github:acme/widgets", arg, Some(&log)).map(|g| g.to_string()),
        "died" => {
            let status = arg.and_then(|a| a.parse().ok()).unwrap_or(1);
            leases.mark_outcome(&name, &Outcome::Died(status), &Expect::Any).map(|c| format!("{c:?}"))
        }
        "finish-rm" => leases.finish(&name, &EndHow::Rm, &Expect::Any, Some(&log)).map(|c| format!("{c:?}")),
        "heartbeat" => leases.heartbeat(&name, &Expect::Any).map(|c| format!("{c:?}")),
        _ => {
            eprintln!("leasectl: unknown op {op}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            println!("error: {err}");
            ExitCode::from(1)
        }
    }
}
