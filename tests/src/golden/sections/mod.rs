//! The renderer's sections, one per directory of `golden/` (70 GD-2).

pub mod documents;
pub mod help;
pub mod install;
pub mod session;
pub mod supervisor;
pub mod webhook;
