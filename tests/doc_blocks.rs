//! Every code block of the docs is compiled (issue 46): none is marked
//! `ignore` — in the README, the guide, the specification, the test kit's
//! README and guide, or any doc comment of the library and the kit — and
//! every guide chapter is one of the crate's doctest sources (a
//! `#[cfg(doctest)]` item in src/lib.rs that includes it), so a new chapter
//! cannot go unchecked. A block that needs a server is `no_run`, which
//! still compiles.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files under `dir` (recursively) whose name ends with `ext`.
fn files(dir: &Path, ext: &str, into: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, ext, into);
        } else if path.to_string_lossy().ends_with(ext) {
            into.push(path);
        }
    }
}

/// Where in `text` a code fence opens with `ignore` in its info string
/// (in Markdown, or in a `//!` or `///` doc comment): its line numbers.
fn ignored_blocks(text: &str) -> Vec<usize> {
    let mut open = false;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_start();
        let line = line
            .strip_prefix("//!")
            .or_else(|| line.strip_prefix("///"))
            .unwrap_or(line)
            .trim_start();
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        if !open && info.split(',').any(|word| word.trim() == "ignore") {
            found.push(i + 1);
        }
        open = !open;
    }
    found
}

#[test]
fn no_code_block_of_the_docs_is_ignored() {
    let root = root();
    let mut sources: Vec<PathBuf> = [
        "README.md",
        "docs/SPEC.md",
        "testkit/README.md",
        "testkit/GUIDE.md",
    ]
    .iter()
    .map(|file| root.join(file))
    .collect();
    files(&root.join("docs/guide"), ".md", &mut sources);
    files(&root.join("src"), ".rs", &mut sources);
    files(&root.join("testkit/src"), ".rs", &mut sources);
    let ignored: Vec<String> = sources
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            let shown = path.strip_prefix(&root).unwrap().display().to_string();
            ignored_blocks(&text)
                .into_iter()
                .map(move |line| format!("{shown}:{line}"))
        })
        .collect();
    assert!(
        ignored.is_empty(),
        "code blocks marked `ignore` (compile them, `no_run` if they need a server): {ignored:?}"
    );
}

#[test]
fn every_guide_chapter_is_compiled_as_doctests() {
    let root = root();
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let mut chapters = Vec::new();
    files(&root.join("docs/guide"), ".md", &mut chapters);
    assert!(!chapters.is_empty(), "no guide chapters found");
    for chapter in chapters {
        let name = chapter.file_name().unwrap().to_string_lossy().into_owned();
        let included = format!("#[doc = include_str!(\"../docs/guide/{name}\")]");
        let at = lib
            .find(&included)
            .unwrap_or_else(|| panic!("docs/guide/{name} is not a doctest source of src/lib.rs"));
        assert!(
            lib[..at].trim_end().ends_with("#[cfg(doctest)]"),
            "docs/guide/{name}'s include in src/lib.rs is not under #[cfg(doctest)]"
        );
    }
    assert!(
        lib.contains("#[doc = include_str!(\"../README.md\")]"),
        "README.md is not a doctest source of src/lib.rs"
    );
}
