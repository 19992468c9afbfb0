//! The runtime's own log, `MapLog`, driven by the test kit's log fuzz body
//! (`baton_testkit::fuzz::log_store`): every answer against the kit's
//! ghost, R1/R3/R6/R7 on every answer, the facts after every step; a new,
//! empty log per input.
#![no_main]

use baton_testkit::fuzz::log_table::Ops;
use downstream_runtime::store::MapLog;
use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|input: Ops| -> Corpus {
    match baton_testkit::fuzz::log_store(input, &MapLog::default()) {
        Ok(()) => Corpus::Keep,
        Err(_) => Corpus::Reject,
    }
});
