# Entry point of the evaluation checks (spec 70 NX-10), one case per run:
#   nix-instantiate --eval --strict --json nix/tests/eval.nix \
#     --argstr libPath <nixpkgs lib directory> --argstr case <name> [--argstr readmeFlake <file>]
# `cargo xtask nix` finds the lib (NX-10.1), runs every case and judges the results.
{ libPath, case, readmeFlake ? "" }:

let
  cases = import ./cases.nix {
    lib = import libPath;
    readmeFlake = if readmeFlake == "" then null else readmeFlake;
  };
in
cases.${case} or (throw "no evaluation case '${case}' in nix/tests/cases.nix")
