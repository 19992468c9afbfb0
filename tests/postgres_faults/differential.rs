//! The two checkers against each other on generated histories (issue 60:
//! "ours judges answers by real-time order in general"). A history of one
//! root is generated legal by driving the sequential specification
//! (`spec.rs`'s `RootLog`, through its `SequentialSpec` functions, never a
//! copy of its rules): each operation has an invocation, a linearization
//! point inside its interval and a completion, and its answer is the one
//! the specification accepts at its linearization point. It is written as
//! the processes write their records (`child/transcript.rs`), read back whole, and
//! judged with the final read-back the specification leaves (checked
//! against the specification's own `Read`). Then one answer at a time is
//! changed into another kind, the read-back kept, and both checkers must
//! flag the same roots.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use stateright::semantics::SequentialSpec;

use super::child::{MAX_CHAIN, chain_index, successor_of};
use super::history::{HeldPause, Line, Truth, read_transcript};
use super::judge::{judge, minimised};
use super::spec::{Answer, Held, Op as SpecOp, RootLog, Snapshot};

/// A deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// True one time in `n`.
    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The generated history's one root.
const ROOT: &str = "r1";
/// The largest epoch a claim's answer is looked for among.
const MAX_EPOCH: u64 = 24;

/// A digest for a record id, the same for every use of it.
fn digest(id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// How an operation ended, as its process recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum End {
    /// Its answer was recorded.
    Answered(Answer),
    /// `unknown`: it took effect (answering `Answer`) or not (`None`).
    Unknown(Option<Answer>),
    /// `unavailable`: nothing written.
    Unavailable,
    /// No record: its process was killed mid-way; it took effect or not.
    Killed(Option<Answer>),
}

/// One generated operation.
#[derive(Clone, Debug)]
struct GenOp {
    process: usize,
    /// The process's number for it (from 1).
    number: u64,
    invoked: u64,
    completed: u64,
    /// Where the requester's seal is recorded (an append answered
    /// `Written` may be sealed, as `append_then_seal_async` seals it).
    sealed_at: Option<u64>,
    /// The words after `invoke`.
    what: String,
    op: SpecOp,
    end: End,
}

/// What a process knows and does next, as `child.rs`'s processes do:
/// it drives the root's chain from its head, claiming each Run, following
/// a pause it learns of to its successor, and writing under the epoch its
/// own claim answered (a pause, or a finish at the chain's end or one
/// time in four); the owner retires the root by name now and then.
#[derive(Clone, Debug)]
struct Process {
    name: String,
    owner: bool,
    /// The Run it claims next.
    run: String,
    /// The epoch its last claim answered, not yet written under.
    holds: Option<(String, u64)>,
    killed: bool,
    ops: u64,
}

impl Process {
    /// Its next operation.
    fn next(&mut self, rng: &mut Rng) -> (String, SpecOp) {
        if self.owner && self.holds.is_none() && rng.one_in(3) {
            return (format!("retire {ROOT}"), SpecOp::Retire);
        }
        if let Some((run, epoch)) = self.holds.take() {
            let id = format!("{}-{run}-e{epoch}", self.name);
            let d = digest(&id);
            if chain_index(&run) >= MAX_CHAIN || rng.one_in(4) {
                let what = format!("finish {run} {epoch} {id} {d}");
                let outcome = Held {
                    id,
                    digest: d,
                    successor: String::new(),
                };
                return (
                    what,
                    SpecOp::Finish {
                        run,
                        epoch,
                        outcome,
                    },
                );
            }
            let successor = successor_of(&run);
            let what = format!("append {run} {epoch} {id} {d} {successor}");
            let pause = Held {
                id,
                digest: d,
                successor,
            };
            return (what, SpecOp::Append { run, epoch, pause });
        }
        (
            format!("claim {}", self.run),
            SpecOp::Claim(self.run.clone()),
        )
    }

    /// What it learns from an answer to `op`.
    fn learn(&mut self, op: &SpecOp, answer: Option<&Answer>) {
        let restart = |p: &mut Process| p.run = ROOT.to_owned();
        match (op, answer) {
            (SpecOp::Claim(run), Some(Answer::Owner(e))) => self.holds = Some((run.clone(), *e)),
            (SpecOp::Claim(_), Some(Answer::HandedOff(pause))) => {
                self.run.clone_from(&pause.successor);
            }
            (SpecOp::Append { pause, .. }, Some(Answer::Written | Answer::AlreadyDurable)) => {
                self.run.clone_from(&pause.successor);
            }
            // Someone else made it final: claim it again to see.
            (
                SpecOp::Append { run, .. } | SpecOp::Finish { run, .. },
                Some(Answer::AlreadyHandedOff | Answer::AlreadyFinished),
            ) => self.run.clone_from(run),
            (SpecOp::Retire, _) => {}
            _ => restart(self),
        }
    }
}

