//! A ledger state seen from `x`, an event, and what a step answers, as
//! terms ([`super::encode`] builds them; the system and the agreement
//! read them).

use easy_smt::SExpr;

/// The number of a state's fields.
pub const FIELDS: usize = 12;

/// A ledger state as terms, seen from `x`. Flags are 0 or 1.
#[derive(Clone, Copy, Debug)]
pub struct LedgerState {
    /// 1 while a task is in scope.
    pub scoped: SExpr,
    /// The task in scope (an identity; 0 with none).
    pub task: SExpr,
    /// The scope's token (0 with none).
    pub token: SExpr,
    /// The scopes issued: the next scope's token.
    pub issued: SExpr,
    /// `x`'s [`held`](super::codes::held) state.
    pub x: SExpr,
    /// 1 if `x`'s entry holds a child.
    pub child: SExpr,
    /// The other entries outstanding.
    pub out: SExpr,
    /// The other entries arrived and not taken.
    pub arr: SExpr,
    /// The core's own count of arrived entries (what `counts()` reads).
    pub counter: SExpr,
    /// The waits pending.
    pub pending: SExpr,
    /// The wake-ups given to pending waits.
    pub given: SExpr,
    /// 1 while a permit is stored.
    pub permit: SExpr,
}

impl LedgerState {
    /// Its fields, in declaration order.
    pub fn fields(&self) -> [SExpr; FIELDS] {
        [
            self.scoped,
            self.task,
            self.token,
            self.issued,
            self.x,
            self.child,
            self.out,
            self.arr,
            self.counter,
            self.pending,
            self.given,
            self.permit,
        ]
    }

    /// The state of `fields`, in declaration order.
    pub fn from_fields(f: [SExpr; FIELDS]) -> Self {
        let [
            scoped,
            task,
            token,
            issued,
            x,
            child,
            out,
            arr,
            counter,
            pending,
            given,
            permit,
        ] = f;
        Self {
            scoped,
            task,
            token,
            issued,
            x,
            child,
            out,
            arr,
            counter,
            pending,
            given,
            permit,
        }
    }

    /// The names of its fields, in declaration order.
    pub const NAMES: [&str; FIELDS] = [
        "scoped", "task", "token", "issued", "x", "child", "out", "arr", "counter", "pending",
        "given", "permit",
    ];
}

/// The number of an event's fields.
pub const EVENT_FIELDS: usize = 9;

/// An event as terms: fields its kind does not read are ignored.
#[derive(Clone, Copy, Debug)]
pub struct LedgerEvent {
    /// Its [`event`](super::codes::event) kind.
    pub kind: SExpr,
    /// 1 if it names `x`, else it names an [`other`](super::codes::other) id.
    pub on_x: SExpr,
    /// Which other id, if not `x`.
    pub other: SExpr,
    /// 1 if the id (or a scope's task) is acceptable.
    pub valid: SExpr,
    /// The task a registration or a scope names.
    pub task: SExpr,
    /// The token a scope's end names.
    pub token: SExpr,
    /// 1 if the named entry's child (if any) is being ended.
    pub ending: SExpr,
    /// 1 if `x` is overdue (a take of overdue entries).
    pub x_due: SExpr,
    /// How many other outstanding entries are overdue.
    pub due: SExpr,
}

impl LedgerEvent {
    /// Its fields, in declaration order.
    pub fn fields(&self) -> [SExpr; EVENT_FIELDS] {
        [
            self.kind,
            self.on_x,
            self.other,
            self.valid,
            self.task,
            self.token,
            self.ending,
            self.x_due,
            self.due,
        ]
    }

    /// The event of `fields`, in declaration order.
    pub fn from_fields(f: [SExpr; EVENT_FIELDS]) -> Self {
        let [kind, on_x, other, valid, task, token, ending, x_due, due] = f;
        Self {
            kind,
            on_x,
            other,
            valid,
            task,
            token,
            ending,
            x_due,
            due,
        }
    }

    /// The names of its fields, in declaration order.
    pub const NAMES: [&str; EVENT_FIELDS] = [
        "kind", "on_x", "other", "valid", "task", "token", "ending", "x_due", "due",
    ];
}

/// What a step answers: the [`answer`](super::codes::answer) kind, and what it hands back of
/// `x`.
#[derive(Clone, Copy, Debug)]
pub struct Answers {
    /// The [`answer`](super::codes::answer) kind.
    pub code: SExpr,
    /// 1 if the answer carries a child of `x`'s (in `x`'s taken entry, or
    /// a replaced or refused child).
    pub carries: SExpr,
    /// 1 if `x`'s entry is among the entries taken.
    pub took_x: SExpr,
}

/// What a step does: its answers and the state after it.
#[derive(Clone, Copy, Debug)]
pub struct Stepped {
    /// The answers.
    pub answers: Answers,
    /// The state after.
    pub next: LedgerState,
}
