//! The fuzz corpora and regressions, replayed on stable (SPEC §5
//! "fuzzing"): every file committed under `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/` runs through the same `baton_testkit::fuzz`
//! function as the cargo-fuzz target, decoded as `libfuzzer-sys` decodes it.
//! A clean clone must replay inputs for every target, so a corpus that was
//! not committed fails here instead of passing vacuously.
#![cfg(not(loom))] // the kit's fuzz bodies drive baton outside a loom model

use std::collections::BTreeSet;
use std::fs;
use std::panic::catch_unwind;
use std::path::{Path, PathBuf};

use baton::durable::{Claim, Receipt, Retirement};
use baton::gate::core::StateKind;
use baton::ledger::core::Waited;
use baton::ledger::{Arrival, RegisterError};
use baton_testkit::fuzz::ledger_table::{self, Op, Seen, WaitOp};
use baton_testkit::fuzz::log_table::{self, Answer, EpochPick, Flaw, PausePick, Refusal, RunPick};
use baton_testkit::fuzz::{Target, decode, facts_json, gate_adapter, gate_table};

/// The files in `fuzz/<folder>/<target>/`, sorted; none if it is missing.
fn files(folder: &str, target: Target) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(folder)
        .join(target.name());
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// Replays one file; panics naming it, with its decoded form and the
/// command that reproduces it under libFuzzer.
fn replay(target: Target, path: &Path) {
    let bytes = fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let outcome = catch_unwind(|| target.replay(&bytes));
    let reproduce = || {
        format!(
            "{}\n  decoded: {}\n  reproduce: cd fuzz && cargo +nightly fuzz run {} {}",
            path.display(),
            target
                .describe(&bytes)
                .unwrap_or_else(|| "(does not decode)".into()),
            target.name(),
            path.strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"))
                .unwrap_or(path)
                .display(),
        )
    };
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(_)) => panic!("rejected (too large, or does not decode): {}", reproduce()),
        Err(_) => panic!("crashed: {}", reproduce()),
    }
}

/// Every committed input of every target replays without a violation, and
/// each target has some: the corpora are really in the tree.
#[test]
fn every_committed_corpus_and_regression_input_replays_clean() {
    for target in Target::ALL {
        let corpus = files("corpus", target);
        let regressions = files("regressions", target);
        for path in corpus.iter().chain(&regressions) {
            replay(target, path);
        }
        println!(
            "{}: replayed {} corpus and {} regression inputs",
            target.name(),
            corpus.len(),
            regressions.len()
        );
        assert!(
            !corpus.is_empty(),
            "{}: no corpus committed under fuzz/corpus/{0}",
            target.name()
        );
    }
}

/// The committed `gate_table` corpus is not only clean but broad: it steps
/// every kind of event in every kind of state (6 × 6 cells of SPEC §1's
/// table), so a corpus that lost its depth fails here.
#[test]
fn the_gate_table_corpus_steps_every_event_in_every_state() {
    let mut cells = BTreeSet::new();
    let mut outcomes = BTreeSet::new();
    for path in files("corpus", Target::GateTable) {
        let bytes = fs::read(&path).expect("readable");
        let input: gate_table::Ops = decode(&bytes).expect("corpus inputs decode");
        gate_table::walk(&input, input.ops.len(), &mut |_, (kind, event, verdict)| {
            cells.insert((kind, event));
            outcomes.insert((kind, event, verdict));
        });
    }
    println!(
        "gate_table corpus: {} of 36 (state, event) cells, {} distinct outcomes",
        cells.len(),
        outcomes.len()
    );
    let missing: Vec<_> = StateKind::ALL
        .iter()
        .flat_map(|kind| EVENTS.iter().map(move |event| (*kind, *event)))
        .filter(|cell| !cells.contains(cell))
        .collect();
    assert!(missing.is_empty(), "cells never stepped: {missing:?}");
}

/// The kinds of event of the table, as `gate_table::walk` names them.
const EVENTS: [&str; 6] = ["Reserve", "Preflight", "Cancel", "Commit", "Seal", "Close"];

