//! What a campaign saw: the server's final read-back, and the figures
//! and the two checkers' verdicts read from it and from the processes'
//! histories, each reported.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::common::Pause;
use super::history::{self, HeldPause, Outcome, Truth, replay};
use super::judge::{self, Started, judge, read_histories};
use super::{DECIDE_BOUND, DECIDE_EACH, child, managers, report};

/// What a campaign saw.
pub struct Figures {
    pub ops: usize,
    /// Appends the workers (not the owner's deciding) had acknowledged.
    pub worker_handoffs: usize,
    pub outcomes: BTreeMap<&'static str, usize>,
    pub faults: BTreeMap<&'static str, usize>,
    pub runs: u64,
    pub decided: usize,
    /// Finishes acknowledged.
    pub finishes: usize,
    /// Successors (Runs after the head of a chain) claimed into an epoch.
    pub successors_claimed: usize,
    /// Chains whose last Run holds a finish at the end.
    pub chains_ended: usize,
    /// Roots the server holds retired at the end.
    pub roots_retired: usize,
    /// Sweep batches run (`retire_ended_async`), answered or not.
    pub sweeps: usize,
    /// Roots the sweeps' answers said they retired.
    pub swept: usize,
    /// Batches that ended a pass (`next` was `None`).
    pub passes: usize,
    pub decide_time: Duration,
    /// The longest wait for a Run's decision once the faults stopped.
    pub longest_wait: Duration,
    pub anomalies: Vec<String>,
    /// Under a manager, each timeline on which something was acknowledged
    /// and which the final primary does not descend from, in a line
    /// (`managers::abandoned_timelines`).
    pub abandoned: Vec<String>,
    /// What is wrong with the histories as read (issue 50: must be
    /// nothing, in every campaign).
    pub history_wrong: Vec<String>,
    /// The roots both checkers flag, and where they differ (must be
    /// nowhere, in every campaign; a root the second leaves undecided
    /// differs unless ours flags it).
    pub flagged: BTreeSet<String>,
    pub disagreement: Vec<String>,
    /// Under a manager, each of its faults: its kind, whether the leader
    /// changed, and the longest stretch (s) from its start to its heal
    /// without a write acknowledged to any process.
    pub manager: Vec<(&'static str, bool, f64)>,
    /// The group commit of the workers that have it (`child.rs`), summed
    /// over each process's last count: batches, the writes in them, those
    /// rolled back, those of an unknown outcome.
    pub grouped: [u64; 4],
}

impl Figures {
    /// Issue 50, in every campaign: every record each process wrote was
    /// read, and the two checkers flag the same roots.
    pub fn assert_read_whole_and_checked_twice(&self) {
        assert_eq!(self.history_wrong, Vec::<String>::new(), "the history");
        assert_eq!(
            self.disagreement,
            Vec::<String>::new(),
            "the two checkers disagree"
        );
    }
}

/// What a campaign's run left for its figures.
pub struct Ended {
    pub started: Started,
    pub truth: Truth,
    /// Under a manager, the final primary's timeline and the ones it
    /// descends from (`managers::final_timelines`).
    pub timelines: Option<(u64, Option<BTreeSet<u64>>)>,
    /// The Runs the processes picked from.
    pub runs: u64,
    pub faults: BTreeMap<&'static str, usize>,
    pub injected: Vec<managers::Injected>,
    /// The owner's process name.
    pub owner: String,
    /// When the faults stopped (µs, `child::now_us`).
    pub stopped_at: u64,
    /// How long the owner took to decide every Run after that.
    pub decide_time: Duration,
}

/// The final read-back of the facts: every pause and outcome decoded as
/// the store decodes it, and digested as its writer digested it (G2);
/// under a manager (`managed`), the timelines the final primary descends
/// from too.
pub async fn read_back(
    client: &tokio_postgres::Client,
    managed: bool,
) -> (Truth, Option<(u64, Option<BTreeSet<u64>>)>) {
    // Under a manager, the timelines the final primary descends from.
    let timelines = if managed {
        Some(managers::final_timelines(client).await)
    } else {
        None
    };
    let mut truth = Truth::default();
    for row in client
        .query("SELECT run_id, epoch, outcome::text FROM baton_run", &[])
        .await
        .unwrap()
    {
        truth.epochs.insert(row.get(0), row.get::<_, i64>(1) as u64);
        if let Some(json) = row.get::<_, Option<String>>(2) {
            let (id, digest) = match serde_json::from_str::<baton::HandoffExecution>(&json) {
                Ok(outcome) => (
                    child::outcome_id(&outcome).to_owned(),
                    child::digest(&outcome),
                ),
                Err(error) => ("?".to_owned(), format!("undecodable: {error}")),
            };
            truth.finishes.insert(row.get(0), (id, digest));
        }
    }
    for row in client
        .query("SELECT root_run_id FROM baton_root WHERE retired", &[])
        .await
        .unwrap()
    {
        truth.retired.insert(row.get(0));
    }
    for row in client
        .query(
            "SELECT run_id, handoff_id, epoch, successor_run_id, pause::text \
             FROM baton_handoff_pause",
            &[],
        )
        .await
        .unwrap()
    {
        let json: String = row.get(4);
        let digest = serde_json::from_str::<Pause>(&json)
            .map_or_else(|e| format!("undecodable: {e}"), |p| child::digest(&p));
        truth.pauses.insert(
            row.get(0),
            HeldPause {
                id: row.get(1),
                epoch: row.get::<_, i64>(2) as u64,
                successor: row.get(3),
                digest,
            },
        );
    }
    (truth, timelines)
}

/// The figures of the campaign `name` from what its run left, its
/// checkers' verdicts and its anomalies among them, reported.
pub fn figures(name: &str, ended: Ended) -> Figures {
    let (lines, history_wrong) = read_histories(&ended.started);
    let (ops, seals) = replay(&lines);
    let judged = judge(&lines, &ended.truth);
    // Under a manager, every timeline something was acknowledged on must
    // be one the final primary descends from.
    let abandoned = match &ended.timelines {
        Some((timeline, Some(history))) => {
            managers::abandoned_timelines(name, &ops, *timeline, history)
        }
        Some((timeline, None)) => {
            report(&format!(
                "{name}: the final primary (timeline {timeline}) holds no history file: \
                 the timelines it abandoned are not checked"
            ));
            Vec::new()
        }
        None => Vec::new(),
    };
    let mut anomalies: Vec<String> = judged.anomalies.iter().map(|a| a.what.clone()).collect();
    // A root is decided once its chain ended (its last Run holds a finish)
    // or it is retired.
    let decided = (0..ended.runs)
        .filter(|k| {
            let root = child::run_name(*k);
            ended.truth.retired.contains(&root) || ended.truth.chain_ended(&root) == Some(true)
        })
        .count();
    let chains_ended = (0..ended.runs)
        .filter(|k| ended.truth.chain_ended(&child::run_name(*k)) == Some(true))
        .count();
    let successors_claimed = ops
        .iter()
        .filter(|op| {
            matches!(op.kind, history::Kind::Claim { .. })
                && matches!(op.outcome, Outcome::Owner(_))
                && child::chain_index(op.kind.run()) > 0
        })
        .map(|op| op.kind.run())
        .collect::<std::collections::HashSet<_>>()
        .len();
    // The longest wait for a decision: from the faults' end to the first,
    // and between consecutive ones.
    let mut stamps: Vec<u64> = lines
        .iter()
        .filter(|l| l.process == ended.owner && l.words.first().is_some_and(|w| w == "decided"))
        .map(|l| l.at)
        .collect();
    stamps.insert(0, ended.stopped_at);
    let longest_wait = stamps
        .windows(2)
        .map(|w| Duration::from_micros(w[1].saturating_sub(w[0])))
        .max()
        .unwrap_or_default();
    if longest_wait > DECIDE_EACH {
        anomalies.push(format!(
            "R5: a Run waited {longest_wait:?} for its decision after the faults stopped \
             (bound {DECIDE_EACH:?} each)"
        ));
    }
    if decided as u64 != ended.runs || ended.decide_time >= DECIDE_BOUND {
        anomalies.push(format!(
            "R5: {decided} of {} Runs decided {:?} after the faults stopped (bound \
             {DECIDE_BOUND:?})",
            ended.runs, ended.decide_time
        ));
    }
    let mut outcomes: BTreeMap<&'static str, usize> = BTreeMap::new();
    for op in &ops {
        *outcomes.entry(outcome_of(op)).or_default() += 1;
    }
    let worker_handoffs = ops
        .iter()
        .filter(|op| {
            op.process.starts_with("worker")
                && matches!(op.outcome, Outcome::Written | Outcome::Already)
        })
        .count();
    let finishes = outcomes.get("finish ok").copied().unwrap_or(0);
    // The sweeps: batches run (answered or not), the roots they retired,
    // and the batches that ended a pass (`next` was `None`).
    let sweeps = ops
        .iter()
        .filter(|op| matches!(op.kind, history::Kind::Sweep { .. }))
        .count();
    let swept = outcomes.get("retire ok (by a sweep)").copied().unwrap_or(0);
    let passes = ops
        .iter()
        .filter(|op| {
            matches!(
                op.outcome,
                Outcome::Swept {
                    pass_ended: true,
                    ..
                }
            )
        })
        .count();
    let manager = without_acknowledgement(&ops, &ended.injected);
    let grouped = grouped(&lines);
    let figures = Figures {
        grouped,
        manager,
        // The operations the processes made (a sweep's batch is one; the
        // retirements read from its answer are not others).
        ops: ops
            .iter()
            .filter(|op| op.outcome != Outcome::RetiredBySweep)
            .count(),
        sweeps,
        swept,
        passes,
        worker_handoffs,
        outcomes,
        faults: ended.faults,
        runs: ended.runs,
        decided,
        finishes,
        successors_claimed,
        chains_ended,
        roots_retired: ended.truth.retired.len(),
        decide_time: ended.decide_time,
        longest_wait,
        anomalies,
        abandoned,
        history_wrong,
        flagged: judged
            .flagged
            .intersection(&judged.second.flagged)
            .cloned()
            .collect(),
        disagreement: judged.disagreement.clone(),
    };
    let counts = (ended.started.len(), seals.len());
    report_figures(
        name,
        &figures,
        &judged,
        &lines,
        &ended.truth,
        counts,
        &ended.timelines,
    );
    figures
}

/// Reports a campaign's figures, and the records of each root its
/// checkers disagree on, cut down to those the disagreement needs.
fn report_figures(
    name: &str,
    figures: &Figures,
    judged: &judge::Judged,
    lines: &[history::Line],
    truth: &Truth,
    (processes, seals): (usize, usize),
    timelines: &Option<(u64, Option<BTreeSet<u64>>)>,
) {
    report(&format!(
        "{name}: {} operations {:?} ({} seals); faults {:?}; {} records read whole from \
         {} processes' histories; {} finishes, {} successors claimed, {} chains ended; retirements by name {} \
         (refused: RunOpen {}, NothingToRetire {}); sweeps {} (unknown or unavailable {}), \
         {} roots retired by them, {} passes completed; {} roots retired at the end; \
         {} of {} roots decided, {:.1} s after the faults stopped (the longest wait for one \
         {:.2} s); group commit: {} batches of {} writes ({} rolled back, {} unknown); \
         {} anomalies",
        figures.ops,
        figures.outcomes,
        seals,
        figures.faults,
        lines.len(),
        processes,
        figures.finishes,
        figures.successors_claimed,
        figures.chains_ended,
        figures.outcomes.get("retire ok").copied().unwrap_or(0),
        figures
            .outcomes
            .iter()
            .filter(|(kind, _)| kind.starts_with("retire refused (run open"))
            .map(|(_, n)| n)
            .sum::<usize>(),
        figures
            .outcomes
            .get("retire refused (nothing to retire)")
            .copied()
            .unwrap_or(0),
        figures.sweeps,
        figures
            .outcomes
            .iter()
            .filter(|(kind, _)| matches!(**kind, "sweep unknown" | "sweep unavailable"))
            .map(|(_, n)| n)
            .sum::<usize>(),
        figures.swept,
        figures.passes,
        figures.roots_retired,
        figures.decided,
        figures.runs,
        figures.decide_time.as_secs_f64(),
        figures.longest_wait.as_secs_f64(),
        figures.grouped[0],
        figures.grouped[1],
        figures.grouped[2],
        figures.grouped[3],
        figures.anomalies.len()
    ));
    report(&format!(
        "{name}: the two checkers: ours {} anomalies ({} about the log) on {} operations, {} roots \
         flagged, in {:.3} s; linearizability (stateright) on {} operations in {} roots, {} \
         roots flagged, {} undecided (at most {} steps a root), in {:.3} s; flagged by one \
         only: {}",
        judged.anomalies.len(),
        judged
            .anomalies
            .iter()
            .filter(|a| a.about_the_log())
            .count(),
        figures.ops,
        judged.flagged.len(),
        judged.ours.as_secs_f64(),
        judged.second.ops,
        judged.second.roots,
        judged.second.flagged.len(),
        judged.second.undecided.len(),
        judged.second.most_steps,
        judged.second.time.as_secs_f64(),
        judged.disagreement.len()
    ));
    for (kind, failed_over, again) in &figures.manager {
        report(&format!(
            "{name}: {kind}: {}; at most {again:.2} s without an acknowledged write",
            if *failed_over {
                "the leader changed"
            } else {
                "the same leader"
            },
        ));
    }
    if let Some((timeline, history)) = &timelines {
        report(&format!(
            "{name}: the final primary is on timeline {timeline}, its history holds {history:?}"
        ));
    }
    for abandoned in &figures.abandoned {
        report(&format!("{name}: {abandoned}"));
    }
    for wrong in figures
        .history_wrong
        .iter()
        .chain(&figures.disagreement)
        .take(20)
    {
        report(&format!("{name}: {wrong}"));
    }
    // Each root the checkers disagree on, its history cut down to the
    // records the disagreement needs; a root left undecided is skipped
    // (cutting it down would search it again, once per record).
    for root in judged
        .flagged
        .symmetric_difference(&judged.second.flagged)
        .filter(|root| !judged.second.undecided.contains(*root))
        .take(3)
    {
        for line in judge::minimised(lines, truth, root) {
            report(&format!(
                "{name}: disagreement on {root}: {} {} {} {} {}",
                line.process,
                line.seq,
                line.at,
                line.op,
                line.words.join(" ")
            ));
        }
    }
    let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for anomaly in &figures.anomalies {
        *by_id
            .entry(anomaly.split(':').next().unwrap_or(anomaly))
            .or_default() += 1;
    }
    if !by_id.is_empty() {
        report(&format!("{name}: anomalies by rule: {by_id:?}"));
    }
    for anomaly in figures.anomalies.iter().take(20) {
        report(&format!("{name}: anomaly: {anomaly}"));
    }
}

/// The labels of a write's outcomes, an append's then a finish's, in the
/// order of [`write_case`].
const WRITES: [[&str; 6]; 2] = [
    [
        "append ok",
        "append refused (fenced)",
        "append refused (retired)",
        "append unknown",
        "append unavailable",
        "append refused (other)",
    ],
    [
        "finish ok",
        "finish refused (fenced)",
        "finish refused (retired)",
        "finish unknown",
        "finish unavailable",
        "finish refused (other)",
    ],
];

/// Which of a write's outcomes (its label in [`WRITES`]) `outcome` is.
fn write_case(outcome: &Outcome) -> usize {
    match outcome {
        Outcome::Written | Outcome::Already => 0,
        Outcome::Fenced(_) => 1,
        Outcome::RefusedRetired => 2,
        Outcome::Unknown => 3,
        Outcome::Unavailable => 4,
        _ => 5,
    }
}

/// The kind of `op`'s outcome, as the figures count it.
fn outcome_of(op: &history::Op) -> &'static str {
    match (&op.kind, &op.outcome) {
        (history::Kind::Claim { run }, Outcome::Owner(_)) if child::chain_index(run) > 0 => {
            "claim ok (owner, successor)"
        }
        (history::Kind::Claim { .. }, Outcome::Owner(_)) => "claim ok (owner)",
        (history::Kind::Claim { .. }, Outcome::HandedOff(..)) => "claim ok (handed off)",
        (history::Kind::Claim { .. }, Outcome::Finished(..)) => "claim ok (finished)",
        (history::Kind::Claim { .. }, Outcome::Retired) => "claim ok (retired)",
        (history::Kind::Claim { .. }, Outcome::Unknown) => "claim unknown",
        (history::Kind::Claim { .. }, Outcome::Unavailable) => "claim unavailable",
        (history::Kind::Claim { .. }, _) => "claim refused",
        (history::Kind::Append { .. }, outcome) => WRITES[0][write_case(outcome)],
        (history::Kind::Finish { .. }, outcome) => WRITES[1][write_case(outcome)],
        (history::Kind::Retire { .. }, Outcome::RetiredNow(_)) => "retire ok",
        (history::Kind::Retire { .. }, Outcome::RetiredBySweep) => "retire ok (by a sweep)",
        (history::Kind::Retire { .. }, Outcome::AlreadyRetired) => "retire ok (already)",
        (history::Kind::Retire { run }, Outcome::RunOpen(open)) if open != run && open != "?" => {
            "retire refused (run open: a successor)"
        }
        (history::Kind::Retire { .. }, Outcome::RunOpen(_)) => "retire refused (run open)",
        (history::Kind::Retire { .. }, Outcome::NothingToRetire) => {
            "retire refused (nothing to retire)"
        }
        (history::Kind::Retire { .. }, Outcome::Unknown) => "retire unknown",
        (history::Kind::Retire { .. }, Outcome::Unavailable) => "retire unavailable",
        (history::Kind::Retire { .. }, _) => "retire refused (other)",
        (history::Kind::Sweep { .. }, Outcome::Swept { .. }) => "sweep ok",
        (history::Kind::Sweep { .. }, Outcome::Unknown) => "sweep unknown",
        (history::Kind::Sweep { .. }, Outcome::Unavailable) => "sweep unavailable",
        (history::Kind::Sweep { .. }, _) => "sweep refused",
    }
}

