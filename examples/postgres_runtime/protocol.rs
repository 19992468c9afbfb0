//! The shape of the work and what the processes say to each other: the
//! payload the log keeps for a Run, the Runs' names, the orders the
//! supervisor writes on a worker's stdin and the lines every process
//! prints on its stdout.

use std::fmt;
use std::time::Duration;

use baton::durable::Epoch;
use serde::{Deserialize, Serialize};

/// The Runs of each root's chain: `ROOT.0` hands off to `ROOT.1`, and so
/// on; the last one finishes.
pub const RUNS_PER_ROOT: u32 = 3;

/// The steps each Run of a chain works before its worker's host moves it
/// on (hands it off) or, for the last Run, finishes it.
pub const STEPS_PER_RUN: u32 = 3;

/// One step's work.
pub const STEP: Duration = Duration::from_millis(40);

/// What the log keeps for a Run: the progress a pause carries to the
/// successor, or the chain's outcome. One type for both, as the log wants
/// (`finish` takes the same payload type as a pause).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Progress {
    /// Handed off: the successor resumes at `step`, with the `total` of
    /// the steps before it.
    Paused {
        /// The first step the successor works.
        step: u32,
        /// The running total of the steps done.
        total: u64,
    },
    /// The chain's end: how many steps it took and their total.
    Done {
        /// The steps of the whole chain.
        steps: u32,
        /// The total of all of them.
        total: u64,
    },
}

/// The running total after `step`: order-sensitive, so a step skipped,
/// done twice or done out of order shows in a chain's outcome.
pub fn after_step(total: u64, step: u32) -> u64 {
    total.wrapping_mul(31).wrapping_add(u64::from(step) + 1)
}

/// The total a whole chain ends with, when every step was done once, in
/// order.
pub fn chain_total() -> u64 {
    (0..RUNS_PER_ROOT * STEPS_PER_RUN).fold(0, after_step)
}

/// A Run of a chain: `ROOT.INDEX`, within the root Run `ROOT`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId {
    /// The root Run (the chain) it belongs to.
    pub root: String,
    /// Its place in the chain, from 0.
    pub index: u32,
}

impl RunId {
    /// The first Run of the chain `root`.
    pub fn first(root: &str) -> Self {
        Self {
            root: root.to_owned(),
            index: 0,
        }
    }

    /// Parses `ROOT.INDEX`.
    pub fn parse(text: &str) -> Option<Self> {
        let (root, index) = text.rsplit_once('.')?;
        Some(Self {
            root: root.to_owned(),
            index: index.parse().ok()?,
        })
    }

    /// Whether it is the chain's last Run, the one that finishes.
    pub fn is_last(&self) -> bool {
        self.index + 1 == RUNS_PER_ROOT
    }

    /// The Run it hands off to.
    pub fn successor(&self) -> Self {
        Self {
            root: self.root.clone(),
            index: self.index + 1,
        }
    }

    /// The Run that hands off to it, if it is not the chain's first.
    pub fn predecessor(&self) -> Option<Self> {
        let index = self.index.checked_sub(1)?;
        Some(Self {
            root: self.root.clone(),
            index,
        })
    }

    /// The first step it works when it starts from the chain's plan.
    pub fn first_step(&self) -> u32 {
        self.index * STEPS_PER_RUN
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.root, self.index)
    }
}

/// What the supervisor writes on a worker's stdin, one line each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Order {
    /// `run RUN`: claim the Run and work it.
    Run(RunId),
    /// `resume RUN EPOCH`: the supervisor claimed the Run (its worker's
    /// host died); work it under this epoch.
    Resume(RunId, Epoch),
}

impl Order {
    /// The Run it is about.
    pub fn run(&self) -> &RunId {
        match self {
            Order::Run(run) | Order::Resume(run, _) => run,
        }
    }

    /// Parses a line as [`Display`](fmt::Display) writes it.
    pub fn parse(line: &str) -> Option<Self> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["run", run] => Some(Order::Run(RunId::parse(run)?)),
            ["resume", run, epoch] => Some(Order::Resume(
                RunId::parse(run)?,
                Epoch::new(epoch.parse().ok()?),
            )),
            _ => None,
        }
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Order::Run(run) => write!(f, "run {run}"),
            Order::Resume(run, epoch) => write!(f, "resume {run} {epoch}"),
        }
    }
}

/// Marks the lines of the runtime's processes. Found anywhere in a line,
/// so that a process run under a test harness, which may print before it
/// on the same line, is still understood.
pub const MARK: &str = "runtime: ";

/// One line a process prints: who says it (`host-1`, `supervisor`), what
/// (`step`, `handed-off`, …) and `key=value` fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// The process that says it.
    pub who: String,
    /// What happened.
    pub what: String,
    /// The details, in order.
    pub fields: Vec<(String, String)>,
}

impl Line {
    /// A line of `who` saying `what`, without fields yet.
    pub fn new(who: &str, what: &str) -> Self {
        Self {
            who: who.to_owned(),
            what: what.to_owned(),
            fields: Vec::new(),
        }
    }

    /// The line with one more field (its value must hold no space).
    pub fn with(mut self, key: &str, value: impl fmt::Display) -> Self {
        self.fields.push((key.to_owned(), value.to_string()));
        self
    }

    /// The value of the field `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let mut found = self.fields.iter().filter(|(k, _)| k == key);
        found.next().map(|(_, value)| value.as_str())
    }

    /// The Run the field `key` names.
    pub fn run(&self, key: &str) -> Option<RunId> {
        RunId::parse(self.get(key)?)
    }

    /// The number the field `key` holds.
    pub fn number(&self, key: &str) -> Option<u64> {
        self.get(key)?.parse().ok()
    }

    /// Parses a line of a process's stdout; `None` if it holds none.
    pub fn parse(text: &str) -> Option<Self> {
        let (_, said) = text.split_once(MARK)?;
        let mut words = said.split_whitespace();
        let mut line = Line::new(words.next()?, words.next()?);
        for word in words {
            let (key, value) = word.split_once('=')?;
            line = line.with(key, value);
        }
        Some(line)
    }

    /// Prints the line on stdout (flushed at its newline).
    pub fn print(&self) {
        println!("{self}");
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{MARK}{} {}", self.who, self.what)?;
        for (key, value) in &self.fields {
            write!(f, " {key}={value}")?;
        }
        Ok(())
    }
}

/// Where a test, or the supervisor's `--kill-one`, kills `host`: at the
/// first step of a successor Run it resumed from its predecessor's pause.
/// The host then holds that Run, unfinished for all its steps but one,
/// and has reported steps of other Runs before.
pub fn is_kill_point(line: &Line, host: &str) -> bool {
    let first_step_of_a_successor = line.run("run").is_some_and(|run| {
        run.index > 0 && line.number("step") == Some(u64::from(run.first_step()))
    });
    line.who == host && line.what == "step" && first_step_of_a_successor
}
