//! A throwaway pg_auto_failover formation on loopback (issue 58): a
//! monitor and two data nodes, each run by its `pg_autoctl` (the keeper),
//! with pg_auto_failover's defaults — the secondary a synchronous standby
//! (`synchronous_standby_names = 'ANY 1 (…)'`) — and the monitor's health
//! checks made as short as they go, so that it fails over within seconds.
//! Everything runs from one directory, removed with every process (and
//! the keepers' semaphores) by its watchdog (`managed.rs`). A log reaches
//! it with the multi-host URL of both nodes and
//! `target_session_attrs=read-write`, as `pg_autoctl show uri` gives it.
//!
//! Without `pg_autoctl` on PATH the tests that need it print one line and
//! pass; with `BATON_REQUIRE_HA=1` (as `.ci/run` sets) they fail.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::managed::{self, Dir};
use super::postgres::{USER, free_port, multi_host, server_bin};

/// The monitor's health checks (its `postgresql.conf`; the defaults are
/// 5 s, 20 s and 30 s): a node is checked every 0.5 s and unhealthy once
/// missed for 2 s, and a primary being failed over is given 1 s to
/// demote itself.
const HEALTH: &str = "
pgautofailover.health_check_period = 500
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 2000
pgautofailover.primary_demote_timeout = 1000
pgautofailover.startup_grace_period = 1000
";

/// A running formation.
pub struct AutoFailover {
    dir: Option<Dir>,
    bin: PathBuf,
    env: Vec<(&'static str, String)>,
    monitor: Node,
    nodes: Vec<Node>,
}

/// The monitor or a data node: its keeper and the PostgreSQL it runs.
struct Node {
    name: String,
    port: u16,
    data: PathBuf,
    keeper: Option<Child>,
}

impl AutoFailover {
    /// Starts the monitor and two nodes (the first becomes the primary),
    /// and waits until the primary takes writes with the other its
    /// secondary; `None` without pg_auto_failover (see the module's docs).
    pub fn start() -> Option<AutoFailover> {
        managed::programs(
            "pg_auto_failover",
            &["pg_autoctl"],
            "apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli",
        )?;
        let bin = server_bin()?;
        let bin = std::fs::canonicalize(bin.join("initdb"))
            .ok()
            .and_then(|initdb| initdb.parent().map(PathBuf::from))
            .unwrap_or(bin);
        // Each keeper holds a System V semaphore, which a killed one
        // leaves behind, even once started again: its id is the fifth
        // line of its pid file, and each one seen is kept in `semaphores`.
        let dir = Dir::with_cleanup(
            "baton-paf",
            r#"for f in $(find "$BATON_MANAGED_DIR" -name pg_autoctl.pid); do
                   sed -n 5p "$f" >> "$BATON_MANAGED_DIR/semaphores"
               done
               for s in $(sort -u "$BATON_MANAGED_DIR/semaphores" 2>/dev/null); do
                   ipcrm -s "$s" 2>/dev/null
               done"#,
        );
        let root = dir.path().to_path_buf();
        for sub in ["home", "xdg", "xdg/config", "xdg/data", "xdg/run", "sock"] {
            dir.sub(sub);
        }
        let env = vec![
            (
                "XDG_CONFIG_HOME",
                root.join("xdg/config").display().to_string(),
            ),
            ("XDG_DATA_HOME", root.join("xdg/data").display().to_string()),
            (
                "XDG_RUNTIME_DIR",
                root.join("xdg/run").display().to_string(),
            ),
            ("PGHOST", root.join("sock").display().to_string()),
            // The servers' sockets in `sock`, not /var/run/postgresql;
            // with it, no memory tuning to the machine's size.
            (
                "PG_REGRESS_SOCK_DIR",
                root.join("sock").display().to_string(),
            ),
            ("PG_AUTOCTL_DEBUG", "1".to_owned()),
            ("PATH", format!("{}:/usr/bin:/bin", bin.display())),
        ];
        let node = |name: &str| Node {
            name: name.to_owned(),
            port: free_port(),
            data: root.join(name),
            keeper: None,
        };
        let mut formation = AutoFailover {
            monitor: node("monitor"),
            nodes: vec![node("node1"), node("node2")],
            dir: Some(dir),
            bin,
            env,
        };
        let monitor = formation.monitor.data.display().to_string();
        let port = formation.monitor.port.to_string();
        formation.autoctl(&[
            "create",
            "monitor",
            "--pgdata",
            &monitor,
            "--pgport",
            &port,
            "--hostname",
            "127.0.0.1",
            "--auth",
            "trust",
            "--no-ssl",
        ]);
        formation.autoctl(&[
            "config",
            "set",
            "--pgdata",
            &monitor,
            "postgresql.listen_addresses",
            "127.0.0.1",
        ]);
        let conf = formation.monitor.data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).expect("the monitor's settings");
        text.push_str(HEALTH);
        std::fs::write(&conf, text).expect("the monitor's health checks");
        let keeper = formation.keeper(&["run", "--pgdata", &monitor], "monitor");
        formation.monitor.keeper = Some(keeper);
        formation.wait_until("the monitor answers", |f| f.states().is_some());
        for i in 0..formation.nodes.len() {
            formation.create(i);
            let name = formation.nodes[i].name.clone();
            formation.wait_until(&format!("{name} runs"), |f| {
                f.states()
                    .is_some_and(|states| states.len() > i && f.whole(&states))
            });
            if i == 0 {
                // A base backup's checkpoint at once, not spread (8-10 s
                // here), and a standby that retries its primary every
                // 0.2 s, not 5 s (copied to it with the settings).
                let port = formation.nodes[0].port;
                for sql in [
                    "ALTER SYSTEM SET checkpoint_completion_target = 0",
                    "ALTER SYSTEM SET wal_retrieve_retry_interval = '200ms'",
                    "SELECT pg_reload_conf()",
                ] {
                    formation.psql(port, "postgres", sql);
                }
            }
        }
        formation.keep_semaphores();
        // The tests' superuser, on the primary (and so on the secondary).
        formation.psql(
            formation.nodes[0].port,
            "postgres",
            &format!("CREATE ROLE {USER} SUPERUSER LOGIN"),
        );
        Some(formation)
    }

