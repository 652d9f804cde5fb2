#!/bin/sh
# @PROGRAM@ for @USER@, written by `cargo xtask install` (as the NixOS module writes its wrapper): it exports the
# user's configuration, then runs the installed program. Re-running the install rewrites it.
@EXPORTS@
exec @TARGET@ "$@"
