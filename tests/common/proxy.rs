//! A loopback TCP proxy the test controls, between one client (a log, a
//! worker process) and the server: it forwards, drops every connection,
//! blackholes (holds every byte, both ways, until healed), delays, and can
//! lose the reply to the next commit it forwards (the server commits, the
//! client never hears it): a `COMMIT`, or a write that is its own
//! transaction (an `INSERT` or `WITH` statement executed outside `BEGIN`,
//! as `PostgresLog`'s one-statement claim and append are). Plain threads,
//! no runtime.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What the proxy does with traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Forward both ways.
    Forward = 0,
    /// Close every connection, and each new one at once: a partition the
    /// client learns of (a reset).
    Drop = 1,
    /// Hold every byte both ways (and accept new connections, which then
    /// hang): a partition nobody is told of.
    Blackhole = 2,
    /// Forward, each chunk after a delay (see [`Proxy::set_delay`]).
    Delay = 3,
}

struct Shared {
    mode: AtomicU8,
    delay_ms: AtomicU64,
    lose_commit_reply: AtomicBool,
    /// Every live connection's two sockets, to close them on `Drop`.
    live: Mutex<Vec<(TcpStream, TcpStream)>>,
    /// Every connection's own blackhole (see [`Proxy::blackhole_live`]).
    holds: Mutex<Vec<Arc<AtomicBool>>>,
    /// How many replies to a COMMIT were lost.
    lost: AtomicU64,
    /// How many explicit transactions (`BEGIN`) clients sent.
    transactions: AtomicU64,
    /// How many writes that are their own transaction clients sent.
    own_commits: AtomicU64,
}

/// A proxy from a loopback port of its own to `127.0.0.1:target`.
#[derive(Clone)]
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Starts a proxy to `target`, forwarding.
    pub fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a proxy port");
        let port = listener.local_addr().expect("the proxy's port").port();
        let shared = Arc::new(Shared {
            mode: AtomicU8::new(Mode::Forward as u8),
            delay_ms: AtomicU64::new(0),
            lose_commit_reply: AtomicBool::new(false),
            live: Mutex::new(Vec::new()),
            holds: Mutex::new(Vec::new()),
            lost: AtomicU64::new(0),
            transactions: AtomicU64::new(0),
            own_commits: AtomicU64::new(0),
        });
        let accepting = Arc::clone(&shared);
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if mode(&accepting) == Mode::Drop {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                connect_pair(&accepting, client, server);
            }
        });
        Proxy { port, shared }
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sets the mode; [`Mode::Drop`] also closes every live connection.
    pub fn set(&self, to: Mode) {
        self.shared.mode.store(to as u8, Ordering::SeqCst);
        if to == Mode::Drop {
            for (a, b) in self.shared.live.lock().unwrap().drain(..) {
                let _ = a.shutdown(Shutdown::Both);
                let _ = b.shutdown(Shutdown::Both);
            }
        }
    }

    /// Blackholes the connections live now, and only those: every byte of
    /// theirs is held both ways, while connections made later are
    /// forwarded (one cut-off connection of a pool, the others fine).
    /// Answers how many were live.
    pub fn blackhole_live(&self) -> usize {
        let holds = self.shared.holds.lock().unwrap();
        for hold in holds.iter() {
            hold.store(true, Ordering::SeqCst);
        }
        holds.len()
    }

    /// The delay of [`Mode::Delay`].
    pub fn set_delay(&self, delay: Duration) {
        self.shared
            .delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// Loses the reply to the next commit forwarded (a `COMMIT`, or a
    /// write that is its own transaction): it reaches the server, and
    /// after a moment (for the server to commit) both sides of that
    /// connection are closed, the reply unsent.
    pub fn lose_next_commit_reply(&self) {
        self.shared.lose_commit_reply.store(true, Ordering::SeqCst);
    }

    /// Whether a loss armed by [`lose_next_commit_reply`](Self::lose_next_commit_reply)
    /// is still waiting for its COMMIT.
    pub fn commit_loss_pending(&self) -> bool {
        self.shared.lose_commit_reply.load(Ordering::SeqCst)
    }

    /// How many replies to a COMMIT this proxy lost.
    pub fn lost_replies(&self) -> u64 {
        self.shared.lost.load(Ordering::SeqCst)
    }

    /// How many explicit transactions (a `BEGIN` simple query) its
    /// clients sent through it, on every connection.
    pub fn transactions(&self) -> u64 {
        self.shared.transactions.load(Ordering::SeqCst)
    }

    /// How many writes that are their own transaction (see [`Commits`])
    /// its clients sent through it, on every connection.
    pub fn own_commits(&self) -> u64 {
        self.shared.own_commits.load(Ordering::SeqCst)
    }
}

fn mode(shared: &Shared) -> Mode {
    match shared.mode.load(Ordering::SeqCst) {
        1 => Mode::Drop,
        2 => Mode::Blackhole,
        3 => Mode::Delay,
        _ => Mode::Forward,
    }
}

fn connect_pair(shared: &Arc<Shared>, client: TcpStream, server: TcpStream) {
    let (Ok(c2), Ok(s2), Ok(c3), Ok(s3)) = (
        client.try_clone(),
        server.try_clone(),
        client.try_clone(),
        server.try_clone(),
    ) else {
        return;
    };
    shared.live.lock().unwrap().push((c3, s3));
    let hold = Arc::new(AtomicBool::new(false));
    shared.holds.lock().unwrap().push(Arc::clone(&hold));
    let cut = Arc::new(AtomicBool::new(false));
    let (up, down) = (Arc::clone(shared), Arc::clone(shared));
    let (cut_up, cut_down) = (Arc::clone(&cut), cut);
    let (hold_up, hold_down) = (Arc::clone(&hold), hold);
    thread::spawn(move || pump(&up, client, server, Some(&cut_up), &hold_up));
    thread::spawn(move || pump_down(&down, s2, c2, &cut_down, &hold_down));
}

