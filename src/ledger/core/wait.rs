//! `wait_for_arrival` as events of the core (SPEC §2, D6): exactly tokio's
//! `Notify::notify_one`, counted rather than listed.
//!
//! The core counts the waits that are pending and the wake-ups arrivals
//! gave them; it never names a wait, so any pending wait that is polled
//! may take a given wake-up (all of them are woken when one is given). A
//! `Delivered` gives one wake-up to a pending wait that has none, or, when
//! every pending wait has one (or none is pending), stores the one permit
//! the next wait takes at its first poll; stored permits coalesce. A
//! pending wait dropped while every pending wait holds a wake-up passes its
//! wake-up on to the stored permit (no other pending wait could take it);
//! otherwise the wake-ups stay with the other pending waits. So a dropped
//! wait consumes nothing it was not given, and loses no wake-up.
//!
//! | state (pending, given, permit) | `Delivered` | `begin_wait` | `poll_wait` | `drop_wait` |
//! |---|---|---|---|---|
//! | `(0, 0, ·)` | permit := true | permit? take it, `Resolved` : pending + 1, `Pending` | `NotWaiting` | `NotWaiting` |
//! | `(n, g < n, false)` | given + 1 | pending + 1, `Pending` | g > 0: both − 1, `Resolved`; else `Pending` | pending − 1: g > 0 `DroppedWakeOthers`, else `Dropped` |
//! | `(n, n, ·)` | permit := true | permit? take it, `Resolved` : pending + 1, `Pending` | both − 1, `Resolved` | both − 1, permit := true, `PassedOn` |
//!
//! Invariant: `given <= pending`, and a permit is stored only while every
//! pending wait holds a wake-up. A scope's end discards the stored permit
//! and the wake-ups given to pending waits (the arrivals they stood for
//! were taken with the scope: D6 holds within a scope) and leaves the
//! waits pending, so a wake-up never outlives its scope, not even by way
//! of a dropped wait.

use super::{Ledger, Moment};

/// What a wait's event decided (SPEC §2, D6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Waited {
    /// The wait resolves: it took the stored permit (at its first poll) or
    /// a wake-up given to the pending waits.
    Resolved,
    /// The wait is pending: it waits for a wake-up.
    Pending,
    /// A pending wait was dropped; no wake-up was given to pending waits.
    Dropped,
    /// A pending wait was dropped; the wake-ups given to pending waits stay
    /// with the others, which must be woken: one of them may never have
    /// been woken for it.
    DroppedWakeOthers,
    /// A pending wait was dropped while every pending wait held a wake-up:
    /// its wake-up is passed on to the stored permit.
    PassedOn,
    /// No wait is pending, so none can be polled or dropped as pending
    /// (misuse); nothing changed.
    NotWaiting,
}

impl<D, C, T: Moment> Ledger<D, C, T> {
    /// An arrival's wake-up (D6): to a pending wait without one, else the
    /// stored permit.
    pub(super) fn wake_one(&mut self) {
        if self.given < self.pending {
            self.given += 1;
        } else {
            self.permit = true;
        }
    }

    /// A wait's first poll: takes the stored permit ([`Waited::Resolved`])
    /// or becomes pending ([`Waited::Pending`]).
    pub fn begin_wait(&mut self) -> Waited {
        if std::mem::take(&mut self.permit) {
            Waited::Resolved
        } else {
            self.pending = self.pending.saturating_add(1);
            Waited::Pending
        }
    }

    /// A pending wait polled again: takes a wake-up given to the pending
    /// waits ([`Waited::Resolved`]) or stays [`Waited::Pending`].
    pub fn poll_wait(&mut self) -> Waited {
        if self.pending == 0 {
            Waited::NotWaiting
        } else if self.given > 0 {
            self.given -= 1;
            self.pending -= 1;
            Waited::Resolved
        } else {
            Waited::Pending
        }
    }

    /// A pending wait dropped before it resolved: it consumes nothing, and
    /// a wake-up no other pending wait can take becomes the stored permit.
    pub fn drop_wait(&mut self) -> Waited {
        if self.pending == 0 {
            return Waited::NotWaiting;
        }
        self.pending -= 1;
        if self.given > self.pending {
            self.given -= 1;
            self.permit = true;
            Waited::PassedOn
        } else if self.given > 0 {
            Waited::DroppedWakeOthers
        } else {
            Waited::Dropped
        }
    }

    /// Whether a permit is stored: the next wait's first poll resolves.
    pub fn permit(&self) -> bool {
        self.permit
    }

    /// The waits pending, and the wake-ups given to them and not yet
    /// taken (at most as many).
    pub fn waits(&self) -> (usize, usize) {
        (self.pending, self.given)
    }
}
