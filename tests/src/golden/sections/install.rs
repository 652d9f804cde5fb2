//! `golden/install/`: every text file `cargo xtask install` writes (the two systemd user units, the environment file,
//! both wrappers, the manifest) and the installed tree with its modes, for the fixture user `agent`, rendered by
//! the same library the command uses (`crate::install`), with stand-in programs. Paths become `<HOME>`/`<ROOT>`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::golden::artefacts::Artefacts;
use crate::golden::world::World;
use agent_box_install::{self as install, Inputs, Layout, Sources};

/// The fixture inputs: the world's HOME, a prefix under its root, tmux at `/usr/bin/tmux`.
pub fn fixture_inputs(world: &World) -> Inputs {
    let prefix = world.sb.root().join("prefix");
    Inputs {
        user: "agent".into(),
        home: world.home().to_path_buf(),
        path: install::unit_path(&prefix, "/usr/local/bin:/usr/bin:/bin"),
        prefix,
        tmux: PathBuf::from("/usr/bin/tmux"),
        agents: vec!["claude".into(), "codex".into(), "shell".into()],
        default_agent: "claude".into(),
        unit: true,
        queue: agent_box_install::QueueBounds::default(),
    }
}

/// Every artefact of `golden/install/`.
pub fn render(out: &mut Artefacts) {
    let world = World::new();
    let inputs = fixture_inputs(&world);
    let stand_in = |name: &str| {
        let path = world.sb.root().join(format!("stand-in-{name}"));
        fs::write(&path, format!("#!/bin/sh\n# stand-in for {name}\n")).unwrap();
        path
    };
    let sources = Sources {
        supervisor: stand_in("agent-box-supervisor"),
        session: stand_in("agent-box-session"),
        webhook_spawn: stand_in("agent-box-webhook-spawn"),
        epilogue: stand_in("agent-box-mark-stopped"),
        man_pages: vec![("agent-box-session.1".into(), b".TH stand-in 1\n".to_vec())],
    };
    install::install(&inputs, &sources).unwrap_or_else(|e| panic!("golden install: {e}"));
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    let files = [
        ("install/agent-box.service", layout.unit_file.clone()),
        ("install/agent-box-tmux.service", layout.tmux_unit_file.clone()),
        ("install/agent-box.env", layout.env_file.clone()),
        ("install/wrapper-agent-box-session.sh", layout.bin.join("agent-box-session")),
        ("install/wrapper-agent-box-webhook-spawn.sh", layout.bin.join("agent-box-webhook-spawn")),
        ("install/installed-files", layout.manifest.clone()),
    ];
    for (rel, path) in files {
        out.add(rel, fs::read(&path).unwrap(), &world);
    }
    out.add(
        "install/tree.txt",
        tree(&[world.sb.root().join("prefix"), world.home().to_path_buf()]).into_bytes(),
        &world,
    );
}

/// `<mode> <path>` of every file and directory under `roots`, sorted.
fn tree(roots: &[PathBuf]) -> String {
    let mut lines = Vec::new();
    for root in roots {
        walk(root, &mut lines);
    }
    lines.sort();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn walk(dir: &Path, lines: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let mode = entry.metadata().map(|m| m.permissions().mode() & 0o7777).unwrap_or(0);
        let kind = if path.is_dir() { "d" } else { "f" };
        lines.push(format!("{} {kind} {mode:04o}", path.display()));
        if path.is_dir() {
            walk(&path, lines);
        }
    }
}
