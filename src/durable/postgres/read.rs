//! Reading what an operation's rule decides on: a Run's facts under
//! its row lock (or in one snapshot), a root's Runs under a retirement's
//! locks; and decoding their JSON.

use serde::de::DeserializeOwned;
use tokio_postgres::{Client, Row};

use crate::durable::contract::{Appended, Finished, RunFacts};
use crate::durable::row::{checked_row, corrupt, decoded_outcome};
use crate::facts::Invocation;

use super::failure::{Failure, column, epoch_of};
use super::flight::{flight2, flight3};
use super::op::Op;
use super::sql::{Conn, Layout, Param, Stmt, Which};

/// The reads of one Run, prepared: its row (locked, for a write), its
/// pause, its root Run's tombstone, and (for a write) the server's
/// timeline; on tables distributed by root Run, a claim first makes its
/// root Run's row ([`Layout::ByRootRun`]).
pub(super) struct RunRead<'a> {
    pub(super) ensure_root: Option<Stmt<'a>>,
    pub(super) run: Stmt<'a>,
    pub(super) pause: Stmt<'a>,
    pub(super) root: Stmt<'a>,
    pub(super) timeline: Option<Stmt<'a>>,
    /// Whether the timeline is read on the root Run's own server (its
    /// statement then takes the root Run).
    pub(super) timeline_by_root: bool,
}

/// What a [`RunRead`] is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// A read of the facts: the Run's row unlocked, in the read's
    /// `REPEATABLE READ` snapshot.
    Facts,
    /// A claim: the Run's row locked, the timeline read.
    Claim,
    /// An append or a finish: the Run's row locked.
    Write,
}

impl Reading {
    /// What `op` reads a Run for.
    pub(super) fn of<P>(op: &Op<'_, P>) -> Self {
        match op {
            Op::Facts { .. } => Reading::Facts,
            Op::Claim { .. } => Reading::Claim,
            _ => Reading::Write,
        }
    }
}

impl<'a> RunRead<'a> {
    /// The statements for `reading`.
    pub(super) async fn prepare(conn: &Conn<'a>, reading: Reading) -> Result<Self, Failure> {
        let run = if reading == Reading::Facts {
            Which::ReadEpoch
        } else {
            Which::LockRun
        };
        let by_root = conn.sql.layout == Layout::ByRootRun;
        Ok(Self {
            ensure_root: match by_root && reading == Reading::Claim {
                true => Some(conn.statement(Which::EnsureRoot).await?),
                false => None,
            },
            run: conn.statement(run).await?,
            pause: conn.statement(Which::ReadPause).await?,
            root: conn.statement(Which::ReadRoot).await?,
            timeline: match reading {
                Reading::Facts => None,
                Reading::Claim | Reading::Write => Some(conn.statement(Which::Timeline).await?),
            },
            timeline_by_root: by_root,
        })
    }

