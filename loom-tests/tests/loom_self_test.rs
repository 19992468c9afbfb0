#![cfg(loom)]
#![cfg(not(baton_loom_broken))]
//! The suite catches the bugs it is for (SPEC §5): rebuilt with
//! `--cfg baton_loom_broken`, the library's waiter cell checks its query,
//! unlocks, then registers (a lost wake-up), and its `Release` guard checks
//! the ticket under one lock and releases under a second (a stale handle
//! releases a newer reservation), and the ledger's `DelegationScope` drop
//! checks its token under one lock and ends the current scope under a second
//! (an older scope's drop ends a newer one). The suite's own models must then
//! fail.
//!
//! Loom aborts the process on a deadlock (loom issue #291), which
//! `#[should_panic]` cannot catch, so each broken model runs in a child
//! `cargo test` and the parent asserts its exit and failure text. The first
//! child builds the broken library once (its artifacts are kept beside the
//! normal ones: different flags, different hashes).

use std::io::Write;
use std::process::Command;

/// Runs `test` of `target` (a `tests/loom_*.rs` file) against the broken
/// library; returns its stdout and stderr. Asserts it failed, after running.
fn run_broken(target: &str, test: &str) -> String {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let output = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["test", "-p", "loom-tests", "--release", "--test", target])
        .args(["--", "--exact", test, "--nocapture", "--test-threads=1"])
        // Highest precedence of cargo's flag sources, so an outer
        // `RUSTFLAGS` or `--config build.rustflags` cannot mask it.
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            "--cfg\x1floom\x1f--cfg\x1fbaton_loom_broken",
        )
        .env_remove("RUSTFLAGS")
        .env_remove("LOOM_MAX_PREEMPTIONS")
        .env_remove("LOOM_CHECKPOINT_FILE")
        .output()
        .expect("cargo runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains("running 1 test"),
        "the broken model did not run:\n{text}"
    );
    assert!(
        !output.status.success(),
        "the broken model passed: the suite misses the bug\n{text}"
    );
    text
}

/// Prints the lines of `text` that hold `needle` (the evidence), past the
/// harness's capture, and returns whether there were any.
fn evidence(name: &str, text: &str, needle: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|line| line.contains(needle)).collect();
    let report = format!("self-test {name}: {}\n", lines.join(" | "));
    let _ = std::io::stderr().write_all(report.as_bytes());
    !lines.is_empty()
}

/// L1: with registration after unlocking, a `canceled()` waiter racing
/// `cancel()` misses its wake-up, and loom reports the deadlock.
#[test]
fn the_suite_catches_a_waiter_cell_that_registers_after_unlocking() {
    let text = run_broken(
        "loom_cancel",
        "a_canceled_waiter_racing_cancel_always_resolves",
    );
    assert!(
        evidence("lost wake-up", &text, "deadlock; threads = "),
        "no deadlock reported:\n{text}"
    );
}

/// S2: with the ticket checked under one lock and acted on under a second,
/// a stale reservation's drop releases the newer one, and the model's S2
/// assertion fails.
#[test]
fn the_suite_catches_a_release_that_checks_and_acts_under_two_locks() {
    let text = run_broken(
        "loom_gate_races",
        "a_stale_release_never_releases_a_newer_reservation",
    );
    assert!(
        evidence("stale release", &text, "S2: "),
        "no S2 failure reported:\n{text}"
    );
}

/// D6: with registration after unlocking, a ledger's `wait_for_arrival`
/// racing an arrival misses its wake-up, and loom reports the deadlock.
#[test]
fn the_suite_catches_a_ledger_wait_that_misses_its_wake_up() {
    let text = run_broken(
        "loom_ledger_wakeups",
        "a_wait_racing_an_arrival_always_resolves",
    );
    assert!(
        evidence("ledger lost wake-up", &text, "deadlock; threads = "),
        "no deadlock reported:\n{text}"
    );
}

/// Scope identity: with the token checked under one lock and the scope
/// ended under a second, a scope's drop racing the next `scope_task` ends
/// the newer scope, and the model's assertion fails.
#[test]
fn the_suite_catches_a_scope_drop_that_checks_and_acts_under_two_locks() {
    let text = run_broken(
        "loom_ledger",
        "a_scope_drop_racing_the_next_scope_ends_the_old_children_once_and_spares_the_new",
    );
    assert!(
        evidence("stale scope drop", &text, "newer scope"),
        "no scope-identity failure reported:\n{text}"
    );
}
