//! The cancel signal (SPEC §3): a one-way latch that remembers the phase it
//! interrupted, and the [`Cancellation`] interface the gate's boundary reads.

use std::future::Future;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::sync::{Arc, AtomicU8, Ordering};
use crate::waiter::WatchCell;

/// What a task was doing when it was canceled; serialised with the original
/// runtime's wire words (`queued`, `turn`, …, `done_check`).
///
/// `#[non_exhaustive]`: a runtime may come to note more phases.
/// [`Phase::ALL`] lists the phases of this version.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Phase {
    /// Waiting to start.
    Queued,
    /// Inside a turn, nothing more specific noted (the default).
    #[default]
    Turn,
    /// Waiting on model inference.
    Inference,
    /// Waiting for user input.
    Input,
    /// Waiting on a delegated child task.
    Delegation,
    /// Calling a team member.
    MemberCall,
    /// Inside the harness.
    Harness,
    /// Planning.
    Plan,
    /// Waiting on background work.
    BackgroundWait,
    /// Running a shell command.
    Shell,
    /// Checking whether the task is done.
    DoneCheck,
}

impl Phase {
    /// Every phase, in wire order.
    pub const ALL: [Phase; 11] = [
        Self::Queued,
        Self::Turn,
        Self::Inference,
        Self::Input,
        Self::Delegation,
        Self::MemberCall,
        Self::Harness,
        Self::Plan,
        Self::BackgroundWait,
        Self::Shell,
        Self::DoneCheck,
    ];

    /// The wire word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Turn => "turn",
            Self::Inference => "inference",
            Self::Input => "input",
            Self::Delegation => "delegation",
            Self::MemberCall => "member_call",
            Self::Harness => "harness",
            Self::Plan => "plan",
            Self::BackgroundWait => "background_wait",
            Self::Shell => "shell",
            Self::DoneCheck => "done_check",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text is not one of [`Phase`]'s wire words.
///
/// Made by [`Phase::from_str`](std::str::FromStr::from_str) only; the text
/// is read with [`text`](Self::text).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown phase {0:?}")]
pub struct UnknownPhase(String);

impl UnknownPhase {
    /// The text that is not a phase's wire word.
    pub fn text(&self) -> &str {
        &self.0
    }
}

impl FromStr for Phase {
    type Err = UnknownPhase;

    fn from_str(text: &str) -> Result<Self, UnknownPhase> {
        Self::ALL
            .into_iter()
            .find(|phase| phase.as_str() == text)
            .ok_or_else(|| UnknownPhase(text.to_owned()))
    }
}

/// A cancellation the gate's `boundary` can read and wait on.
///
/// Implemented for [`CancelSignal`] and, with the `tokio-util` feature, for
/// `tokio_util::sync::CancellationToken`. The gate keeps a clone while a
/// handoff is held, so that `commit` reads the bit at the moment it commits
/// (S3).
///
/// # Under loom
///
/// Built with `--cfg loom`, [`CancelSignal`] runs on loom's primitives, so
/// a loom model explores every interleaving of its fire with the gate.
/// `CancellationToken` does not (its atomics and locks are tokio's, which
/// loom cannot see): a model using it would pass without exploring one
/// cancel interleaving. So under `--cfg loom` it is not a `Cancellation`,
/// and passing one fails to compile, with a message naming `CancelSignal`.
#[cfg_attr(
    loom,
    diagnostic::on_unimplemented(
        message = "`{Self}` is not a baton `Cancellation` under `--cfg loom`: loom cannot interleave it, so a model using it would pass without exploring a cancel",
        label = "not modelled by loom",
        note = "use `baton::CancelSignal` in loom models: under `--cfg loom` it is built on loom's primitives"
    )
)]
pub trait Cancellation: Clone + Send + Sync + 'static {
    /// Whether cancellation has fired.
    ///
    /// Called **under the gate's lock** as a preflight's pause is fed to the
    /// gate, and by a commit (which reads it in the same step it commits,
    /// S3): it must not block, and must not call back into the gate.
    #[doc(alias = "is_cancelled")]
    fn is_canceled(&self) -> bool;

    /// Resolves once cancellation has fired (at once if it already has).
    #[doc(alias = "cancelled")]
    fn canceled(&self) -> impl Future<Output = ()> + Send + '_;
}

#[derive(Debug)]
struct Latch {
    /// Whether a waiter has set [`WAITED`] already (only the first does).
    announced: bool,
    phase: Option<Phase>,
}

/// [`Shared::bits`]: the signal has fired.
const FIRED: u8 = 1;
/// [`Shared::bits`]: a `canceled()` future has had to wait. Never cleared.
const WAITED: u8 = 2;