/// The answers an operation may be given, for the specification to
/// choose among: every kind, over the records and epochs the history
/// holds.
fn candidates(op: &SpecOp, records: &[Held], runs: &[String]) -> Vec<Answer> {
    let mut all = vec![Answer::Retired];
    match op {
        SpecOp::Claim(_) => {
            for held in records {
                if held.successor.is_empty() {
                    all.push(Answer::Finished(held.clone()));
                } else {
                    all.push(Answer::HandedOff(held.clone()));
                }
            }
            all.extend((1..=MAX_EPOCH).map(Answer::Owner));
        }
        SpecOp::Append { .. } | SpecOp::Finish { .. } => {
            all.extend([
                Answer::Written,
                Answer::AlreadyDurable,
                Answer::AlreadyHandedOff,
                Answer::AlreadyFinished,
            ]);
            all.extend((0..=MAX_EPOCH).map(Answer::Fenced));
            all.extend((0..=MAX_EPOCH).map(Answer::EpochNotIssued));
        }
        SpecOp::Retire => {
            all = vec![Answer::AlreadyRetired, Answer::NothingToRetire];
            all.extend(runs.iter().map(|run| Answer::RunOpen(Some(run.clone()))));
            all.extend((0..=MAX_CHAIN + 1).map(Answer::RetiredNow));
        }
        _ => unreachable!("not generated"),
    }
    all
}

/// The answer the specification gives `op` now, applied to `log`: the
/// one it accepts (a claim: the least epoch it accepts, or one time in
/// five the next, as a server's floor may lift it).
fn answer(
    log: &mut RootLog,
    op: &SpecOp,
    records: &[Held],
    runs: &[String],
    rng: &mut Rng,
) -> Answer {
    let valid: Vec<Answer> = candidates(op, records, runs)
        .into_iter()
        .filter(|a| log.clone().is_valid_step(op, a))
        .collect();
    let chosen = match (op, valid.as_slice()) {
        (SpecOp::Claim(_), [Answer::Owner(_), Answer::Owner(_), ..]) if rng.one_in(5) => {
            valid[1].clone()
        }
        (SpecOp::Claim(_), [first, ..]) => first.clone(),
        (_, [only]) => only.clone(),
        _ => panic!("the specification answers {op:?} with one of {valid:?}"),
    };
    assert!(log.is_valid_step(op, &chosen));
    chosen
}

/// An answer as its process records it.
fn words(op: &SpecOp, answer: &Answer) -> String {
    match answer {
        Answer::Owner(e) => format!("ok owner {e}"),
        Answer::HandedOff(h) => format!("ok handed-off {} {} {}", h.id, h.digest, h.successor),
        Answer::Finished(h) => format!("ok finished {} {}", h.id, h.digest),
        Answer::Retired if matches!(op, SpecOp::Claim(_)) => "ok retired".into(),
        Answer::Retired => "refused retired".into(),
        Answer::Written => "ok written".into(),
        Answer::AlreadyDurable => "ok already".into(),
        Answer::Fenced(c) => format!("refused fenced {c}"),
        Answer::EpochNotIssued(c) => format!("refused epoch-not-issued {c}"),
        Answer::AlreadyHandedOff => "refused already-handed-off".into(),
        Answer::AlreadyFinished => "refused already-finished".into(),
        Answer::RetiredNow(n) => format!("ok retired-now {n}"),
        Answer::AlreadyRetired => "ok already-retired".into(),
        Answer::RunOpen(Some(run)) => format!("refused run-open {run}"),
        Answer::RunOpen(None) => "refused run-open ?".into(),
        Answer::NothingToRetire => "refused nothing-to-retire".into(),
        other => panic!("not an answer a process records: {other:?}"),
    }
}

/// A generated history: its operations, and what the server holds at the
/// end.
struct Generated {
    ops: Vec<GenOp>,
    names: Vec<String>,
    truth: Truth,
}

