# What ./package.nix and ./epilogue.nix build from: the version and the filtered source of the workspace.
{ lib }:

let
  root = toString ../.;

  # The first component of `path` below the repository root ("" for the root itself).
  topName = path:
    let text = toString path;
    in if text == root then "" else builtins.head (lib.splitString "/" (lib.removePrefix (root + "/") text));
in
{
  # The one version source is [workspace.package] of the root manifest (NX-2); a copy here would drift.
  version = (builtins.fromTOML (builtins.readFile ../Cargo.toml)).workspace.package.version;

  # The repository without build output (target/, the result* links of nix-build) and git's own files: they
  # are large and machine-specific and would change the source hash on every local build. Everything else
  # stays, the manifests of xtask/ and tests/ included, because cargo refuses a workspace with a missing member.
  src = lib.cleanSourceWith {
    name = "agent-box-source";
    src = ../.;
    filter = path: type:
      let top = topName path;
      in !(top == "target" || top == ".git" || lib.hasPrefix "result" top);
  };
}
