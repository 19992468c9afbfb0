//! `fuzz::replay_dir` replays every file of a folder, in name order, decoded
//! as libFuzzer would, and skips what does not decode.
#![cfg(not(loom))]

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use baton_testkit::fuzz::replay_dir;

fn folder(name: &str, files: &[(&str, &[u8])]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("baton-replay-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    for (file, bytes) in files {
        fs::write(dir.join(file), bytes).unwrap();
    }
    dir
}

#[test]
fn every_file_that_decodes_runs_in_name_order() {
    // `(u8, u8)` needs two bytes: the one-byte file is not run.
    let dir = folder("order", &[("b", &[2, 20]), ("a", &[1, 10]), ("c", &[9])]);
    let mut seen = Vec::new();
    let replayed = replay_dir(&dir, |pair: (u8, u8)| seen.push(pair));
    assert_eq!(replayed, 2);
    assert_eq!(seen, [(1, 10), (2, 20)]);
    assert_eq!(replay_dir(&dir.join("missing"), |_: u8| {}), 0);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_failing_body_fails_the_replay() {
    let dir = folder("fails", &[("a", &[1]), ("b", &[0])]);
    let failed = catch_unwind(AssertUnwindSafe(|| {
        replay_dir(&dir, |byte: u8| assert_ne!(byte, 0, "the planted crash"));
    }));
    assert!(failed.is_err(), "the body's panic reaches the test");
    fs::remove_dir_all(dir).unwrap();
}
