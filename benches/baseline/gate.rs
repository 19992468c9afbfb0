//! The original gate: one `watch` channel of the whole state; tickets are
//! the `Arc` of the intent, compared by pointer.

use std::future::Future;
use std::sync::Arc;

use baton::{HandoffIntent, Invocation};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The original pause: it owns its copy of the intent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pause {
    pub intent: HandoffIntent,
    pub execution: (),
}

#[derive(Clone, Debug)]
enum State {
    Running,
    Requested(Arc<HandoffIntent>),
    Held {
        pause: Pause,
        cancellation: CancellationToken,
        ticket: Arc<HandoffIntent>,
    },
    Committed(Pause),
    Sealed(Pause),
    Closed,
}

/// The original gate (cloneable; no drop-closes).
#[derive(Clone)]
pub struct Gate {
    state: watch::Sender<State>,
    source: Arc<Invocation>,
    root_run_id: String,
}

/// A reservation; dropping it releases.
pub struct Reservation {
    gate: Gate,
    ticket: Arc<HandoffIntent>,
}

/// A held handoff.
pub struct Held {
    reservation: Reservation,
    pause: Pause,
}

/// A committed handoff waiting for its seal.
pub struct PendingSeal {
    gate: Gate,
    pause: Pause,
}

impl Gate {
    pub fn new(source: Invocation, root_run_id: String) -> Self {
        Self {
            state: watch::channel(State::Running).0,
            source: Arc::new(source),
            root_run_id,
        }
    }

    pub fn reserve(&self, intent: HandoffIntent) -> Option<Reservation> {
        intent.validate(&self.source).ok()?;
        if intent.root_run_id != self.root_run_id {
            return None;
        }
        let ticket = Arc::new(intent);
        self.state
            .send_if_modified(|state| {
                if !matches!(state, State::Running) {
                    return false;
                }
                *state = State::Requested(ticket.clone());
                true
            })
            .then(|| Reservation {
                gate: self.clone(),
                ticket,
            })
    }

    pub async fn boundary<F: Future<Output = Option<Pause>>>(
        &self,
        cancellation: &CancellationToken,
        preflight: impl FnOnce(HandoffIntent) -> F,
    ) -> Option<Pause> {
        let mut changes = self.state.subscribe();
        let ticket = match &*changes.borrow_and_update() {
            State::Requested(ticket) => ticket.clone(),
            _ => return None,
        };
        let pause = preflight(ticket.as_ref().clone()).await;
        let Some(pause) = pause.filter(|p| p.intent == *ticket && !cancellation.is_cancelled())
        else {
            self.cancel(&ticket);
            return None;
        };
        self.state.send_if_modified(|state| {
            let State::Requested(intent) = state else {
                return false;
            };
            if !Arc::ptr_eq(intent, &ticket) {
                return false;
            }
            *state = State::Held {
                pause,
                cancellation: cancellation.clone(),
                ticket: intent.clone(),
            };
            true
        });
        loop {
            let state = changes.borrow_and_update().clone();
            match state {
                State::Committed(pause) if pause.intent == *ticket => return Some(pause),
                State::Held {
                    ticket: current, ..
                } if Arc::ptr_eq(&current, &ticket) => {}
                _ => return None,
            }
            tokio::select! {
                _ = changes.changed() => {},
                _ = cancellation.cancelled() => self.cancel(&ticket),
            }
        }
    }

    fn cancel(&self, ticket: &Arc<HandoffIntent>) {
        self.state.send_if_modified(|state| {
            let matches = match state {
                State::Requested(current)
                | State::Held {
                    ticket: current, ..
                } => Arc::ptr_eq(current, ticket),
                _ => false,
            };
            if matches {
                *state = State::Running;
            }
            matches
        });
    }

    pub fn sealed(&self, pause: &Pause) {
        self.state.send_if_modified(|state| {
            if !matches!(state, State::Committed(expected) if expected == pause) {
                return false;
            }
            *state = State::Sealed(pause.clone());
            true
        });
    }

    pub fn close(&self) {
        self.state.send_if_modified(|state| {
            if matches!(state, State::Sealed(_) | State::Closed) {
                return false;
            }
            *state = State::Closed;
            true
        });
    }

    pub fn is_running(&self) -> bool {
        matches!(*self.state.borrow(), State::Running)
    }

    pub fn is_sealed(&self) -> bool {
        matches!(*self.state.borrow(), State::Sealed(_))
    }
}

impl Reservation {
    pub async fn ready(self) -> Option<Held> {
        let mut changes = self.gate.state.subscribe();
        loop {
            let state = changes.borrow_and_update().clone();
            match state {
                State::Held { pause, ticket, .. } if Arc::ptr_eq(&ticket, &self.ticket) => {
                    return Some(Held {
                        reservation: self,
                        pause,
                    });
                }
                State::Requested(ticket) if Arc::ptr_eq(&ticket, &self.ticket) => {}
                _ => return None,
            }
            changes.changed().await.ok()?;
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.gate.cancel(&self.ticket);
    }
}

impl Held {
    pub fn commit(self) -> Option<PendingSeal> {
        let gate = &self.reservation.gate;
        gate.state
            .send_if_modified(|state| {
                if !matches!(state, State::Held { ticket, cancellation, .. }
                    if Arc::ptr_eq(ticket, &self.reservation.ticket) && !cancellation.is_cancelled())
                {
                    return false;
                }
                *state = State::Committed(self.pause.clone());
                true
            })
            .then(|| PendingSeal { gate: gate.clone(), pause: self.pause.clone() })
    }
}

impl PendingSeal {
    pub async fn wait(self) -> Option<Pause> {
        let mut changes = self.gate.state.subscribe();
        loop {
            let state = changes.borrow_and_update().clone();
            match state {
                State::Sealed(pause) if pause == self.pause => return Some(pause),
                State::Committed(pause) if pause == self.pause => {}
                _ => return None,
            }
            changes.changed().await.ok()?;
        }
    }
}
