//! The ledger system around the real `baton::ledger::core` (SPEC §2): a
//! task runner that scopes tasks and drops scope handles (a stale older one
//! too), a launcher that registers delegations and adopts children,
//! children whose outcomes arrive, a consumer that takes (arrived, overdue
//! under a ticking clock, all, one by discard), the world ending children
//! on its own, and two `wait_for_arrival` waiters. Every step is one call of
//! the core's `step` (or none), followed by exactly what the adapter does
//! with the outcome: it begins ending every child handed back to it that
//! had not arrived (`TakenDelegation`'s drop, `adopt`'s refusal).
//!
//! **Fairness**: only a waiter must keep polling (class [`WAITER`] + its
//! number) while its future is pending; every other actor may stop at any
//! time.

use baton::ledger::core::{Adoption, Arrival, Waited};

use super::LedgerModel;
use super::child::ModelChild;
use super::state::*;
use crate::explore::{Fairness, Successor};

/// What the adapter does after the core answered: begins ending every
/// child handed back that must not be left running (D3).
pub(super) fn follow_up(outcome: &Outcome) {
    let end = |taken: &[Taken]| {
        for t in taken {
            if let Some(child) = t.child_to_end() {
                baton::ledger::Child::begin_ending(child);
            }
        }
    };
    match outcome {
        Outcome::Scoped(_, left) | Outcome::ScopeEnded(Some(left)) | Outcome::Took(left) => {
            end(left)
        }
        Outcome::Adopted(Adoption::Replaced(child) | Adoption::NotLive(child)) => {
            baton::ledger::Child::begin_ending(child)
        }
        Outcome::Adopted(Adoption::Adopted)
        | Outcome::ScopeRefused(_)
        | Outcome::ScopeEnded(None)
        | Outcome::Registered(_)
        | Outcome::Arrived(_)
        | Outcome::Waited(_) => {}
    }
}

/// The ghost's view of entries taken: arrived ones were delivered and
/// consumed, the rest are gone (and their children ended).
fn took(s: &mut LSys, taken: &[Taken]) {
    for t in taken {
        let d = index(&t.id) as usize;
        if t.entry.arrived {
            s.ids[d] = Held::Taken;
            if let Some(child) = t.entry.child {
                s.finished |= child.bit();
            }
        } else {
            s.ids[d] = Held::Gone;
        }
    }
}

/// A scope ended (replaced or dropped): its entries were taken, its
/// delivered memory and wake-ups (stored or given) go with it.
fn scope_ended(s: &mut LSys, left: &[Taken]) {
    took(s, left);
    s.ids = [Held::Gone; MAX_IDS as usize];
    s.owed = false;
    s.given = 0;
}

/// The ghosts (and handles) after `act` returned `outcome`.
fn account(s: &mut LSys, setup: &Setup, act: Act, outcome: Option<&Outcome>) {
    match act {
        Act::ScopeTask => {
            if let Some(Outcome::Scoped(token, left)) = outcome {
                s.scopes |= 1 << token.get();
                s.issued += 1;
                scope_ended(s, left);
            }
        }
        Act::DropScope(token) => {
            s.scopes &= !(1 << token);
            if let Some(Outcome::ScopeEnded(Some(left))) = outcome {
                scope_ended(s, left);
            }
        }
        Act::Register(d, _) => {
            if let Some(Outcome::Registered(Ok(()))) = outcome {
                s.ids[d as usize] = Held::Outstanding;
            }
        }
        Act::RegisterInvalid => {}
        // The child was launched and handed over, whatever `adopt` did.
        Act::Adopt(d) => s.handed |= setup.child(d, setup.handed_to(s, d)).bit(),
        Act::Arrive(d) => {
            if let Some(Outcome::Arrived(Arrival::Delivered)) = outcome {
                s.ids[d as usize] = Held::Arrived;
                // SPEC §2 (`notify_one`): a pending wait without a wake-up
                // gets one, else one permit is stored.
                if s.given < Setup::pending(s) {
                    s.given += 1;
                } else {
                    s.owed = true;
                }
            }
        }
        Act::EndedElsewhere(c) => s.world.being_ended |= ModelChild(c).bit(),
        Act::Discard(_) | Act::TakeArrived | Act::TakeOverdue | Act::TakeAll => {
            if let Some(Outcome::Took(taken)) = outcome {
                took(s, taken);
            }
        }
        Act::Tick => s.now += 1,
        Act::StartWait(w) => match outcome {
            Some(Outcome::Waited(Waited::Resolved)) => s.owed = false,
            _ => s.waiting |= 1 << w,
        },
        Act::PollWait(w) => {
            if let Some(Outcome::Waited(Waited::Resolved)) = outcome {
                s.waiting &= !(1 << w);
                s.given = s.given.saturating_sub(1);
            }
        }
        Act::DropWait(w) => {
            s.waiting &= !(1 << w);
            // A wake-up no other pending wait can take is passed on.
            if s.given > Setup::pending(s) {
                s.given -= 1;
                s.owed = true;
            }
        }
    }
}

