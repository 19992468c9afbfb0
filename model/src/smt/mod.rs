//! Proofs without bounds: a transition system over unbounded integers,
//! spoken to an SMT solver (z3, as a process, in SMT-LIB 2 through the
//! `easy-smt` crate), proven by induction — an invariant that holds
//! initially and is kept by every step, and each promise kept by every
//! step from a state where the invariant holds — and, for a broken one,
//! the shortest history from the initial state that breaks a promise
//! (bounded model checking by the solver, unrolling the same step
//! relation). [`crate::fence::proof`], [`crate::gate::proof`] and
//! [`crate::ledger::proof`] are its systems.

use std::io;
use std::time::{Duration, Instant};

use easy_smt::{Context, ContextBuilder, Response, SExpr};

mod section;
pub use section::Section;

/// The solver: z3, as a process.
///
/// # Errors
///
/// z3 could not be started (not installed: `apt-get install z3`).
pub fn solver() -> io::Result<Context> {
    ContextBuilder::new().with_z3_defaults().build()
}

/// Whether a missing solver must fail (`BATON_REQUIRE_SOLVER=1`, as in
/// `.ci/run`) rather than skip.
pub fn required() -> bool {
    std::env::var("BATON_REQUIRE_SOLVER").as_deref() == Ok("1")
}

/// The solver for a test of `what`: `None`, said in one line, when z3
/// cannot be started and `BATON_REQUIRE_SOLVER` is not `1`.
///
/// # Panics
///
/// When z3 cannot be started under `BATON_REQUIRE_SOLVER=1`.
pub fn solver_or_skip(what: &str) -> Option<Context> {
    match solver() {
        Ok(ctx) => Some(ctx),
        Err(error) if !required() => {
            eprintln!("{what} skipped: z3 could not be started ({error}); apt-get install z3");
            None
        }
        Err(error) => panic!("BATON_REQUIRE_SOLVER=1 but z3 could not be started: {error}"),
    }
}

/// The solver for a report's section: on failure, the section's one
/// skip line is written to `out` and `Err` says whether the section
/// passes (it does unless `BATON_REQUIRE_SOLVER=1`).
///
/// # Errors
///
/// z3 could not be started.
pub fn solver_for_report(out: &mut String) -> Result<Context, bool> {
    solver().map_err(|error| {
        out.push_str(&format!(
            "  skipped: z3 could not be started ({error}); apt-get install z3\n"
        ));
        !required()
    })
}

/// A transition system the solver proves or refutes.
pub trait Transitions {
    /// One state's constants.
    type Frame: Copy;
    /// One step's choices.
    type Choice: Copy;
    /// What a step's rules answer, as terms.
    type Answers: Copy;

    /// Its name in a history ("the fence on one server").
    fn name(&self) -> String;
    /// Declares state `i`'s constants.
    ///
    /// # Errors
    ///
    /// The solver's.
    fn frame(&self, ctx: &mut Context, i: usize) -> io::Result<Self::Frame>;
    /// Declares step `i`'s choices.
    ///
    /// # Errors
    ///
    /// The solver's.
    fn choice(&self, ctx: &mut Context, i: usize) -> io::Result<Self::Choice>;
    /// What the rules answer in `s` for `x`.
    fn answers(&self, ctx: &Context, s: &Self::Frame, x: &Self::Choice) -> Self::Answers;
    /// The initial state.
    fn init(&self, ctx: &Context, s: &Self::Frame) -> SExpr;
    /// The step relation.
    fn step(
        &self,
        ctx: &Context,
        s: &Self::Frame,
        x: &Self::Choice,
        a: &Self::Answers,
        n: &Self::Frame,
    ) -> SExpr;
    /// The inductive invariant.
    fn invariant(&self, ctx: &Context, s: &Self::Frame) -> SExpr;
    /// The ids of the promises it makes, in report order.
    fn promises(&self) -> Vec<&'static str>;
    /// Whether the step keeps promise `id`.
    fn keeps(
        &self,
        ctx: &Context,
        id: &str,
        s: &Self::Frame,
        x: &Self::Choice,
        a: &Self::Answers,
        n: &Self::Frame,
    ) -> SExpr;
    /// The step, read back from the solver's model, in words.
    ///
    /// # Errors
    ///
    /// The solver's.
    fn describe(
        &self,
        ctx: &mut Context,
        x: &Self::Choice,
        a: &Self::Answers,
        n: &Self::Frame,
    ) -> io::Result<String>;
}

/// One proof obligation's result.
#[derive(Clone, Debug)]
pub struct Obligation {
    /// What was proven: "initial", "inductive" or a promise's id.
    pub what: &'static str,
    /// Whether it holds (the solver answered unsat).
    pub holds: bool,
    /// The solver's time.
    pub time: Duration,
}

fn unsat(ctx: &mut Context, goal: SExpr) -> io::Result<bool> {
    ctx.push()?;
    ctx.assert(goal)?;
    let answer = ctx.check()?;
    ctx.pop()?;
    match answer {
        Response::Unsat => Ok(true),
        Response::Sat => Ok(false),
        Response::Unknown => Err(io::Error::other("the solver answered unknown")),
    }
}

/// One step's constants: the state, the choice, the rules' answers and
/// the next state.
type Step<T> = (
    <T as Transitions>::Frame,
    <T as Transitions>::Choice,
    <T as Transitions>::Answers,
    <T as Transitions>::Frame,
);

fn one_step<T: Transitions>(ctx: &mut Context, system: &T) -> io::Result<Step<T>> {
    let s = system.frame(ctx, 0)?;
    let x = system.choice(ctx, 0)?;
    let n = system.frame(ctx, 1)?;
    let a = system.answers(ctx, &s, &x);
    Ok((s, x, a, n))
}

