//! Project automation: `cargo xtask ci`.

fn main() {}
