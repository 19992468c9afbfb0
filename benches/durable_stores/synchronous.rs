//! The price of a synchronous standby (issue 49): the table's operations
//! (a Run's first claim, an append, and the handoff unit — a Run's whole
//! life: its first claim, its pause's append, its successor's first claim
//! and finish) on a primary whose every commit waits for its streaming
//! standby (`synchronous_standby_names = '*'`, `synchronous_commit = on`),
//! against the same on one server alone, in alternating rounds of the
//! same run. Both clusters are the fixture's, on this machine: the
//! standby's flush is on the same disk and its round trip is loopback's,
//! so the price here is a local standby's, not a network's.

use std::sync::Arc;

use baton::durable::PostgresOptions;

use super::Cluster;
use super::postgres::{Side, bounded, side_by_side};

/// The workers of each cell.
const WORKERS: [usize; 2] = [1, 8];

/// A primary and its synchronous standby, once the standby is in sync.
async fn synchronous_pair() -> Option<(Cluster, Cluster)> {
    let primary = Cluster::start()?;
    let standby = bounded("the standby is synchronous", primary.synchronous_standby()).await;
    Some((primary, standby))
}

/// The section: `operations` on `single` and on a synchronous pair the
/// section starts, `ops` a cell, `rounds` alternating rounds, the row the
/// round of the median ratio.
pub(super) async fn price(
    single: &Cluster,
    operations: &[&'static str],
    ops: usize,
    rounds: usize,
) {
    println!();
    println!("### The price of a synchronous standby");
    println!();
    let Some((primary, _standby)) = synchronous_pair().await else {
        println!("(skipped: no server programs)");
        return;
    };
    let single_url = Arc::new(single.url(&single.database().await));
    let pair_url = Arc::new(primary.url(&primary.database().await));
    let sides = [
        Side::new("one server", single_url),
        Side::new("synchronous pair", Arc::clone(&pair_url)),
    ];
    side_by_side(sides, operations, &WORKERS, (ops, rounds, 100)).await;
    println!();
    println!("### The price of requiring the standby at every write");
    println!();
    // The same pair, its logs opened with and without the requirement:
    // the guard sent before every write (issue 58).
    let guarded = PostgresOptions::new().require_synchronous_standby(true);
    let sides = [
        Side::new("unguarded", Arc::clone(&pair_url)),
        Side {
            name: "guarded",
            url: pair_url,
            options: guarded,
        },
    ];
    side_by_side(sides, operations, &WORKERS, (ops, rounds, 150)).await;
}