/// Proves `system`: the invariant holds initially and is kept by every
/// step, and every promise is kept by every step from a state where the
/// invariant holds.
///
/// # Errors
///
/// The solver's: it could not be spoken to, or answered unknown.
pub fn prove<T: Transitions>(ctx: &mut Context, system: &T) -> io::Result<Vec<Obligation>> {
    ctx.push()?;
    let (s, x, a, n) = one_step(ctx, system)?;
    let c = &*ctx;
    let (inv_s, step) = (system.invariant(c, &s), system.step(c, &s, &x, &a, &n));
    let mut goals = vec![
        ("initial", c.and(system.init(c, &s), c.not(inv_s))),
        (
            "inductive",
            c.and_many([inv_s, step, c.not(system.invariant(c, &n))]),
        ),
    ];
    for id in system.promises() {
        let keeps = system.keeps(c, id, &s, &x, &a, &n);
        goals.push((id, c.and_many([inv_s, step, c.not(keeps)])));
    }
    let mut out = Vec::new();
    for (what, goal) in goals {
        let start = Instant::now();
        let holds = unsat(ctx, goal)?;
        out.push(Obligation {
            what,
            holds,
            time: start.elapsed(),
        });
    }
    ctx.pop()?;
    Ok(out)
}

/// Whether some step of `system` from a state where the invariant holds
/// satisfies `what` (of the state, the choice, the answers and the next
/// state): the proofs are not vacuous for the steps it names.
///
/// # Errors
///
/// As [`prove`].
pub fn reachable_step<T: Transitions>(
    ctx: &mut Context,
    system: &T,
    what: impl Fn(&Context, &T::Frame, &T::Choice, &T::Answers, &T::Frame) -> SExpr,
) -> io::Result<bool> {
    ctx.push()?;
    let (s, x, a, n) = one_step(ctx, system)?;
    let c = &*ctx;
    let goal = c.and_many([
        system.invariant(c, &s),
        system.step(c, &s, &x, &a, &n),
        what(c, &s, &x, &a, &n),
    ]);
    let unsatisfiable = unsat(ctx, goal)?;
    ctx.pop()?;
    Ok(!unsatisfiable)
}

/// A history that breaks promises: its steps in words, and the promises
/// its last step breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct History {
    /// The system's name.
    pub system: String,
    /// Its steps, from the initial state.
    pub steps: Vec<String>,
    /// The ids of the promises the last step breaks.
    pub breaks: Vec<&'static str>,
}

impl std::fmt::Display for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}, breaking {}:", self.system, self.breaks.join(", "))?;
        for (i, step) in self.steps.iter().enumerate() {
            writeln!(f, "  {}. {step}", i + 1)?;
        }
        Ok(())
    }
}

/// The shortest history (up to `depth` steps from the initial state) of
/// `system` whose last step breaks one of `promises`; `None` if there is
/// none that short.
///
/// # Errors
///
/// As [`prove`].
pub fn shortest_break<T: Transitions>(
    ctx: &mut Context,
    system: &T,
    promises: &[&'static str],
    depth: usize,
) -> io::Result<Option<History>> {
    ctx.push()?;
    let found = unroll(ctx, system, promises, depth);
    ctx.pop()?;
    found
}

fn unroll<T: Transitions>(
    ctx: &mut Context,
    system: &T,
    promises: &[&'static str],
    depth: usize,
) -> io::Result<Option<History>> {
    let mut frames = vec![system.frame(ctx, 0)?];
    let mut steps = Vec::new();
    let init = system.init(ctx, &frames[0]);
    ctx.assert(init)?;
    for d in 0..depth {
        let x = system.choice(ctx, d)?;
        let n = system.frame(ctx, d + 1)?;
        let s = frames[d];
        let c = &*ctx;
        let a = system.answers(c, &s, &x);
        let relation = system.step(c, &s, &x, &a, &n);
        let broken: Vec<(&'static str, SExpr)> = promises
            .iter()
            .map(|id| (*id, c.not(system.keeps(c, id, &s, &x, &a, &n))))
            .collect();
        let any = c.or_many(broken.iter().map(|(_, b)| *b));
        ctx.assert(relation)?;
        frames.push(n);
        steps.push((x, a));
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
        let mut said = Vec::new();
        for (i, (x, a)) in steps.iter().enumerate() {
            said.push(system.describe(ctx, x, a, &frames[i + 1])?);
        }
        return Ok(Some(History {
            system: system.name(),
            steps: said,
            breaks,
        }));
    }
    Ok(None)
}

/// The integers the solver gives `terms` in its model (a numeral, or
/// `(- n)`; `i128::MIN` for anything else, a Boolean as 1 or 0).
///
/// # Errors
///
/// The solver's.
pub fn values(ctx: &mut Context, terms: Vec<SExpr>) -> io::Result<Vec<i128>> {
    let pairs = ctx.get_value(terms)?;
    Ok(pairs.into_iter().map(|(_, v)| integer(ctx, v)).collect())
}

/// An integer the solver printed: a numeral, `(- n)`, `true` (1) or
/// `false` (0); `i128::MIN` for anything else.
pub fn integer(ctx: &Context, v: SExpr) -> i128 {
    match (ctx.get_atom(v), ctx.get_list(v)) {
        (Some("true"), _) => 1,
        (Some("false"), _) => 0,
        (_, Some([minus, n])) if ctx.get_atom(*minus) == Some("-") => {
            ctx.get_i128(*n).map_or(i128::MIN, |n| -n)
        }
        _ => ctx.get_i128(v).unwrap_or(i128::MIN),
    }
}
