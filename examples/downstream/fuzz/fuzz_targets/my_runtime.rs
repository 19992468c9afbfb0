//! A handoff script and a collector script, each checked after every
//! operation (H1, H2, C1–C3): `downstream_runtime::check::script`.
#![no_main]

use downstream_runtime::check::{self, Script};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|script: Script| check::script(&script));
