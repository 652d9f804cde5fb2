//! `golden/help/` and `golden/mark-stopped/`: the `--help` of all four binaries and of each session verb, and
//! the epilogue as a box installs it (baked for `/home/agent/...`) and as cargo builds it (unbaked).

use std::path::Path;

use crate::bake::{Profile, bake};
use crate::golden::artefacts::Artefacts;
use crate::golden::capture::Invocation;
use crate::golden::world::World;

const BINARIES: [&str; 4] =
    ["agent-box-supervisor", "agent-box-session", "agent-box-webhook-spawn", "agent-box-mark-stopped"];
const VERBS: [&str; 13] = [
    "ls",
    "peers",
    "capacity",
    "leases",
    "queue",
    "log",
    "add",
    "rm",
    "stop",
    "restart",
    "attach",
    "completions",
    "env",
];

/// Every artefact of `golden/help/` and `golden/mark-stopped/`.
pub fn render(out: &mut Artefacts) {
    let world = World::new();
    for binary in BINARIES {
        out.capture(&format!("help/{binary}.txt"), &world, &Invocation::product(binary).arg("--help"));
    }
    for verb in VERBS {
        let inv = Invocation::product("agent-box-session").args([verb, "--help"]);
        out.capture(&format!("help/agent-box-session-{verb}.txt"), &world, &inv);
    }
    for verb in ["ls", "set", "rm"] {
        let inv = Invocation::product("agent-box-session").args(["env", verb, "--help"]);
        out.capture(&format!("help/agent-box-session-env-{verb}.txt"), &world, &inv);
    }
    let inv = Invocation::product("agent-box-session").args(["queue", "rm", "--help"]);
    out.capture("help/agent-box-session-queue-rm.txt", &world, &inv);
    for binary in BINARIES {
        out.capture(&format!("help/{binary}-version.txt"), &world, &Invocation::product(binary).arg("--version"));
    }
    epilogue(&world, out);
}

fn epilogue(world: &World, out: &mut Artefacts) {
    let sessions = Path::new("/home/agent/.config/agent-box/sessions.json");
    let state = Path::new("/home/agent/.local/state/agent-box");
    let baked = bake(sessions, state, Profile::Dev).unwrap_or_else(|e| panic!("cannot bake for /home/agent: {e}"));
    let shown = "agent-box-mark-stopped";
    let print_paths = Invocation::at(shown, baked.clone()).arg("--print-paths");
    out.capture("mark-stopped/print-paths-baked.txt", world, &print_paths);
    out.capture("mark-stopped/help.txt", world, &Invocation::at(shown, baked.clone()).arg("--help"));
    out.capture("mark-stopped/version-baked.txt", world, &Invocation::at(shown, baked).arg("--version"));
    let unbaked = || Invocation::product(shown);
    out.capture("mark-stopped/print-paths-unbaked.txt", world, &unbaked().arg("--print-paths"));
    out.capture("mark-stopped/unbaked-run.txt", world, &unbaked().args(["main", "0"]));
}
