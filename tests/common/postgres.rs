//! A throwaway PostgreSQL cluster for the tests: `initdb` and `pg_ctl`
//! from PATH (or Debian's `/usr/lib/postgresql/*/bin`), a fresh temp dir,
//! a free loopback port, trust authentication; run as the `postgres` user
//! (through `runuser`) when the tests run as root, since the server refuses
//! to run as root. `scripts/postgres` starts the same server by hand.
//!
//! Removal is the job of a watchdog: a shell started beside the cluster
//! that waits for its stdin (a pipe only this process holds) to close and
//! then stops the server (`-m immediate`; a server a test paused with
//! SIGSTOP is continued first, and killed if it still does not stop) and
//! deletes the dir. The pipe
//! closes when the [`Cluster`] is dropped, and also when the test process
//! ends in any way (a panic, an abort, a SIGKILL): no cluster outlives its
//! test binary.
//!
//! [`Cluster::start_tls`] starts one that also speaks TLS (`ssl=on`; plain
//! connections are still accepted): at start it makes a CA of its own and
//! a server certificate for `127.0.0.1` and `localhost` signed by it
//! (rcgen), whose certificate a client trusts ([`Cluster::ca_der`]).
//!
//! Without the server programs, [`Cluster::start`] prints one line saying
//! the PostgreSQL tests are skipped and how to install the server, and
//! answers `None` (the tests pass); with `BATON_REQUIRE_POSTGRES=1` (as
//! `.ci/run` sets) it panics instead.

use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The variable under which a missing server fails the tests.
pub const REQUIRE: &str = "BATON_REQUIRE_POSTGRES";

/// The database superuser `initdb` creates (trust authentication).
pub const USER: &str = "baton";

/// A TLS cluster's server certificate and key, in the cluster's dir.
const CERT: &str = "server.crt";
const KEY: &str = "server.key";

/// A running throwaway cluster.
pub struct Cluster {
    dir: PathBuf,
    port: u16,
    bin: PathBuf,
    as_postgres: bool,
    /// The CA the server's certificate is signed by, if it speaks TLS.
    tls: Option<Tls>,
    /// The watchdog's stdin: dropping it stops and removes the cluster.
    watchdog: Option<(Child, ChildStdin)>,
    /// More server settings, each `name=value`, given at every start.
    settings: Vec<String>,
}

/// A TLS cluster's CA certificate, in both encodings.
struct Tls {
    ca_der: Vec<u8>,
    ca_pem: String,
}

/// The variable naming the directory of the server programs, instead of
/// PATH and Debian's directories.
pub const BIN: &str = "BATON_POSTGRES_BIN";

/// Where the server programs are: `$BATON_POSTGRES_BIN` if set, else PATH
/// first, then Debian's versioned directories (the newest), where
/// `apt-get install postgresql` puts them.
pub fn server_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(BIN) {
        let dir = PathBuf::from(dir);
        return (dir.join("initdb").is_file() && dir.join("pg_ctl").is_file()).then_some(dir);
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
    });
    on_path.or_else(|| {
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let version = entry.file_name().to_str()?.parse().ok()?;
                let bin = entry.path().join("bin");
                bin.join("initdb").is_file().then_some((version, bin))
            })
            .collect();
        versions.sort();
        versions.pop().map(|(_, bin)| bin)
    })
}

/// Whether the tests run as root (then the servers run as `postgres`).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// Says that the PostgreSQL tests are skipped, past libtest's capture so
/// that it shows in a passing run: once per `cargo test`, whichever of its
/// test binaries (children of one cargo process) says it first — a marker
/// file in the temp dir, named by cargo's pid, remembers that it was said.
fn say_skipped() {
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        let marker = std::env::temp_dir().join(format!(
            "baton-postgres-skipped-{}",
            std::os::unix::process::parent_id()
        ));
        if std::fs::File::create_new(marker).is_err() {
            return; // another test binary of this run said it
        }
        let _ = writeln!(
            std::io::stderr(),
            "baton: PostgreSQL tests SKIPPED: no initdb/pg_ctl in ${BIN}, on PATH or in \
             /usr/lib/postgresql/*/bin (install the server: apt-get install -y postgresql; \
             set {REQUIRE}=1 to fail instead)"
        );
    });
}

/// A config of the servers on loopback `ports` (user [`USER`], database
/// `dbname`), opening on the one that accepts writes, each given 2 s to
/// answer (libpq's multi-host rule).
pub fn multi_host(ports: &[u16], dbname: &str) -> String {
    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
    let hosts = vec!["127.0.0.1"; ports.len()].join(",");
    format!(
        "host={hosts} port={} user={USER} dbname={dbname} connect_timeout=2 \
         target_session_attrs=read-write",
        ports.join(",")
    )
}

