//! Every cell of the transition table, and every waiter query, pinned.

use std::sync::Arc;

use super::core::{self, Event, Outcome, Refusal, State, StateKind, Ticket, Wait, step};
use super::table::{LIVE, ROWS, STALE, Sample};
use super::{GateError, render_table};
use crate::facts::{Field, IntentError};

/// What a cell must do. Written by hand from SPEC §1, independently of
/// `step`; `To` gives the exact next state.
#[derive(Clone, Copy, Debug)]
enum Expect {
    To(fn(&Sample) -> State<u8>),
    Ignored,
    Err(fn() -> Refusal),
}

use Expect::{Ignored, To};

fn requested(s: &Sample) -> State<u8> {
    State::Requested {
        ticket: LIVE,
        intent: s.intent.clone(),
    }
}
fn held(s: &Sample) -> State<u8> {
    State::Held {
        ticket: LIVE,
        pause: Arc::new(s.prepared.clone()),
    }
}
fn committed(s: &Sample) -> State<u8> {
    State::Committed {
        ticket: LIVE,
        pause: Arc::new(s.prepared.clone()),
    }
}
fn sealed(s: &Sample) -> State<u8> {
    State::Sealed {
        ticket: LIVE,
        pause: Arc::new(s.prepared.clone()),
    }
}
/// Released (S8): running again, the next ticket after the released one.
fn released(_: &Sample) -> State<u8> {
    State::Running {
        next: LIVE.successor(),
    }
}
fn closed(_: &Sample) -> State<u8> {
    State::Closed
}

const BUSY: Expect = Expect::Err(|| Refusal::Reserve(GateError::Busy));
const HANDED_OFF: Expect = Expect::Err(|| Refusal::Reserve(GateError::HandedOff));
const CLOSED: Expect = Expect::Err(|| Refusal::Reserve(GateError::Closed));
const NOT_HELD: Expect = Expect::Err(|| Refusal::NotHeld);
const CANCELED: Expect = Expect::Err(|| Refusal::Canceled);
const INVALID: Expect = Expect::Err(|| {
    Refusal::Reserve(GateError::InvalidInput(IntentError::Empty(
        Field::HandoffId,
    )))
});

/// `[row][state kind]` = (with T = T*, with a stale T), rows as in `ROWS`,
/// states in `StateKind::ALL` order: Running, Requested, Held, Committed,
/// Sealed, Closed.
const EXPECTED: [[(Expect, Expect); 6]; 12] = {
    const I: (Expect, Expect) = (Ignored, Ignored);
    [
        // Reserve(intent): S1 one at a time.
        [
            (To(requested), To(requested)),
            (BUSY, BUSY),
            (BUSY, BUSY),
            (HANDED_OFF, HANDED_OFF),
            (HANDED_OFF, HANDED_OFF),
            (CLOSED, CLOSED),
        ],
        // Reserve(invalid): S9 bad input changes nothing, in every state.
        [(INVALID, INVALID); 6],
        // Preflight ok: only the live request becomes Held.
        [I, (To(held), Ignored), I, I, I, I],
        // Preflight None: S8 release.
        [I, (To(released), Ignored), I, I, I, I],
        // Preflight mismatched: S8 release.
        [I, (To(released), Ignored), I, I, I, I],
        // Preflight canceled: S8 release.
        [I, (To(released), Ignored), I, I, I, I],
        // Cancel(T): S2 stale is inert, S4 no way back after commit.
        [I, (To(released), Ignored), (To(released), Ignored), I, I, I],
        // Commit(T, false): S3 only from Held{T}.
        [
            (NOT_HELD, NOT_HELD),
            (NOT_HELD, NOT_HELD),
            (To(committed), NOT_HELD),
            (NOT_HELD, NOT_HELD),
            (NOT_HELD, NOT_HELD),
            (NOT_HELD, NOT_HELD),
        ],
        // Commit(T, true): S3 never with the cancel bit set.
        [
            (NOT_HELD, NOT_HELD),
            (NOT_HELD, NOT_HELD),
            (CANCELED, NOT_HELD),
            (NOT_HELD, NOT_HELD),
            (NOT_HELD, NOT_HELD),
            (NOT_HELD, NOT_HELD),
        ],
        // Seal(prepared): S5 only from Committed.
        [I, I, I, (To(sealed), To(sealed)), I, I],
        // Seal(other): S5 no forged seal.
        [I; 6],
        // Close: S6 terminal is terminal.
        [
            (To(closed), To(closed)),
            (To(closed), To(closed)),
            (To(closed), To(closed)),
            (To(closed), To(closed)),
            I,
            I,
        ],
    ]
};

