//! The handoff gate model: the real core ([`codec`]) inside a system of
//! actors ([`system`]), checked against SPEC §1's S1–S9 and L1–L3
//! ([`props`]), with broken variants of `step` to test the checker itself
//! ([`variants`]). With [`Setup::durable`] on, the worker also appends its
//! pause to a durable log and may crash at every point, and a restart
//! reconciles through the real `baton::durable::reconcile` ([`durable`]).

pub mod codec;
pub mod compact;
pub mod coverage;
pub mod durable;
pub mod pack;
mod predicate;
pub mod proof;
pub mod props;
pub mod state;
pub mod symmetry;
pub mod system;
pub mod variants;

use crate::explore::{Model, Successor};
use codec::{Core, StepFn};
use system::{Durable, Setup, Step, Sys};

/// A named configuration of the handoff system.
#[derive(Clone, Copy, Debug)]
pub struct Named {
    /// How the report calls it.
    pub name: &'static str,
    /// The actors.
    pub setup: Setup,
}

/// Every actor of the system with `requesters` requesters, `tries` each.
pub const fn full(requesters: u8, tries: u8) -> Setup {
    Setup {
        requesters,
        tries,
        closer: true,
        fair_closer: false,
        cancellation: true,
        bad_input: true,
        durable: Durable::Off,
    }
}

/// Every actor of [`full`], plus the durable log, a worker that appends
/// then seals and may crash at every point, and the restart that reconciles
/// from the log (issue 9).
pub const fn durable_full(requesters: u8, tries: u8) -> Setup {
    Setup {
        durable: Durable::AppendThenSeal,
        ..full(requesters, tries)
    }
}

/// The configuration CI runs: 3 requesters with 2 reservations each, the
/// worker, the closer, cancellation and bad input.
pub const CI: Named = Named {
    name: "ci: 3 requesters × 2, worker, closer, cancel",
    setup: full(3, 2),
};

/// The configurations the report checks: CI's, and the same without the
/// closer (so the closer cannot excuse a livelock, L1–L3).
pub const REPORT: [Named; 2] = [
    CI,
    Named {
        name: "ci without the closer",
        setup: Setup {
            closer: false,
            ..full(3, 2)
        },
    },
];

/// The durable configuration CI runs: CI's actors with the durable log,
/// crashes of the worker at every point and the restart.
pub const DURABLE_CI: Named = Named {
    name: "durable: 3 requesters × 2, worker (append, seal, crash anywhere), restart, closer, cancel",
    setup: durable_full(3, 2),
};

/// The durable configurations the report checks: [`DURABLE_CI`], and the
/// same without the closer (so the closer cannot excuse a livelock).
pub const DURABLE_REPORT: [Named; 2] = [
    DURABLE_CI,
    Named {
        name: "durable without the closer",
        setup: Setup {
            closer: false,
            ..durable_full(3, 2)
        },
    },
];

/// Every property `setup` is checked against: the gate's S1–S9, L1–L3 and
/// coverage, plus R1–R5 and the durable coverage when it is durable.
pub fn properties(setup: &Setup) -> Vec<crate::explore::Property<GateModel>> {
    if setup.durable.is_on() {
        durable::props::properties(setup.closer)
    } else {
        props::properties()
    }
}

/// The handoff system running a step function.
pub struct GateModel {
    /// The actors.
    pub setup: Setup,
    /// The core the actors drive.
    pub core: Core,
}

impl GateModel {
    /// The system around baton's real `step`.
    pub fn new(setup: Setup) -> Self {
        Self::with_step(setup, baton::gate::core::step::<u8>)
    }

    /// The durable system `setup` running `variant`'s worker protocol and
    /// reconciliation around the real `step`.
    pub fn durable(variant: &durable::Variant, setup: Setup) -> Self {
        let mut model = Self::new(variant.setup(setup));
        if let Some(reconcile) = variant.reconcile {
            model.core = model.core.with_reconcile(reconcile);
        }
        model
    }

    /// The system around `step` (a broken variant, for self-tests).
    pub fn with_step(setup: Setup, step: StepFn) -> Self {
        assert!(
            (1..=system::MAX_REQUESTERS as u8).contains(&setup.requesters),
            "1..={} requesters",
            system::MAX_REQUESTERS
        );
        assert!(
            setup.tries <= pack::MAX_TRIES
                && u16::from(setup.requesters) * u16::from(setup.tries) < u16::from(pack::TICKETS),
            "at most {} tries each and fewer than {} reservations in all",
            pack::MAX_TRIES,
            pack::TICKETS
        );
        Self {
            setup,
            core: Core::new(setup.requesters, step),
        }
    }
}

impl Model for GateModel {
    type State = Sys;
    type Action = Step;
    type Key = pack::Key;

    fn pack(&self, state: &Sys) -> pack::Key {
        pack::pack(state)
    }

    fn unpack(&self, key: pack::Key) -> Sys {
        pack::unpack(key)
    }

    fn initial_states(&self) -> Vec<Sys> {
        vec![self.setup.initial()]
    }

    fn successors(&self, state: &Sys, out: &mut Vec<Successor<Step, Sys>>) {
        system::successors(&self.setup, &self.core, state, out);
    }

    fn canonical(&self, state: Sys) -> Sys {
        symmetry::canonical(self.setup.requesters, state)
    }
}
