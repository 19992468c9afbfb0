//! D3 with real OS processes: delegations adopt `sleep 30` children; when
//! the scope ends (or overdue ones are taken and dropped) every child that
//! had not arrived is killed and reaped — no process is left, checked by pid.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton::ledger::{Arrival, Child, Delegation, Delegations};

/// A launched `sleep 30`, as a runtime would wrap it.
struct Process {
    child: Mutex<std::process::Child>,
    pid: u32,
    ending: AtomicBool,
}

/// The ledger's handle on a [`Process`] the test keeps too.
struct Handle(Arc<Process>);

impl Child for Handle {
    fn begin_ending(&self) {
        self.0.ending.store(true, Ordering::SeqCst);
        let mut child = self.0.child.lock().unwrap();
        // SIGKILL, then reap: waiting for a killed process is bounded.
        let _ = child.kill();
        let _ = child.wait();
    }
    fn is_being_ended(&self) -> bool {
        self.0.ending.load(Ordering::SeqCst)
    }
}

fn spawn() -> Arc<Process> {
    let child = Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let pid = child.id();
    Arc::new(Process {
        child: Mutex::new(child),
        pid,
        ending: AtomicBool::new(false),
    })
}

/// Whether `pid` still names a process (running or zombie).
fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn delegation(started: Instant) -> Delegation {
    Delegation {
        task_id: "tsk_a".into(),
        capsule: "worker".into(),
        version: "0.1.0".into(),
        child_session_id: "ses_child".into(),
        child_workdir: "/tmp".into(),
        started,
    }
}

fn cleanup(process: &Process) {
    let mut child = process.child.lock().unwrap();
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn d3_a_scope_end_kills_and_reaps_every_child_process_that_had_not_arrived() {
    let ledger = Delegations::new();
    let scope = ledger.scope_task("tsk_a").unwrap();
    let processes: Vec<_> = (0..5).map(|_| spawn()).collect();
    for (n, process) in processes.iter().enumerate() {
        let id = format!("dlg_{n}");
        ledger.register(&id, delegation(Instant::now())).unwrap();
        ledger.adopt(&id, Box::new(Handle(Arc::clone(process))));
    }
    assert_eq!(ledger.arrive("dlg_4"), Arrival::Delivered);
    assert!(processes.iter().all(|p| exists(p.pid)));
    drop(scope);
    for process in &processes[..4] {
        assert!(!exists(process.pid), "pid {} was left behind", process.pid);
    }
    let arrived = &processes[4];
    assert!(
        exists(arrived.pid),
        "an arrived child is not the ledger's to end"
    );
    assert!(!arrived.ending.load(Ordering::SeqCst));
    cleanup(arrived);
    assert!(!exists(arrived.pid));
}

#[test]
fn d3_overdue_children_taken_by_take_overdue_are_killed_and_reaped_when_dropped() {
    let ledger = Delegations::new();
    let scope = ledger.scope_task("tsk_a").unwrap();
    let now = Instant::now();
    let old = now
        .checked_sub(Duration::from_secs(120))
        .expect("the clock runs for 2 minutes");
    let (overdue, fresh) = (spawn(), spawn());
    ledger.register("dlg_old", delegation(old)).unwrap();
    ledger.adopt("dlg_old", Box::new(Handle(Arc::clone(&overdue))));
    ledger.register("dlg_new", delegation(now)).unwrap();
    ledger.adopt("dlg_new", Box::new(Handle(Arc::clone(&fresh))));
    let taken = ledger.take_overdue(Duration::from_secs(60), now);
    assert_eq!(
        taken.iter().map(|t| t.id()).collect::<Vec<_>>(),
        ["dlg_old"]
    );
    assert!(exists(overdue.pid), "taken, not yet ended");
    drop(taken);
    assert!(!exists(overdue.pid), "pid {} was left behind", overdue.pid);
    assert!(exists(fresh.pid));
    assert_eq!(ledger.arrive("dlg_old"), Arrival::NotOutstanding);
    drop(scope);
    assert!(!exists(fresh.pid), "the scope's end took the fresh one too");
}
