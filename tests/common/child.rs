//! Workers in real child processes, shared by the crash test
//! (`durable_kill.rs`) and the zombie test (`durable_zombie.rs`).
//!
//! The child is the test binary itself, re-executed with an env var set and
//! a filter naming its child test (a no-op in a normal run). It reports each
//! point it reaches as a line `baton-point: NAME` on stdout; the parent
//! reads them through [`Worker`], every wait bounded by a deadline, and
//! signals the child between them.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use baton::durable::{
    Claim, Epoch, HandoffLog, LogError, Receipt, Retirement, RunFacts, SealError, SqliteLog,
    append_then_seal,
};
use baton::{CancelSignal, HandoffExecution, HandoffIntent, Invocation};

use super::{Pause, SEALED, commit_at_boundary, gate, within};

/// Writes a line to the process's real stderr, past libtest's output
/// capture (which only takes `print!`/`eprint!`): a test's figures appear
/// in CI logs with or without `--nocapture`.
macro_rules! report {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}
#[allow(unused_imports)] // not every test that says `mod common;` reports
pub(crate) use report;

/// How a child's stdout line names a point.
pub const POINT: &str = "baton-point: ";

/// The points a worker child reports, in order, when its handoff goes
/// through: `opening` and `opened` around [`open_log`], then those of
/// [`hand_off`] on a [`Reporting`] log, then `received` from the child
/// itself. (A fenced worker reports `fenced` after `before-append`.)
pub const POINTS: [&str; 7] = [
    "opening",
    "opened",
    "committed",
    "before-append",
    "appended",
    "sealed",
    "received",
];

/// How long the parent waits for a child's next point, or for its exit,
/// before it calls the child hung: far above a debug build's start-up and
/// a SQLite sync on a loaded 2-core machine, far below CI's time limit.
pub const CHILD_BOUND: Duration = Duration::from_secs(20);

/// In the child: reports `name` on stdout, flushed.
pub fn say_point(name: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{POINT}{name}");
    let _ = out.flush();
}

/// The point a line of the child's stdout reports, if any. Found anywhere in
/// the line: libtest prints `test NAME ... ` without a newline before the
/// test runs, so the first point shares its line.
pub fn point_in(line: &str) -> Option<&str> {
    line.split_once(POINT).map(|(_, name)| name.trim_end())
}

/// xorshift64*: small, seeded, good enough to scatter the points a parent
/// aims at.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// One of `items`, uniformly.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The seed in the env var `var` (a replay), else one from the clock; never
/// zero (xorshift's fixed point).
pub fn seed_from(var: &str) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        })
}

/// The number in the env var `var`, else `default`.
pub fn number_from(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Removes a SQLite file and its WAL companions.
pub fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
}

/// Opens the database raw and asserts `PRAGMA integrity_check` is `ok`.
pub fn integrity_ok(db: &Path) -> rusqlite::Connection {
    let raw = rusqlite::Connection::open(db).expect("open the database raw");
    let integrity: String = raw
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("integrity_check");
    assert_eq!(integrity, "ok", "PRAGMA integrity_check");
    raw
}

/// The pause rows of the database, two `columns` of each (`"epoch,
/// handoff_id"`), read raw.
pub fn pause_rows<A, B>(raw: &rusqlite::Connection, columns: &str) -> Vec<(A, B)>
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
{
    let mut statement = raw
        .prepare(&format!("SELECT {columns} FROM handoff_pause"))
        .expect("the pause table exists once the log opened");
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// Counts `key` in a distribution.
pub fn tally(distribution: &mut BTreeMap<String, usize>, key: impl Into<String>) {
    *distribution.entry(key.into()).or_default() += 1;
}

/// Prints a distribution, one `count  key` line each, under `title`.
pub fn report_distribution(title: &str, distribution: &BTreeMap<String, usize>) {
    report!("{title}");
    for (key, count) in distribution {
        report!("  {count:>4}  {key}");
    }
}

/// In the child: opens the log at `db`, reporting `opening` and `opened`.
pub fn open_log(db: &std::ffi::OsStr, point: fn(&str)) -> SqliteLog<baton::HandoffExecution> {
    point("opening");
    let log = SqliteLog::open(db).expect("open the log");
    point("opened");
    log
}

/// The log as a child's worker sees it: reports `before-append` and
/// `appended` around the append, through the child's own `point`.
pub struct Reporting<'a> {
    pub log: &'a SqliteLog<baton::HandoffExecution>,
    pub point: fn(&str),
}

