//! Pipelining: several requests sent in one flight, answered in one
//! round trip.

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::Poll;

/// Polls `a` then `b` until both are done. tokio-postgres sends a request
/// when its future is first polled, so the two go to the server in one
/// flight, in this order, and their answers come back in one round trip
/// (pipelining).
pub(super) async fn flight2<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut first, mut second) = (None, None);
    std::future::poll_fn(|cx| {
        if first.is_none() {
            if let Poll::Ready(done) = a.as_mut().poll(cx) {
                first = Some(done);
            }
        }
        if second.is_none() {
            if let Poll::Ready(done) = b.as_mut().poll(cx) {
                second = Some(done);
            }
        }
        match (first.take(), second.take()) {
            (Some(a), Some(b)) => Poll::Ready((a, b)),
            (a, b) => {
                (first, second) = (a, b);
                Poll::Pending
            }
        }
    })
    .await
}

/// [`flight2`] of three.
pub(super) async fn flight3<A: Future, B: Future, C: Future>(
    a: A,
    b: B,
    c: C,
) -> (A::Output, B::Output, C::Output) {
    let ((a, b), c) = flight2(flight2(a, b), c).await;
    (a, b, c)
}

/// A request of a flight of any length, boxed.
pub(super) type Request<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`flight2`] of any number: polls each of `requests` in their order
/// until all are done, so they go to the server in one flight, in this
/// order; their answers in the same order.
pub(super) async fn flight_all<T>(mut requests: Vec<Request<'_, T>>) -> Vec<T> {
    let mut answers: Vec<Option<T>> = requests.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (request, answer) in requests.iter_mut().zip(answers.iter_mut()) {
            if answer.is_none() {
                match request.as_mut().poll(cx) {
                    Poll::Ready(done) => *answer = Some(done),
                    Poll::Pending => all = false,
                }
            }
        }
        if all { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    answers.into_iter().flatten().collect()
}
