//! The durable log's house in layers (CONTRIBUTING.md, docs/SPEC.md §6):
//! the contract (`src/durable/contract/`) imports no rule and no store;
//! the pure rules import the contract and each other, never a store. Read
//! from the sources' `use` lines, so that an import across a layer fails
//! here with the file and the line that makes it.

use std::path::Path;

/// The rule files of `src/durable/`.
const RULES: [&str; 5] = [
    "fence.rs",
    "reconcile.rs",
    "sweep.rs",
    "worker.rs",
    "finish.rs",
];

/// The store modules of `src/durable/`.
const STORES: [&str; 6] = [
    "memory",
    "sqlite",
    "postgres",
    "offload",
    "row",
    "memory_sweep",
];

/// Every `use` of `crate::durable::…` or `super::…` in `file`, with its
/// line number, as written (one line each).
fn durable_uses(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.trim_start();
            line.starts_with("use crate::durable::") || line.starts_with("use super::")
        })
        .map(|(index, line)| (index + 1, line.trim().to_owned()))
        .collect()
}

fn durable(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/durable")
        .join(path)
}

#[test]
fn the_contract_imports_no_rule_and_no_store() {
    let dir = durable("contract");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("src/durable/contract")
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "the contract's files: {files:?}");
    for file in files {
        for (line, text) in durable_uses(&file) {
            let within = text.starts_with("use super::") && !text.starts_with("use super::super")
                || text.starts_with("use crate::durable::contract::");
            assert!(
                within,
                "{}:{line}: the contract imports outside itself: {text}",
                file.display()
            );
        }
    }
}

#[test]
fn the_rules_import_no_store() {
    for rule in RULES {
        let file = durable(rule);
        for (line, text) in durable_uses(&file) {
            let module = text
                .trim_start_matches("use ")
                .trim_start_matches("crate::durable::")
                .trim_start_matches("super::");
            let module = module.split("::").next().unwrap_or_default();
            assert!(
                !STORES.contains(&module),
                "{}:{line}: a rule imports a store: {text}",
                file.display()
            );
        }
    }
}
