//! A one-entry edit whose cost does not grow with the registry (issue 12), for the pane epilogue.
//!
//! [`Document`](crate::Document) parses the whole file into an order-preserving tree and writes all of it again;
//! with 200 entries that is 97 % of the epilogue's instructions, for a change of one line. Here the file is only
//! *recognised*: one pass over its bytes checks that they are exactly what `Document::to_bytes` writes (two-space
//! pretty JSON, `": "`, one trailing newline) for a document in a plain subset of JSON, and finds the entry. The
//! entry alone is then parsed, edited and serialised, and its bytes are replaced in place.
//!
//! The result is byte-identical to `to_bytes` of the whole document edited the same way, because pretty printing
//! is compositional: a value nested at depth d is its stand-alone pretty form with `2·d` more spaces after each
//! newline, and a newline inside a string is always written as `\n`, never raw. The plain subset is what keeps the
//! recognition exact, since for it the bytes of every value are the only ones `to_bytes` would write:
//! - strings hold no control character and no `\u` escape; the only escapes are `\"` `\\` `\b` `\f` `\n` `\r` `\t`
//!   (so two keys are equal exactly when their bytes are);
//! - numbers are integers of at most 18 digits without a leading zero, never `-0` (they round-trip exactly);
//! - no object has a key twice, and nothing nests deeper than [`MAX_DEPTH`].
//!
//! Anything else — a compact or hand-formatted file, a float, a `\u` escape, a duplicate key — is not recognised
//! ([`Canonical::scan`] returns `None`) and the caller takes the full path, so the fast path never decides anything
//! the full parse would decide differently (validity included).

use std::ops::Range;

use serde_json::{Map, Value};

use base::name::SessionName;

/// Deeper nesting is left to the full parser (serde_json stops at 128).
pub const MAX_DEPTH: usize = 64;

/// The longest integer the subset admits: 18 digits always fit in an `i64` or `u64` and are written back unchanged.
const MAX_DIGITS: usize = 18;

/// What the registry holds at `sessions.<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// No such key.
    Absent,
    /// The key holds something other than an object.
    NotObject,
    /// The key holds an object at these bytes.
    Object(Range<usize>),
}

/// A registry file recognised as canonical, with the place of one entry.
#[derive(Debug, Clone)]
pub struct Canonical<'a> {
    bytes: &'a [u8],
    found: Found,
}

impl<'a> Canonical<'a> {
    /// Recognises `bytes` and finds `sessions.<name>`; `None` when the bytes are not the canonical form of a valid
    /// registry in the plain subset (the caller then parses the whole document).
    pub fn scan(bytes: &'a [u8], name: &SessionName) -> Option<Self> {
        std::str::from_utf8(bytes).ok()?;
        let path = [b"sessions".as_slice(), name.as_str().as_bytes()];
        let mut scanner = Scanner { bytes, at: 0, path, found: None, keys: Vec::with_capacity(64) };
        scanner.object(0, true)?;
        if bytes.get(scanner.at..)? != b"\n" {
            return None;
        }
        // RG-6.3: a valid registry has a `sessions` object; without one the full path reads it as Invalid.
        let found = scanner.found?;
        Some(Self { bytes, found })
    }

    pub fn found(&self) -> &Found {
        &self.found
    }

    /// The entry as a map (only an object entry has one).
    pub fn entry(&self) -> Option<Map<String, Value>> {
        let Found::Object(range) = &self.found else { return None };
        serde_json::from_slice(self.bytes.get(range.clone())?).ok()
    }

    /// The file with the entry replaced by `entry`, exactly as `Document::to_bytes` writes the document with that
    /// entry, as three parts: the bytes before the entry, the entry, the bytes after it.
    pub fn with_entry(&self, entry: &Map<String, Value>) -> Option<Edited<'a>> {
        let Found::Object(range) = &self.found else { return None };
        let pretty = serde_json::to_vec_pretty(entry).ok()?;
        // The entry sits at depth 2 (root object, `sessions`): four more spaces after each of its newlines.
        let mut nested = Vec::with_capacity(pretty.len() + pretty.len() / 4);
        for &byte in &pretty {
            nested.push(byte);
            if byte == b'\n' {
                nested.extend_from_slice(b"    ");
            }
        }
        Some(Edited { before: self.bytes.get(..range.start)?, entry: nested, after: self.bytes.get(range.end..)? })
    }
}

