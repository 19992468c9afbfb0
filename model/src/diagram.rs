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
        Ev::Preflight { canceled: true, .. } => "Preflight canceled",
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
    "Preflight canceled",
    "Preflight",
    "Cancel",
    "Commit",
    "Seal",
    "Close",
];

/// The diagram as the guide (docs/guide/checking.md) embeds it, between
/// its markers.
pub fn readme_block(diagram: &str) -> String {
    format!("```mermaid\n{diagram}```\n")
}

/// The line before the guide's copy of the diagram.
pub const BEGIN: &str = "<!-- model-diagram:begin -->";
/// The line after it.
pub const END: &str = "<!-- model-diagram:end -->";

/// What a page that embeds the diagram holds of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readme {
    /// It has no markers (yet).
    Unmarked,
    /// Its copy between the markers is `diagram`'s block.
    Current,
    /// Its copy differs; this is what it holds.
    Stale(String),
}

/// Compares the block between [`BEGIN`] and [`END`] in `readme` with
/// [`readme_block`] of `diagram`.
pub fn check_readme(readme: &str, diagram: &str) -> Readme {
    let (Some(begin), Some(end)) = (readme.find(BEGIN), readme.find(END)) else {
        return Readme::Unmarked;
    };
    let held = readme
        .get(begin + BEGIN.len()..end)
        .unwrap_or_default()
        .trim_start_matches('\n');
    if held == readme_block(diagram) {
        Readme::Current
    } else {
        Readme::Stale(held.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_readme_with_the_current_block_between_its_markers_is_current() {
        let readme = format!(
            "# x\n\n{BEGIN}\n{}{END}\n",
            readme_block("stateDiagram-v2\n")
        );
        assert_eq!(check_readme(&readme, "stateDiagram-v2\n"), Readme::Current);
        assert!(matches!(check_readme(&readme, "other\n"), Readme::Stale(_)));
        assert_eq!(check_readme("# x\n", "stateDiagram-v2\n"), Readme::Unmarked);
    }
}
