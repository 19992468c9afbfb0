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
use super::spec::Slip;
use super::{env, report};
use crate::child::root_of;

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
    judge_with(lines, truth, Slip::None)
}

/// [`judge`], the second checker's specification carrying `slip`.
pub fn judge_with(lines: &[Line], truth: &Truth, slip: Slip) -> Judged {
    judge_within(lines, truth, slip, linearizable::STEPS)
}

/// [`judge_with`], each root's search by the second checker taking at
/// most `steps` steps.
pub fn judge_within(lines: &[Line], truth: &Truth, slip: Slip, steps: u64) -> Judged {
    let (ops, seals) = replay(lines);
    let checked = Instant::now();
    let anomalies = check(&ops, &seals, truth);
    let ours = checked.elapsed();
    let second = linearizable::check_within(lines, truth, slip, steps);
    let flagged: BTreeSet<String> = anomalies
        .iter()
        .filter(|a| a.about_the_log())
        .map(|a| a.root.clone())
        .collect();
    // A root the second checker left undecided agrees with ours only if
    // ours flags it: a history ours passes must be one it can order.
    let mut disagreement: Vec<String> = flagged
        .difference(&second.flagged)
        .filter(|root| !second.undecided.contains(*root))
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
    disagreement.extend(second.undecided.difference(&flagged).map(|root| {
        format!(
            "{root}: passed by ours, left undecided by the linearizability checker \
             ({steps} steps)"
        )
    }));
    Judged {
        anomalies,
        ours,
        second,
        flagged,
        disagreement,
    }
}

/// What the server holds for `root`'s Runs alone.
fn truth_of(truth: &Truth, root: &str) -> Truth {
    let ours = |run: &String| root_of(run) == root;
    Truth {
        epochs: truth
            .epochs
            .clone()
            .into_iter()
            .filter(|(run, _)| ours(run))
            .collect(),
        pauses: truth
            .pauses
            .clone()
            .into_iter()
            .filter(|(run, _)| ours(run))
            .collect(),
        finishes: truth
            .finishes
            .clone()
            .into_iter()
            .filter(|(run, _)| ours(run))
            .collect(),
        retired: truth
            .retired
            .iter()
            .filter(|r| *r == root)
            .cloned()
            .collect(),
    }
}

/// The records of `root`'s history, cut down to a few on which the two
/// checkers still disagree about it (issue 60: what a disagreement fails
/// with). A unit is an operation (its invocation and its answer) or a
/// seal; the root's units are those naming one of its Runs (or it), and
/// every sweep (a batch may concern any root). Each unit is left out in
/// turn, for good if the checkers still disagree about `root` without it
/// (one greedy pass: every unit left is needed by the pass's end).
pub fn minimised(lines: &[Line], truth: &Truth, root: &str) -> Vec<Line> {
    minimised_with(lines, truth, root, Slip::None)
}

