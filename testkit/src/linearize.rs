//! Linearizability checking: is a concurrent history explained by some
//! sequential order of the real core's [`step`](core::step) calls?
//!
//! [`linearize`] is Wing & Gong's backtracking search, generalised to
//! operations that take several atomic steps (`boundary` observes, feeds its
//! preflight, then waits): each operation is a small program over the
//! sequential state ([`Spec`]), every one of its steps must fall between its
//! invocation and its return, and an operation that returned before another
//! was invoked takes all its steps first (real-time order). Memoising the
//! configurations already refuted keeps the search small for the ≤ ~10
//! operations of a loom model.
//!
//! [`GateSpec`] is the handoff gate's specification over
//! [`step`](core::step) and the waiter queries, with the Run's cancellation
//! bit as part of the state. `loom-tests/` checks every execution of each
//! of its gate scenes with it. [`LedgerSpec`] is the delegation ledger's, over
//! `baton::ledger::core::step`. Record your runtime's calls as [`Call`]s,
//! with times from one logical clock, and ask [`linearize`] for an order.

use std::collections::HashSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::Arc;

use baton::facts::{HandoffIntent, HandoffPause};
use baton::gate::GateError;
use baton::gate::core::{self, Config, Event, Outcome, Refusal, State, Ticket};

mod ledger;

pub use ledger::{LedgerOp, LedgerSpec};

/// A sequential specification whose operations may take several atomic
/// steps, each constrained by what the operation was observed to return.
pub trait Spec {
    /// The sequential state.
    type State: Clone + Eq + Hash;
    /// One operation together with its observed result.
    type Op: Debug;
    /// Progress inside one operation: where it is, and what it has seen.
    type Pc: Clone + Eq + Hash;

    /// Where `op` starts.
    fn start(&self, op: &Self::Op) -> Self::Pc;

    /// Whether `op` has taken all its steps at `pc`.
    fn is_done(&self, op: &Self::Op, pc: &Self::Pc) -> bool;

    /// Every atomic step `op` may take at `pc` in `state` that is consistent
    /// with its observed result: the next progress and the next state.
    fn steps(
        &self,
        op: &Self::Op,
        pc: &Self::Pc,
        state: &Self::State,
    ) -> Vec<(Self::Pc, Self::State)>;
}

/// One completed operation of a concurrent history. Times come from one
/// logical clock: `invoked < returned`, and `a.returned < b.invoked` means
/// `a` finished before `b` began.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call<Op> {
    /// When the operation was invoked.
    pub invoked: u64,
    /// When it returned.
    pub returned: u64,
    /// The operation and what it returned.
    pub op: Op,
}

/// A sequential order of atomic steps explaining `history` from `initial`,
/// as the index of the operation taking each step; `None` if there is none
/// (the history is not linearizable).
pub fn linearize<S: Spec>(
    spec: &S,
    initial: S::State,
    history: &[Call<S::Op>],
) -> Option<Vec<usize>> {
    let before = history
        .iter()
        .map(|call| {
            (0..history.len())
                .filter(|&j| history[j].returned < call.invoked)
                .collect()
        })
        .collect();
    let (refuted, order) = (HashSet::new(), Vec::new());
    let mut search = Search {
        spec,
        history,
        before,
        refuted,
        order,
    };
    let mut pcs = vec![None; history.len()];
    search.explore(&initial, &mut pcs).then_some(search.order)
}

type Configuration<S> = (<S as Spec>::State, Vec<Option<<S as Spec>::Pc>>);

struct Search<'a, S: Spec> {
    spec: &'a S,
    history: &'a [Call<S::Op>],
    /// For each operation, those that returned before it was invoked.
    before: Vec<Vec<usize>>,
    /// Configurations (state, every operation's progress) already
    /// explored without success.
    refuted: HashSet<Configuration<S>>,
    order: Vec<usize>,
}

