//! Metrics, their bars and verdicts, and the two outputs of bench: the table on stdout and
//! `target/bench/report.json` (spec 90: per metric samples, median, p95, bar, ratio, verdict).

use crate::report_json::{BarReport, MetricReport, RatioReport, SpreadReport};

use super::baseline::FLAG_ABOVE;
use super::runner::Spread;
use super::stats::Summary;

/// How a metric's values read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Millis,
    Bytes,
    KiB,
    Count,
    PerSec,
    /// Instructions executed (callgrind `Ir`).
    Instr,
    /// A dimensionless quotient of two figures of this run.
    Factor,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Self::Millis => "ms",
            Self::Bytes => "bytes",
            Self::KiB => "KiB",
            Self::Count => "count",
            Self::PerSec => "per second",
            Self::Instr => "Ir",
            Self::Factor => "factor",
        }
    }

    /// A value with its unit, rounded for reading.
    pub fn show(self, value: f64) -> String {
        match self {
            Self::Millis if value.abs() < 10.0 => format!("{value:.3} ms"),
            Self::Millis => format!("{value:.1} ms"),
            Self::Bytes => format!("{value:.0} B"),
            Self::KiB => format!("{value:.0} KiB"),
            Self::Count if value.fract() == 0.0 => format!("{value:.0}"),
            Self::Count => format!("{value:.2}"),
            Self::PerSec => format!("{value:.0}/s"),
            Self::Instr => format!("{value:.0} Ir"),
            Self::Factor => format!("{value:.2}x"),
        }
    }
}

/// What a bar requires of the judged figure (the median, or the one value of a single-valued metric).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    AtMost(f64),
    Exactly(f64),
}

/// Where a bar is judged.: absolute timing bars hold on the reference machine only; counts, sizes and
/// memory are facts of the code and hold everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Everywhere,
    ReferenceOnly,
}

/// A bar of spec 90 §2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    pub id: &'static str,
    pub rule: Rule,
    pub scope: Scope,
}

impl Bar {
    pub fn at_most(id: &'static str, limit: f64, scope: Scope) -> Self {
        Self { id, rule: Rule::AtMost(limit), scope }
    }
    pub fn exactly(id: &'static str, value: f64) -> Self {
        Self { id, rule: Rule::Exactly(value), scope: Scope::Everywhere }
    }
    fn holds(&self, value: f64) -> bool {
        match self.rule {
            Rule::AtMost(limit) => value <= limit,
            // Exact bars are on counts; the tolerance only absorbs float noise of a division.
            Rule::Exactly(want) => (value - want).abs() < 1e-9,
        }
    }
    fn show(&self, unit: Unit) -> String {
        match self.rule {
            Rule::AtMost(limit) => format!("<= {} ({})", unit.show(limit), self.id),
            Rule::Exactly(want) => format!("= {} ({})", unit.show(want), self.id),
        }
    }
}

/// A figure divided by a baseline measured in the same run; `spread` when it is the median of per-round
/// ratios.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    pub value: f64,
    pub against: String,
    pub spread: Option<Spread>,
}

impl Ratio {
    fn show(&self) -> String {
        let mut text = format!("{} x {}", three_digits(self.value), self.against);
        if let Some(s) = &self.spread {
            text.push_str(&format!(" [IQR {}-{}, {} rounds]", three_digits(s.q1), three_digits(s.q3), s.n));
        }
        text
    }
}

/// The outcome of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// An absolute bar on a machine other than the reference one: shown, never enforced.
    NotJudged {
        within: bool,
    },
    /// No bar: reported only.
    Info,
    /// A comparison with `--baseline` whose ratio new/old is above the flag threshold: reported, not failed.
    Flagged,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "FAIL",
            Self::NotJudged { within: true } => "(pass)",
            Self::NotJudged { within: false } => "(over)",
            Self::Info => "info",
            Self::Flagged => "FLAG",
        }
    }
    fn json(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::NotJudged { within: true } => "not-judged-within",
            Self::NotJudged { within: false } => "not-judged-over",
            Self::Info => "info",
            Self::Flagged => "flagged",
        }
    }
}

/// One reported figure with its samples.
#[derive(Debug, Clone)]
pub struct Metric {
    pub section: &'static str,
    pub name: String,
    pub unit: Unit,
    pub values: Vec<f64>,
    pub bar: Option<Bar>,
    pub ratio: Option<Ratio>,
    /// The ratio above which a comparison is flagged (timed figures against `--baseline`).
    pub flag_above: Option<f64>,
}

