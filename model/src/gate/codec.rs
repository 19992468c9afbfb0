//! The bridge to baton's **real** gate core (and, for the durable system,
//! its real reconciliation).
//!
//! The model keeps the gate state in a compact, `Copy` form ([`Gate`]) whose
//! intents and pauses are indices into a fixed table of facts. Every
//! transition and every waiter answer comes from `baton::gate::core` itself:
//! [`Core`] decodes the compact state into a real [`State`], calls the real
//! function, and encodes the answer back. Because the core is pure, answers
//! are memoised per `(state, event)`; the memo is exact (keyed by the whole
//! compact state) and only saves repeated calls.

use std::cell::RefCell;
use std::sync::Arc;

use baton::durable::{self, Appended, Decision, ReconcileError, RunFacts};
use baton::facts::{HandoffIntent, HandoffPause, Invocation};
use baton::gate::core::{self, Config, Event, Outcome, State, Ticket, Wait};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

pub use super::compact::{Answer, Begun, Ev, Gate, Out, Query, Refusal};

/// What the restart's reconciliation decided (durable configurations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Decided {
    /// `Ok(Decision::HandedOff(pause))`: the successor owns the Run.
    HandedOff(u8),
    /// `Ok(Decision::Resumable)`: a new worker resumes the Run.
    Resumable,
    /// `Err(ReconcileError)`: the facts contradict each other.
    Contradiction,
}

/// A step function with the real core's signature; the model explores the
/// real [`core::step`] or a deliberately broken wrapper around it.
pub type StepFn = fn(&Config, &State<u8>, Event<u8>) -> Outcome<u8>;

/// A boundary query with the real `core::begin`'s signature; the model
/// explores the real one or, to show what it buys, an older adapter's
/// behaviour (see [`Core::with_begin`]).
pub type BeginFn = for<'a> fn(&'a State<u8>) -> core::Begin<'a, u8>;

/// The fixed table of facts for `k` requesters. Intent `r < k` is requester
/// `r`'s; intent `k + r` differs from it only in its claim (a mismatched
/// preflight); intent `2k` is malformed and `2k + 1` names another root Run.
/// Pause `2i + x` answers intent `i` with execution payload `x` (0: the one
/// prepared, 1: a forgery).
pub struct Facts {
    /// The gate's configuration.
    pub config: Config,
    intents: Vec<Arc<HandoffIntent>>,
    pauses: Vec<Arc<HandoffPause<u8>>>,
}

impl Facts {
    /// The table for `k` requesters.
    pub fn new(k: u8) -> Self {
        let source = Invocation {
            session_id: "session".into(),
            turn_id: "turn".into(),
            run_id: "run".into(),
            invocation_id: "invocation".into(),
        };
        let intent = |r: u8, claim: &str, root: &str| HandoffIntent {
            handoff_id: format!("handoff-{r}"),
            host_epoch: "epoch".into(),
            root_run_id: root.into(),
            successor_run_id: format!("run-{r}"),
            successor_invocation_id: format!("invocation-{r}"),
            claim_id: claim.into(),
        };
        let mut intents: Vec<_> = (0..k).map(|r| intent(r, "claim", "run")).collect();
        intents.extend((0..k).map(|r| intent(r, "another-claim", "run")));
        intents.push(HandoffIntent {
            handoff_id: String::new(),
            ..intent(0, "claim", "run")
        });
        intents.push(intent(0, "claim", "another-run"));
        let intents: Vec<_> = intents.into_iter().map(Arc::new).collect();
        let pauses = intents
            .iter()
            .flat_map(|i| (0..2).map(|x| Arc::new(HandoffPause::new(Arc::clone(i), x))))
            .collect();
        Self {
            config: Config::new(source, "run".into()),
            intents,
            pauses,
        }
    }

    /// Intent `i` of the table.
    pub fn intent(&self, i: u8) -> Arc<HandoffIntent> {
        Arc::clone(&self.intents[usize::from(i)])
    }

    /// Pause `p` of the table (answering intent `p / 2` with payload
    /// `p % 2`).
    pub fn pause(&self, p: u8) -> Arc<HandoffPause<u8>> {
        Arc::clone(&self.pauses[usize::from(p)])
    }

    /// The index of `intent` in the table.
    pub fn intent_index(&self, intent: &HandoffIntent) -> u8 {
        let i = self
            .intents
            .iter()
            .position(|i| **i == *intent)
            .expect("the core only keeps table intents");
        u8::try_from(i).expect("the table is small")
    }

