//! The extra arguments the claude harness gets before its prompt (issue 25). agent-box starts claude as
//! `claude <its own flags> <extra args> -- <prompt>`. claude parses its command line with commander, which gives an
//! option declared with a required value (`--model <model>`, `--add-dir <directories...>`) the next word whatever
//! it is, `--` included; a variadic one then takes the words after it too. Extra arguments that end in such an
//! option therefore hand it the `--` and the prompt: the prompt is lost and claude exits 1 (a directory `--`, a
//! model `--`). Every writer of extra arguments refuses such a list with this one check (docs/reference.md,
//! "Extra arguments for claude").

/// claude's options that require a value, as `claude --help` declares them (`<value>` or `<values...>`), both
/// spellings where it has two. The options whose value is optional (`-r, --resume [value]`, `-d, --debug
/// [filter]`) never take a word that starts with `-`, so the `--` before the prompt stops them: they are not here.
pub const VALUE_OPTIONS: [&str; 25] = [
    "--add-dir",
    "--agent",
    "--agents",
    "--allowedTools",
    "--allowed-tools",
    "--append-system-prompt",
    "--betas",
    "--disallowedTools",
    "--disallowed-tools",
    "--fallback-model",
    "--input-format",
    "--json-schema",
    "--max-budget-usd",
    "--max-turns",
    "--mcp-config",
    "--model",
    "--output-format",
    "--permission-mode",
    "--permission-prompt-tool",
    "--plugin-dir",
    "--session-id",
    "--setting-sources",
    "--settings",
    "--system-prompt",
    "--tools",
];

/// The option of [`VALUE_OPTIONS`] that `args` leave without its value, read as commander reads them: a listed
/// option takes the next word (whatever it is) as its value, `--option=value` carries its own, and after a bare
/// `--` every word is an operand. `None` when nothing is left waiting for a value.
pub fn dangling_value_option(args: &[String]) -> Option<&'static str> {
    let mut waiting: Option<&'static str> = None;
    for word in args {
        if waiting.take().is_some() {
            continue;
        }
        if word == "--" {
            return None;
        }
        waiting = VALUE_OPTIONS.iter().copied().find(|option| option == word);
    }
    waiting
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &[&str]) -> Vec<String> {
        text.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn a_value_option_at_the_end_dangles() {
        for option in VALUE_OPTIONS {
            assert_eq!(dangling_value_option(&words(&[option])), Some(option));
            assert_eq!(dangling_value_option(&words(&["--verbose", option])), Some(option));
            assert_eq!(dangling_value_option(&words(&[option, "v"])), None, "{option} has its value");
        }
    }

    #[test]
    fn values_attached_consumed_or_after_the_separator_do_not() {
        assert_eq!(dangling_value_option(&[]), None);
        assert_eq!(dangling_value_option(&words(&["--model=sonnet"])), None);
        assert_eq!(dangling_value_option(&words(&["--add-dir", "/a", "/b"])), None, "variadic, then the separator");
        // commander gives a required value the next word even when it looks like an option.
        assert_eq!(dangling_value_option(&words(&["--append-system-prompt", "--model"])), None);
        assert_eq!(dangling_value_option(&words(&["--model", "--add-dir", "--add-dir"])), Some("--add-dir"));
        assert_eq!(dangling_value_option(&words(&["--", "--model"])), None, "an operand after --");
        for optional in ["--resume", "-r", "--debug", "-d", "--verbose", "-p"] {
            assert_eq!(dangling_value_option(&words(&[optional])), None, "{optional}");
        }
    }
}
