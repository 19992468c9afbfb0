//! The README embeds the Mermaid diagram of the explored gate; this test
//! keeps the checked-in copy current (`cargo run -p baton-model -- --diagram`
//! prints it).

use std::path::Path;

use baton_model::diagram::{mermaid, readme_block};
use baton_model::gate::CI;
use baton_model::report::check;

const BEGIN: &str = "<!-- model-diagram:begin -->";
const END: &str = "<!-- model-diagram:end -->";

#[test]
fn the_readme_state_diagram_is_the_one_the_model_explores() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md is readable");
    let (Some(begin), Some(end)) = (readme.find(BEGIN), readme.find(END)) else {
        eprintln!("SKIPPED: README.md has no {BEGIN} … {END} markers yet");
        return;
    };
    let checked_in = readme[begin + BEGIN.len()..end].trim_start_matches('\n');
    let current = readme_block(&mermaid(&check(&CI, false).model.core.explored()));
    assert_eq!(
        checked_in, current,
        "README.md's diagram is stale: replace the block between the markers with the output of \
         `cargo run --release -p baton-model -- --diagram` inside a ```mermaid fence"
    );
}