fn check(sample: &Sample, expect: Expect, outcome: Outcome<u8>) -> Result<(), String> {
    match (expect, outcome) {
        (To(next), Outcome::Moved(actual)) if next(sample) == actual => Ok(()),
        (Ignored, Outcome::Ignored) => Ok(()),
        (Expect::Err(error), Outcome::Refused(actual)) if error() == actual => Ok(()),
        (expect, outcome) => Err(format!("expected {expect:?}, got {outcome:?}")),
    }
}

#[test]
fn every_cell_of_the_transition_table_moves_and_answers_as_specified() {
    let sample = Sample::new();
    let mut checked = 0;
    let mut failures = Vec::new();
    for ((label, event), row) in ROWS.iter().zip(EXPECTED) {
        for (kind, (live, stale)) in StateKind::ALL.into_iter().zip(row) {
            let state = sample.state(kind);
            for (ticket, expect) in [(LIVE, live), (STALE, stale)] {
                let outcome = step(&sample.config, &state, event(&sample, ticket));
                if let Err(why) = check(&sample, expect, outcome) {
                    failures.push(format!("{label} in {kind:?} with {ticket}: {why}"));
                }
                checked += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "cells that broke SPEC §1:\n{}",
        failures.join("\n")
    );
    assert_eq!(checked, 12 * 6 * 2);
}

/// S5: the sealed pause is the committed `Arc`, whether the seal offers
/// that very `Arc` or an equal copy; a copy is never sealed in its place.
#[test]
fn s5_a_seal_keeps_the_committed_arc_whichever_equal_pause_is_offered() {
    let sample = Sample::new();
    let pause = Arc::new(sample.prepared.clone());
    let state = State::Committed {
        ticket: LIVE,
        pause: Arc::clone(&pause),
    };
    let copy = Arc::new(sample.prepared.clone());
    for offered in [Arc::clone(&pause), copy] {
        match step(&sample.config, &state, Event::Seal(offered)) {
            Outcome::Moved(State::Sealed {
                ticket,
                pause: sealed,
            }) => {
                assert_eq!(ticket, LIVE);
                assert!(Arc::ptr_eq(&sealed, &pause), "S5: not the committed Arc");
            }
            other => panic!("S5: a seal of the committed pause moved to {other:?}"),
        }
    }
}

#[test]
fn s9_an_intent_for_another_root_run_is_invalid_input_in_every_state() {
    let sample = Sample::new();
    let other = crate::facts::HandoffIntent {
        root_run_id: "other-run".into(),
        ..crate::facts::HandoffIntent::clone(&sample.intent)
    };
    for kind in StateKind::ALL {
        let outcome = step(
            &sample.config,
            &sample.state(kind),
            Event::Reserve(Arc::new(other.clone())),
        );
        assert_eq!(
            outcome,
            Outcome::Refused(Refusal::Reserve(GateError::InvalidInput(
                IntentError::OtherRootRun {
                    expected: "run".into(),
                    found: "other-run".into(),
                }
            ))),
            "in {kind:?}"
        );
    }
}

#[test]
fn s2_tickets_increase_and_never_repeat_across_releases() {
    let sample = Sample::new();
    let mut state = State::<u8>::initial();
    let mut seen = Vec::new();
    for round in 0..50 {
        let Outcome::Moved(next) = step(
            &sample.config,
            &state,
            Event::Reserve(sample.intent.clone()),
        ) else {
            panic!("reserve from Running must succeed");
        };
        let ticket = next.ticket().expect("Requested has a ticket");
        assert!(
            seen.last().is_none_or(|last| *last < ticket),
            "round {round}"
        );
        seen.push(ticket);
        let release = if round % 2 == 0 {
            Event::Cancel(ticket)
        } else {
            Event::Preflight {
                ticket,
                pause: None,
                canceled: false,
            }
        };
        let Outcome::Moved(running) = step(&sample.config, &next, release) else {
            panic!("release of the live ticket must be accepted");
        };
        state = running;
    }
}

#[test]
fn the_last_ticket_is_never_issued_so_none_can_repeat() {
    let sample = Sample::new();
    let last = State::<u8>::Running {
        next: Ticket::new(u64::MAX),
    };
    let outcome = step(&sample.config, &last, Event::Reserve(sample.intent.clone()));
    assert_eq!(
        outcome,
        Outcome::Refused(Refusal::Reserve(GateError::TicketsExhausted))
    );
    let almost = State::<u8>::Running {
        next: Ticket::new(u64::MAX - 1),
    };
    assert!(matches!(
        step(&sample.config, &almost, Event::Reserve(sample.intent.clone())),
        Outcome::Moved(State::Requested { ticket, .. }) if ticket.get() == u64::MAX - 1
    ));
}

/// `(query, name, the kind it is pending in, the kind it resolves in)`.
const QUERIES: [(core::Query<u8>, &str, StateKind, StateKind); 3] = [
    (core::ready, "ready", StateKind::Requested, StateKind::Held),
    (
        core::boundary,
        "boundary",
        StateKind::Held,
        StateKind::Committed,
    ),
    (core::seal, "seal", StateKind::Committed, StateKind::Sealed),
];

#[test]
fn s7_each_waiter_resolves_only_with_its_own_tickets_pause_and_is_gone_otherwise() {
    let sample = Sample::new();
    for (query, name, pending, resolves) in QUERIES {
        for kind in StateKind::ALL {
            let state = sample.state(kind);
            let stale = query(&state, STALE);
            assert_eq!(stale, Wait::Gone, "{name} with a stale ticket in {kind:?}");
            let live = query(&state, LIVE);
            let expected = if kind == pending {
                Wait::Pending
            } else if kind == resolves {
                Wait::Resolved(&Arc::new(sample.prepared.clone()))
            } else {
                Wait::Gone
            };
            assert_eq!(live.map_ref(), expected.map_ref(), "{name} in {kind:?}");
        }
    }
}

impl<'a, P> Wait<&'a Arc<P>> {
    fn map_ref(self) -> Wait<&'a P> {
        match self {
            Wait::Pending => Wait::Pending,
            Wait::Resolved(p) => Wait::Resolved(&**p),
            Wait::Gone => Wait::Gone,
        }
    }
}

#[test]
fn a_waiter_decision_is_none_while_pending_and_its_answer_once_decided() {
    assert_eq!(Wait::<u8>::Pending.decided(), None);
    assert_eq!(Wait::Resolved(3).decided(), Some(Some(3)));
    assert_eq!(Wait::<u8>::Gone.decided(), Some(None));
}

#[test]
fn the_boundary_sees_a_request_only_in_requested() {
    let sample = Sample::new();
    for kind in StateKind::ALL {
        let state = sample.state(kind);
        let seen = core::observe(&state);
        if kind == StateKind::Requested {
            assert_eq!(seen, Some((LIVE, &sample.intent)));
        } else {
            assert_eq!(seen, None, "in {kind:?}");
        }
    }
}

#[test]
fn begin_prepares_in_requested_returns_the_pause_in_committed_and_does_nothing_otherwise() {
    let sample = Sample::new();
    for kind in StateKind::ALL {
        let state = sample.state(kind);
        let begun = core::begin(&state);
        match kind {
            StateKind::Requested => {
                assert_eq!(begun, core::Begin::Requested(LIVE, &sample.intent));
            }
            // L3: a boundary after a lost committed boundary learns of the
            // commit, so reaching boundaries suffices to end the handoff.
            StateKind::Committed => {
                let core::Begin::Committed(pause) = begun else {
                    panic!("in Committed, begin must return the pause: {begun:?}");
                };
                assert_eq!(**pause, sample.prepared);
                assert!(std::ptr::eq(
                    pause,
                    state.pause().expect("Committed has one")
                ));
            }
            StateKind::Running | StateKind::Held | StateKind::Sealed | StateKind::Closed => {
                assert_eq!(begun, core::Begin::Nothing, "in {kind:?}");
            }
        }
    }
}

#[test]
fn observe_is_the_requested_case_of_begin_in_every_state_kind() {
    let sample = Sample::new();
    for kind in StateKind::ALL {
        let state = sample.state(kind);
        let expected = match core::begin(&state) {
            core::Begin::Requested(ticket, intent) => Some((ticket, intent)),
            core::Begin::Nothing | core::Begin::Committed(_) => None,
        };
        assert_eq!(core::observe(&state), expected, "in {kind:?}");
    }
}

/// The adapter answers these from a copy of the state's kind, without its
/// lock; they must be exactly what the table answers in every state of that
/// kind (S1 for `reserve`, L3 for `boundary`).
#[test]
fn reserve_refusal_is_the_tables_reserve_row_of_a_valid_intent_in_every_state_kind() {
    let sample = Sample::new();
    for kind in StateKind::ALL {
        let state = sample.state(kind);
        let outcome = step(
            &sample.config,
            &state,
            Event::Reserve(sample.intent.clone()),
        );
        match core::reserve_refusal(kind) {
            Some(refusal) => assert_eq!(
                outcome,
                Outcome::Refused(Refusal::Reserve(refusal)),
                "in {kind:?}"
            ),
            None => assert!(
                matches!(outcome, Outcome::Moved(State::Requested { .. })),
                "only Running may reserve, and it does: {outcome:?}"
            ),
        }
    }
}

#[test]
fn boundary_may_act_exactly_where_begin_finds_something_to_do() {
    let sample = Sample::new();
    for kind in StateKind::ALL {
        let nothing = core::begin(&sample.state(kind)) == core::Begin::Nothing;
        assert_eq!(kind.boundary_may_act(), !nothing, "in {kind:?}");
    }
}

/// S3 / S5 (linearizability): the steps decided on the worker's cancel
/// bit, read under the gate's lock while the bit changes without it, are
/// `Preflight` and `Commit`. One that reads the bit clear takes effect at
/// that read but publishes its kind later, so the kind it leaves may answer
/// from the lock-free copy only if the kind it moves to gives the same
/// answers wherever the first gives one.
/// Where it would not, `copy_may_answer` must be `false`; and it is `false`
/// nowhere else, so no answer takes the lock for nothing.
#[test]
fn the_copy_answers_only_kinds_whose_bit_decided_steps_keep_its_answers() {
    let sample = Sample::new();
    // What a reader answers from the copy alone: `reserve`'s refusal, and
    // `boundary`'s "no handoff asked"; `None` where it takes the lock.
    let answers = |kind: StateKind| {
        [
            core::reserve_refusal(kind).map(|refusal| format!("reserve: {refusal:?}")),
            (!kind.boundary_may_act()).then(|| "boundary: nothing asked".to_owned()),
        ]
    };
    // Every answer the copy of `from` gives is also `to`'s.
    let kept = |from: StateKind, to: StateKind| {
        answers(from)
            .into_iter()
            .zip(answers(to))
            .all(|(from, to)| from.is_none() || from == to)
    };
    let mut needs_the_lock = Vec::new();
    for kind in StateKind::ALL {
        let state = sample.state(kind);
        let decided_on_the_bit = |canceled| {
            [
                Event::Preflight {
                    ticket: LIVE,
                    pause: Some(sample.prepared.clone()),
                    canceled,
                },
                Event::Commit {
                    ticket: LIVE,
                    canceled,
                },
            ]
        };
        let clear = decided_on_the_bit(false);
        let set = decided_on_the_bit(true);
        for (clear, set) in clear.into_iter().zip(set) {
            let read_clear = step(&sample.config, &state, clear);
            if read_clear == step(&sample.config, &state, set) {
                continue; // the bit decides nothing here
            }
            match read_clear {
                Outcome::Moved(next) if !kept(kind, next.kind()) => needs_the_lock.push(kind),
                _ => {}
            }
        }
    }
    let copy_may_not_answer: Vec<_> = StateKind::ALL
        .into_iter()
        .filter(|kind| !kind.copy_may_answer())
        .collect();
    assert_eq!(copy_may_not_answer, needs_the_lock);
    assert_eq!(needs_the_lock, [StateKind::Held], "the commit's row");
}

#[test]
fn state_kinds_round_trip_through_their_index() {
    for (index, kind) in StateKind::ALL.into_iter().enumerate() {
        assert_eq!(kind as usize, index, "ALL is in declaration order");
        assert_eq!(StateKind::from_index(kind as u8), Some(kind));
    }
    for index in 6..=u8::MAX {
        assert_eq!(StateKind::from_index(index), None, "{index}");
    }
}

#[test]
fn only_sealed_and_closed_are_terminal() {
    let terminal: Vec<_> = StateKind::ALL
        .into_iter()
        .filter(|k| k.is_terminal())
        .collect();
    assert_eq!(terminal, [StateKind::Sealed, StateKind::Closed]);
}

#[test]
fn state_accessors_name_kind_ticket_and_pause() {
    let sample = Sample::new();
    for kind in StateKind::ALL {
        let state = sample.state(kind);
        assert_eq!(state.kind(), kind);
        let ticketed = !matches!(kind, StateKind::Running | StateKind::Closed);
        assert_eq!(state.ticket(), ticketed.then_some(LIVE), "{kind:?}");
        let paused = matches!(
            kind,
            StateKind::Held | StateKind::Committed | StateKind::Sealed
        );
        assert_eq!(
            state.pause().map(|p| &**p),
            paused.then_some(&sample.prepared),
            "{kind:?}"
        );
    }
}

#[test]
fn the_checked_in_table_is_the_one_the_core_renders() {
    let rendered = render_table();
    let checked_in = include_str!("table.md");
    if checked_in != rendered {
        if std::env::var_os("BATON_BLESS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/gate/table.md");
            std::fs::write(path, &rendered).expect("write table.md");
        }
        panic!("src/gate/table.md is stale; rerun with BATON_BLESS=1 to rewrite it:\n{rendered}");
    }
    let guide = include_str!("../../docs/guide/gate.md");
    assert!(
        guide.contains(&rendered),
        "docs/guide/gate.md must embed src/gate/table.md verbatim"
    );
}

