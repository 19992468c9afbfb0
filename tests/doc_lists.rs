//! The guide's lists held against the code (issue 46): the log's blocking
//! and async methods, as docs/guide/durable.md names them, are exactly
//! the traits' methods; and the SQLite schema versions it says are
//! upgraded in place are every version before the current one; and
//! docs/guide/fleet.md says what a caller does with every `LogError`. A
//! method, a version or an error added without the guide saying so fails
//! here.

use std::collections::BTreeSet;

fn read(path: &str) -> String {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The methods declared in `trait_name`'s body in `source`.
fn trait_methods(source: &str, trait_name: &str) -> BTreeSet<String> {
    let start = source
        .find(&format!("pub trait {trait_name}"))
        .unwrap_or_else(|| panic!("no trait {trait_name}"));
    let body = &source[start..];
    let end = body.find("\n}\n").expect("the trait's end");
    body[..end]
        .lines()
        .filter_map(|line| line.strip_prefix("    fn "))
        .map(|rest| rest.split(['(', '<']).next().unwrap_or_default().to_owned())
        .collect()
}

/// The guide's text with its lines joined, so a list broken over lines
/// reads as one.
fn guide() -> String {
    read("docs/guide/durable.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_guide_names_every_blocking_method_of_the_log_and_no_other() {
    let guide = guide();
    let at = guide
        .find("`HandoffLog::{")
        .expect("the guide's list of HandoffLog's methods");
    let list = &guide[at + "`HandoffLog::{".len()..];
    let list = &list[..list.find('}').expect("the list's end")];
    let named: BTreeSet<String> = list.split(',').map(|m| m.trim().to_owned()).collect();
    let declared = trait_methods(&read("src/durable/contract/log.rs"), "HandoffLog");
    assert_eq!(named, declared, "docs/guide/durable.md's HandoffLog::{{…}}");
}

#[test]
fn the_guide_names_every_async_method_of_the_log_and_no_other() {
    let guide = guide();
    let at = guide
        .find("- `AsyncHandoffLog`:")
        .expect("the guide's AsyncHandoffLog bullet");
    let bullet = &guide[at..];
    let bullet = &bullet[..bullet.find(" the same operations").expect("the list's end")];
    let named: BTreeSet<String> = bullet
        .split('`')
        .filter(|word| word.ends_with("_async"))
        .map(str::to_owned)
        .collect();
    let declared = trait_methods(
        &read("src/durable/contract/async_log.rs"),
        "AsyncHandoffLog",
    );
    assert_eq!(
        named, declared,
        "docs/guide/durable.md's AsyncHandoffLog bullet"
    );
}

#[test]
fn the_guide_names_every_older_sqlite_schema_version_as_upgraded() {
    let schema = read("src/durable/sqlite/schema.rs");
    let current: u32 = schema
        .lines()
        .find_map(|line| line.strip_prefix("pub const SCHEMA_VERSION: i64 = "))
        .and_then(|rest| rest.trim_end_matches(';').parse().ok())
        .expect("SCHEMA_VERSION in src/durable/sqlite/schema.rs");
    let guide = guide();
    let at = guide
        .find("(files of versions ")
        .expect("the guide's upgraded versions");
    let list = &guide[at + "(files of versions ".len()..];
    let list = &list[..list.find(" are upgraded in place").expect("the list's end")];
    let named: BTreeSet<u32> = list
        .split([',', ' '])
        .filter_map(|word| word.parse().ok())
        .collect();
    assert_eq!(
        named,
        (1..current).collect::<BTreeSet<u32>>(),
        "docs/guide/durable.md: every version before {current} is upgraded"
    );
}

/// The variants of `enum_name` declared in `source` (each at four spaces'
/// indent, followed by its fields, its cause or a comma).
fn enum_variants(source: &str, enum_name: &str) -> BTreeSet<String> {
    let start = source
        .find(&format!("pub enum {enum_name} {{"))
        .unwrap_or_else(|| panic!("no enum {enum_name}"));
    let body = &source[start..];
    let end = body.find("\n}\n").expect("the enum's end");
    body[..end]
        .lines()
        .filter_map(|line| line.strip_prefix("    "))
        .filter(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|rest| {
            rest.split([' ', '(', ','])
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// The fleet chapter's "Errors say what to do" sorts every `LogError` into
/// what to do: a refusal or an operator's error (listed in the bullet),
/// `Unavailable` or `OutcomeUnknown` (its own sentences). A variant added
/// without the bullet saying what a caller does with it fails here.
#[test]
fn the_fleet_chapter_says_what_to_do_with_every_log_error() {
    let fleet = read("docs/guide/fleet.md");
    let at = fleet
        .find("- **Errors say what to do.**")
        .expect("the fleet chapter's errors bullet");
    let bullet = &fleet[at..];
    // The bullet ends at the blank line after it (the list's last).
    let bullet = &bullet[..bullet.find("\n\n").unwrap_or(bullet.len())];
    let bullet = bullet.split_whitespace().collect::<Vec<_>>().join(" ");
    let named: BTreeSet<String> = bullet
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|word| word.trim_start_matches("LogError::").to_owned())
        .filter(|word| word.starts_with(|c: char| c.is_ascii_uppercase()))
        .filter(|word| !matches!(word.as_str(), "MemoryLog" | "SqliteLog" | "PostgresLog"))
        .collect();
    let declared = enum_variants(&read("src/durable/contract/error.rs"), "LogError");
    let missing: Vec<_> = declared.difference(&named).collect();
    let unknown: Vec<_> = named.difference(&declared).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/guide/fleet.md's errors bullet: says nothing of {missing:?}; names {unknown:?}, which LogError has not"
    );
}
