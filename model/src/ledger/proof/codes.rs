//! The numbers the ledger's encoding ([`super::encode`]) speaks in: `x`'s
//! states, the events, which other id an event names, the answers, and
//! which table (the real one or a broken variant's) a step follows.

/// `x`'s state.
pub mod held {
    /// Not live, not remembered as delivered.
    pub const GONE: i64 = 0;
    /// Live, not arrived.
    pub const OUTSTANDING: i64 = 1;
    /// Live, arrived, not taken.
    pub const ARRIVED: i64 = 2;
    /// Arrived and taken: in the scope's delivered memory.
    pub const DELIVERED: i64 = 3;
    /// Their names.
    pub const NAMES: [&str; 4] = ["gone", "outstanding", "arrived", "delivered"];
}

/// The events, in `Event`'s order.
pub mod event {
    /// `ScopeTask(task)`.
    pub const SCOPE_TASK: i64 = 0;
    /// `EndScope(token)`.
    pub const END_SCOPE: i64 = 1;
    /// `Register { id, task, .. }`.
    pub const REGISTER: i64 = 2;
    /// `Adopt { id, child }` (of `x`).
    pub const ADOPT: i64 = 3;
    /// `Discard(id)`.
    pub const DISCARD: i64 = 4;
    /// `Arrive(id)`.
    pub const ARRIVE: i64 = 5;
    /// `BeginWait`.
    pub const BEGIN_WAIT: i64 = 6;
    /// `PollWait`.
    pub const POLL_WAIT: i64 = 7;
    /// `DropWait`.
    pub const DROP_WAIT: i64 = 8;
    /// `TakeArrived`.
    pub const TAKE_ARRIVED: i64 = 9;
    /// `TakeOverdue { .. }`.
    pub const TAKE_OVERDUE: i64 = 10;
    /// `TakeAll`.
    pub const TAKE_ALL: i64 = 11;
    /// Their names.
    pub const NAMES: [&str; 12] = [
        "ScopeTask",
        "EndScope",
        "Register",
        "Adopt",
        "Discard",
        "Arrive",
        "BeginWait",
        "PollWait",
        "DropWait",
        "TakeArrived",
        "TakeOverdue",
        "TakeAll",
    ];
}

/// Which other id an event names.
pub mod other {
    /// One this scope has not seen.
    pub const FRESH: i64 = 0;
    /// An outstanding one.
    pub const OUTSTANDING: i64 = 1;
    /// An arrived one.
    pub const ARRIVED: i64 = 2;
    /// One arrived and taken (in the delivered memory).
    pub const DELIVERED: i64 = 3;
}

/// The answers, by kind.
pub mod answer {
    /// `Scoped`.
    pub const SCOPED: i64 = 0;
    /// `ScopeRefused`.
    pub const SCOPE_REFUSED: i64 = 1;
    /// `ScopeEnded(Some(_))`.
    pub const ENDED: i64 = 2;
    /// `ScopeEnded(None)`: a stale token.
    pub const STALE: i64 = 3;
    /// `Registered(Ok)`.
    pub const REGISTERED: i64 = 4;
    /// `Registered(Err(InvalidId))`.
    pub const INVALID_ID: i64 = 5;
    /// `Registered(Err(NoTaskInScope))`.
    pub const NO_TASK: i64 = 6;
    /// `Registered(Err(OtherTask))`.
    pub const OTHER_TASK: i64 = 7;
    /// `Registered(Err(DuplicateId))`.
    pub const DUPLICATE: i64 = 8;
    /// `Adopted(Adopted)`.
    pub const ADOPTED: i64 = 9;
    /// `Adopted(Replaced)`.
    pub const REPLACED: i64 = 10;
    /// `Adopted(NotLive)`.
    pub const NOT_LIVE: i64 = 11;
    /// `Arrived(Delivered)`.
    pub const DELIVERED: i64 = 12;
    /// `Arrived(AlreadyDelivered)`.
    pub const ALREADY: i64 = 13;
    /// `Arrived(NotOutstanding)`.
    pub const NOT_OUTSTANDING: i64 = 14;
    /// `Arrived(BeingEnded)`.
    pub const BEING_ENDED: i64 = 15;
    /// `Waited(Resolved)`.
    pub const RESOLVED: i64 = 16;
    /// `Waited(Pending)`.
    pub const PENDING: i64 = 17;
    /// `Waited(Dropped)`.
    pub const DROPPED: i64 = 18;
    /// `Waited(DroppedWakeOthers)`.
    pub const DROPPED_WAKE: i64 = 19;
    /// `Waited(PassedOn)`.
    pub const PASSED_ON: i64 = 20;
    /// `Waited(NotWaiting)`.
    pub const NOT_WAITING: i64 = 21;
    /// `Took(_)`.
    pub const TOOK: i64 = 22;
    /// Their names.
    pub const NAMES: [&str; 23] = [
        "Scoped",
        "ScopeRefused",
        "ScopeEnded",
        "ScopeEnded(stale)",
        "Registered",
        "InvalidId",
        "NoTaskInScope",
        "OtherTask",
        "DuplicateId",
        "Adopted",
        "Replaced",
        "NotLive",
        "Delivered",
        "AlreadyDelivered",
        "NotOutstanding",
        "BeingEnded",
        "Resolved",
        "Pending",
        "Dropped",
        "DroppedWakeOthers",
        "PassedOn",
        "NotWaiting",
        "Took",
    ];
}

/// The table an encoding follows: the real one, or a broken variant's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// `baton::ledger::core::step`.
    Real,
    /// (f) an arrival for an entry already arrived is `Delivered` again.
    DoubleDelivery,
    /// (g) a scope's drop hands back its entries without their children.
    ScopeDropForgetsChildren,
    /// (h) an arrival gives no wake-up.
    ArrivalWithoutWakeUp,
    /// (o) an arrival while a pending wait holds a wake-up gives none.
    CoalescingWakesOneOfTwo,
    /// (v) a registration ignores its task.
    RegisterIgnoresTheTask,
    /// (w) an older scope's end takes every entry of the scope in force.
    OlderScopeEndEmptiesTheLedger,
}

impl Table {
    /// The table of the variant called `name` ("real" for the real one).
    pub fn of(name: &str) -> Option<Table> {
        Some(match name {
            "real" => Table::Real,
            "f_double_delivery" => Table::DoubleDelivery,
            "g_scope_drop_forgets_children" => Table::ScopeDropForgetsChildren,
            "h_arrival_without_wake_up" => Table::ArrivalWithoutWakeUp,
            "o_coalescing_wakes_one_of_two" => Table::CoalescingWakesOneOfTwo,
            "v_register_ignores_the_task" => Table::RegisterIgnoresTheTask,
            "w_older_scope_end_empties_the_ledger" => Table::OlderScopeEndEmptiesTheLedger,
            _ => return None,
        })
    }
}
