//! The second checker (issue 50): is each root's history linearizable
//! against a sequential specification of the log, written from
//! docs/SPEC.md §6 and §6.1 alone? It shares no code with `checker.rs`:
//! it reads the records themselves (`history::Line`, as `read_transcript`
//! checked them whole) and the server's final read-back (`Truth`'s
//! fields), and leaves the search to stateright's
//! `LinearizabilityTester`, a checker written by others (`spec.rs` holds
//! the specification).
//!
//! **One partition per root Run.** A retirement spans a root's Runs (it
//! reads all of them, and every Run of a retired root answers `Retired`),
//! so a root's Runs are one object; roots are independent of each other,
//! and linearizability is compositional, so each root is checked alone.
//! Its last operation is the final read-back, after every other: what the
//! server holds for the root must be a state the history can leave.
//!
//! **Faults.** An operation answered `Unavailable` wrote nothing (SPEC's
//! errors): it is left out. One answered `OutcomeUnknown`, or not at all
//! (its process killed, or its answer never came), may have taken effect
//! at any moment after its invocation, or never: it stays in flight to
//! the end, on a thread of its own. A sweep's batch that answered names
//! the roots it retired: in each of them it is a retirement acknowledged;
//! in a root it does not name it did nothing. A batch without an answer
//! may have retired any root whose work had ended: it is in flight in
//! every root retired at the end (in the others it cannot have taken
//! effect, or the read-back would show it).
//!
//! **Seals** (R2) are operations too: a requester's `wait()` that
//! answered a pause says the pause was durable at some moment between
//! the invocation of its append and the seal's record, so each seal is a
//! call over that span that SPEC answers only if the Run then holds that
//! pause under that epoch (or the root is retired: its rows are gone,
//! every Run of it final), as ours holds it to the server's read-back.
//!
//! **Per root, not per Run.** Ours names Runs, this checker roots; they
//! are compared by root (a Run's anomaly flags its root). A Run's answers
//! depend on the other Runs of its root (a retirement reads them all, and
//! `RunOpen` names the least open one), so a root is the smallest part
//! linearizability can judge alone; a root is flagged exactly when some
//! Run of it breaks the specification, so two checkers that agree on
//! every Run agree on every root, and a disagreement on a root is one on
//! some Run of it.
//!
//! **Out of its scope: time.** A sequential specification has no clock:
//! what `retire_ended(before)` may retire by the finishes' times (G5 by
//! age) and a process's own conduct after it was fenced (R7: a zombie's
//! seal under a stale epoch) are judged by ours alone, and are not in the
//! comparison (`Anomaly::about_the_log` is false for them).
//!
//! **Real time** is the records' wall-clock stamps, as for the first
//! checker: an operation that completed before another's invocation
//! precedes it. The tester wants each thread's operations one after the
//! other; a process runs several at once (the owner's lanes), so each
//! root's operations are dealt to as many threads as they need.
//!
//! **A bounded search.** The tester tries every order the history allows
//! and remembers none it has tried, so a history that is not
//! linearizable costs it every order before it says so: exponential in
//! the operations that overlap. A control's root once ran it past 15
//! minutes in a run of `.ci/run` (the "no floor" control, seed
//! 1796668962221216). So each root's search may take [`STEPS`] steps of
//! the specification; a root that needs more is *undecided*, neither
//! flagged nor passed, and `judge` counts an undecided root as a
//! disagreement unless ours flags it (a history ours passes must be one
//! the second checker can order). That history's root r126 is undecided
//! within the bound (7 s); its other 257 roots take at most 67,818 steps.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::time::{Duration, Instant};

use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

use super::history::{Line, Truth};
use super::spec::{Answer, Held, Op, RootLog, Slip, Snapshot};
use crate::child::root_of;

/// What the second checker found.
pub struct Verdict {
    /// The roots checked, and the operations in their partitions (the
    /// final read-backs left out).
    pub roots: usize,
    pub ops: usize,
    /// The roots whose history no sequential order of the log explains.
    pub flagged: BTreeSet<String>,
    /// The roots whose search took [`STEPS`] steps without a verdict.
    pub undecided: BTreeSet<String>,
    /// The most steps one root's search took.
    pub most_steps: u64,
    pub time: Duration,
}

/// How many steps of the specification (an operation taking effect, or
/// an answer checked against it) one root's search may take.
pub const STEPS: u64 = 400_000;

/// One root's verdict.
enum Decision {
    Linearizable,
    Not,
    Undecided,
}

/// The specification, counting the search's steps against a budget the
/// search's clones of it share. When the budget is spent it unwinds the
/// search with [`Spent`] (`resume_unwind`, so no panic is reported), the
/// tester having no way to be stopped.
#[derive(Clone, Debug)]
struct Bounded {
    log: RootLog,
    steps: Rc<Cell<u64>>,
    limit: u64,
}

/// The payload of the unwinding that ends a search out of steps.
struct Spent;

impl Bounded {
    fn step(&self) {
        let taken = self.steps.get() + 1;
        self.steps.set(taken);
        if taken > self.limit {
            panic::resume_unwind(Box::new(Spent));
        }
    }
}

