//! Every event of SPEC §2 in every situation that decides it differently,
//! with D1–D6 checked after each.
//!
//! Kept whole, past 600 lines: one test per event and situation of SPEC
//! §2's ledger table, in the table's order.

use std::time::Duration;

use super::core::{
    Adoption, Arrival, Child, Counts, Ledger, Live, RegisterError, ScopeToken, Taken, Waited,
};
use crate::facts::IdError;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Kid {
    name: &'static str,
    ending: bool,
}

impl Child for Kid {
    fn begin_ending(&self) {}
    fn is_being_ended(&self) -> bool {
        self.ending
    }
}

fn kid(name: &'static str) -> Kid {
    Kid {
        name,
        ending: false,
    }
}

type L = Ledger<&'static str, Kid>;

const TASK: &str = "tsk_a";

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn scoped() -> (L, ScopeToken) {
    let mut ledger = L::new();
    let (token, left) = ledger.scope_task(TASK.into()).unwrap();
    assert!(left.is_empty());
    (ledger, token)
}

fn ids<'a>(taken: &'a [Taken<&'static str, Kid>]) -> Vec<&'a str> {
    taken.iter().map(|t| &*t.id).collect()
}

/// D4: `counts()` equals the entries' states.
fn check_counts(ledger: &L, ids: &[&str]) {
    let mut outstanding = 0;
    let mut arrived = 0;
    for id in ids {
        match ledger.entry(id) {
            Some(entry) if entry.arrived => arrived += 1,
            Some(_) => outstanding += 1,
            None => {}
        }
    }
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding,
            arrived
        },
        "D4"
    );
}

#[test]
fn d2_register_needs_the_task_in_scope_and_a_fresh_valid_id() {
    let mut ledger = L::new();
    assert_eq!(
        ledger.register("dlg_a", TASK, "x", secs(0)),
        Err(RegisterError::NoTaskInScope)
    );
    ledger.scope_task(TASK.into()).unwrap();
    assert_eq!(
        ledger.register("dlg_a", "tsk_b", "x", secs(0)),
        Err(RegisterError::OtherTask {
            scoped: TASK.into(),
            found: "tsk_b".into()
        })
    );
    assert_eq!(
        ledger.register("", TASK, "x", secs(0)),
        Err(RegisterError::InvalidId(IdError::Empty))
    );
    assert_eq!(
        ledger.register("a\nb", TASK, "x", secs(0)),
        Err(RegisterError::InvalidId(IdError::ControlCharacter))
    );
    assert_eq!(
        ledger.register(&"x".repeat(257), TASK, "x", secs(0)),
        Err(RegisterError::InvalidId(IdError::TooLong(257)))
    );
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 0,
            arrived: 0
        },
        "S9-like: refusals change nothing"
    );
    assert_eq!(ledger.register("dlg_a", TASK, "first", secs(0)), Ok(()));
    check_counts(&ledger, &["dlg_a"]);
}

/// Issue 22: a task id is checked as delegation ids are; a refusal
/// changes nothing (the scope before stays current).
#[test]
fn scope_task_refuses_an_invalid_task_id_and_changes_nothing() {
    let (mut ledger, token) = scoped();
    ledger.register("dlg_a", TASK, "x", secs(0)).unwrap();
    let before = ledger.clone();
    for (task, error) in [
        (String::new(), IdError::Empty),
        ("t\n".to_owned(), IdError::ControlCharacter),
        ("t".repeat(257), IdError::TooLong(257)),
    ] {
        assert_eq!(ledger.scope_task(task), Err(error));
        assert_eq!(ledger, before, "S9-like: a refusal changes nothing");
    }
    assert_eq!(ledger.scope(), Some((TASK, token)));
}