    fn pause_index(&self, pause: &HandoffPause<u8>) -> u8 {
        let i = self
            .pauses
            .iter()
            .position(|p| **p == *pause)
            .expect("the core only keeps table pauses");
        u8::try_from(i).expect("the table is small")
    }

    /// The real state a compact one stands for.
    pub fn decode(&self, gate: Gate) -> State<u8> {
        let t = |t: u8| Ticket::new(u64::from(t));
        let p = |p: u8| Arc::clone(&self.pauses[p as usize]);
        match gate {
            Gate::Running { next } => State::Running { next: t(next) },
            Gate::Requested { ticket, intent } => State::Requested {
                ticket: t(ticket),
                intent: Arc::clone(&self.intents[intent as usize]),
            },
            Gate::Held { ticket, pause } => State::Held {
                ticket: t(ticket),
                pause: p(pause),
            },
            Gate::Committed { ticket, pause } => State::Committed {
                ticket: t(ticket),
                pause: p(pause),
            },
            Gate::Sealed { ticket, pause } => State::Sealed {
                ticket: t(ticket),
                pause: p(pause),
            },
            Gate::Closed => State::Closed,
        }
    }

    /// The compact form of a real state.
    pub fn encode(&self, state: &State<u8>) -> Gate {
        let t =
            |t: &Ticket| u8::try_from(t.get()).expect("the model issues fewer than 256 tickets");
        match state {
            State::Running { next } => Gate::Running { next: t(next) },
            State::Requested { ticket, intent } => Gate::Requested {
                ticket: t(ticket),
                intent: self.intent_index(intent),
            },
            State::Held { ticket, pause } => Gate::Held {
                ticket: t(ticket),
                pause: self.pause_index(pause),
            },
            State::Committed { ticket, pause } => Gate::Committed {
                ticket: t(ticket),
                pause: self.pause_index(pause),
            },
            State::Sealed { ticket, pause } => Gate::Sealed {
                ticket: t(ticket),
                pause: self.pause_index(pause),
            },
            State::Closed => Gate::Closed,
        }
    }

    /// The real event a compact one stands for.
    pub fn event(&self, ev: Ev) -> Event<u8> {
        let pause = |p: u8| HandoffPause::clone(&self.pauses[p as usize]);
        match ev {
            Ev::Reserve { intent } => Event::Reserve(Arc::clone(&self.intents[intent as usize])),
            Ev::Preflight {
                ticket,
                pause: p,
                canceled,
            } => Event::Preflight {
                ticket: Ticket::new(u64::from(ticket)),
                pause: p.map(pause),
                canceled,
            },
            Ev::Cancel { ticket } => Event::Cancel(Ticket::new(u64::from(ticket))),
            Ev::Commit { ticket, canceled } => Event::Commit {
                ticket: Ticket::new(u64::from(ticket)),
                canceled,
            },
            Ev::Seal { pause: p } => Event::Seal(Arc::clone(&self.pauses[p as usize])),
            Ev::Close => Event::Close,
        }
    }
}

/// A reconciliation with the real [`durable::reconcile`]'s signature; the
/// model calls the real one or a deliberately broken wrapper around it.
pub type ReconcileFn = fn(&RunFacts<u8>) -> Result<Decision<u8>, ReconcileError>;

/// Runs a step function and the real waiter queries on compact states.
pub struct Core {
    facts: Facts,
    step: StepFn,
    begin: BeginFn,
    reconcile: ReconcileFn,
    decided: RefCell<FxHashMap<Option<u8>, Decided>>,
    steps: RefCell<FxHashMap<(Gate, Ev), Out>>,
    answers: RefCell<FxHashMap<(Gate, Query, u8), Answer>>,
    begun: RefCell<FxHashMap<Gate, Begun>>,
}

impl Core {
    /// A core for `k` requesters running `step`.
    pub fn new(k: u8, step: StepFn) -> Self {
        Self {
            facts: Facts::new(k),
            step,
            begin: core::begin::<u8>,
            reconcile: durable::reconcile::<u8>,
            decided: RefCell::default(),
            steps: RefCell::default(),
            answers: RefCell::default(),
            begun: RefCell::default(),
        }
    }

    /// This core with `begin` in place of the real `core::begin`.
    pub fn with_begin(mut self, begin: BeginFn) -> Self {
        self.begin = begin;
        self
    }

    /// This core with `reconcile` in place of the real one.
    pub fn with_reconcile(mut self, reconcile: ReconcileFn) -> Self {
        self.reconcile = reconcile;
        self
    }

