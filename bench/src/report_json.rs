//! `target/bench/report.json`, written by `cargo xtask bench` (90-quality ): the machine, the run and per
//! metric its samples, summary, bar, ratio and verdict.

use serde::{Deserialize, Serialize};

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BenchReport {
    pub facts: Facts,
    pub reference_machine: bool,
    pub seed: u64,
    pub crash_iterations: usize,
    /// The revision of `--baseline`, when one was compared.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub baseline: Option<String>,
    pub failures: Vec<SectionFailure>,
    pub metrics: Vec<MetricReport>,
}

/// The machine and build a report was taken on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    pub kernel: String,
    pub os: String,
    pub arch: String,
    pub cpu: String,
    pub cores: usize,
    #[serde(rename = "memKiB")]
    pub mem_kib: u64,
    pub state_fs: String,
    pub tmux: String,
    pub rustc: String,
    pub revision: String,
    pub reference_mismatches: Vec<String>,
}

/// A section that could not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionFailure {
    pub section: String,
    pub message: String,
}

/// One metric. Summary fields are null without samples; `values` is present only for a sampled metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricReport {
    pub section: String,
    pub name: String,
    pub unit: String,
    pub samples: usize,
    pub median: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mad: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub values: Option<Vec<f64>>,
    pub bar: Option<BarReport>,
    pub ratio: Option<RatioReport>,
    pub verdict: String,
}

/// A bar of 90 §2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BarReport {
    pub id: String,
    /// `<=` or `==`.
    pub rule: String,
    pub limit: f64,
    /// `everywhere` or `reference-machine`.
    pub judged: String,
}

/// A figure divided by a baseline of the same run. When the two were sampled in rounds, `value` is the median of the
/// per-round ratios and `spread` says how they spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioReport {
    pub value: f64,
    pub against: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub spread: Option<SpreadReport>,
}

/// The per-round ratios of a comparison: quartiles, extremes and how many rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpreadReport {
    pub rounds: usize,
    pub q1: f64,
    pub q3: f64,
    pub min: f64,
    pub max: f64,
}
