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

use crate::durable::contract::LogError;
use crate::sync::{Arc, mpsc};
use crate::waiter::WatchCell;

/// A unit of blocking work, with its reply inside.
type Job = Box<dyn FnOnce() + Send>;

/// Where a job's answer lands, and the future's waker with it.
type Slot<T> = WatchCell<Option<Result<T, LogError>>>;

/// What the thread receives: a job, or the word to end.
enum Message {
    Run(Job),
    /// Sent by [`Offload::close`]: after the jobs sent before it.
    Stop,
}

/// The log's thread. Dropping the last sender (this, and those held by
/// pending futures) ends it once the jobs already sent are done; dropping
/// never blocks, and nobody joins it. [`close`](Self::close) ends it and
/// waits for it.
#[derive(Debug)]
pub(crate) struct Offload {
    jobs: mpsc::Sender<Message>,
    /// Only ever joined, by [`close`](Self::close), which consumes it: no
    /// state a panic could leave half-changed is reachable through it, so
    /// the log stays `UnwindSafe` and `RefUnwindSafe` (a `JoinHandle`'s
    /// result cell is neither).
    thread: AssertUnwindSafe<thread::JoinHandle<()>>,
}

impl Offload {
    /// Starts the thread, named `name`.
    pub(crate) fn start(name: &str) -> Result<Self, LogError> {
        let (jobs, queue) = mpsc::channel::<Message>();
        let thread = thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                while let Ok(Message::Run(job)) = queue.recv() {
                    // A panic (a payload's `Serialize`, say) answers its
                    // future through the reply's drop and spares the
                    // thread, so later jobs still run.
                    let _ = catch_unwind(AssertUnwindSafe(job));
                }
            })
            .map_err(|error| LogError::Unavailable(Box::new(error)))?;
        Ok(Self {
            jobs,
            thread: AssertUnwindSafe(thread),
        })
    }

    /// Ends the thread once the jobs already sent are done, and waits until
    /// it has exited. A job sent later (by a future polled for the first
    /// time after this) is not run: its future answers
    /// [`LogError::Unavailable`].
    pub(crate) fn close(self) {
        // The thread holds the receiver until it exits: the send cannot
        // fail while it runs, and if it has exited there is nothing to end.
        let _ = self.jobs.send(Message::Stop);
        // Its jobs' panics are caught inside it: the thread itself does
        // not panic, and a join error would have nothing to report.
        let _ = self.thread.0.join();
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
            let reply = Reply {
                slot: Some(Arc::clone(&slot)),
                started: false,
            };
            // If the thread is gone the job comes back in the error and is
            // dropped here, never started, and its reply answers
            // `Unavailable`.
            let _ = jobs.send(Message::Run(Box::new(move || {
                let mut reply = reply;
                reply.started = true;
                reply.send(job());
            })));
            slot.wait_until(Option::take).await
        }
    }
}

/// The sending end of one job's answer. Dropped unsent, it answers an
/// error, so no future waits for an answer that cannot come: a job that
/// never started (the log's thread was gone) [`LogError::Unavailable`], as
/// nothing was written; a job that started and panicked
/// [`LogError::OutcomeUnknown`], as it may have committed before.
struct Reply<T> {
    slot: Option<Arc<Slot<T>>>,
    started: bool,
}

impl<T> Reply<T> {
    fn send(mut self, answer: Result<T, LogError>) {
        if let Some(slot) = self.slot.take() {
            put(&slot, answer);
        }
    }
}

impl<T> Drop for Reply<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let error = if self.started {
                LogError::OutcomeUnknown(
                    "the log's thread panicked in the operation, which may have committed".into(),
                )
            } else {
                LogError::Unavailable(
                    "the log's thread was gone (the log was closed) before the operation was sent"
                        .into(),
                )
            };
            put(&slot, Err(error));
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
    use crate::within::{poll_once, within};

    /// R5 for the log's thread: a job that panics answers its future with
    /// `OutcomeUnknown` (through the reply's drop: it may have committed)
    /// instead of leaving it pending, and the thread lives on for the next
    /// job.
    #[tokio::test]
    async fn a_job_that_panics_answers_outcome_unknown_and_the_thread_runs_the_next_job() {
        let offload = Offload::start("baton-offload-test").unwrap();
        let panicked = offload.run(|| -> Result<u32, LogError> { panic!("a payload's Serialize") });
        let answer = within("R5: a panicked job's future resolves", panicked).await;
        assert!(
            matches!(&answer, Err(LogError::OutcomeUnknown(message)) if message.to_string().contains("panicked")),
            "{answer:?}"
        );
        let next = within("the thread runs the next job", offload.run(|| Ok(7))).await;
        assert_eq!(next.unwrap(), 7);
    }

    /// `close` runs the jobs already sent, then ends the thread and waits
    /// for it; a future first polled after it answers `Unavailable` (R5: it
    /// never waits for a thread that is gone; the job never ran, so
    /// nothing was written).
    #[tokio::test]
    async fn close_runs_the_jobs_sent_then_ends_the_thread_and_a_later_job_answers_unavailable() {
        let offload = Offload::start("baton-offload-test").unwrap();
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sent = {
            let ran = Arc::clone(&ran);
            offload.run(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                ran.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(1)
            })
        };
        let mut sent = Box::pin(sent);
        // Polled once: sent to the thread, which is now busy with it.
        assert!(poll_once(sent.as_mut()).is_pending());
        let later = offload.run(|| Ok(2));
        offload.close();
        assert!(
            ran.load(std::sync::atomic::Ordering::SeqCst),
            "close returned before the job sent first had run"
        );
        assert_eq!(within("the sent job's answer", sent).await.unwrap(), 1);
        let answer = within("R5: a job after close answers", later).await;
        assert!(
            matches!(answer, Err(LogError::Unavailable(_))),
            "{answer:?}"
        );
    }
}
