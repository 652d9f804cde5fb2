//! The registry: sessions.json, its paths, lock, atomic durable write, seed and self-heal, and the
//! capacity policy. Every program depends on it; it prints nothing and spawns no process (only the hidden
//! property check of quoting, [`fuzz::check_shell_quote`], asks `sh`). Names, quoting, time, ids and exit codes
//! live in the `base` crate.
//!
//! Choices where the specification is silent:
//! - A document equal to `{"version":1,"sessions":{}}` is always written compact, whichever edit produced it.
//! - [`edit`] reads a Missing or Empty registry as the empty document, so `add` creates the file with one write.
//! - A failed directory fsync after the rename is reported as [`atomic::Durability::DirectoryNotSynced`].

pub mod atomic;
pub mod capacity;
pub mod document;
pub mod envstore;
pub mod error;
#[doc(hidden)]
pub mod fuzz;
pub mod heal;
pub mod lock;
pub mod paths;
pub mod read;
pub mod splice;
pub mod store;

pub use atomic::{create_durable, ensure_private_dir, remove_durable, write_atomic, write_atomic_parts};
pub use capacity::{CapacityError, Mode, Usage, admit, read_limit};
pub use document::{Document, Entry, EntryMut, FieldError, Hook, LIFE_KEY, NewEntry, new_entry};
pub use error::{LockRefusal, RegistryError};
pub use heal::{HealLatches, HealOutcome, self_heal};
pub use lock::{FileLock, LockPolicy, RegistryLock, lock_wait_from_env, with_file_lock, with_lock};
pub use paths::{ConfigError, Paths};
pub use read::{Raw, ReadOutcome, holds_exactly, read, read_raw};
pub use store::{Ensured, edit, ensure, remove_temp_leftovers};
