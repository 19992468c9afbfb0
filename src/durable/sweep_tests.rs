//! The sweep's rule, case by case (SPEC §6.1, G5), and its batching.

use std::time::{Duration, SystemTime};

use super::*;
use crate::durable::contract::{Appended, Finished};
use crate::durable::fence::Fate;
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
    for (root, step) in [
        ("a", SweepStep::Retire { runs: 2 }),
        ("b", SweepStep::Keep),
        ("c", SweepStep::Gone),
        ("d", SweepStep::Retire { runs: 1 }),
    ] {
        sweep.count(root, step);
    }
    assert_eq!((sweep.retired, sweep.runs, sweep.kept), (2, 3, 1));
    assert_eq!(sweep.roots, ["a", "d"], "the retired roots, in order");
}

mod agrees_with_retire {
    use proptest::prelude::*;

    use super::*;
    use crate::durable::contract::Retirement;
    use crate::durable::fence::retire_step;
    use crate::facts::HandoffPause;

    const NAMES: [&str; 4] = ["a", "b", "c", "d"];

    /// A Run of the root: its name, and its fate (0 open, 1 finished, 2
    /// handed off to the Run named by the second number).
    fn runs() -> impl Strategy<Value = Vec<(usize, u8, usize)>> {
        proptest::collection::vec((0..NAMES.len(), 0..3u8, 0..NAMES.len()), 0..4)
    }

    proptest! {
        /// G5 by age is G5: for a root whose latest end is before the
        /// cut-off, a sweep retires exactly what `retire` retires (the same
        /// Runs), and keeps exactly what `retire` refuses as not ended; for
        /// a root that ended at or after the cut-off, or never ended, it
        /// keeps it. So every proof of `retire_step` (the model's, SPIN's)
        /// holds for the sweep.
        #[test]
        fn g5_a_sweep_decides_as_retire_for_a_root_that_ended_before_the_cut_off(
            picked in runs(),
            retired in any::<bool>(),
            late in any::<bool>(),
        ) {
            let done = Finished { source: source(), outcome: 7_u32 };
            let rows: Vec<Appended<u32>> = NAMES
                .iter()
                .map(|successor| {
                    let mut pause: HandoffPause<u32> = pause("h");
                    std::sync::Arc::make_mut(&mut pause.intent).successor_run_id =
                        (*successor).to_owned();
                    Appended { source: source(), pause }
                })
                .collect();
            let mut seen = Vec::new();
            let fates: Vec<(&str, Fate<'_, u32>)> = picked
                .iter()
                .filter(|(name, ..)| {
                    let fresh = !seen.contains(name);
                    seen.push(*name);
                    fresh
                })
                .map(|&(name, fate, successor)| {
                    let fate = match fate {
                        0 => Fate::Open,
                        1 => Fate::Finished(&done),
                        _ => Fate::HandedOff(&rows[successor]),
                    };
                    (NAMES[name], fate)
                })
                .collect();
            let ended = if late { at(10) } else { at(9) };
            let swept = sweep_step("root", retired, fates.clone(), Some(ended), at(10)).unwrap();
            let expected = match retire_step("root", retired, fates.clone()) {
                _ if retired => SweepStep::Gone,
                _ if late => SweepStep::Keep,
                Ok(Retirement::Retired { runs }) => SweepStep::Retire { runs },
                Ok(Retirement::AlreadyRetired) => SweepStep::Gone,
                Err(LogError::RunOpen { .. } | LogError::NothingToRetire { .. }) => SweepStep::Keep,
                Err(other) => panic!("retire_step refused {other:?}"),
            };
            prop_assert_eq!(swept, expected);
            let never = sweep_step("root", retired, fates, None, at(10)).unwrap();
            prop_assert_eq!(never, if retired { SweepStep::Gone } else { SweepStep::Keep });
        }
    }
}
