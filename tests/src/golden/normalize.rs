//! Normalisation of rendered bytes (70 GD-5): the sandbox's paths, the private socket, minted names, uuids,
//! recent times, quarantine stamps and durations become stable tokens, by hand-written scanners applied in the
//! table's order on raw bytes. Nothing else changes: no trimming, no line-ending conversion.

/// Everything that varies between two renders and must be replaced.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    /// Exact paths and their tokens (`<HOME>`, `<ROOT>`, `<TMUX_DIR>`, `<BAKED>`); replaced longest first.
    pub paths: Vec<(String, &'static str)>,
    /// The private tmux socket name (`<SOCKET>`).
    pub socket: Option<String>,
    /// The uid the render ran as: `uid <n>` and `tmux-<n>/` become `uid <UID>` and `tmux-<UID>/`, so a render
    /// as root and one as a developer agree (an addition to the table of GD-5).
    pub uid: Option<u32>,
    /// Names minted during the run (`hook-<key>-<hex4>`, `hook-<hex8>`).
    pub minted: Vec<String>,
    /// The render's start, Unix seconds: times and epochs within 24 h of it are tokens.
    pub start: i64,
}

/// How far from the render's start a time or epoch may lie and still be treated as "now" (GD-5 rules 5, 7).
const RECENT_SECS: i64 = 24 * 3600;

/// Applies rules 1–7 of GD-5 to one file's bytes.
pub fn normalize(bytes: &[u8], tokens: &Tokens) -> Vec<u8> {
    let mut out = replace_paths(bytes, &tokens.paths);
    if let Some(socket) = tokens.socket.as_deref().filter(|s| !s.is_empty()) {
        out = replace_all(&out, socket.as_bytes(), b"<SOCKET>");
    }
    if let Some(uid) = tokens.uid {
        out = replace_all(&out, format!("uid {uid})").as_bytes(), b"uid <UID>)");
        out = replace_all(&out, format!("tmux-{uid}/").as_bytes(), b"tmux-<UID>/");
    }
    for name in &tokens.minted {
        out = replace_all(&out, name.as_bytes(), minted_token(name).as_bytes());
    }
    out = uuids(&out);
    out = times(&out, tokens.start);
    out = stamps(&out);
    out = durations(&out, tokens.start);
    pids(&out)
}

