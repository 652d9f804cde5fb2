//! The fast one-entry edit against the full parse: same classification, same bytes, and no recognition outside the
//! plain subset.

use rand::{Rng, RngExt, SeedableRng};
use serde_json::{Value, json};

use super::*;
use crate::Document;

fn name(text: &str) -> SessionName {
    SessionName::parse(text).unwrap()
}

/// What the full path writes after setting `key` to `value` in `sessions.<name>`: `None` when it writes nothing
/// (entry absent or not an object, or already holding the value).
fn full_path(bytes: &[u8], name: &SessionName, key: &str, value: &Value) -> Option<Vec<u8>> {
    let mut doc = Document::parse(bytes).ok()?;
    let mut entry = doc.entry_mut(name)?;
    entry.set(key, value.clone()).then(|| doc.to_bytes())
}

/// The same through [`Canonical`], or `None` when it does not recognise the bytes.
fn fast_path(bytes: &[u8], name: &SessionName, key: &str, value: &Value) -> Option<Option<Vec<u8>>> {
    let canonical = Canonical::scan(bytes, name)?;
    let Some(mut entry) = canonical.entry() else { return Some(None) };
    let changed = crate::EntryMut::of(&mut entry).set(key, value.clone());
    Some(changed.then(|| canonical.with_entry(&entry).unwrap().to_vec()))
}

fn pretty(value: &Value) -> Vec<u8> {
    Document::parse(value.to_string().as_bytes()).unwrap().to_bytes()
}

#[test]
fn a_registry_written_by_the_workspace_is_recognised_and_edited_identically() {
    let doc = json!({"version": 1, "z": {"a": [1, {"b": null}], "e": {}, "l": []}, "sessions": {
        "main": {"agent": "tool", "extraArgs": ["--as", "main"], "died": 3, "hook": {"source": "github"}},
        "other": {"agent": "claude", "n": -42, "t": "tab\there \"q\" back\\slash é 😀 \u{7f}"},
        "odd": 7,
        "empty": {}
    }, "after": true});
    let bytes = pretty(&doc);
    for (who, key, value) in [
        ("main", "stopped", json!(true)),
        ("main", "died", json!(7)),
        ("main", "died", json!(3)),
        ("other", "stopped", json!(true)),
        ("empty", "died", json!(1)),
        ("odd", "stopped", json!(true)),
        ("gone", "stopped", json!(true)),
    ] {
        let fast = fast_path(&bytes, &name(who), key, &value).expect("recognised");
        assert_eq!(fast, full_path(&bytes, &name(who), key, &value), "{who} {key}");
    }
    let found = |who: &str| Canonical::scan(&bytes, &name(who)).unwrap().found().clone();
    assert!(matches!(found("main"), Found::Object(_)));
    assert_eq!(found("odd"), Found::NotObject);
    assert_eq!(found("gone"), Found::Absent);
}

#[test]
fn an_empty_sessions_object_holds_nothing() {
    let bytes = b"{\n  \"version\": 1,\n  \"sessions\": {}\n}\n";
    assert_eq!(Canonical::scan(bytes, &name("a")).unwrap().found(), &Found::Absent);
}