impl Metric {
    /// A metric from samples.
    pub fn sampled(section: &'static str, name: impl Into<String>, unit: Unit, values: Vec<f64>) -> Self {
        Self { section, name: name.into(), unit, values, bar: None, ratio: None, flag_above: None }
    }
    /// A single-valued metric (a size, a count, a derived figure).
    pub fn single(section: &'static str, name: impl Into<String>, unit: Unit, value: f64) -> Self {
        Self::sampled(section, name, unit, vec![value])
    }
    pub fn with_bar(mut self, bar: Bar) -> Self {
        self.bar = Some(bar);
        self
    }
    pub fn with_ratio(mut self, value: f64, against: impl Into<String>) -> Self {
        self.ratio = Some(Ratio { value, against: against.into(), spread: None });
        self
    }
    /// The median of per-round ratios, with their spread (Q-1.2, issue 12).
    pub fn with_round_ratio(mut self, spread: Spread, against: impl Into<String>) -> Self {
        self.ratio = Some(Ratio { value: spread.median, against: against.into(), spread: Some(spread) });
        self
    }
    /// The ratio this build / the baseline; a timed one above [`FLAG_ABOVE`] is flagged.
    pub fn against_baseline(mut self, value: f64, label: impl Into<String>, timed: bool) -> Self {
        self.ratio = Some(Ratio { value, against: label.into(), spread: None });
        self.flag_above = timed.then_some(FLAG_ABOVE);
        self
    }
    /// [`Metric::against_baseline`] with the median and spread of per-round ratios.
    pub fn against_baseline_rounds(mut self, spread: Spread, label: impl Into<String>) -> Self {
        self.ratio = Some(Ratio { value: spread.median, against: label.into(), spread: Some(spread) });
        self.flag_above = Some(FLAG_ABOVE);
        self
    }
    pub fn summary(&self) -> Option<Summary> {
        Summary::of(&self.values)
    }
    /// The verdict on this machine; `reference` says whether it is the reference machine of.
    pub fn verdict(&self, reference: bool) -> Verdict {
        let flagged = matches!((&self.ratio, self.flag_above), (Some(r), Some(above)) if r.value > above);
        let (Some(bar), Some(summary)) = (self.bar, self.summary()) else {
            // A bar with no samples cannot be passed.
            return match (self.bar, flagged) {
                (Some(_), _) => Verdict::Fail,
                (None, true) => Verdict::Flagged,
                (None, false) => Verdict::Info,
            };
        };
        let within = bar.holds(summary.median);
        match (bar.scope, reference, within) {
            (Scope::ReferenceOnly, false, _) => Verdict::NotJudged { within },
            (_, _, true) => Verdict::Pass,
            (_, _, false) => Verdict::Fail,
        }
    }
}

const HEADERS: [&str; 8] = ["section", "metric", "n", "median", "p95", "bar", "ratio", "verdict"];

