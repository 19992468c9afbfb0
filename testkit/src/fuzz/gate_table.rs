//! `gate_table`: operation sequences applied to the core table
//! ([`core::step`](baton::gate::core::step)), every step checked against the ghost reference (S1–S9).
//!
//! An [`Op`] names an event relative to the current state (the live ticket,
//! a stale one, the stored pause…) so that short random inputs reach deep
//! states; [`Ops`] prints as the Rust literal of the sequence, and a
//! violation panics with the trace of states the sequence went through.

use std::fmt;
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};

use super::ghost::Ghost;
use super::{Rejected, intent_named, source};
use baton::facts::{HandoffIntent, HandoffPause, MAX_ID_BYTES};
use baton::gate::core::{Config, Event, Outcome, State, StateKind, Ticket, step};

/// The most operations one input may hold; longer inputs are rejected.
pub const MAX_OPS: usize = 64;

/// A fuzz input: where the gate starts, then the operations. Decoding
/// stops after `MAX_OPS + 1` operations: the input is rejected anyway.
#[derive(Clone)]
pub struct Ops {
    /// The first state.
    pub start: Start,
    /// The operations, in order.
    pub ops: Vec<Op>,
}

impl<'a> Arbitrary<'a> for Ops {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Ops {
            start: u.arbitrary()?,
            ops: u.arbitrary()?,
        })
    }

    fn arbitrary_take_rest(mut u: Unstructured<'a>) -> arbitrary::Result<Self> {
        let start = u.arbitrary()?;
        let ops = super::take_ops(u, MAX_OPS)?;
        Ok(Ops { start, ops })
    }
}

/// The first state of the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Start {
    /// A new gate: `Running{next: #0}`.
    Fresh,
    /// `Running{next: u64::MAX - n % 3}`: the tickets are about to run out.
    NearExhaustion(u8),
}

/// One event, named relative to the current state.
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// `Reserve(intent)`.
    Reserve(IntentPick),
    /// `Preflight{ticket, pause, canceled}`; `None`: preflight failed.
    Preflight {
        /// The ticket the worker observed.
        ticket: TicketPick,
        /// The pause it prepared.
        pause: Option<PausePick>,
        /// The cancellation bit when it finished.
        canceled: bool,
    },
    /// `Cancel(ticket)`: a handle dropped, or the Run canceled.
    Cancel(TicketPick),
    /// `Commit{ticket, canceled}`.
    Commit {
        /// The requester's ticket.
        ticket: TicketPick,
        /// The cancellation bit.
        canceled: bool,
    },
    /// `Seal(pause)`.
    Seal(PausePick),
    /// `Close`.
    Close,
}

/// One of three valid intents, told apart by their `handoff_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Name {
    /// `handoff_id: "A"`
    A,
    /// `handoff_id: "B"`
    B,
    /// `handoff_id: "C"`
    C,
}

/// Which intent a `Reserve` offers.
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub enum IntentPick {
    /// A valid intent.
    Named(Name),
    /// A valid intent but for this `handoff_id` (valid or not: S9).
    HandoffId(String),
    /// An intent with one defect (S9).
    Defective(Defect),
}

/// What is wrong with a defective intent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Defect {
    /// The n-th field (mod 6, declaration order) is empty.
    Empty(u8),
    /// The n-th field is one byte over [`MAX_ID_BYTES`].
    TooLong(u8),
    /// The n-th field contains a control character.
    ControlCharacter(u8),
    /// `successor_run_id` is the source's `run_id`.
    SuccessorRunIsSource,
    /// `successor_invocation_id` is the source's `invocation_id`.
    SuccessorInvocationIsSource,
    /// `root_run_id` names another Run.
    OtherRoot,
}

/// Which ticket an event carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum TicketPick {
    /// The state's ticket; in `Running{next}`, `next`; in `Closed`, #0.
    Live,
    /// `n + 1` below the live one (wrapping).
    Stale(u8),
    /// `n + 1` above the live one (wrapping).
    Ahead(u8),
    /// Exactly this ticket.
    Raw(u64),
}

