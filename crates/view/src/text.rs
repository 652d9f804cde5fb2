//! Text for a terminal (50-session-cli §3.8): control characters shown as `?`, long rejected names cut, notes
//! folded, raw values shown as compact JSON, columns padded.

use serde_json::Value;

/// Every control character (U+0000–U+001F, U+007F) becomes `?`.
pub fn visible(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_control() { '?' } else { c }).collect()
}

/// A rejected name as echoed in a message: control characters as `?`, cut to 200 characters plus `…`.
pub fn echoed_name(text: &str) -> String {
    let shown = visible(text);
    if shown.chars().count() > 200 { format!("{}…", shown.chars().take(200).collect::<String>()) } else { shown }
}

/// A note folded to one line: every control character (CR, LF, TAB included) becomes a space, cut to 200
/// characters (§5.4).
pub fn folded_note(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(200).collect()
}

/// A raw value (a `died`, a lease field) as its compact JSON text (`1`, `"x"`, `false`), the form §3.13 displays.
pub fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// `text` left-aligned in `width` characters; a longer text is never cut (`%-Ns`).
pub fn pad(text: &str, width: usize) -> String {
    format!("{text:<width$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_as_question_marks() {
        assert_eq!(visible("a\u{1b}[2J\r\n\u{7f}b"), "a?[2J???b");
        assert_eq!(visible("é"), "é");
    }

    #[test]
    fn long_names_are_cut_at_200_characters() {
        let long = "x".repeat(250);
        let echoed = echoed_name(&long);
        assert_eq!(echoed.chars().count(), 201);
        assert!(echoed.ends_with('…'));
        assert_eq!(echoed_name("short"), "short");
    }

    #[test]
    fn notes_fold_to_one_line() {
        assert_eq!(folded_note("a\tb\nc"), "a b c");
        assert_eq!(folded_note(&"n".repeat(300)).len(), 200);
    }

    #[test]
    fn raw_values_show_as_compact_json() {
        assert_eq!(compact(&Value::from(1)), "1");
        assert_eq!(compact(&Value::from("x")), "\"x\"");
        assert_eq!(compact(&Value::Bool(false)), "false");
    }

    #[test]
    fn padding_never_cuts() {
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(pad("abcdef", 4), "abcdef");
        assert_eq!(pad("é", 3), "é  ", "pads by characters, not bytes");
    }
}