    /// The reads, in one flight, in this order (the Run's row lock first),
    /// all sent at the first poll; whether the Run has a row, its facts,
    /// and the server's timeline (`None` for a read of the facts).
    pub(super) async fn read<P: DeserializeOwned>(
        &self,
        client: &Client,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<(bool, RunFacts<P>, Option<i64>), Failure> {
        let key: [Param<'_>; 2] = [&root_run_id, &run_id];
        let root: [Param<'_>; 1] = [&root_run_id];
        let ensured = async {
            match &self.ensure_root {
                Some(ensure) => ensure.execute(client, &root).await.map(|_| ()),
                None => Ok(()),
            }
        };
        let timeline = async {
            let params: &[Param<'_>] = if self.timeline_by_root { &root } else { &[] };
            match &self.timeline {
                Some(timeline) => timeline.query_opt(client, params).await.map(Some),
                None => Ok(None),
            }
        };
        let ((ensured, run_row), (pause_row, root_row, timeline)) = flight2(
            flight2(ensured, self.run.query_opt(client, &key)),
            flight3(
                self.pause.query_opt(client, &key),
                self.root.query_opt(client, &root),
                timeline,
            ),
        )
        .await;
        ensured?;
        let (run_row, pause_row, root_row) = (run_row?, pause_row?, root_row?);
        let timeline = match timeline?.flatten() {
            Some(row) => Some(column::<i64>(&row, 0, run_id)?),
            None => None,
        };
        let mut facts = RunFacts::empty(root_run_id, run_id);
        if let Some(row) = &run_row {
            facts.epoch = epoch_of(row, 0, run_id)?;
            facts.finished = decode_finish(row, 1, run_id)?;
        }
        facts
            .pauses
            .extend(decode_pause(pause_row.as_ref(), 0, root_run_id, run_id)?);
        if let Some(row) = &root_row {
            facts.retired = column(row, 0, run_id)?;
        }
        Ok((run_row.is_some(), facts, timeline))
    }
}

/// What a retirement reads, prepared: the root Run's row (locked, made if
/// missing), then every Run of it (locked) with its finish, then their
/// pauses.
pub(super) struct RootRead<'a> {
    pub(super) root: Stmt<'a>,
    pub(super) runs: Stmt<'a>,
    pub(super) pauses: Stmt<'a>,
}

/// What a retirement read: whether the root Run is retired, its Runs' rows
/// and their pauses' rows.
pub(super) struct RootRows {
    pub(super) retired: bool,
    pub(super) runs: Vec<Row>,
    pub(super) pauses: Vec<Row>,
}

impl<'a> RootRead<'a> {
    pub(super) async fn prepare(conn: &Conn<'a>) -> Result<Self, Failure> {
        Ok(Self {
            root: conn.statement(Which::LockRoot).await?,
            runs: conn.statement(Which::LockRuns).await?,
            pauses: conn.statement(Which::ReadPauses).await?,
        })
    }

    /// The three reads, in one flight, in this order: once the root Run's
    /// row is locked no new Run of it is inserted, and once its Runs' rows
    /// are locked no pause or finish of them is written, so the pauses read
    /// last are all there are.
    pub(super) async fn read(
        &self,
        client: &Client,
        root_run_id: &str,
    ) -> Result<RootRows, Failure> {
        let root: [Param<'_>; 1] = [&root_run_id];
        let (root_row, runs, pauses) = flight3(
            self.root.query_opt(client, &root),
            self.runs.query(client, &root),
            self.pauses.query(client, &root),
        )
        .await;
        let retired = match root_row? {
            Some(row) => column(&row, 0, root_run_id)?,
            None => return Err(corrupt(root_run_id, "the root Run's row was not returned").into()),
        };
        Ok(RootRows {
            retired,
            runs: runs?,
            pauses: pauses?,
        })
    }
}

/// The pause row read for a Run (its seven columns from `at` on), decoded
/// and checked against its columns.
pub(super) fn decode_pause<P: DeserializeOwned>(
    row: Option<&Row>,
    at: usize,
    root_run_id: &str,
    run_id: &str,
) -> Result<Option<Appended<P>>, Failure> {
    let Some(row) = row else {
        return Ok(None);
    };
    let source = Invocation {
        session_id: column(row, at, run_id)?,
        turn_id: column(row, at + 1, run_id)?,
        run_id: run_id.to_owned(),
        invocation_id: column(row, at + 2, run_id)?,
    };
    let columns = [
        column(row, at + 3, run_id)?,
        column(row, at + 4, run_id)?,
        column(row, at + 5, run_id)?,
    ];
    let json: String = column(row, at + 6, run_id)?;
    Ok(Some(checked_row(root_run_id, source, columns, &json)?))
}

/// The finish kept on a Run's row (its four columns from `at` on: the
/// source's ids and the outcome's JSON text, all set or none), decoded.
pub(super) fn decode_finish<P: DeserializeOwned>(
    row: &Row,
    at: usize,
    run_id: &str,
) -> Result<Option<Finished<P>>, Failure> {
    let Some(json) = column::<Option<String>>(row, at + 3, run_id)? else {
        return Ok(None);
    };
    let id = |index: usize| -> Result<String, Failure> {
        column::<Option<String>>(row, index, run_id)?
            .ok_or_else(|| corrupt(run_id, "the Run's finish is not whole").into())
    };
    let source = Invocation {
        session_id: id(at)?,
        turn_id: id(at + 1)?,
        run_id: run_id.to_owned(),
        invocation_id: id(at + 2)?,
    };
    let outcome = decoded_outcome(run_id, &json)?;
    Ok(Some(Finished { source, outcome }))
}