/// Which pause an event carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum PausePick {
    /// A pause for the requested intent (the stored pause's intent outside
    /// `Requested`; `A` if none) with this execution.
    ForRequested(u8),
    /// A copy of the stored pause (as `ForRequested(0)` if none).
    Stored,
    /// A pause for the intent of this name.
    For(Name, u8),
}

impl Name {
    fn intent(self) -> HandoffIntent {
        intent_named(match self {
            Name::A => "A",
            Name::B => "B",
            Name::C => "C",
        })
    }
}

impl IntentPick {
    fn intent(&self) -> HandoffIntent {
        match self {
            IntentPick::Named(name) => name.intent(),
            IntentPick::HandoffId(id) => intent_named(id),
            IntentPick::Defective(defect) => defect.intent(),
        }
    }
}

impl Defect {
    fn intent(self) -> HandoffIntent {
        let mut intent = Name::A.intent();
        fn field(intent: &mut HandoffIntent, n: u8) -> &mut String {
            match n % 6 {
                0 => &mut intent.handoff_id,
                1 => &mut intent.host_epoch,
                2 => &mut intent.root_run_id,
                3 => &mut intent.successor_run_id,
                4 => &mut intent.successor_invocation_id,
                _ => &mut intent.claim_id,
            }
        }
        match self {
            Defect::Empty(n) => field(&mut intent, n).clear(),
            Defect::TooLong(n) => *field(&mut intent, n) = "x".repeat(MAX_ID_BYTES + 1),
            Defect::ControlCharacter(n) => field(&mut intent, n).push('\u{7}'),
            Defect::SuccessorRunIsSource => intent.successor_run_id = source().run_id,
            Defect::SuccessorInvocationIsSource => {
                intent.successor_invocation_id = source().invocation_id
            }
            Defect::OtherRoot => intent.root_run_id = "other".into(),
        }
        intent
    }
}

impl TicketPick {
    fn ticket(self, state: &State<u8>) -> Ticket {
        let live = match state {
            State::Running { next } => next.get(),
            State::Closed => 0,
            _ => state.ticket().map_or(0, |t| t.get()),
        };
        Ticket::new(match self {
            TicketPick::Live => live,
            TicketPick::Stale(n) => live.wrapping_sub(u64::from(n) + 1),
            TicketPick::Ahead(n) => live.wrapping_add(u64::from(n) + 1),
            TicketPick::Raw(t) => t,
        })
    }
}

impl PausePick {
    fn pause(self, state: &State<u8>) -> HandoffPause<u8> {
        // The intent the gate holds, shared as a preflight receives it.
        let requested = || match state {
            State::Requested { intent, .. } => Arc::clone(intent),
            _ => state
                .pause()
                .map_or_else(|| Arc::new(Name::A.intent()), |p| Arc::clone(&p.intent)),
        };
        match self {
            PausePick::ForRequested(execution) => HandoffPause::new(requested(), execution),
            PausePick::Stored => state.pause().map_or_else(
                || PausePick::ForRequested(0).pause(state),
                |p| HandoffPause::clone(p),
            ),
            // A separately made intent: equal to the requested one when the
            // name is, compared by value.
            PausePick::For(name, execution) => HandoffPause::new(name.intent(), execution),
        }
    }
}

impl Op {
    /// The core event this operation feeds in `state`.
    pub fn event(&self, state: &State<u8>) -> Event<u8> {
        match self {
            Op::Reserve(pick) => Event::Reserve(std::sync::Arc::new(pick.intent())),
            Op::Preflight {
                ticket,
                pause,
                canceled,
            } => Event::Preflight {
                ticket: ticket.ticket(state),
                pause: pause.map(|p| p.pause(state)),
                canceled: *canceled,
            },
            Op::Cancel(ticket) => Event::Cancel(ticket.ticket(state)),
            Op::Commit { ticket, canceled } => Event::Commit {
                ticket: ticket.ticket(state),
                canceled: *canceled,
            },
            Op::Seal(pause) => Event::Seal(std::sync::Arc::new(pause.pause(state))),
            Op::Close => Event::Close,
        }
    }
}

