#!/bin/sh
# agent-box-session for agent, written by `cargo xtask install` (as the NixOS module writes its wrapper): it exports the
# user's configuration, then runs the installed program. Re-running the install rewrites it.
export AGENT_BOX_AGENTS='claude codex shell'
export AGENT_BOX_DEFAULT_AGENT=claude
export AGENT_BOX_TMUX_BIN=/usr/bin/tmux
exec <ROOT>/prefix/lib/agent-box/agent-box-session "$@"
