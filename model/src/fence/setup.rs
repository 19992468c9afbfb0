//! What a configuration of the fence model is: the rules it runs (baton's
//! own, or a broken variant's) and its actors; the configurations the
//! report checks.

use baton::durable::{
    AppendStep, ClaimStep, Epoch, Fate, LogError, Retirement, RunFacts, append_step,
    claim_step_above, finish_step, retire_step,
};
use baton::{HandoffPause, Invocation};

/// The log's claim rule, on the facts and the floor of the server's term
/// (`baton::durable::timeline_floor`): the real [`claim_step_above`], or a
/// broken one.
pub type ClaimFn = fn(&RunFacts<u8>, Epoch) -> Result<ClaimStep<u8>, LogError>;
/// The log's append rule: the real [`append_step`], or a broken one.
pub type AppendFn = fn(
    &str,
    Epoch,
    Fate<'_, u8>,
    Epoch,
    (&Invocation, &HandoffPause<u8>),
) -> Result<AppendStep, LogError>;
/// The log's finish rule: the real [`finish_step`], or a broken one.
pub type FinishFn =
    fn(&str, Epoch, Fate<'_, u8>, Epoch, (&Invocation, &u8)) -> Result<AppendStep, LogError>;
/// The log's retire: the rule's answer for the root (whether it is retired
/// already, and every Run of it the log holds, each with its fate), and
/// whether the store keeps the tombstone when it removes the rows. The
/// real one is [`retire_step`] with the tombstone, as every store writes
/// it.
pub type RetireFn =
    for<'a> fn(&str, bool, &[(&'a str, Fate<'a, u8>)]) -> Result<(Retirement, bool), LogError>;

/// The rules a model runs: the real ones, or a variant's.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// The claim rule.
    pub claim: ClaimFn,
    /// The append rule.
    pub append: AppendFn,
    /// The finish rule.
    pub finish: FinishFn,
    /// The retire rule and its write.
    pub retire: RetireFn,
}

/// The real rule of `retire`, and the tombstone every store keeps with the
/// removal (`MemoryLog::retire`).
pub(crate) fn retire_with_tombstone(
    root_run_id: &str,
    retired: bool,
    runs: &[(&str, Fate<'_, u8>)],
) -> Result<(Retirement, bool), LogError> {
    let step = retire_step(root_run_id, retired, runs.iter().copied())?;
    Ok((step, matches!(step, Retirement::Retired { .. })))
}

impl Rules {
    /// The real rules, as every store applies them.
    pub const REAL: Rules = Rules {
        claim: claim_step_above,
        append: append_step,
        finish: finish_step,
        retire: retire_with_tombstone,
    };
}

/// How the log's server replicates, and so what a failover keeps
/// (docs/SPEC.md §6, "Replication and failover").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replication {
    /// One server, no standby: no failover (a restart loses nothing
    /// acknowledged).
    Single,
    /// A synchronous standby: an answered operation waits until the
    /// standby has every transaction before it (each takes the Run's row
    /// lock, so it commits a transaction id, and its commit waits); a
    /// write whose reply is lost may or may not have reached it. One
    /// failover, at any moment while another claim may follow.
    Synchronous,
    /// An asynchronous standby: it receives the primary's transactions in
    /// order, at any pace, and a failover loses every transaction it has
    /// not received — acknowledged or not. One failover, as above.
    Asynchronous,
}

/// A configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The most workers the owner starts (1..=[`MAX_WORKERS`](super::MAX_WORKERS)).
    pub workers: u8,
    /// Whether a worker may finish the Run (the third fate) instead of
    /// handing it off.
    pub finish: bool,
    /// Whether the retention job runs (it retires the root Run); with it,
    /// the successor a durable pause names is a second Run of the root,
    /// claimed and finished by its own owner and worker.
    pub retire: bool,
    /// The server's replication: with a standby, one failover.
    pub replication: Replication,
}

impl Setup {
    /// The handoff alone: `workers` workers, no finish, no retention.
    pub const fn handoff(workers: u8) -> Self {
        Self {
            workers,
            finish: false,
            retire: false,
            replication: Replication::Single,
        }
    }

    /// Every fate and retention: `workers` workers that may hand off or
    /// finish, the successor a durable pause names, and the retention
    /// job.
    pub const fn fates(workers: u8) -> Self {
        Self {
            workers,
            finish: true,
            retire: true,
            replication: Replication::Single,
        }
    }

    /// [`Setup::fates`] on a server with a standby replicating as
    /// `replication`, which is promoted once: the log goes on with what
    /// the standby had, on the next term.
    pub const fn failover(workers: u8, replication: Replication) -> Self {
        Self {
            replication,
            ..Self::fates(workers)
        }
    }
}

/// A named configuration.
#[derive(Clone, Copy, Debug)]
pub struct Named {
    /// Its name in the report.
    pub name: &'static str,
    /// The configuration.
    pub setup: Setup,
}

/// The report's configurations: one to four workers (up to three
/// takeovers, epochs 1–4), handing off; then the same with the third fate,
/// the successor a durable pause names, and retention; then with a
/// failover to a synchronous and to an asynchronous standby.
pub const REPORT: [Named; 10] = [
    Named {
        name: "2 workers (1 takeover)",
        setup: Setup::handoff(2),
    },
    Named {
        name: "3 workers (2 takeovers, epochs 1–3)",
        setup: Setup::handoff(3),
    },
    Named {
        name: "4 workers (3 takeovers, epochs 1–4)",
        setup: Setup::handoff(4),
    },
    Named {
        name: "2 workers, finish, the successor and retention",
        setup: Setup::fates(2),
    },
    Named {
        name: "3 workers, finish, the successor and retention",
        setup: Setup::fates(3),
    },
    Named {
        name: "4 workers, finish, the successor and retention",
        setup: Setup::fates(4),
    },
    Named {
        name: "3 workers, every fate, a failover to a synchronous standby",
        setup: Setup::failover(3, Replication::Synchronous),
    },
    Named {
        name: "4 workers, every fate, a failover to a synchronous standby",
        setup: Setup::failover(4, Replication::Synchronous),
    },
    Named {
        name: "3 workers, every fate, a failover to an asynchronous standby",
        setup: Setup::failover(3, Replication::Asynchronous),
    },
    Named {
        name: "4 workers, every fate, a failover to an asynchronous standby",
        setup: Setup::failover(4, Replication::Asynchronous),
    },
];

/// The configuration the self-test runs the handoff's broken variants on.
pub const SELF_TEST: Setup = Setup::handoff(3);

/// The configuration the self-test runs the finish's and retention's
/// broken variants on.
pub const SELF_TEST_FATES: Setup = Setup::fates(3);

/// The configuration the self-test runs the failover's broken variant on.
pub const SELF_TEST_FAILOVER: Setup = Setup::failover(3, Replication::Asynchronous);
