//! What a cargo-mutants run found (`mutants.out/outcomes.json`), the survivors docs/mutants.md lists, and the
//! figures per crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

/// How one mutant fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Caught,
    /// The tests did not end within the timeout: the mutant changed behaviour (a loop), so it counts as caught.
    Timeout,
    Survived,
    /// It did not build: not a viable mutant.
    Unviable,
}

/// One tested mutant: its package, its listing key (see [`key_of`]) and its fate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tested {
    pub package: String,
    pub key: String,
    pub fate: Fate,
}

/// Everything one run recorded.
#[derive(Debug, Clone, Default)]
pub struct Outcomes {
    /// Mutants the run set out to test.
    pub total: usize,
    pub tested: Vec<Tested>,
    /// False when the unmutated tree failed its tests (then no outcome means anything).
    pub baseline_ok: bool,
}

impl Outcomes {
    pub fn tested(&self) -> usize {
        self.tested.len()
    }
}

/// Reads `outcomes.json` (written as the run goes, so a stopped run has the mutants tested so far).
pub fn read_outcomes(path: &Path) -> Result<Outcomes, String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
    parse_outcomes(&text).ok_or_else(|| format!("{}: not the outcomes of cargo mutants", path.display()))
}

fn parse_outcomes(text: &str) -> Option<Outcomes> {
    let doc: Value = serde_json::from_str(text).ok()?;
    let total = usize::try_from(doc.get("total_mutants")?.as_u64()?).ok()?;
    let mut outcomes = Outcomes { total, tested: Vec::new(), baseline_ok: true };
    for outcome in doc.get("outcomes")?.as_array()? {
        let summary = outcome.get("summary")?.as_str()?;
        let Some(mutant) = outcome.get("scenario")?.get("Mutant") else {
            // The baseline: the unmutated tree.
            outcomes.baseline_ok &= summary == "Success";
            continue;
        };
        let fate = match summary {
            "CaughtMutant" => Fate::Caught,
            "MissedMutant" => Fate::Survived,
            "Timeout" => Fate::Timeout,
            "Unviable" => Fate::Unviable,
            _ => return None,
        };
        let name = mutant.get("name")?.as_str()?;
        let file = mutant.get("file")?.as_str()?;
        let package = mutant.get("package")?.as_str()?.to_owned();
        let line = |span: Option<&Value>| span?.get("start")?.get("line")?.as_u64();
        let at = line(mutant.get("span"))?;
        let offset = line(mutant.get("function").and_then(|f| f.get("span"))).map(|start| at.saturating_sub(start));
        outcomes.tested.push(Tested { package, key: key_of(name, file, offset), fate });
    }
    Some(outcomes)
}

/// How many mutants a run set out to test: the length of its `mutants.json`.
pub fn count_mutants(path: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<Value>(&text).ok()?.as_array().map(Vec::len)
}

/// A mutant's name with its line and column replaced by the line's offset in its function
/// (`crates/x/src/a.rs: replace == with != in f @2`): a listing survives edits elsewhere in the file, and two equal
/// mutations in one function (on different lines) stay apart.
pub fn key_of(name: &str, file: &str, offset: Option<u64>) -> String {
    let described = name.strip_prefix(file).and_then(|rest| rest.split_once(": ")).map(|(_, what)| what);
    match (described, offset) {
        (Some(what), Some(offset)) => format!("{file}: {what} @{offset}"),
        (Some(what), None) => format!("{file}: {what}"),
        (None, _) => name.to_owned(),
    }
}

/// The keys of the survivors docs/mutants.md lists: table rows `` | `KEY` | reason | `` (a `|` of the key written
/// `\|`); a row without a reason is an error, so nothing is listed without one.
pub fn listed_in(doc: &Path) -> Result<BTreeSet<String>, String> {
    let text = std::fs::read_to_string(doc).map_err(|err| format!("{}: {err}", doc.display()))?;
    parse_listed(&text).map_err(|row| format!("{}: a listed survivor has no reason: {row}", doc.display()))
}

fn parse_listed(text: &str) -> Result<BTreeSet<String>, String> {
    let mut listed = BTreeSet::new();
    for line in text.lines() {
        let Some(row) = line.strip_prefix("| `crates/") else { continue };
        let Some((key, rest)) = row.split_once('`') else { continue };
        let reason = rest.trim().trim_start_matches('|').trim().trim_end_matches('|').trim();
        if reason.is_empty() {
            return Err(line.to_owned());
        }
        // A `|` in a table cell is written `\|`, also inside a code span.
        listed.insert(format!("crates/{}", key.replace("\\|", "|")));
    }
    Ok(listed)
}

/// The survivors that are not listed, in the order they were tested.
pub fn unlisted_survivors(outcomes: &Outcomes, listed: &BTreeSet<String>) -> Vec<String> {
    outcomes
        .tested
        .iter()
        .filter(|t| t.fate == Fate::Survived && !listed.contains(&t.key))
        .map(|t| t.key.clone())
        .collect()
}

/// Per package: viable, caught (timeouts included), survived and listed (the survivors docs/mutants.md lists).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    pub viable: usize,
    pub caught: usize,
    pub timeout: usize,
    pub survived: usize,
    pub listed: usize,
}

pub fn figures(outcomes: &Outcomes, listed: &BTreeSet<String>) -> BTreeMap<String, Figures> {
    let mut by_package: BTreeMap<String, Figures> = BTreeMap::new();
    for tested in &outcomes.tested {
        let row = by_package.entry(tested.package.clone()).or_default();
        match tested.fate {
            Fate::Unviable => continue,
            Fate::Caught => row.caught += 1,
            Fate::Timeout => {
                row.caught += 1;
                row.timeout += 1;
            }
            Fate::Survived => {
                row.survived += 1;
                row.listed += usize::from(listed.contains(&tested.key));
            }
        }
        row.viable += 1;
    }
    by_package
}

