//! Ledger-system states and traces as text: one line per state, a numbered
//! event list for a trace.

use std::fmt::Write as _;

use baton::ledger::core::Counts;

use super::LedgerModel;
use super::state::{Held, LStep, LSys, Outcome, name};
use crate::explore::Trace;

fn outcome(o: &Outcome) -> String {
    let ids = |taken: &[super::state::Taken]| {
        let ids: Vec<String> = taken
            .iter()
            .map(|t| format!("{}{}", t.id, if t.entry.arrived { "✓" } else { "" }))
            .collect();
        format!("[{}]", ids.join(" "))
    };
    match o {
        Outcome::Scoped(token, left) => format!("scope #{} {}", token.get(), ids(left)),
        Outcome::ScopeRefused(e) => format!("refused: {e}"),
        Outcome::ScopeEnded(Some(left)) => format!("ended {}", ids(left)),
        Outcome::ScopeEnded(None) => "stale: ignored".into(),
        Outcome::Registered(Ok(())) => "Ok".into(),
        Outcome::Registered(Err(e)) => format!("Err {e}"),
        Outcome::Adopted(a) => format!("{a:?}"),
        Outcome::Arrived(a) => format!("{a:?}"),
        Outcome::Waited(w) => format!("{w:?}"),
        Outcome::Took(taken) => format!("took {}", ids(taken)),
    }
}

/// A step on one line.
pub fn step(t: &LStep) -> String {
    match &t.outcome {
        Some(o) => format!("{:?} → {}", t.act, outcome(o)),
        None => format!("{:?}", t.act),
    }
}

/// A state of the ledger system on one line: the scope, each entry (`@t`
/// started, `✓` arrived, `cN` its child), the ghosts, the world.
pub fn show(m: &LedgerModel, s: &LSys) -> String {
    let setup = &m.setup;
    let ledger = m.ledger(s);
    let mut out = match m.seen(s).scope {
        Some((task, token)) => format!("scope=task-{task}#{token}"),
        None => "scope=none".into(),
    };
    for d in 0..setup.ids {
        let ghost = match s.ids[d as usize] {
            Held::Gone => "",
            Held::Outstanding => "out",
            Held::Arrived => "arrived",
            Held::Taken => "taken",
        };
        match ledger.entry(&name(d)) {
            Some(e) => {
                let _ = write!(
                    out,
                    " d{d}=@{}{}{} ({ghost})",
                    e.started.as_secs(),
                    if e.arrived { "✓" } else { "" },
                    e.child.map_or(String::new(), |c| format!(" c{}", c.0))
                );
            }
            None if ghost.is_empty() => {}
            None => {
                let _ = write!(out, " d{d}=- ({ghost})");
            }
        }
    }
    let Counts {
        outstanding,
        arrived,
    } = ledger.counts();
    let _ = write!(
        out,
        " counts=({outstanding},{arrived}) delivered={} permit={} now={}",
        ledger.delivered_len(),
        m.seen(s).permit,
        s.now
    );
    let bits = |mask: u8| -> String {
        (0..8)
            .filter(|c| mask & (1 << c) != 0)
            .map(|c| format!("c{c}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    for (label, mask) in [
        ("handed", s.handed),
        ("ending", s.world.being_ended),
        ("ended", s.world.ended),
        ("finished", s.finished),
    ] {
        if mask != 0 {
            let _ = write!(out, " {label}={{{}}}", bits(mask));
        }
    }
    if s.scopes != 0 {
        let _ = write!(out, " handles={{{}}}", bits(s.scopes).replace('c', "#"));
    }
    let (pending, given) = m.seen(s).waits;
    if pending != 0 || given != 0 {
        let _ = write!(out, " waits=({pending},{given})");
    }
    for w in 0..m.setup.waiters {
        if s.waiting & (1 << w) != 0 {
            let _ = write!(out, " w{w}:pending");
        }
    }
    if s.given != 0 {
        let _ = write!(out, " given={}", s.given);
    }
    if s.owed {
        out.push_str(" owed");
    }
    out
}

/// A trace as a numbered event list with the state after each event.
pub fn render(m: &LedgerModel, trace: &Trace<LSys, LStep>) -> String {
    let mut out = format!("   0. (initial)\n        {}\n", show(m, &trace.initial));
    for (i, (action, state)) in trace.steps.iter().enumerate() {
        if trace.loop_start == Some(i) {
            out.push_str("   then forever:\n");
        }
        let _ = writeln!(
            out,
            "  {:>2}. {}\n        {}",
            i + 1,
            step(action),
            show(m, state)
        );
    }
    if trace.loop_start == Some(trace.steps.len()) {
        out.push_str("   then forever: nothing (no fair step is enabled)\n");
    }
    out
}

/// The acts of a trace, for short assertions.
pub fn acts(trace: &Trace<LSys, LStep>) -> Vec<super::state::Act> {
    trace.steps.iter().map(|(s, _)| s.act).collect()
}
