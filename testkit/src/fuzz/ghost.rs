//! The ghost reference for `gate_table`: the handoff gate re-derived from
//! SPEC §1 for the fuzzer, independently of `gate::core`.
//!
//! The ghost keeps flat facts (a live ticket, the requested intent, the
//! prepared pause, committed/sealed/closed flags) instead of a state enum,
//! and predicts each event's outcome with its own rules and its own intent
//! validation. [`Ghost::check`] then compares the core's outcome with the
//! prediction and checks S1–S9 on the transition itself, plus the waiter
//! queries (S1, S5, S7) on the state reached.

use std::hash::{DefaultHasher, Hash, Hasher};

use super::Violation;
use baton::facts::{HandoffIntent, MAX_ID_BYTES};
use baton::gate::core::{Event, Outcome, State, StateKind, Ticket};

mod rules;

use rules::{queries, transition};

/// The ghost's facts about the gate.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Ghost {
    /// The ticket of the reservation in progress (or committed, sealed).
    live: Option<u64>,
    /// The ticket the next reserve issues (no one is issued twice).
    next: u64,
    /// The requested intent's fingerprint.
    intent: Option<u64>,
    /// The prepared pause's fingerprint.
    pause: Option<u64>,
    committed: bool,
    sealed: bool,
    closed: bool,
    /// The last two tickets issued, newest first (query probes).
    recent: [Option<u64>; 2],
}

/// What the ghost predicts for one event.
#[derive(Debug)]
pub(super) enum Expect {
    /// The state moves to the ghost's next facts.
    Move(Ghost),
    /// The state stays; the outcome is `Ignored`.
    Ignore,
    /// The state stays; the outcome is `Refused` with this error.
    Refuse(&'static str),
}

/// What the transition checks need to know about the event, taken before it
/// is consumed by `step`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Fed {
    kind: &'static str,
    ticket: Option<Ticket>,
    canceled: bool,
    /// Reserve: the ghost finds the intent valid for this gate.
    valid: bool,
    /// Preflight: a pause for the requested intent; Seal: the stored pause.
    fits: bool,
}

/// A fingerprint of an intent or a pause: the ghost remembers facts by
/// fingerprint rather than by copy, so that checking costs no allocation.
fn print<T: Hash>(fact: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    fact.hash(&mut hasher);
    hasher.finish()
}

/// The ghost's own reading of SPEC §1's intent rules (S9).
fn valid(intent: &HandoffIntent) -> bool {
    let ids = [
        &intent.handoff_id,
        &intent.host_epoch,
        &intent.root_run_id,
        &intent.successor_run_id,
        &intent.successor_invocation_id,
        &intent.claim_id,
    ];
    let id_ok = |id: &String| {
        !id.is_empty() && id.len() <= MAX_ID_BYTES && !id.chars().any(char::is_control)
    };
    ids.into_iter().all(id_ok)
        && intent.successor_run_id != "run"
        && intent.successor_invocation_id != "invocation"
        && intent.root_run_id == super::ROOT_RUN
}

impl Ghost {
    /// The ghost of a gate starting in `Running{next}`.
    pub(super) fn new(start: &State<u8>) -> Self {
        let State::Running { next } = start else {
            panic!("the fuzzer starts gates in Running");
        };
        Ghost {
            live: None,
            next: next.get(),
            intent: None,
            pause: None,
            committed: false,
            sealed: false,
            closed: false,
            recent: [None; 2],
        }
    }

    fn terminal(&self) -> bool {
        self.sealed || self.closed
    }

    fn released(&self, ticket: u64) -> Ghost {
        Ghost {
            live: None,
            next: ticket.saturating_add(1),
            intent: None,
            pause: None,
            ..self.clone()
        }
    }

