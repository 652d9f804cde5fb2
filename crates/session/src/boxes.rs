//! `boxes [--json]` and `release NAME` (issue 26, docs/boxes.md BX-6, BX-10): the boxes that share this box's claims
//! database, and giving the claim of one local assignment up for another box to take.

use agent_box_types::report::{BoxClaim, BoxReport, BoxesReport};
use agent_box_types::{VERSION, pretty};
use base::time::format_iso;
use claims::{ClaimsConfig, Store};
use lease::{EndHow, Expect, HookLog, LeaseDir, LeaseState};
use view::Context;
use view::text::{pad, visible};

use crate::error::SessionError;
use crate::locked::{checked_name, read_locked, with_locked, write_locked};
use crate::messages;
use crate::out::Out;

/// The claims configuration of this box as the front end sees it; M61 (exit 2) without one.
fn configured(ctx: &Context) -> Result<ClaimsConfig, SessionError> {
    let env = |key: &str| std::env::var_os(key);
    let label = claims::config::front_end_label(&env, ctx.paths.state_dir());
    match ClaimsConfig::from_lookup(&env, label.as_deref()) {
        Ok(Some(config)) => Ok(config),
        Ok(None) => Err(SessionError::Usage(messages::NO_CLAIMS_DATABASE.to_owned())),
        Err(err) => Err(SessionError::Usage(err.to_string())),
    }
}

/// A connection, the password from the env store or a passfile as the supervisor gets it; M62 (exit 1) otherwise.
fn open(ctx: &Context, config: &ClaimsConfig) -> Result<Store, SessionError> {
    let password = claims::client::password_for(config, ctx.paths.home());
    Store::open(config, password.as_deref()).map_err(|err| SessionError::Failed(err.to_string()))
}

/// Runs `boxes [--json]`.
pub fn boxes(ctx: &Context, json: bool, out: &mut Out) -> Result<(), SessionError> {
    let config = configured(ctx)?;
    let rows = open(ctx, &config)?.boxes().map_err(|err| SessionError::Failed(err.to_string()))?;
    let report = BoxesReport {
        version: VERSION,
        boxes: rows
            .into_iter()
            .map(|row| BoxReport {
                box_label: row.box_label,
                last_renewal: format_iso(row.seen_at),
                live: row
                    .live
                    .into_iter()
                    .map(|c| BoxClaim {
                        assignment: c.assignment,
                        lease_gen: c.life,
                        renewed_at: format_iso(c.renewed_at),
                        term_end: format_iso(c.term_end),
                    })
                    .collect(),
            })
            .collect(),
    };
    let text = if json {
        pretty(&report).map_err(|e| SessionError::Failed(e.to_string()))?
    } else {
        render_text(&report, &config.label)
    };
    out.bytes(text.as_bytes());
    Ok(())
}

/// One line per box (this one marked), then its live claims indented.
pub fn render_text(report: &BoxesReport, me: &str) -> String {
    if report.boxes.is_empty() {
        return format!("{}\n", messages::NO_BOXES_YET);
    }
    let mut text = format!("{} {} LIVE CLAIMS\n", pad("BOX", 24), pad("LAST RENEWAL", 20));
    for entry in &report.boxes {
        let label = if entry.box_label == me {
            format!("{} (this box)", visible(&entry.box_label))
        } else {
            visible(&entry.box_label)
        };
        text.push_str(&format!("{} {} {}\n", pad(&label, 24), pad(&entry.last_renewal, 20), entry.live.len()));
        for claim in &entry.live {
            text.push_str(&format!("    {}  until {}\n", visible(&claim.assignment), claim.term_end));
        }
    }
    text
}

/// Runs `release NAME`: the session is removed as by `rm` but with the end record `released` (its ledger file first,
/// so the supervisor never marks the claim done), then the claim's term is ended in the database so another box
/// takes it over. A database that does not answer then is said (M63): the claim runs out by itself after its term.
pub fn release(ctx: &Context, raw: &str, out: &mut Out) -> Result<(), SessionError> {
    let name = checked_name(raw)?;
    let config = configured(ctx)?;
    let leases = LeaseDir::new(ctx.paths.lease_dir());
    let LeaseState::Present(lease) = leases.read(&name) else {
        return Err(SessionError::Usage(messages::no_claim(raw)));
    };
    let (Some((assignment, label)), Some(life)) = (lease.claim(), lease.gen_value()) else {
        return Err(SessionError::Usage(messages::no_claim(raw)));
    };
    let (assignment, label, life) = (assignment.to_owned(), label.to_owned(), life.to_owned());
    if label != config.label {
        return Err(SessionError::Usage(messages::claim_of_another_box(raw, &label)));
    }
    with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        if doc.remove(&name) {
            write_locked(guard, &doc)?;
        }
        Ok(())
    })?;
    let _ = ctx.kill(&name);
    let _ = claims::Ledger::new(ctx.paths.state_dir().join("claims")).forget(&life);
    let expect = lease::Gen::parse(&life).map_or(Expect::Any, Expect::Gen);
    let log = HookLog::new(ctx.paths.hook_log());
    if let Err(err) = leases.finish(&name, &EndHow::Released, &expect, Some(&log)) {
        out.warn(format!("lease of '{name}' not cleared: {err}"));
    }
    for file in [ctx.paths.filter_file(&name), ctx.paths.side_file(&name), ctx.paths.launch_file(&name)] {
        let _ = std::fs::remove_file(file);
    }
    let released = open(ctx, &config).and_then(|mut store| {
        store.release(&assignment, &label, &life).map_err(|err| SessionError::Failed(err.to_string()))
    });
    match released {
        Ok(_) => out.line(&messages::released(raw, &assignment)),
        Err(err) => {
            let term = config.term.as_secs();
            return Err(SessionError::PartlyDone(messages::released_not_told(raw, &err.to_string(), term)));
        }
    }
    Ok(())
}
