//! The epilogue bakes the bench measures, through the harness's bake (the same build, cache and verification as
//! `cargo xtask bake-epilogue` and the tests), with a line saying which bake it is and whether it was cached.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agent_box_tests::bake::{self, BakeError, Profile};

use crate::fail::Failure;

/// `bake::bake` for the bench root, announced on stdout; a failure names what failed.
pub fn bake_echoed(sessions: &Path, state: &Path, profile: Profile) -> Result<PathBuf, Failure> {
    println!("bench: bake (profile {}) for {} and {}", profile.name(), sessions.display(), state.display());
    let started = SystemTime::now();
    let baked = bake::bake(sessions, state, profile).map_err(|e| match e {
        BakeError::BadPath(m) => Failure(m),
        BakeError::Build(m) => Failure(format!("the bake did not build: {m}")),
        BakeError::Verify(m) => Failure(format!("the baked binary failed verification: {m}")),
    })?;
    // The harness skips cargo on a cache hit; say so, since a reader of the log sees no build then.
    let fresh = fs::metadata(&baked).and_then(|m| m.modified()).is_ok_and(|t| t >= started);
    if !fresh {
        println!("(cached: {})", baked.display());
    }
    Ok(baked)
}

/// `static` when the ELF has no program interpreter, else `dynamic`.
pub fn linkage(binary: &Path) -> io::Result<&'static str> {
    Ok(if bake::has_interpreter(binary)? { "dynamic" } else { "static" })
}
