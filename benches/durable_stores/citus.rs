//! The price of Citus (issue 57): the table's operations (a Run's first
//! claim, an append, and the handoff unit — a Run's first claim, its
//! pause's append, its successor's first claim and finish) through the
//! coordinator of a Citus cluster of two workers, the tables distributed
//! by root Run (`PostgresSchema::distribute`), against the same on one
//! plain server, in alternating rounds of the same run. All three nodes
//! and the plain server are the fixtures', on this machine's two cores: a
//! cluster this small cannot show Citus's scale-out, only what routing
//! each statement through the coordinator costs one operation.

use std::sync::Arc;

use baton::durable::PostgresSchema;

use super::common::citus::Citus;
use super::common::postgres::Cluster;
use super::postgres::{baton, bounded};
use super::{CONCURRENCY, Sample, ms};

/// One row: the operation on one server and through the coordinator.
fn row(op: &str, workers: usize, single: &Sample, citus: &Sample, ratios: &[String]) {
    println!(
        "| {op} | {workers} | {} / {} | {} / {} | {:.2}× ({}) | {:.0} | {:.0} |",
        ms(single.quantile(0.5)),
        ms(single.quantile(0.99)),
        ms(citus.quantile(0.5)),
        ms(citus.quantile(0.99)),
        citus.quantile(0.5).as_secs_f64() / single.quantile(0.5).as_secs_f64(),
        ratios.join(", "),
        single.per_second(),
        citus.per_second()
    );
}

/// The section: `operations` on `single` and on a Citus cluster the
/// section starts, `ops` a cell, `rounds` alternating rounds, the row the
/// round of the median ratio.
pub(super) async fn price(
    single: &Cluster,
    operations: &[&'static str],
    ops: usize,
    rounds: usize,
) {
    println!();
    println!("### The price of Citus (a coordinator and two workers, distributed by root Run)");
    println!();
    // Started off the runtime's threads' way: the fixture joins the nodes
    // on a runtime of its own.
    let Some(citus) = tokio::task::block_in_place(Citus::start) else {
        println!("(skipped: no Citus)");
        return;
    };
    bounded("the tables distributed", async {
        let admin = citus.connect().await;
        let schema = PostgresSchema::search_path();
        schema.migrate(&admin).await.expect("the schema");
        schema
            .distribute(&admin)
            .await
            .expect("the tables distributed");
    })
    .await;
    let single_url = Arc::new(single.url(&single.database().await));
    let citus_url = Arc::new(citus.url());
    println!(
        "| operation | workers | one server median / p99 (ms) | Citus median / p99 (ms) | \
         ratio (medians; the rounds') | one server ops/s | Citus ops/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &op in operations {
        for workers in CONCURRENCY {
            let mut cells = Vec::new();
            for round in 0..rounds {
                let one = baton(Arc::clone(&single_url), op, workers, ops, 200 + round).await;
                let two = baton(Arc::clone(&citus_url), op, workers, ops, 200 + round).await;
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
