//! A throwaway Patroni cluster on loopback (issue 58): one etcd (which
//! Patroni speaks to with its v2 API: see [`config`] for why), and a
//! Patroni per member, each running its own PostgreSQL (the primary and
//! one or two replicas), in `synchronous_mode` — strict or not — with the
//! shortest timings Patroni takes (`ttl` 5 s, `loop_wait` 1 s). Everything
//! runs from one directory, removed with every process by its watchdog
//! (`managed.rs`). A log reaches it with the multi-host URL of every
//! member and `target_session_attrs=read-write`, without HAProxy: with one,
//! the log would be given the proxy's one address, which Patroni's health
//! checks point at the leader; a new connection then always goes to the
//! leader, and the log never tries a demoted primary first.
//!
//! Without `patroni` and `etcd` on PATH the tests that need it print one
//! line and pass; with `BATON_REQUIRE_HA=1` (as `.ci/run` sets) they fail.

use std::cell::Cell;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use baton::durable::tokio_postgres;
use serde_json::Value;

use super::managed::{self, Dir};
use super::postgres::{USER, free_port, multi_host, server_bin};

/// How Patroni keeps replication synchronous.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// `synchronous_mode: false`, Patroni's default: asynchronous
    /// replicas, the fence alone across a failover.
    Off,
    /// `synchronous_mode: true`: with no replica left, the primary goes on
    /// alone (`synchronous_standby_names = ''`).
    Mode,
    /// `synchronous_mode_strict: true` as well: with no replica left, the
    /// primary's commits wait (`synchronous_standby_names = '*'`).
    Strict,
}

/// A running Patroni cluster.
pub struct Patroni {
    synchronous: Synchronous,
    dir: Option<Dir>,
    etcd: Child,
    /// etcd's client port.
    etcd_port: u16,
    members: Vec<Member>,
    /// How often [`healthy`](Self::healthy) removed a `/sync` key that
    /// named a former leader (see there).
    stale_sync_keys: Cell<usize>,
}

/// One member: its Patroni and the PostgreSQL it runs.
struct Member {
    name: String,
    port: u16,
    rest: u16,
    config: PathBuf,
    data: PathBuf,
    home: PathBuf,
    patroni: Option<Child>,
}

/// Patroni's leader key lives this long without its leader (s).
pub const TTL: u64 = 5;

/// Patroni's key naming the leader and its synchronous standbys
/// (`namespace` and `scope` as [`config`] sets them).
const SYNC_KEY: &str = "/patroni/baton/sync";

/// Patroni's leader key: the member holding it is the leader (the lock
/// every member races for).
const LEADER_KEY: &str = "/patroni/baton/leader";

/// How long a whole cluster may go without a synchronous standby before
/// [`Patroni::healthy`] takes a `/sync` key naming a former leader for
/// stale: a few of Patroni's loops (`loop_wait` 1 s).
const STALE_SYNC: Duration = Duration::from_secs(10);