/// Appends every transition of `s` to `out`.
pub fn successors(m: &LedgerModel, s: &LSys, out: &mut Vec<Successor<LStep, LSys>>) {
    let setup = &m.setup;
    let mut fire = |act: Act, fed: Option<(u8, &dyn Fn() -> Event)>, fairness: Fairness| {
        let mut next = *s;
        let (event, outcome) = match fed {
            Some((child, event)) => {
                let effect = m.effect(s, act, child, event);
                next.ledger = effect.ledger;
                next.world.being_ended |= effect.began;
                next.world.ended |= effect.began;
                (Some(effect.event), Some(effect.outcome))
            }
            None => (None, None),
        };
        account(&mut next, setup, act, outcome.as_deref());
        out.push(Successor {
            action: LStep {
                act,
                event,
                outcome,
            },
            next,
            fairness,
        });
    };
    let optional = Fairness::Optional;
    let now = at(s.now);
    if s.issued < setup.scopes {
        let scope = || Event::ScopeTask(task(s.issued % 2));
        fire(Act::ScopeTask, Some((0, &scope)), optional);
    }
    for token in (0..MAX_SCOPES).filter(|t| s.scopes & (1 << t) != 0) {
        let drop = || Event::EndScope(baton::ledger::ScopeToken::new(token.into()));
        fire(Act::DropScope(token), Some((0, &drop)), optional);
    }
    for d in 0..setup.ids {
        for t in 0..2 {
            let register = || Event::Register {
                id: name(d),
                task: task(t),
                data: t,
                started: now,
            };
            fire(Act::Register(d, t), Some((0, &register)), optional);
        }
        let handed = setup.handed_to(s, d);
        if handed < setup.children {
            let child = setup.child(d, handed);
            let adopt = || Event::Adopt { id: name(d), child };
            fire(Act::Adopt(d), Some((child.0, &adopt)), optional);
        }
        fire(
            Act::Arrive(d),
            Some((0, &|| Event::Arrive(name(d)))),
            optional,
        );
        fire(
            Act::Discard(d),
            Some((0, &|| Event::Discard(name(d)))),
            optional,
        );
    }
    if setup.bad_input {
        let register = || Event::Register {
            id: String::new(),
            task: task(0),
            data: 0,
            started: now,
        };
        fire(Act::RegisterInvalid, Some((0, &register)), optional);
    }
    for c in 0..setup.ids * setup.children {
        let bit = ModelChild(c).bit();
        if s.handed & bit != 0 && s.world.being_ended & bit == 0 {
            fire(Act::EndedElsewhere(c), None, optional);
        }
    }
    fire(
        Act::TakeArrived,
        Some((0, &|| Event::TakeArrived)),
        optional,
    );
    let overdue = || Event::TakeOverdue {
        bound: at(setup.bound),
        now,
    };
    fire(Act::TakeOverdue, Some((0, &overdue)), optional);
    fire(Act::TakeAll, Some((0, &|| Event::TakeAll)), optional);
    if s.now < setup.ticks {
        fire(Act::Tick, None, optional);
    }
    for w in 0..setup.waiters {
        if s.waiting & (1 << w) != 0 {
            let poll = || Event::PollWait;
            fire(
                Act::PollWait(w),
                Some((0, &poll)),
                Fairness::Fair(WAITER + w),
            );
            fire(Act::DropWait(w), Some((0, &|| Event::DropWait)), optional);
        } else {
            fire(Act::StartWait(w), Some((0, &|| Event::BeginWait)), optional);
        }
    }
}
