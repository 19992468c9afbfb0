//! The canonical log's blocking trait, [`HandoffLog`].

use crate::facts::{HandoffPause, Invocation};

use super::answer::{Claim, Receipt, Retirement};
use super::epoch::Epoch;
use super::error::LogError;
use super::facts::RunFacts;

/// The canonical facts a runtime keeps about handoffs, and the only
/// authority on who may continue a Run (SPEC §6).
///
/// A **Run** here is the source Run `run_id` within the logical Run
/// `root_run_id`. Per Run the log keeps an owner [`Epoch`] (a fencing
/// token) and at most one final fate (a pause or a finish), and per
/// retired root Run a tombstone. Implementations apply the same pure rule
/// ([`claim_step`](crate::durable::claim_step), [`append_step`](crate::durable::append_step), [`finish_step`](crate::durable::finish_step), [`retire_step`](crate::durable::retire_step))
/// inside one transaction per operation,
/// as [`claim`](Self::claim)'s and [`append`](Self::append)'s docs say;
/// [`MemoryLog`](crate::durable::MemoryLog) and `SqliteLog` implement
/// it; they and `PostgresLog` (through
/// [`AsyncHandoffLog`](crate::durable::AsyncHandoffLog), its only form)
/// are checked by one shared contract suite (the test kit's `log_contract`, run by baton's
/// `tests/log_contract`):
///
/// - [`claim`](Self::claim) starts or takes over a Run: if a pause is
///   durable it answers [`Claim::HandedOff`], if a finish is
///   [`Claim::Finished`], under a retired root [`Claim::Retired`], and
///   changes nothing; else it
///   advances the epoch and answers [`Claim::Owner`], and every older
///   epoch is fenced from then on;
/// - [`append`](Self::append) writes only under the current epoch of an
///   open Run (no pause, no finish, its root Run not retired); it returns `Ok` only once the pause is
///   durable, and every `Err` except [`LogError::OutcomeUnknown`] means
///   nothing was written;
/// - appending the identical row again under the same epoch is an
///   idempotent `Ok(`[`Receipt::AlreadyDurable`]`)`, so a worker may retry
///   an append whose reply it did not get;
/// - [`finish`](Self::finish) is fenced exactly as an append, and
///   [`retire`](Self::retire) removes a root Run whose work has ended
///   (every Run of it final, and every successor its pauses name too);
/// - [`facts`](Self::facts) reads back exactly what was appended or
///   finished, whole, with the Run's epoch and whether its root is retired.
///
/// Failure model: workers may crash, or pause and go on later (zombies);
/// the owner may suspect a live worker; a reply may be lost. None of these
/// can make a Run both handed off and resumed, because the decision is the
/// log's, made in one transaction: the owner claims before anyone resumes.
///
/// # Implementing a store
///
/// A store holds, per Run, an epoch and at most one final fate (a pause or
/// a finish), and per retired root Run one tombstone; it runs each
/// operation as one transaction around the shared pure rule
/// ([`claim_step`](crate::durable::claim_step), [`append_step`](crate::durable::append_step), [`finish_step`](crate::durable::finish_step), [`retire_step`](crate::durable::retire_step)), so
/// it decides exactly as every other store (and as the model checker
/// proved). Here a map under one lock:
///
/// ```
/// use std::collections::{HashMap, HashSet};
/// use std::sync::Mutex;
///
/// use baton::durable::{
///     AppendStep, Appended, Claim, Epoch, Fate, Finished, HandoffLog, LogError, Receipt,
///     Retirement, RunFacts, RunField, append_step, check_append, check_finish, claim_step,
///     finish_step, retire_step,
/// };
/// use baton::facts::check_id;
/// use baton::{HandoffPause, Invocation};
///
/// /// Per Run: its epoch, its pause row, its finish row.
/// #[derive(Default)]
/// struct Run {
///     epoch: Epoch,
///     pause: Option<Appended<u32>>,
///     finished: Option<Finished<u32>>,
/// }
///
/// impl Run {
///     fn fate(&self) -> Fate<'_, u32> {
///         match (&self.pause, &self.finished) {
///             (Some(pause), _) => Fate::HandedOff(pause),
///             (None, Some(finished)) => Fate::Finished(finished),
///             (None, None) => Fate::Open,
///         }
///     }
/// }
///
/// /// The Runs by (root, run), and the retired roots.
/// #[derive(Default)]
/// struct MapLog(Mutex<(HashMap<(String, String), Run>, HashSet<String>)>);
///
/// fn run_ids(root_run_id: &str, run_id: &str) -> Result<(String, String), LogError> {
///     check_id(root_run_id)
///         .map_err(|error| LogError::InvalidRun { field: RunField::RootRunId, error })?;
///     check_id(run_id).map_err(|error| LogError::InvalidRun { field: RunField::RunId, error })?;
///     Ok((root_run_id.to_owned(), run_id.to_owned()))
/// }
///
/// impl HandoffLog<u32> for MapLog {
///     fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<u32>, LogError> {
///         let key = run_ids(root_run_id, run_id)?;
///         let mut held = self.0.lock().unwrap(); // the transaction
///         let step = claim_step(&facts_of(&held, &key))?;
///         if let Some(epoch) = step.write {
///             held.0.entry(key).or_default().epoch = epoch;
///         }
///         Ok(step.answer)
///     }
///
///     fn append(
///         &self,
///         root_run_id: &str,
///         source: &Invocation,
///         epoch: Epoch,
///         pause: &HandoffPause<u32>,
///     ) -> Result<Receipt, LogError> {
///         check_append(root_run_id, source, pause)?; // every id, then the intent
///         let key = (root_run_id.to_owned(), source.run_id.clone());
///         let mut held = self.0.lock().unwrap();
///         let (current, fate) = fate_of(&held, &key);
///         let step = append_step(root_run_id, current, fate, epoch, (source, pause))?;
///         if step == AppendStep::Write {
///             let row = Appended { source: source.clone(), pause: pause.clone() };
///             held.0.entry(key).or_default().pause = Some(row);
///         }
///         Ok(step.receipt())
///     }
///
///     fn finish(
///         &self,
///         root_run_id: &str,
///         source: &Invocation,
///         epoch: Epoch,
///         outcome: &u32,
///     ) -> Result<Receipt, LogError> {
///         check_finish(root_run_id, source)?;
///         let key = (root_run_id.to_owned(), source.run_id.clone());
///         let mut held = self.0.lock().unwrap();
///         let (current, fate) = fate_of(&held, &key);
///         let step = finish_step(root_run_id, current, fate, epoch, (source, outcome))?;
///         if step == AppendStep::Write {
///             let row = Finished { source: source.clone(), outcome: *outcome };
///             held.0.entry(key).or_default().finished = Some(row);
///         }
///         Ok(step.receipt())
///     }
///
///     fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
///         check_id(root_run_id)
///             .map_err(|error| LogError::InvalidRun { field: RunField::RootRunId, error })?;
///         let mut held = self.0.lock().unwrap();
///         let (runs, retired) = &mut *held;
///         let of_root = runs.iter().filter(|((root, _), _)| root == root_run_id);
///         let step = retire_step(
///             root_run_id,
///             retired.contains(root_run_id),
///             of_root.map(|((_, run_id), run)| (run_id.as_str(), run.fate())),
///         )?;
///         if let Retirement::Retired { .. } = step {
///             runs.retain(|(root, _), _| root != root_run_id);
///             retired.insert(root_run_id.to_owned());
///         }
///         Ok(step)
///     }
///
///     fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<u32>, LogError> {
///         let key = run_ids(root_run_id, run_id)?;
///         Ok(facts_of(&self.0.lock().unwrap(), &key))
///     }
/// }
///
/// type Held = (HashMap<(String, String), Run>, HashSet<String>);
///
/// fn fate_of<'a>(held: &'a Held, key: &(String, String)) -> (Epoch, Fate<'a, u32>) {
///     if held.1.contains(&key.0) {
///         return (Epoch::NONE, Fate::Retired);
///     }
///     held.0.get(key).map_or((Epoch::NONE, Fate::Open), |run| (run.epoch, run.fate()))
/// }
///
/// fn facts_of(held: &Held, key: &(String, String)) -> RunFacts<u32> {
///     let mut facts = RunFacts::empty(&key.0, &key.1);
///     facts.retired = held.1.contains(&key.0);
///     if let Some(run) = held.0.get(key) {
///         facts.epoch = run.epoch;
///         facts.pauses.extend(run.pause.clone());
///         facts.finished.clone_from(&run.finished);
///     }
///     facts
/// }
///
/// let log = MapLog::default();
/// let Claim::Owner(first) = log.claim("root", "run")? else { unreachable!() };
/// let Claim::Owner(second) = log.claim("root", "run")? else { unreachable!() };
/// assert!(second > first, "a takeover fences the older epoch");
/// assert!(matches!(log.claim("", "run"), Err(LogError::InvalidRun { .. })));
///
/// let source = Invocation {
///     session_id: "session".into(),
///     turn_id: "turn".into(),
///     run_id: "run".into(),
///     invocation_id: "invocation".into(),
/// };
/// assert!(matches!(log.retire("root"), Err(LogError::RunOpen { .. })), "R9: open Runs stay");
/// assert!(matches!(log.finish("root", &source, first, &7), Err(LogError::Fenced { .. })));
/// assert_eq!(log.finish("root", &source, second, &7)?, Receipt::Written);
/// assert_eq!(log.claim("root", "run")?, Claim::Finished(7), "R8: never resumed");
/// assert_eq!(log.retire("root")?, Retirement::Retired { runs: 1 });
/// assert_eq!(log.claim("root", "run")?, Claim::Retired, "R9: never resumed after retention");
/// # Ok::<(), LogError>(())
/// ```
pub trait HandoffLog<P> {
    /// Starts or takes over the Run `run_id` within `root_run_id`, in one
    /// transaction: [`Claim::HandedOff`] if a pause is durable,
    /// [`Claim::Finished`] if a finish is, [`Claim::Retired`] under a
    /// retired root Run (nothing is written: a final Run is never
    /// resumed), else the Run's epoch
    /// advances and [`Claim::Owner`] carries the new one. Give it to the
    /// worker that runs the Run now; every older epoch's append is refused
    /// with [`LogError::Fenced`] from now on.
    ///
    /// # Errors
    ///
    /// Nothing is written for: [`LogError::InvalidRun`] (an invalid id),
    /// [`LogError::Contradictory`] (facts that contradict each other),
    /// [`LogError::EpochsExhausted`] (the Run's epoch is already
    /// [`Epoch::LAST`]) and [`LogError::Corrupt`] (a stored row that does
    /// not decode). [`LogError::Unavailable`]: nothing written, claim again.
    /// [`LogError::OutcomeUnknown`]: the claim's outcome is unknown; claim
    /// again, which is always safe, its new epoch fencing the one that may
    /// have been issued.
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError>;

