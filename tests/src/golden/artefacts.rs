//! The collector of one render: raw artefacts with the tokens of the world that produced them, normalised
//! together at the end, once every minted name is known (70 GD-5 rule 3).

use std::collections::BTreeSet;

use super::capture::{Captured, Invocation};
use super::normalize::{Tokens, normalize};
use super::tree::Tree;
use super::world::World;

#[derive(Debug)]
struct Pending {
    rel: String,
    bytes: Vec<u8>,
    tokens: Tokens,
}

/// Everything rendered so far, plus the paths that must not survive normalisation (GD-6.4).
#[derive(Debug, Default)]
pub struct Artefacts {
    pending: Vec<Pending>,
    minted: BTreeSet<String>,
    sandbox_paths: BTreeSet<String>,
}

impl Artefacts {
    /// Adds artefact `rel` (relative to `golden/`) with `world`'s tokens.
    pub fn add(&mut self, rel: &str, bytes: Vec<u8>, world: &World) {
        assert!(!self.pending.iter().any(|p| p.rel == rel), "golden: artefact {rel} rendered twice");
        self.sandbox_paths.insert(world.sb.root().to_string_lossy().into_owned());
        self.pending.push(Pending { rel: rel.to_owned(), bytes, tokens: world.tokens() });
    }

    /// Runs `inv` in `world` and adds its capture as `rel`.
    pub fn capture(&mut self, rel: &str, world: &World, inv: &Invocation) -> Captured {
        let (text, captured) = inv.capture(world);
        self.add(rel, text, world);
        captured
    }

    /// Adds the file at `path` under HOME of `world` (a document), panicking when it is missing.
    pub fn document(&mut self, rel: &str, world: &World, path: &std::path::Path) {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("golden: {} for {rel}: {e}", path.display()));
        self.add(rel, bytes, world);
    }

    /// Records names minted during the run (GD-5 rule 3).
    pub fn minted<I: IntoIterator<Item = String>>(&mut self, names: I) {
        self.minted.extend(names);
    }

    /// The sandbox roots used, for the leak check.
    pub fn sandbox_paths(&self) -> Vec<String> {
        self.sandbox_paths.iter().cloned().collect()
    }

    /// Normalises every artefact (GD-5) into the rendered tree.
    pub fn finish(self, start: i64) -> Tree {
        let minted: Vec<String> = self.minted.into_iter().collect();
        self.pending
            .into_iter()
            .map(|p| {
                let tokens = Tokens { minted: minted.clone(), start, ..p.tokens };
                (p.rel, normalize(&p.bytes, &tokens))
            })
            .collect()
    }
}