#[test]
fn a_ticket_prints_as_its_number_and_a_config_names_its_run() {
    assert_eq!(Ticket::new(7).to_string(), "#7");
    assert_eq!(Ticket::new(7).get(), 7);
    assert_eq!(Ticket::new(7).successor(), Ticket::new(8));
    let sample = Sample::new();
    assert_eq!(sample.config.root_run_id(), "run");
    assert_eq!(sample.config.source().run_id, "run");
}

/// L1 with its reason: a waiter whose query says `Gone` learns from the
/// kind of state it was decided in whether its request was let go, the Run
/// handed off, or the gate closed — one assertion per kind.
#[test]
fn a_gone_waiter_is_told_released_handed_off_or_closed_by_the_state_kind() {
    use core::Gone;
    let expected = [
        (StateKind::Running, Gone::Released),
        (StateKind::Requested, Gone::Released),
        (StateKind::Held, Gone::Released),
        (StateKind::Committed, Gone::HandedOff),
        (StateKind::Sealed, Gone::HandedOff),
        (StateKind::Closed, Gone::Closed),
    ];
    assert_eq!(expected.map(|(kind, _)| kind), StateKind::ALL);
    for (kind, gone) in expected {
        assert_eq!(kind.gone(), gone, "{kind:?}");
    }
}
