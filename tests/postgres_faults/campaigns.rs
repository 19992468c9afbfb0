//! The campaigns (see the crate's docs): the real one, the failovers of
//! issue 49, and the controls the checker must catch, each a test.

use super::managers::Manager;
use super::{Control, Failover, KINDS, Servers, campaign, campaign_on, campaign_over, env};
use crate::common::patroni::Synchronous;

/// R1–R10, no acknowledged write lost, and R5 once the faults stop, over a
/// campaign of partitions, pauses, kills, server crashes and lost replies,
/// with finishes and retention running during the faults.
#[test]
fn r1_to_r10_hold_under_partitions_pauses_kills_server_crashes_lost_replies_and_retention() {
    let seconds = env("BATON_FAULT_SECONDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let Some(figures) = campaign("fenced", Control::None, seconds) else {
        return;
    };
    figures.assert_read_whole_and_checked_twice();
    let injected = figures.faults.len() - 1; // less "happened"
    if seconds >= 60 {
        assert_eq!(
            injected, KINDS as usize,
            "every kind of fault: {:?}",
            figures.faults
        );
    }
    // The campaign did what it is for: workers handed Runs off while the
    // faults went on, and zombies were really fenced.
    assert!(
        figures.worker_handoffs as u64 >= seconds,
        "too few handoffs by workers ({}): {:?}",
        figures.worker_handoffs,
        figures.outcomes
    );
    assert!(
        figures.outcomes.contains_key("append refused (fenced)"),
        "no zombie was fenced: {:?}",
        figures.outcomes
    );
    // ... and Runs finished, successors were claimed, and roots were
    // retired during the faults.
    for kind in [
        "finish ok",
        "claim ok (owner, successor)",
        "retire ok",
        "retire ok (by a sweep)",
        "sweep ok",
        "claim ok (retired)",
    ] {
        assert!(
            figures.outcomes.contains_key(kind),
            "no {kind}: {:?}",
            figures.outcomes
        );
    }
    // Group commit ran under the faults: batches of several writes.
    let [batches, writes, ..] = figures.grouped;
    assert!(
        batches > 0 && writes > batches,
        "the workers' group commit sent {batches} batches of {writes} writes"
    );
    // The sweeps' cursor walk went round at least once.
    assert!(
        figures.passes > 0,
        "no sweep pass completed ({} batches)",
        figures.sweeps
    );
    assert_eq!(
        figures.anomalies,
        Vec::<String>::new(),
        "the checker found anomalies"
    );
}

