//! CHANGELOG.md keeps the form it says it follows (Keep a Changelog 1.1.0):
//! each release (and `[Unreleased]`) has at most one subsection of each
//! kind, of the six kinds the format names, in the format's order; and it
//! speaks of no release that does not exist (there is none yet).

/// The kinds of change, in the order Keep a Changelog lists them.
const KINDS: [&str; 6] = [
    "Added",
    "Changed",
    "Deprecated",
    "Removed",
    "Fixed",
    "Security",
];

#[test]
fn every_release_has_one_subsection_per_kind_in_the_formats_order() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/CHANGELOG.md"))
        .expect("CHANGELOG.md");
    let mut releases = 0;
    let mut kinds: Vec<&str> = Vec::new();
    for line in text.lines() {
        if let Some(release) = line.strip_prefix("## ") {
            assert_eq!(
                release, "[Unreleased]",
                "a release section for a release that does not exist: {line}"
            );
            releases += 1;
            kinds.clear();
        } else if let Some(kind) = line.strip_prefix("### ") {
            let at = KINDS.iter().position(|k| *k == kind).unwrap_or_else(|| {
                panic!("{kind:?} is not one of Keep a Changelog's kinds {KINDS:?}")
            });
            if let Some(last) = kinds.last() {
                let last_at = KINDS.iter().position(|k| k == last).unwrap();
                assert!(
                    at > last_at,
                    "{kind:?} after {last:?}: one subsection per kind, in the order {KINDS:?}"
                );
            }
            kinds.push(kind);
        }
        assert!(
            !line.to_lowercase().contains("last release"),
            "there has been no release yet: {line}"
        );
    }
    assert_eq!(releases, 1, "one section, [Unreleased]");
}
