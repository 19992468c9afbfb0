//! The supervisor's worker processes: started, given orders on their
//! stdin, heard through their stdout (a thread each), killed, reaped. A
//! worker still running when [`Hosts`] is dropped (the supervisor failed
//! or panicked) is killed, never left behind.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use tokio::sync::mpsc::UnboundedSender;

use super::Failure;
use super::protocol::{Line, Order};

/// What the supervisor hears from its hosts.
pub enum Heard {
    /// A line host `usize` printed.
    Said(usize, Line),
    /// Host `usize` closed its stdout: it exited, or died.
    Gone(usize),
}

/// One worker process.
struct Host {
    name: String,
    child: Child,
    /// Its orders; `None` once closed.
    stdin: Option<ChildStdin>,
    alive: bool,
}

/// The worker processes, and which one gets the next Run.
pub struct Hosts {
    hosts: Vec<Host>,
    next: usize,
}

impl Hosts {
    /// Starts `count` workers, `host-0`, `host-1`, …, each with the command
    /// `command` makes for its name; what they print comes to `heard`.
    pub fn start(
        count: usize,
        mut command: impl FnMut(&str) -> Command,
        heard: &UnboundedSender<Heard>,
    ) -> Result<Self, Failure> {
        let mut hosts = Hosts {
            hosts: Vec::new(),
            next: 0,
        };
        for index in 0..count {
            let name = format!("host-{index}");
            let mut child = command(&name)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()?;
            let stdout = child.stdout.take().ok_or("no stdout")?;
            let stdin = child.stdin.take();
            hosts.hosts.push(Host {
                name,
                child,
                stdin,
                alive: true,
            });
            let heard = heard.clone();
            std::thread::spawn(move || {
                for text in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if let Some(line) = Line::parse(&text) {
                        let _ = heard.send(Heard::Said(index, line));
                    }
                }
                let _ = heard.send(Heard::Gone(index));
            });
        }
        Ok(hosts)
    }

    /// How many were started.
    pub fn count(&self) -> usize {
        self.hosts.len()
    }

    /// The name of host `index`.
    pub fn name(&self, index: usize) -> &str {
        &self.hosts[index].name
    }

    /// The process id of host `index`.
    pub fn pid(&self, index: usize) -> u32 {
        self.hosts[index].child.id()
    }

    /// The next live host, round robin; `None` if all are dead.
    pub fn next_live(&mut self) -> Option<usize> {
        for _ in 0..self.hosts.len() {
            let index = self.next % self.hosts.len();
            self.next += 1;
            if self.hosts[index].alive {
                return Some(index);
            }
        }
        None
    }

    /// Writes `order` on host `index`'s stdin.
    pub fn send(&mut self, index: usize, order: &Order) -> Result<(), Failure> {
        let host = &mut self.hosts[index];
        let stdin = host.stdin.as_mut().ok_or("the host's orders are closed")?;
        writeln!(stdin, "{order}")?;
        stdin.flush()?;
        Ok(())
    }

    /// SIGKILL to host `index`.
    pub fn kill(&mut self, index: usize) -> Result<(), Failure> {
        Ok(self.hosts[index].child.kill()?)
    }

    /// Once host `index` closed its stdout: marks it dead and reaps it;
    /// answers how it ended (`exit:0`, `signal:9`).
    pub fn reap(&mut self, index: usize) -> Result<String, Failure> {
        let host = &mut self.hosts[index];
        host.alive = false;
        host.stdin = None;
        Ok(how_it_ended(host.child.wait()?))
    }

    /// Closes every host's orders (each then exits) and waits for them.
    pub fn close(&mut self) -> Result<(), Failure> {
        for host in &mut self.hosts {
            host.stdin = None;
        }
        for host in &mut self.hosts {
            host.child.wait()?;
            host.alive = false;
        }
        Ok(())
    }
}

/// How a process ended, in one word: `exit:0`, `signal:9`.
fn how_it_ended(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("signal:{signal}");
    }
    match status.code() {
        Some(code) => format!("exit:{code}"),
        None => "unknown".to_owned(),
    }
}

impl Drop for Hosts {
    /// A worker still running is killed and reaped.
    fn drop(&mut self) {
        for host in &mut self.hosts {
            if let Ok(None) = host.child.try_wait() {
                let _ = host.child.kill();
                let _ = host.child.wait();
            }
        }
    }
}
