//! The typed adapter over the tmux CLI: the only code in the workspace that runs tmux.
