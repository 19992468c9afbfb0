//! The grid [`super::agree`] compares on: ledgers built by the real
//! ledger's own events, every event of the table on them, and both read
//! back as the encoding's numbers.

use std::time::Duration;

use baton::ledger::core::{Adoption, Arrival, RegisterError, ScopeToken, Taken, Waited};

use super::super::child::{ModelChild, World, within};
use super::super::state::{Event, L, Outcome};
use super::codes::{answer, event, held, other};
use super::terms::{EVENT_FIELDS, FIELDS};

/// A state of the grid, as the encoding's fields.
#[derive(Clone, Copy, Debug)]
pub(super) struct Grid {
    pub(super) scoped: bool,
    pub(super) issued: u64,
    pub(super) x: i64,
    pub(super) child: bool,
    pub(super) out: usize,
    pub(super) arr: usize,
    pub(super) pending: usize,
    pub(super) given: usize,
    pub(super) permit: bool,
}

pub(super) fn grid() -> Vec<Grid> {
    let mut all = Vec::new();
    // Every cell of the wait table: none pending (with the permit or
    // not), some pending without a wake-up, every one with one (with the
    // permit or not), some with and some without.
    let waits = [
        (0, 0, false),
        (0, 0, true),
        (1, 0, false),
        (1, 1, false),
        (1, 1, true),
        (2, 1, false),
    ];
    for issued in 0..=2 {
        for pending in 0..=2 {
            all.push(Grid {
                scoped: false,
                issued,
                x: held::GONE,
                child: false,
                out: 0,
                arr: 0,
                pending,
                given: 0,
                permit: false,
            });
        }
    }
    // The current scope is the second: its token is 1, an older one's 0.
    for issued in [2] {
        for x in 0..=3 {
            for child in [false, true] {
                if child && !matches!(x, held::OUTSTANDING | held::ARRIVED) {
                    continue;
                }
                for out in 0..=2 {
                    for arr in [0, 2] {
                        for &(pending, given, permit) in &waits {
                            all.push(Grid {
                                scoped: true,
                                issued,
                                x,
                                child,
                                out,
                                arr,
                                pending,
                                given,
                                permit,
                            });
                        }
                    }
                }
            }
        }
    }
    all
}

fn register(l: &mut L, id: &str, task: &str, started: Duration) {
    l.register(id, task, 0, started)
        .expect("the grid registers");
}

/// The ledger of `g`, `x` started at `x_started` and the `i`-th other
/// outstanding entry at `i + 1` seconds.
pub(super) fn build(g: &Grid, indexed: bool, x_started: Duration) -> L {
    let mut l = if indexed {
        L::keeping_indexes_above(0)
    } else {
        L::new()
    };
    let secs = Duration::from_secs;
    within(&mut World::default(), || {
        if !g.scoped {
            for _ in 0..g.issued {
                let _ = l.scope_task("t1".into()).expect("a task");
            }
            if g.issued > 0 {
                let _ = l.end_scope(ScopeToken::new(g.issued - 1));
            }
            for _ in 0..g.pending {
                let _ = l.begin_wait();
            }
            return;
        }
        for _ in 1..g.issued {
            let _ = l.scope_task("t1".into()).expect("a task");
        }
        let _ = l.scope_task("t0".into()).expect("a task");
        register(&mut l, "d0", "t0", secs(50));
        let _ = l.arrive("d0");
        let _ = l.discard("d0");
        for i in 0..g.out {
            let id = format!("o{i}");
            register(&mut l, &id, "t0", secs(i as u64 + 1));
            let _ = l.adopt(&id, ModelChild(1 + i as u8));
        }
        for i in 0..g.arr {
            let id = format!("a{i}");
            register(&mut l, &id, "t0", secs(60));
            let _ = l.arrive(&id);
        }
        if g.x != held::GONE {
            register(&mut l, "x", "t0", x_started);
            if g.child {
                let _ = l.adopt("x", ModelChild(0));
            }
            if g.x != held::OUTSTANDING {
                let _ = l.arrive("x");
            }
            if g.x == held::DELIVERED {
                let _ = l.discard("x");
            }
        }
        if l.permit() {
            let _ = l.begin_wait();
        }
        for _ in 0..g.pending {
            let _ = l.begin_wait();
        }
        for k in 0..g.given + usize::from(g.permit) {
            let id = format!("w{k}");
            register(&mut l, &id, "t0", secs(70));
            let _ = l.arrive(&id);
            let _ = l.discard(&id);
        }
    });
    l
}