impl SequentialSpec for Bounded {
    type Op = Op;
    type Ret = Answer;

    fn invoke(&mut self, op: &Op) -> Answer {
        self.step();
        self.log.invoke(op)
    }

    fn is_valid_step(&mut self, op: &Op, answer: &Answer) -> bool {
        self.step();
        self.log.is_valid_step(op, answer)
    }
}

/// One operation of a root's history: invoked, and completed with an
/// answer, or in flight to the end.
struct Call {
    invoked: u64,
    done: Option<(u64, Answer)>,
    op: Op,
}

/// The operations of each root, read from the records.
fn calls(lines: &[Line], truth: &Truth) -> BTreeMap<String, Vec<Call>> {
    let mut invoked: HashMap<(&str, &str), (u64, Vec<&str>)> = HashMap::new();
    let mut answered: HashMap<(&str, &str), (u64, Vec<&str>)> = HashMap::new();
    let mut seals = Vec::new();
    for line in lines {
        let words: Vec<&str> = line.words.iter().map(String::as_str).collect();
        if line.op == "-" {
            if let ["sealed", run, epoch, pause] = words.as_slice() {
                seals.push((line.at, *run, epoch.parse().unwrap_or(0), *pause));
            }
            continue;
        }
        let key = (line.process.as_str(), line.op.as_str());
        if words.first() == Some(&"invoke") {
            invoked.insert(key, (line.at, words[1..].to_vec()));
        } else {
            answered.insert(key, (line.at, words));
        }
    }
    let mut roots: BTreeMap<String, Vec<Call>> = BTreeMap::new();
    let mut unanswered_sweeps = Vec::new();
    for (key, (at, words)) in &invoked {
        let answer = answered.get(key);
        let outcome: Vec<&str> = answer.map(|(_, w)| w.clone()).unwrap_or_default();
        // Nothing written: not an operation of the log's history.
        if outcome == ["unavailable"] {
            continue;
        }
        let in_flight = answer.is_none() || outcome == ["unknown"];
        let done = |answer: Answer| {
            answered
                .get(key)
                .filter(|_| !in_flight)
                .map(|(at, _)| (*at, answer))
        };
        let (root, op) = match words.as_slice() {
            ["sweep", ..] => {
                if in_flight {
                    unanswered_sweeps.push(*at);
                    continue;
                }
                // `ok swept <runs> <kept> <end|more> <roots…>`
                if let ["ok", "swept", _, _, _, retired @ ..] = outcome.as_slice() {
                    for root in retired {
                        roots.entry((*root).to_owned()).or_default().push(Call {
                            invoked: *at,
                            done: done(Answer::Swept),
                            op: Op::Sweep,
                        });
                    }
                }
                continue;
            }
            ["claim", run] => (root_of(run), Op::Claim((*run).to_owned())),
            ["append", run, epoch, pause, digest, successor] => (
                root_of(run),
                Op::Append {
                    run: (*run).to_owned(),
                    epoch: epoch.parse().unwrap_or(0),
                    pause: Held {
                        id: (*pause).to_owned(),
                        digest: (*digest).to_owned(),
                        successor: (*successor).to_owned(),
                    },
                },
            ),
            ["finish", run, epoch, id, digest] => (
                root_of(run),
                Op::Finish {
                    run: (*run).to_owned(),
                    epoch: epoch.parse().unwrap_or(0),
                    outcome: Held {
                        id: (*id).to_owned(),
                        digest: (*digest).to_owned(),
                        successor: String::new(),
                    },
                },
            ),
            ["retire", root] => (*root, Op::Retire),
            _ => ("?", Op::Unreadable),
        };
        let call = Call {
            invoked: *at,
            done: done(Answer::parse(&outcome)),
            op,
        };
        roots.entry(root.to_owned()).or_default().push(call);
    }
    // A seal, seen when its record was written, may have been told at any
    // moment since that pause's append was invoked (or since the record,
    // if no append of it was): it is durable at some moment of that span.
    for (at, run, epoch, pause) in seals {
        let calls = roots.entry(root_of(run).to_owned()).or_default();
        let since = calls
            .iter()
            .filter_map(|call| match &call.op {
                Op::Append {
                    run: appended,
                    epoch: e,
                    pause: held,
                } if appended == run && *e == epoch && held.id == pause => Some(call.invoked),
                _ => None,
            })
            .min()
            .unwrap_or(at);
        calls.push(Call {
            invoked: since.min(at),
            done: Some((at, Answer::Sealed)),
            op: Op::Seal {
                run: run.to_owned(),
                epoch,
                pause: pause.to_owned(),
            },
        });
    }
    for root in &truth.retired {
        for at in &unanswered_sweeps {
            roots.entry(root.clone()).or_default().push(Call {
                invoked: *at,
                done: None,
                op: Op::Sweep,
            });
        }
    }
    // Every root the server holds something for is checked, too.
    for run in truth.epochs.keys().chain(&truth.retired) {
        roots.entry(root_of(run).to_owned()).or_default();
    }
    roots
}

