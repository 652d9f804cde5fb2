//! Hand-parsed argv `NAME STATUS [GEN|-|any [LIFE]]` (MS-4, issue 17): the name is validated before any path
//! exists.

use std::ffi::OsString;

use base::SessionName;
use lease::Expect;

/// What the pane reported.
#[derive(Debug, PartialEq)]
pub struct Report {
    pub name: SessionName,
    pub status: u32,
    pub expect: Expect,
    /// Which life the pane was started for (issue 17).
    pub life: Life,
}

/// The life a report belongs to (docs/lives.md L-6).
#[derive(Debug, PartialEq, Eq)]
pub enum Life {
    /// The fourth argument, kept as any text: one that is not the entry's life, mangled or not, matches nothing.
    Exact(String),
    /// No fourth argument (a pane of an older supervisor) but a GEN: a pane is only ever bound to the lease whose
    /// gen is its entry's life, so an entry that names another life is another life's; an entry naming none is
    /// this pane's only while that gen's lease is there for it (the registry step checks, L-6).
    FromGen(String),
    /// Neither: nothing to check, as before.
    Unknown,
}

/// `None` when there is nothing to record (no argument, or a NAME that is not a session name).
pub fn parse(argv: &[OsString]) -> Option<Report> {
    let name = SessionName::parse(argv.first()?.to_str()?).ok()?;
    let status = argv.get(1).map_or(0, |s| parse_status(s.to_str().unwrap_or("x")));
    let expect = match argv.get(2) {
        None => Expect::Any,
        Some(token) => token.to_str().map_or(Expect::Nothing, |t| Expect::from_arg(Some(t))),
    };
    let life = match (argv.get(3), &expect) {
        (Some(token), _) => Life::Exact(token.to_str().unwrap_or("?").to_owned()),
        (None, Expect::Gen(g)) => Life::FromGen(g.to_string()),
        (None, _) => Life::Unknown,
    };
    Some(Report { name, status, expect, life })
}

/// One to ten ASCII digits up to 2147483647; anything else reads as 1, never as a requested quit (MS-4.3).
pub fn parse_status(text: &str) -> u32 {
    let digits = !text.is_empty() && text.len() <= 10 && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u32>() {
        Ok(value) if digits && value <= 2_147_483_647 => value,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(parts: &[&str]) -> Vec<OsString> {
        parts.iter().map(OsString::from).collect()
    }

    #[test]
    fn status_table_of_ms_4_3() {
        for (text, want) in [
            ("0", 0),
            ("000", 0),
            ("7", 7),
            ("2147483647", 2_147_483_647),
            ("2147483648", 1),
            ("4294967296", 1),
            ("", 1),
            ("-1", 1),
            ("+3", 1),
            ("1x", 1),
            (" 1", 1),
            ("0x1", 1),
            ("00000000001", 1),
        ] {
            assert_eq!(parse_status(text), want, "{text:?}");
        }
    }

    #[test]
    fn absent_status_is_a_clean_exit_and_gen_forms() {
        let report = parse(&argv(&["main"])).unwrap();
        assert_eq!((report.status, report.expect), (0, Expect::Any));
        assert_eq!(parse(&argv(&["main", "3", "-"])).unwrap().expect, Expect::NoLease);
        assert_eq!(parse(&argv(&["main", "3", "nope"])).unwrap().expect, Expect::Nothing);
        let life = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";
        let report = parse(&argv(&["main", "3", "any", life, "ignored"])).unwrap();
        assert_eq!((report.status, report.expect, report.life), (3, Expect::Any, Life::Exact(life.to_owned())));
        assert_eq!(parse(&argv(&["main", "3", "-"])).unwrap().life, Life::Unknown);
        assert_eq!(parse(&argv(&["main", "3", life])).unwrap().life, Life::FromGen(life.to_owned()));
    }

    #[test]
    fn names_are_refused_before_any_path() {
        for bad in ["..", ".", "../x", "a/b", "/etc/passwd", "x y", "é", ""] {
            assert!(parse(&argv(&[bad, "0"])).is_none(), "{bad:?}");
        }
        assert!(parse(&[]).is_none());
        use std::os::unix::ffi::OsStringExt;
        assert!(parse(&[OsString::from_vec(vec![0xff]), OsString::from("0")]).is_none());
    }
}
