//! Pinned sizes of the fenced handoff's state space (SPEC §6: an owner,
//! its workers — zombies, wrong suspicions, lost replies, crashes — and
//! the log's real claim and append rules; then with the third fate,
//! retention and the successor a durable pause names, the real finish and
//! retire rules too), every property passing on them, and the broken
//! rules caught with their shortest counterexamples; then the same with a
//! failover to a synchronous standby (every promise holds, G2 with them)
//! and to an asynchronous one (the fence holds; exactly the promises SPEC
//! §6 says such a failover may break are seen broken). A change in a count
//! is a behaviour change of the rule or of the model: explain it in the
//! commit that changes the number.

use baton_model::explore::{Exploration, Options, Verdict, explore};
use baton_model::fence::failover::MAY_BREAK_ASYNCHRONOUSLY;
use baton_model::fence::props::{
    G1, G2, G3, G4, G5, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10, promises,
};
use baton_model::fence::report::{explore_all, self_test};
use baton_model::fence::{FAct, FSys, FenceModel, Replication, Setup};

/// R1–R10 and the promises every configuration checks (G3, G4).
const EVERY_RULE: [&str; 12] = [R1, R2, R3, R4, R5, R6, R7, R8, R9, R10, G3, G4];
/// ... and those of the successor and retention (G1, G5).
const WITH_THE_SUCCESSOR: [&str; 2] = [G1, G5];

fn check(workers: u8) -> Exploration<FSys, FAct> {
    explore_all(&FenceModel::new(Setup::handoff(workers)))
}

fn check_fates(workers: u8) -> Exploration<FSys, FAct> {
    explore_all(&FenceModel::new(Setup::fates(workers)))
}

fn assert_every_property_passes(e: &Exploration<FSys, FAct>) {
    for (name, verdict) in &e.verdicts {
        assert!(verdict.passed(), "{name}: {verdict:?}");
    }
    for r in EVERY_RULE {
        assert_eq!(e.verdict(r), Some(&Verdict::Holds), "{r}");
    }
}

fn assert_every_property_passes_with_the_successor(e: &Exploration<FSys, FAct>) {
    assert_every_property_passes(e);
    for g in WITH_THE_SUCCESSOR {
        assert_eq!(e.verdict(g), Some(&Verdict::Holds), "{g}");
    }
}

#[test]
fn one_worker_and_no_fault_has_exactly_5_states() {
    let e = check(1);
    assert_eq!((e.states, e.transitions, e.max_depth), (5, 4, 4));
    for r in EVERY_RULE {
        assert_eq!(e.verdict(r), Some(&Verdict::Holds), "{r}");
    }
}

#[test]
fn two_workers_one_takeover_have_exactly_33_states_and_r1_to_r10_hold() {
    let e = check(2);
    assert_eq!((e.states, e.transitions, e.max_depth), (33, 42, 7));
    assert_every_property_passes(&e);
}

#[test]
fn three_workers_two_takeovers_have_exactly_173_states_and_r1_to_r10_hold() {
    let e = check(3);
    assert_eq!((e.states, e.transitions, e.max_depth), (173, 336, 10));
    assert_every_property_passes(&e);
}

#[test]
fn four_workers_three_takeovers_have_exactly_873_states_and_r1_to_r10_hold() {
    let e = check(4);
    assert_eq!((e.states, e.transitions, e.max_depth), (873, 2_326, 13));
    assert_every_property_passes(&e);
}

/// One worker that may finish, the successor, and retention: no fault (no
/// claim can follow), so the worker hands off or finishes; retention is
/// refused before the claim (`NothingToRetire`), while the Run is open,
/// and after the handoff until the successor is claimed and finished
/// (`RunOpen`), and retires the root once its work ended.
#[test]
fn one_worker_finish_and_retention_have_exactly_14_states() {
    let e = check_fates(1);
    assert_eq!((e.states, e.transitions, e.max_depth), (14, 24, 7));
    for r in EVERY_RULE.into_iter().chain(WITH_THE_SUCCESSOR) {
        assert_eq!(e.verdict(r), Some(&Verdict::Holds), "{r}");
    }
}

#[test]
fn two_workers_finish_and_retention_have_exactly_130_states_and_r1_to_r10_g1_to_g5_hold() {
    let e = check_fates(2);
    assert_eq!((e.states, e.transitions, e.max_depth), (130, 289, 10));
    assert_every_property_passes_with_the_successor(&e);
}

#[test]
fn three_workers_finish_and_retention_have_exactly_826_states_and_r1_to_r10_g1_to_g5_hold() {
    let e = check_fates(3);
    assert_eq!((e.states, e.transitions, e.max_depth), (826, 2_700, 13));
    assert_every_property_passes_with_the_successor(&e);
}

#[test]
fn four_workers_finish_and_retention_have_exactly_5002_states_and_r1_to_r10_g1_to_g5_hold() {
    let e = check_fates(4);
    assert_eq!((e.states, e.transitions, e.max_depth), (5_002, 22_092, 16));
    assert_every_property_passes_with_the_successor(&e);
}

fn check_failover(workers: u8, replication: Replication) -> Exploration<FSys, FAct> {
    explore_all(&FenceModel::new(Setup::failover(workers, replication)))
}

/// A synchronous standby: a failover loses only writes nobody was told
/// of, so every promise holds across it, G2 (what was acknowledged
/// survives) with them.
#[test]
fn a_failover_to_a_synchronous_standby_keeps_every_promise_with_exactly_these_states() {
    for (workers, counts) in [
        (1, (28, 49, 8)),
        (2, (403, 944, 11)),
        (3, (3_325, 11_308, 14)),
        (4, (24_889, 112_780, 17)),
    ] {
        let e = check_failover(workers, Replication::Synchronous);
        assert_eq!(
            (e.states, e.transitions, e.max_depth),
            counts,
            "{workers} workers"
        );
        if workers > 1 {
            assert_every_property_passes_with_the_successor(&e);
            assert_eq!(e.verdict(G2), Some(&Verdict::Holds), "{workers} workers");
        }
    }
}

