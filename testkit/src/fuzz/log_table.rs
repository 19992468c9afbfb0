//! `log_table`: operation sequences applied to the canonical handoff log
//! (SPEC §6) — [`MemoryLog`](baton::durable::MemoryLog) and, with the
//! `sqlite` feature, `SqliteLog` (an empty log per input, see
//! `log_stores`) — every answer compared with the ghost reference
//! (`log_ghost`), and R1, R3, R6, R7, R8 and R9 checked on every answer,
//! as far as they can be seen at the log (R2 and R4 are about seals, R5
//! about liveness: a log cannot show them).
//!
//! An [`Op`] claims, appends, finishes, retires or reads a Run named from a small set (two
//! root Runs, each with Runs `run-0` and `run-1`: the same Run id under two
//! roots), or by ids that are mostly invalid (empty, over-long, control
//! characters, raw text). Appends carry an epoch picked relative to what
//! the log issued (the current one, one a worker saw, a stale one, one
//! never issued, zero, `u64::MAX`) and a pause differing from others by
//! intent, source invocation or payload, or made invalid. A reply may be
//! *lost*: the harness still checks it (it is the log's test), but the
//! worker never sees it — a lost claim's epoch is not among the epochs a
//! worker holds, and a lost append is what [`Op::Retry`] sends again
//! (which must then answer `AlreadyDurable` if the first one wrote).
//! [`Op::Reopen`] closes the SQLite file and opens it again: what was
//! acknowledged must all be read back.
//!
//! The harness keeps its own books of what each Run was issued and what
//! was acknowledged (`Book`), and after every step reads back the facts of
//! the Run it touched from every store: they must match the books, so an
//! operation that was refused wrote nothing.

pub use super::log_ghost::{Answer, Payload, Refusal};
pub use super::log_ops::{
    Call, EpochPick, FieldPick, Flaw, IdPick, MAX_OPS, Op, Ops, PausePick, RunPick, SourcePick,
};

use super::log_ghost::Ghost;
use super::log_ops::{make_outcome, make_pause};
use super::log_stores::Stores;
use super::{Rejected, Violation};
use baton::durable::{Appended, Claim, Epoch, Finished, HandoffLog, Receipt, Retirement, RunFacts};
use baton::facts::Invocation;

/// The harness's books on one Run: what the log issued and acknowledged.
#[derive(Clone, Debug)]
struct Book {
    root_run_id: String,
    run_id: String,
    /// Every epoch a claim issued, in order.
    issued: Vec<Epoch>,
    /// The epochs whose claim reply a worker saw.
    held: Vec<Epoch>,
    /// The pause an append was acknowledged for, with its epoch.
    acknowledged: Option<(Epoch, Appended<Payload>)>,
    /// The outcome a finish was acknowledged for, with its epoch.
    finished: Option<(Epoch, Finished<Payload>)>,
}

impl Book {
    fn last(&self) -> Epoch {
        self.issued.last().copied().unwrap_or(Epoch::NONE)
    }

    /// The facts a store must hold for this Run.
    fn facts(&self) -> RunFacts<Payload> {
        let mut facts = RunFacts::empty(&self.root_run_id, &self.run_id);
        facts.epoch = self.last();
        facts
            .pauses
            .extend(self.acknowledged.as_ref().map(|(_, row)| row.clone()));
        facts.finished = self.finished.as_ref().map(|(_, done)| done.clone());
        facts
    }
}

/// The stores, the ghost, the books, and the append waiting for a retry.
struct Harness<'a> {
    stores: Option<Stores<'a>>,
    ghost: Ghost,
    books: Vec<Book>,
    /// The last append (or finish) whose reply was lost, and what it
    /// answered.
    lost: Option<(Call, Answer)>,
    /// The root Runs a retirement was acknowledged for (their books are
    /// gone).
    retired: Vec<String>,
}

impl<'a> Harness<'a> {
    fn new(stores: Option<Stores<'a>>) -> Self {
        Harness {
            stores,
            ghost: Ghost::default(),
            books: Vec::new(),
            lost: None,
            retired: Vec::new(),
        }
    }

    fn is_retired(&self, root_run_id: &str) -> bool {
        self.retired.iter().any(|root| root == root_run_id)
    }

    /// The facts a store must hold for the Run, by the books.
    fn expected_facts(&self, root_run_id: &str, run_id: &str) -> RunFacts<Payload> {
        let mut facts = self
            .book(root_run_id, run_id)
            .map_or_else(|| RunFacts::empty(root_run_id, run_id), Book::facts);
        facts.retired = self.is_retired(root_run_id);
        facts
    }

