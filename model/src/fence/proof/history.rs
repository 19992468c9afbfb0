//! A broken rule's counterexample: the shortest history from the initial
//! state whose last step breaks a promise (bounded model checking by the
//! solver, unrolling the same step relation the proofs use), read back
//! from the solver's model and printed a step a line.

use std::fmt;
use std::io;

use easy_smt::{Context, Response, SExpr};

use super::encode::{Encoding, Terms, claimed, fate, retired, wrote};
use super::system::{
    Answers, Choice, Frame, Mode, PROMISES, System, declare_choice, declare_frame, step,
};

/// One server's copy, read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyValue {
    /// The Run's epoch.
    pub epoch: u64,
    /// Its fate code.
    pub fate: i64,
    /// The successor's.
    pub successor: i64,
}

/// One step of a history, read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepValue {
    /// Its [`step`] selector.
    pub kind: i64,
    /// Its reply was lost.
    pub lost: bool,
    /// A write's epoch.
    pub epoch: u64,
    /// What it answered, in words.
    pub answer: String,
    /// The log after it.
    pub log: CopyValue,
    /// The standby after it.
    pub standby: CopyValue,
    /// The term after it.
    pub term: u64,
}

/// A history that breaks promises: its steps, and the promises its last
/// step breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct History {
    /// The mode it runs on.
    pub mode: Mode,
    /// Its steps, from the initial state.
    pub steps: Vec<StepValue>,
    /// The ids of the promises the last step breaks.
    pub breaks: Vec<&'static str>,
}

fn fate_name(code: i64) -> &'static str {
    match code {
        fate::OPEN => "open",
        fate::HANDED_OFF => "handed off",
        fate::FINISHED => "finished",
        fate::RETIRED => "retired (tombstone)",
        fate::ABSENT => "not claimed",
        _ => "?",
    }
}