/// The committed `gate_adapter` corpus drives the adapter into every state.
#[test]
fn the_gate_adapter_corpus_reaches_every_state() {
    let mut reached = BTreeSet::new();
    for path in files("corpus", Target::GateAdapter) {
        let bytes = fs::read(&path).expect("readable");
        let input: gate_adapter::Ops = decode(&bytes).expect("corpus inputs decode");
        gate_adapter::run(&input.0, &mut |kind| {
            reached.insert(kind);
        })
        .expect("the corpus replays clean");
    }
    println!("gate_adapter corpus reaches {reached:?}");
    assert_eq!(
        reached.len(),
        StateKind::ALL.len(),
        "reached only {reached:?}"
    );
}

/// The committed `facts_json` corpus holds valid facts of each kind, so the
/// round-trip checks really run, not only the decoders' error paths.
#[test]
fn the_facts_json_corpus_round_trips_every_kind_of_fact() {
    let mut checked = [0usize; 3];
    for path in files("corpus", Target::FactsJson) {
        let bytes = fs::read(&path).expect("readable");
        for (count, hit) in checked.iter_mut().zip(facts_json::round_trips(&bytes)) {
            *count += usize::from(hit);
        }
    }
    println!("facts_json corpus: [invocation, intent, pause] round-tripped {checked:?}");
    assert!(checked.iter().all(|&count| count > 0), "{checked:?}");
}

/// What a `ledger_table` step did, as its corpus's coverage counts it.
fn ledger_label(op: &Op, seen: &Seen) -> Option<&'static str> {
    Some(match seen {
        Seen::Scoped(_, left) if left.iter().any(|row| row.child.is_some() && !row.arrived) => {
            "scope change ends a child"
        }
        Seen::ScopeEnded(Some(left)) if !left.is_empty() => "scope end takes entries",
        Seen::ScopeEnded(None) => "stale scope end changes nothing",
        Seen::Registered(Ok(())) => "register",
        Seen::Registered(Err(RegisterError::InvalidId(_))) => "register: InvalidId",
        Seen::Registered(Err(RegisterError::NoTaskInScope)) => "register: NoTaskInScope",
        Seen::Registered(Err(RegisterError::OtherTask { .. })) => "register: OtherTask",
        Seen::Registered(Err(RegisterError::DuplicateId)) => "register: DuplicateId",
        Seen::Adopted(ledger_table::Adopted::Adopted) => "adopt",
        Seen::Adopted(ledger_table::Adopted::Replaced(_)) => "adopt: Replaced",
        Seen::Adopted(ledger_table::Adopted::NotLive(_)) => "adopt: NotLive",
        Seen::Arrived(Arrival::Delivered) => "arrive: Delivered",
        Seen::Arrived(Arrival::AlreadyDelivered) => "arrive: AlreadyDelivered",
        Seen::Arrived(Arrival::NotOutstanding) => "arrive: NotOutstanding",
        Seen::Arrived(Arrival::BeingEnded) => "arrive: BeingEnded",
        Seen::Waited(Waited::Resolved) => match op {
            Op::Wait(WaitOp::Begin) => "wait resolves",
            _ => "pending wait resolves",
        },
        Seen::Waited(Waited::Pending) => "wait pends",
        Seen::Waited(Waited::Dropped) => "wait dropped",
        Seen::Waited(Waited::DroppedWakeOthers) => "wait dropped: wake-ups stay with the others",
        Seen::Waited(Waited::PassedOn) => "wait dropped: its wake-up passed on",
        Seen::Waited(Waited::NotWaiting) => "wait: none pending",
        Seen::Took(taken) if !taken.is_empty() => match op {
            Op::Discard(_) => "discard",
            Op::TakeArrived => "take_arrived",
            Op::TakeOverdue(_) => "take_overdue",
            Op::TakeAll => "take_all",
            _ => return None,
        },
        Seen::Next(Some(_)) => "next_overdue: Some",
        Seen::Next(None) => "next_overdue: None",
        _ => return None,
    })
}