impl Patroni {
    /// Starts etcd and `members` members (the first becomes the leader),
    /// and waits until the leader takes writes and a replica is its
    /// synchronous standby; `None` without Patroni or etcd (see the
    /// module's docs).
    pub fn start(members: usize, synchronous: Synchronous) -> Option<Patroni> {
        managed::programs(
            "Patroni",
            &["patroni", "etcd"],
            "apt-get install -y patroni etcd-server",
        )?;
        // The server programs' own directory (PATH may hold links to
        // initdb and pg_ctl alone), where Patroni finds pg_controldata.
        let bin = server_bin()?;
        let bin = std::fs::canonicalize(bin.join("initdb"))
            .ok()
            .and_then(|initdb| initdb.parent().map(PathBuf::from))
            .unwrap_or(bin);
        let dir = Dir::new("baton-patroni");
        let (client, peer) = (free_port(), free_port());
        let etcd_data = dir.sub("etcd");
        let etcd = managed::spawn(
            "etcd",
            &[
                "--name=e1",
                &format!("--data-dir={}", etcd_data.join("data").display()),
                &format!("--listen-client-urls=http://127.0.0.1:{client}"),
                &format!("--advertise-client-urls=http://127.0.0.1:{client}"),
                &format!("--listen-peer-urls=http://127.0.0.1:{peer}"),
                &format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"),
                &format!("--initial-cluster=e1=http://127.0.0.1:{peer}"),
                "--heartbeat-interval=10",
                "--election-timeout=100",
                "--log-level=warn",
                // Patroni speaks to etcd's v2 API (see `config`).
                "--enable-v2=true",
            ],
            &etcd_data,
            &etcd_data.join("etcd.log"),
        );
        let modes = match synchronous {
            Synchronous::Off => (false, false),
            Synchronous::Mode => (true, false),
            Synchronous::Strict => (true, true),
        };
        let members = (1..=members)
            .map(|i| {
                let name = format!("pg{i}");
                let home = dir.sub(&name);
                let (port, rest) = (free_port(), free_port());
                let data = home.join("data");
                let config = dir.write(
                    &format!("{name}.yml"),
                    &config(&name, &home, port, rest, client, &bin, modes),
                );
                Member {
                    name,
                    port,
                    rest,
                    config,
                    data,
                    home,
                    patroni: None,
                }
            })
            .collect();
        let mut patroni = Patroni {
            synchronous,
            dir: Some(dir),
            etcd,
            etcd_port: client,
            members,
            stale_sync_keys: Cell::new(0),
        };
        // The first member bootstraps alone, so that it is the leader;
        // the others then copy it.
        patroni.start_member(0);
        patroni.wait_until("the first member leads", Duration::from_secs(60), |p| {
            p.leader() == Some(0)
        });
        for i in 1..patroni.members.len() {
            patroni.start_member(i);
        }
        patroni.healthy(Duration::from_secs(60));
        Some(patroni)
    }

    /// Starts member `i`'s Patroni (again, after [`kill_member`](Self::kill_member)).
    pub fn start_member(&mut self, i: usize) {
        let member = &mut self.members[i];
        let log = member.home.join("patroni.out");
        let config = member.config.to_string_lossy().into_owned();
        member.patroni = Some(managed::spawn("patroni", &[&config], &member.home, &log));
    }

    /// Until a leader takes writes with a synchronous standby (unless
    /// replication is asynchronous), and every member runs (at most
    /// `bound`).
    ///
    /// **Patroni 3.0.2's stale `/sync` key.** A member that took the
    /// leader key and wrote itself into `/sync` as it promoted, then lost
    /// the key to the old primary (still running, so never promoted
    /// again), leaves `/sync` naming it: the leader then refuses to name a
    /// synchronous standby for ever ("Synchronous replication key updated
    /// by someone else", `ha.py`'s `process_sync_replication`). Seen under
    /// load with the 5 s `ttl`, while Patroni spoke etcd's v3 API, over
    /// which the old primary could overwrite the key (see [`config`]); the
    /// remedy is kept. When every member has run for
    /// [`STALE_SYNC`] with no synchronous standby and `/sync` names a
    /// member that does not lead, the key is removed, as an operator would
    /// (the leader writes it afresh on its next loop), and counted in
    /// [`stale_sync_keys`](Self::stale_sync_keys). No write is at risk
    /// meanwhile: the log requires a synchronous standby, and commits wait.
    pub fn healthy(&self, bound: Duration) {
        let mut without_sync: Option<Instant> = None;
        self.wait_until("the cluster is healthy", bound, |p| {
            let members = p.cluster();
            let running = members
                .iter()
                .filter(|m| matches!(m["state"].as_str(), Some("running" | "streaming")))
                .count();
            let leader = p.leader().map(|i| p.members[i].name.as_str());
            let sync = members.iter().any(|m| m["role"] == "sync_standby");
            let asynchronous = p.synchronous == Synchronous::Off || p.members.len() == 1;
            let whole = leader.is_some() && running == p.members.len();
            if whole && !sync && !asynchronous {
                let since = *without_sync.get_or_insert_with(Instant::now);
                let stale = p
                    .sync_key_leader()
                    .filter(|named| Some(named.as_str()) != leader);
                if let (true, Some(named)) = (since.elapsed() >= STALE_SYNC, stale) {
                    eprintln!(
                        "Patroni: /sync names {named}, {leader:?} leads, no synchronous standby \
                         for {STALE_SYNC:?}: the stale key removed, as an operator would"
                    );
                    p.remove_sync_key();
                    p.stale_sync_keys.set(p.stale_sync_keys.get() + 1);
                    without_sync = None;
                }
            } else {
                without_sync = None;
            }
            whole && (sync || asynchronous)
        });
    }

