//! The README embeds the Mermaid diagram of the explored gate; this test
//! keeps the checked-in copy current (`cargo run -p baton-model -- --diagram`
//! prints it).

use std::path::Path;

use baton_model::diagram::{BEGIN, END, Readme, check_readme, readme_block};
use baton_model::report::diagram;

#[test]
fn the_readme_state_diagram_is_the_one_the_model_explores() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md is readable");
    let diagram = diagram();
    match check_readme(&readme, &diagram) {
        Readme::Current => {}
        Readme::Unmarked => eprintln!("SKIPPED: README.md has no {BEGIN} … {END} markers yet"),
        Readme::Stale(held) => panic!(
            "README.md's diagram is stale. Between the markers it holds:\n{held}\nIt should hold \
             (`cargo run --release -p baton-model -- --diagram` in a mermaid fence):\n{}",
            readme_block(&diagram)
        ),
    }
}