/// `arrival_child` names the child whose ending decides, `arrive_decided`
/// takes its answer given beforehand, and together they are `arrive`.
#[test]
fn arrival_child_names_the_child_that_decides_and_arrive_decided_takes_its_answer() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_a", TASK, "x", secs(0)).unwrap();
    ledger.register("dlg_b", TASK, "x", secs(0)).unwrap();
    assert_eq!(ledger.arrival_child("dlg_a"), None, "no child yet");
    let _ = ledger.adopt("dlg_a", kid("a"));
    assert_eq!(ledger.arrival_child("dlg_a"), Some(&kid("a")));
    assert_eq!(ledger.arrival_child("dlg_gone"), None);
    let before = ledger.clone();
    assert_eq!(ledger.arrive_decided("dlg_a", true), Arrival::BeingEnded);
    assert_eq!(ledger, before, "a refusal changes nothing");
    assert_eq!(
        ledger.arrive_decided("dlg_b", true),
        Arrival::Delivered,
        "no child: the answer is not read"
    );
    assert_eq!(ledger.arrive_decided("dlg_a", false), Arrival::Delivered);
    assert_eq!(
        ledger.arrival_child("dlg_a"),
        None,
        "arrived: nothing to ask"
    );
    assert_eq!(
        ledger.arrive_decided("dlg_a", false),
        Arrival::AlreadyDelivered
    );
}

/// What the adapter calls: `arrive_asking` asks exactly `arrival_child`,
/// and only it; its `Err` returns at once with nothing changed; its answer
/// decides as `arrive_decided`'s does (D1: one delivery).
#[test]
fn arrive_asking_asks_only_the_arrival_child_and_its_err_changes_nothing() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_a", TASK, "x", secs(0)).unwrap();
    ledger.register("dlg_b", TASK, "x", secs(0)).unwrap();
    let _ = ledger.adopt("dlg_a", kid("a"));
    let never = |_: &_| -> Result<bool, ()> { panic!("asked a child that decides nothing") };
    let before = ledger.clone();
    assert_eq!(
        ledger.arrive_asking("dlg_a", |child| {
            assert_eq!(child, &kid("a"), "the arrival child");
            Err("ask outside the lock")
        }),
        Err("ask outside the lock")
    );
    assert_eq!(ledger, before, "an Err changes nothing");
    assert_eq!(
        ledger.arrive_asking("dlg_a", |_| Ok::<_, ()>(true)),
        Ok(Arrival::BeingEnded)
    );
    assert_eq!(ledger, before, "a refusal changes nothing");
    assert_eq!(
        ledger.arrive_asking("dlg_b", never),
        Ok(Arrival::Delivered),
        "no child"
    );
    assert_eq!(
        ledger.arrive_asking("dlg_a", |_| Ok::<_, ()>(false)),
        Ok(Arrival::Delivered)
    );
    assert_eq!(
        ledger.arrive_asking("dlg_a", never),
        Ok(Arrival::AlreadyDelivered)
    );
    assert_eq!(
        ledger.arrive_asking("dlg_gone", never),
        Ok(Arrival::NotOutstanding)
    );
    assert_eq!(ledger.counts().arrived, 2);
}

/// Seed defect (3): a duplicate id silently replaced (and orphaned) a live
/// entry.
#[test]
fn a_duplicate_id_is_refused_and_never_replaces_the_live_entry() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_a", TASK, "first", secs(0)).unwrap();
    assert!(matches!(
        ledger.adopt("dlg_a", kid("one")),
        Adoption::Adopted
    ));
    assert_eq!(
        ledger.register("dlg_a", TASK, "second", secs(5)),
        Err(RegisterError::DuplicateId)
    );
    let entry = ledger.entry("dlg_a").unwrap();
    assert_eq!(
        (
            *entry.data,
            entry.started,
            entry.child.as_ref().map(|k| k.name)
        ),
        ("first", secs(0), Some("one"))
    );
    // Also once delivered and taken, within the scope.
    assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
    let _ = ledger.take_arrived();
    assert_eq!(
        ledger.register("dlg_a", TASK, "third", secs(9)),
        Err(RegisterError::DuplicateId)
    );
}

