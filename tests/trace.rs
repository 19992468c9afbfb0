//! The `tracing` feature (issue 21): what the gate, the cancel signal, the
//! durable append and the ledger emit, and that nothing is emitted under a
//! lock.
//!
//! Each test installs its own capturing subscriber on its own thread
//! (`tracing::subscriber::with_default`, a current-thread runtime), so no
//! global state passes between tests.
#![cfg(feature = "tracing")]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use baton::durable::{Claim, HandoffLog, MemoryLog, SealError, append_then_seal};
use baton::durable::{Receipt, append_then_seal_async};
use baton::gate::core::StateKind;
use baton::{CancelSignal, CommitError, HandoffExecution, HandoffRequester, Phase};
use common::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Fields by name, each as its `Debug` text (strings unquoted).
type Fields = BTreeMap<String, String>;

/// One event as the subscriber saw it.
#[derive(Clone, Debug)]
struct Seen {
    target: String,
    level: Level,
    fields: Fields,
    /// The innermost entered span: its name and fields at the event.
    span: Option<(String, Fields)>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    fn message(&self) -> Option<&str> {
        self.field("message")
    }

    /// A gate transition as `(event, before, after, ticket)`.
    fn transition(&self) -> Option<(&str, &str, &str, Option<&str>)> {
        (self.target == "baton::gate" && self.message() == Some("transition")).then(|| {
            (
                self.field("event").unwrap_or("?"),
                self.field("before").unwrap_or("?"),
                self.field("after").unwrap_or("?"),
                self.field("ticket"),
            )
        })
    }
}

struct Collect<'a>(&'a mut Fields);

impl Visit for Collect<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
}

/// Checks, from inside the subscriber, that a machine's lock is free: a
/// second thread takes it (the gate's `state()`, the ledger's `counts()`),
/// and must be done within the bound. Under a held lock it would wait for
/// this callback to return, so the defect shows as a timeout here instead
/// of a deadlock.
struct Probe {
    lock: Arc<dyn Fn() + Send + Sync>,
    violations: Mutex<Vec<String>>,
    checks: AtomicU64,
}

impl Probe {
    fn check(&self, what: &str) {
        self.checks.fetch_add(1, Ordering::SeqCst);
        let lock = Arc::clone(&self.lock);
        let (done, finished) = mpsc::channel();
        std::thread::spawn(move || {
            lock();
            let _ = done.send(());
        });
        if finished.recv_timeout(Duration::from_secs(2)).is_err() {
            self.violations
                .lock()
                .unwrap()
                .push(format!("{what}: emitted while the lock was held"));
        }
    }
}

/// A subscriber that keeps every event of baton's targets (and the spans
/// they are in), optionally probing the gate's lock at each callback.
#[derive(Default)]
struct Capture {
    seen: Arc<Mutex<Vec<Seen>>>,
    spans: Mutex<HashMap<u64, (String, Fields)>>,
    stack: Mutex<Vec<u64>>,
    next: AtomicU64,
    probe: Option<Arc<Probe>>,
    /// Panics on a transition of this event (a subscriber is user code).
    panic_on: Option<&'static str>,
}

impl Capture {
    /// Probes the gate's lock.
    fn probed(requester: HandoffRequester<HandoffExecution>) -> (Self, Arc<Probe>) {
        Self::probing(move || {
            let _ = requester.state();
        })
    }

    /// Probes the lock `lock` takes.
    fn probing(lock: impl Fn() + Send + Sync + 'static) -> (Self, Arc<Probe>) {
        let probe = Arc::new(Probe {
            lock: Arc::new(lock),
            violations: Mutex::new(Vec::new()),
            checks: AtomicU64::new(0),
        });
        let capture = Self {
            probe: Some(Arc::clone(&probe)),
            ..Self::default()
        };
        (capture, probe)
    }