/// A registry file after a one-entry edit, in three parts (written and compared without joining them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited<'a> {
    before: &'a [u8],
    entry: Vec<u8>,
    after: &'a [u8],
}

impl Edited<'_> {
    pub fn parts(&self) -> [&[u8]; 3] {
        [self.before, &self.entry, self.after]
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.parts().concat()
    }
}

/// One pass over the bytes; every method returns `None` at the first byte that is not canonical.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The keys leading to the entry: `sessions`, then the name.
    path: [&'a [u8]; 2],
    /// Set once `sessions` was seen as an object: what it holds at the name.
    found: Option<Found>,
    /// The keys of the objects being scanned, innermost last (one buffer for the whole file).
    keys: Vec<&'a [u8]>,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat_byte(&mut self, expected: u8) -> Option<()> {
        (self.peek()? == expected).then(|| self.at += 1)
    }

    /// A newline and the indentation of `depth` levels. Up to depth 3 (every line of a registry written by the
    /// workspace but those inside an entry's nested values) one word compare instead of a loop.
    fn line(&mut self, depth: usize) -> Option<()> {
        const NEWLINE_THEN_SPACES: u64 = u64::from_le_bytes(*b"\n       ");
        let width = 1 + 2 * depth;
        if let (true, Some(chunk)) = (width < 8, self.bytes.get(self.at..self.at + 8)) {
            let mask = (1u64 << (8 * width)) - 1;
            return ((word_of(chunk) ^ NEWLINE_THEN_SPACES) & mask == 0).then(|| self.at += width);
        }
        self.eat_byte(b'\n')?;
        let end = self.at.checked_add(width - 1)?;
        self.bytes.get(self.at..end)?.iter().all(|&b| b == b' ').then(|| self.at = end)
    }

    fn value(&mut self, depth: usize, on_path: bool) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(depth, on_path),
            b'[' => self.array(depth),
            b'"' => self.string().map(drop),
            b't' | b'f' | b'n' => self.literal(),
            _ => self.number(),
        }
    }

    /// `{}` or `{` (newline, indent, key, `": "`, value)+ separated by `,` then newline, indent, `}`. `on_path`: this
    /// object is the root (depth 0) or `sessions` (depth 1), where the entry's keys are looked for.
    fn object(&mut self, depth: usize, on_path: bool) -> Option<()> {
        self.eat_byte(b'{')?;
        if self.eat_byte(b'}').is_some() {
            self.note_empty(depth, on_path);
            return Some(());
        }
        let first_key = self.keys.len();
        loop {
            self.line(depth + 1)?;
            let key = self.string()?;
            self.eat_byte(b':')?;
            self.eat_byte(b' ')?;
            let wanted = on_path && self.path.get(depth).is_some_and(|want| *want == key);
            let start = self.at;
            self.value(depth + 1, wanted)?;
            if wanted {
                self.note(depth, start);
            }
            self.keys.push(key);
            if self.eat_byte(b',').is_none() {
                break;
            }
        }
        self.line(depth)?;
        self.eat_byte(b'}')?;
        if has_duplicates(self.keys.get_mut(first_key..)?) {
            return None;
        }
        self.keys.truncate(first_key);
        if on_path && depth == 1 && self.found.is_none() {
            self.found = Some(Found::Absent);
        }
        Some(())
    }

    /// An empty `sessions` holds no entry; an empty root has no `sessions` (`found` stays unset: not valid).
    fn note_empty(&mut self, depth: usize, on_path: bool) {
        if on_path && depth == 1 {
            self.found = Some(Found::Absent);
        }
    }

    /// The value of a wanted key was scanned from `start`: the entry (depth 1), or `sessions` (depth 0) when it was
    /// not an object (then the document is not valid and `found` stays unset).
    fn note(&mut self, depth: usize, start: usize) {
        if depth == 1 {
            let object = self.bytes.get(start) == Some(&b'{');
            self.found = Some(if object { Found::Object(start..self.at) } else { Found::NotObject });
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        self.eat_byte(b'[')?;
        if self.eat_byte(b']').is_some() {
            return Some(());
        }
        loop {
            self.line(depth + 1)?;
            self.value(depth + 1, false)?;
            if self.eat_byte(b',').is_none() {
                break;
            }
        }
        self.line(depth)?;
        self.eat_byte(b']')
    }

    /// `true`, `false` or `null` (byte patterns, which compile to inline compares).
    fn literal(&mut self) -> Option<()> {
        let rest = self.bytes.get(self.at..)?;
        let len = match rest {
            [b't', b'r', b'u', b'e', ..] | [b'n', b'u', b'l', b'l', ..] => 4,
            [b'f', b'a', b'l', b's', b'e', ..] => 5,
            _ => return None,
        };
        self.at += len;
        Some(())
    }

    /// A string in the subset; returns its bytes between the quotes. Works on locals: this is the hot loop.
    fn string(&mut self) -> Option<&'a [u8]> {
        let bytes = self.bytes;
        if bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let mut at = start;
        loop {
            at = skip_plain(bytes, at);
            match bytes.get(at) {
                Some(b'"') => {
                    self.at = at + 1;
                    return bytes.get(start..at);
                }
                Some(b'\\') => match bytes.get(at + 1) {
                    Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => at += 2,
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// `0`, or up to 18 digits not starting with 0, optionally after `-`; never `-0`.
    fn number(&mut self) -> Option<()> {
        let negative = self.eat_byte(b'-').is_some();
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        let digits = self.bytes.get(start..self.at)?;
        let plain = match digits {
            [b'0'] => !negative,
            [first, ..] => *first != b'0' && digits.len() <= MAX_DIGITS,
            [] => false,
        };
        // A fraction or an exponent would follow here; the subset has none.
        (plain && !matches!(self.peek(), Some(b'.' | b'e' | b'E'))).then_some(())
    }
}

/// The position of the first byte at or after `at` that ends a plain run inside a string: `"`, `\\` or a control
/// character (or the end). Eight bytes at a time: strings are most of a registry's bytes.
fn skip_plain(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte that is zero; a false mark can only sit above a true one, so the lowest is exact.
    let zero_bytes = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = word_of(chunk);
        // A byte below 0x20 (subtracting 0x20 borrows), a quote or a backslash (XOR makes it zero).
        let special = (word.wrapping_sub(ONES * 0x20) & !word & HIGHS)
            | zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')));
        if special != 0 {
            return at + (special.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&byte) = bytes.get(at) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        at += 1;
    }
    at
}

/// Eight bytes as a little-endian word (`chunk` holds at least eight).
fn word_of(chunk: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    if let Some(head) = chunk.get(..8) {
        word.copy_from_slice(head);
    }
    u64::from_le_bytes(word)
}

/// True when two keys of one object are equal (in the subset, equal strings have equal bytes). Keys are first told
/// apart by a tag of their length and end bytes in a small open-addressing table; only when two tags meet are whole
/// keys compared, so an entry's usual dozen distinct keys cost a dozen table probes.
fn has_duplicates(keys: &mut [&[u8]]) -> bool {
    const SLOTS: usize = 32;
    if keys.len() > SLOTS / 2 {
        keys.sort_unstable();
        return keys.windows(2).any(|pair| pair[0] == pair[1]);
    }
    let mut table = [0u64; SLOTS];
    for key in keys.iter() {
        let ends = u64::from(key.first().copied().unwrap_or(0)) << 8 | u64::from(key.last().copied().unwrap_or(0));
        // Never 0, which marks a free slot.
        let tag = ((key.len() as u64) << 16 | ends) + 1;
        let mut slot = (tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59) as usize;
        loop {
            match table[slot] {
                0 => {
                    table[slot] = tag;
                    break;
                }
                seen if seen == tag => return keys.iter().enumerate().any(|(i, a)| keys[i + 1..].contains(a)),
                _ => slot = (slot + 1) % SLOTS,
            }
        }
    }
    false
}

#[cfg(test)]
mod tests;