/// [`minimised`], the second checker carrying `slip` (its self-test).
pub fn minimised_with(lines: &[Line], truth: &Truth, root: &str, slip: Slip) -> Vec<Line> {
    let truth = truth_of(truth, root);
    // Each record's unit: (process, op), or the record itself (its number
    // too) for a seal.
    let key = |line: &Line| {
        let seal = if line.op == "-" { line.seq } else { 0 };
        (line.process.clone(), line.op.clone(), seal)
    };
    let mut about: BTreeMap<(String, String, u64), bool> = BTreeMap::new();
    for line in lines {
        let words: Vec<&str> = line.words.iter().map(String::as_str).collect();
        let concerns = match words.as_slice() {
            ["invoke", "sweep", ..] => Some(true),
            ["invoke", "retire", named] => Some(*named == root),
            ["invoke", _, run, ..] | ["sealed", run, ..] => Some(root_of(run) == root),
            _ => None,
        };
        if let Some(concerns) = concerns {
            about.insert(key(line), concerns);
        }
    }
    let mut kept: Vec<(String, String, u64)> = about
        .iter()
        .filter(|(_, concerns)| **concerns)
        .map(|(unit, _)| unit.clone())
        .collect();
    let records = |units: &[(String, String, u64)]| -> Vec<Line> {
        lines
            .iter()
            .filter(|line| units.contains(&key(line)))
            .cloned()
            .collect()
    };
    let disagree = |units: &[(String, String, u64)]| {
        let judged = judge_with(&records(units), &truth, slip);
        judged.flagged.contains(root) != judged.second.flagged.contains(root)
    };
    if !disagree(&kept) {
        return records(&kept);
    }
    let mut at = 0;
    while at < kept.len() {
        let mut without = kept.clone();
        without.remove(at);
        if disagree(&without) {
            kept = without;
        } else {
            at += 1;
        }
    }
    records(&kept)
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

/// One kept campaign (a directory [`kept`] made) judged again: its
/// records, what is wrong with its histories, and both verdicts.
fn judge_kept(dir: &Path) -> (Vec<Line>, Vec<String>, Judged) {
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
    (lines, wrong, judged)
}

/// Both checkers again on a kept campaign (`BATON_FAULT_REPLAY=<dir>`, a
/// directory [`kept`] made), or on every one a directory holds (as
/// `scripts/campaign-sweep` keeps them): what they find and where they
/// differ. A directory of many fails on any disagreement, on a campaign
/// either checker flags, and on a control ([`CONTROLS`]) one of them does
/// not. Does nothing without it.
#[test]
fn replay_a_kept_campaign() {
    let Some(dir) = env("BATON_FAULT_REPLAY") else {
        return;
    };
    let dir = Path::new(&dir);
    if !dir.join(TRUTH).exists() {
        return replay_every_kept_campaign(dir);
    }
    let (lines, wrong, judged) = judge_kept(dir);
    report(&format!(
        "replay: {} records; ours {} anomalies, {} roots flagged ({:.3} s); linearizability {} \
         roots flagged and {} undecided of {} ({} operations, at most {} steps a root, {:.3} \
         s); history {wrong:?}",
        lines.len(),
        judged.anomalies.len(),
        judged.flagged.len(),
        judged.ours.as_secs_f64(),
        judged.second.flagged.len(),
        judged.second.undecided.len(),
        judged.second.roots,
        judged.second.ops,
        judged.second.most_steps,
        judged.second.time.as_secs_f64(),
    ));
    for anomaly in &judged.anomalies {
        report(&format!(
            "replay: anomaly: {} {}",
            anomaly.root, anomaly.what
        ));
    }
    for difference in &judged.disagreement {
        report(&format!("replay: {difference}"));
    }
}

/// The campaigns whose store breaks the log's promises (a control, or an
/// asynchronous standby promoted behind), which both checkers must catch,
/// as their directories are named; every other must be clean.
const CONTROLS: [&str; 5] = [
    "unfenced",
    "broken-retention",
    "no-floor",
    "citus-unseen",
    "asynchronous-failover",
];

/// [`replay_a_kept_campaign`] on a directory of kept campaigns: a line
/// each, then the totals per campaign.
fn replay_every_kept_campaign(dir: &Path) {
    let mut campaigns: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a directory of kept campaigns")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join(TRUTH).exists())
        .collect();
    campaigns.sort();
    assert!(
        !campaigns.is_empty(),
        "no kept campaign in {}",
        dir.display()
    );
    // Per campaign: campaigns, operations, our anomalies, our roots,
    // stateright's roots (flagged, undecided), roots flagged by one only,
    // wrong verdicts.
    let mut totals: BTreeMap<String, [usize; 8]> = BTreeMap::new();
    let mut wrong_ones = Vec::new();
    report(
        "replay: campaign                          records  ours roots sr.rt undec 1only verdict",
    );
    for path in &campaigns {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let campaign = name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches('-');
        let (lines, wrong, judged) = judge_kept(path);
        let ours = judged
            .anomalies
            .iter()
            .filter(|a| a.about_the_log())
            .count();
        let second = judged.second.flagged.len();
        let undecided = judged.second.undecided.len();
        let caught = ours > 0 && second > 0;
        let control = CONTROLS.contains(&campaign);
        let verdict = match (!control, ours + second == 0, caught) {
            (true, true, _) => "clean",
            (false, _, true) => "caught",
            _ => "WRONG",
        };
        let one = judged.disagreement.len();
        report(&format!(
            "replay: {name:<34} {:>7} {ours:>5} {:>5} {second:>5} {undecided:>5} {one:>5} \
             {verdict}{}{}",
            lines.len(),
            judged.flagged.len(),
            if one > 0 { " DISAGREE" } else { "" },
            if wrong.is_empty() {
                String::new()
            } else {
                format!(" history {wrong:?}")
            },
        ));
        for difference in &judged.disagreement {
            report(&format!("replay:   {difference}"));
        }
        if verdict == "WRONG" || one > 0 || !wrong.is_empty() {
            wrong_ones.push(name.to_owned());
        }
        let total = totals.entry(campaign.to_owned()).or_default();
        for (slot, add) in total.iter_mut().zip([
            1,
            judged.second.ops,
            ours,
            judged.flagged.len(),
            second,
            undecided,
            one,
            usize::from(verdict == "WRONG"),
        ]) {
            *slot += add;
        }
    }
    for (campaign, [n, ops, ours, roots, second, undecided, one, wrong]) in &totals {
        report(&format!(
            "replay: {campaign}: {n} campaigns, {ops} operations (seals included); ours {ours} anomalies in \
             {roots} roots, stateright {second} roots ({undecided} undecided); flagged by one \
             only {one}; wrong \
             verdicts {wrong}"
        ));
    }
    assert!(
        wrong_ones.is_empty(),
        "the checkers disagree, or a verdict is wrong, on {wrong_ones:?}"
    );
}