    /// How often [`healthy`](Self::healthy) removed a stale `/sync` key.
    pub fn stale_sync_keys(&self) -> usize {
        self.stale_sync_keys.get()
    }

    /// The leader Patroni's `/sync` key names, if there is one.
    fn sync_key_leader(&self) -> Option<String> {
        let sync: Value = serde_json::from_str(&self.etcd_value(SYNC_KEY)?).ok()?;
        sync["leader"].as_str().map(str::to_owned)
    }

    /// The value of `key` in etcd (its v2 API, which Patroni uses: see
    /// [`config`]), if it is there.
    fn etcd_value(&self, key: &str) -> Option<String> {
        let path = format!("/v2/keys{key}");
        let (status, answer) =
            managed::http("GET", self.etcd_port, &path, "", Duration::from_secs(1))?;
        let answer: Value = serde_json::from_str(&answer)
            .ok()
            .filter(|_| status == 200)?;
        answer["node"]["value"].as_str().map(str::to_owned)
    }

    /// Writes Patroni's `/sync` key naming member `leader` as the leader
    /// and no synchronous standby: the key a member leaves behind that
    /// took the leader key, promoted and lost it again (see
    /// [`healthy`](Self::healthy)), planted by the fixture's own test.
    pub fn plant_sync_key(&self, leader: usize) {
        let value = format!(
            r#"{{"leader":"{}","sync_standby":null}}"#,
            self.members[leader].name
        );
        // The value in the query (etcd's v2 API takes it there too), so
        // that the body needs no form encoding.
        let path = format!("/v2/keys{SYNC_KEY}?value={}", percent_encode(&value));
        let put = managed::http("PUT", self.etcd_port, &path, "", Duration::from_secs(1));
        assert!(
            matches!(put, Some((200 | 201, _))),
            "etcd takes the /sync key: {put:?}"
        );
    }

    /// Removes Patroni's `/sync` key from etcd.
    fn remove_sync_key(&self) {
        let path = format!("/v2/keys{SYNC_KEY}");
        let removed = managed::http("DELETE", self.etcd_port, &path, "", Duration::from_secs(1));
        assert!(
            matches!(removed, Some((200, _))),
            "etcd removes the /sync key: {removed:?}"
        );
    }

