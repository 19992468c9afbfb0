//! What the fixtures of the high-availability managers share (issue 58:
//! `patroni.rs`, `auto_failover.rs`): a directory that holds everything a
//! managed cluster runs from, removed with every process running from it
//! by a watchdog, programs started as the `postgres` user, and whether the
//! managers' tests run or are skipped.
//!
//! The watchdog is a shell that waits for its stdin (a pipe only this
//! process holds) to close — when the fixture is dropped, or the test
//! process ends in any way — then continues (SIGCONT: a process a test
//! paused acts on no other signal) and kills (SIGKILL) every process whose
//! command line names the directory, and their children (a postmaster's
//! backends do not name it), until none is left, and removes the
//! directory (kept for a look if `BATON_MANAGED_KEEP` is set).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::postgres::is_root;

/// The variable under which a missing manager fails its tests.
pub const REQUIRE: &str = "BATON_REQUIRE_HA";

/// Whether `program` is on PATH.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// `None` with one line said (once per `cargo test`) if any of `programs`
/// is missing — a panic instead under `BATON_REQUIRE_HA=1`, as `.ci/run`
/// sets — else `Some(())`.
pub fn programs(manager: &str, programs: &[&str], install: &str) -> Option<()> {
    let missing: Vec<&str> = programs.iter().copied().filter(|p| !on_path(p)).collect();
    if missing.is_empty() {
        return Some(());
    }
    if std::env::var(REQUIRE).is_ok_and(|v| v == "1") {
        panic!(
            "{REQUIRE}=1 but {manager} is missing ({}): {install}",
            missing.join(", ")
        );
    }
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        let marker = std::env::temp_dir().join(format!(
            "baton-{manager}-skipped-{}",
            std::os::unix::process::parent_id()
        ));
        if std::fs::File::create_new(marker).is_ok() {
            let _ = writeln!(
                std::io::stderr(),
                "baton: {manager} tests SKIPPED: no {} on PATH ({install}; set {REQUIRE}=1 to \
                 fail instead)",
                missing.join(", ")
            );
        }
    });
    None
}

/// A managed cluster's directory and its watchdog.
pub struct Dir {
    path: PathBuf,
    watchdog: Option<(Child, ChildStdin)>,
}

impl Dir {
    /// A fresh temp dir named after `prefix`, owned by `postgres` when the
    /// tests run as root, its watchdog already watching it.
    pub fn new(prefix: &str) -> Dir {
        Dir::with_cleanup(prefix, "")
    }

    /// [`new`](Self::new), the watchdog running `cleanup` (shell, the
    /// directory in `$BATON_MANAGED_DIR`) once every process is gone and
    /// before the directory is removed.
    pub fn with_cleanup(prefix: &str, cleanup: &str) -> Dir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "{prefix}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("the managed cluster's dir");
        own(&path);
        // The dir is passed in the environment, not in the script, so
        // that the watchdog's own command line does not name it.
        let script = r#"cat >/dev/null
for round in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(pgrep -f "$BATON_MANAGED_DIR/")
    [ -z "$pids" ] && break
    kids=
    for pid in $pids; do kids="$kids $(pgrep -P "$pid")"; done
    kill -CONT $pids $kids 2>/dev/null
    kill -KILL $pids $kids 2>/dev/null
    sleep 0.2
done
eval "$BATON_MANAGED_CLEANUP"
[ -n "$BATON_MANAGED_KEEP" ] || rm -rf "$BATON_MANAGED_DIR""#;
        let mut child = Command::new("sh")
            .args(["-c", script])
            .env("BATON_MANAGED_DIR", &path)
            .env("BATON_MANAGED_CLEANUP", cleanup)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the managed cluster's watchdog");
        let stdin = child.stdin.take().expect("the watchdog's stdin");
        Dir {
            path,
            watchdog: Some((child, stdin)),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A subdirectory, made and owned as the directory is.
    pub fn sub(&self, name: &str) -> PathBuf {
        let sub = self.path.join(name);
        std::fs::create_dir_all(&sub).expect("a subdirectory");
        own(&sub);
        sub
    }

    /// Writes `text` to `name` in the directory, owned as it is.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let file = self.path.join(name);
        std::fs::write(&file, text).expect("a file of the managed cluster");
        own(&file);
        file
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.watchdog.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// Gives `path` to `postgres` when the tests run as root (the server
/// refuses to run as root), private to it (as PostgreSQL's data wants).
fn own(path: &Path) {
    if is_root() {
        let _ = Command::new("chown")
            .arg("postgres:postgres")
            .arg(path)
            .status();
    }
    let _ = Command::new("chmod").arg("700").arg(path).status();
}

/// `program` with `args`, as `postgres` when the tests run as root —
/// `setpriv`, which executes the program in its own process, so the
/// child's id is the program's (signals reach it) — its output appended
/// to `log`.
pub fn spawn(program: &str, args: &[&str], home: &Path, log: &Path) -> Child {
    spawn_with(program, args, home, log, &[])
}

/// [`spawn`] with nothing of this process's environment but `PATH` and
/// `env`.
pub fn spawn_with(
    program: &str,
    args: &[&str],
    home: &Path,
    log: &Path,
    env: &[(&str, String)],
) -> Child {
    let mut command = if is_root() {
        let mut command = Command::new("setpriv");
        command
            .args([
                "--reuid=postgres",
                "--regid=postgres",
                "--init-groups",
                "--",
            ])
            .arg(program);
        command
    } else {
        Command::new(program)
    };
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("the program's log");
    let err = out.try_clone().expect("the program's log");
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().map(|(name, value)| (*name, value)))
        .env("HOME", home)
        .env("LANG", "C.UTF-8")
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|error| panic!("{program}: {error}"))
}

/// Sends `signal` (`-STOP`, `-CONT`, `-KILL`) to `pid` and its children.
pub fn signal_tree(pid: u32, signal: &str) {
    let mut pids = vec![pid.to_string()];
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if parent == Some(pid.to_string().as_str()) {
            pids.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    let _ = Command::new("kill")
        .arg(signal)
        .args(&pids)
        .stderr(Stdio::null())
        .status();
}

/// The postmaster's id of the data directory `data`, if it runs.
pub fn postmaster(data: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    String::from_utf8_lossy(&cmdline)
        .contains(&*data.to_string_lossy())
        .then_some(pid)
}

/// An HTTP/1.0 request to `127.0.0.1:port`: the status and the body, or
/// `None` if nothing answered within `wait`.
pub fn http(
    method: &str,
    port: u16,
    path: &str,
    body: &str,
    wait: Duration,
) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(wait)).ok()?;
    stream.set_write_timeout(Some(wait)).ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}
