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

use super::postgres::{baton, bounded};
use super::{Cluster, Sample, ms};

/// The workers of each cell.
const WORKERS: [usize; 2] = [1, 8];

/// A primary and its synchronous standby, once the standby is in sync.
async fn synchronous_pair() -> Option<(Cluster, Cluster)> {
    let primary = Cluster::start()?;
    let standby = bounded("the standby is synchronous", primary.synchronous_standby()).await;
    Some((primary, standby))
}

/// One row: the operation on one server and on the synchronous pair.
fn row(op: &str, workers: usize, single: &Sample, pair: &Sample, ratios: &[String]) {
    println!(
        "| {op} | {workers} | {} / {} | {} / {} | {:.2}× ({}) | {:.0} | {:.0} |",
        ms(single.quantile(0.5)),
        ms(single.quantile(0.99)),
        ms(pair.quantile(0.5)),
        ms(pair.quantile(0.99)),
        pair.quantile(0.5).as_secs_f64() / single.quantile(0.5).as_secs_f64(),
        ratios.join(", "),
        single.per_second(),
        pair.per_second()
    );
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
    println!(
        "| operation | workers | one server median / p99 (ms) | synchronous pair median / p99 (ms) | \
         ratio (medians; the rounds') | one server ops/s | pair ops/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &op in operations {
        for workers in WORKERS {
            let mut cells = Vec::new();
            for round in 0..rounds {
                let one = baton(Arc::clone(&single_url), op, workers, ops, 100 + round).await;
                let two = baton(Arc::clone(&pair_url), op, workers, ops, 100 + round).await;
                let ratio = two.quantile(0.5).as_secs_f64() / one.quantile(0.5).as_secs_f64();
                cells.push((ratio, one, two));
            }
            cells.sort_by(|a, b| a.0.total_cmp(&b.0));
            let ratios: Vec<String> = cells.iter().map(|c| format!("{:.2}", c.0)).collect();
            let (_, one, two) = &cells[cells.len() / 2];
            row(op, workers, one, two, &ratios);
        }
    }
}
