#![cfg(not(loom))]
//! The runtime's own log, `MapLog`, held to baton's canonical-log contract
//! by the test kit: one `#[test]` per rule, each named with its ids (R1,
//! R3, R4, R6, R7…).
//!
//! With `--features planted-store-bug` (an append that skips the fence)
//! the suite's fencing tests must fail, each naming its rule: here they
//! are `should_panic` on that message, as the loom and proptest tests are
//! on H1 under `planted-bug`, so `cargo test --all-features` passes only
//! if every one of them catches the bug.

use baton_testkit::log_contract::{Payload, Shared};
use downstream_runtime::store::MapLog;

/// A fresh, empty log for each test; its "connections" are handles on it.
async fn map_log() -> Option<Shared<MapLog<Payload>>> {
    Some(Shared::new(MapLog::default()))
}

#[cfg(not(feature = "planted-store-bug"))]
baton_testkit::log_contract!(map_log, map_log);

#[cfg(feature = "planted-store-bug")]
mod planted_store_bug {
    use baton_testkit::log_contract::{self, run};

    use super::map_log;

    #[test]
    #[should_panic(expected = "R7: the fenced epoch never appends")]
    fn r7_the_takeover_test_catches_an_append_without_the_fence() {
        run(
            map_log,
            log_contract::r1_r6_r7_a_takeover_fences_the_older_epoch_and_its_append_writes_nothing,
        );
    }

    #[test]
    #[should_panic(expected = "R6: the identical row under an older epoch is fenced")]
    fn r6_the_current_epoch_test_catches_an_append_without_the_fence() {
        run(
            map_log,
            log_contract::r6_only_the_current_epoch_appends_even_the_identical_row,
        );
    }

    #[test]
    #[should_panic(expected = "R7: a fenced worker's last step answers Fenced")]
    fn r7_the_last_step_test_catches_an_append_without_the_fence() {
        run(
            map_log,
            log_contract::r2_r4_r7_append_then_seal_seals_only_a_durable_pause_and_a_fenced_worker_never,
        );
    }
}
