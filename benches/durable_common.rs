//! Fixtures shared by the durable benchmarks (`durable_stores`,
//! `retention`, `retention_by_age`) and the peer comparison (`peers/`):
//! the contract's payload and pauses, hashed ids, temporary SQLite files,
//! latency samples.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{HandoffExecution, HandoffIntent, HandoffPause, Invocation};

pub type Pause = HandoffPause<HandoffExecution>;

pub fn source(run: &str) -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: run.into(),
        invocation_id: format!("{run}-invocation"),
    }
}

pub fn execution() -> HandoffExecution {
    let digest = |c: char| Digest::parse(format!("sha256:{}", c.to_string().repeat(64))).unwrap();
    HandoffExecution {
        replay: ReplayEvidence {
            version: REPLAY_VERSION,
            digest: digest('a'),
            route_identity: digest('b'),
        },
        tools: HandoffTools {
            catalog_digest: digest('c'),
            loaded: vec!["shell".into()],
        },
        compaction: CompactionBudget::Available,
        main_output_limit: None,
        supports_vision: false,
        replay_base: None,
    }
}

/// The pause that hands `run` of `root` off to `next`.
pub fn pause(root: &str, run: &str, next: &str) -> Pause {
    HandoffPause::new(
        HandoffIntent {
            handoff_id: format!("{run}-handoff"),
            host_epoch: "host".into(),
            root_run_id: root.into(),
            successor_run_id: next.into(),
            successor_invocation_id: format!("{next}-invocation"),
            claim_id: "claim".into(),
        },
        execution(),
    )
}

/// 32 hex digits of a hash of `(tag, i)`: an id spread over the key space.
pub fn hashed(tag: u64, i: u64) -> String {
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let a = mix(tag.wrapping_mul(0x1_0000_0001) ^ i);
    format!("{a:016x}{:016x}", mix(a))
}

/// The number in the environment variable `name`, or `default` when it
/// is unset; a value that is not a number is a mistake, and says so.
pub fn setting(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value}: not a number")),
        Err(_) => default,
    }
}

pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new(dir: &Path, name: &str) -> Self {
        let file = TempFile(dir.join(format!("baton-bench-{}-{name}.sqlite", std::process::id())));
        file.remove();
        file
    }
    pub fn with(&self, suffix: &str) -> PathBuf {
        PathBuf::from(format!("{}{suffix}", self.0.display()))
    }
    pub fn size(&self, suffix: &str) -> u64 {
        std::fs::metadata(self.with(suffix)).map_or(0, |m| m.len())
    }
    pub fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(self.with(suffix));
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Latencies of one measurement, sorted.
pub struct Sample(pub Vec<Duration>);

impl Sample {
    pub fn new(mut latencies: Vec<Duration>) -> Self {
        latencies.sort();
        Sample(latencies)
    }
    pub fn quantile(&self, q: f64) -> Duration {
        let i = ((self.0.len() as f64 - 1.0) * q).round() as usize;
        self.0.get(i).copied().unwrap_or_default()
    }
    pub fn median(&self) -> Duration {
        self.quantile(0.5)
    }
}

pub fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

pub fn ratio(big: Duration, small: Duration) -> f64 {
    big.as_secs_f64() / small.as_secs_f64()
}

/// `what`, or a panic if it outlives `limit`.
pub async fn bounded<T>(
    what: &str,
    limit: Duration,
    work: impl std::future::Future<Output = T>,
) -> T {
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
}