    /// Appends `pause`, which hands off the Run executing as `source` within
    /// the logical Run `root_run_id`, under the owner `epoch` its worker
    /// holds, and returns once it is durable.
    ///
    /// # Errors
    ///
    /// Nothing is written for: [`LogError::InvalidRun`] (an invalid id of
    /// the Run or of `source`), [`LogError::InvalidPause`] (an invalid
    /// intent), [`LogError::Encode`] (the pause does not encode),
    /// [`LogError::EpochNotIssued`] (an epoch no claim of this Run issued),
    /// [`LogError::Fenced`] (a newer epoch owns the Run: the worker must
    /// stop), [`LogError::AlreadyHandedOff`] (another pause is durable),
    /// [`LogError::AlreadyFinished`] (the Run finished),
    /// [`LogError::Retired`] (its root Run is retired) and
    /// [`LogError::Corrupt`] (a stored row that does not decode).
    /// [`LogError::Unavailable`]: nothing written, the same append may be
    /// sent again. [`LogError::OutcomeUnknown`] leaves the outcome unknown
    /// until the facts are read back, or the append is retried
    /// (idempotent).
    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError>;

    /// Records that the Run executing as `source` within `root_run_id`
    /// finished with `outcome`, under the owner `epoch` its worker holds,
    /// and returns once it is durable. Fenced exactly as
    /// [`append`](Self::append) ([`finish_step`](crate::durable::finish_step)): from then on a claim of
    /// the Run answers [`Claim::Finished`] and issues no epoch (R8).
    ///
    /// # Errors
    ///
    /// Nothing is written for: [`LogError::InvalidRun`] (an invalid id),
    /// [`LogError::Encode`] (the outcome does not encode),
    /// [`LogError::EpochNotIssued`], [`LogError::Fenced`] (a newer epoch
    /// owns the Run: stop), [`LogError::AlreadyHandedOff`] (a pause is
    /// durable), [`LogError::AlreadyFinished`] (another outcome is),
    /// [`LogError::Retired`] (the root Run is retired) and
    /// [`LogError::Corrupt`]. [`LogError::Unavailable`] and
    /// [`LogError::OutcomeUnknown`] as for [`append`](Self::append): the
    /// identical finish may be sent again.
    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError>;

