//! Running the property check of a fuzz target on stable Rust (90-quality ): over the committed corpus
//! `fuzz/corpus/<target>/` and over 10 000 inputs of a seeded generator (the seed is printed;
//! `AGENT_BOX_TEST_SEED` replays it, as for the other seeded tests). A failing input is reported with its bytes,
//! so it can be committed to the corpus and named in a regression test.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::workspace_root;

/// How many generated inputs each target checks in `cargo test`.
pub const SEEDED_INPUTS: usize = 10_000;

/// The seed of this run: `AGENT_BOX_TEST_SEED` when set, else a random one.
pub fn seed() -> u64 {
    std::env::var("AGENT_BOX_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random)
}

/// `fuzz/corpus/<target>/` of the workspace.
pub fn corpus_dir(target: &str) -> PathBuf {
    workspace_root().join("fuzz/corpus").join(target)
}

/// The committed corpus of `target`, sorted by file name; a missing or empty corpus fails the test.
pub fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no corpus for {target} at {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the corpus of {target} at {} is empty", dir.display());
    files.into_iter().map(|p| (p.clone(), fs::read(&p).unwrap())).collect()
}

/// Checks `target`'s property over its corpus, then over [`SEEDED_INPUTS`] inputs from `generate`.
pub fn check_target(target: &str, check: fn(&[u8]), mut generate: impl FnMut(&mut StdRng) -> Vec<u8>) {
    write_seed_corpus_when_asked(target, &mut generate);
    for (path, bytes) in corpus(target) {
        run_one(target, check, &bytes, || format!("corpus file {}", path.display()));
    }
    let seed = seed();
    eprintln!("{target}: {SEEDED_INPUTS} inputs of seed {seed} (AGENT_BOX_TEST_SEED={seed} replays)");
    let mut rng = StdRng::seed_from_u64(seed);
    for i in 0..SEEDED_INPUTS {
        let input = generate(&mut rng);
        run_one(target, check, &input, || format!("generated input {i} of seed {seed}"));
    }
}

fn run_one(target: &str, check: fn(&[u8]), input: &[u8], describe: impl FnOnce() -> String) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| check(input))) {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        panic!(
            "{target}: the property failed on {} ({} bytes: {:?}): {message}",
            describe(),
            input.len(),
            escaped(input)
        );
    }
}

/// The input as Rust byte-string text, cut to 2000 characters.
fn escaped(input: &[u8]) -> String {
    input.escape_ascii().to_string().chars().take(2000).collect()
}

/// With `AGENT_BOX_FUZZ_WRITE_CORPUS=1`, an empty corpus directory is seeded with 24 inputs of seed 0 (how the
/// committed corpora were made; hand-picked edge cases sit beside them).
fn write_seed_corpus_when_asked(target: &str, generate: &mut impl FnMut(&mut StdRng) -> Vec<u8>) {
    if std::env::var_os("AGENT_BOX_FUZZ_WRITE_CORPUS").is_none() {
        return;
    }
    let dir = corpus_dir(target);
    fs::create_dir_all(&dir).unwrap();
    let mut rng = StdRng::seed_from_u64(0);
    for i in 0..24 {
        let path: &Path = &dir.join(format!("seed-{i:02}"));
        let input = generate(&mut rng);
        if !path.exists() {
            fs::write(path, input).unwrap();
        }
    }
}
