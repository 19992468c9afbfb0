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

use super::CONCURRENCY;
use super::common::citus::Citus;
use super::common::postgres::Cluster;
use super::postgres::{Side, bounded, side_by_side};

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
    let sides = [
        Side::new("one server", single_url),
        Side::new("Citus", Arc::new(citus.url())),
    ];
    side_by_side(sides, operations, &CONCURRENCY, (ops, rounds, 200)).await;
}
