//! A campaign's history read back and judged: every process's records
//! read whole from its file, both checkers run on them, and where they
//! differ; the histories and the final read-back kept, and judged again
//! on demand (`BATON_FAULT_REPLAY`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::checker::{self, check};
use super::history::{Line, Truth, read_transcript, replay};
use super::linearizable;
use super::{env, report};

/// The file a kept campaign's final read-back is in, beside its
/// processes' histories.
pub const TRUTH: &str = "truth";

/// Where a campaign keeps its histories: `postgres_faults/<name>-<seed>`
/// under cargo's temporary directory for tests (`target/tmp`), in place
/// of the campaign's earlier ones.
pub fn kept(name: &str, seed: u64) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("postgres_faults")
        .join(format!("{}-{seed}", name.replace(' ', "-")));
    let campaign = format!("{}-", name.replace(' ', "-"));
    if let Ok(earlier) = std::fs::read_dir(dir.parent().expect("a parent")) {
        for entry in earlier.flatten() {
            let earlier_name = entry.file_name().to_string_lossy().into_owned();
            let seed_after = earlier_name.strip_prefix(&campaign);
            if seed_after.is_some_and(|seed| seed.chars().all(|c| c.is_ascii_digit())) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    std::fs::create_dir_all(&dir).expect("a directory for the histories");
    dir
}

/// Both checkers on one history: the anomalies the first finds, the roots
/// each flags, and where they differ (naming each root flagged by one
/// only).
pub struct Judged {
    pub anomalies: Vec<checker::Anomaly>,
    /// How long ours took.
    pub ours: Duration,
    pub second: linearizable::Verdict,
    /// The roots ours flags (by its anomalies about the log).
    pub flagged: BTreeSet<String>,
    pub disagreement: Vec<String>,
}

pub fn judge(lines: &[Line], truth: &Truth) -> Judged {
    let (ops, seals) = replay(lines);
    let checked = Instant::now();
    let anomalies = check(&ops, &seals, truth);
    let ours = checked.elapsed();
    let second = linearizable::check(lines, truth);
    let flagged: BTreeSet<String> = anomalies
        .iter()
        .filter(|a| a.about_the_log())
        .map(|a| a.root.clone())
        .collect();
    let mut disagreement: Vec<String> = flagged
        .difference(&second.flagged)
        .map(|root| {
            let why: Vec<&str> = anomalies
                .iter()
                .filter(|a| a.root == *root)
                .map(|a| a.what.as_str())
                .collect();
            format!("{root}: flagged by ours only ({why:?})")
        })
        .collect();
    disagreement.extend(
        second
            .flagged
            .difference(&flagged)
            .map(|root| format!("{root}: flagged by the linearizability checker only")),
    );
    Judged {
        anomalies,
        ours,
        second,
        flagged,
        disagreement,
    }
}

/// Every process a campaign started, by name: its history file, and
/// whether the campaign killed it (then it wrote no trailer).
pub type Started = BTreeMap<String, (PathBuf, bool)>;

/// Reads every process's history back ([`read_transcript`]): the records
/// of all, and what is wrong with any.
pub fn read_histories(started: &Started) -> (Vec<Line>, Vec<String>) {
    let mut lines = Vec::new();
    let mut wrong = Vec::new();
    for (name, (path, killed)) in started {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        match read_transcript(name, &text, *killed) {
            Ok(read) => lines.extend(read),
            Err(what) => wrong.push(what),
        }
    }
    (lines, wrong)
}

/// Both checkers again on a kept campaign (`BATON_FAULT_REPLAY=<dir>`, a
/// directory [`kept`] made): what they find and where they differ. Does
/// nothing without it.
#[test]
fn replay_a_kept_campaign() {
    let Some(dir) = env("BATON_FAULT_REPLAY") else {
        return;
    };
    let dir = Path::new(&dir);
    let truth = Truth::from_text(&std::fs::read_to_string(dir.join(TRUTH)).expect("the truth"));
    let mut started = Started::new();
    for entry in std::fs::read_dir(dir).expect("the histories") {
        let path = entry.expect("an entry").path();
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            if let Some(process) = name.strip_suffix(".history") {
                // A worker's incarnation before the last may have been killed.
                started.insert(process.to_owned(), (path.clone(), true));
            }
        }
    }
    let (lines, wrong) = read_histories(&started);
    let judged = judge(&lines, &truth);
    report(&format!(
        "replay: {} records; ours {} anomalies, {} roots flagged ({:.3} s); linearizability {} \
         roots flagged of {} ({} operations, {:.3} s); history {wrong:?}",
        lines.len(),
        judged.anomalies.len(),
        judged.flagged.len(),
        judged.ours.as_secs_f64(),
        judged.second.flagged.len(),
        judged.second.roots,
        judged.second.ops,
        judged.second.time.as_secs_f64(),
    ));
    for anomaly in judged.anomalies.iter().take(30) {
        report(&format!(
            "replay: anomaly: {} {}",
            anomaly.root, anomaly.what
        ));
    }
    for difference in &judged.disagreement {
        report(&format!("replay: {difference}"));
    }
}