#[test]
fn adopt_keeps_one_child_and_returns_every_other_to_be_ended() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_a", TASK, "x", secs(0)).unwrap();
    assert_eq!(ledger.adopt("dlg_a", kid("one")), Adoption::Adopted);
    assert_eq!(
        ledger.adopt("dlg_a", kid("two")),
        Adoption::Replaced(kid("one")),
        "D3"
    );
    assert_eq!(
        ledger.adopt("dlg_gone", kid("three")),
        Adoption::NotLive(kid("three")),
        "D3"
    );
    assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
    assert_eq!(
        ledger.adopt("dlg_a", kid("four")),
        Adoption::Replaced(kid("two")),
        "an arrived entry is live"
    );
}

#[test]
fn d1_arrive_delivers_once_then_already_delivered_even_after_the_take() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_a", TASK, "x", secs(0)).unwrap();
    ledger.register("dlg_b", TASK, "x", secs(0)).unwrap();
    assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
    assert_eq!(
        ledger.arrive("dlg_a"),
        Arrival::AlreadyDelivered,
        "arrived, in the ledger"
    );
    assert_eq!(ledger.arrive("dlg_nobody"), Arrival::NotOutstanding);
    check_counts(&ledger, &["dlg_a", "dlg_b"]);
    assert_eq!(ids(&ledger.take_arrived()), ["dlg_a"]);
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 0
        }
    );
    assert_eq!(
        ledger.arrive("dlg_a"),
        Arrival::AlreadyDelivered,
        "arrived and taken"
    );
    assert_eq!(ledger.delivered_len(), 1);
}

#[test]
fn an_arrival_whose_child_is_being_ended_is_refused_and_changes_nothing() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_a", TASK, "x", secs(0)).unwrap();
    let _ = ledger.adopt(
        "dlg_a",
        Kid {
            name: "one",
            ending: true,
        },
    );
    let before = ledger.clone();
    assert_eq!(ledger.arrive("dlg_a"), Arrival::BeingEnded);
    assert_eq!(ledger, before);
    assert!(!ledger.permit());
}

#[test]
fn d6_with_no_wait_pending_deliveries_coalesce_into_one_stored_permit() {
    let (mut ledger, _) = scoped();
    assert_eq!(ledger.begin_wait(), Waited::Pending, "nothing stored yet");
    assert_eq!(ledger.drop_wait(), Waited::Dropped);
    for id in ["dlg_a", "dlg_b", "dlg_c"] {
        ledger.register(id, TASK, "x", secs(0)).unwrap();
    }
    assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
    assert_eq!(ledger.begin_wait(), Waited::Resolved, "D6: the next wait");
    assert_eq!(ledger.begin_wait(), Waited::Pending, "the permit is taken");
    assert_eq!(ledger.drop_wait(), Waited::Dropped);
    assert_eq!(ledger.arrive("dlg_b"), Arrival::Delivered);
    assert_eq!(ledger.arrive("dlg_c"), Arrival::Delivered);
    assert_eq!(ledger.begin_wait(), Waited::Resolved);
    assert_eq!(
        ledger.begin_wait(),
        Waited::Pending,
        "two arrivals before any wait coalesce into one permit"
    );
    assert_eq!(ledger.arrive("dlg_c"), Arrival::AlreadyDelivered);
    assert_eq!(ledger.waits(), (1, 0), "a repeated arrival wakes nobody");
    assert!(!ledger.permit(), "and stores nothing");
}

/// A wait's sub-machine in one state: `(pending, given, permit)`, reached
/// by `pending` first polls and then `given + permit` deliveries.
fn waits_in(pending: usize, given: usize, permit: bool) -> L {
    let (mut ledger, _) = scoped();
    for _ in 0..pending {
        assert_eq!(ledger.begin_wait(), Waited::Pending);
    }
    for n in 0..given + usize::from(permit) {
        let id = format!("dlg_{n}");
        ledger.register(&id, TASK, "x", secs(0)).unwrap();
        assert_eq!(ledger.arrive(&id), Arrival::Delivered);
    }
    assert_eq!(
        (ledger.waits(), ledger.permit()),
        ((pending, given), permit)
    );
    ledger
}