/// One legal history of the root `r1`: 2–4 processes, 4–12 operations
/// planned (a killed process runs none after it).
fn generate(rng: &mut Rng) -> Generated {
    let processes = 2 + rng.below(3) as usize;
    let total = 4 + rng.below(9) as usize;
    let mut counts = vec![1usize; processes];
    for _ in processes..total {
        counts[rng.below(processes as u64) as usize] += 1;
    }
    let owner = rng.below(10) < 7;
    let mut procs: Vec<Process> = (0..processes)
        .map(|i| {
            let last = i + 1 == processes;
            Process {
                name: if last && owner {
                    format!("owner{i}.0")
                } else {
                    format!("worker{i}.0")
                },
                owner: last && owner,
                run: ROOT.to_owned(),
                holds: None,
                killed: false,
                ops: 0,
            }
        })
        .collect();
    // Each operation's invocation, linearization point, completion and a
    // slot for a seal, strictly increasing per process; then every point
    // of every process ranked into distinct stamps (ties broken at random).
    let mut points: Vec<(u64, u64, usize, usize, usize)> = Vec::new();
    for (p, count) in counts.iter().enumerate() {
        let mut t = rng.below(12);
        for i in 0..*count {
            for slot in 0..4 {
                t += 1 + rng.below(6);
                points.push((t, rng.next(), p, i, slot));
            }
        }
    }
    points.sort();
    // (process, index) -> [invoked, linearized, completed, seal slot]
    let mut stamps: HashMap<(usize, usize), [u64; 4]> = HashMap::new();
    for (rank, (_, _, p, i, slot)) in points.iter().enumerate() {
        stamps.entry((*p, *i)).or_default()[*slot] = (rank as u64 + 1) * 10;
    }
    let mut planned: Vec<(u64, usize, usize)> =
        stamps.iter().map(|((p, i), s)| (s[1], *p, *i)).collect();
    planned.sort();
    let mut log = RootLog::default();
    let mut records: Vec<Held> = Vec::new();
    let runs: Vec<String> = (0..=MAX_CHAIN)
        .map(|i| {
            if i == 0 {
                ROOT.to_owned()
            } else {
                format!("{ROOT}.{i}")
            }
        })
        .collect();
    let mut truth = Truth::default();
    let mut ops = Vec::new();
    for (_, p, i) in planned {
        let process = &mut procs[p];
        if process.killed {
            continue;
        }
        let [invoked, _, completed, seal] = stamps[&(p, i)];
        let (what, op) = process.next(rng);
        process.ops += 1;
        let number = process.ops;
        // How it ends: mostly answered; else unknown (it took effect or
        // not), unavailable (nothing written), or its process killed.
        let fate = rng.below(20);
        let takes_effect = fate >= 4 || (fate < 3 && rng.one_in(2));
        let answered = takes_effect.then(|| answer(&mut log, &op, &records, &runs, rng));
        let end = match fate {
            0 | 1 => End::Unknown(answered.clone()),
            2 => End::Killed(answered.clone()),
            3 => End::Unavailable,
            _ => End::Answered(answered.clone().expect("took effect")),
        };
        // The server's rows, as the answer leaves them.
        match (&op, &answered) {
            (SpecOp::Claim(run), Some(Answer::Owner(e))) => {
                truth.epochs.insert(run.clone(), *e);
            }
            (SpecOp::Append { run, epoch, pause }, Some(Answer::Written)) => {
                records.push(pause.clone());
                let held = HeldPause {
                    id: pause.id.clone(),
                    epoch: *epoch,
                    digest: pause.digest.clone(),
                    successor: pause.successor.clone(),
                };
                truth.pauses.insert(run.clone(), held);
            }
            (SpecOp::Finish { run, outcome, .. }, Some(Answer::Written)) => {
                records.push(outcome.clone());
                let held = (outcome.id.clone(), outcome.digest.clone());
                truth.finishes.insert(run.clone(), held);
            }
            (SpecOp::Retire, Some(Answer::RetiredNow(_))) => {
                truth = Truth {
                    retired: HashSet::from([ROOT.to_owned()]),
                    ..Truth::default()
                }
            }
            _ => {}
        }
        let told = match &end {
            End::Answered(a) => Some(a),
            _ => None,
        };
        process.learn(&op, told);
        process.killed = matches!(end, End::Killed(_));
        let sealed_at = (matches!(op, SpecOp::Append { .. })
            && told == Some(&Answer::Written)
            && rng.one_in(2))
        .then_some(seal);
        ops.push(GenOp {
            process: p,
            number,
            invoked,
            completed,
            sealed_at,
            what,
            op,
            end,
        });
    }
    // The read-back the specification leaves is the one built here.
    assert!(
        log.is_valid_step(&SpecOp::Read, &Answer::Read(snapshot(&truth))),
        "the read-back built is the specification's: {truth:?}"
    );
    let names = procs.iter().map(|p| p.name.clone()).collect();
    Generated { ops, names, truth }
}