    /// Node `i`'s keeper, creating and initialising it (a secondary
    /// copies the primary).
    fn create(&mut self, i: usize) {
        let node = &self.nodes[i];
        let (data, port, name) = (
            node.data.display().to_string(),
            node.port.to_string(),
            node.name.clone(),
        );
        let monitor = self.monitor_uri();
        let pg_ctl = self.bin.join("pg_ctl").display().to_string();
        let keeper = self.keeper(
            &[
                "create",
                "postgres",
                "--pgdata",
                &data,
                "--pgport",
                &port,
                "--listen",
                "127.0.0.1",
                "--hostname",
                "127.0.0.1",
                "--name",
                &name,
                "--monitor",
                &monitor,
                "--auth",
                "trust",
                "--no-ssl",
                "--pgctl",
                &pg_ctl,
                "--run",
            ],
            &name,
        );
        self.nodes[i].keeper = Some(keeper);
    }

    /// Starts node `i`'s keeper again (after [`kill_node`](Self::kill_node)).
    pub fn start_node(&mut self, i: usize) {
        let data = self.nodes[i].data.display().to_string();
        let name = self.nodes[i].name.clone();
        let keeper = self.keeper(&["run", "--pgdata", &data], &name);
        self.nodes[i].keeper = Some(keeper);
    }

    fn root(&self) -> &Path {
        self.dir.as_ref().expect("the formation's dir").path()
    }

    fn monitor_uri(&self) -> String {
        format!(
            "postgres://autoctl_node@127.0.0.1:{}/pg_auto_failover?sslmode=disable",
            self.monitor.port
        )
    }