impl HandoffLog<HandoffExecution> for Reporting<'_> {
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<HandoffExecution>, LogError> {
        self.log.claim(root_run_id, run_id)
    }

    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &Pause,
    ) -> Result<Receipt, LogError> {
        (self.point)("before-append");
        let receipt = self.log.append(root_run_id, source, epoch, pause)?;
        (self.point)("appended");
        Ok(receipt)
    }

    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &HandoffExecution,
    ) -> Result<Receipt, LogError> {
        self.log.finish(root_run_id, source, epoch, outcome)
    }

    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        self.log.retire(root_run_id)
    }

    fn facts(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<RunFacts<HandoffExecution>, LogError> {
        self.log.facts(root_run_id, run_id)
    }
}

/// What a worker's handoff came to.
pub struct Handoff {
    /// What `append_then_seal` returned.
    pub sealed: Result<Receipt, SealError>,
    /// What the requester's `wait()` returned.
    pub received: Option<Arc<Pause>>,
}

/// A full handoff of `intent` on `log` by a worker holding `epoch`: reserve, boundary,
/// commit (reports `committed`), append then seal (the library's helper;
/// reports `sealed`, `fenced` or `append-failed`), wait. Its awaits are bounded (the runtime
/// has a timer for it): a hang in a child fails it, which ends the parent's
/// wait for its points too.
pub fn hand_off(
    log: &dyn HandoffLog<HandoffExecution>,
    epoch: Epoch,
    intent: HandoffIntent,
    point: fn(&str),
) -> Handoff {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let gate = gate();
        let requester = gate.requester();
        let cancel = CancelSignal::new();
        let reservation = requester.reserve(intent).expect("reserve");
        let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
        let paused = paused.expect("committed");
        point("committed");
        let sealed = append_then_seal(&gate, log, epoch, &paused);
        match &sealed {
            Ok(_) => point("sealed"),
            Err(SealError::Fenced { .. }) => point("fenced"),
            Err(_) => point("append-failed"),
        }
        let received = within(SEALED, pending.wait()).await.ok();
        Handoff { sealed, received }
    })
}

/// A worker child process, seen from the parent: its points arrive through
/// a reader thread, so every wait has a deadline.
pub struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    points: Receiver<String>,
    /// The points it reported so far, in order.
    pub reached: Vec<String>,
}

impl Worker {
    /// Starts the test binary filtered to the child test `test`, with
    /// `envs`. With `handshake`, the child's stdin is a pipe the parent
    /// answers each point on ([`go`](Self::go)); else it is null.
    pub fn spawn(test: &str, envs: &[(&str, &std::ffi::OsStr)], handshake: bool) -> Self {
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", test, "--nocapture", "--test-threads", "1"])
            .envs(envs.iter().copied())
            .stdin(if handshake {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the child");
        let stdout = child.stdout.take().expect("piped");
        let (sender, points) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(name) = point_in(&line)
                    && sender.send(name.to_owned()).is_err()
                {
                    return;
                }
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            points,
            reached: Vec::new(),
        }
    }

    /// The process id, for signals.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's next point, or `None` once it closed its stdout (it
    /// exited, or died). Panics if nothing comes within [`CHILD_BOUND`].
    pub fn next_point(&mut self) -> Option<String> {
        match self.points.recv_timeout(CHILD_BOUND) {
            Ok(name) => {
                self.reached.push(name.clone());
                Some(name)
            }
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                panic!(
                    "the child reported nothing for {CHILD_BOUND:?} after {:?}",
                    self.reached
                )
            }
        }
    }

    /// Reads points until `target` (included) or the child's end; whether
    /// it reached `target`.
    pub fn run_to(&mut self, target: &str) -> bool {
        while let Some(name) = self.next_point() {
            if name == target {
                return true;
            }
            self.go();
        }
        false
    }

    /// Lets a child waiting at its point take its next step (a handshake
    /// child only; else does nothing).
    pub fn go(&mut self) {
        if let Some(stdin) = &mut self.stdin {
            // A child that died has closed its end: nothing to let go.
            let _ = stdin.write_all(b"go\n").and_then(|()| stdin.flush());
        }
    }

