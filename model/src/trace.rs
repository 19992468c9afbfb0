//! Counterexamples: printed as a numbered event list with the state after
//! each event, written as JSON, and replayed from JSON through `step`
//! (`model/regressions/*.json` are replayed as ordinary tests).

use std::fmt::{self, Display, Write as _};

use serde::{Deserialize, Serialize};

use crate::explore::{Successor, Trace};
use crate::gate::codec::{Ev, Gate, Out};
use crate::gate::system::{Act, Decided, Owner, Phase, Setup, Step, Sys, Worker};
use crate::gate::{GateModel, variants};

fn pause(p: u8) -> String {
    format!("p{}{}", p / 2, if p % 2 == 1 { "'" } else { "" })
}

impl Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Gate::Running { next } => write!(f, "Running{{next #{next}}}"),
            Gate::Requested { ticket, intent } => write!(f, "Requested{{#{ticket} i{intent}}}"),
            Gate::Held { ticket, pause: p } => write!(f, "Held{{#{ticket} {}}}", pause(p)),
            Gate::Committed { ticket, pause: p } => {
                write!(f, "Committed{{#{ticket} {}}}", pause(p))
            }
            Gate::Sealed { ticket, pause: p } => write!(f, "Sealed{{#{ticket} {}}}", pause(p)),
            Gate::Closed => f.write_str("Closed"),
        }
    }
}

impl Display for Ev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bit = |c: bool| if c { ", canceled" } else { "" };
        match *self {
            Ev::Reserve { intent } => write!(f, "Reserve(i{intent})"),
            Ev::Preflight {
                ticket,
                pause: p,
                canceled,
            } => {
                let p = p.map_or("None".to_string(), pause);
                write!(f, "Preflight(#{ticket}, {p}{})", bit(canceled))
            }
            Ev::Cancel { ticket } => write!(f, "Cancel(#{ticket})"),
            Ev::Commit { ticket, canceled } => write!(f, "Commit(#{ticket}{})", bit(canceled)),
            Ev::Seal { pause: p } => write!(f, "Seal({})", pause(p)),
            Ev::Close => f.write_str("Close"),
        }
    }
}

impl Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.act {
            Act::Reconcile(Decided::HandedOff(p)) => {
                write!(f, "Reconcile: Ok(HandedOff({}))", pause(p))?
            }
            Act::Reconcile(Decided::Resumable) => f.write_str("Reconcile: Ok(Resumable)")?,
            Act::Reconcile(Decided::Contradiction) => f.write_str("Reconcile: Err")?,
            act => write!(f, "{act:?}")?,
        }
        if let Some(ev) = self.event {
            let out = match self.outcome {
                Some(Out::Moved(g)) => format!("→ {}", g.kind()),
                Some(Out::Ignored) => "ignored".into(),
                Some(Out::Refused(r)) => format!("Err {}", r.name()),
                None => "?".into(),
            };
            write!(f, ": {ev} {out}")?;
        }
        Ok(())
    }
}

/// A state of the handoff system with `k` requesters, on one line.
pub fn show(k: u8, s: &Sys) -> String {
    let mut out = format!("gate={}", s.gate);
    let worker = match s.worker {
        Worker::Running => "Running".to_string(),
        Worker::Preflight { ticket, intent } => format!("Preflight{{#{ticket} i{intent}}}"),
        Worker::Awaiting { ticket, pause: p } => format!("Awaiting{{#{ticket} {}}}", pause(p)),
        Worker::Sealing { pause: p } => format!("Sealing{{{}}}", pause(p)),
        Worker::Done => "Done".to_string(),
        Worker::Checked { pause: p } => format!("Checked{{{}}}", pause(p)),
        Worker::Appended { pause: p } => format!("Appended{{{}}}", pause(p)),
        Worker::SealedUnappended { pause: p } => format!("SealedUnappended{{{}}}", pause(p)),
        Worker::Exiting => "Exiting".to_string(),
    };
    let _ = write!(out, " worker={worker}");
    for (r, me) in s.req.iter().take(k as usize).enumerate() {
        let phase = match me.phase {
            Phase::Idle => "Idle".to_string(),
            Phase::Waiting { ticket } => format!("Waiting{{#{ticket}}}"),
            Phase::Holding { ticket, pause: p } => format!("Holding{{#{ticket} {}}}", pause(p)),
            Phase::Releasing { ticket } => format!("Releasing{{#{ticket}}}"),
            Phase::Sealing { ticket, pause: p } => format!("Sealing{{#{ticket} {}}}", pause(p)),
            Phase::Done { sealed: true } => "Done(sealed)".to_string(),
            Phase::Done { sealed: false } => "Done".to_string(),
        };
        let _ = write!(out, " r{r}={phase}/{}", me.tries);
    }
    if s.canceled {
        out.push_str(" canceled");
    }
    if s.closer {
        out.push_str(" closer");
    }
    if let Some(p) = s.log {
        let _ = write!(out, " log=[{}]", pause(p));
    }
    match s.owner {
        Owner::Undecided => {}
        Owner::Successor => out.push_str(" owner=successor"),
        Owner::Resumed => out.push_str(" owner=resumed"),
        Owner::Operator => out.push_str(" owner=operator"),
    }
    out
}