impl<S: Spec> Search<'_, S> {
    fn done(&self, pcs: &[Option<S::Pc>], i: usize) -> bool {
        pcs[i]
            .as_ref()
            .is_some_and(|pc| self.spec.is_done(&self.history[i].op, pc))
    }

    fn explore(&mut self, state: &S::State, pcs: &mut Vec<Option<S::Pc>>) -> bool {
        if (0..pcs.len()).all(|i| self.done(pcs, i)) {
            return true;
        }
        if self.refuted.contains(&(state.clone(), pcs.clone())) {
            return false;
        }
        for i in 0..pcs.len() {
            if self.done(pcs, i) {
                continue;
            }
            let op = &self.history[i].op;
            let pc = match &pcs[i] {
                Some(pc) => pc.clone(),
                None if self.before[i].iter().all(|&j| self.done(pcs, j)) => self.spec.start(op),
                None => continue,
            };
            for (next_pc, next_state) in self.spec.steps(op, &pc, state) {
                let saved = pcs[i].replace(next_pc);
                self.order.push(i);
                if self.explore(&next_state, pcs) {
                    return true;
                }
                self.order.pop();
                pcs[i] = saved;
            }
        }
        self.refuted.insert((state.clone(), pcs.clone()));
        false
    }
}

/// The sequential state of a gate and the Run's cancellation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World<P> {
    /// The core state.
    pub gate: State<P>,
    /// Whether the Run's cancellation has fired.
    pub canceled: bool,
}

impl<P> World<P> {
    /// A new gate, cancellation not fired.
    pub const fn initial() -> Self {
        Self {
            gate: State::initial(),
            canceled: false,
        }
    }
}

/// An operation on a gate (or the Run's cancellation) with what it returned.
// A history holds a handful of these: boxing the large variant buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateOp<P> {
    /// `requester.reserve(intent)`: the ticket issued, or the error.
    Reserve {
        /// The intent asked for.
        intent: HandoffIntent,
        /// What `reserve` returned.
        result: Result<Ticket, GateError>,
    },
    /// `reservation.ready()`: the held pause, or `None`.
    Ready {
        /// The reservation's ticket.
        ticket: Ticket,
        /// The pause of the `HeldHandoff` returned, if any.
        held: Option<HandoffPause<P>>,
    },
    /// A handle or future owning `ticket` was dropped: `Cancel(ticket)`.
    Release {
        /// The dropped handle's ticket.
        ticket: Ticket,
    },
    /// `held.commit()`: whether it returned a `PendingSeal` (if not, the
    /// dropped `HeldHandoff` released its ticket).
    Commit {
        /// The held handoff's ticket.
        ticket: Ticket,
        /// Whether it committed.
        committed: bool,
    },
    /// `pending.wait()`: the sealed pause, or `None`.
    Wait {
        /// The committed ticket.
        ticket: Ticket,
        /// What `wait` returned.
        sealed: Option<HandoffPause<P>>,
    },
    /// `gate.boundary(cancel, preflight)`.
    Boundary {
        /// The intent the preflight was given and the pause it returned;
        /// `None` if the preflight was not called.
        preflight: Option<(HandoffIntent, Option<HandoffPause<P>>)>,
        /// What `boundary` returned.
        result: Option<HandoffPause<P>>,
    },
    /// The rest of a `boundary` whose pause was already held for `ticket`
    /// when the history began: it waits for the decision or the
    /// cancellation.
    Resumed {
        /// The held ticket.
        ticket: Ticket,
        /// What `boundary` returned.
        result: Option<HandoffPause<P>>,
    },
    /// `gate.sealed(pause)`: whether it sealed.
    Seal {
        /// The pause offered.
        pause: HandoffPause<P>,
        /// What `sealed` returned.
        sealed: bool,
    },
    /// `gate.close()`, or dropping the gate.
    Close,
    /// The Run's cancellation fired.
    Fire,
    /// A snapshot of the gate's state and the cancellation bit.
    Snapshot(World<P>),
}

