//! Renders the transition table as Markdown by running [`step`] on one
//! representative state of each kind: the table in the docs is the core's
//! own behaviour, never a hand-kept copy.

use std::fmt::Write as _;
use std::sync::Arc;

use super::core::{Config, Event, Outcome, State, StateKind, Ticket, step};
use crate::facts::{HandoffIntent, HandoffPause, Invocation};

/// The live ticket T* of every representative state.
pub(super) const LIVE: Ticket = Ticket::new(1);
/// A ticket that is not the live one.
pub(super) const STALE: Ticket = Ticket::new(0);

pub(super) struct Sample {
    pub(super) config: Config,
    pub(super) intent: Arc<HandoffIntent>,
    pub(super) invalid: Arc<HandoffIntent>,
    pub(super) prepared: HandoffPause<u8>,
    pub(super) other: HandoffPause<u8>,
    pub(super) mismatched: HandoffPause<u8>,
}

impl Sample {
    pub(super) fn new() -> Self {
        let source = Invocation {
            session_id: "session".into(),
            turn_id: "turn".into(),
            run_id: "run".into(),
            invocation_id: "invocation".into(),
        };
        let intent = HandoffIntent {
            handoff_id: "handoff".into(),
            host_epoch: "epoch".into(),
            root_run_id: "run".into(),
            successor_run_id: "successor-run".into(),
            successor_invocation_id: "successor-invocation".into(),
            claim_id: "claim".into(),
        };
        let invalid = HandoffIntent {
            handoff_id: String::new(),
            ..intent.clone()
        };
        let mismatched = HandoffPause {
            intent: Arc::new(HandoffIntent {
                claim_id: "another-claim".into(),
                ..intent.clone()
            }),
            execution: 1,
        };
        let intent = Arc::new(intent);
        Self {
            config: Config::new(source, "run".into()),
            prepared: HandoffPause::new(Arc::clone(&intent), 1),
            other: HandoffPause::new(Arc::clone(&intent), 2),
            mismatched,
            intent,
            invalid: Arc::new(invalid),
        }
    }

    pub(super) fn state(&self, kind: StateKind) -> State<u8> {
        let pause = Arc::new(self.prepared.clone());
        match kind {
            StateKind::Running => State::Running { next: LIVE },
            StateKind::Requested => State::Requested {
                ticket: LIVE,
                intent: self.intent.clone(),
            },
            StateKind::Held => State::Held {
                ticket: LIVE,
                pause,
            },
            StateKind::Committed => State::Committed {
                ticket: LIVE,
                pause,
            },
            StateKind::Sealed => State::Sealed {
                ticket: LIVE,
                pause,
            },
            StateKind::Closed => State::Closed,
        }
    }
}

pub(super) type Row = (&'static str, fn(&Sample, Ticket) -> Event<u8>);

/// The rows of the table: an event template given the sample and a ticket.
pub(super) const ROWS: [Row; 12] = [
    ("`Reserve(intent)`", |s, _| Event::Reserve(s.intent.clone())),
    ("`Reserve(invalid or other root Run)`", |s, _| {
        Event::Reserve(s.invalid.clone())
    }),
    ("`Preflight(T, Some(p))`, p.intent = intent", |s, t| {
        Event::Preflight {
            ticket: t,
            pause: Some(s.prepared.clone()),
            canceled: false,
        }
    }),
    ("`Preflight(T, None)`", |_, t| Event::Preflight {
        ticket: t,
        pause: None,
        canceled: false,
    }),
    ("`Preflight(T, Some(p))`, p.intent ≠ intent", |s, t| {
        Event::Preflight {
            ticket: t,
            pause: Some(s.mismatched.clone()),
            canceled: false,
        }
    }),
    ("`Preflight(T, Some(p), canceled)`", |s, t| {
        Event::Preflight {
            ticket: t,
            pause: Some(s.prepared.clone()),
            canceled: true,
        }
    }),
    ("`Cancel(T)` (drop, cancellation)", |_, t| Event::Cancel(t)),
    ("`Commit(T, canceled=false)`", |_, t| Event::Commit {
        ticket: t,
        canceled: false,
    }),
    ("`Commit(T, canceled=true)`", |_, t| Event::Commit {
        ticket: t,
        canceled: true,
    }),
    ("`Seal(p)`, p = the prepared pause", |s, _| {
        Event::Seal(Arc::new(s.prepared.clone()))
    }),
    ("`Seal(p)`, p ≠ the prepared pause", |s, _| {
        Event::Seal(Arc::new(s.other.clone()))
    }),
    ("`Close`", |_, _| Event::Close),
];

fn describe(outcome: Outcome<u8>) -> String {
    match outcome {
        Outcome::Moved(State::Requested { .. }) => "→ Requested{new T}; Ok(T)".into(),
        Outcome::Moved(next) => format!("→ {}", next.kind().name()),
        Outcome::Ignored => "ignored".into(),
        Outcome::Refused(error) => format!("Err {}", error.name()),
    }
}

/// The handoff gate's transition table as Markdown, computed by running the
/// core's [`step`] on one state of each kind (live ticket T*) with the event
/// of each row, once with T = T* and once with a stale ticket.
///
/// The copy in the crate docs and in docs/guide/gate.md is checked against this.
pub fn render_table() -> String {
    let sample = Sample::new();
    let mut out = String::from("| event ↓ / state → |");
    for kind in StateKind::ALL {
        let star = if matches!(kind, StateKind::Running | StateKind::Closed) {
            ""
        } else {
            "{T*}"
        };
        let _ = write!(out, " {}{star} |", kind.name());
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(StateKind::ALL.len()));
    out.push('\n');
    for (label, event) in ROWS {
        let _ = write!(out, "| {label} |");
        for kind in StateKind::ALL {
            let state = sample.state(kind);
            let live = describe(step(&sample.config, &state, event(&sample, LIVE)));
            let stale = describe(step(&sample.config, &state, event(&sample, STALE)));
            if live == stale {
                let _ = write!(out, " {live} |");
            } else {
                let _ = write!(out, " T=T*: {live}; else {stale} |");
            }
        }
        out.push('\n');
    }
    out
}
