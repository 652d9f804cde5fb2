//! `append LOG COUNT NAME`: appends COUNT hook-log `spawn` records for NAME (concurrency tests and bench).

use std::process::ExitCode;

use base::SessionName;
use lease::{Appended, HookLog, SpawnRecord};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [log, count, name] = args.as_slice() else {
        eprintln!("usage: append LOG COUNT NAME");
        return ExitCode::from(2);
    };
    let (Ok(count), Ok(name)) = (count.parse::<u32>(), SessionName::parse(name)) else {
        eprintln!("append: COUNT must be a number and NAME a session name");
        return ExitCode::from(2);
    };
    let log = HookLog::new(log.into());
    let mut skipped = 0;
    for i in 0..count {
        let event = format!("event-{i}");
        let record = SpawnRecord {
            name: &name,
            topic: "github:acme/widgets",
            event: &event,
            object: None,
            count: None,
            intake: None,
            claim: None,
        };
        match log.append_spawn(&record) {
            Appended::Written | Appended::WrittenAndTrimmed => {}
            Appended::Skipped => skipped += 1,
            Appended::Failed(err) => {
                eprintln!("append: {err}");
                return ExitCode::from(1);
            }
        }
    }
    println!("skipped {skipped}");
    ExitCode::SUCCESS
}
