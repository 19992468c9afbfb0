//! The log on a Citus cluster (docs/SCALE.md): a coordinator and two
//! workers the fixture starts (`tests/common/citus.rs`), each store a
//! fresh schema migrated and then distributed by the operator's step
//! (`PostgresSchema::migrate`, then `PostgresSchema::distribute`), the log
//! on the coordinator as a role with only DML rights on it. The kit's whole contract runs on it
//! (`citus::contract::`), beside what only a distributed database has:
//! every statement a router plan, and the layouts a log refuses.

use std::time::SystemTime;

use baton::durable::{LogError, PostgresLog, PostgresOptions, PostgresSchema, Sweep, SweepCursor};
use baton_testkit::log_contract::{HoldsFloats, Payload, Store, SweepsEnded};

use crate::common::citus::Citus;
use crate::postgres_store::{as_dml_role, grant_dml_only};

/// A fresh schema on the shared Citus cluster, migrated and distributed.
pub struct CitusSchema {
    pub schema: String,
    pub url: String,
}

impl CitusSchema {
    /// Makes a fresh schema on `citus`, migrated and, with `distributed`,
    /// distributed by the operator's step.
    pub async fn new(citus: &Citus, distributed: bool) -> CitusSchema {
        let schema = Citus::fresh_schema();
        let admin = citus.connect().await;
        let named = PostgresSchema::named(&schema).unwrap();
        named
            .migrate(&admin)
            .await
            .expect("the operator's migration");
        if distributed {
            named
                .distribute(&admin)
                .await
                .expect("the operator's distribution");
        }
        // As on one server, the log runs as a role with only DML rights:
        // Citus propagates the role and the grants to the workers' shards.
        grant_dml_only(&admin, &schema).await;
        CitusSchema {
            url: as_dml_role(&citus.url()),
            schema,
        }
    }

    /// A log on the schema, with payloads `Q`.
    pub async fn connect<Q>(&self) -> Result<PostgresLog<Q>, LogError>
    where
        Q: PartialEq + Clone + serde::Serialize + serde::de::DeserializeOwned + Send + Sync,
    {
        let options = PostgresOptions::new().schema(PostgresSchema::named(&self.schema).unwrap());
        PostgresLog::connect_with(
            self.url.parse().expect("a connection string"),
            baton::durable::tokio_postgres::NoTls,
            options,
        )
        .await
    }
}

impl Store for CitusSchema {
    type Log = PostgresLog<Payload>;
    async fn open(&self) -> PostgresLog<Payload> {
        self.connect().await.expect("open the log on Citus")
    }
}

impl SweepsEnded for CitusSchema {
    async fn retire_ended(
        &self,
        log: &PostgresLog<Payload>,
        before: SystemTime,
        from: Option<&SweepCursor>,
        limit: usize,
    ) -> Result<Sweep, LogError> {
        log.retire_ended_async(before, from, limit).await
    }
}

impl HoldsFloats for CitusSchema {
    type FloatLog = PostgresLog<f64>;
    async fn float_log(&self) -> PostgresLog<f64> {
        self.connect().await.expect("open the float log on Citus")
    }
}

/// A store of the contract: a fresh distributed schema.
pub async fn distributed() -> Option<CitusSchema> {
    Some(CitusSchema::new(Citus::shared()?, true).await)
}

baton_testkit::log_contract!(contract, distributed;
    g2_what_a_store_acknowledges_reads_back_equal,
    g5_retention_by_age_retires_only_ended_roots_in_bounded_batches,
);
