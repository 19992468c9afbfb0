//! `LedgerSpec` explains a history the real ledger core produced, and
//! refuses one in which an outcome is delivered twice (D1) — so a user's
//! check built on it can fail.
#![cfg(not(loom))]

use std::time::Duration;

use baton::ledger::core::{Arrival, Child, Event, Ledger, Outcome, step};
use baton_testkit::linearize::{Call, LedgerOp, LedgerSpec, linearize};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Kid;

impl Child for Kid {
    fn begin_ending(&self) {}
    fn is_being_ended(&self) -> bool {
        false
    }
}

type Op = LedgerOp<u8, Kid, Duration>;

/// Runs `events` one after another on a fresh core and records each with
/// what it returned: a history with no overlap.
fn sequential(events: Vec<Event<u8, Kid, Duration>>) -> (Vec<Call<Op>>, Ledger<u8, Kid>) {
    let mut ledger = Ledger::new();
    let mut calls = Vec::new();
    for (at, event) in (0u64..).zip(events) {
        let outcome = step(&mut ledger, event.clone());
        calls.push(Call {
            invoked: 2 * at + 1,
            returned: 2 * at + 2,
            op: LedgerOp { event, outcome },
        });
    }
    (calls, ledger)
}

fn setup() -> Vec<Event<u8, Kid, Duration>> {
    vec![
        Event::ScopeTask("task".into()),
        Event::Register {
            id: "a".into(),
            task: "task".into(),
            data: 7,
            started: Duration::ZERO,
        },
        Event::Arrive("a".into()),
    ]
}

#[test]
fn a_history_of_the_real_core_is_linearizable() {
    let mut events = setup();
    events.push(Event::TakeArrived);
    events.push(Event::Arrive("a".into()));
    let (calls, _) = sequential(events);
    assert_eq!(
        calls[4].op.outcome,
        Outcome::Arrived(Arrival::AlreadyDelivered)
    );
    let order = linearize(&LedgerSpec::new(), Ledger::new(), &calls);
    assert_eq!(order, Some(vec![0, 1, 2, 3, 4]));
}

#[test]
fn d1_two_takes_that_both_got_the_outcome_are_not_linearizable() {
    let (mut calls, mut after) = sequential(setup());
    let taken = step(&mut after, Event::TakeArrived);
    let Outcome::Took(entries) = &taken else {
        panic!("a take answers Took");
    };
    assert_eq!(entries.len(), 1, "the arrived entry is taken");
    // Two overlapping takes, each observed to return the same delivery.
    for invoked in [10, 11] {
        calls.push(Call {
            invoked,
            returned: invoked + 5,
            op: LedgerOp {
                event: Event::TakeArrived,
                outcome: taken.clone(),
            },
        });
    }
    assert_eq!(
        linearize(&LedgerSpec::new(), Ledger::new(), &calls),
        None,
        "D1: an outcome delivered twice must not be explained"
    );
    // Either one alone is explained.
    calls.pop();
    assert!(linearize(&LedgerSpec::new(), Ledger::new(), &calls).is_some());
}
