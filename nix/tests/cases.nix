# The evaluation cases of spec 70 NX-10.3, by name. `cargo xtask nix` evaluates each one on its own (through
# ./eval.nix) and knows which must succeed, which are pinned in golden/nix/, and which must fail with the
# module's own assertion text.
{ lib, readmeFlake ? null }:

let
  harness = import ./harness.nix { inherit lib; };
  inherit (harness) evalNixos expect render stubs;

  module = ../module.nix;
  root = toString ../..;
  version = (builtins.fromTOML (builtins.readFile ../../Cargo.toml)).workspace.package.version;

  # One box user `agent` (a normal user, so /home/agent) plus `config`.
  agentBox = config: evalNixos {
    modules = [
      module
      { users.users.agent.isNormalUser = true; }
      config
    ];
  };

  # The packages a cargoBuildFlags list selects with `--package`.
  selectedPackages = flags:
    let n = builtins.length flags;
    in lib.concatLists (builtins.genList (i:
      if builtins.elemAt flags i == "--package" && i + 1 < n then [ (builtins.elemAt flags (i + 1)) ] else [ ]
    ) n);

  sameDrv = a: b: toString a == toString b;
in
{
  # (a) One user, every default.
  a-one-user-defaults = render (agentBox {
    services.agent-box = {
      enable = true;
      users.agent = { };
    };
  }).config;

  # (b) Two users: webhook on, own harnesses, a numeric limit, extra variables, a domain for the host label.
  b-two-users-webhook = render (evalNixos {
    modules = [
      module
      {
        networking = { hostName = "box"; domain = "example.org"; };
        users.users.alice.isNormalUser = true;
        users.users.bob = { isNormalUser = true; home = "/srv/bob"; };
        services.agent-box = {
          enable = true;
          users.alice = {
            agents = {
              claude = "/opt/claude/bin/claude";
              codex = "${stubs.pkgs.codex}/bin/codex";
              shell = "${stubs.pkgs.bashInteractive}/bin/bash";
            };
            sessions = {
              main.initialPrompt = "Read TODO.md and start with the first item.";
              main.workingDirectory = "/home/alice/src/app";
              review = {
                agent = "codex";
                extraArgs = [ "--model" "o3" ];
                resumePrompt = "Carry on with the review.";
              };
            };
            sessionLimit = 3;
            restartNotice = "always";
            onOutcome = "/etc/agent-box/notify-gh";
            queue = { maxRecords = 50; maxAgeSeconds = 21600; };
            webhook = {
              enable = true;
              hookSessionArgs = [ "--model" "sonnet" ];
            };
            environment = {
              AGENT_BOX_CLAUDE_SETTINGS = "/etc/agent-box/claude-settings.json";
              AGENT_BOX_ENV_EXEC = "/etc/agent-box/with-secrets";
            };
          };
          users.bob = {
            defaultAgent = "codex";
            agents.codex = "/opt/codex/bin/codex";
            sessions.ops = {
              remoteControl = true;
              remoteControlName = "bob-ops";
              skipPermissions = false;
            };
            restartNotice = "never";
          };
        };
      }
    ];
  }).config;

  # (c) Configurations the module must refuse with its own assertion message.
  c-bad-session-name = render (agentBox {
    services.agent-box = {
      enable = true;
      users.agent.sessions = {
        "has space" = { };
        settings = { };
        ${lib.concatStrings (builtins.genList (_: "x") 151)} = { };
      };
    };
  }).config;

  c-missing-user = render (agentBox {
    services.agent-box = {
      enable = true;
      users.ghost = { };
    };
  }).config;

  c-agent-name-space = render (agentBox {
    services.agent-box = {
      enable = true;
      users.agent.agents."my agent" = "/run/current-system/sw/bin/bash";
    };
  }).config;

  # spec 75: the supervisor's unit must list the tmux unit's server, so the mode is not the user's to change.
  c-tmux-server-variable = render (agentBox {
    services.agent-box = {
      enable = true;
      users.agent.environment.AGENT_BOX_TMUX_SERVER = "";
    };
  }).config;

  # (d) nix/package.nix with the stand-in builder (buildRustPackage returns its arguments).
  d-package =
    let
      args = import ../package.nix { inherit lib; inherit (stubs.pkgs) rustPlatform; };
      keeps = rel: type: args.src.filter "${root}/${rel}" type;
    in
    expect "d-package" {
      pname = args.pname == "agent-box";
      version-from-workspace-manifest = args.version == version;
      cargo-lock-exists = builtins.pathExists args.cargoLock.lockFile;
      cargo-lock-is-the-workspace-lock = toString args.cargoLock.lockFile == "${root}/Cargo.lock";
      four-binary-packages-only =
        lib.sort lib.lessThan (selectedPackages args.cargoBuildFlags) == [
          "agent-box-mark-stopped" "agent-box-session" "agent-box-supervisor" "agent-box-webhook-spawn"
        ]
        && builtins.length args.cargoBuildFlags == 8;
      tests-off = args.doCheck == false;
      main-program = args.meta.mainProgram == "agent-box-session";
      linux-only = args.meta.platforms == lib.platforms.linux;
      src-is-the-repository = toString args.src.origSrc == root;
      src-excludes-target = !(keeps "target" "directory");
      src-excludes-git = !(keeps ".git" "directory");
      src-excludes-result-links = !(keeps "result" "symlink") && !(keeps "result-man" "symlink");
      src-keeps-the-workspace = keeps "Cargo.toml" "regular" && keeps "Cargo.lock" "regular"
        && keeps "crates" "directory" && keeps "xtask" "directory" && keeps "tests" "directory"
        && keeps "crates/session/target" "directory";
    };

  # (e) nix/epilogue.nix for user `agent`.
  e-epilogue =
    let
      sessionsFile = "/home/agent/.config/agent-box/sessions.json";
      stateDir = "/home/agent/.local/state/agent-box";
      args = import ../epilogue.nix {
        inherit lib sessionsFile stateDir;
        inherit (stubs.pkgs) rustPlatform glibc;
        user = "agent";
      };
      printPaths = lib.escapeShellArg ''
        sessions-file ${sessionsFile}
        registry-lock ${sessionsFile}.lock
        state-dir ${stateDir}
        lease-dir ${stateDir}/lease
        hook-log ${stateDir}/hook-sessions.jsonl
      '';
    in
    expect "e-epilogue" {
      name = args.name == "agent-box-mark-stopped-agent";
      version-from-workspace-manifest = args.version == version;
      bake-sessions-file = args.AGENT_BOX_BAKE_SESSIONS_FILE == sessionsFile;
      bake-state-dir = args.AGENT_BOX_BAKE_STATE_DIR == stateDir;
      crt-static = lib.hasInfix "-C target-feature=+crt-static" args.RUSTFLAGS;
      static-glibc-input = builtins.any (sameDrv stubs.pkgs.glibc.static) args.buildInputs;
      profile-epilogue = args.buildType == "epilogue";
      mark-stopped-only = args.cargoBuildFlags == [ "--package" "agent-box-mark-stopped" ];
      cargo-lock-exists = builtins.pathExists args.cargoLock.lockFile;
      tests-off = args.doCheck == false;
      install-check-on = args.doInstallCheck;
      install-check-compares-print-paths = lib.hasInfix printPaths args.installCheckPhase
        && lib.hasInfix ''env -i "$epilogue" --print-paths'' args.installCheckPhase;
      install-check-rejects-an-interpreter = lib.hasInfix "--program-headers" args.installCheckPhase
        && lib.hasInfix "*INTERP*" args.installCheckPhase;
    };

  # (f) flake.nix's outputs applied to stand-in inputs: the outputs of NX-8 for both systems.
  f-flake =
    let
      inherit (harness) flake flakeOutputs systems;
      names = builtins.attrNames;
      forEach = f: builtins.all f systems;
      tests = flakeOutputs.checks.x86_64-linux.tests.stubArgs null;
    in
    expect "f-flake" {
      one-input-nixpkgs = names flake.inputs == [ "nixpkgs" ];
      stable-release-branch =
        builtins.match "github:NixOS/nixpkgs/nixos-[0-9]+[.][0-9]+" flake.inputs.nixpkgs.url != null;
      package-systems = names flakeOutputs.packages == lib.sort lib.lessThan systems;
      packages = forEach (s: names flakeOutputs.packages.${s} == [ "default" "epilogue-example" ]);
      default-package = forEach (s: flakeOutputs.packages.${s}.default.name == "agent-box-${version}");
      epilogue-example = forEach (s: flakeOutputs.packages.${s}.epilogue-example.name == "agent-box-mark-stopped-agent");
      nixos-module = names flakeOutputs.nixosModules == [ "default" ]
        && flakeOutputs.nixosModules.default == module;
      check-systems = names flakeOutputs.checks == lib.sort lib.lessThan systems;
      checks = forEach (s: names flakeOutputs.checks.${s} == [ "epilogue" "module-eval" "package" "tests" ]);
      tests-check-runs-the-workspace-tests = tests.doCheck
        && builtins.any (sameDrv stubs.pkgs.tmux) tests.nativeCheckInputs
        && tests.cargoTestFlags == [ "--workspace" ];
      module-eval-writes-the-unit = forEach (s:
        let check = flakeOutputs.checks.${s}.module-eval;
        in check.name == "agent-box-agent.service" && lib.hasInfix "agent-box-supervisor" check.text);
    };

  # The README's "Install on NixOS" example (extracted verbatim by xtask into `readmeFlake`), its inputs
  # replaced by stand-ins: its one machine, rendered like (a).
  readme-example =
    let
      example = import readmeFlake;
      inputs = builtins.mapAttrs (name: _: if name == "nixpkgs" then harness.nixpkgs else harness.flakeOutputs) example.inputs;
      outputs = example.outputs (inputs // { self = outputs; });
      machines = builtins.attrValues (outputs.nixosConfigurations or { });
    in
    if readmeFlake == null then throw "readme-example: no README example given (xtask passes --argstr readmeFlake FILE)"
    else if builtins.length machines != 1 then throw "readme-example: the README example must define exactly one nixosConfigurations entry"
    else render (builtins.head machines).config;
}