/// An asynchronous standby: the fence holds (no epoch answered twice, no
/// zombie write, a refusal writes nothing, retention never reopens it),
/// and each promise a failover may break is seen broken — on 3 and 4
/// workers every one of them, with its shortest counterexample.
#[test]
fn a_failover_to_an_asynchronous_standby_keeps_the_fence_with_exactly_these_states() {
    let holds = [R3, R6, R9, R10, G3, G4];
    for (workers, counts) in [
        (1, (64, 136, 8)),
        (2, (1_122, 3_051, 12)),
        (3, (11_000, 40_400, 15)),
        (4, (91_350, 440_616, 18)),
    ] {
        let e = check_failover(workers, Replication::Asynchronous);
        assert_eq!(
            (e.states, e.transitions, e.max_depth),
            counts,
            "{workers} workers"
        );
        if workers > 1 {
            for (name, verdict) in &e.verdicts {
                assert!(verdict.passed(), "{workers} workers, {name}: {verdict:?}");
            }
        }
        for p in holds {
            assert_eq!(
                e.verdict(p),
                Some(&Verdict::Holds),
                "{workers} workers: {p}"
            );
        }
    }
    for workers in [3, 4] {
        let model = FenceModel::new(Setup::failover(workers, Replication::Asynchronous));
        let e = explore(
            &model,
            &promises(&model.setup),
            Options {
                symmetry: false,
                liveness: true,
                time_limit: None,
            },
        );
        let broken: Vec<_> = e
            .verdicts
            .iter()
            .filter_map(|(name, v)| match v {
                Verdict::Violated(t) => Some((*name, t.steps.len())),
                _ => None,
            })
            .collect();
        // G2 in 4 steps: a claim, a commit, an acknowledged append, the
        // failover before the standby received it.
        let want = [
            (R1, 6),
            (R2, 5),
            (R4, 5),
            (R5, 5),
            (R7, 5),
            (R8, 6),
            (G1, 6),
            (G2, 4),
            (G5, 7),
        ];
        assert_eq!(broken, want, "{workers} workers");
        assert_eq!(
            want.map(|(name, _)| name),
            MAY_BREAK_ASYNCHRONOUSLY,
            "the promises an asynchronous failover breaks are those the report sets aside"
        );
    }
}

/// The design before fencing and eight broken rules (four of the
/// handoff, on 3 workers; four of the finish and retention, on 3 workers
/// with them and the successor), each caught by its property with a
/// shortest counterexample of pinned length.
#[test]
fn every_broken_rule_is_caught_with_its_shortest_counterexample() {
    let caught: Vec<_> = self_test()
        .into_iter()
        .map(|c| {
            let steps = c.trace.as_ref().map(|t| t.steps.len());
            (c.variant.name, c.variant.caught_by, steps, c.violated)
        })
        .collect();
    // R9 and G4 (no epoch issued twice) also see k and m: both issue an
    // epoch a worker already holds.
    let expected = [
        (
            "k_owner_decides_by_reading",
            R1,
            4,
            vec![R1, R5, R6, R7, R9, G4],
        ),
        ("l_append_ignores_the_epoch", R7, 4, vec![R1, R6, R7]),
        (
            "m_claim_does_not_advance_the_epoch",
            R1,
            4,
            vec![R1, R9, G4],
        ),
        ("n_claim_resumes_a_handed_off_run", R3, 4, vec![R1, R3, R7]),
        // claim, commit, append, a wrong suspicion's claim answers
        // HandedOff and writes epoch 2 (R7 once the worker seals).
        (
            "t_claim_of_a_final_run_writes_an_epoch",
            G3,
            4,
            vec![R7, G3],
        ),
        // claim (epoch 1), end, finish, retire without a tombstone,
        // claim: epoch 1 again (R10 sees the missing tombstone at step 4).
        (
            "p_retention_deletes_and_reissues_epoch_1",
            R9,
            5,
            vec![R1, R2, R4, R5, R7, R8, R9, R10, G4],
        ),
        // claim, a wrong suspicion's claim (epoch 2), the zombie ends its
        // Run, its finish under epoch 1 is written.
        ("q_finish_ignores_the_epoch", R8, 4, vec![R6, R7, R8]),
        // claim, retire: the open Run's rows go (G5 too; G1 once a
        // successor's claim answers Retired after its handoff's rows went).
        ("r_retention_drops_an_open_run", R10, 2, vec![R10, G1, G5]),
        // claim, commit, append (the successor named), retire (G5 broken
        // here, at step 4), the successor's claim answers Retired.
        ("s_retention_counts_a_handoff_as_ended", G1, 5, vec![G1, G5]),
        // claim (epoch 1, not yet on the asynchronous standby), the
        // failover, claim: epoch 1 again instead of 2^40 + 1.
        (
            "u_epochs_restart_from_the_surviving_row",
            G4,
            3,
            vec![R9, G4],
        ),
    ];
    assert_eq!(caught.len(), expected.len());
    for ((name, by, steps, violated), (want, want_by, want_steps, want_violated)) in
        caught.iter().zip(expected)
    {
        assert_eq!((*name, *by), (want, want_by));
        assert_eq!(
            *steps,
            Some(want_steps),
            "{name}: its shortest counterexample"
        );
        assert_eq!(*violated, want_violated, "{name}");
    }
}