/// Issue 49: the same campaign on a primary with a synchronous standby,
/// failed over halfway (the primary's postmaster SIGKILLed, the standby
/// promoted, the processes' addresses moved to it), the other faults
/// going on before and after. A synchronous standby holds every
/// acknowledged commit, so the checker must find nothing: no
/// acknowledged write lost, no epoch answered twice, every Run decided
/// (`BATON_FAULT_FAILOVER_SECONDS`, default 30 s of faults).
#[test]
fn r1_to_r10_and_g1_to_g5_hold_across_a_failover_to_a_synchronous_standby() {
    let seconds = env("BATON_FAULT_FAILOVER_SECONDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let Some(figures) = campaign_on("failover", Control::None, seconds, Failover::Synchronous)
    else {
        return;
    };
    figures.assert_read_whole_and_checked_twice();
    assert_eq!(
        figures
            .faults
            .get("failover (SIGKILL primary, promote its standby)"),
        Some(&1),
        "{:?}",
        figures.faults
    );
    for kind in ["finish ok", "claim ok (owner, successor)"] {
        assert!(
            figures.outcomes.contains_key(kind),
            "no {kind}: {:?}",
            figures.outcomes
        );
    }
    assert_eq!(
        figures.anomalies,
        Vec::<String>::new(),
        "the checker found anomalies across the failover"
    );
}

/// Issue 49: the failover campaign on an asynchronous standby that stops
/// receiving a quarter of the way in and is promoted halfway: what the
/// primary acknowledged in between is lost, and the checker must say so
/// by name — while the fence holds: no epoch is answered twice (every
/// claim on the promoted server answers above its timeline's floor), so
/// no anomaly is "R6 / G4".
#[test]
fn an_asynchronous_failover_loses_acknowledged_writes_by_name_and_never_answers_an_epoch_twice() {
    let seconds = env("BATON_FAULT_FAILOVER_SECONDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let failover = Failover::AsynchronousBehind;
    let Some(figures) = campaign_on("asynchronous failover", Control::None, seconds, failover)
    else {
        return;
    };
    figures.assert_read_whole_and_checked_twice();
    assert!(
        !figures.flagged.is_empty(),
        "no root is flagged by both checkers"
    );
    let lost: Vec<&String> = figures
        .anomalies
        .iter()
        .filter(|a| a.contains("lost"))
        .collect();
    assert!(
        !lost.is_empty(),
        "writes were acknowledged while the standby was behind, and none was reported lost: {:?}",
        figures.anomalies
    );
    let twice: Vec<&String> = figures
        .anomalies
        .iter()
        .filter(|a| a.starts_with("R6 / G4"))
        .collect();
    assert!(twice.is_empty(), "G4: an epoch answered twice: {twice:?}");
}

/// The checker can fail G4 across a failover: the asynchronous failover
/// campaign with epochs as before issue 49 (every claim's floor 0, the
/// server's timeline hidden from the log's sessions): a claim on the
/// promoted server answers an epoch the lost primary had already
/// answered, and the checker reports it as "R6 / G4".
#[test]
fn the_checker_catches_epochs_that_restart_from_the_surviving_row_after_a_failover() {
    let seconds = env("BATON_FAULT_FAILOVER_SECONDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let failover = Failover::AsynchronousBehind;
    let Some(figures) = campaign_on("no floor", Control::NoFloor, seconds, failover) else {
        return;
    };
    figures.assert_read_whole_and_checked_twice();
    assert!(
        !figures.flagged.is_empty(),
        "no root is flagged by both checkers"
    );
    assert!(
        figures.anomalies.iter().any(|a| a.starts_with("R6 / G4")),
        "epochs restart after the failover, and the checker saw no epoch answered twice: {:?}",
        figures.anomalies
    );
}

/// How long the controls' faults go on (`BATON_FAULT_CONTROL_SECONDS`,
/// default 20 s; `scripts/campaign-sweep` shortens them).
fn control_seconds() -> u64 {
    env("BATON_FAULT_CONTROL_SECONDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

/// The checker can fail: with fencing disabled (the workers' test-only
/// switch), zombies' appends land, and the checker reports it.
#[test]
fn the_checker_catches_a_store_with_fencing_disabled() {
    let Some(figures) = campaign("unfenced", Control::Unfenced, control_seconds()) else {
        return;
    };
    figures.assert_read_whole_and_checked_twice();
    assert!(
        !figures.flagged.is_empty(),
        "no root is flagged by both checkers"
    );
    assert!(
        figures
            .anomalies
            .iter()
            .any(|a| a.starts_with("R6 / R7") || a.starts_with("R1")),
        "fencing disabled, and the checker saw nothing: {:?}",
        figures.anomalies
    );
}

/// The checker can fail G1 and G5: with retention broken the old way (a
/// root retired by SQL once every Run the log holds is final, while the
/// successor a durable pause names is unclaimed), the successor's claim is
/// refused and the root's work had not ended, and the checker reports it.
#[test]
fn the_checker_catches_retention_that_strands_a_successor() {
    let seconds = control_seconds();
    let Some(figures) = campaign("broken retention", Control::BrokenRetention, seconds) else {
        return;
    };
    figures.assert_read_whole_and_checked_twice();
    assert!(
        !figures.flagged.is_empty(),
        "no root is flagged by both checkers"
    );
    for id in ["G1", "G5"] {
        assert!(
            figures.anomalies.iter().any(|a| a.starts_with(id)),
            "retention broken, and the checker saw no {id}: {:?}",
            figures.anomalies
        );
    }
}

/// Issue 57: the campaign on Citus — a coordinator and two workers, the
/// tables distributed by root Run, every process's log on the
/// coordinator — with each crash hitting a node drawn from the three, the
/// other faults as everywhere. Both checkers must find nothing
/// (`BATON_FAULT_CITUS_SECONDS`, default 30 s of faults).
#[test]
fn r1_to_r10_and_g1_to_g5_hold_on_citus_under_node_crashes_partitions_pauses_kills_and_lost_replies()
 {
    let seconds = env("BATON_FAULT_CITUS_SECONDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let Some(figures) = campaign_over("citus", Control::None, seconds, Servers::Citus) else {
        return;
    };
    figures.assert_read_whole_and_checked_twice();
    assert!(
        figures.faults.keys().any(|kind| kind.contains("crash")),
        "no node crashed: {:?}",
        figures.faults
    );
    for kind in ["finish ok", "claim ok (owner, successor)"] {
        assert!(
            figures.outcomes.contains_key(kind),
            "no {kind}: {:?}",
            figures.outcomes
        );
    }
    assert_eq!(
        figures.anomalies,
        Vec::<String>::new(),
        "the checker found anomalies on Citus"
    );
}

/// The checkers can fail on Citus: the same campaign with Citus's catalog
/// hidden from the log's sessions, so the log sends one server's
/// statements to distributed tables (what the issue found: a Run's first
/// claim pulled to the coordinator, several claimants each told epoch 1).
#[test]
fn the_checker_catches_a_log_that_takes_distributed_tables_for_one_servers() {
    let Some(figures) = campaign_over("citus unseen", Control::NoCitus, 20, Servers::Citus) else {
        return;
    };
    figures.assert_read_whole_and_checked_twice();
    assert!(
        !figures.flagged.is_empty(),
        "no root is flagged by both checkers"
    );
    assert!(
        figures.anomalies.iter().any(|a| a.starts_with("R6")),
        "one server's statements on distributed tables, and the checker saw no epoch answered \
         twice: {:?}",
        figures.anomalies
    );
}

/// A campaign of `seconds` (`BATON_FAULT_MANAGER_SECONDS`, default 30)
/// under `manager`, which fails over by itself at least once; both
/// checkers find nothing.
fn under_a_manager(name: &str, manager: Manager) {
    let seconds = env("BATON_FAULT_MANAGER_SECONDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let servers = Servers::Managed(manager);
    let Some(figures) = campaign_over(name, Control::None, seconds, servers) else {
        return;
    };
    figures.assert_read_whole_and_checked_twice();
    assert!(
        figures
            .manager
            .iter()
            .any(|(_, failed_over, _)| *failed_over),
        "{name} never failed over: {:?}",
        figures.manager
    );
    // A timeline the manager abandoned loses everything acknowledged on
    // it: said in one line, before the checkers' anomalies (one per write).
    assert!(
        figures.abandoned.is_empty(),
        "{} (the checkers found {} anomalies, printed above)",
        figures.abandoned.join("; "),
        figures.anomalies.len()
    );
    assert_eq!(
        figures.anomalies,
        Vec::<String>::new(),
        "the checkers found anomalies across {name}'s failovers"
    );
}

/// Patroni fails over by itself (issue 58): three members in
/// `synchronous_mode`, every worker's log requiring a synchronous standby,
/// the manager's faults drawn among the others (`managers.rs`). Both
/// checkers find nothing: no acknowledged write lost, no epoch answered
/// twice, across every failover Patroni makes.
#[test]
fn g1_to_g5_hold_across_the_failovers_patroni_makes_by_itself() {
    under_a_manager("patroni", Manager::Patroni(Synchronous::Mode));
}

/// pg_auto_failover fails over by itself (issue 58): a monitor and two
/// nodes, the secondary in the primary's quorum, every worker's log
/// requiring a synchronous standby, the manager's faults drawn among the
/// others (`managers.rs`). Both checkers find nothing.
#[test]
fn g1_to_g5_hold_across_the_failovers_pg_auto_failover_makes_by_itself() {
    under_a_manager("pg_auto_failover", Manager::AutoFailover);
}
