# The pane epilogue of one box user (spec 70 NX-3, 40-mark-stopped MS-3 and MS-8): agent-box-mark-stopped with
# that user's registry path and state directory fixed at build time, linked statically. The paths are a
# compile-time input, so each user gets a derivation of their own.
{ lib, rustPlatform, glibc, user, sessionsFile, stateDir }:

let
  source = import ./source.nix { inherit lib; };

  # What `--print-paths` must print for these values (MS-3.5); the install check compares it byte for byte.
  expectedPaths = lib.concatStrings [
    "sessions-file ${sessionsFile}\n"
    "registry-lock ${sessionsFile}.lock\n"
    "state-dir ${stateDir}\n"
    "lease-dir ${stateDir}/lease\n"
    "hook-log ${stateDir}/hook-sessions.jsonl\n"
  ];
in
rustPlatform.buildRustPackage {
  # Named after the user, not versioned like a library: one derivation per box user (NX-3).
  name = "agent-box-mark-stopped-${user}";
  inherit (source) version src;

  cargoLock.lockFile = ../Cargo.lock;

  # The profile of MS-8.1 (size-optimised, panic = abort); nixpkgs' builder turns buildType into
  # `--profile epilogue` and installs from target/<triple>/epilogue.
  buildType = "epilogue";
  cargoBuildFlags = [ "--package" "agent-box-mark-stopped" ];

  # Read by crates/mark-stopped/build.rs, which refuses a relative or malformed value (MS-3.2).
  AGENT_BOX_BAKE_SESSIONS_FILE = sessionsFile;
  AGENT_BOX_BAKE_STATE_DIR = stateDir;

  # Static glibc (MS-8.2). nixpkgs' Rust builder always passes an explicit --target, so RUSTFLAGS reach only
  # the target binary and build scripts and proc-macros stay dynamic, as they must.
  RUSTFLAGS = "-C target-feature=+crt-static";
  buildInputs = [ glibc.static ];

  # The workspace tests run in the flake's `tests` check.
  doCheck = false;

  # The bake verification of XT-5.5, done inside the build: the baked paths, read with an empty environment,
  # and no program interpreter (a dynamic epilogue would break when its libraries are garbage-collected).
  doInstallCheck = true;
  installCheckPhase = ''
    runHook preInstallCheck
    epilogue="$out/bin/agent-box-mark-stopped"
    expected=${lib.escapeShellArg expectedPaths}
    actual="$(env -i "$epilogue" --print-paths; echo x)"
    actual="''${actual%x}"
    if [ "$actual" != "$expected" ]; then
      echo "agent-box-mark-stopped-${user}: --print-paths printed:" >&2
      printf '%s' "$actual" >&2
      echo "expected:" >&2
      printf '%s' "$expected" >&2
      exit 1
    fi
    headers="$(''${READELF:-readelf} --program-headers --wide "$epilogue")"
    case "$headers" in
      *INTERP*)
        echo "agent-box-mark-stopped-${user}: not static (the ELF requests a program interpreter)" >&2
        exit 1
        ;;
    esac
    runHook postInstallCheck
  '';

  meta = {
    description = "The agent-box pane epilogue for user ${user}, with its paths baked in";
    license = lib.licenses.mit;
    mainProgram = "agent-box-mark-stopped";
    platforms = lib.platforms.linux;
  };
}