    fn book(&self, root_run_id: &str, run_id: &str) -> Option<&Book> {
        self.books
            .iter()
            .find(|book| book.root_run_id == root_run_id && book.run_id == run_id)
    }

    fn book_mut(&mut self, root_run_id: &str, run_id: &str) -> &mut Book {
        let index = match self
            .books
            .iter()
            .position(|book| book.root_run_id == root_run_id && book.run_id == run_id)
        {
            Some(index) => index,
            None => {
                self.books.push(Book {
                    root_run_id: root_run_id.to_owned(),
                    run_id: run_id.to_owned(),
                    issued: Vec::new(),
                    held: Vec::new(),
                    acknowledged: None,
                    finished: None,
                });
                self.books.len() - 1
            }
        };
        &mut self.books[index]
    }

    /// `op` with its picks resolved against the books (`None`: a retry
    /// with nothing to retry).
    fn resolve(&self, op: &Op) -> Option<Call> {
        Some(match op {
            Op::Claim { run, .. } => {
                let (root, run) = run.ids();
                Call::Claim(root, run)
            }
            Op::Facts(run) => {
                let (root, run) = run.ids();
                Call::Facts(root, run)
            }
            Op::Reopen => Call::Reopen,
            Op::Retry => return self.lost.as_ref().map(|(call, _)| call.clone()),
            Op::Append {
                run,
                source,
                epoch,
                pause,
                ..
            } => {
                let (root, run) = run.ids();
                let source = Invocation {
                    session_id: source.session.clone().unwrap_or_else(|| "session".into()),
                    turn_id: "turn".into(),
                    run_id: run,
                    invocation_id: format!("invocation-{}", source.invocation % 2),
                };
                let epoch = self.epoch(&root, &source.run_id, *epoch);
                let pause = make_pause(&root, &source, pause);
                Call::Append(root, source, epoch, pause)
            }
            Op::Finish {
                run,
                source,
                epoch,
                outcome,
                ..
            } => {
                let (root, run) = run.ids();
                let source = Invocation {
                    session_id: source.session.clone().unwrap_or_else(|| "session".into()),
                    turn_id: "turn".into(),
                    run_id: run,
                    invocation_id: format!("invocation-{}", source.invocation % 2),
                };
                let epoch = self.epoch(&root, &source.run_id, *epoch);
                Call::Finish(root, source, epoch, make_outcome(outcome))
            }
            Op::Retire(run) => Call::Retire(run.ids().0),
        })
    }

    fn epoch(&self, root: &str, run: &str, pick: EpochPick) -> Epoch {
        let book = self.book(root, run);
        let last = book.map_or(0, |book| book.last().get());
        match pick {
            EpochPick::Current => Epoch::new(last),
            EpochPick::Held(n) => book
                .and_then(|book| {
                    let held = &book.held;
                    let back = usize::from(n) % held.len().max(1);
                    held.len().checked_sub(back + 1).map(|i| held[i])
                })
                .unwrap_or(Epoch::NONE),
            EpochPick::Stale(n) => Epoch::new(last.saturating_sub(u64::from(n) + 1)),
            EpochPick::Ahead(n) => Epoch::new(last.saturating_add(u64::from(n) + 1)),
            EpochPick::Zero => Epoch::NONE,
            EpochPick::Max => Epoch::new(u64::MAX),
        }
    }

    /// The ghost's answer to `call`.
    fn expect(&mut self, call: &Call) -> Answer {
        match call {
            Call::Claim(root, run) => self.ghost.claim(root, run),
            Call::Append(root, source, epoch, pause) => {
                self.ghost.append(root, source, *epoch, pause)
            }
            Call::Facts(root, run) => self.ghost.facts(root, run),
            Call::Reopen => Answer::Reopened(Ok(())),
            Call::Finish(root, source, epoch, outcome) => {
                self.ghost.finish(root, source, *epoch, outcome)
            }
            Call::Retire(root) => self.ghost.retire(root),
        }
    }

