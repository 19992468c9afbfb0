//! The kit's checks of a store fed stores with one slip each (issue 44):
//! the log contract's cases and the log fuzz harness (`log_store`) must
//! refuse every one, on the message of the rule the slip breaks, so that
//! neither can pass a user's store hollow. Each slip is a one-line
//! mistake a store's author could make, written over `MemoryLog`; without
//! a slip the same wrapper passes the whole contract (the control).
#![cfg(not(loom))]

use baton::durable::{
    Claim, Epoch, HandoffLog, LogError, MemoryLog, Receipt, Retirement, RunFacts,
};
use baton::{HandoffPause, Invocation};
use baton_testkit::fuzz::log_table::Ops;
use baton_testkit::fuzz::{log_store, replay_dir};
use baton_testkit::log_contract::{self, Payload, Shared, run};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// No slip: `MemoryLog` as it is.
const FAITHFUL: u8 = 0;
/// The claim reads the Run's epoch but not its pause: a handed-off Run is
/// answered as the next epoch's (R1).
const RESUMES_A_HANDED_OFF_RUN: u8 = 1;
/// The append does not compare epochs: a fenced epoch's pause is written
/// under the current one (R7).
const APPENDS_UNDER_A_FENCED_EPOCH: u8 = 2;
/// The read of the facts leaves out the pauses (R3).
const READS_NO_PAUSES: u8 = 3;
/// The claim reads the Run's epoch but not its finish: a finished Run is
/// answered as the next epoch's (R8).
const RESUMES_A_FINISHED_RUN: u8 = 4;
/// A second finish is acknowledged instead of refused (R8).
const FINISHES_TWICE: u8 = 5;
/// A retirement of a root with an open Run is acknowledged (R9).
const RETIRES_OPEN_WORK: u8 = 6;
/// Bad input is answered as a failure of the store, not a typed refusal.
const UNTYPED_BAD_INPUT: u8 = 7;

/// `MemoryLog`, with the slip `SLIP` names; its payload `P` (the
/// contract's [`Payload`], the fuzz harness's text).
struct Slipped<P, const SLIP: u8>(MemoryLog<P>);

impl<P, const SLIP: u8> Default for Slipped<P, SLIP> {
    fn default() -> Self {
        Self(MemoryLog::new())
    }
}

impl<P, const SLIP: u8> Slipped<P, SLIP>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
    /// The Run's next epoch, as a claim that overlooks its fate answers.
    fn next_epoch(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        let facts = self.0.facts(root_run_id, run_id)?;
        Ok(Claim::Owner(facts.epoch.next().unwrap_or(Epoch::LAST)))
    }

    fn untyped<T>(&self, answer: Result<T, LogError>) -> Result<T, LogError> {
        match answer {
            Err(LogError::InvalidPause(_) | LogError::InvalidRun { .. })
                if SLIP == UNTYPED_BAD_INPUT =>
            {
                Err(LogError::Unavailable("the store refused it".into()))
            }
            answer => answer,
        }
    }
}

impl<P, const SLIP: u8> HandoffLog<P> for Slipped<P, SLIP>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        match self.untyped(self.0.claim(root_run_id, run_id))? {
            Claim::HandedOff(_) if SLIP == RESUMES_A_HANDED_OFF_RUN => {
                self.next_epoch(root_run_id, run_id)
            }
            Claim::Finished(_) if SLIP == RESUMES_A_FINISHED_RUN => {
                self.next_epoch(root_run_id, run_id)
            }
            claim => Ok(claim),
        }
    }

    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        match self.untyped(self.0.append(root_run_id, source, epoch, pause)) {
            Err(LogError::Fenced { .. }) if SLIP == APPENDS_UNDER_A_FENCED_EPOCH => {
                let current = self.0.facts(root_run_id, &source.run_id)?.epoch;
                self.0.append(root_run_id, source, current, pause)
            }
            answer => answer,
        }
    }

    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        match self.untyped(self.0.finish(root_run_id, source, epoch, outcome)) {
            Err(LogError::AlreadyFinished { .. }) if SLIP == FINISHES_TWICE => Ok(Receipt::Written),
            answer => answer,
        }
    }

    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        match self.untyped(self.0.retire(root_run_id)) {
            Err(LogError::RunOpen { .. }) if SLIP == RETIRES_OPEN_WORK => {
                Ok(Retirement::Retired { runs: 0 })
            }
            answer => answer,
        }
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        let mut facts = self.untyped(self.0.facts(root_run_id, run_id))?;
        if SLIP == READS_NO_PAUSES {
            facts.pauses.clear();
        }
        Ok(facts)
    }
}

async fn slipped<const SLIP: u8>() -> Option<Shared<Slipped<Payload, SLIP>>> {
    Some(Shared::new(Slipped::default()))
}

// The control: without a slip, the wrapper passes the whole contract.
baton_testkit::log_contract!(faithful, slipped::<FAITHFUL>);

