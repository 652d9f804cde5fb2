//! Shell quoting, the one quoter of the workspace, with its two rules of which bytes stay bare:
//! - [`quote`] is `Q` of 30-supervisor §12.6, the only way a variable byte string enters a pane script. `=` is
//!   quoted: a bare `a=b` in command position is an assignment.
//! - [`quote_arg`] is the rule of 60-webhook-spawn §10.2 (`--preamble` prints the launch command), also used by
//!   the harness and xtask to echo commands for a person to copy: `=` stays bare (`--model=sonnet`), which is
//!   safe there because such a word never stands in command position.
//!
//! Either way a word that is not bare is single-quoted with each `'` written as `'\''`.

/// The bytes a word may consist of and still be written bare by [`quote`]: none of them means anything to POSIX
/// sh in any position.
pub fn is_bare_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'@' | b'%' | b'+' | b':' | b',' | b'.' | b'/' | b'-')
}

/// The bytes [`quote_arg`] leaves bare: those of [`is_bare_byte`] and `=`.
pub fn is_bare_arg_byte(byte: u8) -> bool {
    is_bare_byte(byte) || byte == b'='
}

/// `Q(arg)`: bare when non-empty and every byte is safe, else single-quoted with each `'` as `'\''`.
pub fn quote(arg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(arg.len() + 2);
    push_quoted(&mut out, arg);
    out
}

/// `$ ` followed by the variables set on `cmd` (as `KEY=value`, only the value quoted so it stays an
/// assignment), the program and its arguments, each word shell-quoted: the line xtask and the bench echo before
/// running a command, so a log can be replayed by copy and paste. Removed variables are not shown.
pub fn command_line(cmd: &std::process::Command) -> String {
    let envs = cmd.get_envs().filter_map(|(key, value)| {
        value.map(|v| format!("{}={}", key.to_string_lossy(), quote_arg(&v.to_string_lossy())))
    });
    let argv = std::iter::once(cmd.get_program()).chain(cmd.get_args()).map(|w| quote_arg(&w.to_string_lossy()));
    let words: Vec<String> = envs.chain(argv).collect();
    format!("$ {}", words.join(" "))
}

/// A word after the command (an argument, an environment value) for a person to read or copy (§10.2).
pub fn quote_arg(word: &str) -> String {
    let mut out = Vec::with_capacity(word.len() + 2);
    push_with(&mut out, word.as_bytes(), is_bare_arg_byte);
    // Quoting only adds ASCII around and between whole UTF-8 sequences, so the text stays UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends `Q(arg)` to `out`.
pub fn push_quoted(out: &mut Vec<u8>, arg: &[u8]) {
    push_with(out, arg, is_bare_byte);
}

fn push_with(out: &mut Vec<u8>, arg: &[u8], bare: fn(u8) -> bool) {
    // Byte by byte, never a line-anchored pattern: `j\n` must not pass as bare (§12.6).
    if !arg.is_empty() && arg.iter().all(|&b| bare(b)) {
        out.extend_from_slice(arg);
        return;
    }
    out.push(b'\'');
    for &byte in arg {
        if byte == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(byte);
        }
    }
    out.push(b'\'');
}

