//! The epilogue bake for tests: the deployment library's bake (`agent_box_install::bake`), for the checkout under
//! test and its target directory ([`crate::workspace`]).

use std::path::{Path, PathBuf};

pub use agent_box_install::bake::{BakeError, Profile, expected_paths, has_interpreter};

/// A baked epilogue for registry `sessions` and state directory `state`, from the cache when possible.
pub fn bake(sessions: &Path, state: &Path, profile: Profile) -> Result<PathBuf, BakeError> {
    agent_box_install::bake::bake(crate::workspace(), sessions, state, profile)
}
