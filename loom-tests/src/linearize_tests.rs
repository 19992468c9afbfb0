//! The linearizability checker must reject what the table forbids, not only
//! accept what the adapter does: each history here is small enough to
//! decide by hand.

use std::sync::Arc;

use baton::GateError;
use baton::gate::core::{State, Ticket};
use baton_testkit::linearize::{Call, GateOp, GateSpec, World, linearize};

use crate::fixtures::{self, intent, pause_for};

type Op = GateOp<u8>;

fn call(invoked: u64, returned: u64, op: Op) -> Call<Op> {
    Call {
        invoked,
        returned,
        op,
    }
}

fn explained(initial: World<u8>, history: &[Call<Op>]) -> bool {
    linearize(&GateSpec::new(fixtures::config()), initial, history).is_some()
}

fn reserve(name: &str, result: Result<u64, GateError>) -> Op {
    GateOp::Reserve {
        intent: intent(name),
        result: result.map(Ticket::new),
    }
}

fn held(ticket: u64) -> World<u8> {
    World {
        gate: State::Held {
            ticket: Ticket::new(ticket),
            pause: Arc::new(pause_for(intent("a"))),
        },
        canceled: false,
    }
}

/// S1: of two overlapping reserves one may win; both winning is unexplained.
#[test]
fn overlapping_reserves_are_explained_only_if_one_wins() {
    let one = [
        call(1, 4, reserve("a", Ok(0))),
        call(2, 3, reserve("b", Err(GateError::Busy))),
    ];
    assert!(explained(World::initial(), &one));
    let both = [
        call(1, 4, reserve("a", Ok(0))),
        call(2, 3, reserve("b", Ok(0))),
    ];
    assert!(!explained(World::initial(), &both));
}

/// Real-time order: a reserve refused `Busy` before the winner began is
/// unexplained, though the same calls overlapping are.
#[test]
fn a_busy_reserve_that_returned_before_the_winner_began_is_unexplained() {
    let history = [
        call(1, 2, reserve("b", Err(GateError::Busy))),
        call(3, 4, reserve("a", Ok(0))),
    ];
    assert!(!explained(World::initial(), &history));
}

/// S7 and S4: a boundary taking several steps around a requester's reserve,
/// ready and commit is explained when it returns the committed pause, and
/// not when it returns nothing.
#[test]
fn a_boundary_is_explained_in_several_steps_and_must_return_its_commit() {
    let pause = pause_for(intent("a"));
    let boundary = |result: Option<_>| GateOp::Boundary {
        preflight: Some((intent("a"), Some(pause.clone()))),
        result,
    };
    let rest = [
        call(2, 3, reserve("a", Ok(0))),
        call(
            4,
            5,
            GateOp::Ready {
                ticket: Ticket::new(0),
                held: Some(pause.clone()),
            },
        ),
        call(
            6,
            7,
            GateOp::Commit {
                ticket: Ticket::new(0),
                committed: true,
            },
        ),
    ];
    let with = |op| [vec![call(1, 20, op)], rest.to_vec()].concat();
    assert!(explained(
        World::initial(),
        &with(boundary(Some(pause.clone())))
    ));
    assert!(!explained(World::initial(), &with(boundary(None))));
}

/// S3: a commit after the cancellation fired is unexplained; overlapping
/// the fire, it is.
#[test]
fn a_commit_is_explained_only_before_the_cancellation() {
    let fire = call(1, 2, GateOp::Fire);
    let commit = |invoked| {
        call(
            invoked,
            10,
            GateOp::Commit {
                ticket: Ticket::new(0),
                committed: true,
            },
        )
    };
    assert!(!explained(held(0), &[fire.clone(), commit(3)]));
    assert!(explained(held(0), &[fire, commit(1)]));
}

/// S5: a seal wait resolving with a pause nobody sealed is unexplained.
#[test]
fn a_wait_resolving_without_a_seal_is_unexplained() {
    let committed = World {
        gate: State::Committed {
            ticket: Ticket::new(0),
            pause: Arc::new(pause_for(intent("a"))),
        },
        canceled: false,
    };
    let wait = GateOp::Wait {
        ticket: Ticket::new(0),
        sealed: Some(pause_for(intent("a"))),
    };
    assert!(!explained(
        committed.clone(),
        &[call(1, 4, wait.clone()), call(2, 3, GateOp::Close)]
    ));
    let seal = GateOp::Seal {
        pause: pause_for(intent("a")),
        sealed: true,
    };
    assert!(explained(committed, &[call(1, 4, wait), call(2, 3, seal)]));
}

/// S2: a final snapshot the operations cannot produce is unexplained: a
/// stale release landing after a newer reserve leaves that one live.
#[test]
fn a_snapshot_the_operations_cannot_produce_is_unexplained() {
    let requested = World {
        gate: State::Requested {
            ticket: Ticket::new(0),
            intent: intent("a").into(),
        },
        canceled: false,
    };
    let boundary = GateOp::Boundary {
        preflight: Some((intent("a"), None)),
        result: None,
    };
    let history = |last: State<u8>| {
        [
            call(
                1,
                10,
                GateOp::Release {
                    ticket: Ticket::new(0),
                },
            ),
            call(2, 3, boundary.clone()),
            call(4, 5, reserve("b", Ok(1))),
            call(
                11,
                12,
                GateOp::Snapshot(World {
                    gate: last,
                    canceled: false,
                }),
            ),
        ]
    };
    let live = State::Requested {
        ticket: Ticket::new(1),
        intent: intent("b").into(),
    };
    assert!(explained(requested.clone(), &history(live)));
    let released = State::Running {
        next: Ticket::new(2),
    };
    assert!(!explained(requested, &history(released)));
}
