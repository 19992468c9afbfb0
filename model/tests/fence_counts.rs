//! Pinned sizes of the fenced handoff's state space (SPEC §6: an owner,
//! its workers — zombies, wrong suspicions, lost replies, crashes — and
//! the log's real claim and append rules; then with the third fate and
//! retention, the real finish and retire rules too), every property
//! passing on them, and the broken rules caught with their shortest
//! counterexamples. A change in a count is a behaviour change of the rule
//! or of the model: explain it in the commit that changes the number.

use baton_model::explore::{Exploration, Verdict};
use baton_model::fence::props::{R1, R2, R3, R4, R5, R6, R7, R8, R9, R10};
use baton_model::fence::report::{explore_all, self_test};
use baton_model::fence::{FAct, FSys, FenceModel, Setup};

const EVERY_RULE: [&str; 10] = [R1, R2, R3, R4, R5, R6, R7, R8, R9, R10];

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

/// One worker that may finish, and retention: no fault (no claim can
/// follow), so the worker hands off or finishes, and retention retires the
/// root before the claim, while the Run is open (refused), or once it is
/// final.
#[test]
fn one_worker_finish_and_retention_have_exactly_12_states() {
    let e = check_fates(1);
    assert_eq!((e.states, e.transitions, e.max_depth), (12, 15, 5));
    for r in EVERY_RULE {
        assert_eq!(e.verdict(r), Some(&Verdict::Holds), "{r}");
    }
}

#[test]
fn two_workers_finish_and_retention_have_exactly_90_states_and_r1_to_r10_hold() {
    let e = check_fates(2);
    assert_eq!((e.states, e.transitions, e.max_depth), (90, 165, 8));
    assert_every_property_passes(&e);
}

#[test]
fn three_workers_finish_and_retention_have_exactly_558_states_and_r1_to_r10_hold() {
    let e = check_fates(3);
    assert_eq!((e.states, e.transitions, e.max_depth), (558, 1_608, 11));
    assert_every_property_passes(&e);
}

#[test]
fn four_workers_finish_and_retention_have_exactly_3366_states_and_r1_to_r10_hold() {
    let e = check_fates(4);
    assert_eq!((e.states, e.transitions, e.max_depth), (3_366, 13_524, 14));
    assert_every_property_passes(&e);
}

/// The design before fencing and six broken rules (three of the handoff,
/// on 3 workers; three of the finish and retention, on 3 workers with
/// them), each caught by its property with a shortest counterexample of
/// pinned length.
#[test]
fn every_broken_rule_is_caught_with_its_shortest_counterexample() {
    let caught: Vec<_> = self_test()
        .into_iter()
        .map(|c| {
            let steps = c.trace.as_ref().map(|t| t.steps.len());
            (c.variant.name, c.variant.caught_by, steps, c.violated)
        })
        .collect();
    // R9 (no epoch issued twice) also sees k and m: both issue an epoch a
    // worker already holds.
    let expected = [
        (
            "k_owner_decides_by_reading",
            R1,
            4,
            vec![R1, R5, R6, R7, R9],
        ),
        ("l_append_ignores_the_epoch", R7, 4, vec![R1, R6, R7]),
        ("m_claim_does_not_advance_the_epoch", R1, 4, vec![R1, R9]),
        ("n_claim_resumes_a_handed_off_run", R3, 4, vec![R1, R3, R7]),
        // claim (epoch 1), commit, append, retire without a tombstone,
        // claim: epoch 1 again (R10 sees the missing tombstone at step 4).
        (
            "p_retention_deletes_and_reissues_epoch_1",
            R9,
            5,
            vec![R1, R2, R4, R5, R7, R8, R9, R10],
        ),
        // claim, a wrong suspicion's claim (epoch 2), the zombie ends its
        // Run, its finish under epoch 1 is written.
        ("q_finish_ignores_the_epoch", R8, 4, vec![R6, R7, R8]),
        // claim, retire: the open Run's rows go.
        ("r_retention_drops_an_open_run", R10, 2, vec![R10]),
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
