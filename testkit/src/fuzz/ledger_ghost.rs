//! The ghost reference for `ledger_table`: the delegation ledger re-derived
//! from SPEC §2 for the fuzzer, independently of `ledger::core`.
//!
//! The ghost is the seed's shape on purpose: an unsorted list of entries
//! scanned in full, a list of delivered ids, a flag for the stored wake-up.
//! Nothing is indexed, so nothing can go stale; each operation's answer is
//! computed the slow, obvious way, then sorted by id. Waits are kept as
//! tokio's `Notify` keeps them: a list of pending waits, each flagged when
//! an arrival notified it, a notified one dropped forwarding its
//! notification (where the core only counts).

use std::time::Duration;

use baton::facts::{IdError, check_id};
use baton::ledger::core::{Arrival, Counts, RegisterError, Waited};

/// The ghost's view of an entry (and of a taken one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The delegation's id.
    pub id: String,
    /// Its registration's serial number (the ledger's data).
    pub serial: u32,
    /// When it started.
    pub started: Duration,
    /// Whether its outcome arrived.
    pub arrived: bool,
    /// Its child's number, once adopted.
    pub child: Option<u32>,
}

/// What adopting a child did, by child number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adopted {
    /// Kept.
    Adopted,
    /// Kept; this earlier child comes back to be ended.
    Replaced(u32),
    /// The id is not live: the child comes back to be ended.
    NotLive(u32),
}

/// One operation's answer, in a form both the ledger's and the ghost's
/// answers convert to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// `scope_task`: the new token and the rows the old scope left.
    Scoped(u64, Vec<Row>),
    /// `scope_task` refused an invalid task id.
    ScopeRefused(IdError),
    /// `end_scope`: the rows left (`None`: the token was not current).
    ScopeEnded(Option<Vec<Row>>),
    /// `register`.
    Registered(Result<(), RegisterError>),
    /// `adopt`.
    Adopted(Adopted),
    /// `arrive`.
    Arrived(Arrival),
    /// `begin_wait`, `poll_wait`, `drop_wait`.
    Waited(Waited),
    /// `discard`, `take_*`: the rows taken, in id order.
    Took(Vec<Row>),
    /// `next_overdue`.
    Next(Option<Duration>),
    /// The clock moved; nothing was asked of the ledger.
    Ticked,
}

/// The ledger as the ghost keeps it.
#[derive(Clone, Debug, Default)]
pub struct Ghost {
    /// The task in scope and its token.
    pub scope: Option<(String, u64)>,
    /// The tokens issued so far.
    pub issued: u64,
    /// The entries, in registration order.
    pub rows: Vec<Row>,
    /// The ids delivered and taken in this scope.
    pub delivered: Vec<String>,
    /// The stored wake-up.
    pub permit: bool,
    /// The pending waits, oldest first: whether an arrival notified each.
    pub waits: Vec<bool>,
}

/// `rows` sorted by id (every answer lists rows in id order).
fn by_id(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    rows
}

impl Ghost {
    /// Takes the rows `pick` selects, in id order; an arrived one taken is
    /// remembered as delivered.
    fn take(&mut self, pick: impl Fn(&Row) -> bool) -> Vec<Row> {
        let (taken, kept) = std::mem::take(&mut self.rows).into_iter().partition(pick);
        self.rows = kept;
        let taken: Vec<Row> = by_id(taken);
        for row in taken.iter().filter(|row| row.arrived) {
            self.delivered.push(row.id.clone());
        }
        taken
    }

    /// Forgets the scope's entries, delivered ids, stored wake-up and
    /// notifications (the pending waits stay pending); returns the entries
    /// in id order.
    fn clear(&mut self) -> Vec<Row> {
        self.delivered.clear();
        self.permit = false;
        self.waits.fill(false);
        by_id(std::mem::take(&mut self.rows))
    }

    /// `scope_task(task)`.
    pub fn scope_task(&mut self, task: &str) -> Seen {
        if let Err(error) = check_id(task) {
            return Seen::ScopeRefused(error);
        }
        let token = self.issued;
        self.issued = self.issued.saturating_add(1);
        let left = self.clear();
        self.scope = Some((task.to_owned(), token));
        Seen::Scoped(token, left)
    }

    /// `end_scope(token)`.
    pub fn end_scope(&mut self, token: u64) -> Seen {
        match &self.scope {
            Some((_, current)) if *current == token => {
                self.scope = None;
                Seen::ScopeEnded(Some(self.clear()))
            }
            _ => Seen::ScopeEnded(None),
        }
    }

    /// `register(id, task)` at `started`, as registration `serial`.
    pub fn register(&mut self, id: &str, task: &str, serial: u32, started: Duration) -> Seen {
        let refused = if let Err(error) = check_id(id) {
            Some(RegisterError::InvalidId(error))
        } else {
            match &self.scope {
                None => Some(RegisterError::NoTaskInScope),
                Some((scoped, _)) if scoped != task => Some(RegisterError::OtherTask {
                    scoped: scoped.clone(),
                    found: task.to_owned(),
                }),
                Some(_)
                    if self.rows.iter().any(|row| row.id == id)
                        || self.delivered.iter().any(|done| done == id) =>
                {
                    Some(RegisterError::DuplicateId)
                }
                Some(_) => None,
            }
        };
        if let Some(error) = refused {
            return Seen::Registered(Err(error));
        }
        self.rows.push(Row {
            id: id.to_owned(),
            serial,
            started,
            arrived: false,
            child: None,
        });
        Seen::Registered(Ok(()))
    }