/// Rule 8 (issue 11): the digits after `pid ` and `kill ` (a pane or supervisor process id in a log line or a
/// message) become `<PID>`, so a render does not depend on which pids the kernel handed out.
fn pids(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let key = [&b"pid "[..], &b"kill "[..]].into_iter().find(|key| bytes[i..].starts_with(key));
        if let Some(key) = key {
            let digits = bytes[i + key.len()..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 {
                out.extend_from_slice(key);
                out.extend_from_slice(b"<PID>");
                i += key.len() + digits;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// Rule 1: exact paths, longest first, so `<HOME>` wins over the `<ROOT>` that contains it.
fn replace_paths(bytes: &[u8], paths: &[(String, &'static str)]) -> Vec<u8> {
    let mut ordered: Vec<&(String, &'static str)> = paths.iter().filter(|(p, _)| !p.is_empty()).collect();
    ordered.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    let mut out = bytes.to_vec();
    for (path, token) in ordered {
        out = replace_all(&out, path.as_bytes(), token.as_bytes());
    }
    out
}

/// Rule 3: `hook-<sanitised key>-<hex4>` → `hook-<sanitised key>-<HEX4>`, `hook-<hex8>` → `hook-<HEX8>`.
pub fn minted_token(name: &str) -> String {
    let is_hex = |s: &str| s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if let Some(rest) = name.strip_prefix("hook-") {
        if rest.len() == 8 && is_hex(rest) {
            return "hook-<HEX8>".to_owned();
        }
        if let Some((key, hex)) = rest.rsplit_once('-')
            && hex.len() == 4
            && is_hex(hex)
        {
            return format!("hook-{key}-<HEX4>");
        }
    }
    name.to_owned()
}

/// Every occurrence of `from` replaced by `to`, scanning left to right without overlap.
pub fn replace_all(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// Whether a lowercase 8-4-4-4-12 uuid starts at `bytes[i]`.
fn uuid_at(bytes: &[u8], i: usize) -> bool {
    const DASHES: [usize; 4] = [8, 13, 18, 23];
    if bytes.len() < i + 36 {
        return false;
    }
    (0..36).all(|k| if DASHES.contains(&k) { bytes[i + k] == b'-' } else { is_lower_hex(bytes[i + k]) })
}

/// Rule 4: each distinct uuid becomes `<UUID-n>`, numbered by first appearance within this file. A uuid glued to
/// more hex digits on either side is part of a longer token and left alone.
fn uuids(bytes: &[u8]) -> Vec<u8> {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let glued_before = i > 0 && is_lower_hex(bytes[i - 1]);
        let glued_after = bytes.get(i + 36).copied().is_some_and(is_lower_hex);
        if !glued_before && uuid_at(bytes, i) && !glued_after {
            let id = bytes[i..i + 36].to_vec();
            let n = match seen.iter().position(|s| *s == id) {
                Some(k) => k + 1,
                None => {
                    seen.push(id);
                    seen.len()
                }
            };
            out.extend_from_slice(format!("<UUID-{n}>").as_bytes());
            i += 36;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// `YYYY-MM-DDTHH:MM:SS` at `bytes[i]`, as epoch seconds.
fn iso_seconds_at(bytes: &[u8], i: usize) -> Option<i64> {
    let text = bytes.get(i..i + 19)?;
    let mut with_zone = text.to_vec();
    with_zone.push(b'Z');
    base::time::parse_iso(std::str::from_utf8(&with_zone).ok()?)
}

/// Rule 5: `…SSZ` → `<TIME>` and `…SS.mmmZ` → `<TIME-MS>` when within 24 h of the start.
fn times(bytes: &[u8], start: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some(secs) = iso_seconds_at(bytes, i).filter(|s| (s - start).abs() <= RECENT_SECS) {
            let rest = &bytes[i + 19..];
            if rest.first() == Some(&b'Z') {
                out.extend_from_slice(b"<TIME>");
                i += 20;
                continue;
            }
            if rest.len() >= 5 && rest[0] == b'.' && rest[1..4].iter().all(u8::is_ascii_digit) && rest[4] == b'Z' {
                out.extend_from_slice(b"<TIME-MS>");
                i += 24;
                continue;
            }
            let _ = secs;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// Rule 6: `.corrupt-YYYYmmdd-HHMMSS` → `.corrupt-<STAMP>`.
fn stamps(bytes: &[u8]) -> Vec<u8> {
    const MARK: &[u8] = b".corrupt-";
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(MARK) {
            let stamp = &bytes[i + MARK.len()..];
            let shaped = stamp.len() >= 15
                && stamp[..8].iter().all(u8::is_ascii_digit)
                && stamp[8] == b'-'
                && stamp[9..15].iter().all(u8::is_ascii_digit);
            if shaped {
                out.extend_from_slice(b".corrupt-<STAMP>");
                i += MARK.len() + 15;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// Rule 7: the integer after `"createdAt":` (when within 24 h of the start) → `<EPOCH>`; after `"lifeSeconds":`,
/// `"waitedSeconds":` (issue 24's intake lines), `"ageSeconds":` (`queue --json`) and in `life=<n>s` → `<SECS>`. The JSON forms are matched with and without the space after the colon, as
/// the registry is pretty-printed and the hook log compact.
fn durations(bytes: &[u8], start: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some((skip, token)) = duration_at(bytes, i, start) {
            out.extend_from_slice(&bytes[i..i + skip.0]);
            out.extend_from_slice(token);
            i += skip.0 + skip.1;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// At `bytes[i]`: (length of the kept prefix, length of the number) and the token, when a rule-7 form starts.
fn duration_at(bytes: &[u8], i: usize, start: i64) -> Option<((usize, usize), &'static [u8])> {
    let rest = &bytes[i..];
    for (key, token, recent_only) in [
        (&b"\"createdAt\":"[..], &b"<EPOCH>"[..], true),
        (&b"\"lifeSeconds\":"[..], &b"<SECS>"[..], false),
        (&b"\"waitedSeconds\":"[..], &b"<SECS>"[..], false),
        (&b"\"ageSeconds\":"[..], &b"<SECS>"[..], false),
    ] {
        if let Some(after) = rest.strip_prefix(key) {
            let space = usize::from(after.first() == Some(&b' '));
            let digits = after[space..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            let value: i64 = std::str::from_utf8(&after[space..space + digits]).ok()?.parse().ok()?;
            if recent_only && (value - start).abs() > RECENT_SECS {
                return None;
            }
            return Some(((key.len() + space, digits), token));
        }
    }
    let after = rest.strip_prefix(b"life=")?;
    let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
    (digits > 0 && after.get(digits) == Some(&b's')).then_some(((5, digits), &b"<SECS>"[..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: i64 = 1_800_000_000; // 2027-01-15T08:00:00Z

    fn norm(text: &str, tokens: &Tokens) -> String {
        String::from_utf8(normalize(text.as_bytes(), tokens)).unwrap()
    }

    fn base() -> Tokens {
        Tokens { start: START, ..Tokens::default() }
    }

    #[test]
    fn paths_longest_first_then_socket() {
        let mut t = base();
        t.paths = vec![("/r".into(), "<ROOT>"), ("/r/home/agent".into(), "<HOME>")];
        t.socket = Some("abt-1-2".into());
        assert_eq!(norm("/r/home/agent/x /r/bin abt-1-2", &t), "<HOME>/x <ROOT>/bin <SOCKET>");
    }

    #[test]
    fn minted_names_keep_their_key() {
        assert_eq!(minted_token("hook-acme-widgets-3fa9"), "hook-acme-widgets-<HEX4>");
        assert_eq!(minted_token("hook-0a1b2c3d"), "hook-<HEX8>");
        assert_eq!(minted_token("main"), "main");
        let mut t = base();
        t.minted = vec!["hook-acme-9f0e".into()];
        assert_eq!(
            norm("'hook-acme-9f0e' filter.agent-hook-acme-9f0e.json", &t),
            "'hook-acme-<HEX4>' filter.agent-hook-acme-<HEX4>.json"
        );
    }

    #[test]
    fn uuids_are_numbered_by_first_appearance() {
        let a = "0f6c2a9e-3b1d-4c57-9a0e-5d2f8b7c1e43";
        let b = "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f";
        let text = format!("{a} {b} {a} A{a} x{b}0");
        assert_eq!(norm(&text, &base()), format!("<UUID-1> <UUID-2> <UUID-1> A<UUID-1> x{b}0"));
        assert_eq!(norm("0F6C2A9E-3B1D-4C57-9A0E-5D2F8B7C1E43", &base()), "0F6C2A9E-3B1D-4C57-9A0E-5D2F8B7C1E43");
    }

    #[test]
    fn only_recent_times_become_tokens() {
        let now = base::time::format_iso(START + 60);
        let now_ms = format!("{}.000Z", &now[..19]);
        let text = format!("{now} {now_ms} 2001-09-09T01:46:40Z {}", base::time::format_iso(START + 2 * 86_400));
        assert_eq!(
            norm(&text, &base()),
            format!("<TIME> <TIME-MS> 2001-09-09T01:46:40Z {}", base::time::format_iso(START + 2 * 86_400))
        );
    }

    #[test]
    fn stamps_and_durations() {
        let text = format!(
            "sessions.json.corrupt-20270115-080102-2 \"createdAt\": {} \"createdAt\": 978307200 \"lifeSeconds\":12 life=7s life=-",
            START + 5
        );
        assert_eq!(
            norm(&text, &base()),
            "sessions.json.corrupt-<STAMP>-2 \"createdAt\": <EPOCH> \"createdAt\": 978307200 \"lifeSeconds\":<SECS> life=<SECS>s life=-"
        );
    }
}
