//! A Run's owner epoch: the fencing token a claim issues.

/// An owner epoch of one Run: its fencing token. [`claim`](super::HandoffLog::claim)
/// issues them in increasing order, `1` first; [`Epoch::NONE`] (`0`) is the
/// epoch of a Run never claimed, and never a valid epoch to append with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Epoch(u64);

impl Epoch {
    /// The epoch of a Run never claimed.
    pub const NONE: Epoch = Epoch(0);

    /// The epoch numbered `value` (as stored by a log).
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// Its number.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The last epoch a claim ever issues, in every store: `i64::MAX`, the
    /// largest a SQL store's `bigint` holds, so that `MemoryLog`,
    /// `SqliteLog` and `PostgresLog` run out at the same claim.
    pub const LAST: Epoch = Epoch(i64::MAX as u64);

    /// The epoch a claim issues after this one; `None` from
    /// [`Epoch::LAST`] on (the Run's epochs are spent).
    pub const fn next(self) -> Option<Epoch> {
        if self.0 >= Self::LAST.0 {
            None
        } else {
            Some(Epoch(self.0 + 1))
        }
    }
}

impl std::fmt::Display for Epoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