/// What the server holds for `root` at the end.
fn snapshot(root: &str, truth: &Truth) -> Snapshot {
    let mut runs = BTreeMap::new();
    for (run, epoch) in truth.epochs.iter().filter(|(run, _)| root_of(run) == root) {
        let pause = truth.pauses.get(run).map(|p| {
            (
                p.epoch,
                Held {
                    id: p.id.clone(),
                    digest: p.digest.clone(),
                    successor: p.successor.clone(),
                },
            )
        });
        let finish = truth.finishes.get(run).map(|(id, digest)| Held {
            id: id.clone(),
            digest: digest.clone(),
            successor: String::new(),
        });
        runs.insert(run.clone(), (*epoch, pause, finish));
    }
    // A pause or a finish of a Run the server holds no epoch for.
    for run in truth.pauses.keys().chain(truth.finishes.keys()) {
        if root_of(run) == root && !truth.epochs.contains_key(run) {
            runs.insert(run.clone(), (0, None, None));
        }
    }
    Snapshot {
        retired: truth.retired.contains(root),
        runs,
    }
}

/// Whether one root's calls, then the final read-back, are linearizable,
/// and the steps its search took.
fn decide(root: &str, calls: &[Call], truth: &Truth, slip: Slip, limit: u64) -> (Decision, u64) {
    let steps = Rc::new(Cell::new(0));
    let spec = Bounded {
        log: RootLog::with_slip(slip),
        steps: Rc::clone(&steps),
        limit,
    };
    let searched = panic::catch_unwind(AssertUnwindSafe(|| linearizable(root, calls, truth, spec)));
    let decision = match searched {
        Ok(true) => Decision::Linearizable,
        Ok(false) => Decision::Not,
        Err(payload) if payload.is::<Spent>() => Decision::Undecided,
        Err(payload) => panic::resume_unwind(payload),
    };
    (decision, steps.get())
}

/// Whether one root's calls, then the final read-back, are linearizable.
fn linearizable(root: &str, calls: &[Call], truth: &Truth, spec: Bounded) -> bool {
    let mut tester = LinearizabilityTester::<usize, Bounded>::new(spec);
    // (time, 0 invoke / 1 return, thread, call)
    let mut events: Vec<(u64, u8, usize, usize)> = Vec::new();
    let mut free_at: Vec<u64> = Vec::new();
    let mut order: Vec<usize> = (0..calls.len()).collect();
    order.sort_by_key(|i| calls[*i].invoked);
    for i in order {
        let call = &calls[i];
        let thread = match call.done {
            // Completed: the first thread free before it was invoked.
            Some((returned, _)) => {
                let thread = free_at
                    .iter()
                    .position(|free| *free < call.invoked)
                    .unwrap_or_else(|| {
                        free_at.push(0);
                        free_at.len() - 1
                    });
                free_at[thread] = returned;
                events.push((returned, 1, thread, i));
                thread
            }
            // In flight to the end: a thread of its own.
            None => {
                free_at.push(u64::MAX);
                free_at.len() - 1
            }
        };
        events.push((call.invoked, 0, thread, i));
    }
    events.sort();
    for (_, kind, thread, i) in events {
        let result = if kind == 0 {
            tester.on_invoke(thread, calls[i].op.clone()).map(|_| ())
        } else {
            let answer = calls[i].done.as_ref().map(|(_, a)| a.clone());
            tester
                .on_return(thread, answer.unwrap_or(Answer::Unknown))
                .map(|_| ())
        };
        if result.is_err() {
            return false;
        }
    }
    // The final read-back, after everything.
    let reader = free_at.len();
    let read = tester
        .on_invoke(reader, Op::Read)
        .and_then(|t| t.on_return(reader, Answer::Read(snapshot(root, truth))));
    read.is_ok() && tester.is_consistent()
}

/// Checks every root of the history against the specification, carrying
/// `slip` (`Slip::None` but in the self-tests).
pub fn check_with(lines: &[Line], truth: &Truth, slip: Slip) -> Verdict {
    check_within(lines, truth, slip, STEPS)
}

/// [`check_with`], each root's search taking at most `steps` steps.
pub fn check_within(lines: &[Line], truth: &Truth, slip: Slip, steps: u64) -> Verdict {
    let started = Instant::now();
    let roots = calls(lines, truth);
    let ops = roots.values().map(Vec::len).sum();
    let mut flagged = BTreeSet::new();
    let mut undecided = BTreeSet::new();
    let mut most_steps = 0;
    for (root, calls) in &roots {
        let (decision, taken) = decide(root, calls, truth, slip, steps);
        most_steps = most_steps.max(taken);
        match decision {
            Decision::Linearizable => {}
            Decision::Not => {
                flagged.insert(root.clone());
            }
            Decision::Undecided => {
                undecided.insert(root.clone());
            }
        }
    }
    Verdict {
        roots: roots.len(),
        ops,
        flagged,
        undecided,
        most_steps,
        time: started.elapsed(),
    }
}