/// An event of the wait sub-machine, for [`d6_every_cell_of_the_wait_table`].
#[derive(Clone, Copy, Debug)]
enum WaitEvent {
    Deliver,
    Begin,
    Poll,
    Drop,
    ScopeChange,
}

/// D6, cell by cell: every reachable `(pending, given, permit)` with up to
/// two pending waits, under each event, as `Notify::notify_one` decides
/// it. `None`: the event answers something else than a `Waited` (an
/// arrival, a scope).
#[test]
fn d6_every_cell_of_the_wait_table() {
    use WaitEvent::*;
    use Waited::*;
    type State = (usize, usize, bool);
    #[rustfmt::skip]
    let table: [(State, WaitEvent, Option<Waited>, State); 45] = [
        // No wait pending.
        ((0, 0, false), Deliver,     None,                    (0, 0, true)),
        ((0, 0, false), Begin,       Some(Pending),           (1, 0, false)),
        ((0, 0, false), Poll,        Some(NotWaiting),        (0, 0, false)),
        ((0, 0, false), Drop,        Some(NotWaiting),        (0, 0, false)),
        ((0, 0, false), ScopeChange, None,                    (0, 0, false)),
        ((0, 0, true),  Deliver,     None,                    (0, 0, true)),
        ((0, 0, true),  Begin,       Some(Resolved),          (0, 0, false)),
        ((0, 0, true),  Poll,        Some(NotWaiting),        (0, 0, true)),
        ((0, 0, true),  Drop,        Some(NotWaiting),        (0, 0, true)),
        ((0, 0, true),  ScopeChange, None,                    (0, 0, false)),
        // One wait pending.
        ((1, 0, false), Deliver,     None,                    (1, 1, false)),
        ((1, 0, false), Begin,       Some(Pending),           (2, 0, false)),
        ((1, 0, false), Poll,        Some(Pending),           (1, 0, false)),
        ((1, 0, false), Drop,        Some(Dropped),           (0, 0, false)),
        ((1, 0, false), ScopeChange, None,                    (1, 0, false)),
        ((1, 1, false), Deliver,     None,                    (1, 1, true)),
        ((1, 1, false), Begin,       Some(Pending),           (2, 1, false)),
        ((1, 1, false), Poll,        Some(Resolved),          (0, 0, false)),
        ((1, 1, false), Drop,        Some(PassedOn),          (0, 0, true)),
        ((1, 1, false), ScopeChange, None,                    (1, 0, false)),
        ((1, 1, true),  Deliver,     None,                    (1, 1, true)),
        ((1, 1, true),  Begin,       Some(Resolved),          (1, 1, false)),
        ((1, 1, true),  Poll,        Some(Resolved),          (0, 0, true)),
        ((1, 1, true),  Drop,        Some(PassedOn),          (0, 0, true)),
        ((1, 1, true),  ScopeChange, None,                    (1, 0, false)),
        // Two waits pending: two deliveries wake both (not one).
        ((2, 0, false), Deliver,     None,                    (2, 1, false)),
        ((2, 0, false), Begin,       Some(Pending),           (3, 0, false)),
        ((2, 0, false), Poll,        Some(Pending),           (2, 0, false)),
        ((2, 0, false), Drop,        Some(Dropped),           (1, 0, false)),
        ((2, 0, false), ScopeChange, None,                    (2, 0, false)),
        ((2, 1, false), Deliver,     None,                    (2, 2, false)),
        ((2, 1, false), Begin,       Some(Pending),           (3, 1, false)),
        ((2, 1, false), Poll,        Some(Resolved),          (1, 0, false)),
        ((2, 1, false), Drop,        Some(DroppedWakeOthers), (1, 1, false)),
        ((2, 1, false), ScopeChange, None,                    (2, 0, false)),
        ((2, 2, false), Deliver,     None,                    (2, 2, true)),
        ((2, 2, false), Begin,       Some(Pending),           (3, 2, false)),
        ((2, 2, false), Poll,        Some(Resolved),          (1, 1, false)),
        ((2, 2, false), Drop,        Some(PassedOn),          (1, 1, true)),
        ((2, 2, false), ScopeChange, None,                    (2, 0, false)),
        ((2, 2, true),  Deliver,     None,                    (2, 2, true)),
        ((2, 2, true),  Begin,       Some(Resolved),          (2, 2, false)),
        ((2, 2, true),  Poll,        Some(Resolved),          (1, 1, true)),
        ((2, 2, true),  Drop,        Some(PassedOn),          (1, 1, true)),
        ((2, 2, true),  ScopeChange, None,                    (2, 0, false)),
    ];
    for ((pending, given, permit), event, answer, after) in table {
        let mut ledger = waits_in(pending, given, permit);
        let got = match event {
            Deliver => {
                ledger.register("dlg_new", TASK, "x", secs(0)).unwrap();
                assert_eq!(ledger.arrive("dlg_new"), Arrival::Delivered);
                None
            }
            Begin => Some(ledger.begin_wait()),
            Poll => Some(ledger.poll_wait()),
            Drop => Some(ledger.drop_wait()),
            ScopeChange => {
                let (_, left) = ledger.scope_task("tsk_b".into()).unwrap();
                drop(left);
                None
            }
        };
        let (waits, stored) = (ledger.waits(), ledger.permit());
        assert_eq!(
            (got, (waits.0, waits.1, stored)),
            (answer, after),
            "D6: {event:?} in {:?}",
            (pending, given, permit)
        );
    }
}

