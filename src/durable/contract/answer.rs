//! What a log answers a claim, an append or a finish, and a retirement.

use crate::facts::HandoffPause;

use super::epoch::Epoch;

/// What a [`claim`](super::HandoffLog::claim) answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[must_use = "a claim is what the owner must act on"]
pub enum Claim<P> {
    /// The Run is open and now belongs to this epoch: start (or resume) its
    /// worker with it. Every older epoch's append is refused from now on.
    Owner(Epoch),
    /// A pause is durable: the handoff is final, the successor owns the Run,
    /// and nobody may resume it. Nothing was written.
    HandedOff(HandoffPause<P>),
    /// The Run finished with this outcome: it is over, and nobody may
    /// resume it. Nothing was written.
    Finished(P),
    /// The Run's root Run was retired: every Run of it was final and its
    /// rows are gone. Nobody may resume it. Nothing was written.
    Retired,
}

/// What a [`retire`](super::HandoffLog::retire) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "a retirement says whether it removed anything"]
pub enum Retirement {
    /// The root Run is retired now: this many Runs' rows were removed, and
    /// one tombstone written for the root.
    Retired {
        /// How many Runs were removed.
        runs: usize,
    },
    /// The root Run was already retired; nothing was written.
    AlreadyRetired,
}

/// What a successful [`HandoffLog::append`](crate::durable::HandoffLog::append) did. It may grow (a store
/// could one day say more about how the pause became durable), so a match
/// on it needs a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "an append's receipt says whether it wrote"]
#[non_exhaustive]
pub enum Receipt {
    /// The pause is now durable; this call wrote it.
    Written,
    /// The identical row was already durable; nothing was written.
    AlreadyDurable,
}
