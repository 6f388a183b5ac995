//! `mcpwire report merge A B …`: adds the HdrHistogram interval logs of several `load --hdr-log`
//! runs (several generators against one target, say) into one report, as one generator sending
//! all their requests would have measured it: per operation, the sum of its histograms; the
//! span from the earliest interval's start to the latest one's end; the requests and errors
//! of each second of wall-clock time.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::load::hdr_log;
use crate::load::report::{OpReport, Point, Report};

/// Reads, merges and prints; exit 2 when a log cannot be read.
pub fn run(paths: &[PathBuf], json: bool, html: Option<&std::path::Path>) -> ExitCode {
    let mut logs = Vec::new();
    for p in paths {
        match hdr_log::read(p) {
            Ok(l) => logs.push(l),
            Err(e) => {
                eprintln!("mcpwire: report merge: {e}");
                return ExitCode::from(crate::EXIT_IO);
            }
        }
    }
    let report = merged_report(paths, &logs);
    if let Some(path) = html
        && let Err(code) = crate::load::command::write_html(path, &report, &[])
    {
        return code;
    }
    if json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    ExitCode::SUCCESS
}

/// The report of several logs added together.
pub fn merged_report(paths: &[PathBuf], logs: &[hdr_log::Read]) -> Report {
    let m = hdr_log::merge(logs);
    let first = m.seconds.keys().next().copied().unwrap_or(0);
    let timeline = m
        .seconds
        .iter()
        .map(|(s, (n, e))| Point {
            t: (s - first + 1) as f64,
            requests: *n,
            errors: *e,
            ops: Vec::new(),
            error_kinds: BTreeMap::new(),
        })
        .collect();
    Report {
        target: format!(
            "merge of {}",
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
        http_version: None,
        era: "",
        protocol_version: String::new(),
        method: m.ops.keys().cloned().collect::<Vec<_>>().join(", "),
        concurrency: 0,
        model: serde_json::json!({"kind": "merged", "logs": paths.len()}),
        ops: m
            .ops
            .into_iter()
            .map(|(name, tally)| OpReport { name, tally, max_p99_ms: None, max_error_rate: None })
            .collect(),
        elapsed: Duration::try_from_secs_f64((m.last - m.first).max(0.0)).unwrap_or_default(),
        bytes: None,
        cpu: None,
        peak_in_flight: 0,
        interrupted: false,
        late: 0,
        dropped: 0,
        sent: 0,
        timeline,
        capacity: None,
        log_error: None,
        replay: None,
    }
}
