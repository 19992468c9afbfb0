//! PgBouncer in front of a test [`Cluster`], in transaction pooling mode:
//! a client connection holds a server connection only for the length of a
//! transaction, and at most [`POOL_SIZE`] server connections per database
//! and user are shared by all of that pair's clients. That is how a fleet
//! often reaches PostgreSQL, and why `PostgresLog` has
//! `PostgresOptions::prepared_statements(false)`: this PgBouncer (Debian's
//! 1.18) keeps no prepared statement across transactions.
//!
//! It listens on a free loopback port (no Unix socket), forwards every
//! database name to the same one on the cluster, and lets the users it was
//! started with in without a password (`auth_type = trust`; PgBouncer 1.18
//! still refuses, as `"trust" authentication failed`, a user its
//! `auth_file` does not list, so the file lists them with empty
//! passwords). The cluster trusts it in turn. When the tests run as root it
//! runs as `postgres` (`-u postgres`: PgBouncer refuses to run as root).
//!
//! As the cluster's, its removal is the job of a watchdog shell that waits
//! for its stdin (a pipe only this process holds) to close, then kills
//! PgBouncer (SIGKILL: nothing of it is worth keeping) and deletes its dir:
//! when the [`Bouncer`] is dropped, or the test process ends in any way.
//!
//! Without the `pgbouncer` program (on PATH, or Debian's
//! `/usr/sbin/pgbouncer`), [`Bouncer::start`] prints one line saying the
//! PgBouncer tests are skipped and answers `None`; with
//! `BATON_REQUIRE_POSTGRES=1` it panics instead.

use std::fs::File;
use std::io::Write as _;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::postgres::{Cluster, REQUIRE, is_root};

/// How many server connections each database and user pair shares.
pub const POOL_SIZE: usize = 4;

/// Debian's place for the program (`apt-get install pgbouncer`), which is
/// not on a normal user's PATH.
const DEBIAN: &str = "/usr/sbin/pgbouncer";

/// A running PgBouncer.
pub struct Bouncer {
    dir: PathBuf,
    port: u16,
    /// The PgBouncer process (reaped only after the watchdog killed it, so
    /// its pid is never another process's when the watchdog kills it).
    process: Option<Child>,
    /// The watchdog's stdin: dropping it kills PgBouncer and removes its
    /// dir.
    watchdog: Option<(Child, ChildStdin)>,
}

/// Where the `pgbouncer` program is: PATH first, then Debian's place.
pub fn program() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("pgbouncer"))
            .find(|program| program.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from(DEBIAN);
        debian.is_file().then_some(debian)
    })
}

/// Says that the PgBouncer tests are skipped, once per `cargo test` (as
/// the cluster's fixture says it of the PostgreSQL tests).
fn say_skipped() {
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        let marker = std::env::temp_dir().join(format!(
            "baton-pgbouncer-skipped-{}",
            std::os::unix::process::parent_id()
        ));
        if File::create_new(marker).is_err() {
            return; // another test binary of this run said it
        }
        let _ = writeln!(
            std::io::stderr(),
            "baton: PgBouncer tests SKIPPED: no pgbouncer on PATH or at {DEBIAN} (install it: \
             apt-get install -y pgbouncer; set {REQUIRE}=1 to fail instead)"
        );
    });
}