/// D6 (`notify_one`): two pending waits and two arrivals resolve both; the
/// old rule let the second arrival coalesce into the first's wake-up.
#[test]
fn d6_two_arrivals_wake_two_pending_waits() {
    let mut ledger = waits_in(2, 0, false);
    for id in ["dlg_a", "dlg_b"] {
        ledger.register(id, TASK, "x", secs(0)).unwrap();
        assert_eq!(ledger.arrive(id), Arrival::Delivered);
    }
    assert_eq!(
        [ledger.poll_wait(), ledger.poll_wait()],
        [Waited::Resolved, Waited::Resolved]
    );
    assert_eq!((ledger.waits(), ledger.permit()), ((0, 0), false));
}

#[test]
fn discard_removes_a_live_entry_once_and_remembers_an_arrived_one() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_a", TASK, "x", secs(0)).unwrap();
    ledger.register("dlg_b", TASK, "x", secs(0)).unwrap();
    assert_eq!(ledger.discard("dlg_a").map(|t| t.id), Some("dlg_a".into()));
    assert_eq!(ledger.discard("dlg_a"), None);
    assert_eq!(ledger.discard("dlg_missing"), None);
    assert_eq!(ledger.arrive("dlg_a"), Arrival::NotOutstanding);
    assert_eq!(ledger.arrive("dlg_b"), Arrival::Delivered);
    assert!(ledger.discard("dlg_b").is_some());
    assert_eq!(ledger.arrive("dlg_b"), Arrival::AlreadyDelivered, "D1");
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 0,
            arrived: 0
        }
    );
}

