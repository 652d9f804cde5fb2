//! The claims table in PostgreSQL (docs/boxes.md BX-2…BX-6): the migration, and one statement for each thing a box
//! asks. Every time compared is the database's own `now()`, never a box's clock (BX-3).

use std::time::Duration;

use postgres::{Client, NoTls};

use crate::config::{ClaimsConfig, ConfigError};

/// The schema version this build knows.
pub const SCHEMA_VERSION: i32 = 1;
/// The advisory lock key of the migration (any constant shared by every box).
const MIGRATION_LOCK: i64 = 0x6162_6f78_2601;
/// A statement never runs longer than this on the server.
const STATEMENT_TIMEOUT_MS: u64 = 5000;

/// Why the database did not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot reach the claims database ({0})")]
    Unreachable(String),
    #[error(
        "the claims database has schema version {found}; this agent-box knows version {SCHEMA_VERSION}: upgrade every box to the same agent-box"
    )]
    Schema { found: i32 },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the claims database did not answer within {0:?}")]
    Timeout(Duration),
}

impl StoreError {
    fn from_pg(err: &postgres::Error) -> Self {
        Self::Unreachable(err.to_string())
    }
}

/// What the take statement answered (BX-4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// This box holds it now; `from` is the box whose term had ended, when it was taken over.
    Won { from: Option<String> },
    /// Another box holds it (its term runs), or it is done.
    Held { by: String, done: bool },
}

/// One claim as `status` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRow {
    pub assignment: String,
    pub box_label: String,
    pub life: String,
    pub done: bool,
    /// Its term has ended (the owner stopped renewing).
    pub ended: bool,
}

/// One box as `boxes` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxRow {
    pub box_label: String,
    /// The last renewal, seconds since the epoch (the database's clock).
    pub seen_at: i64,
    pub live: Vec<LiveClaim>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveClaim {
    pub assignment: String,
    pub life: String,
    pub renewed_at: i64,
    pub term_end: i64,
}

/// A connection to the claims database, checked (and migrated) when it was opened.
pub struct Store {
    client: Client,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Connects and runs the migration (BX-2): a database at another version is [`StoreError::Schema`].
    pub fn open(config: &ClaimsConfig, password: Option<&[u8]>) -> Result<Self, StoreError> {
        let mut client_config = config.client(password)?;
        client_config.options(&format!("-c statement_timeout={STATEMENT_TIMEOUT_MS}"));
        let client = client_config.connect(NoTls).map_err(|e| StoreError::from_pg(&e))?;
        let mut store = Self { client };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let mut tx = self.client.transaction().map_err(|e| StoreError::from_pg(&e))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).map_err(|e| StoreError::from_pg(&e))?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS agent_box_schema (version integer NOT NULL)")
            .map_err(|e| StoreError::from_pg(&e))?;
        let found: Option<i32> =
            tx.query_one("SELECT max(version) FROM agent_box_schema", &[]).map_err(|e| StoreError::from_pg(&e))?.get(0);
        match found {
            Some(SCHEMA_VERSION) => {}
            Some(found) => return Err(StoreError::Schema { found }),
            None => {
                tx.batch_execute(MIGRATION_1).map_err(|e| StoreError::from_pg(&e))?;
                tx.execute("INSERT INTO agent_box_schema (version) VALUES ($1)", &[&SCHEMA_VERSION])
                    .map_err(|e| StoreError::from_pg(&e))?;
            }
        }
        tx.commit().map_err(|e| StoreError::from_pg(&e))
    }

    /// BX-4: takes the claim of `assignment` for this box with `life`, or says who holds it. The loser's half of
    /// the statement reads the snapshot the statement started with, so a concurrent winner's row may not be seen
    /// yet: then the statement runs again and sees it.
    pub fn take(&mut self, assignment: &str, label: &str, life: &str, term: Duration) -> Result<Taken, StoreError> {
        let term = term.as_secs_f64();
        for _ in 0..3 {
            let rows =
                self.client.query(TAKE, &[&assignment, &label, &life, &term]).map_err(|e| StoreError::from_pg(&e))?;
            if let Some(row) = rows.first() {
                let won: bool = row.get(0);
                let holder: String = row.get(1);
                let previous: Option<String> = row.get(2);
                let done: bool = row.get(3);
                return Ok(if won {
                    Taken::Won { from: previous.filter(|p| p != label && holder == label) }
                } else {
                    Taken::Held { by: holder, done }
                });
            }
        }
        Err(StoreError::Unreachable("the claim was neither taken nor found".into()))
    }

    /// BX-5: renews every claim of `label` among `lives` that is not done, stamps the box, and returns the lives
    /// that are still this box's.
    pub fn renew(&mut self, label: &str, lives: &[String], term: Duration) -> Result<Vec<String>, StoreError> {
        let term = term.as_secs_f64();
        let rows = self.client.query(RENEW, &[&label, &lives, &term]).map_err(|e| StoreError::from_pg(&e))?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// The claims of `assignments`, for records that wait elsewhere and for lives a renewal did not return.
    pub fn status(&mut self, assignments: &[String]) -> Result<Vec<ClaimRow>, StoreError> {
        let rows = self.client.query(STATUS, &[&assignments]).map_err(|e| StoreError::from_pg(&e))?;
        Ok(rows
            .iter()
            .map(|row| ClaimRow {
                assignment: row.get(0),
                box_label: row.get(1),
                life: row.get(2),
                done: row.get(3),
                ended: row.get(4),
            })
            .collect())
    }

    /// BX-6: the assignment of `life` finished here; no box takes it again. True when a row was marked.
    pub fn done(&mut self, assignment: &str, label: &str, life: &str) -> Result<bool, StoreError> {
        let marked = self
            .client
            .execute(
                "UPDATE agent_box_claims SET done_at = now() WHERE assignment = $1 AND box = $2 AND life = $3 AND done_at IS NULL",
                &[&assignment, &label, &life],
            )
            .map_err(|e| StoreError::from_pg(&e))?;
        Ok(marked > 0)
    }

    /// BX-6: gives the claim up: its term ends now, so another box takes it over. True when a row was changed.
    pub fn release(&mut self, assignment: &str, label: &str, life: &str) -> Result<bool, StoreError> {
        let changed = self
            .client
            .execute(
                "UPDATE agent_box_claims SET term_end = now() - interval '1 second', renewed_at = now() WHERE assignment = $1 AND box = $2 AND life = $3 AND done_at IS NULL",
                &[&assignment, &label, &life],
            )
            .map_err(|e| StoreError::from_pg(&e))?;
        Ok(changed > 0)
    }

    /// BX-10: every box that ever renewed, with its live claims.
    pub fn boxes(&mut self) -> Result<Vec<BoxRow>, StoreError> {
        let boxes = self
            .client
            .query("SELECT box, extract(epoch from seen_at)::bigint FROM agent_box_boxes ORDER BY box", &[])
            .map_err(|e| StoreError::from_pg(&e))?;
        let live = self.client.query(LIVE, &[]).map_err(|e| StoreError::from_pg(&e))?;
        Ok(boxes
            .iter()
            .map(|row| {
                let box_label: String = row.get(0);
                let claims = live
                    .iter()
                    .filter(|c| c.get::<_, String>(0) == box_label)
                    .map(|c| LiveClaim {
                        assignment: c.get(1),
                        life: c.get(2),
                        renewed_at: c.get(3),
                        term_end: c.get(4),
                    })
                    .collect();
                BoxRow { box_label, seen_at: row.get(1), live: claims }
            })
            .collect())
    }
}