/// A loopback port free now (another process may take it before it is bound).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

impl Cluster {
    /// Starts a new cluster, or `None` if the server programs are missing
    /// (and `BATON_REQUIRE_POSTGRES` is not `1`).
    pub fn start() -> Option<Cluster> {
        Cluster::start_with(false)
    }

    /// Starts a new cluster that speaks TLS (`ssl=on`, with a CA and a
    /// server certificate it makes now; see [`ca_der`](Self::ca_der)) and
    /// still accepts plain connections; `None` as [`start`](Self::start).
    pub fn start_tls() -> Option<Cluster> {
        Cluster::start_with(true)
    }

    /// Starts a new cluster with more server settings (`name=value`,
    /// each passed as `-c`); `None` as [`start`](Self::start).
    pub fn start_with_settings(settings: &[&str]) -> Option<Cluster> {
        Cluster::start_configured(false, settings)
    }

    fn start_with(tls: bool) -> Option<Cluster> {
        Cluster::start_configured(tls, &[])
    }

    fn start_configured(tls: bool, settings: &[&str]) -> Option<Cluster> {
        let Some(bin) = server_bin() else {
            if std::env::var(REQUIRE).is_ok_and(|v| v == "1") {
                panic!(
                    "{REQUIRE}=1 but the PostgreSQL server programs (initdb, pg_ctl) are missing: \
                     apt-get install -y postgresql"
                );
            }
            say_skipped();
            return None;
        };
        let mut cluster = Cluster::in_a_new_dir("baton-pg", bin);
        cluster.settings = settings.iter().map(|s| (*s).to_owned()).collect();
        let mut initdb = cluster.command("initdb");
        initdb.arg("-D").arg(cluster.data()).args([
            "-A",
            "trust",
            "-U",
            USER,
            "--no-sync",
            "-E",
            "UTF8",
        ]);
        cluster.run(&mut initdb);
        if tls {
            cluster.tls = Some(cluster.make_certificates());
        }
        cluster.start_on_a_free_port();
        Some(cluster)
    }

