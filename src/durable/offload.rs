//! A thread a log owns for its blocking work, and the future that awaits
//! one job's answer — runtime-agnostic: nothing here needs tokio or any
//! other runtime.
//!
//! Why a thread of the log's own and not `tokio::task::spawn_blocking`:
//! `spawn_blocking` would make tokio a dependency of the library and panic
//! outside a tokio runtime; this works on any executor (and on none: the
//! future is woken from the thread through the crate's own waiter cell).
//! One thread per log suits SQLite, whose connection does one thing at a
//! time anyway; the jobs run in the order they were sent.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread;

use super::log::LogError;
use crate::sync::{Arc, mpsc};
use crate::waiter::WatchCell;

/// A unit of blocking work, with its reply inside.
type Job = Box<dyn FnOnce() + Send>;

/// Where a job's answer lands, and the future's waker with it.
type Slot<T> = WatchCell<Option<Result<T, LogError>>>;

/// The log's thread. Dropping the last sender (this, and those held by
/// pending futures) ends it once the jobs already sent are done; nobody
/// joins it, so dropping a log never blocks.
#[derive(Debug)]
pub(crate) struct Offload {
    jobs: mpsc::Sender<Job>,
}

impl Offload {
    /// Starts the thread, named `name`.
    pub(crate) fn start(name: &str) -> Result<Self, LogError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                while let Ok(job) = queue.recv() {
                    // A panic (a payload's `Serialize`, say) answers its
                    // future through the reply's drop and spares the
                    // thread, so later jobs still run.
                    let _ = catch_unwind(AssertUnwindSafe(job));
                }
            })
            .map_err(|error| LogError::Storage(Box::new(error)))?;
        Ok(Self { jobs })
    }

    /// A future that runs `job` on the thread and resolves with its answer.
    /// The job is sent at the first poll, not before; once sent it runs to
    /// the end whether or not the future is still there to hear it.
    pub(crate) fn run<T, F>(
        &self,
        job: F,
    ) -> impl Future<Output = Result<T, LogError>> + Send + use<T, F>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, LogError> + Send + 'static,
    {
        let jobs = self.jobs.clone();
        async move {
            let slot: Arc<Slot<T>> = Arc::new(WatchCell::new(None));
            let reply = Reply(Some(Arc::clone(&slot)));
            // If the thread is gone the job comes back in the error and is
            // dropped here, and its reply answers `Err`.
            let _ = jobs.send(Box::new(move || reply.send(job())));
            slot.wait_until(Option::take).await
        }
    }
}

/// The sending end of one job's answer. Dropped unsent (the job panicked,
/// or never ran), it answers [`LogError::Storage`], so no future waits for
/// an answer that cannot come.
struct Reply<T>(Option<Arc<Slot<T>>>);

impl<T> Reply<T> {
    fn send(mut self, answer: Result<T, LogError>) {
        if let Some(slot) = self.0.take() {
            put(&slot, answer);
        }
    }
}

impl<T> Drop for Reply<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            put(
                &slot,
                Err(LogError::Storage(
                    "the log's thread ended the operation without an answer (it panicked)".into(),
                )),
            );
        }
    }
}

fn put<T>(slot: &Slot<T>, answer: Result<T, LogError>) {
    slot.update(|held| {
        *held = Some(answer);
        (true, ())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::within::within;

    /// L1 for the log's thread: a job that panics answers its future with
    /// `Storage` (through the reply's drop) instead of leaving it pending,
    /// and the thread lives on for the next job.
    #[tokio::test]
    async fn a_job_that_panics_answers_storage_and_the_thread_runs_the_next_job() {
        let offload = Offload::start("baton-offload-test").unwrap();
        let panicked = offload.run(|| -> Result<u32, LogError> { panic!("a payload's Serialize") });
        let answer = within("L1: a panicked job's future resolves", panicked).await;
        assert!(
            matches!(&answer, Err(LogError::Storage(message)) if message.to_string().contains("panicked")),
            "{answer:?}"
        );
        let next = within("the thread runs the next job", offload.run(|| Ok(7))).await;
        assert_eq!(next.unwrap(), 7);
    }
}