/// The committed `ledger_table` corpus is broad: it reaches every answer of
/// every operation of SPEC §2 (each `Arrival`, each `RegisterError`, each
/// `Adoption`, a stale and a current scope end…), so D1–D6 are checked
/// where they can break, and a corpus that lost its depth fails here.
#[test]
fn the_ledger_table_corpus_reaches_every_answer_of_the_ledger() {
    const ALL: [&str; 28] = [
        "scope change ends a child",
        "scope end takes entries",
        "stale scope end changes nothing",
        "register",
        "register: InvalidId",
        "register: NoTaskInScope",
        "register: OtherTask",
        "register: DuplicateId",
        "adopt",
        "adopt: Replaced",
        "adopt: NotLive",
        "arrive: Delivered",
        "arrive: AlreadyDelivered",
        "arrive: NotOutstanding",
        "arrive: BeingEnded",
        "wait resolves",
        "pending wait resolves",
        "wait pends",
        "wait dropped",
        "wait dropped: wake-ups stay with the others",
        "wait dropped: its wake-up passed on",
        "wait: none pending",
        "discard",
        "take_arrived",
        "take_overdue",
        "take_all",
        "next_overdue: Some",
        "next_overdue: None",
    ];
    let mut reached = BTreeSet::new();
    for path in files("corpus", Target::LedgerTable) {
        let bytes = fs::read(&path).expect("readable");
        let input: ledger_table::Ops = decode(&bytes).expect("corpus inputs decode");
        ledger_table::walk(&input, input.0.len(), &mut |_, op, seen| {
            reached.extend(ledger_label(op, seen));
        });
    }
    println!(
        "ledger_table corpus reaches {} kinds of answer",
        reached.len()
    );
    let missing: Vec<_> = ALL
        .iter()
        .filter(|label| !reached.contains(*label))
        .collect();
    assert!(missing.is_empty(), "never reached: {missing:?}");
}

/// What a `log_table` step answered, as its corpus's coverage counts it.
fn log_label(op: &log_table::Op, answer: &Answer) -> Option<&'static str> {
    Some(match answer {
        Answer::Claimed(Ok(Claim::Owner(_))) => "claim: Owner",
        Answer::Claimed(Ok(Claim::HandedOff(_))) => "claim: HandedOff",
        Answer::Claimed(Ok(Claim::Finished(_))) => "claim: Finished",
        Answer::Claimed(Ok(Claim::Retired)) => "claim: Retired",
        Answer::Finished(Ok(Receipt::AlreadyDurable)) if *op == log_table::Op::Retry => {
            "finish: a retry after a lost reply is AlreadyDurable"
        }
        Answer::Finished(Ok(Receipt::Written)) => "finish: Written",
        Answer::Finished(Err(Refusal::Fenced { .. })) => "finish: Fenced",
        Answer::Finished(Err(Refusal::AlreadyFinished { .. })) => "finish: AlreadyFinished",
        Answer::Finished(Err(Refusal::AlreadyHandedOff { .. })) => "finish: AlreadyHandedOff",
        Answer::Finished(Err(Refusal::Retired { .. })) => "finish: Retired",
        Answer::Appended(Err(Refusal::AlreadyFinished { .. })) => "append: AlreadyFinished",
        Answer::Appended(Err(Refusal::Retired { .. })) => "append: Retired",
        Answer::Retired(Ok(Retirement::Retired { .. })) => "retire: Retired",
        Answer::Retired(Ok(Retirement::AlreadyRetired)) => "retire: AlreadyRetired",
        Answer::Retired(Err(Refusal::RunOpen { .. })) => "retire: RunOpen",
        Answer::Retired(Err(Refusal::NothingToRetire { .. })) => "retire: NothingToRetire",
        Answer::Claimed(Err(Refusal::InvalidRun { .. })) => "claim: InvalidRun",
        Answer::Appended(Ok(Receipt::AlreadyDurable)) if *op == log_table::Op::Retry => {
            "append: a retry after a lost reply is AlreadyDurable"
        }
        Answer::Appended(Ok(Receipt::Written)) => "append: Written",
        Answer::Appended(Ok(Receipt::AlreadyDurable)) => "append: AlreadyDurable",
        Answer::Appended(Err(Refusal::InvalidRun { .. })) => "append: InvalidRun",
        Answer::Appended(Err(Refusal::InvalidPause(_))) => "append: InvalidPause",
        Answer::Appended(Err(Refusal::AlreadyHandedOff { .. })) => "append: AlreadyHandedOff",
        Answer::Appended(Err(Refusal::Fenced { .. })) => "append: Fenced",
        Answer::Appended(Err(Refusal::EpochNotIssued { .. })) => "append: EpochNotIssued",
        Answer::Facts(Ok(facts)) if facts.pauses.is_empty() => "facts: open",
        Answer::Facts(Ok(_)) => "facts: handed off",
        Answer::Facts(Err(Refusal::InvalidRun { .. })) => "facts: InvalidRun",
        Answer::Reopened(Ok(())) => "reopen",
        _ => return None,
    })
}

