//! The session name of a batch (60-webhook-spawn §5): `hook-<sanitised key>-<4 hex>`, or `hook-<8 hex>` for a key
//! that does not fit, redrawn under the lock while it is taken.

use base::SessionName;
use rand::RngExt;

/// Draws before giving up (W17).
pub const DRAWS: usize = 16;

/// Every byte outside `[A-Za-z0-9_-]` becomes `-`; the key is never shortened. An empty key reads as `event`.
pub fn sanitised(key: &[u8]) -> String {
    if key.is_empty() {
        return "event".to_owned();
    }
    key.iter().map(|b| if base::name::is_name_byte(*b) { char::from(*b) } else { '-' }).collect()
}

/// True when `hook-<sanitised>-XXXX` would exceed 150 characters (the sanitised key is over 140).
pub fn too_long(sanitised: &str) -> bool {
    sanitised.len() > 140
}

/// One candidate name.
pub fn draw(sanitised: &str) -> String {
    let mut rng = rand::rng();
    if too_long(sanitised) {
        format!("hook-{:08x}", rng.random_range(0..=u32::MAX))
    } else {
        format!("hook-{sanitised}-{:04x}", rng.random_range(0..=u16::MAX))
    }
}

/// Draws until a name is not taken (at most 16 draws).
pub fn mint(sanitised: &str, taken: impl Fn(&str) -> bool) -> Option<SessionName> {
    (0..DRAWS).map(|_| draw(sanitised)).find(|n| !taken(n)).and_then(|n| SessionName::parse_new(&n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn keys_become_names() {
        assert_eq!(sanitised(b"acme/widgets"), "acme-widgets");
        assert_eq!(sanitised("é/x".as_bytes()), "---x");
        assert_eq!(sanitised(b""), "event");
        let name = draw("acme-widgets");
        assert!(name.starts_with("hook-acme-widgets-") && name.len() == "hook-acme-widgets-".len() + 4);
        assert_eq!(draw(&"k".repeat(140)).len(), 150);
        let long = draw(&"k".repeat(141));
        assert!(long.len() == 13 && long.starts_with("hook-"));
    }

    #[test]
    fn random_keys_always_give_creatable_names() {
        let seed: u64 =
            std::env::var("AGENT_BOX_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
        eprintln!("hook-name seed {seed}");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for _ in 0..2000 {
            let len = rng.random_range(0..300);
            let key: Vec<u8> = (0..len).map(|_| rng.random_range(0..=255u8)).collect();
            let clean = sanitised(&key);
            let name = mint(&clean, |_| false).expect("a name");
            assert!(name.as_str().len() <= 150);
            if !too_long(&clean) && !key.is_empty() {
                assert_eq!(name.as_str().len(), "hook-".len() + key.len() + 5, "one name byte per key byte");
            }
        }
    }

    #[test]
    fn taken_names_are_redrawn_and_exhaustion_gives_none() {
        assert!(mint("k", |_| true).is_none());
        let first = std::cell::Cell::new(true);
        assert!(mint("k", |_| first.replace(false)).is_some());
    }
}
