//! Pinned sizes of the fenced handoff's state space (SPEC §6: an owner,
//! its workers — zombies, wrong suspicions, lost replies, crashes — and
//! the log's real claim and append rules), every property passing on them,
//! and the broken rules caught with their shortest counterexamples. A
//! change in a count is a behaviour change of the rule or of the model:
//! explain it in the commit that changes the number.

use baton_model::explore::{Exploration, Verdict};
use baton_model::fence::props::{R1, R2, R3, R4, R5, R6, R7};
use baton_model::fence::report::{explore_all, self_test};
use baton_model::fence::{FAct, FSys, FenceModel, SELF_TEST, Setup};

fn check(workers: u8) -> Exploration<FSys, FAct> {
    explore_all(&FenceModel::new(Setup { workers }))
}

fn assert_every_property_passes(e: &Exploration<FSys, FAct>) {
    for (name, verdict) in &e.verdicts {
        assert!(verdict.passed(), "{name}: {verdict:?}");
    }
    for r in [R1, R2, R3, R4, R5, R6, R7] {
        assert_eq!(e.verdict(r), Some(&Verdict::Holds), "{r}");
    }
}

#[test]
fn one_worker_and_no_fault_has_exactly_5_states() {
    let e = check(1);
    assert_eq!((e.states, e.transitions, e.max_depth), (5, 4, 4));
    for r in [R1, R2, R3, R4, R5, R6, R7] {
        assert_eq!(e.verdict(r), Some(&Verdict::Holds), "{r}");
    }
}

#[test]
fn two_workers_one_takeover_have_exactly_33_states_and_r1_to_r7_hold() {
    let e = check(2);
    assert_eq!((e.states, e.transitions, e.max_depth), (33, 42, 7));
    assert_every_property_passes(&e);
}

#[test]
fn three_workers_two_takeovers_have_exactly_173_states_and_r1_to_r7_hold() {
    let e = check(3);
    assert_eq!((e.states, e.transitions, e.max_depth), (173, 336, 10));
    assert_every_property_passes(&e);
}

#[test]
fn four_workers_three_takeovers_have_exactly_873_states_and_r1_to_r7_hold() {
    let e = check(4);
    assert_eq!((e.states, e.transitions, e.max_depth), (873, 2_326, 13));
    assert_every_property_passes(&e);
}

/// The design before fencing and three broken rules, each caught by its
/// property with a shortest counterexample of pinned length.
#[test]
fn every_broken_rule_is_caught_with_its_shortest_counterexample() {
    let caught: Vec<_> = self_test(SELF_TEST)
        .into_iter()
        .map(|c| {
            let steps = c.trace.as_ref().map(|t| t.steps.len());
            (c.variant.name, c.variant.caught_by, steps, c.violated)
        })
        .collect();
    let expected = [
        ("k_owner_decides_by_reading", R1, vec![R1, R5, R6, R7]),
        ("l_append_ignores_the_epoch", R7, vec![R1, R6, R7]),
        ("m_claim_does_not_advance_the_epoch", R1, vec![R1]),
        ("n_claim_resumes_a_handed_off_run", R3, vec![R1, R3, R7]),
    ];
    assert_eq!(caught.len(), expected.len());
    for ((name, by, steps, violated), (want, want_by, want_violated)) in caught.iter().zip(expected)
    {
        assert_eq!((*name, *by), (want, want_by));
        assert_eq!(*steps, Some(4), "{name}: its shortest counterexample");
        assert_eq!(*violated, want_violated, "{name}");
    }
}