/// `truth` as the specification's `Read` answer.
fn snapshot(truth: &Truth) -> Snapshot {
    let runs = truth
        .epochs
        .iter()
        .map(|(run, epoch)| {
            let pause = truth.pauses.get(run).map(|p| {
                let held = Held {
                    id: p.id.clone(),
                    digest: p.digest.clone(),
                    successor: p.successor.clone(),
                };
                (p.epoch, held)
            });
            let finish = truth.finishes.get(run).map(|(id, digest)| Held {
                id: id.clone(),
                digest: digest.clone(),
                successor: String::new(),
            });
            (run.clone(), (*epoch, pause, finish))
        })
        .collect();
    Snapshot {
        retired: truth.retired.contains(ROOT),
        runs,
    }
}

/// The records of `generated`, each operation's answer replaced by
/// `changed` where it names one (`index` into `generated.ops`), written
/// per process as `child/transcript.rs` writes them and read back whole.
fn records(generated: &Generated, changed: Option<(usize, &str)>) -> Vec<Line> {
    let mut files: BTreeMap<usize, Vec<(u64, String)>> = BTreeMap::new();
    for (index, op) in generated.ops.iter().enumerate() {
        let file = files.entry(op.process).or_default();
        file.push((op.invoked, format!("{} invoke {}", op.number, op.what)));
        let outcome = match (&op.end, changed) {
            (_, Some((at, words))) if at == index => Some(words.to_owned()),
            (End::Answered(a), _) => Some(words(&op.op, a)),
            (End::Unknown(_), _) => Some("unknown".to_owned()),
            (End::Unavailable, _) => Some("unavailable".to_owned()),
            (End::Killed(_), _) => None,
        };
        if let Some(outcome) = outcome {
            file.push((op.completed, format!("{} {outcome}", op.number)));
        }
        if let (Some(at), SpecOp::Append { run, epoch, pause }) = (op.sealed_at, &op.op) {
            file.push((at, format!("- sealed {run} {epoch} {}", pause.id)));
        }
    }
    let mut lines = Vec::new();
    for (p, mut file) in files {
        file.sort();
        let killed = generated
            .ops
            .iter()
            .any(|op| op.process == p && matches!(op.end, End::Killed(_)));
        let mut text = String::new();
        for (n, (at, record)) in file.iter().enumerate() {
            text.push_str(&format!("{} {at} {record}\n", n + 1));
        }
        if !killed {
            let last = file.last().map_or(0, |(at, _)| *at);
            text.push_str(&format!(
                "{} {} - end {}\n",
                file.len() + 1,
                last + 1,
                file.len()
            ));
        }
        let name = &generated.names[p];
        lines.extend(read_transcript(name, &text, killed).expect("whole"));
    }
    lines
}