#[test]
fn anything_outside_the_plain_subset_goes_to_the_full_path() {
    let good = pretty(&json!({"version": 1, "sessions": {"a": {"agent": "tool"}}}));
    assert!(Canonical::scan(&good, &name("a")).is_some());
    let text = String::from_utf8(good).unwrap();
    let variants = [
        text.replace("\"tool\"", "\"t\\u0041\""),
        text.replace("\"tool\"", "\"t\\/\""),
        text.replace("\"tool\"", "1.5"),
        text.replace("\"tool\"", "1e3"),
        text.replace("\"tool\"", "-0"),
        text.replace("\"tool\"", "007"),
        text.replace("\"tool\"", "1234567890123456789"),
        text.replace("\"tool\"", "\"a\u{1}b\""),
        text.replace("\"agent\": \"tool\"", "\"agent\": \"tool\",\n      \"agent\": \"x\""),
        text.replace("\"sessions\": {", "\"sessions\": {\n    \"a\": 1,"),
        text.replace("  ", "\t"),
        text.replace(": ", ":"),
        text.replace('\n', "\r\n"),
        text.trim_end().to_owned(),
        format!("{text}\n"),
        format!("\u{feff}{text}"),
        format!("{text}{{}}"),
        "{\"version\":1,\"sessions\":{\"a\":{}}}\n".to_owned(),
        "{\n  \"version\": 1\n}\n".to_owned(),
        "{\n  \"sessions\": []\n}\n".to_owned(),
        "[\n  1\n]\n".to_owned(),
        "{}\n".to_owned(),
        // Indentation that ends in another byte, at the depths the one-word compare handles ('(' agrees with a
        // space in its low bits, so a compare of too few bits would take it).
        text.replace("\n  \"sessions\"", "\n (\"sessions\""),
        text.replace("\n    \"a\"", "\n   (\"a\""),
    ];
    for variant in &variants {
        assert!(Canonical::scan(variant.as_bytes(), &name("a")).is_none(), "recognised: {variant:?}");
    }
    let mut deep = json!(1);
    for _ in 0..MAX_DEPTH {
        deep = json!([deep]);
    }
    let nested = pretty(&json!({"sessions": {"a": {"deep": deep}}}));
    assert!(Canonical::scan(&nested, &name("a")).is_none(), "nesting beyond the bound");
    assert!(Canonical::scan(b"{\n  \"sessions\": {}\n}\n\xff", &name("a")).is_none(), "not UTF-8");
}

#[test]
fn duplicate_keys_are_found_in_small_and_large_objects() {
    let mut small: Vec<&[u8]> = vec![b"a", b"b", b"a"];
    assert!(has_duplicates(&mut small));
    let mut same_tags: Vec<&[u8]> = vec![b"abc", b"axc", b"", b"ayc"];
    assert!(!has_duplicates(&mut same_tags), "equal length and end bytes are not equal keys");
    same_tags.push(b"");
    assert!(has_duplicates(&mut same_tags));
    let names: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    let mut large: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
    assert!(!has_duplicates(&mut large));
    large.push(b"k7");
    assert!(has_duplicates(&mut large));
}

/// Random values of the kinds registries hold; unless `plain`, also outside the subset (floats, control characters
/// written as `\u00XX`, numbers of 19 and 20 digits).
struct Values<R> {
    rng: R,
    plain: bool,
}

impl<R: Rng> Values<R> {
    fn value(&mut self, depth: usize) -> Value {
        match self.rng.random_range(0..if depth > 3 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(self.rng.random()),
            2 => self.number(),
            3 | 4 => Value::String(self.string()),
            5 => Value::Array((0..self.rng.random_range(0..4)).map(|_| self.value(depth + 1)).collect()),
            _ => self.object(depth, 5),
        }
    }

    fn object(&mut self, depth: usize, most: usize) -> Value {
        Value::Object((0..self.rng.random_range(0..most)).map(|_| (self.string(), self.value(depth + 1))).collect())
    }

    fn number(&mut self) -> Value {
        match (self.plain, self.rng.random_range(0..4)) {
            (false, 0) => json!(self.rng.random::<u64>()),
            (false, 1) => json!(self.rng.random::<f64>()),
            (_, 2) => json!(self.rng.random_range(-1000..1000)),
            _ => json!(self.rng.random_range(-99_999_999_999_999_999_i64..=999_999_999_999_999_999)),
        }
    }

