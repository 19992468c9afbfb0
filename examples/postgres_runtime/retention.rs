//! The supervisor's last steps: each chain read back from the log (facts
//! only: a read fences nobody), then retention by age, which retires every
//! root whose work ended and keeps one tombstone each.

use std::collections::BTreeSet;
use std::fmt;
use std::time::SystemTime;

use baton::durable::{AsyncHandoffLog, Claim, Decision, reconcile};

use super::protocol::{Line, Progress, RunId, chain_total};
use super::{Failure, Log};

/// What the chains came to, as the log holds them.
#[derive(Debug, Default)]
pub struct Chains {
    /// Durable pauses along the chains.
    pub handoffs: usize,
    /// Finished Runs: one per chain, its last.
    pub finishes: usize,
}

/// Walks each root's chain from its first Run through the durable pauses
/// to its finish, printing a `chain` line per root; a chain whose total is
/// not that of every step done once, in order, is an error.
pub async fn read_chains(log: &Log, roots: &[String]) -> Result<Chains, Failure> {
    let mut chains = Chains::default();
    for root in roots {
        let mut run = RunId::first(root);
        loop {
            let facts = log.facts_async(root, &run.to_string()).await?;
            match reconcile(&facts)? {
                Decision::HandedOff(pause) => {
                    chains.handoffs += 1;
                    run = RunId::parse(&pause.intent.successor_run_id)
                        .ok_or("a pause naming a Run of another shape")?;
                }
                Decision::Finished(Progress::Done { steps, total }) => {
                    if total != chain_total() {
                        return Err(
                            format!("{root} ended with {total}, not {}", chain_total()).into()
                        );
                    }
                    chains.finishes += 1;
                    Line::new("supervisor", "chain")
                        .with("root", root)
                        .with("runs", run.index + 1)
                        .with("finished", &run)
                        .with("steps", steps)
                        .with("total", total)
                        .print();
                    break;
                }
                other => return Err(format!("{run} has not ended: {other:?}").into()),
            }
        }
    }
    Ok(chains)
}

/// What retention did.
#[derive(Debug, Default)]
pub struct Retired {
    /// Batches of the sweep.
    pub batches: usize,
    /// This run's roots the sweep retired.
    pub roots: usize,
    /// The Runs the sweep removed (this run's and any earlier one's).
    pub runs: usize,
    /// This run's roots a claim answered `Retired` for afterwards.
    pub answer_retired: usize,
}

impl fmt::Display for Retired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "retention retired {} roots ({} Runs) in {} batches; a claim answers Retired for {}",
            self.roots, self.runs, self.batches, self.answer_retired
        )
    }
}

/// Retention by age: sweeps every root whose work ended before now, in
/// batches, then claims each of `roots`' first Run, which must answer
/// `Retired` (printing a `retired` line per root).
pub async fn retire_ended(log: &Log, roots: &[String]) -> Result<Retired, Failure> {
    let ours: BTreeSet<&str> = roots.iter().map(String::as_str).collect();
    let before = SystemTime::now();
    let mut retired = Retired::default();
    let mut from = None;
    loop {
        let sweep = log.retire_ended_async(before, from.as_ref(), 100).await?;
        retired.batches += 1;
        retired.runs += sweep.runs;
        for root in sweep
            .roots
            .iter()
            .filter(|root| ours.contains(root.as_str()))
        {
            retired.roots += 1;
            Line::new("supervisor", "retired")
                .with("root", root)
                .print();
        }
        match sweep.next {
            Some(next) => from = Some(next),
            None => break,
        }
    }
    for root in roots {
        let first = RunId::first(root).to_string();
        match log.claim_async(root, &first).await? {
            Claim::Retired => retired.answer_retired += 1,
            other => println!("retention kept {root}: {first} answers {other:?}"),
        }
    }
    Ok(retired)
}
