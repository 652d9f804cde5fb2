//! bench section `claims` (issue 26, docs/boxes.md): what sharing one dispatch through a PostgreSQL claims table
//! costs, against a real server the harness starts for the run (`initdb` into a temporary directory). (a) a
//! delivery to its agent running on a box with the claims database (the batch queues, W27, and the supervisor
//! admits it once it holds the claim, BX-4) against a box without one (admitted at once), sampled in the same
//! rounds; (b) the renewal with 50 live claims (BX-5): the wall time of one renewal statement, and the CPU each
//! supervisor spends per renewal period with its 50 sessions, the box with claims against the one without, in
//! the same rounds.

mod admit;
mod renew;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use agent_box_tests::Sandbox;
use agent_box_tests::fleet::Fleet;
use agent_box_tests::postgres::{PASSWORD, Postgres, ROLE};

use super::Bench;
use super::fail::{Context, Failure, Outcome};
use super::report::Metric;
use super::world::{echo_product, print_sandbox_env, sandbox_env};

const SECTION: &str = "claims";
/// Sessions each box ends (a) with, the renewal's (b) load.
const SESSIONS: usize = 50;
/// The claimed box's label in the database.
const LABEL: &str = "bench-claims";

/// The claims section.
pub fn run(_bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let server = Postgres::start().map_err(|why| Failure(format!("no PostgreSQL server to measure with: {why}")))?;
    let pair = Pair::start(&server)?;
    admit::delivery_to_agent(&pair, metrics)?;
    renew::statement(&server, metrics)?;
    renew::per_period(&pair, &server, metrics)
}

/// Two boxes of [`SESSIONS`] + 1 slots each, empty at the start: `plain` without a claims database, `claimed`
/// sharing `server`'s (its password in its env store, BX-1).
pub struct Pair {
    pub plain: Fleet,
    pub claimed: Fleet,
}

impl Pair {
    fn start(server: &Postgres) -> Outcome<Self> {
        let limit = (SESSIONS + 1).to_string();
        let mut plain = Sandbox::new();
        Fleet::prepare(&mut plain, &limit);
        let mut claimed = Sandbox::new();
        Fleet::prepare(&mut claimed, &limit);
        claimed.set_env("AGENT_BOX_CLAIMS", server.connection(ROLE));
        claimed.set_env("AGENT_BOX_HOST_LABEL", LABEL);
        let store = claimed.home().join(".config/agent-box/env");
        fs::create_dir_all(store.parent().context(|| "the env store has no directory".into())?)
            .context(|| "creating the env store's directory".into())?;
        fs::write(&store, format!("PGPASSWORD={PASSWORD}\n")).context(|| "writing the env store".into())?;
        fs::set_permissions(&store, fs::Permissions::from_mode(0o600)).context(|| "chmod of the env store".into())?;
        print_sandbox_env(SECTION, &sandbox_env(&claimed));
        println!("{SECTION}: two boxes, each started empty with {limit} slots; the second shares the claims database:");
        println!("{}", echo_product(&claimed.cmd("agent-box-supervisor")));
        let empty = String::from_utf8_lossy(&registry::Document::empty().to_bytes()).into_owned();
        Ok(Self {
            plain: Fleet::start(plain, &empty, vec![], &[]),
            claimed: Fleet::start(claimed, &empty, vec![], &[]),
        })
    }
}