    fn check(&self, what: &str) {
        if let Some(probe) = &self.probe {
            probe.check(what);
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("baton")
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.check(&format!("new span {}", span.metadata().name()));
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = Fields::new();
        span.record(&mut Collect(&mut fields));
        self.spans
            .lock()
            .unwrap()
            .insert(id, (span.metadata().name().into(), fields));
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        self.check("span record");
        if let Some((_, fields)) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Collect(fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::new();
        event.record(&mut Collect(&mut fields));
        self.check(&format!("event {fields:?}"));
        let event_name = fields.get("event").map(String::as_str);
        if self.panic_on.is_some() && event_name == self.panic_on {
            panic!("the subscriber panics on {event_name:?}");
        }
        let span = self
            .stack
            .lock()
            .unwrap()
            .last()
            .and_then(|id| self.spans.lock().unwrap().get(id).cloned());
        self.seen.lock().unwrap().push(Seen {
            target: event.metadata().target().into(),
            level: *event.metadata().level(),
            fields,
            span,
        });
    }

    fn enter(&self, span: &Id) {
        self.stack.lock().unwrap().push(span.into_u64());
    }

    fn exit(&self, span: &Id) {
        let mut stack = self.stack.lock().unwrap();
        if let Some(at) = stack.iter().rposition(|id| *id == span.into_u64()) {
            stack.remove(at);
        }
    }
}

/// A span's fields as last recorded, by name (the last span of that name).
fn span_named(capture: &Capture, name: &str) -> Option<Fields> {
    let spans = capture.spans.lock().unwrap();
    let mut named: Vec<_> = spans.iter().filter(|(_, (n, _))| n == name).collect();
    named.sort_by_key(|(id, _)| **id);
    named.last().map(|(_, (_, fields))| fields.clone())
}

/// Runs `test` on this thread with `capture` as the only subscriber, on a
/// current-thread runtime (with the timer `within` needs, and the sockets
/// a `PostgresLog` needs).
fn with_capture<T>(capture: Capture, test: impl Future<Output = T>) -> (T, Arc<Capture>) {
    let capture = Arc::new(capture);
    let dispatch = tracing::Dispatch::new(Arc::clone(&capture));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = tracing::dispatcher::with_default(&dispatch, || runtime.block_on(test));
    (out, capture)
}

fn seen(capture: &Capture) -> Vec<Seen> {
    capture.seen.lock().unwrap().clone()
}

fn transitions(seen: &[Seen]) -> Vec<(&str, &str, &str, Option<&str>)> {
    seen.iter().filter_map(Seen::transition).collect()
}

/// A full handoff: reserve, preflight held, commit, seal, each one
/// `DEBUG` transition with its kinds and ticket, in that order (S5: the
/// seal comes last); the worker's preflight runs in its `boundary` span,
/// which carries the root Run and the ticket; the gate's drop after the
/// seal is ignored (a sealed gate stays sealed), at `TRACE`.
#[test]
fn s5_a_full_handoff_emits_its_four_transitions_in_order() {
    let ((), capture) = with_capture(Capture::default(), async {
        let gate = gate();
        let cancel = CancelSignal::new();
        let reservation = gate.requester().reserve(intent()).expect("reserved");
        let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
        let paused = paused.expect("committed");
        assert!(gate.sealed(&paused));
        within(SEALED, pending.wait()).await.expect("sealed");
    });
    let seen = seen(&capture);
    assert_eq!(
        transitions(&seen),
        [
            ("Reserve", "Running", "Requested", Some("0")),
            ("Preflight", "Requested", "Held", Some("0")),
            ("Commit", "Held", "Committed", Some("0")),
            ("Seal", "Committed", "Sealed", Some("0")),
        ]
    );
    for event in seen.iter().filter(|e| e.transition().is_some()) {
        assert_eq!(event.level, Level::DEBUG);
        assert_eq!(event.field("root_run_id"), Some("run"));
    }
    let preflight = seen
        .iter()
        .find(|e| e.field("event") == Some("Preflight"))
        .unwrap();
    let (span, fields) = preflight.span.clone().expect("in the boundary's span");
    assert_eq!(span, "boundary");
    assert_eq!(fields.get("root_run_id").map(String::as_str), Some("run"));
    assert_eq!(fields.get("ticket").map(String::as_str), Some("0"));
    let last = seen.last().expect("the gate's drop");
    assert_eq!(
        (last.level, last.message(), last.field("event")),
        (Level::TRACE, Some("ignored"), Some("Close"))
    );
}

/// Runs under one root are told apart (issue 34): a gate of the Run
/// `child` under the root Run `root` puts both on its transitions, its
/// refusals and its `boundary` span.
#[test]
fn gate_events_and_spans_carry_the_run_beside_the_root() {
    let ((), capture) = with_capture(Capture::default(), async {
        let mut source = source();
        source.run_id = "child".into();
        let gate: Gate = baton::HandoffGate::new(source.clone(), "root".into());
        let cancel = CancelSignal::new();
        let mut wanted = intent();
        wanted.root_run_id = "root".into();
        let reservation = gate.requester().reserve(wanted.clone()).expect("reserved");
        assert!(gate.requester().reserve(wanted).is_err(), "S1: one live");
        let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
        assert!(gate.sealed(&paused.expect("committed")));
        within(SEALED, pending.wait()).await.expect("sealed");
    });
    let seen = seen(&capture);
    assert!(seen.len() >= 5, "{seen:?}");
    for event in &seen {
        assert_eq!(
            (event.field("root_run_id"), event.field("run_id")),
            (Some("root"), Some("child")),
            "{event:?}"
        );
    }
    let preflight = seen
        .iter()
        .find(|e| e.field("event") == Some("Preflight"))
        .unwrap();
    let (_, fields) = preflight.span.clone().expect("in the boundary's span");
    assert_eq!(fields.get("run_id").map(String::as_str), Some("child"));
}

/// S1, S9: a reserve refused while another is live (answered from the
/// kind's copy in `Requested`, under the lock in `Held`) and a malformed
/// one are `TRACE` refusals naming the error; none changes the gate.
#[test]
fn s1_refused_reserves_are_trace_events_with_the_reason() {
    let ((), capture) = with_capture(Capture::default(), async {
        let gate = gate();
        let requester = gate.requester();
        let cancel = CancelSignal::new();
        let reservation = requester.reserve(intent()).expect("reserved");
        assert!(requester.reserve(intent()).is_err(), "busy in Requested");
        let mut invalid = intent();
        invalid.root_run_id = "another-run".into();
        assert!(requester.reserve(invalid).is_err(), "invalid input");
        let mut boundary = pin!(gate.boundary(&cancel, prepared));
        assert!(poll_once(boundary.as_mut()).is_pending(), "held");
        let held = within(HELD, reservation.ready()).await.expect("held");
        assert!(requester.reserve(intent()).is_err(), "busy in Held");
        drop(held);
        within(COMMITTED, boundary).await.expect("open");
    });
    let refusals: Vec<_> = seen(&capture)
        .into_iter()
        .filter(|e| e.message() == Some("refused"))
        .collect();
    let got: Vec<_> = refusals
        .iter()
        .map(|e| {
            assert_eq!(e.level, Level::TRACE);
            (
                e.field("event"),
                e.field("before"),
                e.field("refused"),
                e.field("ticket"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("Reserve"), Some("Requested"), Some("Busy"), None),
            (Some("Reserve"), None, Some("InvalidInput"), None),
            (Some("Reserve"), Some("Held"), Some("Busy"), Some("0")),
        ]
    );
}

/// S3: a commit refused because the worker canceled is a refusal, the
/// handle's release after it a `Cancel` transition back to `Running`, and
/// the signal's first fire (at that fire, and only the first) an event
/// with its phase: the whole sequence, in order.
#[test]
fn s3_a_commit_refused_by_cancellation_is_traced_with_the_fire_and_the_release() {
    let ((), capture) = with_capture(Capture::default(), async {
        let gate = gate();
        let cancel = CancelSignal::new();
        cancel.note_phase(Phase::Inference);
        let reservation = gate.requester().reserve(intent()).expect("reserved");
        let mut boundary = pin!(gate.boundary(&cancel, prepared));
        assert!(poll_once(boundary.as_mut()).is_pending(), "held");
        let held = within(HELD, reservation.ready()).await.expect("held");
        cancel.cancel();
        assert!(matches!(held.commit(), Err(CommitError::Canceled)));
        assert!(within(COMMITTED, boundary).await.expect("open").is_none());
        cancel.cancel(); // fired already: no event
    });
    let seen = seen(&capture);
    let got: Vec<_> = seen
        .iter()
        .map(|e| {
            let what = e.field("event").or(e.field("phase"));
            (e.target.as_str(), e.level, e.message(), what)
        })
        .collect();
    let gate = "baton::gate";
    assert_eq!(
        got,
        [
            (gate, Level::DEBUG, Some("transition"), Some("Reserve")),
            (gate, Level::DEBUG, Some("transition"), Some("Preflight")),
            (
                "baton::cancel",
                Level::DEBUG,
                Some("fired"),
                Some("inference")
            ),
            (gate, Level::TRACE, Some("refused"), Some("Commit")),
            (gate, Level::DEBUG, Some("transition"), Some("Cancel")),
            (gate, Level::DEBUG, Some("transition"), Some("Close")),
        ]
    );
    let commit = &seen[3];
    assert_eq!(
        (
            commit.field("refused"),
            commit.field("before"),
            commit.field("ticket")
        ),
        (Some("Canceled"), Some("Held"), Some("0"))
    );
    assert_eq!(
        transitions(&seen),
        [
            ("Reserve", "Running", "Requested", Some("0")),
            ("Preflight", "Requested", "Held", Some("0")),
            ("Cancel", "Held", "Running", Some("0")),
            ("Close", "Running", "Closed", None),
        ]
    );
}

/// L1 and the lock rule: no event, span or span record is emitted while
/// the gate's lock is held. The subscriber takes the gate's lock from
/// another thread in every callback; under the lock that thread would
/// wait for the callback, and the probe reports it.
#[test]
fn l1_no_event_is_emitted_while_the_gates_lock_is_held() {
    let gate = gate();
    let (capture, probe) = Capture::probed(gate.requester());
    let ((), capture) = with_capture(capture, async {
        let requester = gate.requester();
        let cancel = CancelSignal::new();
        // A release by a dropped reservation, and busy refusals both ways.
        drop(requester.reserve(intent()).expect("reserved"));
        let reservation = requester.reserve(intent()).expect("reserved");
        assert!(requester.reserve(intent()).is_err());
        let mut boundary = pin!(gate.boundary(&cancel, prepared));
        assert!(poll_once(boundary.as_mut()).is_pending(), "held");
        let held = within(HELD, reservation.ready()).await.expect("held");
        assert!(requester.reserve(intent()).is_err());
        // A refused commit, its release, and a cancel signal's fire.
        cancel.cancel();
        assert!(held.commit().is_err());
        assert!(within(COMMITTED, boundary).await.expect("open").is_none());
        // A full handoff, then a close after the seal (ignored).
        let cancel = CancelSignal::new();
        let reservation = requester.reserve(intent()).expect("reserved");
        let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
        assert!(gate.sealed(&paused.expect("committed")));
        within(SEALED, pending.wait()).await.expect("sealed");
        gate.close();
    });
    let violations = probe.violations.lock().unwrap().clone();
    assert!(violations.is_empty(), "{violations:#?}");
    assert!(
        probe.checks.load(Ordering::SeqCst) >= 15,
        "the probe ran at every callback"
    );
    assert!(seen(&capture).len() >= 12);
}

/// R7: a fenced worker's append is refused, and its `append` span records
/// `fenced` and no seal; the gate's close is a transition inside it.
#[test]
fn r7_a_fenced_append_records_fenced_on_its_span() {
    let ((), capture) = with_capture(Capture::default(), async {
        let log = MemoryLog::new();
        let Ok(Claim::Owner(first)) = log.claim("run", "run") else {
            panic!("claimed")
        };
        let Ok(Claim::Owner(_second)) = log.claim("run", "run") else {
            panic!("taken over")
        };
        let gate = gate();
        let cancel = CancelSignal::new();
        let reservation = gate.requester().reserve(intent()).expect("reserved");
        let (paused, _pending) = commit_at_boundary(&gate, &cancel, reservation).await;
        let paused = paused.expect("committed");
        let fenced = append_then_seal(&gate, &log, first, &paused);
        assert!(
            matches!(fenced, Err(SealError::Fenced { .. })),
            "{fenced:?}"
        );
    });
    let span = span_named(&capture, "append").expect("an append span");
    let get = |name: &str| span.get(name).map(String::as_str);
    assert_eq!(
        (
            get("outcome"),
            get("sealed"),
            get("epoch"),
            get("root_run_id"),
            get("run_id")
        ),
        (
            Some("fenced"),
            Some("false"),
            Some("1"),
            Some("run"),
            Some("run")
        )
    );
    let seen = seen(&capture);
    let close = seen
        .iter()
        .find(|e| e.transition() == Some(("Close", "Committed", "Closed", Some("0"))))
        .expect("the close is a transition");
    assert_eq!(
        close.span.as_ref().map(|(name, _)| name.as_str()),
        Some("append")
    );
}

/// R2: the async append under the current epoch records `written` and the
/// seal on its span, and the seal's transition happens inside it.
#[test]
fn r2_an_acknowledged_async_append_records_written_and_sealed() {
    let ((), capture) = with_capture(Capture::default(), async {
        let log = MemoryLog::new();
        let Ok(Claim::Owner(epoch)) = log.claim("run", "run") else {
            panic!("claimed")
        };
        let gate = gate();
        let cancel = CancelSignal::new();
        let reservation = gate.requester().reserve(intent()).expect("reserved");
        let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
        let paused = paused.expect("committed");
        let receipt = append_then_seal_async(&gate, &log, epoch, &paused).await;
        assert_eq!(receipt.expect("written"), Receipt::Written);
        within(SEALED, pending.wait()).await.expect("sealed");
    });
    let span = span_named(&capture, "append").expect("an append span");
    assert_eq!(span.get("outcome").map(String::as_str), Some("written"));
    assert_eq!(span.get("sealed").map(String::as_str), Some("true"));
    let seen = seen(&capture);
    let seal = seen
        .iter()
        .find(|e| e.transition() == Some(("Seal", "Committed", "Sealed", Some("0"))))
        .expect("the seal is a transition");
    assert_eq!(
        seal.span.as_ref().map(|(name, _)| name.as_str()),
        Some("append")
    );
}

/// S1: a subscriber that panics on a reserve's transition (emitted after
/// the lock, once the reservation's handle exists) leaves no reservation
/// behind: the handle drops in the unwinding and releases the Run, so the
/// next reserve is not `Busy` forever.
#[test]
fn s1_a_subscriber_panicking_on_a_reserve_leaves_the_run_released() {
    let gate = gate();
    let capture = Capture {
        panic_on: Some("Reserve"),
        ..Capture::default()
    };
    let (panicked, capture) = with_capture(capture, async {
        let requester = gate.requester();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| requester.reserve(intent())))
            .is_err()
    });
    assert!(panicked, "the subscriber's panic reaches the caller");
    assert_eq!(gate.requester().state().kind(), StateKind::Running);
    let seen = seen(&capture);
    assert_eq!(
        transitions(&seen),
        [("Cancel", "Requested", "Running", Some("0"))],
        "the Reserve transition panicked, the handle's drop released"
    );
}

/// A child that records its end.
struct Ending(Arc<std::sync::atomic::AtomicBool>);

impl baton::ledger::Child for Ending {
    fn begin_ending(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    fn is_being_ended(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The ledger's events (target `baton::ledger`), none under its lock (the
/// probe takes it from another thread at every callback): a scope, two
/// registrations and a refused one, an adoption, a delivery (D1) and a
/// refused duplicate, the overdue take with one `overdue` event per
/// delegation taken and its child's end (D3), the arrived take, the scope's
/// end.
#[test]
fn d3_the_ledger_traces_overdue_takes_and_ended_children_outside_its_lock() {
    use baton::ledger::{Arrival, Delegation, Delegations};
    use std::time::Instant;

    let ledger = Delegations::new();
    let probed = ledger.clone();
    let (capture, probe) = Capture::probing(move || {
        let _ = probed.counts();
    });
    let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let start = Instant::now();
    let ((), capture) = with_capture(capture, async {
        let delegation = |capsule: &str| Delegation {
            task_id: "tsk_a".into(),
            capsule: capsule.into(),
            version: "1.0.0".into(),
            child_session_id: "ses_1".into(),
            child_workdir: "/tmp/1".into(),
            started: start,
        };
        let scope = ledger.scope_task("tsk_a").expect("a valid task");
        ledger.register("dlg_a", delegation("researcher")).unwrap();
        ledger.register("dlg_b", delegation("writer")).unwrap();
        assert!(ledger.register("dlg_a", delegation("again")).is_err());
        ledger.adopt("dlg_b", Box::new(Ending(Arc::clone(&ended))));
        assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
        assert_eq!(ledger.arrive("dlg_a"), Arrival::AlreadyDelivered);
        let overdue = ledger.take_overdue(Duration::from_secs(1), start + Duration::from_secs(5));
        assert_eq!(overdue.len(), 1, "dlg_b is overdue");
        drop(overdue);
        assert_eq!(ledger.take_arrived().len(), 1);
        drop(scope);
    });
    assert!(
        ended.load(Ordering::SeqCst),
        "D3: the overdue child was ended"
    );
    let violations = probe.violations.lock().unwrap().clone();
    assert!(violations.is_empty(), "{violations:#?}");
    let ledger_events: Vec<_> = seen(&capture)
        .into_iter()
        .filter(|seen| seen.target == "baton::ledger")
        .collect();
    let named: Vec<(&str, Level)> = ledger_events
        .iter()
        .map(|seen| (seen.message().unwrap_or("?"), seen.level))
        .collect();
    assert_eq!(
        named,
        [
            ("scoped", Level::DEBUG),
            ("registered", Level::DEBUG),
            ("registered", Level::DEBUG),
            ("refused", Level::TRACE),
            ("adopted", Level::DEBUG),
            ("delivered", Level::DEBUG),
            ("refused", Level::TRACE),
            ("taken", Level::DEBUG),
            ("overdue", Level::DEBUG),
            ("child_ended", Level::DEBUG),
            ("taken", Level::DEBUG),
            ("scope_ended", Level::DEBUG),
        ]
    );
    let overdue = &ledger_events[8];
    assert_eq!(overdue.field("id"), Some("dlg_b"));
    assert_eq!(overdue.field("task"), Some("tsk_a"));
    assert_eq!(overdue.field("waited_ms"), Some("5000"));
    assert_eq!(ledger_events[7].field("how"), Some("overdue"));
    assert_eq!(ledger_events[9].field("why"), Some("taken"));
    assert_eq!(ledger_events[6].field("arrival"), Some("already_delivered"));
    assert_eq!(ledger_events[3].field("op"), Some("register"));
    assert!(probe.checks.load(Ordering::SeqCst) >= 12);
}

/// The PostgreSQL store's events (issue 34), target `baton::postgres`:
/// its connections (the first, and the one after a loss), the migration
/// steps, a retry and why — here by construction: the log's claim waits
/// for a Run's row lock another session holds, and the server ends the
/// log's connection under it, before the commit — and an unknown outcome
/// (the proxy loses the reply to an append's one-statement write).
#[cfg(all(unix, feature = "postgres"))]
#[test]
fn the_postgres_store_traces_connections_migrations_retries_and_unknown_outcomes() {
    use baton::durable::tokio_postgres::NoTls;
    use baton::durable::{AsyncHandoffLog, Epoch, LogError, PostgresLog, PostgresOptions};
    use common::postgres::Cluster;
    use common::proxy::Proxy;

    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ((), capture) = with_capture(Capture::default(), async {
        let dbname = cluster.database().await;
        let url = cluster.url(&dbname);
        let open = async |url: &str| -> PostgresLog<HandoffExecution> {
            let options = PostgresOptions::new().migrate(true);
            within(
                "R5",
                PostgresLog::connect_with(url.parse().unwrap(), NoTls, options),
            )
            .await
            .expect("connect")
        };
        let log = open(&url).await;
        assert_eq!(
            within("R5", log.claim_async("run", "held")).await.unwrap(),
            Claim::Owner(Epoch::new(1))
        );
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute("BEGIN; SELECT 1 FROM baton_run WHERE run_id = 'held' FOR UPDATE")
            .await
            .unwrap();
        let mut claim = pin!(log.claim_async("run", "held"));
        // Polled until it waits for the lock on the server.
        let waiting = tokio::time::timeout(Duration::from_millis(300), claim.as_mut()).await;
        assert!(waiting.is_err(), "the claim waits for the row lock");
        let ended = common::within("R5", Cluster::end_sessions(&admin, &dbname)).await;
        assert!(ended >= 1, "the log's connection under the claim");
        let released = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            admin.batch_execute("COMMIT").await.unwrap();
        };
        let (claimed, ()) = within("R5", async { tokio::join!(claim, released) }).await;
        assert_eq!(claimed.unwrap(), Claim::Owner(Epoch::new(2)));

        let proxy = Proxy::start(cluster.port());
        let via = cluster.url_via(proxy.port(), &dbname);
        let cut = open(&via).await;
        let mut source = source();
        source.run_id = "lost".into();
        let Ok(Claim::Owner(epoch)) = within("R5", cut.claim_async("run", "lost")).await else {
            panic!("a fresh Run is open");
        };
        proxy.lose_next_commit_reply();
        let pause = pause_for(intent());
        let appended = within("R5", cut.append_async("run", &source, epoch, &pause)).await;
        assert!(
            matches!(appended, Err(LogError::OutcomeUnknown(_))),
            "{appended:?}"
        );
    });
    let seen: Vec<Seen> = seen(&capture)
        .into_iter()
        .filter(|e| e.target == "baton::postgres")
        .collect();
    let messages: Vec<_> = seen.iter().filter_map(Seen::message).collect();
    assert!(
        messages.iter().filter(|m| **m == "connected").count() >= 3,
        "{messages:?}"
    );
    let migrated: Vec<_> = seen
        .iter()
        .filter(|e| e.message() == Some("migrating"))
        .map(|e| e.field("version"))
        .collect();
    assert_eq!(
        migrated,
        [Some("1"), Some("2"), Some("3"), Some("4"), Some("5")],
        "{seen:?}"
    );
    let retry = seen
        .iter()
        .find(|e| e.message() == Some("retry"))
        .expect("a retry");
    assert_eq!(
        (
            retry.level,
            retry.field("op"),
            retry.field("run_id"),
            retry.field("why")
        ),
        (
            Level::DEBUG,
            Some("claim"),
            Some("held"),
            Some("connection lost before the commit")
        )
    );
    let unknown = seen
        .iter()
        .find(|e| e.message() == Some("outcome unknown"))
        .expect("an unknown outcome");
    assert_eq!(
        (unknown.level, unknown.field("op"), unknown.field("run_id")),
        (Level::WARN, Some("append"), Some("lost"))
    );
}