/// A one-way cancellation latch that remembers the phase it interrupted.
///
/// Clones share the latch. Once [`cancel`](Self::cancel) is called it stays
/// canceled, and every [`canceled`](Self::canceled) future resolves.
///
/// ```
/// use baton::{CancelSignal, Phase};
///
/// let signal = CancelSignal::new();
/// signal.note_phase(Phase::Shell);
/// signal.note_phase(Phase::Plan); // the first phase noted wins
/// signal.clone().cancel();
/// assert!(signal.is_canceled());
/// assert_eq!(signal.phase(), Phase::Shell);
/// ```
#[derive(Clone, Debug)]
pub struct CancelSignal {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// [`FIRED`] and [`WAITED`]. `cancel` sets `FIRED` and a waiter about
    /// to wait sets `WAITED`, each with one read-modify-write, so exactly
    /// one of them sees the other's bit: either the waiter sees `FIRED` and
    /// does not wait, or `cancel` sees `WAITED` and wakes it under the lock.
    /// A `cancel` on a signal no waiter ever announced itself on takes no
    /// lock at all (but for the `tracing` feature's read of the phase).
    ///
    /// `SeqCst`, not acquire/release: a read that comes after `cancel()`
    /// returned, in another thread with no synchronisation between them,
    /// must see it, as a read under a lock would (S3: `commit` reads the
    /// bit under the gate's lock and must not commit after a finished
    /// cancel). With acquire/release loom finds that stale read (the
    /// linearizability scenes of `loom_gate_races.rs`). On x86 a `SeqCst`
    /// load is a plain load.
    ///
    /// Unlike the gate's copy of its kind, `is_canceled` stays a plain load
    /// under loom, and loom still tries every order that can change what
    /// it answers. loom (0.7) never tries a load after a write made by a
    /// thread that loaded the atomic just before
    /// (`loom-tests/tests/loom_tool_limits.rs`). Here such writes are the
    /// `WAITED` a waiter sets after reading `FIRED`, and a `cancel()` made
    /// after reading the signal, which the loom scenes do only before they
    /// start the threads that race it. So the orders loom skips are ones in
    /// which a plain load would see `WAITED`, which `is_canceled` masks
    /// out; `cancel()` reads `WAITED` with a read-modify-write, which loom
    /// orders both ways. Read-modify-write loads (as `sync::Mirror`'s) would try
    /// those orders too, at twice the suite's time (measured: 8.7 → 16.3
    /// minutes, `requester ∥ worker` 5.0 M → 14.4 M executions) and with
    /// the same outcomes (`commit ∥ fire ∥ boundary` commits and refuses
    /// either way). A change that makes a thread read `FIRED` and then
    /// write it in a raced scene must revisit this.
    bits: AtomicU8,
    latch: WatchCell<Latch>,
}

impl CancelSignal {
    /// A signal that has not fired, with no phase noted.
    pub fn new() -> Self {
        let shared = Arc::new(Shared {
            bits: AtomicU8::new(0),
            latch: WatchCell::new(Latch {
                announced: false,
                phase: None,
            }),
        });
        // Under loom only, the clear bits again as a `SeqCst` store. The C++
        // model (Rust's) already forbids a `SeqCst` load to return the
        // initial value once `cancel`'s `SeqCst` write precedes it: the
        // initial value happens before that write. Loom treats it as a
        // non-`SeqCst` store and would let the load read it; a real build
        // skips the fence this store costs.
        #[cfg(loom)]
        shared.bits.store(0, Ordering::SeqCst);
        Self { shared }
    }

    /// Fires the signal. Idempotent; wakes every waiter the first time.
    /// Once it returns, [`is_canceled`](Self::is_canceled) answers `true`
    /// and every `canceled()` future resolves at its next poll.
    ///
    /// With the `tracing` feature the first fire is a `fired` event
    /// (target `baton::cancel`, `DEBUG`) with the phase noted, emitted
    /// after the latch's lock is released.
    pub fn cancel(&self) {
        let before = self.shared.bits.fetch_or(FIRED, Ordering::SeqCst);
        // Only the first cancel, and only if a waiter announced itself,
        // has anyone to wake: a waiter still to come sees `FIRED`.
        if before == WAITED {
            // Nothing in the latch changes: waiters read `FIRED` when woken.
            self.shared.latch.update(|_| (true, ()));
        }
        // The first fire (nothing at all without the feature).
        crate::trace::cancel_fired!(before & FIRED == 0, self.phase());
    }

    /// Whether the signal has fired. One atomic load, no lock.
    #[inline]
    pub fn is_canceled(&self) -> bool {
        self.shared.bits.load(Ordering::SeqCst) & FIRED != 0
    }

    /// Resolves once the signal has fired; at once if it already has.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future only frees its waker slot: the signal is
    /// unchanged, and a later `canceled()` resolves as this one would.
    pub async fn canceled(&self) {
        if self.is_canceled() {
            return;
        }
        self.shared
            .latch
            .wait_until(|latch| {
                if latch.announced {
                    return self.is_canceled().then_some(());
                }
                // Under the lock, so that a `cancel` that sees `WAITED`
                // wakes this future: its `update` waits for the lock this
                // poll holds while it registers.
                latch.announced = true;
                let before = self.shared.bits.fetch_or(WAITED, Ordering::SeqCst);
                (before & FIRED != 0).then_some(())
            })
            .await
    }

    /// Notes what the task is doing. The first phase noted wins.
    pub fn note_phase(&self, phase: Phase) {
        self.shared.latch.update(|latch| {
            if latch.phase.is_none() {
                latch.phase = Some(phase);
            }
            // A phase is not something waiters wait for: no wake-up.
            (false, ())
        });
    }

    /// The first phase noted, or [`Phase::Turn`] if none was.
    pub fn phase(&self) -> Phase {
        self.shared
            .latch
            .read(|latch| latch.phase.unwrap_or_default())
    }

    /// The number of `canceled()` futures currently waiting (diagnostics).
    pub fn waiter_count(&self) -> usize {
        self.shared.latch.waiter_count()
    }
}

impl Default for CancelSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl Cancellation for CancelSignal {
    fn is_canceled(&self) -> bool {
        CancelSignal::is_canceled(self)
    }

    fn canceled(&self) -> impl Future<Output = ()> + Send + '_ {
        CancelSignal::canceled(self)
    }
}

/// Not under `--cfg loom`: loom cannot interleave a token (see
/// [`Cancellation`]'s "Under loom").
#[cfg(all(feature = "tokio-util", not(loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio-util")))]
impl Cancellation for tokio_util::sync::CancellationToken {
    fn is_canceled(&self) -> bool {
        self.is_cancelled()
    }

    fn canceled(&self) -> impl Future<Output = ()> + Send + '_ {
        self.cancelled()
    }
}