/// The figures as the Markdown table docs/mutants.md shows.
pub fn figures_table(outcomes: &Outcomes, listed: &BTreeSet<String>) -> String {
    let mut table =
        String::from("| crate | viable | caught (of which timeouts) | survived | listed |\n|---|---|---|---|---|\n");
    for (package, f) in figures(outcomes, listed) {
        let _ = writeln!(
            table,
            "| {package} | {} | {} ({}) | {} | {} |",
            f.viable, f.caught, f.timeout, f.survived, f.listed
        );
    }
    table.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mutant(name: &str, file: &str, package: &str, summary: &str) -> Value {
        let line: u64 = name.split(':').nth(1).unwrap().parse().unwrap();
        serde_json::json!({
            "scenario": {"Mutant": {"name": name, "file": file, "package": package,
                "span": {"start": {"line": line, "column": 1}},
                "function": {"function_name": "f", "span": {"start": {"line": 1, "column": 1}}}}},
            "summary": summary,
        })
    }

    const FILE: &str = "crates/registry/src/atomic.rs";

    #[test]
    fn keys_put_the_offset_in_the_function_for_line_and_column() {
        let name = "crates/registry/src/atomic.rs:60:36: replace == with != in create_temp";
        assert_eq!(key_of(name, FILE, Some(5)), "crates/registry/src/atomic.rs: replace == with != in create_temp @5");
        let with_colon = "crates/registry/src/atomic.rs:9:5: replace f -> io::Result<()> with Ok(())";
        assert_eq!(
            key_of(with_colon, FILE, None),
            "crates/registry/src/atomic.rs: replace f -> io::Result<()> with Ok(())"
        );
        assert_eq!(key_of("odd name", FILE, Some(1)), "odd name");
    }

    #[test]
    fn outcomes_sort_mutants_by_fate_and_see_a_failed_baseline() {
        let doc = serde_json::json!({
            "total_mutants": 5,
            "outcomes": [
                {"scenario": "Baseline", "summary": "Success"},
                mutant(&format!("{FILE}:1:1: a"), FILE, "agent-box-registry", "CaughtMutant"),
                mutant(&format!("{FILE}:2:1: b"), FILE, "agent-box-registry", "MissedMutant"),
                mutant(&format!("{FILE}:3:1: c"), FILE, "agent-box-registry", "Timeout"),
                mutant(&format!("{FILE}:4:1: d"), FILE, "agent-box-registry", "Unviable"),
            ],
        });
        let outcomes = parse_outcomes(&doc.to_string()).unwrap();
        assert!(outcomes.baseline_ok);
        assert_eq!((outcomes.total, outcomes.tested()), (5, 4));
        let fates: Vec<Fate> = outcomes.tested.iter().map(|t| t.fate).collect();
        assert_eq!(fates, [Fate::Caught, Fate::Survived, Fate::Timeout, Fate::Unviable]);
        assert_eq!(outcomes.tested[1].key, format!("{FILE}: b @1"));

        let failed =
            serde_json::json!({"total_mutants": 1, "outcomes": [{"scenario": "Baseline", "summary": "Failure"}]});
        assert!(!parse_outcomes(&failed.to_string()).unwrap().baseline_ok);
        assert!(parse_outcomes("{}").is_none());
    }

    #[test]
    fn listed_rows_need_a_reason() {
        let doc = "# x\n| mutant | why |\n|---|---|\n| `crates/a/src/b.rs: replace x with y in f` | equivalent: f is pure |\n";
        let listed = parse_listed(doc).unwrap();
        assert_eq!(listed.into_iter().collect::<Vec<_>>(), ["crates/a/src/b.rs: replace x with y in f"]);
        let piped = "| `crates/a/src/b.rs: replace & with \\| in f` | equivalent |\n";
        assert!(parse_listed(piped).unwrap().contains("crates/a/src/b.rs: replace & with | in f"));
        let bare = "| `crates/a/src/b.rs: replace x with y in f` |  |\n";
        assert!(parse_listed(bare).is_err());
    }

    #[test]
    fn figures_count_timeouts_as_caught_and_only_listed_survivors_as_listed() {
        let tested = |key: &str, package: &str, fate| Tested { package: package.into(), key: key.into(), fate };
        let outcomes = Outcomes {
            total: 6,
            baseline_ok: true,
            tested: vec![
                tested("r: a", "registry", Fate::Caught),
                tested("r: b", "registry", Fate::Timeout),
                tested("r: c", "registry", Fate::Survived),
                tested("r: d", "registry", Fate::Survived),
                tested("r: e", "registry", Fate::Unviable),
                tested("l: a", "lease", Fate::Caught),
            ],
        };
        let listed: BTreeSet<String> = ["r: c".to_owned()].into();
        let by = figures(&outcomes, &listed);
        assert_eq!(by["registry"], Figures { viable: 4, caught: 2, timeout: 1, survived: 2, listed: 1 });
        assert_eq!(by["lease"], Figures { viable: 1, caught: 1, timeout: 0, survived: 0, listed: 0 });
        assert_eq!(unlisted_survivors(&outcomes, &listed), ["r: d"]);
        assert!(figures_table(&outcomes, &listed).ends_with("| registry | 4 | 2 (1) | 2 | 1 |"));
    }
}
