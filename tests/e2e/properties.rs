//! The stable half of the fuzz targets (90-quality Q-9.2): every `check_<target>` of the crates, run over its
//! committed corpus `fuzz/corpus/<target>/` and over 10 000 inputs of a seeded generator made for that target
//! (mostly well-formed input near the interesting boundaries, some of it broken on purpose), so ci checks every
//! property on stable Rust and nightly fuzzing only searches deeper.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_box_tests::property::check_target;
use rand::RngExt;
use rand::rngs::StdRng;
use serde_json::{Map, Value, json};

/// Bytes that matter to JSON, sh and the name rules, for strings that are mostly text but not always.
const SPECIAL: &[u8] = b"'\"\\$`*?[]~#=!&|;<>(){} \t\n\r%@+:,./-_\x00\x1b\x7f";

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

/// A short string: letters, special bytes, sometimes non-ASCII or control characters.
fn text(rng: &mut StdRng, max: usize) -> String {
    let len = rng.random_range(0..=max);
    (0..len)
        .map(|_| match rng.random_range(0..10) {
            0 => char::from(*pick(rng, SPECIAL)),
            1 => *pick(rng, &['é', '日', '😀', '\u{2028}', '\u{feff}']),
            _ => char::from(rng.random_range(b'a'..=b'z')),
        })
        .collect()
}

fn number(rng: &mut StdRng) -> Value {
    match rng.random_range(0..6) {
        0 => json!(rng.random_range(0..100_000u64)),
        1 => json!(rng.random::<u64>()),
        2 => json!(-rng.random_range(1..1000i64)),
        3 => json!(rng.random::<f64>() * 1e6),
        4 => json!(999_999_999_999_999_999u64 + rng.random_range(0..3u64)),
        _ => json!(0),
    }
}

/// A JSON value of bounded depth over a small key pool, so object keys repeat and shapes recur.
fn value(rng: &mut StdRng, depth: u32) -> Value {
    const KEYS: [&str; 10] = ["sessions", "version", "agent", "stopped", "died", "x", "a", "b", "hasRun", "z"];
    match rng.random_range(0..if depth == 0 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.random_bool(0.5)),
        2 => number(rng),
        3 | 4 => json!(text(rng, 12)),
        5 => Value::Array((0..rng.random_range(0..4)).map(|_| value(rng, depth - 1)).collect()),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.random_range(0..5) {
                map.insert((*pick(rng, &KEYS)).to_owned(), value(rng, depth - 1));
            }
            Value::Object(map)
        }
    }
}

/// Serialised `value`, compact or pretty, sometimes broken: cut, a byte changed, a BOM, trailing text.
fn bytes_of(rng: &mut StdRng, value: &Value) -> Vec<u8> {
    let mut bytes = if rng.random_bool(0.5) {
        serde_json::to_vec(value).unwrap()
    } else {
        serde_json::to_vec_pretty(value).unwrap()
    };
    match rng.random_range(0..12) {
        0 if !bytes.is_empty() => bytes.truncate(rng.random_range(0..bytes.len())),
        1 if !bytes.is_empty() => {
            let at = rng.random_range(0..bytes.len());
            bytes[at] = rng.random();
        }
        2 => bytes.splice(0..0, *b"\xef\xbb\xbf").for_each(drop),
        3 => {
            let tails: [&[u8]; 5] = [b" {}", b"\n", b"x", b" \t\r\n", b"\n\n1"];
            let tail: &&[u8] = pick(rng, &tails[..]);
            bytes.extend_from_slice(tail);
        }
        4 => bytes.splice(0..0, *b" \n").for_each(drop),
        _ => {}
    }
    bytes
}

