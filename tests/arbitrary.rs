//! The `arbitrary` feature: the fact types generate from any bytes, and what
//! they generate is a fact the wire accepts (SPEC §1): every `Digest` is well
//! formed, so each generated value survives encoding and decoding unchanged.
#![cfg(feature = "arbitrary")]

use arbitrary::{Arbitrary, Unstructured};
use baton::facts::{Digest, from_json};
use baton::{HandoffExecution, HandoffIntent, HandoffPause, Invocation, Phase};

/// Deterministic pseudo-random bytes (xorshift), `len` of them, from `seed`.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// `T` generated from 1,000 byte strings, each checked by `check`.
fn each<T: for<'a> Arbitrary<'a>>(check: impl Fn(T)) -> usize {
    let mut generated = 0;
    for seed in 0..1_000 {
        let data = bytes(seed, 64 + (seed as usize % 512));
        if let Ok(value) = T::arbitrary(&mut Unstructured::new(&data)) {
            check(value);
            generated += 1;
        }
    }
    generated
}

fn round_trips<T>(value: T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_vec(&value).expect("encodes");
    let back: T = from_json(&json).unwrap_or_else(|error| {
        panic!(
            "SPEC §1: a generated fact decodes: {error}\n{}",
            String::from_utf8_lossy(&json)
        )
    });
    assert_eq!(back, value, "SPEC §1: decoding gives back what was encoded");
}

#[test]
fn a_generated_digest_is_always_well_formed() {
    let generated = each(|digest: Digest| {
        assert_eq!(Digest::parse(digest.as_str()), Ok(digest.clone()));
    });
    assert_eq!(generated, 1_000, "32 bytes are always there to take");
}

#[test]
fn generated_facts_round_trip_through_json() {
    assert!(each(round_trips::<Invocation>) > 900);
    assert!(each(round_trips::<HandoffIntent>) > 900);
    assert!(each(round_trips::<HandoffExecution>) > 900);
    assert!(each(round_trips::<HandoffPause<HandoffExecution>>) > 900);
}

#[test]
fn every_phase_is_generated() {
    let seen = std::cell::RefCell::new(Vec::new());
    each(|phase: Phase| seen.borrow_mut().push(phase));
    let seen = seen.into_inner();
    for phase in Phase::ALL {
        assert!(
            seen.contains(&phase),
            "{phase:?} is never generated from 1,000 inputs"
        );
    }
}
