//! `MemoryLog`'s retention by age (SPEC §6.1, G5): one batch of a sweep
//! under the log's one lock.

use std::time::SystemTime;

use super::MemoryLog;
use crate::durable::sweep::{Sweep, SweepCursor, SweepStep, candidates, sweep_step};
use crate::sync::lock;

impl<P> MemoryLog<P> {
    /// One batch of retention by age (SPEC §6.1, G5): looks at up to
    /// `limit` root Runs that have a Run finished before `before`, oldest
    /// end first, after `from` (the previous batch's
    /// [`next`](Sweep::next); `None` to start), and retires each whose
    /// work ended before `before` ([`sweep_step`]), as
    /// [`retire`](crate::durable::HandoffLog::retire) would; the others are kept. Call it
    /// again with the answer's `next` until that is `None`. Under the log's
    /// one lock, so nothing races it.
    ///
    /// ```
    /// use std::time::SystemTime;
    ///
    /// use baton::durable::{Claim, HandoffLog, MemoryLog};
    /// use baton::Invocation;
    ///
    /// let log = MemoryLog::<u32>::new();
    /// let source = Invocation {
    ///     session_id: "s".into(), turn_id: "t".into(), run_id: "run".into(), invocation_id: "i".into(),
    /// };
    /// let Claim::Owner(epoch) = log.claim("root", "run")? else { unreachable!() };
    /// let _ = log.finish("root", &source, epoch, &7)?;
    /// let _ = log.claim("live-root", "run")?;
    /// let sweep = log.retire_ended(SystemTime::now(), None, 100);
    /// assert_eq!((sweep.retired, sweep.runs, sweep.kept, sweep.next), (1, 1, 0, None));
    /// assert_eq!(sweep.roots, ["root"]);
    /// assert_eq!(log.claim("root", "run")?, Claim::Retired);
    /// # Ok::<(), baton::durable::LogError>(())
    /// ```
    pub fn retire_ended(
        &self,
        before: SystemTime,
        from: Option<&SweepCursor>,
        limit: usize,
    ) -> Sweep {
        let mut held = lock(&self.held);
        let mut pairs: Vec<(SystemTime, String)> = held
            .runs
            .iter()
            .filter(|run| run.finished.is_some())
            .filter_map(|run| Some((run.ended_at?, run.root_run_id.clone())))
            .filter(|(ended_at, root)| {
                *ended_at < before
                    && from
                        .is_none_or(|from| (*ended_at, root) > (from.ended_at, &from.root_run_id))
            })
            .collect();
        pairs.sort();
        pairs.truncate(limit);
        let (roots, next) = candidates(pairs, limit);
        let mut sweep = Sweep {
            next,
            ..Sweep::default()
        };
        for root in roots {
            let latest = held
                .runs
                .iter()
                .filter(|run| run.root_run_id == root)
                .filter_map(|run| run.ended_at)
                .max();
            let retired = held.is_retired(&root);
            // Every fate `MemoryLog` holds is whole: the rule refuses
            // nothing but work that has not ended, which it keeps.
            let step = sweep_step(&root, retired, held.fates_of(&root), latest, before)
                .unwrap_or(SweepStep::Keep);
            if let SweepStep::Retire { .. } = step {
                held.remove(&root);
            }
            sweep.count(&root, step);
        }
        sweep
    }
}