/// The committed `log_table` corpus is broad: it reaches every answer of
/// SPEC §6's log (each receipt, each refusal an input can cause, a retry
/// after a lost reply, a restart, a finish, a retirement), so R1–R10 are
/// checked where they can break, and a corpus that lost its depth fails
/// here.
#[test]
fn the_log_table_corpus_reaches_every_answer_of_the_log() {
    const ALL: [&str; 29] = [
        "claim: Owner",
        "claim: HandedOff",
        "claim: Finished",
        "claim: Retired",
        "finish: a retry after a lost reply is AlreadyDurable",
        "finish: Written",
        "finish: Fenced",
        "finish: AlreadyFinished",
        "finish: AlreadyHandedOff",
        "finish: Retired",
        "append: AlreadyFinished",
        "append: Retired",
        "retire: Retired",
        "retire: AlreadyRetired",
        "retire: RunOpen",
        "retire: NothingToRetire",
        "claim: InvalidRun",
        "append: a retry after a lost reply is AlreadyDurable",
        "append: Written",
        "append: AlreadyDurable",
        "append: InvalidRun",
        "append: InvalidPause",
        "append: AlreadyHandedOff",
        "append: Fenced",
        "append: EpochNotIssued",
        "facts: open",
        "facts: handed off",
        "facts: InvalidRun",
        "reopen",
    ];
    let mut reached = BTreeSet::new();
    for path in files("corpus", Target::LogTable) {
        let bytes = fs::read(&path).expect("readable");
        let input: log_table::Ops = decode(&bytes).expect("corpus inputs decode");
        log_table::walk(&input, input.0.len(), &mut |_, op, answer| {
            reached.extend(log_label(op, answer));
        });
    }
    println!("log_table corpus reaches {} kinds of answer", reached.len());
    let missing: Vec<_> = ALL
        .iter()
        .filter(|label| !reached.contains(*label))
        .collect();
    assert!(missing.is_empty(), "never reached: {missing:?}");
}

/// A hand-written `log_table` input runs clean on both stores and its
/// ghost answers what SPEC §6 says: a lost append retried is
/// `AlreadyDurable`, a zombie's stale epoch is `Fenced`, a claim after the
/// handoff answers it, and it survives a restart.
#[test]
fn log_table_a_zombie_a_lost_reply_and_a_restart_run_clean() {
    use log_table::{IdPick, Op as L, SourcePick};
    let append = |epoch, handoff, lost| L::Append {
        run: RunPick::Slot(0),
        source: SourcePick {
            invocation: 0,
            session: None,
        },
        epoch,
        pause: PausePick {
            handoff,
            flaw: Flaw::None,
            payload: Ok(0),
        },
        lost,
    };
    let claim = L::Claim {
        run: RunPick::Slot(0),
        lost: false,
    };
    let ops = log_table::Ops(vec![
        claim.clone(),
        claim.clone(),
        append(EpochPick::Stale(0), 0, false),
        append(EpochPick::Current, 1, true),
        L::Retry,
        append(EpochPick::Current, 2, false),
        L::Reopen,
        claim,
        L::Facts(RunPick::Ids(IdPick::Empty, IdPick::Name(2))),
    ]);
    let mut answers = Vec::new();
    log_table::walk(&ops, ops.0.len(), &mut |_, _, answer| {
        answers.push(answer.clone())
    });
    let labels: Vec<_> = ops
        .0
        .iter()
        .zip(&answers)
        .map(|(op, a)| log_label(op, a))
        .collect();
    assert_eq!(
        labels,
        [
            "claim: Owner",
            "claim: Owner",
            "append: Fenced",
            "append: Written",
            "append: a retry after a lost reply is AlreadyDurable",
            "append: AlreadyHandedOff",
            "reopen",
            "claim: HandedOff",
            "facts: InvalidRun",
        ]
        .map(Some)
    );
    assert_eq!(log_table::log_table(ops), Ok(()));
}

