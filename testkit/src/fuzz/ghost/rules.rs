//! The rules themselves, from SPEC §1 directly: S1–S9 on one transition of
//! the core, and the waiter queries on the state it reached.

use super::{Fed, Violation};
use baton::gate::GateError;
use baton::gate::core::{self, Outcome, Refusal, State, StateKind, Ticket, Wait};

/// S1–S9 on one transition of the core, from SPEC §1 directly.
pub(super) fn transition(
    fed: Fed,
    before: &State<u8>,
    outcome: &Outcome<u8>,
    after: &State<u8>,
) -> Result<(), Violation> {
    use StateKind::{Closed, Committed, Held, Requested, Running, Sealed};
    let moved = matches!(outcome, Outcome::Moved(_));
    let (from, to) = (before.kind(), after.kind());
    if to == Requested && from != Requested {
        ensure!(
            from == Running && fed.kind == "Reserve",
            "S1",
            "{from:?} -> Requested by {}",
            fed.kind
        );
        let (State::Running { next }, Some(issued)) = (before, after.ticket()) else {
            unreachable!("kinds checked above");
        };
        ensure!(
            issued == *next,
            "S1",
            "issued {issued} from Running{{next: {next}}}"
        );
    }
    if moved && fed.ticket.is_some() {
        ensure!(
            fed.ticket == before.ticket(),
            "S2",
            "{} with {:?} moved {before:?}",
            fed.kind,
            fed.ticket
        );
    }
    if to == Committed && from != Committed {
        let earned = from == Held && fed.kind == "Commit" && !fed.canceled;
        ensure!(
            earned,
            "S3",
            "{from:?} -> Committed by {} (canceled: {})",
            fed.kind,
            fed.canceled
        );
        ensure!(
            after.pause() == before.pause(),
            "S3",
            "the committed pause is not the held one"
        );
    }
    if from == Committed {
        ensure!(
            matches!(to, Committed | Sealed | Closed),
            "S4",
            "Committed -> {to:?}"
        );
    }
    if to == Sealed && from != Sealed {
        ensure!(
            from == Committed && fed.kind == "Seal" && fed.fits,
            "S5",
            "{from:?} -> Sealed by {}",
            fed.kind
        );
        ensure!(
            after.pause() == before.pause() && after.ticket() == before.ticket(),
            "S5",
            "sealed another pause"
        );
    }
    if from.is_terminal() {
        ensure!(!moved, "S6", "{from:?} moved by {} to {after:?}", fed.kind);
    }
    let released = fed.kind == "Cancel" || (fed.kind == "Preflight" && (!fed.fits || fed.canceled));
    if matches!(from, Requested | Held) && moved && released {
        ensure!(
            to == Running,
            "S8",
            "{from:?} released by {} to {to:?}",
            fed.kind
        );
    }
    if fed.kind == "Reserve" && !fed.valid {
        let refused = matches!(
            outcome,
            Outcome::Refused(Refusal::Reserve(GateError::InvalidInput(_)))
        );
        ensure!(refused, "S9", "an invalid intent gave {outcome:?}");
    }
    Ok(())
}

/// Each waiter query: its name, the rule it answers to, the kind of state
/// it is pending in for its own ticket, and the kind it resolves in.
const WAITERS: [(&str, &str, core::Query<u8>, StateKind, StateKind); 3] = [
    (
        "ready",
        "S7",
        core::ready,
        StateKind::Requested,
        StateKind::Held,
    ),
    (
        "boundary",
        "S7",
        core::boundary,
        StateKind::Held,
        StateKind::Committed,
    ),
    (
        "seal",
        "S5",
        core::seal,
        StateKind::Committed,
        StateKind::Sealed,
    ),
];

/// The waiter queries in `state`, for each probe ticket: S7 each waiter
/// sees only its own ticket's pause, S5 `seal` resolves only in Sealed, S1
/// at most one ticket is live.
pub(super) fn queries(
    state: &State<u8>,
    probes: impl Iterator<Item = Ticket>,
) -> Result<(), Violation> {
    let mut live = None;
    for ticket in probes {
        let own = state.ticket() == Some(ticket);
        let mut pending = false;
        for (name, rule, query, pending_in, resolved_in) in WAITERS {
            match query(state, ticket) {
                Wait::Resolved(p) => ensure!(
                    own && state.kind() == resolved_in && Some(p) == state.pause(),
                    rule,
                    "{name}({ticket}) resolved in {state:?}"
                ),
                Wait::Pending => {
                    pending = true;
                    ensure!(
                        own && state.kind() == pending_in,
                        rule,
                        "{name}({ticket}) pending in {state:?}"
                    );
                }
                Wait::Gone => {}
            }
        }
        if pending {
            ensure!(
                live.is_none_or(|t| t == ticket),
                "S1",
                "tickets {live:?} and {ticket} both live in {state:?}"
            );
            live = Some(ticket);
        }
    }
    Ok(())
}
