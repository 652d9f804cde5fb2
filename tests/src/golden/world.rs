//! The fixture worlds of 70 GD-3: a harness sandbox set up as user `agent` on host `box.test` with harnesses
//! `claude codex shell tool` (default `claude`), limit 4 and 8 GiB of memory, plus a HOME tree copied from
//! `tests/fixtures/golden/<world>/home/`. Fixture files may say `@HOME@`, which becomes the sandbox HOME.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::normalize::Tokens;
use crate::sandbox::Sandbox;
use crate::workspace_root;

/// The placeholder fixture files use for the sandbox HOME.
pub const HOME_MARK: &str = "@HOME@";

/// One fixture world: a sandbox with the fixture environment.
#[derive(Debug)]
pub struct World {
    pub sb: Sandbox,
}

/// `tests/fixtures/golden/`.
pub fn fixtures_dir() -> PathBuf {
    workspace_root().join("tests/fixtures/golden")
}

/// The bytes of fixture `rel` (relative to [`fixtures_dir`]); panics with the path when it is missing.
pub fn fixture(rel: &str) -> Vec<u8> {
    let path = fixtures_dir().join(rel);
    fs::read(&path).unwrap_or_else(|e| panic!("golden fixture {} cannot be read: {e}", path.display()))
}

impl World {
    /// A world in a fresh temporary root (the epilogue is the unbaked build).
    pub fn new() -> Self {
        Self::around(Sandbox::new())
    }

    /// A world in a slot, with the real epilogue baked for its HOME (for documents the epilogue writes).
    pub fn in_slot() -> Self {
        Self::around(Sandbox::in_slot())
    }

    fn around(mut sb: Sandbox) -> Self {
        sb.set_env("AGENT_BOX_DEFAULT_AGENT", "claude");
        sb.set_env("AGENT_BOX_HOST_LABEL", "box.test");
        sb.set_limit("4\n");
        Self { sb }
    }

    pub fn home(&self) -> &Path {
        self.sb.home()
    }

    /// The tokens of rule 1 and 2 for this world's sandbox (GD-5).
    pub fn tokens(&self) -> Tokens {
        let path = |p: &Path| p.to_string_lossy().into_owned();
        Tokens {
            paths: vec![
                (path(self.sb.home()), "<HOME>"),
                (path(self.sb.root()), "<ROOT>"),
                (path(self.sb.tmux_dir()), "<TMUX_DIR>"),
                (path(&self.sb.epilogue()), "<BAKED>"),
            ],
            socket: Some(self.sb.socket().to_owned()),
            uid: Some(nix::unistd::getuid().as_raw()),
            ..Tokens::default()
        }
    }

    /// Copies `tests/fixtures/golden/<world>/home/` into HOME (dirs 0700, files 0600, `@HOME@` substituted).
    pub fn install_home(&self, world: &str) {
        let from = fixtures_dir().join(world).join("home");
        copy_tree(&from, self.home(), &self.home().to_string_lossy());
    }

    /// Writes `text` (with `@HOME@` substituted) to `rel` under HOME, creating its directories 0700.
    pub fn write_home_file(&self, rel: &str, text: &[u8]) {
        let dest = self.home().join(rel);
        make_dirs(self.home(), dest.parent().unwrap_or(self.home()));
        let bytes = substitute(text, &self.home().to_string_lossy());
        fs::write(&dest, bytes).unwrap();
        fs::set_permissions(&dest, fs::Permissions::from_mode(0o600)).unwrap();
    }

    /// The keys of the registry (empty when it is missing or does not parse).
    pub fn registry_keys(&self) -> BTreeSet<String> {
        fs::read(self.sb.registry())
            .ok()
            .and_then(|bytes| registry::Document::parse(&bytes).ok())
            .map(|doc| doc.names().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

/// `text` with every `@HOME@` replaced by `home`.
pub fn substitute(text: &[u8], home: &str) -> Vec<u8> {
    super::normalize::replace_all(text, HOME_MARK.as_bytes(), home.as_bytes())
}

fn copy_tree(from: &Path, to: &Path, home: &str) {
    make_dirs(to, to);
    let mut entries: Vec<_> = fs::read_dir(from)
        .unwrap_or_else(|e| panic!("golden fixture tree {} cannot be read: {e}", from.display()))
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest, home);
        } else {
            fs::write(&dest, substitute(&fs::read(entry.path()).unwrap(), home)).unwrap();
            fs::set_permissions(&dest, fs::Permissions::from_mode(0o600)).unwrap();
        }
    }
}

/// Creates `dir` and its missing parents below `top` with mode 0700.
fn make_dirs(top: &Path, dir: &Path) {
    if dir.is_dir() {
        return;
    }
    if let Some(parent) = dir.parent()
        && parent != top
    {
        make_dirs(top, parent);
    }
    fs::create_dir_all(dir).unwrap();
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).unwrap();
}