#[test]
fn take_overdue_takes_only_not_arrived_entries_past_their_bound_in_id_order() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_c", TASK, "x", secs(10)).unwrap();
    ledger.register("dlg_b", TASK, "x", secs(0)).unwrap();
    ledger.register("dlg_a", TASK, "x", secs(40)).unwrap();
    ledger.register("dlg_z", TASK, "x", secs(0)).unwrap();
    let _ = ledger.adopt("dlg_c", kid("c"));
    assert_eq!(ledger.arrive("dlg_z"), Arrival::Delivered);
    let bound = secs(60);
    assert_eq!(
        ledger.next_overdue(bound),
        Some(secs(60)),
        "dlg_b, not the arrived dlg_z"
    );
    assert!(ledger.take_overdue(bound, secs(59)).is_empty());
    assert!(
        ledger.take_overdue(bound, secs(5)).is_empty(),
        "now before the bound"
    );
    let taken = ledger.take_overdue(bound, secs(70));
    assert_eq!(
        ids(&taken),
        ["dlg_b", "dlg_c"],
        "started + bound <= now, id order"
    );
    assert_eq!(
        taken[1].child_to_end(),
        Some(&kid("c")),
        "D3: its child is to be ended"
    );
    assert_eq!(ledger.next_overdue(bound), Some(secs(100)));
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 1
        }
    );
    assert_eq!(
        ledger.next_overdue(Duration::MAX),
        None,
        "overflow is never overdue"
    );
    assert!(ledger.take_overdue(Duration::MAX, secs(1000)).is_empty());
}

#[test]
fn take_all_returns_everything_in_id_order_and_remembers_the_arrived() {
    let (mut ledger, _) = scoped();
    for id in ["dlg_b", "dlg_a", "dlg_c"] {
        ledger.register(id, TASK, "x", secs(0)).unwrap();
    }
    assert_eq!(ledger.arrive("dlg_c"), Arrival::Delivered);
    let taken = ledger.take_all();
    assert_eq!(ids(&taken), ["dlg_a", "dlg_b", "dlg_c"]);
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 0,
            arrived: 0
        }
    );
    assert_eq!(ledger.next_overdue(secs(1)), None);
    assert_eq!(ledger.arrive("dlg_c"), Arrival::AlreadyDelivered);
    assert_eq!(ledger.arrive("dlg_a"), Arrival::NotOutstanding);
    assert!(ledger.take_all().is_empty());
}

#[test]
fn live_lists_every_entry_in_id_order() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_b", TASK, "second", secs(0)).unwrap();
    ledger.register("dlg_a", TASK, "first", secs(0)).unwrap();
    let live: Vec<_> = ledger
        .live()
        .iter()
        .map(|(id, d)| (id.to_string(), **d))
        .collect();
    assert_eq!(
        live,
        [("dlg_a".into(), "first"), ("dlg_b".into(), "second")]
    );
}

#[test]
fn a_live_snapshot_keeps_what_it_saw_while_the_ledger_changes() {
    let (mut ledger, _) = scoped();
    ledger.register("dlg_a", TASK, "first", secs(0)).unwrap();
    ledger.register("dlg_b", TASK, "second", secs(0)).unwrap();
    let before = ledger.live();
    assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
    assert_eq!(ledger.take_arrived().len(), 1);
    ledger.register("dlg_c", TASK, "third", secs(1)).unwrap();
    let ids = |live: &Live<&str>| {
        live.iter()
            .map(|(id, _)| id.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&before),
        ["dlg_a", "dlg_b"],
        "the snapshot is unchanged"
    );
    assert_eq!(
        ids(&ledger.live()),
        ["dlg_b", "dlg_c"],
        "the ledger moved on"
    );
    assert_eq!(
        (before.get("dlg_a").map(|d| **d), ledger.live().get("dlg_a")),
        (Some("first"), None)
    );
    drop(ledger.take_all());
    assert!(ledger.live().is_empty() && before.len() == 2);
}

