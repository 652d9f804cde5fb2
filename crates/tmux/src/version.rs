//! Reads `tmux -V` output, so the supervisor can refuse a tmux older than 3.2.

/// `(major, minor)` from `tmux 3.3a`, `tmux 3.2`, `tmux next-3.4` or `tmux 3.4-rc`; `None` for anything
/// else (`tmux master`, `tmux openbsd-7.4`: an OpenBSD release number is not a tmux version).
pub fn parse_version(output: &str) -> Option<(u32, u32)> {
    let release = output.lines().next()?.trim().strip_prefix("tmux ")?.trim();
    let release = release.strip_prefix("next-").unwrap_or(release);
    let (major, rest) = release.split_once('.')?;
    let minor_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    Some((parse_number(major)?, parse_number(&rest[..minor_len])?))
}

fn parse_number(digits: &str) -> Option<u32> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_releases_and_next_builds() {
        assert_eq!(parse_version("tmux 3.3a\n"), Some((3, 3)));
        assert_eq!(parse_version("tmux 3.2"), Some((3, 2)));
        assert_eq!(parse_version("tmux next-3.4"), Some((3, 4)));
        assert_eq!(parse_version("tmux 3.4-rc"), Some((3, 4)));
        assert_eq!(parse_version("tmux 2.9a"), Some((2, 9)));
        assert_eq!(parse_version("tmux 10.12"), Some((10, 12)));
    }

    #[test]
    fn unparsable_output_is_none() {
        for text in
            ["tmux master", "tmux openbsd-7.4", "", "tmux", "tmux 3", "tmux 3.", "tmux .3", "screen 4.9", "tmux +3.3"]
        {
            assert_eq!(parse_version(text), None, "{text:?}");
        }
    }
}