    /// `pg_autoctl` with `args`, in the foreground, as `postgres`.
    fn autoctl(&self, args: &[&str]) {
        let home = self.root().join("home");
        let log = self.root().join("autoctl.log");
        let mut child = managed::spawn_with("pg_autoctl", args, &home, &log, &self.env);
        let status = child.wait().expect("pg_autoctl");
        assert!(
            status.success(),
            "pg_autoctl {args:?}: {status}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// A keeper in the background, its output in `name.log`.
    fn keeper(&self, args: &[&str], name: &str) -> Child {
        let home = self.root().join("home");
        let log = self.root().join(format!("{name}.log"));
        managed::spawn_with("pg_autoctl", args, &home, &log, &self.env)
    }

    /// `sql` on `port`'s database `dbname` as `postgres` (psql): its rows,
    /// `:`-separated, or `None` if it failed.
    fn try_psql(&self, port: u16, dbname: &str, sql: &str) -> Option<String> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-At", "-F:", "-R", " ", "-c", sql])
            .arg(format!(
                "host=127.0.0.1 port={port} user=postgres dbname={dbname} connect_timeout=2"
            ))
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    fn psql(&self, port: u16, dbname: &str, sql: &str) -> String {
        self.try_psql(port, dbname, sql)
            .unwrap_or_else(|| panic!("psql on {port}: {sql}"))
    }

    /// Each node's name, reported state and goal state, as the monitor
    /// holds them; `None` if it does not answer.
    fn states(&self) -> Option<Vec<(String, String, String)>> {
        let rows = self.try_psql(
            self.monitor.port,
            "pg_auto_failover",
            "SELECT nodename, reportedstate, goalstate FROM pgautofailover.node ORDER BY nodeid",
        )?;
        Some(
            rows.split_whitespace()
                .filter_map(|row| {
                    let mut parts = row.split(':');
                    Some((
                        parts.next()?.to_owned(),
                        parts.next()?.to_owned(),
                        parts.next()?.to_owned(),
                    ))
                })
                .collect(),
        )
    }

    /// Whether every node listed has reached its goal, one the primary
    /// (or alone), the others secondaries.
    fn whole(&self, states: &[(String, String, String)]) -> bool {
        let settled = states.iter().all(|(_, reported, goal)| reported == goal);
        let primary = states
            .iter()
            .filter(|(_, reported, _)| reported == "primary" || reported == "single")
            .count();
        let secondaries = states
            .iter()
            .filter(|(_, reported, _)| reported == "secondary")
            .count();
        settled && primary == 1 && primary + secondaries == states.len()
    }

    fn wait_until(&self, what: &str, done: impl Fn(&AutoFailover) -> bool) {
        let bound = Duration::from_secs(90);
        let deadline = Instant::now() + bound;
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "pg_auto_failover: {what} not within {bound:?}: {:?}",
                self.states()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Until the primary takes writes with its secondary in sync, both
    /// nodes at their goal.
    pub fn healthy(&self) {
        self.wait_until("the formation is whole", |f| {
            f.states()
                .is_some_and(|states| states.len() == f.nodes.len() && f.whole(&states))
        });
        self.keep_semaphores();
    }

    /// Notes every keeper's semaphore now, for the watchdog to remove.
    fn keep_semaphores(&self) {
        let mut ids = String::new();
        let run = self.root().join("xdg/run/pg_autoctl");
        for node in self.nodes.iter().chain(std::iter::once(&self.monitor)) {
            // The keeper's files are under its data directory's path.
            let relative = node.data.strip_prefix("/").unwrap_or(&node.data);
            let pid = std::fs::read_to_string(run.join(relative).join("pg_autoctl.pid"));
            if let Some(id) = pid
                .ok()
                .and_then(|text| text.lines().nth(4).map(str::to_owned))
            {
                ids.push_str(&id);
                ids.push('\n');
            }
        }
        let file = self.root().join("semaphores");
        let mut kept = std::fs::read_to_string(&file).unwrap_or_default();
        kept.push_str(&ids);
        let _ = std::fs::write(file, kept);
    }

    /// The node (its index) the monitor says is in `state`.
    fn in_state(&self, state: &str) -> Option<usize> {
        let states = self.states()?;
        let (name, _, _) = states.iter().find(|(_, reported, _)| reported == state)?;
        self.nodes.iter().position(|node| &node.name == name)
    }

    /// The primary, if one is.
    pub fn leader(&self) -> Option<usize> {
        self.in_state("primary").or_else(|| self.in_state("single"))
    }

    /// The secondary, if one is.
    pub fn secondary(&self) -> Option<usize> {
        self.in_state("secondary")
    }

    /// Every node's PostgreSQL port, in order.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|node| node.port).collect()
    }

    /// A multi-host config of both nodes, opening on the primary.
    pub fn url(&self, dbname: &str) -> String {
        multi_host(&self.ports(), dbname)
    }

    /// A new database, made on the primary (and so on the secondary).
    pub async fn database(&self) -> String {
        let name = format!("baton_{}", std::process::id());
        let port = self.ports()[self.leader().expect("a primary")];
        self.psql(
            port,
            "postgres",
            &format!("CREATE DATABASE {name} OWNER {USER}"),
        );
        name
    }

    /// SIGKILL of node `i`'s postmaster (its keeper restarts it).
    pub fn kill_postgres(&self, i: usize) {
        if let Some(pid) = managed::postmaster(&self.nodes[i].data) {
            managed::signal_tree(pid, "-KILL");
        }
    }

    /// SIGKILL of node `i`'s keeper and its PostgreSQL: the host gone.
    pub fn kill_node(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let postmaster = managed::postmaster(&node.data);
        if let Some(mut keeper) = node.keeper.take() {
            managed::signal_tree(keeper.id(), "-KILL");
            let _ = keeper.wait();
        }
        if let Some(pid) = postmaster {
            managed::signal_tree(pid, "-KILL");
        }
    }

    /// `signal` (`-STOP`, `-CONT`) to node `i`'s keeper and its
    /// PostgreSQL: the host paused, or cut off, not dead.
    pub fn signal_node(&self, i: usize, signal: &str) {
        signal_keeper(&self.nodes[i], signal);
    }

    /// `signal` (`-STOP`, `-CONT`) to the monitor.
    pub fn signal_monitor(&self, signal: &str) {
        signal_keeper(&self.monitor, signal);
    }

    /// Takes node `i` out of the primary's quorum (`pg_autoctl set node
    /// replication-quorum false`): an asynchronous standby, the fence
    /// alone across a failover. Until the primary names no standby.
    pub fn leave_quorum(&self, i: usize) {
        let home = self.root().join("home");
        let log = self.root().join("autoctl.log");
        let data = self.nodes[i].data.display().to_string();
        let args = [
            "set",
            "node",
            "replication-quorum",
            "false",
            "--pgdata",
            &data,
        ];
        // pg_autoctl 2.0 logs errors of its own here and sets it anyway.
        let _ = managed::spawn_with("pg_autoctl", &args, &home, &log, &self.env).wait();
        let primary = self.ports()[self.leader().expect("a primary")];
        self.wait_until("the primary names no standby", |f| {
            f.try_psql(primary, "postgres", "SHOW synchronous_standby_names")
                .is_some_and(|names| names.is_empty())
        });
    }

    /// A planned switchover (`pg_autoctl perform switchover`); whether it
    /// finished.
    pub fn switchover(&self) -> bool {
        let home = self.root().join("home");
        let log = self.root().join("autoctl.log");
        let monitor = self.monitor_uri();
        let args = [
            "perform",
            "switchover",
            "--monitor",
            &monitor,
            "--formation",
            "default",
        ];
        let mut child = managed::spawn_with("pg_autoctl", &args, &home, &log, &self.env);
        child.wait().is_ok_and(|status| status.success())
    }
}

/// `signal` to a keeper, its services and its PostgreSQL.
fn signal_keeper(node: &Node, signal: &str) {
    if let Some(keeper) = &node.keeper {
        managed::signal_tree(keeper.id(), signal);
    }
    if let Some(pid) = managed::postmaster(&node.data) {
        managed::signal_tree(pid, signal);
    }
}

impl Drop for AutoFailover {
    fn drop(&mut self) {
        drop(self.dir.take());
        for keeper in self
            .nodes
            .iter_mut()
            .chain(std::iter::once(&mut self.monitor))
            .filter_map(|node| node.keeper.as_mut())
        {
            let _ = keeper.kill();
            let _ = keeper.wait();
        }
    }
}
