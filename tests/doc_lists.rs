//! The guide's lists held against the code (issue 46): the log's blocking
//! and async methods, as docs/guide/durable.md names them, are exactly
//! the traits' methods; and the SQLite schema versions it says are
//! upgraded in place are every version before the current one. A method or
//! a version added without the guide saying so fails here.

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
