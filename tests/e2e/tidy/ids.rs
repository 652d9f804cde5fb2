//! Tidy checks that keep the repository readable without the spec: every id a comment or a test cites is
//! defined in `docs/`, test names say what they test (the ids go in a comment above), and the message tables of
//! `docs/reference.md` match the code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;

use super::{relative, workspace_root};

/// Families written with a dash and a section number: `RG-7.10`, `SUP-7.1`, `L-3` (docs/lives.md).
const DASHED: [&str; 15] = ["A", "CI", "GD", "IN", "L", "LS", "MS", "NX", "OV", "Q", "RG", "SUP", "TMX", "UP", "XT"];
/// Families written as letters and one or two digits: messages `M33`, log lines `L21`, scenarios `SV07`.
const PLAIN: [&str; 18] =
    ["CL", "D", "F", "H", "I", "L", "LS", "M", "MS", "Q", "RG", "S", "SV", "T", "UP", "W", "WH", "X"];
/// Families whose numbers mean different things in different spec files; a citation qualifies them with the
/// file's number (`80 I9`, `30 I6`, `90 F3`), and docs/ids.md defines them that way.
const QUALIFIED: [&str; 2] = ["I", "F"];
/// The numbers of the spec files, as a citation names them.
const SPEC_FILES: [&str; 11] = ["00", "10", "20", "30", "40", "50", "60", "70", "75", "80", "90"];
/// Families a test name may start with in lowercase, the docs spelling of each, and the number of digits it takes
/// (a scenario has two: `sv07`; a supervisor scenario, fault, security check, decision row or log line one or two).
const NAME_FAMILIES: [(&str, &str, &[usize]); 14] = [
    ("rg", "RG", &[2]),
    ("ls", "LS", &[2]),
    ("ms", "MS", &[2]),
    ("sv", "SV", &[2]),
    ("cl", "CL", &[2]),
    ("wh", "WH", &[2]),
    ("up", "UP", &[2]),
    ("x", "X", &[2]),
    ("h", "H", &[2]),
    ("i", "30 I", &[1, 2]),
    ("f", "90 F", &[1, 2]),
    ("s", "S", &[1, 2]),
    ("d", "D", &[1, 2]),
    ("l", "L", &[1, 2]),
];

/// Every `.rs` file of the workspace outside `target/` and `.git/`; unlike the other tidy checks this includes the
/// golden renderer (`tests/src/golden/`), whose comments cite ids too.
fn rust_files() -> Vec<PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if matches!(entry.file_name().to_str(), Some("target" | ".git")) {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&workspace_root(), &mut files);
    files.sort();
    files
}

/// Ids cited in `text`, in the docs spelling (`80 I9` when the citation names the file of an ambiguous id).
fn ids_in(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut ids = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let starts_word = at == 0 || !(chars[at - 1].is_ascii_alphanumeric() || chars[at - 1] == '_');
        match starts_word.then(|| id_at(&chars, at)).flatten() {
            Some((id, end)) => {
                ids.push(qualify(&chars[..at], &id));
                at = end;
            }
            None => at += 1,
        }
    }
    ids
}

/// The id starting at `at` and the index after it, if one does.
fn id_at(chars: &[char], at: usize) -> Option<(String, usize)> {
    let run = |from: usize, test: fn(&char) -> bool| chars[from..].iter().take_while(|c| test(c)).count();
    let letters = run(at, char::is_ascii_uppercase);
    let family: String = chars[at..at + letters].iter().collect();
    let mut end = at + letters;
    if chars.get(end) == Some(&'-') && DASHED.contains(&family.as_str()) {
        let digits = run(end + 1, char::is_ascii_digit);
        if digits == 0 {
            return None;
        }
        end += 1 + digits;
        while chars.get(end) == Some(&'.') && run(end + 1, char::is_ascii_digit) > 0 {
            end += 1 + run(end + 1, char::is_ascii_digit);
        }
    } else if PLAIN.contains(&family.as_str()) {
        let digits = run(end, char::is_ascii_digit);
        if !(1..=2).contains(&digits) {
            return None;
        }
        end += digits;
    } else {
        return None;
    }
    if chars.get(end).is_some_and(char::is_ascii_lowercase)
        && !chars.get(end + 1).is_some_and(char::is_ascii_alphanumeric)
    {
        end += 1;
    }
    if chars.get(end).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
        return None;
    }
    Some((chars[at..end].iter().collect(), end))
}