    /// `adopt(id, child)`.
    pub fn adopt(&mut self, id: &str, child: u32) -> Seen {
        Seen::Adopted(match self.rows.iter_mut().find(|row| row.id == id) {
            Some(row) => match row.child.replace(child) {
                Some(earlier) => Adopted::Replaced(earlier),
                None => Adopted::Adopted,
            },
            None => Adopted::NotLive(child),
        })
    }

    /// `discard(id)`.
    pub fn discard(&mut self, id: &str) -> Seen {
        Seen::Took(self.take(|row| row.id == id))
    }

    /// `arrive(id)`, where `being_ended` says whether a child is being ended.
    pub fn arrive(&mut self, id: &str, being_ended: impl Fn(u32) -> bool) -> Seen {
        if self.delivered.iter().any(|done| done == id) {
            return Seen::Arrived(Arrival::AlreadyDelivered);
        }
        let Some(row) = self.rows.iter_mut().find(|row| row.id == id) else {
            return Seen::Arrived(Arrival::NotOutstanding);
        };
        Seen::Arrived(if row.arrived {
            Arrival::AlreadyDelivered
        } else if row.child.is_some_and(being_ended) {
            Arrival::BeingEnded
        } else {
            row.arrived = true;
            match self.waits.iter_mut().find(|notified| !**notified) {
                Some(wait) => *wait = true,
                None => self.permit = true,
            }
            Arrival::Delivered
        })
    }

    /// `begin_wait()`: takes the permit, or joins the pending waits.
    pub fn begin_wait(&mut self) -> Seen {
        Seen::Waited(if std::mem::take(&mut self.permit) {
            Waited::Resolved
        } else {
            self.waits.push(false);
            Waited::Pending
        })
    }

    /// `poll_wait()`, as pending wait `pick` (modulo their number): it
    /// resolves if it was notified, or if another was (the core does not
    /// name its waits, so a notification goes to whichever polls first).
    pub fn poll_wait(&mut self, pick: u8) -> Seen {
        if self.waits.is_empty() {
            return Seen::Waited(Waited::NotWaiting);
        }
        let at = usize::from(pick) % self.waits.len();
        if !self.waits[at] {
            match self.waits.iter().position(|notified| *notified) {
                Some(other) => self.waits.swap(at, other),
                None => return Seen::Waited(Waited::Pending),
            }
        }
        self.waits.remove(at);
        Seen::Waited(Waited::Resolved)
    }

    /// `drop_wait()`, as pending wait `pick`: a notified one forwards its
    /// notification to a pending wait not notified, or to the permit.
    pub fn drop_wait(&mut self, pick: u8) -> Seen {
        if self.waits.is_empty() {
            return Seen::Waited(Waited::NotWaiting);
        }
        let notified = self.waits.remove(usize::from(pick) % self.waits.len());
        if notified {
            match self.waits.iter_mut().find(|other| !**other) {
                Some(other) => *other = true,
                None => {
                    self.permit = true;
                    return Seen::Waited(Waited::PassedOn);
                }
            }
        }
        Seen::Waited(if self.waits.contains(&true) {
            Waited::DroppedWakeOthers
        } else {
            Waited::Dropped
        })
    }

    /// `(pending, given)`: the pending waits, and how many were notified.
    pub fn waits(&self) -> (usize, usize) {
        let given = self.waits.iter().filter(|notified| **notified).count();
        (self.waits.len(), given)
    }

    /// `take_arrived()`.
    pub fn take_arrived(&mut self) -> Seen {
        Seen::Took(self.take(|row| row.arrived))
    }

    /// `take_overdue(bound, now)`: not arrived, and `started + bound <= now`
    /// (a sum past the clock's end is never overdue).
    pub fn take_overdue(&mut self, bound: Duration, now: Duration) -> Seen {
        Seen::Took(self.take(|row| {
            !row.arrived && row.started.checked_add(bound).is_some_and(|due| due <= now)
        }))
    }

    /// `next_overdue(bound)`: the earliest due time of the rows not arrived.
    pub fn next_overdue(&self, bound: Duration) -> Seen {
        let earliest = self
            .rows
            .iter()
            .filter(|row| !row.arrived)
            .map(|row| row.started)
            .min();
        Seen::Next(earliest.and_then(|started| started.checked_add(bound)))
    }

    /// `take_all()`.
    pub fn take_all(&mut self) -> Seen {
        Seen::Took(self.take(|_| true))
    }

    /// `counts()` as D4 defines them.
    pub fn counts(&self) -> Counts {
        let arrived = self.rows.iter().filter(|row| row.arrived).count();
        Counts {
            outstanding: self.rows.len() - arrived,
            arrived,
        }
    }
}