    /// Retires the root Run `root_run_id` once its work has ended
    /// ([`retire_step`](crate::durable::retire_step): the log holds a Run of it, every Run of it is
    /// final, and so is every successor a durable pause of it names, so no
    /// handoff is lost to retention: G1, G5): removes their rows and keeps one tombstone for
    /// the root, in one transaction. From then on a claim of any Run under
    /// it answers [`Claim::Retired`] and every write is refused with
    /// [`LogError::Retired`]: no removed Run is resumed, and no epoch is
    /// issued again under a removed Run id (R9). The log then holds the
    /// open Runs and one tombstone per retired root (R10).
    ///
    /// # Errors
    ///
    /// Nothing is written for: [`LogError::InvalidRun`] (an invalid id),
    /// [`LogError::RunOpen`] (a Run of the root, or a successor one of its
    /// pauses names, is not final yet), [`LogError::NothingToRetire`] (the
    /// log holds no Run of the root) and
    /// [`LogError::Corrupt`]. [`LogError::Unavailable`]: nothing written,
    /// retire again. [`LogError::OutcomeUnknown`]: retire again (it is
    /// idempotent: [`Retirement::AlreadyRetired`]).
    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError>;

    /// Reads what the log holds about the Run `run_id` within `root_run_id`:
    /// its epoch, pauses and finish, and whether its root Run is retired,
    /// for [`reconcile`](crate::durable::reconcile()).
    ///
    /// # Errors
    ///
    /// [`LogError::InvalidRun`] for an invalid id; [`LogError::Corrupt`]
    /// for a stored row that does not decode; [`LogError::Unavailable`] (a
    /// read writes nothing, so its failures are never
    /// [`LogError::OutcomeUnknown`]).
    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError>;
}
