//! Arbitrary bytes as JSON facts: `baton_testkit::fuzz::facts_json`.
#![no_main]

use baton_testkit::fuzz::facts_json;
use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|data: &[u8]| -> Corpus {
    facts_json(data).map_or(Corpus::Reject, |()| Corpus::Keep)
});