/// A trace of the handoff system with `k` requesters as a numbered event
/// list with the state after each event. Pause `pN` answers intent `iN`;
/// `pN'` is a forgery of it; `/n` is a requester's reservations left.
pub fn render(k: u8, trace: &Trace<Sys, Step>) -> String {
    let mut out = format!("   0. (initial)\n        {}\n", show(k, &trace.initial));
    for (i, (action, state)) in trace.steps.iter().enumerate() {
        if trace.loop_start == Some(i) {
            out.push_str("   then forever:\n");
        }
        let _ = writeln!(out, "  {:>2}. {action}\n        {}", i + 1, show(k, state));
    }
    if trace.loop_start == Some(trace.steps.len()) {
        out.push_str("   then forever: nothing (no fair step is enabled)\n");
    }
    out
}

/// A handoff-system trace as stored in `model/regressions/*.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// The step function: `"real"` or a [`variants::VARIANTS`] name.
    pub variant: String,
    /// The configuration.
    pub setup: Setup,
    /// The property the trace violates (under `variant`).
    pub property: String,
    /// The initial state.
    pub initial: Sys,
    /// Each step with the state after it.
    pub steps: Vec<(Step, Sys)>,
    /// Where the loop of a liveness counterexample starts.
    pub loop_start: Option<usize>,
}

impl Recorded {
    /// Records `trace`, found for `property` under `variant`.
    pub fn new(variant: &str, setup: Setup, property: &str, trace: &Trace<Sys, Step>) -> Self {
        Self {
            variant: variant.into(),
            setup,
            property: property.into(),
            initial: trace.initial,
            steps: trace.steps.clone(),
            loop_start: trace.loop_start,
        }
    }

    /// The trace.
    pub fn trace(&self) -> Trace<Sys, Step> {
        Trace {
            initial: self.initial,
            steps: self.steps.clone(),
            loop_start: self.loop_start,
        }
    }

    /// As pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a trace serialises")
    }
}

/// Why a replay stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Every act was enabled and gave the recorded step and state.
    Same,
    /// Act `n` (0-based) is not enabled, or gives another step or state.
    Diverged {
        /// Index of the first differing step.
        at: usize,
        /// What the model did there instead (`None`: the act is not enabled).
        got: Option<(Step, Sys)>,
    },
}

/// Replays `recorded`'s acts through `step` (the real one for `"real"`)
/// from its initial state, stopping at the first difference; also returns
/// the concrete trace actually taken.
pub fn replay(recorded: &Recorded, variant: &str) -> (Replay, Trace<Sys, Step>) {
    // A durable variant breaks the worker's protocol (recorded in the
    // setup) or reconciliation; its step is the real one.
    let model = match crate::gate::durable::by_name(variant) {
        Some(v) => GateModel::durable(&v, recorded.setup),
        None => {
            let step =
                variants::by_name(variant).unwrap_or_else(|| panic!("unknown variant {variant}"));
            GateModel::with_step(recorded.setup, step)
        }
    };
    let mut trace = Trace {
        initial: recorded.setup.initial(),
        steps: Vec::new(),
        loop_start: None,
    };
    if trace.initial != recorded.initial {
        return (Replay::Diverged { at: 0, got: None }, trace);
    }
    let mut here = trace.initial;
    let mut successors: Vec<Successor<Step, Sys>> = Vec::new();
    for (at, (want, want_state)) in recorded.steps.iter().enumerate() {
        successors.clear();
        crate::gate::system::successors(&model.setup, &model.core, &here, &mut successors);
        let got = successors
            .iter()
            .find(|s| s.action.act == want.act)
            .map(|s| (s.action, s.next));
        match got {
            Some((step, next)) if step == *want && next == *want_state => {
                trace.steps.push((step, next));
                here = next;
            }
            other => return (Replay::Diverged { at, got: other }, trace),
        }
    }
    trace.loop_start = recorded.loop_start;
    (Replay::Same, trace)
}

/// The acts of a trace, for short assertions.
pub fn acts(trace: &Trace<Sys, Step>) -> Vec<Act> {
    trace.steps.iter().map(|(s, _)| s.act).collect()
}
