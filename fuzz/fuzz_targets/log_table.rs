//! Durable log sequences on MemoryLog and SqliteLog against the ghost reference, R1/R3/R6/R7 on every answer: `baton_testkit::fuzz::log_table`.
#![no_main]

use baton_testkit::fuzz::log_table::{Ops, log_table};
use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|input: Ops| -> Corpus { log_table(input).map_or(Corpus::Reject, |()| Corpus::Keep) });