/// `id` prefixed with the spec file number written just before it (`80 I9`), for the ambiguous families.
fn qualify(before: &[char], id: &str) -> String {
    let family: String = id.chars().take_while(char::is_ascii_uppercase).collect();
    if !QUALIFIED.contains(&family.as_str()) || id.contains('-') {
        return id.to_owned();
    }
    let before: String = before.iter().collect();
    let word = before.strip_suffix(' ').unwrap_or(&before);
    let mut number: Vec<char> = word.chars().rev().take_while(char::is_ascii_digit).collect();
    number.reverse();
    let number: String = number.into_iter().collect();
    let boundary = word[..word.len() - number.len()].chars().next_back().is_none_or(|c| !c.is_ascii_alphanumeric());
    if number.len() == 2 && boundary && SPEC_FILES.contains(&number.as_str()) {
        format!("{number} {id}")
    } else {
        id.to_owned()
    }
}

/// The ids defined in `docs/*.md`: the first cell of a table row and the bold lead of a list item
/// (`- **L-3 A lease binds…**`), with the files defining each.
fn defined_ids() -> BTreeMap<String, Vec<String>> {
    let mut defined: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for entry in fs::read_dir(workspace_root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let file = relative(&path);
        for line in fs::read_to_string(&path).unwrap().lines() {
            for id in definitions_on(line) {
                defined.entry(id).or_default().push(file.clone());
            }
        }
    }
    defined
}

/// The ids a docs line defines.
fn definitions_on(line: &str) -> Vec<String> {
    let line = line.trim_start();
    let lead = if let Some(row) = line.strip_prefix('|') {
        row.split('|').next().unwrap_or("").trim().trim_matches('`').to_owned()
    } else if let Some(item) = line.strip_prefix("- **") {
        item.split("**").next().unwrap_or("").split(' ').next().unwrap_or("").to_owned()
    } else {
        return Vec::new();
    };
    lead.split(", ").map(str::trim).filter(|id| ids_in(id).len() == 1).map(str::to_owned).collect()
}

/// True when `cited` is defined: exactly, or (a bare id of an ambiguous family) in any file's qualified form.
fn resolves(cited: &str, defined: &BTreeMap<String, Vec<String>>) -> bool {
    if defined.contains_key(cited) {
        return true;
    }
    let bare = cited.rsplit(' ').next().unwrap_or(cited);
    !cited.contains(' ') && SPEC_FILES.iter().any(|file| defined.contains_key(&format!("{file} {bare}")))
}

/// A test function: its name, the file and the line of its `fn`, and the comment lines between it and the
/// code above (`// SV07, 30 I6`).
struct TestFn {
    name: String,
    file: PathBuf,
    line: usize,
    comments: Vec<String>,
}

/// Every function marked `#[test]` in the workspace.
fn test_functions() -> Vec<TestFn> {
    let mut tests = Vec::new();
    for file in rust_files() {
        let source = fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = source.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            if line.trim() != "#[test]" {
                continue;
            }
            let Some((offset, name)) = lines[at + 1..].iter().enumerate().find_map(|(i, l)| fn_name(l).map(|n| (i, n)))
            else {
                continue;
            };
            let comments = lines[..at]
                .iter()
                .rev()
                .map(|l| l.trim())
                .take_while(|l| l.starts_with("//") || l.starts_with("#["))
                .filter(|l| l.starts_with("// "))
                .map(|l| l.to_owned())
                .collect();
            tests.push(TestFn { name, file: file.clone(), line: at + offset + 2, comments });
        }
    }
    tests
}