/// An event of the grid: the Rust event, the encoding's fields, and
/// where `x` starts (for overdue takes).
pub(super) struct Case {
    pub(super) event: Event,
    pub(super) fields: [i128; EVENT_FIELDS],
    pub(super) x_started: Duration,
}

/// When `x` starts if it is not to be overdue.
pub(super) const LATE: Duration = Duration::from_secs(100);

pub(super) fn events(g: &Grid) -> Vec<Case> {
    let mut all = Vec::new();
    let late = LATE;
    let plain = |kind: i64| [i128::from(kind), 0, 0, 1, 0, 0, 0, 0, 0];
    let mut push = |event: Event, fields: [i128; EVENT_FIELDS]| {
        all.push(Case {
            event,
            fields,
            x_started: late,
        });
    };
    let mut overdue = Vec::new();
    for (task, t, valid) in [("t0", 0, 1), ("t1", 1, 1), ("", 0, 0)] {
        let mut f = plain(event::SCOPE_TASK);
        f[3] = valid;
        f[4] = t;
        push(Event::ScopeTask(task.into()), f);
    }
    for token in [
        g.issued.saturating_sub(2),
        g.issued.saturating_sub(1),
        g.issued,
    ] {
        let mut f = plain(event::END_SCOPE);
        f[5] = i128::from(token);
        push(Event::EndScope(ScopeToken::new(token)), f);
    }
    // The ids an event may name: (id, on_x, other).
    let mut ids = vec![("x", 1, other::FRESH), ("f9", 0, other::FRESH)];
    if g.out > 0 {
        ids.push(("o0", 0, other::OUTSTANDING));
    }
    if g.arr > 0 {
        ids.push(("a0", 0, other::ARRIVED));
    }
    if g.scoped {
        ids.push(("d0", 0, other::DELIVERED));
    }
    for &(id, on_x, which) in &ids {
        let named = |kind: i64| {
            let mut f = plain(kind);
            f[1] = on_x;
            f[2] = i128::from(which);
            f
        };
        for (task, t) in [("t0", 0), ("t1", 1)] {
            let mut f = named(event::REGISTER);
            f[4] = t;
            push(
                Event::Register {
                    id: id.into(),
                    task: task.into(),
                    data: 0,
                    started: Duration::from_secs(80),
                },
                f,
            );
        }
        push(Event::Discard(id.into()), named(event::DISCARD));
        for ending in [0, 1] {
            let mut f = named(event::ARRIVE);
            f[6] = ending;
            push(Event::Arrive(id.into()), f);
        }
    }
    let mut invalid = plain(event::REGISTER);
    invalid[3] = 0;
    push(
        Event::Register {
            id: String::new(),
            task: "t0".into(),
            data: 0,
            started: Duration::ZERO,
        },
        invalid,
    );
    let mut adopt = plain(event::ADOPT);
    adopt[1] = 1;
    push(
        Event::Adopt {
            id: "x".into(),
            child: ModelChild(7),
        },
        adopt,
    );
    for kind in [
        event::BEGIN_WAIT,
        event::POLL_WAIT,
        event::DROP_WAIT,
        event::TAKE_ARRIVED,
        event::TAKE_ALL,
    ] {
        let e = match kind {
            event::BEGIN_WAIT => Event::BeginWait,
            event::POLL_WAIT => Event::PollWait,
            event::DROP_WAIT => Event::DropWait,
            event::TAKE_ARRIVED => Event::TakeArrived,
            _ => Event::TakeAll,
        };
        push(e, plain(kind));
    }
    // Before the clock passed the bound, nothing is overdue.
    push(
        Event::TakeOverdue {
            bound: Duration::from_secs(5),
            now: Duration::ZERO,
        },
        plain(event::TAKE_OVERDUE),
    );
    // `x` starts at 0 s (overdue with the others due) or 100 s (not); the
    // i-th other outstanding entry at i + 1 s.
    for x_due in [0, 1] {
        for due in 0..=g.out {
            let mut f = plain(event::TAKE_OVERDUE);
            f[7] = x_due;
            f[8] = due as i128;
            overdue.push(Case {
                event: Event::TakeOverdue {
                    bound: Duration::from_secs(1),
                    now: Duration::from_secs(due as u64 + 1),
                },
                fields: f,
                x_started: if x_due == 1 { Duration::ZERO } else { late },
            });
        }
    }
    all.extend(overdue);
    all
}