    /// Checks R1, R3, R6, R7, R8 and R9 on a store's answer, against the books as
    /// they were before the call.
    fn check_rules(&self, store: &str, call: &Call, answer: &Answer) -> Result<(), Violation> {
        if let (Call::Retire(root), Answer::Retired(Ok(Retirement::Retired { .. }))) =
            (call, answer)
        {
            let open = self.books.iter().find(|book| {
                book.root_run_id == *root
                    && book.acknowledged.is_none()
                    && book.finished.is_none()
                    && !book.issued.is_empty()
            });
            ensure!(
                open.is_none(),
                "R9",
                "{store} retired root Run {root:?} while a Run of it was open: {open:?}"
            );
        }
        let Some((root, run)) = call.run() else {
            return Ok(());
        };
        let book = self.book(root, run);
        let last = book.map_or(Epoch::NONE, Book::last);
        let acknowledged = book.and_then(|book| book.acknowledged.as_ref());
        let finished = book.and_then(|book| book.finished.as_ref());
        let retired = self.is_retired(root);
        let wrote = matches!(
            answer,
            Answer::Appended(Ok(_))
                | Answer::Finished(Ok(_))
                | Answer::Claimed(Ok(Claim::Owner(_)))
        );
        ensure!(
            !(retired && wrote),
            "R9",
            "{store} answered {answer:?} under the retired root Run {root:?}"
        );
        match (call, answer) {
            (Call::Claim(..), Answer::Claimed(Ok(Claim::Retired))) => {
                ensure!(
                    retired,
                    "R3",
                    "{store} answered Retired for a root never retired"
                );
            }
            (Call::Claim(..), Answer::Claimed(Ok(Claim::Finished(outcome)))) => {
                ensure!(
                    finished.is_some_and(|(_, done)| done.outcome == *outcome),
                    "R3",
                    "{store} answered Finished({outcome:?}); acknowledged: {finished:?}"
                );
            }
            (Call::Finish(_, source, epoch, outcome), Answer::Finished(Ok(receipt))) => {
                ensure!(
                    *epoch != Epoch::NONE && *epoch <= last,
                    "R7",
                    "{store} accepted a finish under epoch {epoch}, never issued (last {last})"
                );
                ensure!(
                    *epoch == last,
                    "R8",
                    "{store} accepted a finish under epoch {epoch} after epoch {last} was issued"
                );
                ensure!(
                    acknowledged.is_none(),
                    "R8",
                    "{store} finished a Run whose pause was durable: {acknowledged:?}"
                );
                if let Some((first, done)) = finished {
                    ensure!(
                        first == epoch && done.source == *source && done.outcome == *outcome,
                        "R8",
                        "{store} acknowledged a second finish ({receipt:?}) after {done:?}"
                    );
                }
                ensure!(
                    (*receipt == Receipt::Written) == finished.is_none(),
                    "R3",
                    "{store} answered {receipt:?}; finished before: {finished:?}"
                );
            }
            (Call::Append(..), Answer::Appended(Ok(_))) if finished.is_some() => {
                ensure!(
                    false,
                    "R8",
                    "{store} handed off a Run that had finished: {finished:?}"
                );
            }
            (Call::Claim(..), Answer::Claimed(Ok(Claim::Owner(epoch)))) => {
                ensure!(
                    finished.is_none(),
                    "R8",
                    "{store} issued epoch {epoch} after the Run finished: {finished:?}"
                );
                ensure!(
                    acknowledged.is_none(),
                    "R1",
                    "{store} issued epoch {epoch} after a pause was durable: {acknowledged:?}"
                );
                ensure!(
                    *epoch > last,
                    "R1",
                    "{store} issued epoch {epoch}, not newer than {last}: two owners"
                );
            }
            (Call::Claim(..), Answer::Claimed(Ok(Claim::HandedOff(pause)))) => {
                ensure!(
                    acknowledged.is_some_and(|(_, row)| row.pause == *pause),
                    "R3",
                    "{store} answered HandedOff({pause:?}); acknowledged: {acknowledged:?}"
                );
            }
            (Call::Append(_, source, epoch, pause), Answer::Appended(Ok(receipt))) => {
                ensure!(
                    *epoch != Epoch::NONE && *epoch <= last,
                    "R7",
                    "{store} accepted an append under epoch {epoch}, never issued (last {last})"
                );
                ensure!(
                    *epoch == last,
                    "R1",
                    "{store} accepted an append under epoch {epoch} after epoch {last} was issued"
                );
                if let Some((first, row)) = acknowledged {
                    ensure!(
                        first == epoch && row.source == *source && row.pause == *pause,
                        "R6",
                        "{store} acknowledged a second append ({receipt:?}, epoch {epoch}) after \
                         {row:?} under epoch {first}"
                    );
                }
                ensure!(
                    (*receipt == Receipt::Written) == acknowledged.is_none(),
                    "R3",
                    "{store} answered {receipt:?}; acknowledged before: {acknowledged:?}"
                );
            }
            (Call::Facts(..), Answer::Facts(Ok(facts))) => {
                let books = self.expected_facts(root, run);
                ensure!(
                    *facts == books,
                    "R3",
                    "{store}'s facts {facts:?}, acknowledged {books:?}"
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// Keeps the books of a step whose answer (the ghost's, which every
    /// store agreed with) is `answer`.
    fn keep_books(&mut self, op: &Op, call: &Call, answer: &Answer) {
        let lost = matches!(
            op,
            Op::Claim { lost: true, .. }
                | Op::Append { lost: true, .. }
                | Op::Finish { lost: true, .. }
        );
        match (call, answer) {
            (Call::Claim(root, run), Answer::Claimed(Ok(Claim::Owner(epoch)))) => {
                let book = self.book_mut(root, run);
                book.issued.push(*epoch);
                if !lost {
                    book.held.push(*epoch);
                }
            }
            (Call::Append(root, source, epoch, pause), Answer::Appended(Ok(Receipt::Written))) => {
                let row = Appended {
                    source: source.clone(),
                    pause: pause.clone(),
                };
                self.book_mut(root, &source.run_id).acknowledged = Some((*epoch, row));
            }
            (
                Call::Finish(root, source, epoch, outcome),
                Answer::Finished(Ok(Receipt::Written)),
            ) => {
                let done = Finished {
                    source: source.clone(),
                    outcome: outcome.clone(),
                };
                self.book_mut(root, &source.run_id).finished = Some((*epoch, done));
            }
            (Call::Retire(root), Answer::Retired(Ok(Retirement::Retired { .. }))) => {
                self.books.retain(|book| book.root_run_id != *root);
                self.retired.push(root.clone());
            }
            _ => {}
        }
        match op {
            Op::Append { lost: true, .. } | Op::Finish { lost: true, .. } => {
                self.lost = Some((call.clone(), answer.clone()));
            }
            Op::Retry => self.lost = None,
            _ => {}
        }
    }
}

/// The `log_table` target: applies `input` to [`MemoryLog`] and (feature
/// `sqlite`) `SqliteLog`, checking R1, R3, R6, R7, R8 and R9 on every answer, every
/// answer against the ghost's, and the touched Run's facts against the
/// books after every step (every Run's after a reopen). Panics on a
/// violation, with the trace of the steps before it.
///
/// [`MemoryLog`]: baton::durable::MemoryLog
pub fn log_table(input: Ops) -> Result<(), Rejected> {
    drive(&input, Stores::new())
}

/// The `log_table` body on a store of your own: applies `input` to `log`
/// (which must be empty: make a new one per input), checking R1, R3, R6, R7, R8 and R9
/// on every answer, every answer against the ghost's (the shared rule's
/// reference, written apart from it), and the touched Run's facts after
/// every step. [`Op::Reopen`] is answered `Ok` without touching `log`
/// (a store whose restart you want fuzzed reopens in its own target).
/// Panics on a violation, with the trace of the steps before it.
///
/// The body of a fuzz target of your own (`fuzz/fuzz_targets/my_log.rs`
/// wraps it in libfuzzer-sys's `fuzz_target!(|input: Ops| -> Corpus {
/// … })`, keeping an input the body accepts and rejecting one it answers
/// `Err(Rejected)`, as baton's `fuzz/fuzz_targets/log_table.rs` does),
/// here on `MemoryLog` where yours names your store:
///
/// ```
/// use baton::durable::MemoryLog;
/// use baton_testkit::fuzz::log_store;
/// use baton_testkit::fuzz::log_table::Ops;
///
/// /// Whether the fuzzer keeps `input` (a violation panics instead).
/// fn my_log_target(input: Ops) -> bool {
///     log_store(input, &MemoryLog::new()).is_ok()
/// }
/// assert!(my_log_target(Ops(Vec::new())));
/// ```
pub fn log_store<L: HandoffLog<Payload>>(input: Ops, log: &L) -> Result<(), Rejected> {
    drive(&input, Stores::theirs(std::any::type_name::<L>(), log))
}

/// Applies `input` to `stores`, panicking on the first violation.
fn drive(input: &Ops, stores: Stores<'_>) -> Result<(), Rejected> {
    if input.0.len() > MAX_OPS {
        return Err(Rejected);
    }
    let mut harness = Harness::new(Some(stores));
    for (index, op) in input.0.iter().enumerate() {
        if let Err(violation) = harness.step(op) {
            fail(&violation, input, index);
        }
    }
    Ok(())
}

impl Harness<'_> {
    /// One step: resolve, ask the ghost and every store, check, keep the
    /// books, read the facts back.
    fn step(&mut self, op: &Op) -> Result<Answer, Violation> {
        let Some(call) = self.resolve(op) else {
            return Ok(Answer::NothingToRetry);
        };
        let expected = self.expect(&call);
        let Some(stores) = self.stores.as_mut() else {
            self.keep_books(op, &call, &expected);
            return Ok(expected);
        };
        let answers = stores.apply(&call);
        for (store, answer) in &answers {
            self.check_rules(store, &call, answer)?;
        }
        let retired_since = call.run().is_some_and(|(root, _)| self.is_retired(root));
        let idempotent = match (&self.lost, retired_since) {
            (Some((_, Answer::Appended(Ok(Receipt::Written)))), false) => {
                Some(Answer::Appended(Ok(Receipt::AlreadyDurable)))
            }
            (Some((_, Answer::Finished(Ok(Receipt::Written)))), false) => {
                Some(Answer::Finished(Ok(Receipt::AlreadyDurable)))
            }
            _ => None,
        };
        if let (Op::Retry, Some(idempotent)) = (op, idempotent) {
            for (store, answer) in &answers {
                ensure!(
                    *answer == idempotent,
                    "SPEC §6 (a write retried after a lost reply is idempotent)",
                    "the lost write wrote; {store} answered its retry {answer:?}"
                );
            }
        }
        for (store, answer) in &answers {
            ensure!(
                *answer == expected,
                "SPEC §6 (the ghost's answer)",
                "{call:?}: {store} answered {answer:?}, the ghost {expected:?}"
            );
        }
        self.keep_books(op, &call, &expected);
        let refused = matches!(
            expected,
            Answer::Claimed(Err(_))
                | Answer::Appended(Err(_))
                | Answer::Finished(Err(_))
                | Answer::Retired(Err(_))
                | Answer::Reopened(Err(_))
        );
        let facts: Vec<RunFacts<Payload>> =
            match call.run() {
                Some((root, run)) => vec![self.expected_facts(root, run)],
                None => {
                    // Every Run in the books, and a Run under each tombstone
                    // (R10: nothing of a retired root comes back).
                    let mut all: Vec<_> = self.books.iter().map(Book::facts).collect();
                    all.extend(self.retired.iter().flat_map(|root| {
                        ["run-0", "run-1"].map(|run| self.expected_facts(root, run))
                    }));
                    all
                }
            };
        let rule = match (&call, refused) {
            (Call::Reopen, _) => "SPEC §6 (what was acknowledged survives a restart)",
            (Call::Retire(_), false) => "R10",
            (_, true) => "SPEC §6 (a refused operation writes nothing)",
            (_, false) => "R3",
        };
        let stores = self.stores.as_ref().expect("checked above");
        stores.check_facts(&facts, rule)?;
        let acknowledged = self
            .books
            .iter()
            .filter(|b| b.acknowledged.is_some())
            .count();
        stores.check_len(acknowledged, rule)?;
        Ok(expected)
    }
}

#[cold]
#[inline(never)]
fn fail(violation: &Violation, input: &Ops, index: usize) -> ! {
    let mut lines = String::new();
    walk(input, index + 1, &mut |step, op, answer| {
        lines.push_str(&format!("  {step:>3}: Op::{op:?} -> {answer:?}\n"));
    });
    panic!("{violation}\n  at op {index}\ntrace (the ghost's answers):\n{lines}{input:#?}");
}

/// Calls `visit` with each step of `input` (its index, the operation and
/// the ghost's answer), up to `steps` steps, without any store and without
/// checking anything: a failure trace, a corpus's coverage.
pub fn walk(input: &Ops, steps: usize, visit: &mut dyn FnMut(usize, &Op, &Answer)) {
    let mut harness = Harness::new(None);
    for (index, op) in input.0.iter().take(steps).enumerate() {
        if let Ok(answer) = harness.step(op) {
            visit(index, op, &answer);
        }
    }
}