/// Migration 1 (BX-2).
const MIGRATION_1: &str = "
CREATE TABLE agent_box_claims (
    assignment text PRIMARY KEY,
    box text NOT NULL,
    life text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    renewed_at timestamptz NOT NULL DEFAULT now(),
    term_end timestamptz NOT NULL,
    done_at timestamptz,
    previous_box text
);
CREATE INDEX agent_box_claims_live ON agent_box_claims (box) WHERE done_at IS NULL;
CREATE TABLE agent_box_boxes (box text PRIMARY KEY, seen_at timestamptz NOT NULL);
";

/// BX-4: insert, or take over a claim that is not done and whose term ended (or that is this box's already); then
/// say who holds it. A term that ran out while the database itself was down proves nothing about its owner: a claim
/// last renewed before the server's start is taken over only once the server has been up for a whole term, so that
/// every live owner had its chance to renew (BX-11).
const TAKE: &str = "
WITH taken AS (
    INSERT INTO agent_box_claims AS c (assignment, box, life, term_end)
    VALUES ($1, $2, $3, now() + make_interval(secs => $4))
    ON CONFLICT (assignment) DO UPDATE
        SET box = EXCLUDED.box, life = EXCLUDED.life, claimed_at = now(), renewed_at = now(),
            term_end = EXCLUDED.term_end,
            previous_box = CASE WHEN c.box = EXCLUDED.box THEN c.previous_box ELSE c.box END
        WHERE c.done_at IS NULL AND (c.box = EXCLUDED.box OR (c.term_end < now() AND (
            c.renewed_at >= pg_postmaster_start_time()
            OR pg_postmaster_start_time() < now() - make_interval(secs => $4))))
    RETURNING box, previous_box
)
SELECT true, box, previous_box, false FROM taken
UNION ALL
SELECT false, box, NULL, done_at IS NOT NULL FROM agent_box_claims
    WHERE assignment = $1 AND NOT EXISTS (SELECT 1 FROM taken)
";

/// BX-5: renew, stamp the box, return the lives still held.
const RENEW: &str = "
WITH renewed AS (
    UPDATE agent_box_claims SET renewed_at = now(), term_end = now() + make_interval(secs => $3)
    WHERE box = $1 AND life = ANY($2) AND done_at IS NULL
    RETURNING life
), seen AS (
    INSERT INTO agent_box_boxes (box, seen_at) VALUES ($1, now())
    ON CONFLICT (box) DO UPDATE SET seen_at = now()
)
SELECT life FROM renewed
";

const STATUS: &str = "
SELECT assignment, box, life, done_at IS NOT NULL, term_end < now()
FROM agent_box_claims WHERE assignment = ANY($1)
";

const LIVE: &str = "
SELECT box, assignment, life, extract(epoch from renewed_at)::bigint, extract(epoch from term_end)::bigint
FROM agent_box_claims WHERE done_at IS NULL AND term_end > now() ORDER BY box, claimed_at
";