/// The table of every metric, columns padded to their widest cell.
pub fn table(metrics: &[Metric], reference: bool) -> String {
    let rows: Vec<[String; 8]> = metrics.iter().map(|m| row(m, reference)).collect();
    let mut widths = HEADERS.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header = HEADERS.map(str::to_owned);
    let mut out = String::new();
    for cells in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn row(metric: &Metric, reference: bool) -> [String; 8] {
    let summary = metric.summary();
    let show = |pick: fn(&Summary) -> f64| summary.map_or("-".to_owned(), |s| metric.unit.show(pick(&s)));
    let n = summary.map_or(0, |s| s.n);
    [
        metric.section.to_owned(),
        metric.name.clone(),
        n.to_string(),
        show(|s| s.median),
        if n > 1 { show(|s| s.p95) } else { "-".to_owned() },
        metric.bar.map_or("-".to_owned(), |b| b.show(metric.unit)),
        metric.ratio.as_ref().map_or("-".to_owned(), Ratio::show),
        metric.verdict(reference).label().to_owned(),
    ]
}

/// A ratio with three significant digits, so that 0.00217 does not read as 0.002.
fn three_digits(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let decimals = (2 - value.abs().log10().floor() as i32).max(0) as usize;
    format!("{value:.decimals$}")
}

/// The report entry of one metric; raw values are kept for sampled metrics so a later run can compare.
pub fn metric_report(metric: &Metric, reference: bool) -> MetricReport {
    let summary = metric.summary();
    let pick = |f: fn(&Summary) -> f64| summary.as_ref().map(f);
    MetricReport {
        section: metric.section.to_owned(),
        name: metric.name.clone(),
        unit: metric.unit.name().to_owned(),
        samples: summary.map_or(0, |s| s.n),
        median: pick(|s| s.median),
        p95: pick(|s| s.p95),
        p99: pick(|s| s.p99),
        min: pick(|s| s.min),
        max: pick(|s| s.max),
        mad: pick(|s| s.mad),
        values: (metric.values.len() > 1).then(|| metric.values.clone()),
        bar: metric.bar.map(bar_report),
        ratio: metric.ratio.as_ref().map(|r| RatioReport {
            value: r.value,
            against: r.against.clone(),
            spread: r.spread.map(|s| SpreadReport { rounds: s.n, q1: s.q1, q3: s.q3, min: s.min, max: s.max }),
        }),
        verdict: metric.verdict(reference).json().to_owned(),
    }
}

fn bar_report(bar: Bar) -> BarReport {
    let (rule, limit) = match bar.rule {
        Rule::AtMost(limit) => ("<=", limit),
        Rule::Exactly(value) => ("==", value),
    };
    let scope = match bar.scope {
        Scope::Everywhere => "everywhere",
        Scope::ReferenceOnly => "reference-machine",
    };
    BarReport { id: bar.id.to_owned(), rule: rule.to_owned(), limit, judged: scope.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_scope_and_machine() {
        let timing = Metric::sampled("epilogue", "a", Unit::Millis, vec![1.0, 3.0, 2.5]).with_bar(Bar::at_most(
            "Q1",
            2.0,
            Scope::ReferenceOnly,
        ));
        assert_eq!(timing.verdict(true), Verdict::Fail);
        assert_eq!(timing.verdict(false), Verdict::NotJudged { within: false });
        let size = Metric::single("epilogue", "size", Unit::Bytes, 1000.0).with_bar(Bar::at_most(
            "Q2",
            1572864.0,
            Scope::Everywhere,
        ));
        assert_eq!(size.verdict(false), Verdict::Pass);
        let count = Metric::single("tick", "tmux per tick", Unit::Count, 30.0 / 30.0).with_bar(Bar::exactly("Q3", 1.0));
        assert_eq!(count.verdict(false), Verdict::Pass);
        assert_eq!(Metric::single("x", "y", Unit::Count, 2.0).verdict(true), Verdict::Info);
        let empty = Metric::sampled("x", "y", Unit::Count, vec![]).with_bar(Bar::exactly("Q6", 0.0));
        assert_eq!(empty.verdict(true), Verdict::Fail);
        let slower = Metric::single("tick", "cpu", Unit::Millis, 2.0).against_baseline(1.2, "baseline x", true);
        assert_eq!(slower.verdict(true), Verdict::Flagged);
        let bigger = Metric::single("epilogue", "size", Unit::Bytes, 2.0).against_baseline(1.2, "baseline x", false);
        assert_eq!(bigger.verdict(true), Verdict::Info, "only timed figures are flagged");
        let same = Metric::single("tick", "cpu", Unit::Millis, 2.0).against_baseline(1.05, "baseline x", true);
        assert_eq!(same.verdict(true), Verdict::Info);
    }

    #[test]
    fn table_aligns_columns() {
        let metrics = vec![
            Metric::sampled("epilogue", "(a) wall", Unit::Millis, vec![1.0, 2.0, 3.0])
                .with_bar(Bar::at_most("Q1", 2.0, Scope::ReferenceOnly))
                .with_ratio(2.0, "/bin/true"),
            Metric::single("rmw", "lost updates", Unit::Count, 0.0).with_bar(Bar::exactly("Q6", 0.0)),
        ];
        let text = table(&metrics, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("section   metric        n  median"));
        assert!(lines[1].contains("2.000 ms") && lines[1].contains("<= 2.000 ms (Q1)") && lines[1].ends_with("(pass)"));
        assert!(lines[2].contains("= 0 (Q6)") && lines[2].ends_with("pass"));
    }

    #[test]
    fn json_carries_the_required_fields() {
        let m = Metric::sampled("add", "add to pane", Unit::Millis, vec![10.0, 20.0])
            .with_bar(Bar::at_most("Q4", 150.0, Scope::ReferenceOnly))
            .with_ratio(0.0075, "2000 ms tick period");
        let report = metric_report(&m, true);
        let v = serde_json::to_value(&report).unwrap();
        for key in ["samples", "median", "p95", "bar", "ratio", "verdict", "values"] {
            assert!(v.get(key).is_some(), "{key} missing in {v}");
        }
        assert_eq!((report.samples, report.verdict.as_str()), (2, "pass"));
        assert_eq!(report.bar.map(|b| b.id).as_deref(), Some("Q4"));
    }

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(three_digits(2.9154), "2.92");
        assert_eq!(three_digits(0.0021666), "0.00217");
        assert_eq!(three_digits(0.807), "0.807");
        assert_eq!(three_digits(123.4), "123");
        assert_eq!(three_digits(0.0), "0");
    }

    #[test]
    fn units_show_readably() {
        assert_eq!(Unit::Millis.show(1.23456), "1.235 ms");
        assert_eq!(Unit::Millis.show(123.456), "123.5 ms");
        assert_eq!(Unit::Count.show(1.0), "1");
        assert_eq!(Unit::Count.show(1.5), "1.50");
        assert_eq!(Unit::Bytes.show(1234.0), "1234 B");
    }
}