/// Another answer of another kind for `op`, in place of `original`
/// (its words), or `None` if none is left.
fn mutation(
    op: &SpecOp,
    original: &str,
    records: &[Held],
    rng: &mut Rng,
) -> Option<(String, String)> {
    let epochs: Vec<u64> = (0..=6).collect();
    let mut kinds: Vec<(&str, Vec<String>)> = Vec::new();
    match op {
        SpecOp::Claim(_) => {
            kinds.push((
                "Owner",
                epochs[1..]
                    .iter()
                    .map(|e| format!("ok owner {e}"))
                    .collect(),
            ));
            let pauses = records.iter().filter(|h| !h.successor.is_empty());
            kinds.push((
                "HandedOff",
                pauses
                    .map(|h| format!("ok handed-off {} {} {}", h.id, h.digest, h.successor))
                    .collect(),
            ));
            let finishes = records.iter().filter(|h| h.successor.is_empty());
            kinds.push((
                "Finished",
                finishes
                    .map(|h| format!("ok finished {} {}", h.id, h.digest))
                    .collect(),
            ));
            kinds.push(("Retired", vec!["ok retired".into()]));
        }
        SpecOp::Append { .. } | SpecOp::Finish { .. } => {
            kinds.push(("Written", vec!["ok written".into()]));
            kinds.push(("AlreadyDurable", vec!["ok already".into()]));
            let fenced = epochs.iter().map(|c| format!("refused fenced {c}"));
            kinds.push(("Fenced", fenced.collect()));
            let not_issued = epochs
                .iter()
                .map(|c| format!("refused epoch-not-issued {c}"));
            kinds.push(("EpochNotIssued", not_issued.collect()));
            kinds.push((
                "AlreadyHandedOff",
                vec!["refused already-handed-off".into()],
            ));
            kinds.push(("AlreadyFinished", vec!["refused already-finished".into()]));
            kinds.push(("Retired", vec!["refused retired".into()]));
        }
        SpecOp::Retire => {
            let counts = (1..=MAX_CHAIN + 1).map(|n| format!("ok retired-now {n}"));
            kinds.push(("RetiredNow", counts.collect()));
            kinds.push(("AlreadyRetired", vec!["ok already-retired".into()]));
            let open = (0..=MAX_CHAIN).map(|i| match i {
                0 => format!("refused run-open {ROOT}"),
                i => format!("refused run-open {ROOT}.{i}"),
            });
            kinds.push(("RunOpen", open.collect()));
            kinds.push(("NothingToRetire", vec!["refused nothing-to-retire".into()]));
        }
        _ => return None,
    }
    for (_, answers) in &mut kinds {
        answers.retain(|a| a != original);
    }
    kinds.retain(|(_, answers)| !answers.is_empty());
    if kinds.is_empty() {
        return None;
    }
    let (kind, answers) = rng.pick(&kinds);
    Some(((*kind).to_owned(), rng.pick(answers).clone()))
}