    /// What reconciliation decides from the durable log `log` (the pause
    /// row appended for the Run, if any): the facts the log holds about the
    /// gate's Run — its root Run, its source Run, and each row with the
    /// invocation that appended it (the gate's source) — passed to the
    /// real `baton::durable::reconcile`.
    pub fn reconcile(&self, log: Option<u8>) -> Decided {
        if let Some(decided) = self.decided.borrow().get(&log) {
            return *decided;
        }
        let config = &self.facts.config;
        let facts = RunFacts {
            root_run_id: config.root_run_id().into(),
            run_id: config.source().run_id.clone(),
            // This model has one owner epoch (crash-stop workers, an exact
            // failure detector): `reconcile` does not read it.
            epoch: durable::Epoch::new(1),
            pauses: log
                .iter()
                .map(|&p| Appended {
                    source: config.source().clone(),
                    pause: HandoffPause::clone(&self.facts.pauses[p as usize]),
                })
                .collect(),
            // The gate's log holds pause rows only: no finish, no tombstone.
            finished: None,
            retired: false,
        };
        let decided = match (self.reconcile)(&facts) {
            Ok(Decision::HandedOff(pause)) => Decided::HandedOff(self.facts.pause_index(&pause)),
            Ok(Decision::Resumable) => Decided::Resumable,
            // Facts without a finish or a tombstone answered Finished or
            // Retired: as wrong as a contradiction (the owner stops, and the
            // properties report it).
            Ok(Decision::Finished(_) | Decision::Retired) | Err(_) => Decided::Contradiction,
        };
        self.decided.borrow_mut().insert(log, decided);
        decided
    }

    /// The table of facts.
    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// `step(config, gate, ev)`.
    pub fn step(&self, gate: Gate, ev: Ev) -> Out {
        if let Some(out) = self.steps.borrow().get(&(gate, ev)) {
            return *out;
        }
        let out = match (self.step)(
            &self.facts.config,
            &self.facts.decode(gate),
            self.facts.event(ev),
        ) {
            Outcome::Moved(next) => Out::Moved(self.facts.encode(&next)),
            Outcome::Ignored => Out::Ignored,
            Outcome::Refused(error) => Out::Refused(Refusal::from_name(error.name())),
        };
        self.steps.borrow_mut().insert((gate, ev), out);
        out
    }

    /// `core::ready`, `core::boundary` or `core::seal` for `ticket`.
    pub fn wait(&self, query: Query, gate: Gate, ticket: u8) -> Answer {
        if let Some(answer) = self.answers.borrow().get(&(gate, query, ticket)) {
            return *answer;
        }
        let state = self.facts.decode(gate);
        let t = Ticket::new(u64::from(ticket));
        let wait = match query {
            Query::Ready => core::ready(&state, t),
            Query::Boundary => core::boundary(&state, t),
            Query::Seal => core::seal(&state, t),
        };
        let answer = match wait {
            Wait::Pending => Answer::Pending,
            Wait::Resolved(pause) => Answer::Resolved(self.facts.pause_index(pause)),
            Wait::Gone => Answer::Gone,
        };
        self.answers
            .borrow_mut()
            .insert((gate, query, ticket), answer);
        answer
    }

    /// `core::begin`: what the worker does at a step boundary.
    pub fn begin(&self, gate: Gate) -> Begun {
        if let Some(begun) = self.begun.borrow().get(&gate) {
            return *begun;
        }
        let state = self.facts.decode(gate);
        let begun = match (self.begin)(&state) {
            core::Begin::Nothing => Begun::Nothing,
            core::Begin::Requested(t, intent) => Begun::Requested {
                ticket: u8::try_from(t.get()).expect("few tickets"),
                intent: self.facts.intent_index(intent),
            },
            core::Begin::Committed(pause) => Begun::Committed {
                pause: self.facts.pause_index(pause),
            },
        };
        self.begun.borrow_mut().insert(gate, begun);
        begun
    }
}

impl Core {
    /// Every `(state, event, outcome)` the core was asked about so far, in a
    /// stable order: the core transitions an exploration actually took.
    pub fn explored(&self) -> Vec<(Gate, Ev, Out)> {
        let mut all: Vec<_> = self
            .steps
            .borrow()
            .iter()
            .map(|(&(g, e), &o)| (g, e, o))
            .collect();
        all.sort_by_key(|&(g, e, _)| (g, format!("{e:?}")));
        all
    }
}