    fn string(&mut self) -> String {
        const PLAIN: [char; 14] = ['a', 'b', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\u{7f}', 'é', '😀', '#'];
        const ODD: [char; 2] = ['\u{1}', '\u{1f}'];
        (0..self.rng.random_range(0..6))
            .map(|_| match self.rng.random_range(0..if self.plain { PLAIN.len() } else { PLAIN.len() + 2 }) {
                i if i < PLAIN.len() => PLAIN[i],
                i => ODD[i - PLAIN.len()],
            })
            .collect()
    }
}

#[test]
fn random_registries_give_the_full_paths_bytes_whenever_recognised() {
    let seed: u64 = std::env::var("AGENT_BOX_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let mut values = Values { rng: rand::rngs::StdRng::seed_from_u64(seed), plain: true };
    let (mut recognised, mut total) = (0, 0);
    for round in 0..2000 {
        values.plain = round % 2 == 0;
        let mut sessions = Map::new();
        for i in 0..values.rng.random_range(0..6) {
            let entry = if values.rng.random_range(0..6) == 0 { values.value(2) } else { values.object(2, 6) };
            sessions.insert(format!("s{i}"), entry);
        }
        let mut root = Map::new();
        root.insert("version".into(), json!(1));
        if values.rng.random_bool(0.3) {
            root.insert(values.string(), values.value(1));
        }
        root.insert("sessions".into(), Value::Object(sessions));
        let bytes = pretty(&Value::Object(root));
        for who in ["s0", "s3", "nope"] {
            let rng = &mut values.rng;
            let value = if rng.random() { json!(true) } else { json!(rng.random_range(0..300)) };
            let key = if rng.random() { "stopped" } else { "died" };
            total += 1;
            if let Some(fast) = fast_path(&bytes, &name(who), key, &value) {
                recognised += 1;
                let full = full_path(&bytes, &name(who), key, &value);
                assert_eq!(fast, full, "seed {seed}: {}", String::from_utf8_lossy(&bytes));
            }
        }
    }
    assert!(recognised * 4 > total, "seed {seed}: only {recognised} of {total} recognised");
}

/// The subset allows nesting down to [`MAX_DEPTH`] (the innermost value at that depth) and no further.
#[test]
fn nesting_is_recognised_down_to_the_bound_and_not_below() {
    let nested = |arrays: usize| {
        let mut deep = json!(1);
        for _ in 0..arrays {
            deep = json!([deep]);
        }
        pretty(&json!({"sessions": {"a": {"deep": deep}}}))
    };
    // The root is depth 0, `sessions` 1, the entry 2, `deep` 3: its innermost value is at 3 + arrays.
    assert!(Canonical::scan(&nested(MAX_DEPTH - 3), &name("a")).is_some());
    assert!(Canonical::scan(&nested(MAX_DEPTH - 2), &name("a")).is_none());
}

/// The three literals are in the subset: an entry holding each is recognised and edited like the full path does.
#[test]
fn true_false_and_null_are_in_the_subset() {
    let doc = pretty(&json!({"version": 1, "sessions": {"a": {"stopped": false, "ephemeral": true, "died": null}}}));
    let fast = fast_path(&doc, &name("a"), "died", &json!(3));
    assert_eq!(fast, Some(full_path(&doc, &name("a"), "died", &json!(3))));
}

/// The eight-at-a-time search stops exactly at the first quote, backslash or control character, wherever it sits
/// in a word, and a run without one goes to the end.
#[test]
fn skip_plain_stops_at_the_first_special_byte_in_any_position() {
    // 24 bytes are three whole words; 21 leave five for the byte loop after them.
    for len in [24, 21] {
        for special in [b'"', b'\\', 0x00, 0x1f] {
            for at in 0..len - 2 {
                let mut bytes = vec![b'a'; len];
                bytes[at] = special;
                bytes[at + 2] = b'"';
                assert_eq!(skip_plain(&bytes, 0), at, "{special:#x} at {at} of {len}");
                assert_eq!(skip_plain(&bytes, at + 1), at + 2);
            }
        }
    }
    assert_eq!(skip_plain(&[b' '; 19], 0), 19);
    assert_eq!(skip_plain(&[0x7f, 0xc3, 0xa9, b'~', b'!', b'#', b'a', b'b', b'c'], 0), 9, "DEL and UTF-8 are plain");
}

/// Duplicate keys are found by any path: two empty keys (whose tag must still not read as a free slot), and
/// objects too large for the tag table, with and without a repeated key.
#[test]
fn has_duplicates_finds_empty_keys_and_works_past_the_table() {
    assert!(has_duplicates(&mut [&b""[..], &b""[..]]));
    assert!(!has_duplicates(&mut [&b""[..], &b"a"[..]]));
    // 40 keys whose tags all differ (first and last bytes): more than the 32-slot table could ever hold.
    let names: Vec<String> = (0..40u8).map(|i| format!("{}-{}", char::from(b'a' + i / 10), i % 10)).collect();
    let mut keys: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
    assert!(!has_duplicates(&mut keys));
    keys.push(b"b-7");
    assert!(has_duplicates(&mut keys));
}
