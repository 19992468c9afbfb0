#![cfg(loom)]
//! Fencing meets the gate (SPEC §6, R1, R2, R7 and L1): a committed worker
//! runs its last step (`append_then_seal` on a [`MemoryLog`]) while its
//! owner, suspecting it, claims the Run over, and the requester waits for
//! the seal. The log's lock and the gate's are loom's, so every order of
//! the append, the claim, the seal or close, and the requester's wake-up is
//! explored.
//!
//! Observers, so that a wrong order cannot pass: the owner's claim answer
//! (did it see the pause?), the worker's result (written or fenced), the
//! requester's `wait()` (a seal or none), and the log's facts afterwards.
//! Exactly two histories are correct: the append first (written, sealed,
//! the claim answers `HandedOff`) or the claim first (fenced, closed
//! without a seal, the claim issues epoch 2, nothing durable).

use std::sync::Arc;

use baton::durable::{Claim, Epoch, HandoffLog, MemoryLog, SealError, append_then_seal};
use baton::gate::core::StateKind;
use baton_testkit::loom::{Coverage, model};
use loom::future::block_on;
use loom::thread;
use loom_tests::fixtures::{Pause, ROOT_RUN, source};
use loom_tests::scene::{Pending, Scene, committed};

/// R1 / R2 / R7 / L1: a takeover racing the worker's append decides the Run
/// once: the requester sees a seal exactly when the append was written and
/// the owner's claim answers `HandedOff`; a fenced worker writes nothing
/// and its gate closes, so the waiting requester resolves `None`.
#[test]
fn a_takeover_racing_the_last_step_decides_the_run_once_and_wakes_the_requester() {
    model(
        "append_then_seal ∥ claim ∥ wait()",
        Coverage::Exhaustive,
        || {
            let (scene, gate, pending, pause) = committed();
            let log = Arc::new(MemoryLog::<u8>::new());
            let run = source().run_id;
            let Ok(Claim::Owner(epoch)) = log.claim(ROOT_RUN, &run) else {
                panic!("a fresh Run is claimed with epoch 1");
            };
            assert_eq!(epoch, Epoch::new(1));

            let requester = thread::spawn(block_on_wait(&scene, pending));
            let owner = {
                let log = Arc::clone(&log);
                let run = run.clone();
                thread::spawn(move || log.claim(ROOT_RUN, &run).expect("valid ids"))
            };
            let last_step = append_then_seal(&gate, log.as_ref(), epoch, &pause);
            let claimed = owner.join().unwrap();
            let sealed = requester.join().unwrap();

            let facts = log.facts(ROOT_RUN, &run).expect("valid ids");
            match last_step {
                Ok(_) => {
                    assert_eq!(
                        claimed,
                        Claim::HandedOff(pause.clone()),
                        "R1: a durable pause is never resumed"
                    );
                    assert_eq!(
                        sealed,
                        Some(pause),
                        "R2 / L1: the seal reaches the requester"
                    );
                    assert_eq!(
                        facts.epoch,
                        Epoch::new(1),
                        "R1: no epoch after a durable pause"
                    );
                    assert_eq!(facts.pauses.len(), 1, "R2: the sealed pause is durable");
                }
                Err(SealError::Fenced { epoch, current }) => {
                    assert_eq!((epoch, current), (Epoch::new(1), Epoch::new(2)));
                    assert_eq!(claimed, Claim::Owner(Epoch::new(2)), "R1");
                    assert_eq!(sealed, None, "R7 / L1: closed without a seal, and woken");
                    assert!(
                        facts.pauses.is_empty(),
                        "R7: a fenced worker writes nothing"
                    );
                    assert_eq!(gate.state().kind(), StateKind::Closed, "R7: fenced closes");
                }
                Err(other) => panic!("only written or fenced can happen here: {other}"),
            }
            assert_eq!(scene.requester().waiter_count(), 0, "no waker left behind");
        },
    );
}

/// The requester's `wait()` on its own thread.
fn block_on_wait(
    scene: &Arc<Scene>,
    pending: Pending,
) -> impl FnOnce() -> Option<Pause> + Send + 'static {
    let waiting = scene.wait(pending);
    move || block_on(waiting)
}
