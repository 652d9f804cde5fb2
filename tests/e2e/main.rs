//! The one end-to-end test binary (80-acceptance I1): a module per scenario group, plus the tidy checks.

mod audit;
mod boxes;
mod boxes_cli;
mod boxes_failures;
mod chaos;
mod envstore;
mod faults;
mod golden;
mod install;
mod intake;
mod lives;
mod notify;
mod operator;
mod properties;
mod scenarios;
mod security;
mod supervisor;
mod tidy;
mod upgrade;
mod user_units;
mod webhook;
