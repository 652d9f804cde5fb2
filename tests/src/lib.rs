//! Test harness: sandboxes, private tmux servers, helpers shared by tests and xtask.