    fn wait_until(&self, what: &str, bound: Duration, mut done: impl FnMut(&Patroni) -> bool) {
        let deadline = Instant::now() + bound;
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "Patroni: {what} not within {bound:?}: {:?}\n{}",
                self.cluster(),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The members as Patroni's REST API lists them (`GET /cluster`), from
    /// the member etcd's leader key names if it answers, else from the
    /// first member that does (each answers from its own view of etcd).
    fn cluster(&self) -> Vec<Value> {
        let named = self.leader_key();
        let others = (0..self.members.len()).filter(|i| Some(*i) != named);
        for member in named.into_iter().chain(others).map(|i| &self.members[i]) {
            let answer = managed::http("GET", member.rest, "/cluster", "", Duration::from_secs(1));
            if let Some((200, body)) = answer {
                if let Ok(cluster) = serde_json::from_str::<Value>(&body) {
                    return cluster["members"].as_array().cloned().unwrap_or_default();
                }
            }
        }
        Vec::new()
    }

    /// The member (its index) with `role` (`leader`, `sync_standby`).
    fn with_role(&self, role: &str) -> Option<usize> {
        let name = self.cluster().into_iter().find(|m| {
            m["role"] == role && matches!(m["state"].as_str(), Some("running" | "streaming"))
        })?["name"]
            .as_str()?
            .to_owned();
        self.members.iter().position(|m| m.name == name)
    }

    /// The member etcd's leader key names, if any (whether or not it runs
    /// the primary).
    pub fn leader_key(&self) -> Option<usize> {
        let name = self.etcd_value(LEADER_KEY)?;
        self.members.iter().position(|m| m.name == name)
    }

    /// The leader, if one runs: the member etcd's leader key names, if its
    /// REST API answers `GET /primary` with 200 (Patroni's answer while its
    /// last renewal of the key succeeded, whatever its PostgreSQL does) and
    /// a `role` of `master` (its PostgreSQL out of recovery). No member's
    /// `/cluster` is taken for it: that is the member's own view of etcd,
    /// not etcd.
    pub fn leader(&self) -> Option<usize> {
        let named = self.leader_key()?;
        let rest = self.members[named].rest;
        let (status, body) = managed::http("GET", rest, "/primary", "", Duration::from_secs(1))?;
        let state: Value = serde_json::from_str(&body).ok()?;
        let primary = matches!(state["role"].as_str(), Some("master" | "primary"));
        (status == 200 && primary).then_some(named)
    }

    /// The synchronous standby, if one runs.
    pub fn sync_standby(&self) -> Option<usize> {
        self.with_role("sync_standby")
    }

    /// Member `i`'s name (Patroni's `name`: pg1, pg2, ...).
    pub fn name(&self, i: usize) -> &str {
        &self.members[i].name
    }

    /// Every member's PostgreSQL port, in order.
    pub fn ports(&self) -> Vec<u16> {
        self.members.iter().map(|m| m.port).collect()
    }

    /// A multi-host config of every member, opening on the leader.
    pub fn url(&self, dbname: &str) -> String {
        multi_host(&self.ports(), dbname)
    }

    /// A new database, made on the leader (and so on every member).
    pub async fn database(&self) -> String {
        let (admin, connection) =
            tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
                .await
                .expect("the leader");
        tokio::spawn(connection);
        let name = format!("baton_{}", std::process::id());
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("a database");
        name
    }

    /// SIGKILL of member `i`'s postmaster (Patroni restarts it).
    pub fn kill_postgres(&self, i: usize) {
        if let Some(pid) = managed::postmaster(&self.members[i].data) {
            managed::signal_tree(pid, "-KILL");
        }
    }

    /// SIGKILL of member `i`'s Patroni and its PostgreSQL: the host gone.
    pub fn kill_member(&mut self, i: usize) {
        let member = &mut self.members[i];
        let postmaster = managed::postmaster(&member.data);
        if let Some(mut patroni) = member.patroni.take() {
            let _ = patroni.kill();
            let _ = patroni.wait();
        }
        if let Some(pid) = postmaster {
            managed::signal_tree(pid, "-KILL");
        }
    }

    /// `signal` (`-STOP`, `-CONT`) to member `i`'s Patroni and its
    /// PostgreSQL: the host paused, or cut off, not dead.
    pub fn signal_member(&self, i: usize, signal: &str) {
        let member = &self.members[i];
        if let Some(patroni) = &member.patroni {
            managed::signal_tree(patroni.id(), signal);
        }
        if let Some(pid) = managed::postmaster(&member.data) {
            managed::signal_tree(pid, signal);
        }
    }

    /// Stalls member `i`'s Patroni in the middle of its loop: SIGSTOP of
    /// the backends serving Patroni's own sessions on its PostgreSQL
    /// (`application_name` Patroni). Each loop reads the cluster from etcd and then queries that
    /// session, before it renews the leader key; the loop waits there,
    /// holding the view it read, until the backends are continued
    /// ([`resume`](Self::resume) with what this returns, their ids).
    pub async fn stall_loop(&self, i: usize) -> Vec<u32> {
        let url = format!(
            "host=127.0.0.1 port={} user={USER} dbname=postgres connect_timeout=2",
            self.members[i].port
        );
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("the member's PostgreSQL");
        tokio::spawn(connection);
        let pids: Vec<u32> = client
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'Patroni'",
                &[],
            )
            .await
            .expect("Patroni's sessions")
            .iter()
            .map(|row| row.get::<_, i32>(0) as u32)
            .collect();
        assert!(
            !pids.is_empty(),
            "no session of Patroni's on {}",
            self.members[i].name
        );
        for pid in &pids {
            managed::signal_tree(*pid, "-STOP");
        }
        pids
    }

    /// Continues the backends [`stall_loop`](Self::stall_loop) stopped.
    pub fn resume(&self, pids: &[u32]) {
        for pid in pids {
            managed::signal_tree(*pid, "-CONT");
        }
    }

    /// `signal` (`-STOP`, `-CONT`) to etcd: Patroni's store unreachable.
    pub fn signal_etcd(&self, signal: &str) {
        managed::signal_tree(self.etcd.id(), signal);
    }

