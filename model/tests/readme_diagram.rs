//! The guide (docs/guide/checking.md) embeds the Mermaid diagram of the
//! explored gate; this test
//! keeps the checked-in copy current (`cargo run -p baton-model -- --diagram`
//! prints it).

use std::path::Path;

use baton_model::diagram::{BEGIN, END, Readme, check_readme, readme_block};
use baton_model::report::diagram;

#[test]
fn the_readme_state_diagram_is_the_one_the_model_explores() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/guide/checking.md");
    let readme = std::fs::read_to_string(&path).expect("docs/guide/checking.md is readable");
    let diagram = diagram();
    match check_readme(&readme, &diagram) {
        Readme::Current => {}
        Readme::Unmarked => panic!("docs/guide/checking.md has no {BEGIN} … {END} markers"),
        Readme::Stale(held) => panic!(
            "docs/guide/checking.md's diagram is stale. Between the markers it holds:\n{held}\nIt should hold \
             (`cargo run --release -p baton-model -- --diagram` in a mermaid fence):\n{}",
            readme_block(&diagram)
        ),
    }
}