#[test]
fn live_snapshots_compare_hash_and_print_by_content() {
    use std::hash::{BuildHasher, RandomState};
    let hash = {
        let state = RandomState::new();
        move |live: &Live<&str>| state.hash_one(live)
    };
    let (mut one, _) = scoped();
    let (mut other, _) = scoped();
    one.register("dlg_a", TASK, "first", secs(0)).unwrap();
    one.register("dlg_b", TASK, "second", secs(0)).unwrap();
    // The same content reached another way: another tree, equal snapshots.
    other.register("dlg_b", TASK, "second", secs(5)).unwrap();
    other.register("dlg_c", TASK, "third", secs(5)).unwrap();
    other.register("dlg_a", TASK, "first", secs(5)).unwrap();
    drop(other.discard("dlg_c"));
    assert_eq!(one.live(), other.live());
    assert_eq!(hash(&one.live()), hash(&other.live()));

    let before = one.live();
    drop(one.discard("dlg_b"));
    assert_ne!(before, one.live(), "an entry less");
    assert_ne!(hash(&before), hash(&one.live()));
    one.register("dlg_b", TASK, "changed", secs(0)).unwrap();
    assert_ne!(before, one.live(), "the same ids, other data");

    assert_eq!(
        format!("{before:?}"),
        r#"{"dlg_a": "first", "dlg_b": "second"}"#
    );
    let iter = before.iter();
    assert_eq!(iter.len(), 2);
    let backwards: Vec<_> = before.iter().rev().map(|(id, _)| &**id).collect();
    assert_eq!(backwards, ["dlg_b", "dlg_a"]);
    let forwards: Vec<_> = (&before).into_iter().map(|(_, d)| **d).collect();
    assert_eq!(forwards, ["first", "second"]);
    assert!(Live::<&str>::default().is_empty() && !before.is_empty());
    assert_eq!(before.clone(), before);
}

#[test]
fn d3_d5_a_scope_change_takes_everything_and_ends_only_children_not_arrived() {
    let (mut ledger, first) = scoped();
    for id in ["dlg_a", "dlg_b", "dlg_c"] {
        ledger.register(id, TASK, "x", secs(0)).unwrap();
    }
    let _ = ledger.adopt("dlg_a", kid("a"));
    let _ = ledger.adopt("dlg_b", kid("b"));
    assert_eq!(ledger.arrive("dlg_b"), Arrival::Delivered);
    let (second, left) = ledger.scope_task("tsk_b".into()).unwrap();
    assert!(second > first);
    assert_eq!(second.get(), first.get() + 1);
    assert_eq!(ScopeToken::new(second.get()), second);
    assert_eq!(
        ids(&left),
        ["dlg_a", "dlg_b", "dlg_c"],
        "D5: the old scope is emptied"
    );
    let to_end: Vec<_> = left
        .iter()
        .filter_map(Taken::child_to_end)
        .map(|k| k.name)
        .collect();
    assert_eq!(
        to_end,
        ["a"],
        "D3: the arrived child is not ended, the outstanding one is"
    );
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 0,
            arrived: 0
        }
    );
    assert!(!ledger.permit(), "the old scope's wake-up went with it");
    assert_eq!(ledger.scope(), Some(("tsk_b", second)));
    assert_eq!(
        ledger.arrive("dlg_b"),
        Arrival::NotOutstanding,
        "the delivered memory went with it"
    );
}

/// Seed defects (1) and (2): dropping an older scope cleared the newer
/// task's scope; the delivered memory grew forever.
#[test]
fn ending_an_older_scope_changes_nothing_and_ending_the_current_frees_its_memory() {
    let (mut ledger, old) = scoped();
    let (new, _) = ledger.scope_task("tsk_b".into()).unwrap();
    ledger.register("dlg_a", "tsk_b", "x", secs(0)).unwrap();
    ledger.register("dlg_b", "tsk_b", "x", secs(0)).unwrap();
    assert_eq!(ledger.arrive("dlg_b"), Arrival::Delivered);
    let _ = ledger.take_arrived();
    let before = ledger.clone();
    assert_eq!(ledger.end_scope(old), None);
    assert_eq!(ledger, before, "the older scope's end is inert");
    assert_eq!(ledger.delivered_len(), 1);
    let left = ledger.end_scope(new).expect("the current scope ends");
    assert_eq!(ids(&left), ["dlg_a"]);
    assert_eq!(
        (ledger.scope(), ledger.delivered_len(), ledger.counts()),
        (None, 0, Counts::default()),
        "D5"
    );
    assert_eq!(ledger.end_scope(new), None, "ending twice is inert");
    assert_eq!(
        ledger.register("dlg_c", "tsk_b", "x", secs(0)),
        Err(RegisterError::NoTaskInScope)
    );
}