impl Start {
    fn state(self) -> State<u8> {
        match self {
            Start::Fresh => State::initial(),
            Start::NearExhaustion(n) => State::Running {
                next: Ticket::new(u64::MAX - u64::from(n % 3)),
            },
        }
    }
}

/// Prints as the Rust expression that rebuilds the input, one op a line.
impl fmt::Debug for Ops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Ops {{ start: Start::{:?}, ops: vec![", self.start)?;
        for (index, op) in self.ops.iter().enumerate() {
            writeln!(f, "    /* {index:>3} */ Op::{op:?},")?;
        }
        write!(f, "] }}")
    }
}

/// The `gate_table` target: applies `input` to the core table and checks
/// every step against the ghost reference. Panics on a violation, with the
/// trace of the steps before it.
pub fn gate_table(input: Ops) -> Result<(), Rejected> {
    if input.ops.len() > MAX_OPS {
        return Err(Rejected);
    }
    let config = Config::new(source(), super::ROOT_RUN.into());
    let mut state = input.start.state();
    let mut ghost = Ghost::new(&state);
    for (index, op) in input.ops.iter().enumerate() {
        let event = op.event(&state);
        let (fed, expect) = ghost.expect(&event);
        let outcome = step(&config, &state, event);
        if let Err(violation) = ghost.check(fed, expect, &state, &outcome) {
            fail(&violation, &input, index, &state, &outcome);
        }
        if let Outcome::Moved(next) = outcome {
            state = next;
        }
    }
    Ok(())
}

/// Reports a violation at op `index` and panics: out of line, so the hot
/// loop's stack frame stays small.
#[cold]
#[inline(never)]
fn fail(
    violation: &dyn fmt::Display,
    input: &Ops,
    index: usize,
    state: &State<u8>,
    outcome: &Outcome<u8>,
) -> ! {
    let op = &input.ops[index];
    panic!(
        "{violation}\n  at op {index} Op::{op:?} = {:?}\n  in {state:?}\n  gave {outcome:?}\n\
         trace:\n{}{input:#?}",
        op.event(state),
        trace(input, index),
    );
}

/// One step of the table, as the coverage of a corpus counts it: the kind
/// of state, the kind of event, and what came out (`Running`…, `ignored`,
/// `Err Busy`…).
pub type Cell = (StateKind, &'static str, String);

/// Calls `visit` with each step `input` takes through the table, up to
/// `steps` steps (a failure trace, a corpus's coverage of the table).
pub fn walk(input: &Ops, steps: usize, visit: &mut dyn FnMut(&Op, Cell)) {
    let config = Config::new(source(), super::ROOT_RUN.into());
    let mut state = input.start.state();
    for op in input.ops.iter().take(steps) {
        let event = op.event(&state);
        let name = match &event {
            Event::Reserve(_) => "Reserve",
            Event::Preflight { .. } => "Preflight",
            Event::Cancel(_) => "Cancel",
            Event::Commit { .. } => "Commit",
            Event::Seal(_) => "Seal",
            Event::Close => "Close",
        };
        let outcome = step(&config, &state, event);
        let verdict = match &outcome {
            Outcome::Moved(next) => format!("{:?}", next.kind()),
            Outcome::Ignored => "ignored".into(),
            Outcome::Refused(error) => format!("Err {}", error.name()),
        };
        visit(op, (state.kind(), name, verdict));
        if let Outcome::Moved(next) = outcome {
            state = next;
        }
    }
}

/// The first `steps` steps of `input`, one line each (for a failure report).
fn trace(input: &Ops, steps: usize) -> String {
    let mut lines = String::new();
    let mut index = 0;
    walk(input, steps, &mut |op, (kind, _, verdict)| {
        lines.push_str(&format!(
            "  {index:>3}: {kind:?} --Op::{op:?}--> {verdict}\n"
        ));
        index += 1;
    });
    lines
}
