//! The bodies of the fuzz targets `meta_claim` and `hook_name` (90-quality §9, Q9). Each panics when a property
//! fails, so cargo-fuzz (nightly, `fuzz/`) and the stable property tests (corpus plus seeded inputs) check the
//! same thing and report the input that broke it.

use agent_box_types::filter::{FilterSeed, SeededTopic};
use serde_json::Value;

use crate::claim::{META_LIMIT, note, parse_meta, predicate};
use crate::name::{draw, mint, sanitised, too_long};
use crate::prose::prose;

/// `meta_claim`: the bytes before the first NUL are the KEY, the rest is META (both read as the spawner reads
/// the environment, lossy UTF-8). A number claim exactly when 60 §6.2's number rule holds, else a sha claim
/// exactly when the sha rule holds, else the fallback (none for an unusable META); the lease object is the
/// canonical number; every note starts `seeded at spawn:`; the filter document is valid JSON.
pub fn check_meta_claim(data: &[u8]) {
    let (key, meta_bytes) =
        data.iter().position(|b| *b == 0).map_or((data, &[][..]), |at| (&data[..at], &data[at + 1..]));
    let key = prose(&String::from_utf8_lossy(key), 1000);
    let raw = String::from_utf8_lossy(meta_bytes).into_owned();
    let meta = parse_meta(Some(&raw));
    let expected = Expected::of(&raw);
    assert_eq!(meta.is_some(), expected.usable, "usability of META");
    let claim = predicate(meta.as_ref());
    match (&claim, &expected) {
        (None, Expected { usable: false, .. }) => {}
        (Some(p), Expected { number: Some(n), .. }) => assert_eq!(p["any"][0]["in"][0].as_u64(), Some(*n), "{p}"),
        (Some(p), Expected { sha: Some(sha), .. }) => assert_eq!(p["any"][0]["in"][0].as_str(), Some(sha.as_str())),
        (Some(p), _) => assert!(p.get("all").is_some(), "the fallback claim: {p}"),
        (None, _) => panic!("a usable META claims nothing"),
    }
    let object = meta.as_ref().and_then(|m| m.number).map(|n| n.to_string());
    assert_eq!(object, expected.number.map(|n| n.to_string()), "the lease object is the canonical number");
    let own = format!("github:{key}");
    let text = note(meta.as_ref(), &key, &own, "issues");
    assert!(text.starts_with("seeded at spawn:"), "{text}");
    let topic = SeededTopic {
        topic: own,
        note: text,
        include: claim,
        ignore_senders: vec!["@self".to_owned()],
        renew_on_event: true,
        subscribed_at: "2001-01-01T00:00:00.000Z".to_owned(),
        last_activity_at: "2001-01-01T00:00:00.000Z".to_owned(),
    };
    let seed =
        FilterSeed { note: agent_box_types::filter::NOTE.to_owned(), enabled: true, ttl_hours: 2, topics: vec![topic] };
    let Ok(document) = agent_box_types::pretty(&seed) else { panic!("the filter document cannot be written") };
    assert!(serde_json::from_str::<Value>(&document).is_ok_and(|v| v.is_object()), "the filter is not JSON");
}

/// 60 §6.2 restated without the spawner's code.
#[derive(Debug)]
struct Expected {
    usable: bool,
    number: Option<u64>,
    sha: Option<String>,
}

impl Expected {
    fn of(raw: &str) -> Self {
        let text = if raw.is_empty() { "{}" } else { raw };
        let parsed = serde_json::from_str::<Value>(text).ok().filter(|_| text.len() <= META_LIMIT);
        let Some(Value::Object(map)) = parsed else { return Self { usable: false, number: None, sha: None } };
        let number = match map.get("number") {
            Some(Value::String(s)) if (1..=18).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) => {
                Some(s.bytes().fold(0u64, |n, b| n * 10 + u64::from(b - b'0')))
            }
            Some(Value::Number(n)) => n.as_u64().filter(|v| *v < 1_000_000_000_000_000_000),
            _ => None,
        };
        let sha = map
            .get("sha")
            .and_then(Value::as_str)
            .filter(|s| (7..=40).contains(&s.len()) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        Self { usable: true, number, sha: sha.map(str::to_owned) }
    }
}

/// `hook_name`: bytes as KEY. The minted name passes the creation check, has one of the two shapes of 60 §5
/// (`hook-<key bytes, each mapped>-<4 hex>`, or `hook-<8 hex>` when that would exceed 150 bytes), is at most
/// 150 bytes, and in the long form each key byte maps to exactly one name byte.
pub fn check_hook_name(data: &[u8]) {
    let clean = sanitised(data);
    let Some(name) = mint(&clean, |_| false) else { panic!("no name for a free registry") };
    let name = name.as_str();
    assert!(base::SessionName::parse_new(name).is_ok() && name.len() <= 150, "{name}");
    let hex =
        |text: &str, len: usize| text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let Some(rest) = name.strip_prefix("hook-") else { panic!("{name} lacks the hook- prefix") };
    if too_long(&clean) {
        assert!(hex(rest, 8), "{name}: the short form");
        return;
    }
    let Some((body, suffix)) = rest.rsplit_once('-') else { panic!("{name} has no suffix") };
    assert!(hex(suffix, 4), "{name}: the suffix");
    let key: &[u8] = if data.is_empty() { b"event" } else { data };
    assert_eq!(body.len(), key.len(), "{name}: one name byte per key byte");
    for (kb, nb) in key.iter().zip(body.bytes()) {
        let kept = kb.is_ascii_alphanumeric() || matches!(kb, b'_' | b'-');
        assert_eq!(nb, if kept { *kb } else { b'-' }, "{name}: byte {kb:#04x}");
    }
    assert!(draw(&clean).starts_with("hook-"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_inputs_hold() {
        for meta in [
            &b"acme/widgets\0{\"number\":\"007\"}"[..],
            b"k\0{\"sha\":\"da73cb12\"}",
            b"k\0[1]",
            b"k\0",
            b"k",
            b"\xff\0{\"number\":1e3}",
        ] {
            check_meta_claim(meta);
        }
        for key in [&b""[..], b"acme/widgets", "é".as_bytes(), &[b'k'; 141], &[b'k'; 140]] {
            check_hook_name(key);
        }
    }
}
