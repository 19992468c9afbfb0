//! The original cancel signal: a `watch<bool>` and a mutex for the phase.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

#[derive(Clone)]
pub struct CancelSignal {
    tx: Arc<watch::Sender<bool>>,
    phase: Arc<Mutex<Option<&'static str>>>,
}

impl CancelSignal {
    pub fn new() -> Self {
        Self {
            tx: Arc::new(watch::channel(false).0),
            phase: Arc::new(Mutex::new(None)),
        }
    }

    pub fn note_phase(&self, phase: &'static str) {
        self.phase.lock().unwrap().get_or_insert(phase);
    }

    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }

    pub fn is_canceled(&self) -> bool {
        *self.tx.borrow()
    }

    pub async fn canceled(&self) {
        let mut rx = self.tx.subscribe();
        loop {
            if *rx.borrow_and_update() {
                return;
            }
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