impl fmt::Display for CopyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "epoch {}, {}, successor {}",
            self.epoch,
            fate_name(self.fate),
            fate_name(self.successor)
        )
    }
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "on {}, breaking {}:",
            self.mode.name(),
            self.breaks.join(", ")
        )?;
        for (i, s) in self.steps.iter().enumerate() {
            let lost = if s.lost { " (reply lost)" } else { "" };
            let epoch = if matches!(s.kind, step::APPEND | step::FINISH) {
                format!(" under epoch {}", s.epoch)
            } else {
                String::new()
            };
            write!(
                f,
                "  {}. {}{epoch}{lost} -> {}; log: {}",
                i + 1,
                step::NAMES[s.kind as usize],
                s.answer,
                s.log
            )?;
            if self.mode != Mode::Single {
                write!(f, "; standby: {}; term {}", s.standby, s.term)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

fn int(ctx: &Context, e: SExpr) -> i64 {
    ctx.get_i64(e).unwrap_or(-1)
}

fn answer(ctx: &Context, kind: i64, a: &[i64; 5]) -> String {
    let [claim, epoch, append, finish, retire] = *a;
    let write = |code| match code {
        wrote::WRITTEN => "Written".to_owned(),
        wrote::ALREADY_DURABLE => "AlreadyDurable".to_owned(),
        wrote::FENCED => "Fenced".to_owned(),
        wrote::NOT_ISSUED => "EpochNotIssued".to_owned(),
        wrote::ALREADY_HANDED_OFF => "AlreadyHandedOff".to_owned(),
        wrote::ALREADY_FINISHED => "AlreadyFinished".to_owned(),
        wrote::RETIRED => "Retired".to_owned(),
        _ => "?".to_owned(),
    };
    let _ = ctx;
    match kind {
        step::CLAIM => match claim {
            claimed::OWNER => format!("Owner({epoch})"),
            claimed::HANDED_OFF => "HandedOff".to_owned(),
            claimed::FINISHED => "Finished".to_owned(),
            claimed::RETIRED => "Retired".to_owned(),
            claimed::EXHAUSTED => "EpochsExhausted".to_owned(),
            _ => "Contradictory".to_owned(),
        },
        step::APPEND => write(append),
        step::FINISH => write(finish),
        step::RETIRE => match retire {
            retired::REMOVED => "Retired (rows removed)".to_owned(),
            retired::ALREADY => "AlreadyRetired".to_owned(),
            retired::RUN_OPEN => "RunOpen".to_owned(),
            _ => "NothingToRetire".to_owned(),
        },
        _ => "done".to_owned(),
    }
}

pub(super) fn shortest_break(
    ctx: &mut Context,
    encoding: Encoding,
    mode: Mode,
    promises: &[&'static str],
    depth: usize,
) -> io::Result<Option<History>> {
    ctx.push()?;
    let found = unroll(ctx, encoding, mode, promises, depth);
    ctx.pop()?;
    found
}

/// The ids of the promises made on `mode`.
pub(super) fn promised(mode: Mode) -> Vec<&'static str> {
    PROMISES
        .iter()
        .filter(|p| p.modes.contains(&mode))
        .map(|p| p.id)
        .collect()
}

fn unroll(
    ctx: &mut Context,
    encoding: Encoding,
    mode: Mode,
    promises: &[&'static str],
    depth: usize,
) -> io::Result<Option<History>> {
    let mut frames: Vec<Frame> = vec![declare_frame(ctx, 0)?];
    let mut choices: Vec<(Choice, Answers)> = Vec::new();
    let init = System::new(Terms::new(ctx), encoding, mode).init(&frames[0]);
    ctx.assert(init)?;
    for d in 0..depth {
        let x = declare_choice(ctx, d)?;
        let n = declare_frame(ctx, d + 1)?;
        let s = frames[d];
        let (step_rel, a, broken) = {
            let system = System::new(Terms::new(ctx), encoding, mode);
            let a = system.answers(&s, &x);
            let rel = system.step(&s, &x, &a, &n);
            let broken: Vec<(&'static str, SExpr)> = promises
                .iter()
                .map(|id| (*id, ctx.not(system.keeps(id, &s, &x, &a, &n))))
                .collect();
            (rel, a, broken)
        };
        ctx.assert(step_rel)?;
        frames.push(n);
        choices.push((x, a));
        let any = ctx.or_many(broken.iter().map(|(_, b)| *b));
        match ctx.check_assuming([any])? {
            Response::Unsat => continue,
            Response::Unknown => return Err(io::Error::other("the solver answered unknown")),
            Response::Sat => {}
        }
        let flags = ctx.get_value(broken.iter().map(|(_, b)| *b).collect())?;
        let breaks = broken
            .iter()
            .zip(flags)
            .filter(|(_, (_, v))| ctx.get_atom(*v) == Some("true"))
            .map(|((id, _), _)| *id)
            .collect();
        let mut steps = Vec::new();
        for (i, (x, a)) in choices.iter().enumerate() {
            let n = frames[i + 1];
            let terms = vec![
                x.kind,
                x.lost,
                x.epoch,
                a.claim.answer,
                a.claim.epoch,
                a.append,
                a.finish,
                a.retire.answer,
                n.log.epoch,
                n.log.fate,
                n.log.successor,
                n.standby.epoch,
                n.standby.fate,
                n.standby.successor,
                n.term,
            ];
            let v: Vec<SExpr> = ctx.get_value(terms)?.into_iter().map(|(_, v)| v).collect();
            let kind = int(ctx, v[0]);
            let answers = [
                int(ctx, v[3]),
                int(ctx, v[4]),
                int(ctx, v[5]),
                int(ctx, v[6]),
                int(ctx, v[7]),
            ];
            let copy = |e: SExpr, f: SExpr, s: SExpr| CopyValue {
                epoch: ctx.get_u64(e).unwrap_or(0),
                fate: int(ctx, f),
                successor: int(ctx, s),
            };
            steps.push(StepValue {
                kind,
                lost: ctx.get_atom(v[1]) == Some("true"),
                epoch: ctx.get_u64(v[2]).unwrap_or(0),
                answer: answer(ctx, kind, &answers),
                log: copy(v[8], v[9], v[10]),
                standby: copy(v[11], v[12], v[13]),
                term: ctx.get_u64(v[14]).unwrap_or(0),
            });
        }
        return Ok(Some(History {
            mode,
            steps,
            breaks,
        }));
    }
    Ok(None)
}
