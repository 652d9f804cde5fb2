//! The bodies of the fuzz targets `registry_validate` and `shell_quote` (90-quality §9, Q9). Each panics when a
//! property fails, so cargo-fuzz (nightly, `fuzz/`) and the stable property tests (corpus plus seeded inputs)
//! check the same thing and report the input that broke it.

use std::process::Command;

use serde_json::Value;

use crate::document::Document;
use crate::read::ReadOutcome;
use base::name::SessionName;
use base::quote::push_words;

/// `registry_validate`: bytes as a registry. Never panics in the product code; Valid exactly when an independent
/// check of RG-6.3 agrees (UTF-8, one JSON value, an object with a `sessions` object); a Valid document
/// serialises to bytes that parse again to equal values in the same key order; setting every field of every
/// entry to the value it already has is a no-op edit (RG-4.4: nothing would be written).
pub fn check_registry_validate(data: &[u8]) {
    let ours = Document::parse(data);
    let independent = independent_rg_6_3(data);
    assert_eq!(ours.is_ok(), independent.is_some(), "RG-6.3 validity disagrees: {:?}", ours.err());
    match ReadOutcome::from_bytes(data) {
        ReadOutcome::Empty => assert!(data.is_empty(), "only zero bytes read as Empty"),
        ReadOutcome::Valid(_) => assert!(independent.is_some()),
        ReadOutcome::Invalid(_) => assert!(independent.is_none() && !data.is_empty()),
        other => panic!("bytes read as {other:?}"),
    }
    let (Ok(doc), Some(original)) = (ours, independent) else { return };
    let written = doc.to_bytes();
    let Ok(again) = Document::parse(&written) else { panic!("the serialised document does not parse") };
    assert_eq!(again, doc, "values changed through a write");
    let Ok(round) = serde_json::from_slice::<Value>(&written) else { panic!("the written bytes are not JSON") };
    assert!(same_order(&original, &round), "key order changed through a write");
    check_noop_edits(&doc, &written);
}

/// RG-6.3 without the registry code: the parsed value when it is a Valid registry.
fn independent_rg_6_3(data: &[u8]) -> Option<Value> {
    std::str::from_utf8(data).ok()?;
    let value: Value = serde_json::from_slice(data).ok()?;
    value.get("sessions")?.as_object()?;
    value.is_object().then_some(value)
}

/// Equal values with equal key order, at every depth (map equality alone ignores order).
fn same_order(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.keys().eq(y.keys()) && x.values().zip(y.values()).all(|(p, q)| same_order(p, q))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_order(p, q)),
        _ => a == b,
    }
}

fn check_noop_edits(doc: &Document, written: &[u8]) {
    let mut edited = doc.clone();
    let names: Vec<SessionName> = doc.names().filter_map(|n| SessionName::parse(n).ok()).collect();
    for name in &names {
        let Some(entry) = doc.entry(name.as_str()) else { continue };
        let fields: Vec<(String, Value)> = entry.raw().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let Some(mut target) = edited.entry_mut(name) else { continue };
        for (key, value) in fields {
            assert!(!target.set(&key, value), "setting {name}.{key} to its own value reports a change");
        }
    }
    assert_eq!(edited.to_bytes(), written, "a no-op edit changed the bytes");
}

/// `shell_quote`: the input split at NUL bytes is a vector of arguments (an argument cannot hold NUL). `Q` of
/// 30-supervisor §12.6, joined by spaces, must read back as exactly that vector through an in-process POSIX
/// word reader that refuses any unquoted byte sh could treat specially; one input in 100 is also checked through
/// `sh -c "printf '%s\0' …"`.
pub fn check_shell_quote(data: &[u8]) {
    let args: Vec<&[u8]> = data.split(|b| *b == 0).collect();
    let mut line = Vec::new();
    push_words(&mut line, args.iter().copied());
    match read_words(&line) {
        Ok(words) => assert_eq!(words, args, "the quoted words read back differently"),
        Err(reason) => panic!("the quoted line is not plain sh words ({reason}): {:?}", String::from_utf8_lossy(&line)),
    }
    if fnv(data).is_multiple_of(100) && line.len() < 96 * 1024 {
        assert_eq!(through_sh(&line), args.iter().flat_map(|a| a.iter().copied().chain([0])).collect::<Vec<u8>>());
    }
}

/// A POSIX sh word reader for the subset quoting may produce: blanks between words, single quotes, and a
/// backslash outside quotes. Any other byte outside quotes must be one no sh position gives a meaning to.
fn read_words(line: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut words = Vec::new();
    let mut word: Option<Vec<u8>> = None;
    let mut bytes = line.iter().copied();
    while let Some(byte) = bytes.next() {
        match byte {
            b' ' | b'\t' | b'\n' => words.extend(word.take()),
            b'\'' => {
                let current = word.get_or_insert_with(Vec::new);
                loop {
                    match bytes.next() {
                        Some(b'\'') => break,
                        Some(inner) => current.push(inner),
                        None => return Err("an unterminated single quote".into()),
                    }
                }
            }
            b'\\' => match bytes.next() {
                Some(escaped) => word.get_or_insert_with(Vec::new).push(escaped),
                None => return Err("a trailing backslash".into()),
            },
            plain if plain.is_ascii_alphanumeric() || b"_@%+:,./-".contains(&plain) => {
                word.get_or_insert_with(Vec::new).push(plain);
            }
            special => return Err(format!("byte {special:#04x} outside quotes")),
        }
    }
    words.extend(word);
    Ok(words)
}

/// What `sh` makes of `line` as the arguments of `printf '%s\0'`.
fn through_sh(line: &[u8]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut script = b"printf '%s\\0' ".to_vec();
    script.extend_from_slice(line);
    let output = Command::new("/bin/sh").arg("-c").arg(std::ffi::OsStr::from_bytes(&script)).env_clear().output();
    match output {
        Ok(out) if out.status.success() => out.stdout,
        Ok(out) => panic!("sh refused the quoted line: {}", String::from_utf8_lossy(&out.stderr)),
        Err(err) => panic!("cannot run /bin/sh: {err}"),
    }
}

/// FNV-1a: a stable, dependency-free choice of which inputs also go through sh.
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_reader_refuses_what_sh_would_interpret() {
        assert_eq!(read_words(b"a 'b c' d\\'e ''").unwrap(), [&b"a"[..], b"b c", b"d'e", b""]);
        for bad in [&b"$x"[..], b"a;b", b"`id`", b"*", b"'open", b"x\\", b"a=b", b"~", b"#c"] {
            assert!(read_words(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn registry_properties_hold_for_a_few_shapes() {
        for doc in [
            &br#"{"version":1,"sessions":{"a":{"agent":"tool","x":[1,{"z":1,"a":2}]},"b c":3}}"#[..],
            b"{\"sessions\":{}}",
            b"\xef\xbb\xbf{\"sessions\":{}}",
            b"{\"sessions\":{}} {}",
            b"",
            b"[]",
            b"{\"sessions\":{\"a\":1,\"a\":{}}}",
        ] {
            check_registry_validate(doc);
        }
        check_shell_quote(b"a\0b c\0\0'\0$(id)");
    }
}