    /// Predicts `event`'s outcome from the ghost's facts alone.
    pub(super) fn expect(&self, event: &Event<u8>) -> (Fed, Expect) {
        let mut fed = Fed {
            kind: "",
            ticket: None,
            canceled: false,
            valid: false,
            fits: false,
        };
        let own = |ticket: Ticket| self.live == Some(ticket.get()) && !self.terminal();
        let expect = match event {
            Event::Reserve(intent) => {
                fed.kind = "Reserve";
                fed.valid = valid(intent);
                if !fed.valid {
                    Expect::Refuse("InvalidInput")
                } else if self.closed {
                    Expect::Refuse("Closed")
                } else if self.committed || self.sealed {
                    Expect::Refuse("HandedOff")
                } else if self.live.is_some() {
                    Expect::Refuse("Busy")
                } else if self.next == u64::MAX {
                    Expect::Refuse("TicketsExhausted")
                } else {
                    let mut next = self.clone();
                    next.live = Some(self.next);
                    next.next = self.next + 1;
                    next.intent = Some(print(intent));
                    next.recent = [Some(self.next), self.recent[0]];
                    Expect::Move(next)
                }
            }
            Event::Preflight {
                ticket,
                pause,
                canceled,
            } => {
                fed.kind = "Preflight";
                fed.ticket = Some(*ticket);
                fed.canceled = *canceled;
                fed.fits =
                    matches!((pause, &self.intent), (Some(p), Some(i)) if print(&p.intent) == *i);
                let requested = own(*ticket) && self.pause.is_none() && !self.committed;
                match pause {
                    _ if !requested => Expect::Ignore,
                    Some(pause) if fed.fits && !canceled => {
                        let mut next = self.clone();
                        next.pause = Some(print(pause));
                        Expect::Move(next)
                    }
                    _ => Expect::Move(self.released(ticket.get())),
                }
            }
            Event::Cancel(ticket) => {
                fed.kind = "Cancel";
                fed.ticket = Some(*ticket);
                if own(*ticket) && !self.committed {
                    Expect::Move(self.released(ticket.get()))
                } else {
                    Expect::Ignore
                }
            }
            Event::Commit { ticket, canceled } => {
                fed.kind = "Commit";
                fed.ticket = Some(*ticket);
                fed.canceled = *canceled;
                let held = own(*ticket) && self.pause.is_some() && !self.committed;
                if !held {
                    Expect::Refuse("NotHeld")
                } else if *canceled {
                    Expect::Refuse("Canceled")
                } else {
                    let mut next = self.clone();
                    next.committed = true;
                    Expect::Move(next)
                }
            }
            Event::Seal(pause) => {
                fed.kind = "Seal";
                fed.fits = self.pause == Some(print(pause));
                if self.committed && !self.terminal() && fed.fits {
                    let mut next = self.clone();
                    next.sealed = true;
                    Expect::Move(next)
                } else {
                    Expect::Ignore
                }
            }
            Event::Close => {
                fed.kind = "Close";
                if self.terminal() {
                    Expect::Ignore
                } else {
                    let mut next = self.clone();
                    next.closed = true;
                    Expect::Move(next)
                }
            }
        };
        (fed, expect)
    }

    /// Whether the core's `state` says what the ghost knows.
    fn agrees(&self, state: &State<u8>) -> bool {
        match state {
            State::Running { next } => {
                !self.terminal() && self.live.is_none() && next.get() == self.next
            }
            State::Requested { ticket, intent } => {
                self.live == Some(ticket.get())
                    && self.intent == Some(print(intent))
                    && self.pause.is_none()
                    && !self.committed
                    && !self.terminal()
            }
            State::Held { ticket, pause } | State::Committed { ticket, pause } => {
                self.live == Some(ticket.get())
                    && self.pause == Some(print(&**pause))
                    && self.committed == (state.kind() == StateKind::Committed)
                    && !self.terminal()
            }
            State::Sealed { ticket, pause } => {
                self.live == Some(ticket.get())
                    && self.pause == Some(print(&**pause))
                    && self.sealed
                    && !self.closed
            }
            State::Closed => self.closed && !self.sealed,
        }
    }

    /// Checks the core's step `before --fed--> outcome` against the
    /// prediction `expect`, then S1–S9; advances the ghost on success.
    pub(super) fn check(
        &mut self,
        fed: Fed,
        expect: Expect,
        before: &State<u8>,
        outcome: &Outcome<u8>,
    ) -> Result<(), Violation> {
        let after = match outcome {
            Outcome::Moved(next) => next,
            Outcome::Ignored | Outcome::Refused(_) => before,
        };
        match (&expect, outcome) {
            (Expect::Move(next), Outcome::Moved(state)) => {
                ensure!(
                    next.agrees(state),
                    "the table",
                    "ghost {next:?}, core {state:?}"
                );
            }
            (Expect::Ignore, Outcome::Ignored) => {}
            (Expect::Refuse(name), Outcome::Refused(error)) => {
                ensure!(
                    error.name() == *name,
                    "the table",
                    "expected Err {name}, got {error:?}"
                );
            }
            (expect, outcome) => {
                ensure!(false, "the table", "expected {expect:?}, got {outcome:?}");
            }
        }
        transition(fed, before, outcome, after)?;
        if let Expect::Move(next) = expect {
            *self = next;
        }
        let probes = [
            fed.ticket,
            before.ticket(),
            after.ticket(),
            self.recent[0].map(Ticket::new),
            self.recent[1].map(Ticket::new),
            Some(Ticket::new(0)),
            Some(Ticket::new(u64::MAX)),
        ];
        queries(after, probes.into_iter().flatten())
    }
}