/// Progress inside one [`GateOp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GatePc {
    /// Not started.
    Start,
    /// `boundary` saw `Requested{T}` and runs its preflight.
    Observed(Ticket),
    /// `boundary`'s pause is held for `T`; it waits.
    Held(Ticket),
    /// `boundary` found `Held{T}` still pending.
    Pending(Ticket),
    /// `boundary` saw the cancellation and releases `T`.
    Canceling(Ticket),
    /// `boundary` released `T` and reads what remains.
    Released(Ticket),
    /// `commit` was refused; its handle releases the ticket.
    Refused(Ticket),
    /// All steps taken.
    Done,
}

/// The handoff gate's sequential specification: [`core::step`] and the
/// waiter queries, applied to a [`World`].
#[derive(Clone, Debug)]
pub struct GateSpec<P> {
    config: Config,
    pause: PhantomData<fn() -> P>,
}

impl<P: Clone + PartialEq> GateSpec<P> {
    /// The specification of a gate made with `config`.
    pub fn new(config: Config) -> Self {
        Self {
            config,
            pause: PhantomData,
        }
    }

    fn apply(&self, world: &World<P>, event: Event<P>) -> (Outcome<P>, World<P>) {
        let outcome = core::step(&self.config, &world.gate, event);
        let mut next = world.clone();
        if let Outcome::Moved(state) = &outcome {
            next.gate = state.clone();
        }
        (outcome, next)
    }
}

/// A waiter's answer in `world` for `ticket`: `None` while pending.
fn answer<P: Clone>(
    query: core::Query<P>,
    world: &World<P>,
    ticket: Ticket,
) -> Option<Option<HandoffPause<P>>> {
    let decided = query(&world.gate, ticket).decided();
    decided.map(|pause| pause.map(|pause| HandoffPause::clone(pause)))
}

impl<P: Clone + Eq + Hash + Debug> Spec for GateSpec<P> {
    type State = World<P>;
    type Op = GateOp<P>;
    type Pc = GatePc;

    fn start(&self, op: &GateOp<P>) -> GatePc {
        match op {
            GateOp::Resumed { ticket, .. } => GatePc::Held(*ticket),
            _ => GatePc::Start,
        }
    }

    fn is_done(&self, _: &GateOp<P>, pc: &GatePc) -> bool {
        *pc == GatePc::Done
    }

    fn steps(&self, op: &GateOp<P>, pc: &GatePc, world: &World<P>) -> Vec<(GatePc, World<P>)> {
        use GatePc::{Done, Start};
        let done = |ok: bool, next: World<P>| if ok { vec![(Done, next)] } else { vec![] };
        let same = |ok: bool| done(ok, world.clone());
        match (op, *pc) {
            (GateOp::Reserve { intent, result }, Start) => {
                let (outcome, next) = self.apply(world, Event::Reserve(Arc::new(intent.clone())));
                let ok = match (&outcome, result) {
                    (Outcome::Moved(state), Ok(ticket)) => state.ticket() == Some(*ticket),
                    (Outcome::Refused(error), Err(seen)) => {
                        *error == Refusal::Reserve(seen.clone())
                    }
                    _ => false,
                };
                done(ok, next)
            }
            (GateOp::Ready { ticket, held }, Start) => {
                same(answer(core::ready, world, *ticket).as_ref() == Some(held))
            }
            (GateOp::Wait { ticket, sealed }, Start) => {
                same(answer(core::seal, world, *ticket).as_ref() == Some(sealed))
            }
            (GateOp::Release { ticket }, Start)
            | (GateOp::Commit { ticket, .. }, GatePc::Refused(_)) => {
                done(true, self.apply(world, Event::Cancel(*ticket)).1)
            }
            (GateOp::Commit { ticket, committed }, Start) => {
                let event = Event::Commit {
                    ticket: *ticket,
                    canceled: world.canceled,
                };
                let (outcome, next) = self.apply(world, event);
                match (matches!(outcome, Outcome::Moved(_)), committed) {
                    (true, true) => vec![(Done, next)],
                    (false, false) => vec![(GatePc::Refused(*ticket), next)],
                    _ => vec![],
                }
            }
            (GateOp::Seal { pause, sealed }, Start) => {
                let (outcome, next) = self.apply(world, Event::Seal(Arc::new(pause.clone())));
                done(matches!(outcome, Outcome::Moved(_)) == *sealed, next)
            }
            (GateOp::Close, Start) => done(true, self.apply(world, Event::Close).1),
            (GateOp::Snapshot(seen), Start) => same(world == seen),
            (GateOp::Fire, Start) => {
                let mut next = world.clone();
                next.canceled = true;
                done(true, next)
            }
            (GateOp::Boundary { preflight, result }, pc) => {
                self.boundary(preflight.as_ref(), result.as_ref(), pc, world)
            }
            (GateOp::Resumed { result, .. }, pc) => self.boundary(None, result.as_ref(), pc, world),
            // A progress this operation never reaches: no step, so such a
            // history is rejected (a checker bug fails loudly, never passes).
            (_, _) => vec![],
        }
    }
}