    /// A cluster not started yet, in a fresh temp dir named after
    /// `prefix` (owned by `postgres` when the tests run as root), its
    /// watchdog already watching it.
    fn in_a_new_dir(prefix: &str, bin: PathBuf) -> Cluster {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "{prefix}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the cluster's temp dir");
        let mut cluster = Cluster {
            dir,
            port: 0,
            bin,
            as_postgres: is_root(),
            tls: None,
            watchdog: None,
            settings: Vec::new(),
        };
        if cluster.as_postgres {
            cluster.run(Command::new("chown").arg("postgres").arg(&cluster.dir));
        }
        cluster.start_watchdog();
        cluster
    }

    /// Starts the server on a free loopback port: a port found free may be
    /// taken before the server binds it, so another is tried.
    fn start_on_a_free_port(&mut self) {
        for attempt in 0.. {
            self.port = free_port();
            if self.try_start() {
                break;
            }
            assert!(attempt < 3, "the server did not start: {}", self.log());
        }
    }

    /// The cluster shared by the tests of this binary (removed when the
    /// binary exits, by its watchdog).
    pub fn shared() -> Option<&'static Cluster> {
        static SHARED: OnceLock<Option<Cluster>> = OnceLock::new();
        SHARED.get_or_init(Cluster::start).as_ref()
    }

    /// The TLS cluster shared by the tests of this binary (see
    /// [`start_tls`](Self::start_tls)).
    pub fn shared_tls() -> Option<&'static Cluster> {
        static SHARED: OnceLock<Option<Cluster>> = OnceLock::new();
        SHARED.get_or_init(Cluster::start_tls).as_ref()
    }

    /// The DER of the CA certificate a TLS cluster's server certificate is
    /// signed by (for a client's root store); `None` without TLS.
    pub fn ca_der(&self) -> Option<&[u8]> {
        self.tls.as_ref().map(|tls| tls.ca_der.as_slice())
    }

    /// The same CA certificate in PEM; `None` without TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(|tls| tls.ca_pem.as_str())
    }

    /// The server's loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection string to database `dbname`.
    pub fn url(&self, dbname: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user={USER} dbname={dbname} connect_timeout=5",
            self.port
        )
    }

    /// A connection string to `dbname` through `port` (a proxy's).
    pub fn url_via(&self, port: u16, dbname: &str) -> String {
        format!("host=127.0.0.1 port={port} user={USER} dbname={dbname} connect_timeout=2")
    }

    /// Creates a fresh database and answers its name.
    pub async fn database(&self) -> String {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!("t{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let admin = self.connect("postgres").await;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("CREATE DATABASE");
        name
    }

    /// A plain client connection to `dbname` (for a test's own SQL), its
    /// connection driven by a task of the current runtime.
    pub async fn connect(&self, dbname: &str) -> tokio_postgres::Client {
        let (client, connection) =
            tokio_postgres::connect(&self.url(dbname), tokio_postgres::NoTls)
                .await
                .expect("connect to the test cluster");
        tokio::spawn(connection);
        client
    }

    /// Ends every session on `dbname` but `admin`'s own
    /// (`pg_terminate_backend`), as a server does when it drops clients;
    /// answers how many it ended.
    pub async fn end_sessions(admin: &tokio_postgres::Client, dbname: &str) -> i64 {
        admin
            .query_one(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND pid <> pg_backend_pid()) ended",
                &[&dbname],
            )
            .await
            .expect("end the sessions")
            .get(0)
    }

    /// The server's crash: `pg_ctl stop -m immediate` (no checkpoint; WAL
    /// replay at the next start).
    pub fn crash(&self) {
        let mut stop = self.command("pg_ctl");
        stop.arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"]);
        self.run(&mut stop);
    }

    /// The harder crash: SIGKILL of the postmaster (its children then end
    /// on their own; the next start replays the WAL).
    pub fn kill_postmaster(&self) {
        let pid = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next().map(str::to_owned))
            .expect("the postmaster's pid");
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
        // Its backends notice the postmaster's death and exit; wait until
        // nothing listens any more, so a restart finds the port free.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(Instant::now() < deadline, "the killed server still listens");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The running server's postmaster's process id.
    pub fn postmaster_pid(&self) -> String {
        std::fs::read_to_string(self.data().join("postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next().map(str::to_owned))
            .expect("the postmaster's pid")
    }

    /// Sends `signal` (`-STOP`, `-CONT`, `-KILL`) to the postmaster and
    /// every process it started: `-STOP` is a server paused, or cut off,
    /// not dead — its sockets stay open and answer nothing.
    pub fn signal_all(&self, signal: &str) {
        let pid = self.postmaster_pid();
        let mut pids = vec![pid.clone()];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // `pid (comm) state ppid …`: the comm may hold spaces.
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1));
            if parent == Some(pid.as_str()) {
                pids.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        // A backend may have ended meanwhile: `kill` says so, and that is
        // no matter.
        let _ = Command::new("kill")
            .arg(signal)
            .args(&pids)
            .stderr(std::process::Stdio::null())
            .status();
    }

    /// Starts the (stopped or crashed) server again on the same port.
    pub fn restart(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.try_start() {
            assert!(
                Instant::now() < deadline,
                "the server did not restart: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn try_start(&self) -> bool {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200",
            self.port,
            self.dir.display()
        );
        for setting in &self.settings {
            options.push_str(&format!(" -c {setting}"));
        }
        if self.tls.is_some() {
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                self.dir.join(CERT).display(),
                self.dir.join(KEY).display()
            ));
        }
        let mut start = self.command("pg_ctl");
        start
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("log"))
            .args(["-w", "-t", "30", "start", "-o"])
            .arg(options);
        start
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Makes a CA and a server certificate for `127.0.0.1` and `localhost`
    /// signed by it, and writes the server's certificate and key into the
    /// cluster's dir: the key with mode 0600 and owned by the server's OS
    /// user, or the server refuses to start. Answers the CA's certificate.
    fn make_certificates(&self) -> Tls {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
            IsCa, KeyPair, KeyUsagePurpose,
        };
        let mut ca = CertificateParams::new(Vec::new()).expect("the CA's parameters");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "baton test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("the CA's key"))
            .expect("the CA's certificate");
        let mut server = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
            .expect("the server certificate's parameters");
        server
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        server.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("the server's key");
        let certificate = server
            .signed_by(&key, &ca)
            .expect("the server's certificate");
        let write = |name: &str, mode: u32, text: &str| {
            let path = self.dir.join(name);
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&path)
                .and_then(|mut file| file.write_all(text.as_bytes()))
                .unwrap_or_else(|error| panic!("write {}: {error}", path.display()));
            if self.as_postgres {
                self.run(Command::new("chown").arg("postgres").arg(&path));
            }
        };
        write(CERT, 0o644, &certificate.pem());
        write(KEY, 0o600, &key.serialize_pem());
        Tls {
            ca_der: ca.der().to_vec(),
            ca_pem: ca.pem(),
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// A server program, run as `postgres` if the tests run as root.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    fn run(&self, command: &mut Command) {
        let out = command.output().expect("run a server program");
        assert!(
            out.status.success(),
            "{command:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The shell that removes the cluster once its stdin closes.
    fn start_watchdog(&mut self) {
        let stop = self.command("pg_ctl");
        let mut words: Vec<String> = vec![stop.get_program().to_string_lossy().into_owned()];
        words.extend(stop.get_args().map(|a| a.to_string_lossy().into_owned()));
        // A server a test paused (SIGSTOP) and never continued — it died
        // between the two — acts on no signal until continued: the
        // postmaster and its children are continued first, and killed if
        // the stop fails (only if the pid is still a postgres process).
        let script = format!(
            "cat >/dev/null; d='{data}'; \
             pid=$(head -n 1 \"$d/postmaster.pid\" 2>/dev/null); \
             case \"$pid\" in ''|*[!0-9]*) pid= ;; esac; \
             if [ -n \"$pid\" ] && [ \"$(cat /proc/$pid/comm 2>/dev/null)\" = postgres ]; then \
                 kids=$(pgrep -P \"$pid\"); kill -CONT \"$pid\" $kids 2>/dev/null; \
             else pid=; fi; \
             {stop} -D \"$d\" -m immediate -t 10 -w stop >/dev/null 2>&1 \
                 || {{ [ -n \"$pid\" ] && kill -KILL \"$pid\" $(pgrep -P \"$pid\") 2>/dev/null; }}; \
             rm -rf '{dir}'",
            stop = words.join(" "),
            data = self.data().display(),
            dir = self.dir.display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the cluster's watchdog");
        let stdin = child.stdin.take().expect("the watchdog's stdin");
        self.watchdog = Some((child, stdin));
    }

    /// The cluster's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A hot standby of this cluster (the primary), streaming its WAL: a
    /// base backup (`pg_basebackup -R -X stream`, which writes the
    /// standby's `primary_conninfo`) started on a port of its own, removed
    /// as every cluster is. Asynchronous until the primary names it in
    /// `synchronous_standby_names`.
    pub fn standby(&self) -> Cluster {
        // The server programs' own directory (PATH may hold links to
        // initdb and pg_ctl alone), where pg_basebackup is too.
        let bin = std::fs::canonicalize(self.bin.join("initdb"))
            .ok()
            .and_then(|initdb| initdb.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| self.bin.clone());
        let mut standby = Cluster::in_a_new_dir("baton-pg-standby", bin);
        standby.settings = self.settings.clone();
        let mut backup = standby.command("pg_basebackup");
        backup
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                USER,
                "-D",
            ])
            .arg(standby.data())
            .args(["-R", "-X", "stream", "--no-sync", "--checkpoint=fast"]);
        standby.run(&mut backup);
        standby.start_on_a_free_port();
        standby
    }

    /// A streaming standby of this cluster made synchronous: named in
    /// this primary's `synchronous_standby_names` (only here, after the
    /// base backup: a promoted standby that named one of its own would
    /// wait for it), once it is in sync. Every commit here then waits for
    /// it.
    pub async fn synchronous_standby(&self) -> Cluster {
        let standby = self.standby();
        let admin = self.connect("postgres").await;
        // Two statements: ALTER SYSTEM runs outside a transaction block.
        for statement in [
            "ALTER SYSTEM SET synchronous_standby_names = '*'",
            "SELECT pg_reload_conf()",
        ] {
            admin.batch_execute(statement).await.unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let sync: i64 = admin
                .query_one(
                    "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            if sync == 1 {
                return standby;
            }
            assert!(Instant::now() < deadline, "the standby never got in sync");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Until this primary's streaming standbys have replayed everything
    /// it holds now.
    pub async fn standbys_caught_up(&self) {
        let admin = self.connect("postgres").await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let behind: bool = admin
                .query_one(
                    "SELECT coalesce(bool_or(replay_lsn < pg_current_wal_lsn()), true) \
                     FROM pg_stat_replication",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            if !behind {
                return;
            }
            assert!(Instant::now() < deadline, "the standby never caught up");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops the server cleanly (`pg_ctl stop -m fast`); `restart` starts
    /// it again.
    pub fn stop(&self) {
        let mut stop = self.command("pg_ctl");
        stop.arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"]);
        self.run(&mut stop);
    }

    /// Promotes a standby to a primary (`pg_ctl promote`, waiting until it
    /// accepts writes).
    pub fn promote(&self) {
        let mut promote = self.command("pg_ctl");
        promote
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-t", "30", "promote"]);
        self.run(&mut promote);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.watchdog.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}
