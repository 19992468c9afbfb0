//! The names the fence's properties are checked and reported under, each
//! a rule id of SPEC §6 or §6.1 and the sentence it encodes, and the
//! builder of a `sometimes` property. It imports neither
//! [`super::props`] nor [`super::failover`]: the failover takes its names
//! from here, and the properties take theirs from here and the failover's
//! own from [`super::failover`], so the imports run one way.

use super::FenceModel;
use crate::explore::{Check, Property, StepCheck};

/// R1's name.
pub const R1: &str = "R1 a Run is never both handed off and continued by a resumed worker";
/// R2's name.
pub const R2: &str = "R2 a Some from wait() (a seal) implies the pause is durable";
/// R3's name.
pub const R3: &str = "R3 a claim answers HandedOff exactly when a pause is durable";
/// R4's name.
pub const R4: &str = "R4 a sealed worker's pause is durable";
/// R5's name.
pub const R5: &str = "R5 once faults stop, the Run reaches a decision";
/// R6's name.
pub const R6: &str = "R6 at most one epoch ever appends, and it is the current one";
/// R7's name.
pub const R7: &str = "R7 a fenced worker never appends and never seals";
/// R8's name.
pub const R8: &str = "R8 a Run has at most one final fate, and no epoch is issued after it";
/// R9's name.
pub const R9: &str = "R9 retention never reopens the fence: no epoch issued twice, no Run resumed or written after it";
/// R10's name.
pub const R10: &str = "R10 retention removes only final Runs and leaves the tombstone only";
/// G1's name.
pub const G1: &str = "G1 a durable handoff reaches its successor: its claim and its finish are never refused until it is final";
/// G2's name (with a standby: what a failover must keep).
pub const G2: &str = "G2 what was acknowledged survives a failover: a pause or an outcome a party was told of stays in the log";
/// G3's name.
pub const G3: &str = "G3 a refusal writes nothing";
/// G4's name.
pub const G4: &str = "G4 an epoch a claim answered is never answered to another claim of that Run";
/// G5's name.
pub const G5: &str = "G5 retention removes only ended work: every Run final, the successor a durable pause names claimed and final";

/// A `sometimes` property: `check` must hold on some reachable step.
pub(super) fn sometimes(name: &'static str, check: StepCheck<FenceModel>) -> Property<FenceModel> {
    Property {
        name,
        check: Check::Sometimes(check),
    }
}