#[test]
#[should_panic(expected = "R1")]
fn r1_the_contract_refuses_a_store_that_resumes_a_handed_off_run() {
    run(
        slipped::<RESUMES_A_HANDED_OFF_RUN>,
        log_contract::r1_a_handed_off_run_is_never_claimed_again,
    );
}

#[test]
#[should_panic(expected = "R7")]
fn r7_the_contract_refuses_a_store_that_appends_under_a_fenced_epoch() {
    run(
        slipped::<APPENDS_UNDER_A_FENCED_EPOCH>,
        log_contract::r1_r6_r7_a_takeover_fences_the_older_epoch_and_its_append_writes_nothing,
    );
}

#[test]
#[should_panic(expected = "R3")]
fn r3_the_contract_refuses_a_store_that_reads_no_pauses() {
    run(
        slipped::<READS_NO_PAUSES>,
        log_contract::r3_the_facts_read_back_exactly_what_was_appended_and_each_run_is_its_own,
    );
}

#[test]
#[should_panic(expected = "R8")]
fn r8_the_contract_refuses_a_store_that_resumes_a_finished_run() {
    run(
        slipped::<RESUMES_A_FINISHED_RUN>,
        log_contract::r8_a_finished_run_is_never_resumed_and_takes_no_other_fate,
    );
}

#[test]
#[should_panic(expected = "R8")]
fn r8_the_contract_refuses_a_store_that_finishes_twice() {
    run(
        slipped::<FINISHES_TWICE>,
        log_contract::r8_a_finished_run_is_never_resumed_and_takes_no_other_fate,
    );
}

#[test]
#[should_panic(expected = "R9")]
fn r9_the_contract_refuses_a_store_that_retires_open_work() {
    run(
        slipped::<RETIRES_OPEN_WORK>,
        log_contract::r9_r10_retirement_removes_only_final_runs_and_fences_every_zombie,
    );
}

#[test]
#[should_panic(expected = "a typed error")]
fn the_contract_refuses_a_store_that_answers_bad_input_untyped() {
    run(
        slipped::<UNTYPED_BAD_INPUT>,
        log_contract::bad_input_is_a_typed_error_and_writes_nothing,
    );
}

/// Runs the fuzz harness on fresh `Slipped<SLIP>` stores over the log
/// target's committed corpus (`fuzz/corpus/log_table`: the inputs
/// libFuzzer kept for what they reach; the harness's payload is text):
/// its first violation's message, if any.
fn fuzzed<const SLIP: u8>() -> Option<String> {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/log_table");
    let mut first = None;
    let replayed = replay_dir(&corpus, |input: Ops| {
        if first.is_some() {
            return;
        }
        let refused = std::panic::catch_unwind(|| {
            let _ = log_store(input, &Slipped::<String, SLIP>::default());
        });
        if let Err(panic) = refused {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()));
            first = Some(text.unwrap_or_default());
        }
    });
    assert!(replayed > 100, "the corpus is there: {replayed} inputs");
    first
}

/// The fuzz harness refuses every slip, naming a rule it breaks (a
/// fenced append breaks R1's second half as much as R6 and R7); and passes
/// the faithful wrapper over the same inputs (the control).
#[test]
fn the_log_fuzz_harness_refuses_every_slipped_store_naming_the_rule() {
    let found: [(&str, Option<String>, &[&str]); 8] = [
        ("faithful", fuzzed::<FAITHFUL>(), &[]),
        (
            "resumes a handed-off Run",
            fuzzed::<RESUMES_A_HANDED_OFF_RUN>(),
            &["R1"],
        ),
        (
            "appends under a fenced epoch",
            fuzzed::<APPENDS_UNDER_A_FENCED_EPOCH>(),
            &["R1", "R6", "R7"],
        ),
        ("reads no pauses", fuzzed::<READS_NO_PAUSES>(), &["R3"]),
        (
            "resumes a finished Run",
            fuzzed::<RESUMES_A_FINISHED_RUN>(),
            &["R8"],
        ),
        ("finishes twice", fuzzed::<FINISHES_TWICE>(), &["R8"]),
        (
            "retires open work",
            fuzzed::<RETIRES_OPEN_WORK>(),
            &["R9", "SPEC §6"],
        ),
        (
            "answers bad input untyped",
            fuzzed::<UNTYPED_BAD_INPUT>(),
            &["SPEC §6"],
        ),
    ];
    let wrong: Vec<String> = found
        .iter()
        .filter(|(_, violation, rules)| match violation {
            None => !rules.is_empty(),
            Some(violation) => !rules.iter().any(|rule| violation.starts_with(rule)),
        })
        .map(|(slip, violation, rules)| format!("{slip} (expected {rules:?}): {violation:?}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "refused wrongly or not at all:\n{}",
        wrong.join("\n")
    );
}
