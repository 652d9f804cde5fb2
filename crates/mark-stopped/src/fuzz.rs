//! The body of the fuzz target `epilogue_args` (90-quality §9, Q9): it panics when a property fails, so
//! cargo-fuzz (nightly, `fuzz/`) and the stable property tests (corpus plus seeded inputs) check the same thing.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use lease::{Expect, Gen, LeaseDir};

use crate::args::parse;

/// `epilogue_args`: the bytes split at NUL are the argv after the program name. The parser never panics; it
/// gives a report exactly when NAME is UTF-8 and passes the charset of 10 RG-5.1 (so no path is ever built from
/// any other NAME, and the one built stays inside its directory); STATUS maps per 40 MS-4.3 and GEN per MS-4.4.
pub fn check_epilogue_args(data: &[u8]) {
    let argv: Vec<OsString> = if data.is_empty() {
        Vec::new()
    } else {
        data.split(|b| *b == 0).map(|a| OsString::from_vec(a.to_vec())).collect()
    };
    let report = parse(&argv);
    let name_ok = argv.first().is_some_and(|n| {
        let bytes = n.as_bytes();
        !bytes.is_empty() && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
    });
    assert_eq!(report.is_some(), name_ok, "a report exactly for a NAME that passes the charset");
    let Some(report) = report else { return };
    assert_eq!(Some(report.name.as_str().as_bytes()), argv.first().map(|n| n.as_bytes()));
    let dir = Path::new("/lease-dir");
    assert_eq!(LeaseDir::new(dir.to_path_buf()).lease_path(&report.name).parent(), Some(dir), "a path stays inside");
    assert_eq!(report.status, status_of(argv.get(1).map(|s| s.as_bytes())), "MS-4.3");
    assert_eq!(report.expect, expect_of(argv.get(2).map(|s| s.as_bytes())), "MS-4.4");
}

/// MS-4.3 restated: absent ⇒ 0; one to ten ASCII digits up to 2 147 483 647 ⇒ the value; anything else ⇒ 1.
fn status_of(arg: Option<&[u8]>) -> u32 {
    let Some(text) = arg else { return 0 };
    if text.is_empty() || text.len() > 10 || !text.iter().all(u8::is_ascii_digit) {
        return 1;
    }
    let value = text.iter().fold(0u64, |n, b| n * 10 + u64::from(b - b'0'));
    u32::try_from(value).ok().filter(|v| *v <= 2_147_483_647).unwrap_or(1)
}

/// MS-4.4 restated: absent ⇒ Any; `-` ⇒ NoLease; a lowercase 8-4-4-4-12 hex UUID ⇒ Gen; anything else matches
/// nothing.
fn expect_of(arg: Option<&[u8]>) -> Expect {
    let Some(token) = arg else { return Expect::Any };
    if token == b"-" {
        return Expect::NoLease;
    }
    let shaped = token.len() == 36
        && token.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => matches!(b, b'0'..=b'9' | b'a'..=b'f'),
        });
    match std::str::from_utf8(token).ok().filter(|_| shaped).and_then(Gen::parse) {
        Some(g) => Expect::Gen(g),
        None => Expect::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_argv_hold() {
        for argv in [
            &b""[..],
            b"main",
            b"main\x000",
            b"hook-x\x002\x000b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90",
            b"hook-x\x002\x00-\x00extra",
            b"../x\x000",
            b"\xff\x001",
            b"a\x004294967296\x00nope",
            b"a\x00000",
        ] {
            check_epilogue_args(argv);
        }
    }
}
