//! The sweep's rule, case by case (SPEC §6.1, G5), and its batching.

use std::time::{Duration, SystemTime};

use super::*;
use crate::durable::fence::Fate;
use crate::durable::reconcile::{Appended, Finished};
use crate::durable::tests::{pause, source};

fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
}

#[test]
fn g5_a_sweep_retires_a_root_only_if_its_work_ended_before_the_cut_off() {
    let done = Finished {
        source: source(),
        outcome: 7_u32,
    };
    let handed = Appended {
        source: source(),
        pause: pause("h"),
    };
    let ended = [("run", Fate::Finished(&done))];
    assert_eq!(
        sweep_step("root", false, ended, Some(at(9)), at(10)).unwrap(),
        SweepStep::Retire { runs: 1 }
    );
    for late in [at(10), at(11)] {
        assert_eq!(
            sweep_step("root", false, ended, Some(late), at(10)).unwrap(),
            SweepStep::Keep,
            "ended at or after the cut-off"
        );
    }
    // `pause("h")` hands "run" off to "successor-run", not claimed yet.
    assert_eq!(
        sweep_step(
            "root",
            false,
            [("run", Fate::HandedOff(&handed))],
            Some(at(1)),
            at(10)
        )
        .unwrap(),
        SweepStep::Keep,
        "G1: the successor is not final"
    );
    assert_eq!(
        sweep_step(
            "root",
            false,
            [("a", Fate::Finished(&done)), ("b", Fate::Open)],
            Some(at(1)),
            at(10)
        )
        .unwrap(),
        SweepStep::Keep,
        "an open Run"
    );
    assert_eq!(
        sweep_step::<u32>("root", false, [], None, at(10)).unwrap(),
        SweepStep::Keep
    );
    assert_eq!(
        sweep_step::<u32>("root", true, [], None, at(10)).unwrap(),
        SweepStep::Gone
    );
}

#[test]
fn a_batch_looks_at_each_root_once_and_says_where_the_next_goes_on() {
    let pairs = vec![
        (at(1), "a".to_owned()),
        (at(2), "b".to_owned()),
        (at(3), "a".to_owned()),
    ];
    let (roots, next) = candidates(pairs.clone(), 3);
    assert_eq!(roots, ["a", "b"]);
    assert_eq!(
        next,
        Some(SweepCursor {
            ended_at: at(3),
            root_run_id: "a".into()
        })
    );
    let (roots, next) = candidates(pairs, 4);
    assert_eq!(
        (roots.len(), next),
        (2, None),
        "fewer than the limit: the end"
    );
    assert_eq!(candidates(Vec::new(), 0), (Vec::new(), None));
    let mut sweep = Sweep::default();
    for step in [
        SweepStep::Retire { runs: 2 },
        SweepStep::Keep,
        SweepStep::Gone,
        SweepStep::Retire { runs: 1 },
    ] {
        sweep.count(step);
    }
    assert_eq!((sweep.retired, sweep.runs, sweep.kept), (2, 3, 1));
}
