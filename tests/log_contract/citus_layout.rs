//! What only a log on Citus has (docs/SCALE.md): every statement it sends
//! is a router query, run whole on the worker that holds its root Run's
//! shard — shown by the server's own plans (`EXPLAIN`) — and a log opened
//! on tables distributed any other way refuses to open, naming what is
//! wrong, before it could answer a claim it cannot keep.

use baton::Invocation;
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, PAUSED_TRIGGER, PostgresLog, PostgresSchema,
    PostgresStatement, Receipt, Retirement,
};

use crate::Payload;
use crate::citus::CitusSchema;
use crate::common::citus::Citus;
use crate::postgres_only::runtime;

/// The statements a distributed log sends, by name: the one-server set
/// without the sweep's batch over many roots, with the claim's root row
/// made first (`EnsureRoot`).
const DISTRIBUTED: [&str; 16] = [
    "LockRun",
    "ReadEpoch",
    "ReadPause",
    "InsertRun",
    "UpdateEpoch",
    "InsertPause",
    "AppendIfCurrent",
    "ReadRoot",
    "FinishRun",
    "LockRoot",
    "LockRuns",
    "ReadPauses",
    "RetireRoot",
    "FinishIfNoPause",
    "Timeline",
    "EnsureRoot",
];

/// A parameter's type as `PREPARE` names it, and a value of it: every
/// text is `1` (the one root Run, its Run, every id, and the pause's JSON),
/// every number epoch 1, a sweep's batch eight root Runs (on both workers).
fn typed(statement: &PostgresStatement) -> (String, String) {
    let names: Vec<&str> = statement
        .types
        .iter()
        .map(|t| match t.name() {
            "_text" => "text[]",
            name => name,
        })
        .collect();
    let values: Vec<&str> = names
        .iter()
        .map(|name| match *name {
            "text" => "'1'",
            "int8" => "1",
            "text[]" => "ARRAY['1', '2', '3', '4', '5', '6', '7', '8']",
            other => panic!("{}: a parameter of type {other}", statement.name),
        })
        .collect();
    (names.join(", "), values.join(", "))
}

/// What is wrong with `statement`'s plan on the coordinator `admin`, if
/// anything: not one task, a step through the coordinator (a distributed
/// subplan, an intermediate result, an insert pulled to it), or its task
/// on a node that is not one of `workers` (ports).
async fn not_a_router_plan(
    admin: &tokio_postgres::Client,
    n: usize,
    statement: &PostgresStatement,
    workers: &[u16],
) -> Option<String> {
    let (types, values) = typed(statement);
    let (types, values) = match statement.types.is_empty() {
        true => (String::new(), String::new()),
        false => (format!("({types})"), format!("({values})")),
    };
    let prepare = format!("PREPARE s{n}{types} AS {}", statement.text);
    admin.batch_execute(&prepare).await.expect("PREPARE");
    let plan: Vec<String> = match admin
        .query(&format!("EXPLAIN EXECUTE s{n}{values}"), &[])
        .await
    {
        Ok(rows) => rows.iter().map(|row| row.get(0)).collect(),
        Err(error) => {
            let error = error.as_db_error().map(|e| e.message().to_owned());
            return Some(format!(
                "{} is refused by Citus's planner:\n{error:?}",
                statement.name
            ));
        }
    };
    let plan = plan.join("\n");
    let on_a_worker = workers
        .iter()
        .any(|port| plan.contains(&format!("Node: host=127.0.0.1 port={port} ")));
    let wrong = if !plan.starts_with("Custom Scan (Citus Adaptive)") {
        "not planned by Citus"
    } else if plan.matches("Task Count: 1").count() != 1 || plan.contains("Task Count: 0") {
        "not one task"
    } else if ["Subplan", "intermediate_result", "INSERT/SELECT method"]
        .iter()
        .any(|step| plan.contains(step))
    {
        "a step through the coordinator"
    } else if !on_a_worker {
        "its task is not on a worker"
    } else {
        return None;
    };
    Some(format!("{} is {wrong}:\n{plan}", statement.name))
}

