//! Terminal safety for text output (50-session-cli §3.8): control characters shown as `?`, long rejected names cut.

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
}