    /// Lets the child run freely from now on: its stdin closes, and a
    /// handshake child takes end-of-file as a standing `go`.
    pub fn release(&mut self) {
        self.stdin = None;
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
    }

    /// Sends `signal` (`STOP`, `CONT`) with the system's `kill` (std has no
    /// other signal than SIGKILL). After `STOP`, returns only once the
    /// process is stopped (where `/proc` tells).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args(["-s", signal, &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -s {signal}: {status:?}");
        if signal == "STOP" {
            self.wait_stopped();
        }
    }

    /// Waits (bounded) until `/proc` shows the process stopped (`T`); where
    /// there is no `/proc`, returns at once.
    fn wait_stopped(&self) {
        let stat = format!("/proc/{}/stat", self.pid());
        let deadline = Instant::now() + CHILD_BOUND;
        loop {
            let Ok(text) = std::fs::read_to_string(&stat) else {
                return;
            };
            // `pid (comm) state ...`: the state follows the last `)`.
            let state = text
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim().chars().next());
            if state == Some('T') {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the child did not stop: {state:?}"
            );
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Waits (bounded) for the child to end, collecting the points it
    /// reported on its way; returns them all and its exit status.
    pub fn finish(mut self) -> (Vec<String>, ExitStatus) {
        self.release();
        while self.next_point().is_some() {}
        let deadline = Instant::now() + CHILD_BOUND;
        loop {
            if let Some(status) = self.child.try_wait().expect("reap the child") {
                return (std::mem::take(&mut self.reached), status);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "the child did not exit within {CHILD_BOUND:?} after {:?}",
                    self.reached
                );
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Worker {
    /// A child left behind by a failing test is killed, not leaked.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A seeded series of runs, each on a fresh SQLite file, bounded by a count
/// and a time budget. Reads `BATON_<TAG>_SEED` (replay),
/// `BATON_<TAG>_RUNS` and `BATON_<TAG>_VERBOSE`, and reports the seed first.
pub struct Campaign {
    name: &'static str,
    pub seed: u64,
    pub rng: Rng,
    /// The runs asked for.
    pub runs: usize,
    /// The runs done so far.
    pub done: usize,
    /// Whether to report every run.
    pub verbose: bool,
    budget: Duration,
    dir: std::path::PathBuf,
    db: Option<std::path::PathBuf>,
    started: Instant,
}

impl Campaign {
    /// Starts the campaign of the test `name` (`durable_kill`), its env
    /// vars tagged `tag` (`KILL`).
    pub fn start(name: &'static str, tag: &str, default_runs: usize, budget: Duration) -> Self {
        let seed = seed_from(&format!("BATON_{tag}_SEED"));
        let runs = number_from(&format!("BATON_{tag}_RUNS"), default_runs);
        report!("{name}: seed {seed} (replay with BATON_{tag}_SEED={seed}), {runs} runs");
        let dir = std::env::temp_dir().join(format!("baton-{name}-{}-{seed}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        Self {
            name,
            seed,
            rng: Rng(seed),
            runs,
            done: 0,
            verbose: std::env::var_os(format!("BATON_{tag}_VERBOSE")).is_some(),
            budget,
            dir,
            db: None,
            started: Instant::now(),
        }
    }

    /// The fresh file of the next run (the previous run's is removed and
    /// counted as done), or `None` once the runs are done or the budget is
    /// spent.
    pub fn next_db(&mut self) -> Option<std::path::PathBuf> {
        if let Some(db) = self.db.take() {
            remove_db(&db);
            self.done += 1;
        }
        if self.done >= self.runs || self.started.elapsed() >= self.budget {
            return None;
        }
        let db = self.dir.join(format!("run-{}.sqlite", self.done));
        remove_db(&db);
        self.db = Some(db.clone());
        Some(db)
    }

    /// Removes the temp dir and reports the count and the time; returns
    /// the runs done and the runs asked for.
    pub fn finish(self) -> (usize, usize) {
        let _ = std::fs::remove_dir(&self.dir);
        let (name, done, seed) = (self.name, self.done, self.seed);
        report!(
            "{name}: {done} runs in {:.1?} (seed {seed})",
            self.started.elapsed()
        );
        (done, self.runs)
    }
}
