//! The guide, a chapter at a time, each ending in a program that runs.
//!
//! 1. [`gate`]: the handoff gate — its states, its table, the handles and
//!    what dropping each one does.
//! 2. [`durable`]: the canonical log, its stores, the worker's last step,
//!    finishing and retention.
//! 3. [`fleet`]: more than one host — `PostgresLog` on a pool, TLS,
//!    PgBouncer, the caller's transaction, and the fault campaign.
//! 4. [`runtime`]: a runtime on PostgreSQL end to end — workers, handoffs,
//!    a host killed and its Runs recovered, retention.
//! 5. [`ha`]: running on a highly available PostgreSQL — what holds across
//!    a failover for each kind of replication.
//! 6. [`ledger`]: the delegation ledger, the cancel signal and the residue
//!    report.
//! 7. [`checking`]: how baton is checked, and checking your own runtime
//!    with the test kit.
//!
//! Beside it: [the specification](crate::spec) (every rule id and the
//! checks that prove it) and, with the `postgres` feature, past one server
//! on Citus (`guide::scale`).
//!
//! The chapters are the repository's `docs/guide/*.md`, rendered here and
//! compiled and run as doctests. Their links are reference-style, defined
//! at the foot of each file for a reader of the repository; the
//! definitions below come first, so here they win and lead to the
//! rendered pages instead.

/// Where the chapters' links lead on docs.rs: a chapter, the specification,
/// or a file only the repository has. The first definition of a label wins
/// (CommonMark), so these override the repository's relative ones at the
/// foot of each chapter; `tests/doc_blocks.rs` checks that every label a
/// chapter defines relatively is here.
macro_rules! rendered_links {
    () => {
        concat!(
            "[gate]: crate::guide::gate\n",
            "[durable]: crate::guide::durable\n",
            "[fleet]: crate::guide::fleet\n",
            "[runtime]: crate::guide::runtime\n",
            "[ha]: crate::guide::ha\n",
            "[ledger]: crate::guide::ledger\n",
            "[checking]: crate::guide::checking\n",
            "[spec]: crate::spec\n",
            "[scale]: https://docs.rs/agent-baton/latest/baton/guide/scale/index.html\n",
            "[testkit-guide]: https://docs.rs/agent-baton-testkit/latest/baton_testkit/guide/index.html\n",
            "[testkit]: https://docs.rs/agent-baton-testkit\n",
            "[contributing]: https://github.com/agent-baton/baton/blob/main/CONTRIBUTING.md\n",
            "[benches]: https://github.com/agent-baton/baton/blob/main/benches/README.md\n",
            "[downstream]: https://github.com/agent-baton/baton/tree/main/examples/downstream\n",
            "[postgres_runtime]: https://github.com/agent-baton/baton/tree/main/examples/postgres_runtime\n",
            "[runtime test]: https://github.com/agent-baton/baton/blob/main/tests/log_contract/postgres_runtime.rs\n",
            "\n",
        )
    };
}

#[doc = rendered_links!()]
#[doc = include_str!("../docs/guide/gate.md")]
pub mod gate {}

#[doc = rendered_links!()]
#[doc = include_str!("../docs/guide/durable.md")]
pub mod durable {}

#[doc = rendered_links!()]
#[doc = include_str!("../docs/guide/fleet.md")]
pub mod fleet {}

#[doc = rendered_links!()]
#[doc = include_str!("../docs/guide/runtime.md")]
pub mod runtime {}

#[doc = rendered_links!()]
#[doc = include_str!("../docs/guide/ha.md")]
pub mod ha {}

#[doc = rendered_links!()]
#[doc = include_str!("../docs/guide/ledger.md")]
pub mod ledger {}

#[doc = rendered_links!()]
#[doc = include_str!("../docs/guide/checking.md")]
pub mod checking {}

#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
#[doc = rendered_links!()]
#[doc = include_str!("../docs/SCALE.md")]
pub mod scale {}