/// The name of the function a line declares.
fn fn_name(line: &str) -> Option<String> {
    let rest = line.trim_start().trim_start_matches("pub ").trim_start_matches("async ").strip_prefix("fn ")?;
    Some(rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
}

/// The ids a test name starts with, in the docs spelling: `sv07_i6_killed` gives `SV07` and `30 I6`.
fn leading_ids(name: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut rest = name;
    loop {
        let letters: String = rest.chars().take_while(char::is_ascii_lowercase).collect();
        let digits: String = rest[letters.len()..].chars().take_while(char::is_ascii_digit).collect();
        let after = &rest[letters.len() + digits.len()..];
        let family =
            NAME_FAMILIES.iter().find(|(lower, _, counts)| *lower == letters && counts.contains(&digits.len()));
        let (Some((_, spelled, _)), Some(tail)) = (family, after.strip_prefix('_')) else {
            return ids;
        };
        ids.push(format!("{spelled}{digits}"));
        rest = tail;
    }
}

/// Every id cited in the workspace (Rust comments and test names), with one place citing it.
fn cited_ids() -> BTreeMap<String, String> {
    let mut cited = BTreeMap::new();
    for file in rust_files() {
        let source = fs::read_to_string(&file).unwrap();
        for (number, line) in source.lines().enumerate() {
            let texts: Vec<&str> = line.find("//").map(|at| &line[at..]).into_iter().collect();
            for id in
                texts.iter().flat_map(|t| ids_in(t)).chain(fn_name(line).map(|n| leading_ids(&n)).unwrap_or_default())
            {
                cited.entry(id).or_insert_with(|| format!("{}:{}", relative(&file), number + 1));
            }
        }
    }
    cited
}

/// Ids cited in the other files a reader meets: the `#` comments of the Nix files, shell scripts, manifests and
/// `.ci/run`, and the text of the README.
fn cited_outside_rust() -> BTreeMap<String, String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if matches!(entry.file_name().to_str(), Some("target" | ".git" | "golden" | "docs" | "fixtures")) {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "nix" || e == "sh" || e == "toml")
                || path.ends_with(".ci/run")
            {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&workspace_root(), &mut files);
    let mut cited = BTreeMap::new();
    for file in files {
        for (number, line) in fs::read_to_string(&file).unwrap().lines().enumerate() {
            for id in line.find('#').map(|at| ids_in(&line[at..])).unwrap_or_default() {
                cited.entry(id).or_insert_with(|| format!("{}:{}", relative(&file), number + 1));
            }
        }
    }
    let readme = fs::read_to_string(workspace_root().join("README.md")).unwrap();
    for (number, line) in readme.lines().enumerate() {
        for id in ids_in(line) {
            cited.entry(id).or_insert_with(|| format!("README.md:{}", number + 1));
        }
    }
    cited
}

#[test]
fn every_id_cited_in_code_or_tests_is_defined_in_docs() {
    let defined = defined_ids();
    let mut cited = cited_outside_rust();
    cited.extend(cited_ids());
    let missing: Vec<String> = cited
        .into_iter()
        .filter(|(id, _)| !resolves(id, &defined))
        .map(|(id, place)| format!("{id} (cited at {place})"))
        .collect();
    assert!(
        missing.is_empty(),
        "ids cited in code but defined nowhere in docs/ (add a row `| id | meaning |` to docs/ids.md): {missing:#?}"
    );
}

#[test]
fn no_test_function_name_starts_with_an_id() {
    let offenders: Vec<String> = test_functions()
        .into_iter()
        .filter(|t| !leading_ids(&t.name).is_empty())
        .map(|t| format!("{}:{} {}", relative(&t.file), t.line, t.name))
        .collect();
    assert!(
        offenders.is_empty(),
        "test names say what they test; put the ids in a comment line above #[test] (`// SV07, 30 I6`): {offenders:#?}"
    );
}

/// The acceptance scenarios of docs/ids.md (rows of the section `## Acceptance scenarios`), by id.
fn documented_scenarios() -> BTreeSet<String> {
    let ids = fs::read_to_string(workspace_root().join("docs/ids.md")).unwrap();
    let section = ids.split("\n## Acceptance scenarios").nth(1).unwrap().split("\n## ").next().unwrap().to_owned();
    section.lines().flat_map(definitions_on).collect()
}

/// The scenario ids the tests cite in the comment above `#[test]` (or, before the rename, at the start of the name).
fn tested_scenarios() -> BTreeSet<String> {
    let scenario = |id: &String| {
        let family: String = id.chars().take_while(char::is_ascii_uppercase).collect();
        let digits = id.len() - family.len();
        digits == 2 && ["RG", "LS", "MS", "SV", "CL", "WH", "X", "H", "UP"].contains(&family.as_str())
    };
    test_functions()
        .iter()
        .flat_map(|t| t.comments.iter().flat_map(|c| ids_in(c)).chain(leading_ids(&t.name)).collect::<Vec<_>>())
        .filter(scenario)
        .collect()
}

