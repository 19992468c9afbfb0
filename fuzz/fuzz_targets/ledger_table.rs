//! Ledger core sequences against the ghost reference, D1–D6 after every step: `baton_testkit::fuzz::ledger_table`.
#![no_main]

use baton_testkit::fuzz::ledger_table::{Ops, ledger_table};
use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|input: Ops| -> Corpus {
    ledger_table(input).map_or(Corpus::Reject, |()| Corpus::Keep)
});