fn registry_input(rng: &mut StdRng) -> Vec<u8> {
    if rng.random_range(0..10) < 3 {
        let broken = value(rng, 3);
        return bytes_of(rng, &broken);
    }
    let mut sessions = Map::new();
    for _ in 0..rng.random_range(0..5) {
        let name = if rng.random_bool(0.8) { format!("s{}", rng.random_range(0..9)) } else { text(rng, 6) };
        sessions.insert(name, value(rng, 2));
    }
    let mut root = Map::new();
    let extra = value(rng, 1);
    if rng.random_bool(0.3) {
        root.insert("uiState".into(), extra.clone());
    }
    root.insert("version".into(), if rng.random_bool(0.9) { json!(1) } else { extra });
    root.insert("sessions".into(), if rng.random_bool(0.95) { Value::Object(sessions) } else { json!([]) });
    bytes_of(rng, &Value::Object(root))
}

#[test]
fn property_registry_validate() {
    check_target("registry_validate", registry::fuzz::check_registry_validate, registry_input);
}

/// One shell argument: mostly short, sometimes long, from the bytes that matter to sh (never NUL, the separator).
fn shell_arg(rng: &mut StdRng) -> Vec<u8> {
    let len = match rng.random_range(0..100) {
        0 => rng.random_range(1000..4000),
        1..=9 => 0,
        _ => rng.random_range(1..24),
    };
    (0..len)
        .map(|_| match rng.random_range(0..4) {
            0 => *pick(rng, &SPECIAL[..SPECIAL.len() - 3]),
            1 => rng.random_range(b'a'..=b'z'),
            _ => rng.random_range(1u8..=255),
        })
        .collect()
}

#[test]
fn property_shell_quote() {
    check_target("shell_quote", registry::fuzz::check_shell_quote, |rng| {
        let args: Vec<Vec<u8>> = (0..rng.random_range(1..6)).map(|_| shell_arg(rng)).collect();
        args.join(&0u8)
    });
}

fn meta_number(rng: &mut StdRng) -> Value {
    match rng.random_range(0..5) {
        0 => json!("0".repeat(rng.random_range(0..3)) + &rng.random_range(0..100_000u64).to_string()),
        1 => json!((0..rng.random_range(0..21)).map(|_| char::from(rng.random_range(b'0'..=b'9'))).collect::<String>()),
        2 => number(rng),
        3 => json!(text(rng, 6)),
        _ => value(rng, 1),
    }
}

fn meta_sha(rng: &mut StdRng) -> Value {
    let hex = |rng: &mut StdRng, upper: bool| -> String {
        let digits: &[u8] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
        (0..rng.random_range(5..43)).map(|_| char::from(*pick(rng, digits))).collect()
    };
    match rng.random_range(0..5) {
        0 | 1 => json!(hex(rng, false)),
        2 => json!(hex(rng, true)),
        3 => json!("HEAD"),
        _ => value(rng, 1),
    }
}

fn meta_input(rng: &mut StdRng) -> Vec<u8> {
    let key = match rng.random_range(0..4) {
        0 => b"acme/widgets".to_vec(),
        1 => (0..rng.random_range(0..40)).map(|_| rng.random_range(1u8..=255)).collect(),
        _ => text(rng, 30).replace('\0', "").into_bytes(),
    };
    let meta = if rng.random_range(0..8) == 0 {
        let broken = value(rng, 2);
        bytes_of(rng, &broken)
    } else {
        let mut map = Map::new();
        for (field, present) in [("number", 0.6), ("sha", 0.5), ("event", 0.4), ("action", 0.3), ("branch", 0.3)] {
            if rng.random_bool(present) {
                let v = match field {
                    "number" => meta_number(rng),
                    "sha" => meta_sha(rng),
                    _ => json!(text(rng, 10)),
                };
                map.insert(field.to_owned(), v);
            }
        }
        if rng.random_range(0..500) == 0 {
            map.insert("pad".into(), json!("p".repeat(64 * 1024)));
        }
        bytes_of(rng, &Value::Object(map))
    };
    [key, vec![0], meta].concat()
}

#[test]
fn property_meta_claim() {
    check_target("meta_claim", webhook_spawn::fuzz::check_meta_claim, meta_input);
}

#[test]
fn property_hook_name() {
    check_target("hook_name", webhook_spawn::fuzz::check_hook_name, |rng| {
        let len = if rng.random_range(0..10) == 0 { rng.random_range(130..300) } else { rng.random_range(0..40) };
        (0..len)
            .map(|_| if rng.random_bool(0.7) { *pick(rng, b"abcXYZ019_-") } else { rng.random_range(0..=255u8) })
            .collect()
    });
}