/// Whether this connection's bytes are held: the whole proxy is
/// blackholed, or this connection is.
fn held(shared: &Shared, hold: &AtomicBool) -> bool {
    mode(shared) == Mode::Blackhole || hold.load(Ordering::SeqCst)
}

/// Client to server; watches for a commit (see [`Commits`]) to lose the
/// reply of.
fn pump(
    shared: &Shared,
    mut from: TcpStream,
    mut to: TcpStream,
    cut: Option<&AtomicBool>,
    hold: &AtomicBool,
) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; 64 * 1024];
    let mut commits = Commits::default();
    loop {
        while held(shared, hold) {
            thread::sleep(Duration::from_millis(10));
        }
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        hold_while_blackholed_or_delay(shared, hold);
        if mode(shared) == Mode::Drop {
            break;
        }
        let commit = commits.in_chunk(chunk);
        shared
            .transactions
            .fetch_add(std::mem::take(&mut commits.begun), Ordering::SeqCst);
        shared
            .own_commits
            .fetch_add(std::mem::take(&mut commits.own), Ordering::SeqCst);
        if let Some(cut) = cut.filter(|_| commit) {
            if shared
                .lose_commit_reply
                .compare_exchange(true, false, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                cut.store(true, Ordering::SeqCst);
                let _ = to.write_all(chunk);
                // Let the server commit, then close both sides unanswered.
                thread::sleep(Duration::from_millis(300));
                shared.lost.fetch_add(1, Ordering::SeqCst);
                break;
            }
        }
        if to.write_all(chunk).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// Server to client; drops everything once the connection is cut.
fn pump_down(
    shared: &Shared,
    mut from: TcpStream,
    mut to: TcpStream,
    cut: &AtomicBool,
    hold: &AtomicBool,
) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        while held(shared, hold) {
            thread::sleep(Duration::from_millis(10));
        }
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => break,
        };
        hold_while_blackholed_or_delay(shared, hold);
        if cut.load(Ordering::SeqCst) {
            continue; // the lost reply
        }
        if mode(shared) == Mode::Drop || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

fn hold_while_blackholed_or_delay(shared: &Shared, hold: &AtomicBool) {
    loop {
        if hold.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(10));
            continue;
        }
        match mode(shared) {
            Mode::Blackhole => thread::sleep(Duration::from_millis(10)),
            Mode::Delay => {
                thread::sleep(Duration::from_millis(
                    shared.delay_ms.load(Ordering::SeqCst),
                ));
                return;
            }
            Mode::Forward | Mode::Drop => return,
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// What commits, in the client's messages of one connection: a `COMMIT`
/// simple query, or the execution (`Bind`) of a prepared statement that
/// writes (its `Parse` began with `INSERT`, `WITH` or `UPDATE`) outside an explicit
/// transaction (`BEGIN` … `COMMIT`/`ROLLBACK`), which is then its own.
/// Read from whole messages in a chunk, as the client's writes come here.
#[derive(Default)]
struct Commits {
    /// The names of the prepared statements that write.
    writes: Vec<Vec<u8>>,
    /// Inside `BEGIN` … `COMMIT`/`ROLLBACK`.
    in_transaction: bool,
    /// `BEGIN`s seen since the counts were last taken.
    begun: u64,
    /// Writes that are their own transaction seen since then.
    own: u64,
}

impl Commits {
    fn in_chunk(&mut self, chunk: &[u8]) -> bool {
        let mut commit = false;
        let mut rest = chunk;
        while rest.len() >= 5 {
            let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
            if len < 4 || rest.len() < 1 + len {
                break; // not a whole message (the startup packet, a split)
            }
            let body = &rest[5..1 + len];
            match rest[0] {
                b'Q' => {
                    let query = cstr(body).0;
                    if query.starts_with(b"BEGIN") {
                        self.in_transaction = true;
                        self.begun += 1;
                    } else if query.starts_with(b"COMMIT") || query.starts_with(b"ROLLBACK") {
                        commit |= query.starts_with(b"COMMIT");
                        self.in_transaction = false;
                    }
                }
                b'P' => {
                    let (name, after) = cstr(body);
                    let query = cstr(after).0;
                    // A name parsed again (the unnamed statement, "", is
                    // parsed anew for each statement sent by its text)
                    // is what it was parsed as last.
                    self.writes.retain(|w| w != name);
                    if [&b"INSERT"[..], b"WITH", b"UPDATE"]
                        .iter()
                        .any(|verb| query.starts_with(verb))
                    {
                        self.writes.push(name.to_vec());
                    }
                }
                b'B' => {
                    let statement = cstr(cstr(body).1).0;
                    let own = !self.in_transaction && self.writes.iter().any(|w| w == statement);
                    self.own += u64::from(own);
                    commit |= own;
                }
                _ => {}
            }
            rest = &rest[1 + len..];
        }
        commit || contains(chunk, b"COMMIT\0")
    }
}

/// A NUL-terminated string at the start of `bytes`, and what follows it.
fn cstr(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|&b| b == 0) {
        Some(end) => (&bytes[..end], &bytes[end + 1..]),
        None => (bytes, &[]),
    }
}