impl Bouncer {
    /// Starts PgBouncer in front of `cluster`, letting in `users` (each
    /// also a role of the cluster), or `None` if the program is missing
    /// (and `BATON_REQUIRE_POSTGRES` is not `1`).
    pub fn start(cluster: &Cluster, users: &[&str]) -> Option<Bouncer> {
        let Some(program) = program() else {
            if std::env::var(REQUIRE).is_ok_and(|v| v == "1") {
                panic!(
                    "{REQUIRE}=1 but PgBouncer is missing (no pgbouncer on PATH or at {DEBIAN}): \
                     apt-get install -y pgbouncer"
                );
            }
            say_skipped();
            return None;
        };
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "baton-pgbouncer-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("PgBouncer's temp dir");
        let mut bouncer = Bouncer {
            dir,
            port: 0,
            process: None,
            watchdog: None,
        };
        bouncer.start_watchdog();
        let users: String = users
            .iter()
            .map(|user| format!("\"{user}\" \"\"\n"))
            .collect();
        std::fs::write(bouncer.dir.join("users.txt"), users).expect("PgBouncer's auth_file");
        let as_postgres = is_root();
        // A port found free may be taken before PgBouncer binds it: try
        // again with another.
        for attempt in 0.. {
            bouncer.port = free_port();
            bouncer.write_config(cluster.port());
            if as_postgres {
                let chown = Command::new("chown")
                    .arg("-R")
                    .arg("postgres")
                    .arg(&bouncer.dir)
                    .status();
                assert!(
                    chown.is_ok_and(|s| s.success()),
                    "chown PgBouncer's dir to postgres"
                );
            }
            if let Some(process) = bouncer.try_start(&program, as_postgres) {
                let (_, stdin) = bouncer.watchdog.as_mut().expect("the watchdog");
                writeln!(stdin, "{}", process.id()).expect("tell the watchdog PgBouncer's pid");
                bouncer.process = Some(process);
                break;
            }
            assert!(attempt < 3, "PgBouncer did not start: {}", bouncer.log());
        }
        Some(bouncer)
    }

    /// The port PgBouncer listens on (loopback).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection string, through PgBouncer, to database `dbname` of the
    /// cluster as `user`.
    pub fn url(&self, user: &str, dbname: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user={user} dbname={dbname} connect_timeout=5",
            self.port
        )
    }

    /// What PgBouncer logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    fn write_config(&self, server_port: u16) {
        let dir = self.dir.display();
        let config = format!(
            "[databases]\n\
             * = host=127.0.0.1 port={server_port}\n\
             \n\
             [pgbouncer]\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {port}\n\
             unix_socket_dir =\n\
             auth_type = trust\n\
             auth_file = {dir}/users.txt\n\
             pool_mode = transaction\n\
             default_pool_size = {POOL_SIZE}\n\
             max_client_conn = 1000\n",
            port = self.port,
        );
        std::fs::write(self.dir.join("pgbouncer.ini"), config).expect("PgBouncer's config");
    }

    /// Starts PgBouncer on [`port`](Self::port) and waits (bounded) until
    /// it is up: the process, or `None` if it exited (its port taken).
    fn try_start(&self, program: &Path, as_postgres: bool) -> Option<Child> {
        let log = File::create(self.dir.join("log")).expect("PgBouncer's log");
        let mut command = Command::new(program);
        if as_postgres {
            command.args(["-u", "postgres"]);
        }
        let mut process = command
            .arg(self.dir.join("pgbouncer.ini"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("PgBouncer's log"))
            .stderr(log)
            .spawn()
            .expect("start PgBouncer");
        // Up: it logged so once it listens (and before that it binds its
        // port, or exits if it cannot); then the port answers.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if process.try_wait().expect("PgBouncer's status").is_some() {
                return None;
            }
            if self.log().contains("process up")
                && TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            {
                return Some(process);
            }
            if Instant::now() > deadline {
                let _ = process.kill();
                let _ = process.wait();
                panic!("PgBouncer was not up within 10 s: {}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The shell that kills PgBouncer (its pid, the first line it reads)
    /// and removes the dir once its stdin closes.
    fn start_watchdog(&mut self) {
        let script = format!(
            "read pid; cat >/dev/null; [ -n \"$pid\" ] && kill -KILL \"$pid\" 2>/dev/null; \
             rm -rf '{}'",
            self.dir.display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("PgBouncer's watchdog");
        let stdin = child.stdin.take().expect("the watchdog's stdin");
        self.watchdog = Some((child, stdin));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.watchdog.take() {
            drop(stdin);
            let _ = child.wait();
        }
        if let Some(mut process) = self.process.take() {
            let _ = process.wait();
        }
    }
}