/// The kind of an answer, for the tally.
fn kind_of(answer: &Answer) -> String {
    let debug = format!("{answer:?}");
    debug
        .split(['(', ' '])
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn printed(lines: &[Line]) -> String {
    let mut sorted: Vec<&Line> = lines.iter().collect();
    sorted.sort_by_key(|l| (l.at, l.process.clone()));
    sorted
        .iter()
        .map(|l| {
            format!(
                "    ({:?}, \"{} {} {}\"),\n",
                l.process,
                l.at,
                l.op,
                l.words.join(" ")
            )
        })
        .collect()
}

/// Ours (`checker.rs`, `answers.rs`) and the linearizability checker
/// (`linearizable.rs`, `spec.rs`) flag the same roots on every
/// single-answer mutation of a legal history.
///
/// Generated (seeded, deterministic): 2000 histories of the one root
/// `r1` (its Runs `r1` to `r1.3`), 2–4 processes each running its
/// operations one after another, 4–12 operations planned (fewer where a
/// process is killed): claims of the
/// Run a process follows (from the head, to the successor a pause it
/// learned of names), a pause or a finish under the epoch its own claim
/// answered, and — by an owner — retirements of `r1` by name; seals of
/// appends answered `Written`, one time in two. One operation in ten is
/// answered `unknown` (it took effect or not), one in twenty
/// `unavailable` (nothing written), one in twenty ends its process
/// unanswered (it took effect or not). No sweep, no process running two
/// operations at once, no second root.
///
/// Each legal history must be flagged by neither. Then up to three of
/// its recorded answers, one at a time, are changed into an answer of
/// another kind (or the same kind, another epoch, pause, count or Run)
/// for that operation: `Owner`, `HandedOff`, `Finished` or `Retired` for
/// a claim; `Written`, `AlreadyDurable`, `Fenced`, `EpochNotIssued`,
/// `AlreadyHandedOff`, `AlreadyFinished` or `Retired` for a write;
/// `RetiredNow`, `AlreadyRetired`, `RunOpen` or `NothingToRetire` for a
/// retirement; the final read-back kept. Both checkers must flag the same
/// roots (a mutation may leave the history legal: then neither flags it).
/// `BATON_DIFFERENTIAL_SEED` and `BATON_DIFFERENTIAL_HISTORIES` change
/// the seed and the number of histories.
#[test]
fn ours_and_the_linearizability_checker_agree_on_every_single_answer_mutation() {
    const MUTATIONS: usize = 3;
    // Another seed, or more histories, to look further (not in CI).
    let number = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let histories = number("BATON_DIFFERENTIAL_HISTORIES", 2000) as usize;
    let mut rng = Rng(number("BATON_DIFFERENTIAL_SEED", 0x6261_746f_6e60));
    let (mut mutated, mut both, mut neither) = (0usize, 0usize, 0usize);
    // Flagged by ours, the linearizability checker out of steps.
    let mut both_undecided = 0usize;
    let mut legal_flagged: Vec<String> = Vec::new();
    // Class -> (count, an example).
    let mut classes: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut ops_total = 0;
    for _ in 0..histories {
        let generated = generate(&mut rng);
        ops_total += generated.ops.len();
        let lines = records(&generated, None);
        let judged = judge(&lines, &generated.truth);
        if !judged.flagged.is_empty()
            || !judged.second.flagged.is_empty()
            || !judged.second.undecided.is_empty()
        {
            legal_flagged.push(format!(
                "ours {:?}, linearizability {:?} (undecided {:?}), anomalies {:?}\n{}",
                judged.flagged,
                judged.second.flagged,
                judged.second.undecided,
                judged.anomalies.iter().map(|a| &a.what).collect::<Vec<_>>(),
                printed(&lines)
            ));
            continue;
        }
        let records_held: Vec<Held> = generated
            .ops
            .iter()
            .filter_map(|op| match (&op.op, &op.end) {
                (SpecOp::Append { pause, .. }, _) => Some(pause.clone()),
                (SpecOp::Finish { outcome, .. }, _) => Some(outcome.clone()),
                _ => None,
            })
            .collect();
        let answered: Vec<usize> = (0..generated.ops.len())
            .filter(|i| matches!(generated.ops[*i].end, End::Answered(_)))
            .collect();
        let mut chosen: BTreeSet<usize> = BTreeSet::new();
        for _ in 0..MUTATIONS.min(answered.len()) {
            chosen.insert(*rng.pick(&answered));
        }
        for index in chosen {
            let op = &generated.ops[index];
            let End::Answered(original) = &op.end else {
                unreachable!()
            };
            let original_words = words(&op.op, original);
            let Some((kind, changed)) = mutation(&op.op, &original_words, &records_held, &mut rng)
            else {
                continue;
            };
            mutated += 1;
            let lines = records(&generated, Some((index, &changed)));
            let judged = judge(&lines, &generated.truth);
            let ours = judged.flagged.contains(ROOT);
            let second = judged.second.flagged.contains(ROOT);
            let undecided = judged.second.undecided.contains(ROOT);
            match (ours, second, undecided) {
                (true, true, _) => both += 1,
                // Out of steps where ours flags: agreement (`judge`).
                (true, false, true) => both_undecided += 1,
                (false, false, false) => neither += 1,
                _ => {
                    let verb = op.what.split(' ').next().unwrap_or_default();
                    let class = format!(
                        "{verb} {} -> {kind}: {}",
                        kind_of(original),
                        if undecided {
                            "passed by ours, left undecided by the linearizability checker"
                        } else if ours {
                            "flagged by ours only"
                        } else {
                            "flagged by the linearizability checker only"
                        }
                    );
                    let entry = classes.entry(class).or_insert_with(|| {
                        let cut = minimised(&lines, &generated.truth, ROOT);
                        let again = judge(&cut, &generated.truth);
                        (
                            0,
                            format!(
                                "  ({} in place of {original_words:?}; truth {}; ours {:?})\n{}",
                                changed,
                                generated.truth.to_text().replace('\n', "; "),
                                again.anomalies.iter().map(|a| &a.what).collect::<Vec<_>>(),
                                printed(&cut)
                            ),
                        )
                    });
                    entry.0 += 1;
                }
            }
        }
    }
    let disagreements: usize = classes.values().map(|(n, _)| n).sum();
    println!(
        "differential: {histories} histories ({ops_total} operations), {} legal ones flagged; \
         {mutated} mutated: flagged by both {both}, by ours with the other out of steps \
         {both_undecided}, by neither {neither}, disagreements {disagreements} in {} classes",
        legal_flagged.len(),
        classes.len()
    );
    for finding in legal_flagged.iter().take(5) {
        println!("differential: a legal history flagged: {finding}");
    }
    for (class, (n, example)) in &classes {
        println!("differential: {class} ({n}):\n{example}");
    }
    assert!(legal_flagged.is_empty(), "legal histories flagged");
    assert_eq!(disagreements, 0, "the checkers disagree");
}