/// Every statement a distributed log sends is a router query: one task,
/// on a worker, with no step through the coordinator. The one-server
/// forms of the same statements, planned on the same distributed tables,
/// are caught: a Run's first claim refused by the planner as a prepared
/// statement (sent by its text, Citus pulls it to the coordinator, its
/// CTEs each a step of their own: what made four claimants of one Run each
/// answer epoch 1), the timeline read on the coordinator, and the sweep's
/// batch over roots on both workers.
#[test]
fn r6_every_statement_of_a_distributed_log_runs_on_its_root_runs_worker_alone() {
    let Some(citus) = Citus::shared() else {
        return;
    };
    runtime().block_on(async {
        let workers: Vec<u16> = citus.workers().iter().map(|w| w.port()).collect();
        let admin = citus.connect().await;
        let distributed = CitusSchema::new(citus, true).await;
        let log: PostgresLog<Payload> = distributed.connect().await.expect("open");
        assert!(log.is_distributed());
        let statements = log.statements();
        let names: Vec<&str> = statements.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, DISTRIBUTED);
        for (n, statement) in statements.iter().enumerate() {
            if let Some(wrong) = not_a_router_plan(&admin, n, statement, &workers).await {
                panic!("{wrong}");
            }
        }
        // The control: the one-server log's statements, on a schema of
        // local tables, aimed at the distributed one.
        let local = CitusSchema::new(citus, false).await;
        let one_server: PostgresLog<Payload> = local.connect().await.expect("open");
        assert!(!one_server.is_distributed());
        let mut caught = Vec::new();
        for (n, mut statement) in one_server.statements().into_iter().enumerate() {
            statement.text = statement.text.replace(
                &format!("\"{}\".", local.schema),
                &format!("\"{}\".", distributed.schema),
            );
            if let Some(wrong) = not_a_router_plan(&admin, 100 + n, &statement, &workers).await {
                caught.push(wrong.lines().next().unwrap_or_default().to_owned());
            }
        }
        assert_eq!(
            caught,
            [
                "InsertRun is refused by Citus's planner:",
                "AppendIfCurrent is refused by Citus's planner:",
                "LockRoots is not planned by Citus:",
                "LockRunsOf is refused by Citus's planner:",
                "ReadPausesOf is not one task:",
                "RetireRoots is not one task:",
                "Timeline is not planned by Citus:",
            ],
            "the one-server forms on distributed tables"
        );
    });
}

/// Distributes `schema`'s Run tables as `how` says: each `(table, column,
/// colocate_with)`; first drops the pause's trigger, as an operator
/// distributing by hand must (Citus distributes no table with a trigger).
async fn distribute_as(admin: &tokio_postgres::Client, schema: &str, how: &[(&str, &str, &str)]) {
    admin
        .batch_execute(&format!(
            "DROP TRIGGER {PAUSED_TRIGGER} ON {schema}.baton_handoff_pause"
        ))
        .await
        .expect("the trigger of schema version 5");
    for (table, column, with) in how {
        admin
            .execute(
                "SELECT create_distributed_table($1::text::regclass, $2, colocate_with => $3)",
                &[&format!("{schema}.{table}"), column, with],
            )
            .await
            .expect("create_distributed_table");
    }
}