    /// A planned switchover to the synchronous standby (Patroni takes no
    /// other candidate in synchronous mode), by the REST API; whether
    /// Patroni says it switched.
    pub fn switchover(&self) -> bool {
        let (Some(leader), Some(candidate)) = (self.leader(), self.sync_standby()) else {
            return false;
        };
        let body = format!(
            r#"{{"leader": "{}", "candidate": "{}"}}"#,
            self.members[leader].name, self.members[candidate].name
        );
        let rest = self.members[leader].rest;
        let answer = managed::http("POST", rest, "/switchover", &body, Duration::from_secs(30));
        matches!(answer, Some((200, _)))
    }

    /// The tail of every member's Patroni log, for a failure's message.
    fn logs(&self) -> String {
        let mut logs = String::new();
        for member in &self.members {
            // Patroni's own log, then its PostgreSQL's output.
            for (file, lines) in [("patroni.log", 30), ("patroni.out", 10)] {
                let log = std::fs::read_to_string(member.home.join(file)).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(lines).collect();
                logs.push_str(&format!("--- {} {file}\n", member.name));
                for line in tail.into_iter().rev() {
                    logs.push_str(line);
                    logs.push('\n');
                }
            }
        }
        logs
    }
}

impl Drop for Patroni {
    fn drop(&mut self) {
        // The watchdog kills every process of the cluster and removes it;
        // then the ones that are this process's children are reaped.
        drop(self.dir.take());
        for child in self
            .members
            .iter_mut()
            .filter_map(|m| m.patroni.as_mut())
            .chain(std::iter::once(&mut self.etcd))
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Member `name`'s Patroni configuration.
///
/// **etcd's v2 API, not v3** (the `etcd:` section, not `etcd3:`). Over
/// v3, Patroni 3.0.2 renews its leader key (`etcd3.py`'s `_update_leader`)
/// with a put that compares nothing: a leader whose loop stalled past the
/// key's lease goes on with the cluster it read before, takes a new lease
/// and overwrites the key a replica has taken since and promoted under;
/// the replica demotes and is rewound onto the old timeline, and every
/// write acknowledged on its timeline is lost. `managed_failover.rs`'s
/// stalled-loop test makes it happen (etcd's history of the key shows the
/// old leader's put over the replica's), and the CI failure of cd2f0e7
/// has its footprint (seed 1796633373383933: 681 anomalies, every one a
/// write under an epoch of timeline 3, the log back on timeline 2's at the
/// end, the paused leader leading again), though Patroni's logs of it
/// were not kept.
/// Patroni 3.0.3 made that put conditional (patroni#2689). Over v2
/// (`etcd.py`), the renewal compares the key with the leader's own name
/// (`prevValue`): it fails ("Compare failed : [pg1 != pg3]") and the
/// stalled leader demotes, and the test passes. Patroni's SETTINGS: the
/// `etcd3` section is for "protocol version 3", `etcd` for version 2; etcd
/// 3.4 serves v2 only with `--enable-v2=true` (its 3.4 upgrade notes), as
/// [`Patroni::start`] starts it.
fn config(
    name: &str,
    home: &std::path::Path,
    port: u16,
    rest: u16,
    etcd: u16,
    bin: &std::path::Path,
    (synchronous, strict): (bool, bool),
) -> String {
    let home = home.display();
    let bin = bin.display();
    format!(
        r#"scope: baton
namespace: /patroni/
name: {name}
log:
  level: INFO
  dir: {home}
restapi:
  listen: 127.0.0.1:{rest}
  connect_address: 127.0.0.1:{rest}
etcd:
  host: 127.0.0.1:{etcd}
bootstrap:
  dcs:
    ttl: {TTL}
    loop_wait: 1
    retry_timeout: 2
    maximum_lag_on_failover: 1048576
    synchronous_mode: {synchronous}
    synchronous_mode_strict: {strict}
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_log_hints: "on"
        synchronous_commit: "on"
        wal_retrieve_retry_interval: 200ms
  initdb:
    - encoding: UTF8
    - auth: trust
    - username: {USER}
    - no-sync
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:{port}
  connect_address: 127.0.0.1:{port}
  data_dir: {home}/data
  bin_dir: {bin}
  pgpass: {home}/pgpass
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
  authentication:
    superuser:
      username: {USER}
    replication:
      username: {USER}
  parameters:
    unix_socket_directories: {home}
    shared_buffers: 16MB
  basebackup:
    - checkpoint: fast
watchdog:
  mode: "off"
"#
    )
}

/// `text` percent-encoded for a URL's query (every byte but the unreserved
/// ones).
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
