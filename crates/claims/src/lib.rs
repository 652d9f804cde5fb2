//! Several boxes, one dispatch (issue 26, docs/boxes.md): the claims every box takes in a shared PostgreSQL
//! database before it admits an assignment, so that each runs on exactly one box and the work of a box that died
//! moves to a live one. The client is the `postgres` crate (a synchronous client over tokio-postgres: the protocol,
//! SCRAM authentication and the libpq connection strings are its own, and writing them again would be the larger
//! risk); only the supervisor and `agent-box-session` link this crate, never the epilogue or webhook-spawn.

pub mod client;
pub mod config;
pub mod ledger;
pub mod store;

pub use client::Claims;
pub use config::{ClaimsConfig, ConfigError};
pub use ledger::{Held, Ledger};
pub use store::{BoxRow, ClaimRow, LiveClaim, Store, StoreError, Taken};
