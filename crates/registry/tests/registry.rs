//! Process-level tests of the registry crate (10-registry §15): the lock against other processes, writers killed
//! at random points, and self-heal, through the crate's examples `rmw` and `regctl`. One test binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "registry/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "registry/heal.rs"]
mod heal;
#[path = "registry/lock.rs"]
mod lock;
#[path = "registry/writers.rs"]
mod writers;