/// Under a manager, each of its faults (`injected`): its kind, whether
/// the leader changed, and the longest stretch (s) from its start to its
/// heal without a write acknowledged to any process.
fn without_acknowledgement(
    ops: &[history::Op],
    injected: &[managers::Injected],
) -> Vec<(&'static str, bool, f64)> {
    let acknowledged = |outcome: &Outcome| {
        matches!(
            outcome,
            Outcome::Owner(_) | Outcome::Written | Outcome::RetiredNow(_) | Outcome::Swept { .. }
        )
    };
    let mut acknowledged_at: Vec<u64> = ops
        .iter()
        .filter(|op| acknowledged(&op.outcome))
        .filter_map(|op| op.completed)
        .collect();
    acknowledged_at.sort_unstable();
    injected
        .iter()
        .map(|fault| {
            let within = acknowledged_at
                .iter()
                .copied()
                .filter(|at| (fault.at..=fault.healed).contains(at));
            let stamps: Vec<u64> = std::iter::once(fault.at)
                .chain(within)
                .chain(std::iter::once(fault.healed))
                .collect();
            let longest = stamps.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
            (fault.kind, fault.failed_over, longest as f64 / 1e6)
        })
        .collect()
}

/// The group commit of the workers that have it (`child.rs`), summed over
/// each process's last count in `lines`: batches, the writes in them,
/// those rolled back, those of an unknown outcome.
fn grouped(lines: &[history::Line]) -> [u64; 4] {
    let mut last_counts: BTreeMap<&str, [u64; 4]> = BTreeMap::new();
    for line in lines {
        if line.op == "-" && line.words.first().is_some_and(|word| word == "grouped") {
            let mut counts = [0; 4];
            for (count, word) in counts.iter_mut().zip(&line.words[1..]) {
                *count = word.parse().unwrap_or(0);
            }
            last_counts.insert(&line.process, counts);
        }
    }
    last_counts.values().fold([0; 4], |mut sum, counts| {
        for (sum, count) in sum.iter_mut().zip(counts) {
            *sum += count;
        }
        sum
    })
}