/// A hand-written `log_table` input with the final fates and retention
/// runs clean on both stores, and its ghost answers what SPEC §6.1 says: a
/// zombie's finish is fenced, a lost finish retried is `AlreadyDurable`, a
/// finished Run takes no pause and is never resumed, a root with an open
/// Run is not retired, and a retired root resumes nothing and takes no
/// write, also after a restart.
#[test]
fn log_table_r8_r9_a_finish_and_a_retirement_run_clean() {
    use log_table::{Op as L, SourcePick};
    let source = SourcePick {
        invocation: 0,
        session: None,
    };
    let finish = |run, epoch, lost| L::Finish {
        run: RunPick::Slot(run),
        source: source.clone(),
        epoch,
        outcome: Ok(0),
        lost,
    };
    let claim = |run| L::Claim {
        run: RunPick::Slot(run),
        lost: false,
    };
    let append = L::Append {
        run: RunPick::Slot(0),
        source: source.clone(),
        epoch: EpochPick::Current,
        pause: PausePick {
            handoff: 0,
            flaw: Flaw::None,
            payload: Ok(0),
        },
        lost: false,
    };
    let ops = log_table::Ops(vec![
        claim(0),
        claim(0),
        finish(0, EpochPick::Stale(0), false),
        finish(0, EpochPick::Current, true),
        L::Retry,
        append.clone(),
        claim(0),
        claim(1),
        L::Retire(RunPick::Slot(0)),
        finish(1, EpochPick::Current, false),
        L::Retire(RunPick::Slot(1)),
        L::Retire(RunPick::Slot(0)),
        L::Reopen,
        claim(1),
        append,
    ]);
    let mut answers = Vec::new();
    log_table::walk(&ops, ops.0.len(), &mut |_, _, answer| {
        answers.push(answer.clone())
    });
    let labels: Vec<_> = ops
        .0
        .iter()
        .zip(&answers)
        .map(|(op, a)| log_label(op, a))
        .collect();
    assert_eq!(
        labels,
        [
            "claim: Owner",
            "claim: Owner",
            "finish: Fenced",
            "finish: Written",
            "finish: a retry after a lost reply is AlreadyDurable",
            "append: AlreadyFinished",
            "claim: Finished",
            "claim: Owner",
            "retire: RunOpen",
            "finish: Written",
            "retire: Retired",
            "retire: AlreadyRetired",
            "reopen",
            "claim: Retired",
            "append: Retired",
        ]
        .map(Some)
    );
    assert_eq!(log_table::log_table(ops), Ok(()));
}

/// Not a check: after `cargo fuzz cmin` (whose merge keeps inputs the
/// target rejects), removes the rejected ones from the corpora. Run with
/// `cargo test --all-features --test fuzz_replay -- --ignored`.
#[test]
#[ignore = "rewrites fuzz/corpus; run by hand after cargo fuzz cmin"]
fn remove_the_inputs_each_target_rejects_from_its_corpus() {
    for target in Target::ALL {
        let corpus = files("corpus", target);
        let rejected: Vec<&PathBuf> = corpus
            .iter()
            .filter(|path| target.replay(&fs::read(path).expect("readable")).is_err())
            .collect();
        for path in &rejected {
            fs::remove_file(path).expect("removable");
        }
        println!(
            "{}: removed {} of {} corpus inputs",
            target.name(),
            rejected.len(),
            corpus.len()
        );
    }
}

/// Replays the regression `name` of `target`.
fn regression(target: Target, name: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target.name())
        .join(name);
    assert!(path.is_file(), "{} is missing", path.display());
    replay(target, &path);
}

/// `[Reserve(A, Valid), Commit(A)]`. Root cause: the harness's `Commit`
/// took the slot's handle out before checking it was a held handoff, so it
/// dropped a live reservation the core still counted (a harness bug, not
/// baton's).
#[test]
fn gate_adapter_commit_of_a_slot_without_a_held_handoff_keeps_its_reservation() {
    regression(
        Target::GateAdapter,
        "commit-of-a-slot-without-a-held-handoff",
    );
}

/// `["host_epoch","]",",\\\\\\\\\\\\",""]` decoded as an `Invocation`. Root
/// cause: serde's derived `Deserialize` also accepts a struct as a JSON
/// array of its fields in declaration order. Facts now decode only from
/// JSON objects (SPEC §1), so it is refused as every fact.
#[test]
fn facts_json_a_fact_given_as_a_json_array_is_refused() {
    regression(Target::FactsJson, "a-fact-given-as-a-json-array");
    let path = "fuzz/regressions/facts_json/a-fact-given-as-a-json-array";
    let bytes = fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect("readable");
    assert_eq!(facts_json::round_trips(&bytes), [false; 3]);
}