#[test]
fn property_epilogue_args() {
    const PICKS: [&str; 14] = [
        "main",
        "hook-x",
        "0",
        "1",
        "000",
        "2147483647",
        "2147483648",
        "-",
        "",
        "-1",
        "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90",
        "0B6F3C0E-6A51-4B8E-9A3E-2F7D1C4E5A90",
        "../x",
        "a b",
    ];
    check_target("epilogue_args", mark_stopped::fuzz::check_epilogue_args, |rng| {
        let args: Vec<Vec<u8>> = (0..rng.random_range(0..5))
            .map(|_| match rng.random_range(0..3) {
                0 => (0..rng.random_range(0..12)).map(|_| rng.random_range(1u8..=255)).collect(),
                1 => (0..rng.random_range(1..12)).map(|_| char::from(rng.random_range(b'0'..=b'9')) as u8).collect(),
                _ => pick(rng, &PICKS).as_bytes().to_vec(),
            })
            .collect();
        args.join(&0u8)
    });
}

fn lease_input(rng: &mut StdRng) -> Vec<u8> {
    if rng.random_range(0..6) == 0 {
        let broken = value(rng, 2);
        return bytes_of(rng, &broken);
    }
    let outcome = match rng.random_range(0..8) {
        0 => Value::Null,
        1 => json!(""),
        2 => json!("vanished"),
        3 => json!("stopped"),
        4 => json!(format!("died:{}", pick(rng, &["1", "0", "01", "-1", "x", "4294967296", ""]))),
        5 => json!(text(rng, 8)),
        _ => value(rng, 1),
    };
    let gen_value = match rng.random_range(0..5) {
        0 => json!(base::new_uuid_v4()),
        1 => json!(base::new_uuid_v4().to_uppercase()),
        2 => Value::Null,
        3 => json!(text(rng, 10)),
        _ => value(rng, 1),
    };
    let mut map = Map::new();
    map.insert("//".into(), json!("note"));
    for (key, v) in [
        ("topic", json!(text(rng, 10))),
        ("object", if rng.random_bool(0.5) { json!("7") } else { value(rng, 1) }),
        ("claimedAt", json!("2026-11-29T14:03:11Z")),
        ("gen", gen_value),
        ("outcome", outcome),
        ("lastSeenAt", value(rng, 0)),
        ("endedAt", json!(text(rng, 20))),
    ] {
        if rng.random_bool(0.85) {
            map.insert(key.into(), v);
        }
    }
    bytes_of(rng, &Value::Object(map))
}

#[test]
fn property_lease_read() {
    check_target("lease_read", lease::fuzz::check_lease_read, lease_input);
}

fn log_line(rng: &mut StdRng) -> Vec<u8> {
    match rng.random_range(0..8) {
        0 => br#"{"at":"2026-11-29T14:03:11Z","what":"spawn","name":"hook-a-3fa9","topic":"github:a/b","event":"issues","object":"1","count":1}"#.to_vec(),
        1 => br#"{"at":"2026-11-29T14:31:02Z","what":"end","name":"hook-a-3fa9","how":"died:1","lifeSeconds":1671,"outcome":"died:1"}"#.to_vec(),
        2 => Vec::new(),
        3 => b"   \t".to_vec(),
        4 => (0..rng.random_range(0..30)).map(|_| rng.random_range(0..=255u8)).filter(|b| *b != b'\n').collect(),
        _ => serde_json::to_vec(&value(rng, 2)).unwrap(),
    }
}

#[test]
fn property_hooklog_line() {
    check_target("hooklog_line", lease::fuzz::check_hooklog_line, |rng| {
        let lines: Vec<Vec<u8>> = (0..rng.random_range(0..12)).map(|_| log_line(rng)).collect();
        let mut bytes = lines.join(if rng.random_bool(0.8) { &b"\n"[..] } else { b"\r\n" });
        if rng.random_bool(0.5) {
            bytes.push(b'\n');
        }
        bytes
    });
}