/// A log opened on tables distributed in any way its fence cannot keep
/// refuses to open, permanently (twice alike), naming the table and what
/// is wrong; so does the operator's step on such tables. Nothing is
/// answered on them.
#[test]
fn r6_a_log_on_tables_distributed_otherwise_refuses_to_open_naming_what_is_wrong() {
    let Some(citus) = Citus::shared() else {
        return;
    };
    runtime().block_on(async {
        let admin = citus.connect().await;
        type Layout<'a> = &'a [(&'a str, &'a str, &'a str)];
        // Each layout, what the log says of it, and what the operator's
        // step says of it (`None`: it distributes what is left, colocated,
        // and the log then opens).
        let cases: [(Layout<'_>, &str, Option<&str>); 4] = [
            (
                &[
                    ("baton_root", "root_run_id", "default"),
                    ("baton_run", "run_id", "none"),
                    ("baton_handoff_pause", "root_run_id", "none"),
                ],
                "baton_run is distributed by run_id, not root_run_id",
                Some("baton_run is distributed by run_id, not root_run_id"),
            ),
            (
                &[
                    ("baton_root", "root_run_id", "default"),
                    ("baton_run", "root_run_id", "none"),
                    ("baton_handoff_pause", "root_run_id", "none"),
                ],
                "are not colocated",
                Some("are not colocated"),
            ),
            (
                &[("baton_root", "root_run_id", "default")],
                "baton_run is a local table of the coordinator",
                None,
            ),
            (
                &[
                    ("baton_run", "root_run_id", "default"),
                    ("baton_handoff_pause", "root_run_id", "default"),
                ],
                "baton_root is a local table of the coordinator",
                None,
            ),
        ];
        for (how, says, step_says) in cases {
            let store = CitusSchema::new(citus, false).await;
            distribute_as(&admin, &store.schema, how).await;
            for _ in 0..2 {
                match store.connect::<Payload>().await {
                    Err(LogError::NotALog { reason, .. }) => {
                        assert!(reason.contains(says), "{says:?} not in: {reason}")
                    }
                    other => panic!("{how:?}: opened, or another error: {other:?}"),
                }
            }
            let step = PostgresSchema::named(&store.schema)
                .unwrap()
                .distribute(&admin)
                .await;
            match step_says {
                Some(says) => assert!(
                    matches!(&step, Err(LogError::NotALog { reason, .. }) if reason.contains(says)),
                    "{how:?}: the operator's step answered {step:?}"
                ),
                None => {
                    step.expect("the operator's step distributes what is left");
                    let log: PostgresLog<Payload> = store.connect().await.expect("open");
                    assert!(log.is_distributed());
                }
            }
        }
        // The operator's step before the migration refuses, changing
        // nothing.
        let unmigrated = PostgresSchema::named(&Citus::fresh_schema())
            .unwrap()
            .distribute(&admin)
            .await;
        assert!(
            matches!(unmigrated, Err(LogError::UnknownSchema { found: 0, .. })),
            "{unmigrated:?}"
        );
        // The same tables distributed by the operator's step open, and
        // answer.
        let store = CitusSchema::new(citus, true).await;
        let log: PostgresLog<Payload> = store.connect().await.expect("open");
        assert!(matches!(
            log.claim_async("root", "run").await,
            Ok(Claim::Owner(_))
        ));
    });
}

/// The caller's-transaction forms on Citus send the same router
/// statements, in the caller's transaction on the coordinator: rolled
/// back, a claim and an append leave nothing and the next claim issues the
/// same epoch (R6); committed, the append is durable and the Run handed
/// off (R1, R4); a retirement of the root in a transaction rolled back
/// retires nothing, and committed retires it (R9).
#[test]
fn r6_r9_the_callers_transaction_forms_on_citus_commit_whole_or_leave_nothing() {
    let Some(citus) = Citus::shared() else {
        return;
    };
    runtime().block_on(async {
        let store = CitusSchema::new(citus, true).await;
        let log: PostgresLog<Payload> = store.connect().await.expect("open");
        let (mut client, connection) = tokio_postgres::connect(&store.url, tokio_postgres::NoTls)
            .await
            .expect("the caller's connection");
        tokio::spawn(connection);
        client
            .batch_execute(&format!("SET search_path = {}", store.schema))
            .await
            .unwrap();
        let (root, source, pause) = (
            crate::postgres_only::ROOT,
            crate::common::source(),
            crate::postgres_only::pause(),
        );
        let run = source.run_id.as_str();
        for commit in [false, true] {
            let tx = client.transaction().await.unwrap();
            assert_eq!(
                log.claim_in(&tx, root, run).await.unwrap(),
                Claim::Owner(Epoch::new(1))
            );
            assert_eq!(
                log.append_in(&tx, root, &source, Epoch::new(1), &pause)
                    .await
                    .unwrap(),
                Receipt::Written
            );
            if commit {
                tx.commit().await.unwrap();
            } else {
                tx.rollback().await.unwrap();
                let facts = log.facts_async(root, run).await.unwrap();
                assert_eq!(facts.epoch, Epoch::NONE, "R6: the claim rolled back");
                assert!(facts.pauses.is_empty(), "the append rolled back");
            }
        }
        let facts = log.facts_async(root, run).await.unwrap();
        assert_eq!(facts.pauses.len(), 1, "R4: the committed append is durable");
        assert!(matches!(
            log.claim_async(root, run).await.unwrap(),
            Claim::HandedOff(_)
        ));
        // The successor finishes, so the root's work ends; then its
        // retirement, rolled back and committed.
        let successor = &pause.intent.successor_run_id;
        let Claim::Owner(epoch) = log.claim_async(root, successor).await.unwrap() else {
            panic!("the successor's claim");
        };
        let next = Invocation {
            run_id: successor.clone(),
            invocation_id: pause.intent.successor_invocation_id.clone(),
            ..source.clone()
        };
        assert_eq!(
            log.finish_async(root, &next, epoch, &pause.execution)
                .await
                .unwrap(),
            Receipt::Written
        );
        for commit in [false, true] {
            let tx = client.transaction().await.unwrap();
            assert!(matches!(
                log.retire_in(&tx, root).await.unwrap(),
                Retirement::Retired { .. }
            ));
            if commit {
                tx.commit().await.unwrap();
            } else {
                tx.rollback().await.unwrap();
                assert!(!log.facts_async(root, run).await.unwrap().retired);
            }
        }
        assert!(log.facts_async(root, run).await.unwrap().retired, "R9");
    });
}