/// The words `Q(a1) Q(a2) …`, separated by single spaces.
pub fn push_words<'a>(out: &mut Vec<u8>, words: impl IntoIterator<Item = &'a [u8]>) {
    for (index, word) in words.into_iter().enumerate() {
        if index > 0 {
            out.push(b' ');
        }
        push_quoted(out, word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use std::process::Command;

    fn q(text: &str) -> String {
        String::from_utf8(quote(text.as_bytes())).unwrap()
    }

    #[test]
    fn bare_words_stay_bare_and_everything_else_is_single_quoted() {
        for bare in
            ["abc", "/opt/claude/bin/claude", "a_b@c%d+e:f,g.h/i-j", "-n", "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90"]
        {
            assert_eq!(q(bare), bare);
        }
        assert_eq!(q(""), "''");
        assert_eq!(q("a=b"), "'a=b'", "a bare assignment in command position would be an assignment");
        assert_eq!(q("it's"), r"'it'\''s'");
        assert_eq!(q("'"), r"''\'''");
        assert_eq!(q("~root"), "'~root'");
        assert_eq!(q("$(id)"), "'$(id)'");
        assert_eq!(q("opus[1m]"), "'opus[1m]'");
    }

    #[test]
    fn every_byte_is_tested_alone() {
        assert_eq!(quote(b"j\n"), b"'j\n'");
        assert_eq!(quote(b"\nj"), b"'\nj'");
        assert_eq!(quote(b"a\xffb"), b"'a\xffb'");
        for byte in 0u8..=255 {
            let expected_bare = byte.is_ascii_alphanumeric() || b"_@%+:,./-".contains(&byte);
            assert_eq!(is_bare_byte(byte), expected_bare, "byte {byte:#04x}");
        }
    }

    #[test]
    fn arguments_also_keep_equals_signs_bare() {
        for (word, quoted) in [
            ("--model=sonnet", "--model=sonnet"),
            ("cargo", "cargo"),
            ("nix/package.nix", "nix/package.nix"),
            ("-D", "-D"),
            ("", "''"),
            ("a b", "'a b'"),
            ("*.nix", "'*.nix'"),
            ("$HOME", "'$HOME'"),
            ("it's", r"'it'\''s'"),
            ("~", "'~'"),
            ("é", "'é'"),
        ] {
            assert_eq!(quote_arg(word), quoted, "{word:?}");
        }
        for byte in 0u8..=255 {
            assert_eq!(is_bare_arg_byte(byte), is_bare_byte(byte) || byte == b'=', "byte {byte:#04x}");
        }
    }

    #[test]
    fn words_are_joined_by_single_spaces() {
        let mut out = Vec::new();
        push_words(&mut out, [b"a".as_slice(), b"b c", b""]);
        assert_eq!(out, b"a 'b c' ''");
    }

    /// Runs `sh -c "printf '%s\0' Q(a1) …; …"` for a batch of vectors; returns what printf wrote.
    fn sh_printf(vectors: &[Vec<Vec<u8>>]) -> Vec<u8> {
        let mut script = Vec::new();
        for vector in vectors {
            script.extend_from_slice(b"printf '%s\\0' ");
            push_words(&mut script, vector.iter().map(Vec::as_slice));
            script.push(b'\n');
        }
        let output = Command::new("/bin/sh").arg("-c").arg(std::ffi::OsStr::from_bytes(&script)).output().unwrap();
        assert!(output.status.success(), "sh failed: {}", String::from_utf8_lossy(&output.stderr));
        output.stdout
    }

    use std::os::unix::ffi::OsStrExt;

    /// Checks a batch exactly; on a mismatch names the first vector that came out wrong.
    fn check_batch(vectors: &[Vec<Vec<u8>>], seed: Option<u64>) {
        let got = sh_printf(vectors);
        let expected: Vec<u8> = vectors.iter().flatten().flat_map(|arg| arg.iter().copied().chain([0])).collect();
        if got == expected {
            return;
        }
        let mut items = got.split(|&b| b == 0);
        for (index, vector) in vectors.iter().enumerate() {
            let seen: Vec<&[u8]> = items.by_ref().take(vector.len()).collect();
            let wanted: Vec<&[u8]> = vector.iter().map(Vec::as_slice).collect();
            assert_eq!(seen, wanted, "vector {index} of the batch (seed {seed:?}) did not round-trip");
        }
        panic!("output differs after the last vector (seed {seed:?})");
    }

    fn fixed_corpus() -> Vec<Vec<u8>> {
        let mut corpus: Vec<Vec<u8>> = [
            "",
            "'",
            "''",
            "\"",
            "\\",
            "$(id)",
            "`id`",
            "$?",
            "*",
            "~root",
            "#x",
            "a=b",
            "-n",
            "\n",
            "\r",
            "\t",
            "é",
            "日本語",
            "😀",
            "a b",
            "j\n",
            "'\\''",
            "${HOME}",
            "!",
            "&&",
            ";",
            "|",
            ">x",
            "<x",
            "(",
            ")",
            "{",
            "}",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        corpus.extend((0x01u8..=0x1f).chain([0x7f]).map(|b| vec![b]));
        corpus.extend([vec![0xff], vec![0xc3], b"a\x80b".to_vec(), vec![0xf0, 0x9f, 0x98]]);
        corpus.push(b"x".repeat(8192));
        corpus.push((0..8192u32).map(|i| (i % 255 + 1) as u8).collect());
        corpus
    }

    #[test]
    fn quoting_round_trips_through_sh_for_the_fixed_corpus() {
        let corpus = fixed_corpus();
        let singles: Vec<Vec<Vec<u8>>> = corpus.iter().map(|a| vec![a.clone()]).collect();
        check_batch(&singles, None);
        check_batch(&[corpus], None);
    }

    /// One generated argument: mostly short, sometimes long, drawn from bytes that matter to sh.
    fn random_arg(rng: &mut rand::rngs::StdRng) -> Vec<u8> {
        const SPECIAL: &[u8] = b"'\"\\$`*?[]~#=!&|;<>(){} \t\n\r%@+:,./-_";
        let len = match rng.random_range(0..100) {
            0 => rng.random_range(1000..8193),
            1..=9 => 0,
            _ => rng.random_range(1..24),
        };
        (0..len)
            .map(|_| match rng.random_range(0..4) {
                0 => SPECIAL[rng.random_range(0..SPECIAL.len())],
                1 => rng.random_range(b'a'..=b'z'),
                _ => rng.random_range(1u8..=255),
            })
            .collect()
    }

    #[test]
    fn quoting_round_trips_through_sh_for_random_vectors() {
        let seed = std::env::var("AGENT_BOX_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
        eprintln!("quoting property test seed {seed} (replay with AGENT_BOX_TEST_SEED={seed})");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut batch = Vec::new();
        let mut batch_bytes = 0;
        for _ in 0..10_000 {
            // At least one argument: `printf '%s\0'` with none prints one empty item.
            let vector: Vec<Vec<u8>> = (0..rng.random_range(1..8)).map(|_| random_arg(&mut rng)).collect();
            let bytes = vector.iter().map(|a| quote(a).len() + 1).sum::<usize>() + 16;
            // One `sh -c` argument must stay under the kernel's 128 KiB limit.
            if batch.len() == 100 || batch_bytes + bytes > 96 * 1024 {
                check_batch(&batch, Some(seed));
                batch.clear();
                batch_bytes = 0;
            }
            batch_bytes += bytes;
            batch.push(vector);
        }
        if !batch.is_empty() {
            check_batch(&batch, Some(seed));
        }
    }
}
