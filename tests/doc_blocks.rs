//! Every code block of the docs is compiled (issue 46): none is marked
//! `ignore` — in the README, the guide, the specification, the test kit's
//! README and guide, or any doc comment of the library and the kit — and
//! every guide chapter is a module of `baton::guide` (issue 59: rendered on
//! docs.rs, and compiled and run as its doctests), so a new chapter cannot
//! go unchecked. A block that needs a server is `no_run`, which still
//! compiles. Every link of a rendered chapter leads somewhere both in the
//! repository and on docs.rs: no relative inline link, and every relative
//! reference definition overridden by `src/guide.rs`.

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
fn every_guide_chapter_is_a_module_of_the_guide() {
    let root = root();
    let guide = std::fs::read_to_string(root.join("src/guide.rs")).unwrap();
    let mut chapters = Vec::new();
    files(&root.join("docs/guide"), ".md", &mut chapters);
    assert!(!chapters.is_empty(), "no guide chapters found");
    for chapter in chapters {
        let name = chapter.file_name().unwrap().to_string_lossy().into_owned();
        let stem = name.trim_end_matches(".md");
        let module = format!(
            "#[doc = rendered_links!()]\n#[doc = include_str!(\"../docs/guide/{name}\")]\npub mod {stem} {{}}"
        );
        assert!(
            guide.contains(&module),
            "docs/guide/{name} is not rendered as `baton::guide::{stem}` in src/guide.rs"
        );
    }
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("pub mod guide;"),
        "src/lib.rs does not publish the guide"
    );
    assert!(
        lib.contains("#[doc = include_str!(\"../README.md\")]"),
        "README.md is not a doctest source of src/lib.rs"
    );
}

/// The link labels `text` defines (`[label]: target` at a line's start)
/// with their targets.
fn link_definitions(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix('[')?;
            let (label, target) = rest.split_once("]: ")?;
            Some((label.to_owned(), target.trim().to_owned()))
        })
        .collect()
}

/// Inline links (`[text](target)`) in `text` whose target is relative: on
/// docs.rs they would lead nowhere, and only a reference-style link's
/// definition can be overridden there.
fn relative_inline_links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let target = &rest[at + 2..];
        let end = target.find(')').unwrap_or(target.len());
        let target = &target[..end];
        if !target.contains("://") && !target.starts_with('#') && !target.contains(' ') {
            found.push(target.to_owned());
        }
        rest = &rest[at + 2..];
    }
    found
}

#[test]
fn every_link_of_a_rendered_chapter_leads_somewhere_on_docs_rs() {
    let root = root();
    let guide = std::fs::read_to_string(root.join("src/guide.rs")).unwrap();
    let rendered: Vec<String> = link_definitions(&guide.replace("\"[", "\n["))
        .into_iter()
        .map(|(label, _)| label)
        .collect();
    let mut chapters = vec![root.join("docs/SPEC.md"), root.join("docs/SCALE.md")];
    files(&root.join("docs/guide"), ".md", &mut chapters);
    for chapter in chapters {
        let text = std::fs::read_to_string(&chapter).unwrap();
        let inline = relative_inline_links(&text);
        assert!(
            inline.is_empty(),
            "{}: relative inline links (make them reference-style): {inline:?}",
            chapter.display()
        );
        for (label, target) in link_definitions(&text) {
            assert!(
                target.contains("://") || rendered.contains(&label),
                "{}: [{label}]: {target} has no definition in src/guide.rs's rendered_links",
                chapter.display()
            );
            let file = target.split('#').next().unwrap_or_default();
            assert!(
                target.contains("://") || chapter.parent().unwrap().join(file).exists(),
                "{}: [{label}]: {target} leads to no file of the repository",
                chapter.display()
            );
        }
    }
}

/// The README is the crate's page on crates.io (issue 59): under 150
/// lines, opening with exactly two commands — the model check and the
/// tests — which CI runs as written, and the guide's chapters in it are
/// links to their rendered pages.
#[test]
fn the_readme_opens_with_the_two_commands_ci_runs() {
    let root = root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.lines().count() < 150,
        "README.md has 150 lines or more"
    );
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("README.md opens with a ```sh block");
    let before = readme.split("```sh\n").next().unwrap();
    assert!(
        before
            .lines()
            .filter(|line| !line.trim().is_empty())
            .count()
            == 1,
        "the commands are the README's first lines, under its title: {before:?}"
    );
    let commands: Vec<&str> = block
        .lines()
        .map(|line| line.split('#').next().unwrap().trim())
        .collect();
    assert_eq!(
        commands,
        [
            "cargo run --release -p baton-model",
            "cargo test --workspace --all-features"
        ],
        "the README's two commands"
    );
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    for command in commands {
        assert!(ci.contains(command), ".ci/run does not run `{command}`");
    }
    let mut chapters = Vec::new();
    files(&root.join("docs/guide"), ".md", &mut chapters);
    for chapter in chapters {
        let stem = chapter.file_stem().unwrap().to_string_lossy().into_owned();
        let page = format!("https://docs.rs/agent-baton/latest/baton/guide/{stem}/index.html");
        assert!(readme.contains(&page), "README.md does not link {page}");
    }
}

/// Every file of the repository, as paths relative to its root (build
/// output and VCS folders left out).
fn repository_files() -> Vec<String> {
    fn walk(root: &Path, dir: &Path, into: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy();
            if path.is_dir() {
                if !matches!(&*name, "target" | ".git" | "corpus" | "artifacts") {
                    walk(root, &path, into);
                }
            } else {
                let relative = path.strip_prefix(root).unwrap();
                into.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let root = root();
    let mut found = Vec::new();
    walk(&root, &root, &mut found);
    found
}

/// A file path the docs name in backticks (`src/…/x.rs`, `sqlite/op.rs`)
/// is a file of the repository (issue 59: CONTRIBUTING.md named files
/// that had moved): some file's path ends with it. A path that says where
/// it went (`(now …)`, `(since …)`) or is an example of a user's (`such
/// as`) is left alone.
#[test]
fn every_file_the_docs_name_exists() {
    let root = root();
    let tracked = repository_files();
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        "docs/SPEC.md",
        "docs/SCALE.md",
        "benches/README.md",
        "testkit/README.md",
        "testkit/GUIDE.md",
        "examples/downstream/README.md",
    ]
    .iter()
    .map(|doc| root.join(doc))
    .collect();
    files(&root.join("docs/guide"), ".md", &mut docs);
    let mut missing = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut from = 0;
        while let Some(open) = text[from..].find('`').map(|at| from + at) {
            let Some(close) = text[open + 1..].find('`').map(|at| open + 1 + at) else {
                break;
            };
            from = close + 1;
            let path = &text[open + 1..close];
            let is_file = path.contains('/')
                && !path.contains(char::is_whitespace)
                && !path.contains(['*', '{'])
                && [".rs", ".md", ".toml", ".sh", ".py", ".pml", ".svg", ".json"]
                    .iter()
                    .any(|ext| path.ends_with(ext));
            let after = text[close + 1..].trim_start();
            let before = &text[..open];
            let start = before.char_indices().rev().nth(11).map_or(0, |(at, _)| at);
            let before = &before[start..];
            if !is_file
                || after.starts_with("(now")
                || after.starts_with("(since")
                || before.contains("such as")
            {
                continue;
            }
            if !tracked
                .iter()
                .any(|file| file == path || file.ends_with(&format!("/{path}")))
            {
                let line = text[..open].lines().count();
                missing.push(format!("{}:{line}: {path}", doc.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files the docs name that do not exist: {missing:#?}"
    );
}
