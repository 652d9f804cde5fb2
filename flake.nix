{
  description = "agent-box: keep a Unix user's AI coding-agent sessions alive in tmux";

  # One input, a stable NixOS release branch (spec 70 NX-8). flake.lock is created by the release build on a
  # machine with network access (NX-1).
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-26.05";

  outputs = { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAllSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # The configuration of checks.module-eval: one box user with every default.
      exampleMachine = system: nixpkgs.lib.nixosSystem {
        inherit system;
        modules = [
          self.nixosModules.default
          {
            boot.isContainer = true;
            system.stateVersion = "26.05";
            users.users.agent.isNormalUser = true;
            services.agent-box = {
              enable = true;
              users.agent = { };
            };
          }
        ];
      };
    in
    {
      packages = forAllSystems (pkgs: {
        default = pkgs.callPackage ./nix/package.nix { };
        # The epilogue baked for user `agent` with the default paths, as the module builds it per user.
        epilogue-example = pkgs.callPackage ./nix/epilogue.nix {
          user = "agent";
          sessionsFile = "/home/agent/.config/agent-box/sessions.json";
          stateDir = "/home/agent/.local/state/agent-box";
        };
      });

      nixosModules.default = ./nix/module.nix;

      checks = forAllSystems (pkgs:
        let inherit (pkgs) system;
        in {
          package = self.packages.${system}.default;
          # Carries its install check: the baked paths and no program interpreter.
          epilogue = self.packages.${system}.epilogue-example;
          # The workspace tests (they need tmux; the package itself skips them).
          tests = self.packages.${system}.default.overrideAttrs (old: {
            doCheck = true;
            nativeCheckInputs = (old.nativeCheckInputs or [ ]) ++ [ pkgs.tmux ];
            cargoTestFlags = [ "--workspace" ];
          });
          # The module evaluated in a one-user system (assertions raised, as the system build would) and the
          # unit text written out.
          module-eval =
            let
              machine = exampleMachine system;
              failed = map (a: a.message) (builtins.filter (a: !a.assertion) machine.config.assertions);
            in
            if failed != [ ] then
              throw "module-eval: failed assertions:\n${lib.concatMapStrings (m: "- ${m}\n") failed}"
            else
              pkgs.writeText "agent-box-agent.service" machine.config.systemd.units."agent-box-agent.service".text;
        });
    };
}
