# How the evaluation cases evaluate a NixOS configuration with the stand-ins of ./stubs.nix, and what they
# report about it (spec 70 NX-10).
{ lib }:

let
  stubs = import ./stubs.nix { inherit lib; };
  systems = [ "x86_64-linux" "aarch64-linux" ];
in
rec {
  inherit stubs systems;

  # lib.evalModules over the stand-ins and `modules`. NixOS raises failed assertions only while it builds the
  # system, which never happens here, so this raises them at once, with the same text.
  evalNixos = { modules, specialArgs ? { } }:
    let
      evaluated = lib.evalModules {
        inherit specialArgs;
        modules = [ stubs.nixos { _module.args.pkgs = stubs.pkgs; } ] ++ modules;
      };
      failed = map (a: a.message) (builtins.filter (a: !a.assertion) evaluated.config.assertions);
    in
    if failed == [ ] then evaluated
    else throw "\nFailed assertions:\n${lib.concatMapStrings (message: "- ${message}\n") failed}";

  # The nixpkgs flake input: the real lib, with nixosSystem evaluating through evalNixos.
  nixpkgs = {
    lib = lib // {
      nixosSystem = { modules, specialArgs ? { }, ... }: evalNixos { inherit modules specialArgs; };
    };
    legacyPackages = lib.genAttrs systems (system: stubs.pkgs // { inherit system; });
    outPath = stubs.storePath "nixpkgs" "";
  };

  # This repository's flake, its outputs evaluated against the stand-in nixpkgs.
  flake = import ../../flake.nix;
  flakeOutputs = flake.outputs { self = flakeOutputs; inherit nixpkgs; };

  # What a configuration's services.agent-box gives each user, as pinned in golden/nix/: both units as the
  # module wrote them (every directive and variable), the seed, the limit file, the stable epilogue link, the
  # wrappers and the harness list.
  render = config: {
    users = builtins.mapAttrs (name: u:
      let
        unit = config.systemd.services."agent-box-${name}";
        seed = unit.environment.AGENT_BOX_SESSIONS_SEED;
        limitFile = "agent-box/users/${name}/session-limit";
        epilogueLink = "agent-box/users/${name}/mark-stopped";
        file = drv: { path = toString drv; lines = lib.splitString "\n" drv.text; };
      in
      {
        inherit unit;
        tmuxUnit = config.systemd.services."agent-box-tmux-${name}";
        seed = { path = toString seed; inherit (seed) text; };
        limitFile = { path = "/etc/${limitFile}"; inherit (config.environment.etc.${limitFile}) text; };
        epilogue = { path = "/etc/${epilogueLink}"; source = toString config.environment.etc.${epilogueLink}.source; };
        wrappers = builtins.listToAttrs (map (drv: lib.nameValuePair drv.name (file drv)) config.users.users.${name}.packages);
        agents = unit.environment.AGENT_BOX_AGENTS;
        inherit (u.webhook) spawnCommand;
      }) config.services.agent-box.users;
    inherit (config) warnings;
  };

  # A case made of named checks: the names when all hold, else an error naming those that do not.
  expect = case: checks:
    let failed = builtins.attrNames (lib.filterAttrs (_: ok: !ok) checks);
    in
    if failed == [ ] then { passed = builtins.attrNames checks; }
    else throw "${case}: failed checks: ${lib.concatStringsSep ", " failed}";
}
