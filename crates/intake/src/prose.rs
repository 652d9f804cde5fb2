//! Text made safe for prompts, notes and messages (60-webhook-spawn §9.3), and the quoted size that bounds
//! the prompt (§7.5).

/// Every control character becomes a space, then the text is cut to `max` bytes at a character boundary.
pub fn prose(text: &str, max: usize) -> String {
    let spaced: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    cut(&spaced, max).to_owned()
}

/// The longest prefix of `text` of at most `max` bytes ending at a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// UTF-8 bytes with each `'` counted as 4: what the text costs once the pane script single-quotes it.
pub fn quoted_size(text: &str) -> usize {
    text.len() + 3 * text.bytes().filter(|b| *b == b'\'').count()
}

/// The longest prefix of `text` whose quoted size is at most `max`, at a character boundary.
pub fn cut_quoted(text: &str, max: usize) -> &str {
    let mut size = 0;
    for (at, c) in text.char_indices() {
        size += if c == '\'' { 4 } else { c.len_utf8() };
        if size > max {
            return &text[..at];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_replaces_controls_and_cuts_at_a_boundary() {
        assert_eq!(prose("a\tb\nc\u{1b}", 100), "a b c ");
        assert_eq!(prose("ééé", 5), "éé");
    }

    #[test]
    fn quotes_cost_four() {
        assert_eq!(quoted_size("a'b"), 6);
        assert_eq!(cut_quoted("ab'cd", 5), "ab");
        assert_eq!(cut_quoted("ab'cd", 6), "ab'");
        assert_eq!(cut_quoted("é'", 2), "é");
    }
}
