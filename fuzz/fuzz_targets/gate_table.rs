//! Core table sequences against the ghost reference (S1–S9): `baton_testkit::fuzz::gate_table`.
#![no_main]

use baton_testkit::fuzz::gate_table::{Ops, gate_table};
use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|input: Ops| -> Corpus {
    gate_table(input).map_or(Corpus::Reject, |()| Corpus::Keep)
});