impl<P: Clone + PartialEq> GateSpec<P> {
    /// The steps of `boundary`, as the adapter takes them: observe, feed the
    /// preflight with the cancellation bit, then wait for the decision or
    /// the cancellation (release, then read what remains).
    fn boundary(
        &self,
        preflight: Option<&(HandoffIntent, Option<HandoffPause<P>>)>,
        result: Option<&HandoffPause<P>>,
        pc: GatePc,
        world: &World<P>,
    ) -> Vec<(GatePc, World<P>)> {
        let finish = |answer: Option<Option<HandoffPause<P>>>| match answer {
            Some(answer) if answer.as_ref() == result => vec![(GatePc::Done, world.clone())],
            Some(_) | None => vec![],
        };
        match pc {
            GatePc::Start => match (core::begin(&world.gate), preflight) {
                (core::Begin::Nothing, None) => finish(Some(None)),
                // A boundary that begins in Committed returns that pause.
                (core::Begin::Committed(pause), None) => {
                    finish(Some(Some(HandoffPause::clone(pause))))
                }
                (core::Begin::Requested(ticket, seen), Some((intent, _))) if **seen == *intent => {
                    vec![(GatePc::Observed(ticket), world.clone())]
                }
                (
                    core::Begin::Nothing | core::Begin::Committed(_) | core::Begin::Requested(..),
                    _,
                ) => {
                    vec![]
                }
            },
            GatePc::Observed(ticket) => {
                let pause = preflight.and_then(|(_, pause)| pause.clone());
                let event = Event::Preflight {
                    ticket,
                    pause,
                    canceled: world.canceled,
                };
                let (_, next) = self.apply(world, event);
                match core::boundary(&next.gate, ticket) {
                    core::Wait::Pending => vec![(GatePc::Held(ticket), next)],
                    core::Wait::Resolved(_) | core::Wait::Gone if result.is_none() => {
                        vec![(GatePc::Done, next)]
                    }
                    core::Wait::Resolved(_) | core::Wait::Gone => vec![],
                }
            }
            GatePc::Held(ticket) => match answer(core::boundary, world, ticket) {
                None => vec![(GatePc::Pending(ticket), world.clone())],
                decided => finish(decided),
            },
            GatePc::Pending(ticket) if world.canceled => {
                vec![(GatePc::Canceling(ticket), world.clone())]
            }
            GatePc::Canceling(ticket) => {
                vec![(
                    GatePc::Released(ticket),
                    self.apply(world, Event::Cancel(ticket)).1,
                )]
            }
            GatePc::Released(ticket) => {
                finish(Some(answer(core::boundary, world, ticket).flatten()))
            }
            GatePc::Pending(_) | GatePc::Refused(_) | GatePc::Done => vec![],
        }
    }
}
