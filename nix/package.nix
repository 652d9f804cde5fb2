# The agent-box programs (spec 70 NX-2): agent-box-supervisor, agent-box-session, agent-box-webhook-spawn and
# the unbaked agent-box-mark-stopped, which only says that it is unbaked. Every box user gets a baked epilogue
# of their own from ./epilogue.nix; the module never uses the one installed here.
{ lib, rustPlatform }:

let
  source = import ./source.nix { inherit lib; };
in
rustPlatform.buildRustPackage {
  pname = "agent-box";
  inherit (source) version src;

  cargoLock.lockFile = ../Cargo.lock;

  # Only the four programs: xtask and the test harness are workspace members that are never installed.
  cargoBuildFlags = [
    "--package" "agent-box-supervisor"
    "--package" "agent-box-session"
    "--package" "agent-box-webhook-spawn"
    "--package" "agent-box-mark-stopped"
  ];

  # The workspace tests need tmux and a baked epilogue; the flake's `tests` check turns them on.
  doCheck = false;

  meta = {
    description = "Keep a Unix user's AI coding-agent sessions alive in tmux";
    license = lib.licenses.mit;
    mainProgram = "agent-box-session";
    platforms = lib.platforms.linux;
  };
}