/// The model checker tells states apart by `Eq` and `Hash`, and a failure
/// report prints them with `Debug`: each must see the entries. Two ledgers
/// alike but for their entries (one a subset of the other, or the same ids
/// with another start) are unequal and hash apart, and `Debug` names every
/// id in id order.
#[test]
fn ledgers_differing_only_in_their_entries_are_unequal_hash_apart_and_print_them() {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let hash = |ledger: &L| BuildHasherDefault::<DefaultHasher>::default().hash_one(ledger);
    let (mut one, _) = scoped();
    one.register("dlg_b", TASK, "b", secs(1)).unwrap();
    let mut two = one.clone();
    two.register("dlg_a", TASK, "a", secs(2)).unwrap();
    assert_ne!(one, two, "a subset of the entries is not the same ledger");
    assert_ne!(hash(&one), hash(&two));
    let (mut other_start, _) = scoped();
    other_start.register("dlg_b", TASK, "b", secs(3)).unwrap();
    assert_ne!(one, other_start);
    assert_ne!(hash(&one), hash(&other_start));
    let mut same = L::new();
    let _ = same.scope_task(TASK.into()).unwrap();
    same.register("dlg_b", TASK, "b", secs(1)).unwrap();
    assert_eq!(one, same);
    assert_eq!(hash(&one), hash(&same));
    let printed = format!("{two:?}");
    let (a, b) = (printed.find("dlg_a"), printed.find("dlg_b"));
    assert!(a.is_some() && b.is_some() && a < b, "{printed}");
}

/// The delivered memory decides D1 (an id delivered and taken is
/// `AlreadyDelivered`, never registered again), so the model checker must
/// tell apart states that differ only in it, and a failure report must
/// print it: two ledgers alike but for the ids they delivered are unequal
/// and hash apart, the same ids delivered in another order make an equal
/// ledger with an equal hash, and `Debug` names every delivered id in id
/// order.
#[test]
fn d1_ledgers_differing_only_in_their_delivered_memory_are_unequal_hash_apart_and_print_it() {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let hash = |ledger: &L| BuildHasherDefault::<DefaultHasher>::default().hash_one(ledger);
    let delivered = |ids: &[&str]| {
        let (mut ledger, _) = scoped();
        for id in ids {
            ledger.register(id, TASK, "x", secs(0)).unwrap();
            assert_eq!(ledger.arrive(id), Arrival::Delivered);
            assert_eq!(self::ids(&ledger.take_arrived()), [*id]);
        }
        assert_eq!(ledger.delivered_len(), ids.len());
        assert_eq!(ledger.counts(), Counts::default());
        ledger
    };
    let (mut a, b) = (delivered(&["dlg_a"]), delivered(&["dlg_b"]));
    assert_eq!(a.arrive("dlg_a"), Arrival::AlreadyDelivered, "D1");
    assert_eq!(b.clone().arrive("dlg_a"), Arrival::NotOutstanding);
    assert_ne!(a, b, "other ids delivered");
    assert_ne!(hash(&a), hash(&b));
    let (ab, ba) = (
        delivered(&["dlg_a", "dlg_b"]),
        delivered(&["dlg_b", "dlg_a"]),
    );
    assert_ne!(a, ab, "an id more delivered");
    assert_ne!(hash(&a), hash(&ab));
    assert_eq!(ab, ba, "the same ids, delivered in another order");
    assert_eq!(hash(&ab), hash(&ba));
    for ledger in [&ab, &ba] {
        let printed = format!("{ledger:?}");
        let (a, b) = (printed.find("dlg_a"), printed.find("dlg_b"));
        assert!(a.is_some() && b.is_some() && a < b, "{printed}");
    }
}
