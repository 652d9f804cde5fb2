//! Shell quoting for what the harness and xtask print for a person to copy: echoed commands, golden captures.

/// Quotes `word` for a POSIX shell: unchanged when it holds only characters no shell treats specially,
/// otherwise wrapped in single quotes with each `'` written as `'\''`.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(is_shell_safe) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn is_shell_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_unquoted() {
        assert_eq!(shell_quote("cargo"), "cargo");
        assert_eq!(shell_quote("--all-targets"), "--all-targets");
        assert_eq!(shell_quote("nix/package.nix"), "nix/package.nix");
        assert_eq!(shell_quote("-D"), "-D");
    }

    #[test]
    fn special_words_are_single_quoted() {
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("*.nix"), "'*.nix'");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("~"), "'~'");
    }
}