fn task_number(task: &str) -> i128 {
    match task {
        "t0" => 0,
        "t1" => 1,
        _ => 2,
    }
}

/// `l` read back as the encoding's fields (`issued` as known).
pub(super) fn fields(l: &L, issued: u64) -> [i128; FIELDS] {
    let (scoped, task, token) = match l.scope() {
        Some((task, token)) => (1, task_number(task), i128::from(token.get())),
        None => (0, 0, 0),
    };
    let x = match l.entry("x") {
        Some(e) if e.arrived => held::ARRIVED,
        Some(_) => held::OUTSTANDING,
        None if l.clone().arrive_decided("x", false) == Arrival::AlreadyDelivered => {
            held::DELIVERED
        }
        None => held::GONE,
    };
    let child = l.entry("x").is_some_and(|e| e.child.is_some());
    let (mut out, mut arr) = (0, 0);
    for (id, _) in l.live().iter() {
        if &**id == "x" {
            continue;
        }
        match l.entry(id) {
            Some(e) if e.arrived => arr += 1,
            _ => out += 1,
        }
    }
    let (pending, given) = l.waits();
    let n = |v: usize| v as i128;
    [
        scoped,
        task,
        token,
        i128::from(issued),
        i128::from(x),
        i128::from(child),
        out,
        arr,
        n(l.counts().arrived),
        n(pending),
        n(given),
        i128::from(l.permit()),
    ]
}

/// The outcome's answers: its kind, whether it carries a child of `x`'s,
/// whether it took `x`.
pub(super) fn answers(o: &Outcome) -> [i128; 3] {
    let of_x = |taken: &[Taken<u8, ModelChild>]| {
        let x = taken.iter().find(|t| &*t.id == "x");
        (
            i128::from(x.is_some_and(|t| t.entry.child.is_some())),
            i128::from(x.is_some()),
        )
    };
    let (code, (carries, took)) = match o {
        Outcome::Scoped(_, left) => (answer::SCOPED, of_x(left)),
        Outcome::ScopeRefused(_) => (answer::SCOPE_REFUSED, (0, 0)),
        Outcome::ScopeEnded(Some(left)) => (answer::ENDED, of_x(left)),
        Outcome::ScopeEnded(None) => (answer::STALE, (0, 0)),
        Outcome::Registered(r) => (
            match r {
                Ok(()) => answer::REGISTERED,
                Err(RegisterError::InvalidId(_)) => answer::INVALID_ID,
                Err(RegisterError::NoTaskInScope) => answer::NO_TASK,
                Err(RegisterError::OtherTask { .. }) => answer::OTHER_TASK,
                Err(RegisterError::DuplicateId) => answer::DUPLICATE,
                Err(_) => -1,
            },
            (0, 0),
        ),
        Outcome::Adopted(Adoption::Adopted) => (answer::ADOPTED, (0, 0)),
        Outcome::Adopted(Adoption::Replaced(_)) => (answer::REPLACED, (1, 0)),
        Outcome::Adopted(Adoption::NotLive(_)) => (answer::NOT_LIVE, (1, 0)),
        Outcome::Arrived(a) => (
            match a {
                Arrival::Delivered => answer::DELIVERED,
                Arrival::AlreadyDelivered => answer::ALREADY,
                Arrival::NotOutstanding => answer::NOT_OUTSTANDING,
                Arrival::BeingEnded => answer::BEING_ENDED,
                _ => -1,
            },
            (0, 0),
        ),
        Outcome::Waited(w) => (
            match w {
                Waited::Resolved => answer::RESOLVED,
                Waited::Pending => answer::PENDING,
                Waited::Dropped => answer::DROPPED,
                Waited::DroppedWakeOthers => answer::DROPPED_WAKE,
                Waited::PassedOn => answer::PASSED_ON,
                Waited::NotWaiting => answer::NOT_WAITING,
            },
            (0, 0),
        ),
        Outcome::Took(taken) => (answer::TOOK, of_x(taken)),
    };
    [i128::from(code), carries, took]
}