#[test]
fn every_documented_scenario_has_a_test_and_every_cited_scenario_is_documented() {
    let documented = documented_scenarios();
    let tested = tested_scenarios();
    let untested: Vec<_> = documented.difference(&tested).collect();
    let unknown: Vec<_> = tested.difference(&documented).collect();
    assert!(untested.is_empty(), "scenarios of docs/ids.md without a test citing them above #[test]: {untested:?}");
    assert!(unknown.is_empty(), "tests citing scenarios that docs/ids.md does not list: {unknown:?}");
}

/// The message ids a table of docs/reference.md lists (section `### <heading>`).
fn documented_messages(heading: &str) -> BTreeSet<String> {
    let reference = fs::read_to_string(workspace_root().join("docs/reference.md")).unwrap();
    let marker = format!("\n### {heading}");
    let section = reference.split(marker.as_str()).nth(1).unwrap().split("\n#").next().unwrap().to_owned();
    section.lines().flat_map(definitions_on).collect()
}

/// The message ids of `family` the comments under `dirs` name: each message's function or call site carries its id.
fn messages_in_code(dirs: &[&str], family: &str) -> BTreeSet<String> {
    let dirs: Vec<_> = dirs.iter().map(|dir| workspace_root().join(dir)).collect();
    rust_files()
        .into_iter()
        .filter(|file| dirs.iter().any(|dir| file.starts_with(dir)))
        .flat_map(|file| {
            let source = fs::read_to_string(file).unwrap();
            source.lines().filter_map(|l| l.find("//").map(|at| ids_in(&l[at..]))).flatten().collect::<Vec<_>>()
        })
        .filter(|id| id.strip_prefix(family).is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit())))
        .collect()
}

#[test]
fn the_message_tables_of_the_docs_match_the_code() {
    // The admission that webhook-spawn and the supervisor share (issue 24) words webhook-spawn's W lines.
    for (heading, dirs, family) in [
        ("agent-box-session messages", &["crates/session"][..], "M"),
        ("agent-box-webhook-spawn messages", &["crates/webhook-spawn", "crates/intake"][..], "W"),
        ("agent-box-supervisor log lines", &["crates/supervisor"][..], "L"),
    ] {
        let dir = dirs.join(" and ");
        let documented = documented_messages(heading);
        let coded = messages_in_code(dirs, family);
        let undocumented: Vec<_> = coded.difference(&documented).collect();
        let stale: Vec<_> = documented.difference(&coded).collect();
        assert!(undocumented.is_empty(), "{heading}: in {dir} but not in docs/reference.md: {undocumented:?}");
        assert!(stale.is_empty(), "{heading}: in docs/reference.md but no longer cited in {dir}: {stale:?}");
    }
}

#[test]
fn ids_are_read_as_the_docs_spell_them() {
    assert_eq!(ids_in("see SUP-7.1 step 8, RG-7.10. and M33"), ["SUP-7.1", "RG-7.10", "M33"]);
    assert_eq!(ids_in("(80 I9), =30 I6, 80 I3–I6, 90 F3"), ["80 I9", "30 I6", "80 I3", "I6", "90 F3"]);
    assert_eq!(ids_in("M20b; SUP-12.6a; L-1..L-14"), ["M20b", "SUP-12.6a", "L-1", "L-14"]);
    assert!(ids_in("UTF-8, HEX4, ELF64, X11forward, MAX10, M123, sv07_x").is_empty());
    assert_eq!(leading_ids("sv07_i6_killed"), ["SV07", "30 I6"]);
    assert_eq!(leading_ids("f9_clock_skew"), ["90 F9"]);
    assert!(
        leading_ids("help_and_usage").is_empty() && leading_ids("x1_y").is_empty() && leading_ids("s123_y").is_empty()
    );
    assert_eq!(definitions_on("| `RG-7.10` | the tick's lock |"), ["RG-7.10"]);
    assert_eq!(definitions_on("| 80 I9 | slots |"), ["80 I9"]);
    assert_eq!(definitions_on("- **L-3 A lease binds only its own life.** At a spawn"), ["L-3"]);
    assert!(definitions_on("| id | meaning |").is_empty());
}
