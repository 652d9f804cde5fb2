# Stand-ins for the parts of nixpkgs and NixOS that the project's Nix files use (spec 70 NX-10.2). The build
# machines cannot fetch nixpkgs, so the evaluation checks run the real library (lib.evalModules, lib.types)
# against these: a `pkgs` whose builders return deterministic fake store paths, and option declarations for
# the NixOS options the module writes. The module's own options are never replaced.
{ lib }:

let
  inherit (lib) mkDefault mkIf mkOption types;

  # A fake store path that changes with what it is built from, like a real one, and is the same on every
  # machine, so that rendered units can be pinned byte for byte. Never a path of this checkout.
  storePath = name: content:
    "/nix/store/${builtins.substring 0 32 (builtins.hashString "sha256" "${name}\n${content}")}-${name}";

  # A derivation as far as the module system and string interpolation can tell: it passes types.package and
  # lib.isDerivation, and "${drv}" is its path. Only plain values are stored on it, because
  # `nix-instantiate --strict` forces everything reachable from a result.
  fakeDrv = { name, content ? "", extra ? { } }:
    extra // { type = "derivation"; inherit name; outPath = storePath name content; };

  package = pname: version:
    fakeDrv { name = "${pname}-${version}"; extra = { inherit pname version; }; };

  # The plain top-level values of a builder's arguments (and of its `env`), which the fake path hashes: the
  # epilogue baked for another home gets another path.
  plainValues = args:
    builtins.toJSON (lib.filterAttrs (_: v: builtins.isString v || builtins.isInt v || builtins.isBool v) args);

  # What a stand-in builder returned, made to look built. The raw arguments stay reachable only through the
  # function `stubArgs`: a function is not forced by --strict, while a raw `src` would be copied to the store.
  asDrv = attrs:
    fakeDrv {
      name = attrs.name or "${attrs.pname}-${attrs.version}";
      content = plainValues attrs + plainValues (attrs.env or { });
      extra = lib.optionalAttrs (attrs ? pname) { inherit (attrs) pname; }
        // lib.optionalAttrs (attrs ? version) { inherit (attrs) version; }
        // {
          meta = lib.filterAttrs (_: builtins.isString) (attrs.meta or { });
          stubArgs = _: attrs;
          overrideAttrs = f:
            let new = f attrs;
            in asDrv (attrs // (if builtins.isFunction new then new attrs else new));
        };
    };

  writeTextFile = { name, text, executable ? false, destination ? "" }:
    fakeDrv { inherit name; content = text; extra = { inherit text executable destination; }; };

  runtimeShell = "${bash}/bin/bash";
  bash = package "bash" "5.2p37";

  pkgs = {
    inherit lib runtimeShell bash writeTextFile;
    system = "x86_64-linux";

    tmux = package "tmux" "3.5a";
    coreutils = package "coreutils" "9.5";
    bashInteractive = package "bash-interactive" "5.2p37";
    glibc = package "glibc" "2.40" // { static = package "glibc-static" "2.40"; };
    codex = package "codex" "0.50.0";

    # Real text layout of nixpkgs' trivial builders, so the pinned wrapper text is what a box gets.
    writeText = name: text: writeTextFile { inherit name text; };
    writeShellScript = name: text:
      writeTextFile { inherit name; executable = true; text = "#!${runtimeShell}\n${text}\n"; };
    writeShellScriptBin = name: text:
      writeTextFile {
        inherit name;
        executable = true;
        destination = "/bin/${name}";
        text = "#!${runtimeShell}\n${text}\n";
      };
    runCommand = name: env: buildCommand:
      fakeDrv { inherit name; content = buildCommand + plainValues env; };
    symlinkJoin = { name, paths, ... }:
      fakeDrv { inherit name; content = lib.concatMapStrings toString paths; };

    # Calls a package function with what it asks for, like nixpkgs' callPackage, and makes the result look built.
    callPackage = fn: overrides:
      let
        f = if builtins.isFunction fn then fn else import fn;
        args = builtins.intersectAttrs (builtins.functionArgs f) pkgs // overrides;
      in
      asDrv (f args);

    rustPlatform.buildRustPackage = args: args;
  };

  # A systemd option value as NixOS accepts it (its `unitOption`): an atom or a list of atoms.
  unitAtom = types.oneOf [ types.bool types.int types.str types.package ];
  unitOption = types.either unitAtom (types.listOf unitAtom);

  # The shape of NixOS' systemd.services.<name> as far as the module uses it; an option the module sets that
  # is missing here fails the evaluation, just as a misspelt one would on NixOS.
  service = {
    options = {
      description = mkOption { type = types.str; default = ""; };
      wantedBy = mkOption { type = types.listOf types.str; default = [ ]; };
      after = mkOption { type = types.listOf types.str; default = [ ]; };
      wants = mkOption { type = types.listOf types.str; default = [ ]; };
      path = mkOption { type = types.listOf (types.either types.package types.str); default = [ ]; };
      environment = mkOption {
        type = types.attrsOf (types.nullOr (types.oneOf [ types.str types.path types.package ]));
        default = { };
      };
      serviceConfig = mkOption { type = types.attrsOf unitOption; default = { }; };
      restartIfChanged = mkOption { type = types.bool; default = true; };
      stopIfChanged = mkOption { type = types.bool; default = true; };
      # NixOS declares it without a default and writes it into [Unit] only when set.
      startLimitIntervalSec = mkOption { type = types.nullOr types.int; default = null; };
    };
  };

  # NixOS' users.users.<name>: the parts the module reads or writes, with NixOS' defaults (a normal user's
  # home is /home/<name>, anyone else's /var/empty); the rest of a user's settings is accepted as is.
  user = { name, config, ... }: {
    freeformType = types.attrsOf types.anything;
    options = {
      name = mkOption { type = types.str; default = name; };
      home = mkOption { type = types.str; default = "/var/empty"; };
      isNormalUser = mkOption { type = types.bool; default = false; };
      isSystemUser = mkOption { type = types.bool; default = false; };
      packages = mkOption { type = types.listOf types.package; default = [ ]; };
    };
    config.home = mkIf config.isNormalUser (mkDefault "/home/${config.name}");
  };

  # The NixOS options the module and the example configurations touch.
  nixos = { config, ... }: {
    options = {
      assertions = mkOption { type = types.listOf types.unspecified; default = [ ]; };
      warnings = mkOption { type = types.listOf types.str; default = [ ]; };
      networking.hostName = mkOption { type = types.str; default = "nixos"; };
      networking.domain = mkOption { type = types.nullOr types.str; default = null; };
      networking.fqdnOrHostName = mkOption {
        type = types.str;
        readOnly = true;
        default = with config.networking; if domain == null then hostName else "${hostName}.${domain}";
      };
      users.users = mkOption { type = types.attrsOf (types.submodule user); default = { }; };
      environment.etc = mkOption {
        type = types.attrsOf (types.submodule {
          options.text = mkOption { type = types.nullOr types.lines; default = null; };
          options.source = mkOption { type = types.nullOr types.path; default = null; };
          options.mode = mkOption { type = types.str; default = "symlink"; };
        });
        default = { };
      };
      systemd.services = mkOption { type = types.attrsOf (types.submodule service); default = { }; };
      # NixOS renders each service into an INI unit file; JSON stands in for that text here.
      systemd.units = mkOption {
        type = types.attrsOf (types.submodule { options.text = mkOption { type = types.str; }; });
        default = { };
      };
      boot.isContainer = mkOption { type = types.bool; default = false; };
      system.stateVersion = mkOption { type = types.str; default = lib.trivial.release; };
    };
    config.systemd.units = lib.mapAttrs' (name: unit:
      lib.nameValuePair "${name}.service" { text = builtins.toJSON unit; }
    ) config.systemd.services;
  };
in
{
  inherit pkgs nixos storePath;
}
