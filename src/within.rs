//! Bounded awaits for tests: a defect that leaves a future pending forever
//! fails its test within [`BOUND`], with a message naming the promise it
//! broke, instead of hanging the job until CI's time limit.
//!
//! One file, compiled three ways: baton's unit tests (`#[cfg(test)] mod
//! within` in `src/lib.rs`), baton's integration tests
//! (`tests/common/mod.rs` includes it by `#[path]`), and the test kit,
//! whose `src/within.rs` is a symlink to it (public there as
//! `baton_testkit::within`, the bound of its log contract). It uses std and
//! tokio only, never `crate::`, so it means the same in all three.
//!
//! A future polled once by hand (`poll_once`) cannot hang and needs no bound.

use std::future::{Future, IntoFuture, poll_fn};
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// How long a test waits for a promise before it calls the promise broken.
///
/// Every future the tests await resolves soon when the code is right: the
/// side that resolves it has already acted, or acts on the same runtime.
/// So the bound only has to sit far above scheduling noise (a debug build
/// on a shared 2-core machine, other test binaries running beside it),
/// while a hang still fails in seconds rather than at the job's time
/// limit.
pub const BOUND: Duration = Duration::from_secs(10);

/// Awaits `future` for at most [`BOUND`]. If it is still pending then,
/// panics with `promise`: the rule that says it resolves, with its SPEC id
/// where it has one, e.g. `"S5: the sealed pause reaches the waiting
/// requester"`.
///
/// The deadline is looked at before the future, on every poll: once the
/// bound has passed, the test fails without polling the future again. A
/// plain `tokio::time::timeout` polls the future first, so the timer's own
/// wake-up would let a future whose wake-up was lost (the change it waits
/// for is there, nobody woke it) resolve at the deadline, and the test
/// would pass, 10 s late, with the defect unseen.
///
/// Needs a tokio runtime with its timer: any `#[tokio::test]`; a runtime
/// built by hand needs `enable_time()`.
pub async fn within<F: IntoFuture>(promise: &str, future: F) -> F::Output {
    let mut future = pin!(future.into_future());
    let mut deadline = pin!(tokio::time::sleep(BOUND));
    poll_fn(|cx| {
        if deadline.as_mut().poll(cx).is_ready() {
            panic!("{promise}: still pending after {BOUND:?}");
        }
        future.as_mut().poll(cx)
    })
    .await
}

/// Polls `future` once with a waker that does nothing.
// Under `--cfg loom` the unit tests that poll by hand are compiled out.
#[cfg_attr(loom, allow(dead_code))]
pub fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}
