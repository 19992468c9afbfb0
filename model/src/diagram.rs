//! The Mermaid `stateDiagram-v2` of the gate's state kinds and the events
//! that moved between them, as explored (not as written down).

use std::collections::BTreeMap;

use crate::gate::codec::{Ev, Gate, Out};
use crate::gate::system::pause;

const KINDS: [&str; 6] = [
    "Running",
    "Requested",
    "Held",
    "Committed",
    "Sealed",
    "Closed",
];

fn label(from: Gate, ev: Ev) -> &'static str {
    match ev {
        Ev::Reserve { .. } => "Reserve",
        Ev::Preflight { pause: None, .. } => "Preflight failed",
        Ev::Preflight { canceled: true, .. } => "Preflight cancelled",
        Ev::Preflight { pause: Some(p), .. } => match from {
            Gate::Requested { intent, .. } if pause::intent(p) == intent => "Preflight ok",
            Gate::Requested { .. } => "Preflight mismatched",
            Gate::Running { .. }
            | Gate::Held { .. }
            | Gate::Committed { .. }
            | Gate::Sealed { .. }
            | Gate::Closed => "Preflight",
        },
        Ev::Cancel { .. } => "Cancel",
        Ev::Commit { .. } => "Commit",
        Ev::Seal { .. } => "Seal",
        Ev::Close => "Close",
    }
}

fn rank(kind: &str) -> usize {
    KINDS.iter().position(|k| *k == kind).unwrap_or(KINDS.len())
}

/// The diagram of `explored` core transitions (see
/// [`crate::gate::codec::Core::explored`]); only moves are drawn.
pub fn mermaid(explored: &[(Gate, Ev, Out)]) -> String {
    let mut edges: BTreeMap<(usize, usize), Vec<&'static str>> = BTreeMap::new();
    for &(from, ev, out) in explored {
        if let Out::Moved(to) = out {
            let labels = edges
                .entry((rank(from.kind()), rank(to.kind())))
                .or_default();
            let l = label(from, ev);
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
    }
    let mut out = String::from("stateDiagram-v2\n    [*] --> Running\n");
    for ((from, to), mut labels) in edges {
        labels.sort_by_key(|l| EVENT_ORDER.iter().position(|o| o == l));
        out.push_str(&format!(
            "    {} --> {}: {}\n",
            KINDS[from],
            KINDS[to],
            labels.join(", ")
        ));
    }
    out.push_str("    Sealed --> [*]\n    Closed --> [*]\n");
    out
}

const EVENT_ORDER: [&str; 10] = [
    "Reserve",
    "Preflight ok",
    "Preflight failed",
    "Preflight mismatched",
    "Preflight cancelled",
    "Preflight",
    "Cancel",
    "Commit",
    "Seal",
    "Close",
];

/// The diagram as the README embeds it, between its markers.
pub fn readme_block(diagram: &str) -> String {
    format!("```mermaid\n{diagram}```\n")
}
