//! Adapter sequences, drops and polls against the core: `baton_testkit::fuzz::gate_adapter`.
#![no_main]

use baton_testkit::fuzz::gate_adapter::{Ops, gate_adapter};
use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|input: Ops| -> Corpus {
    gate_adapter(input).map_or(Corpus::Reject, |()| Corpus::Keep)
});
