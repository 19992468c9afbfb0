//! The encoding held to the Rust rules: every term of [`super::encode`],
//! for the real rules and each broken variant, evaluated by the solver on
//! every input of a grid and compared with what the Rust function — the
//! one the bounded model runs — answers on the same input.

use std::io;
use std::sync::Arc;

use baton::durable::{
    AppendStep, Appended, Claim, ClaimStep, Epoch, Fate, Finished, LogError, Retirement, RunFacts,
    timeline_floor,
};
use baton::{HandoffPause, Invocation};
use easy_smt::{Context, Response, SExpr};

use super::super::state::{ROOT, SUCCESSOR};
use super::super::{FenceModel, Rules, SELF_TEST_FATES, VARIANTS};
use super::encode::{Encoding, Terms, claimed, fate, others, retired, wrote};

/// The epochs every rule is asked about: around 0 and 1, each early
/// term's floor, a late term's, `Epoch::LAST` and `u64::MAX`.
pub fn epochs() -> Vec<u64> {
    let term = 1u64 << 40;
    let last = Epoch::LAST.get();
    let mut all = vec![0, 1, 2, 3, last - 2, last - 1, last, last + 1, u64::MAX];
    for floor in [term, 2 * term, (1 << 23) * term] {
        all.extend([floor - 1, floor, floor + 1]);
    }
    all
}

/// The timelines the floor is asked about: 0 to 3, the last whose floor
/// is below `Epoch::LAST`, the first at it, and `u32::MAX`.
pub const TIMELINES: [u32; 8] = [0, 1, 2, 3, 1 << 23, (1 << 23) + 1, 1 << 24, u32::MAX];

/// One disagreement: the rule, its input and both answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    /// The rules ("real" or a variant's name) and which of them.
    pub rule: String,
    /// The input.
    pub input: String,
    /// What the Rust function answered.
    pub rust: String,
    /// What the encoding answered.
    pub encoding: String,
}

/// What an agreement run compared.
#[derive(Clone, Debug, Default)]
pub struct Agreement {
    /// Inputs compared.
    pub inputs: usize,
    /// Where the two answered differently.
    pub disagreements: Vec<Disagreement>,
}

/// A pending comparison: the Rust answer and the encoding's terms.
struct Case {
    rule: String,
    input: String,
    rust: Vec<i128>,
    terms: Vec<SExpr>,
}

/// The claim shapes: the fate code the encoding reads, and the facts.
fn claim_facts(model: &FenceModel, epoch: u64, shape: i64, twist: u8) -> RunFacts<u8> {
    let mut facts = RunFacts::empty(ROOT, ROOT);
    facts.epoch = Epoch::new(epoch);
    match (shape, twist) {
        (fate::HANDED_OFF, _) => facts.pauses.push(model.row(0)),
        (fate::FINISHED, _) => facts.finished = Some(model.outcome(0)),
        (fate::RETIRED, _) => facts.retired = true,
        (fate::CONTRADICTORY, 0) => facts.pauses.extend([model.row(0), model.row(1)]),
        (fate::CONTRADICTORY, 1) => {
            facts.pauses.push(model.row(0));
            facts.finished = Some(model.outcome(0));
        }
        (fate::CONTRADICTORY, _) => {
            facts.retired = true;
            facts.pauses.push(model.row(0));
        }
        _ => {}
    }
    facts
}

fn claim_code(step: &Result<ClaimStep<u8>, LogError>) -> Vec<i128> {
    match step {
        Ok(ClaimStep { answer, write }) => {
            let (code, epoch) = match answer {
                Claim::Owner(e) => (claimed::OWNER, i128::from(e.get())),
                Claim::HandedOff(_) => (claimed::HANDED_OFF, -1),
                Claim::Finished(_) => (claimed::FINISHED, -1),
                Claim::Retired => (claimed::RETIRED, -1),
            };
            vec![
                i128::from(code),
                epoch,
                i128::from(write.is_some()),
                write.map_or(-1, |e| i128::from(e.get())),
            ]
        }
        Err(LogError::EpochsExhausted) => vec![i128::from(claimed::EXHAUSTED), -1, 0, -1],
        Err(LogError::Contradictory(_)) => vec![i128::from(claimed::CONTRADICTORY), -1, 0, -1],
        Err(other) => vec![-100, i128::from(other.to_string().len() as u32), 0, -1],
    }
}

fn write_code(answer: &Result<AppendStep, LogError>) -> i128 {
    i128::from(match answer {
        Ok(AppendStep::Write) => wrote::WRITTEN,
        Ok(AppendStep::Idempotent) => wrote::ALREADY_DURABLE,
        Err(LogError::Fenced { .. }) => wrote::FENCED,
        Err(LogError::EpochNotIssued { .. }) => wrote::NOT_ISSUED,
        Err(LogError::AlreadyHandedOff { .. }) => wrote::ALREADY_HANDED_OFF,
        Err(LogError::AlreadyFinished { .. }) => wrote::ALREADY_FINISHED,
        Err(LogError::Retired { .. }) => wrote::RETIRED,
        Err(_) => -100,
    })
}

fn retire_code(answer: &Result<(Retirement, bool), LogError>) -> Vec<i128> {
    match answer {
        Ok((Retirement::Retired { .. }, tombstone)) => {
            vec![i128::from(retired::REMOVED), i128::from(*tombstone)]
        }
        Ok((Retirement::AlreadyRetired, _)) => vec![i128::from(retired::ALREADY), -1],
        Err(LogError::RunOpen { .. }) => vec![i128::from(retired::RUN_OPEN), -1],
        Err(LogError::NothingToRetire { .. }) => vec![i128::from(retired::NOTHING), -1],
        Err(_) => vec![-100, -1],
    }
}

/// The rules and encodings compared: the real ones and every variant's.
pub fn every_rule() -> Vec<(&'static str, Rules, Encoding)> {
    let mut all = vec![("real", Rules::REAL, Encoding::REAL)];
    for variant in VARIANTS {
        let encoding = Encoding::of(variant.name)
            .unwrap_or_else(|| panic!("no encoding of variant {}", variant.name));
        all.push((variant.name, variant.rules, encoding));
    }
    all
}

/// Compares every rule of every encoding with its Rust function on the
/// grid.
///
/// # Errors
///
/// The solver's.
pub fn agree(ctx: &mut Context) -> io::Result<Agreement> {
    agree_on(ctx, &every_rule(), true)
}

/// One rule set's encoding, defined in the solver as functions of the
/// rules' inputs, so that each case is a few small applications.
struct Defined {
    /// The claim's answer, `Owner`'s epoch (−1 otherwise), whether it
    /// writes (1 or 0), the epoch written (−1 if none); of (epoch, fate,
    /// floor).
    claim: [SExpr; 4],
    /// The append's and the finish's answers; of (current, fate, epoch,
    /// same row).
    write: [SExpr; 2],
    /// The retirement's answer and its tombstone (1 or 0; −1 unless
    /// removed); of (epoch, fate, successor).
    retire: [SExpr; 2],
}

fn define(ctx: &mut Context, i: usize, encoding: Encoding) -> io::Result<Defined> {
    let (int, boolean) = (ctx.int_sort(), ctx.bool_sort());
    let arg = |name: &str, sort: SExpr| (name.to_owned(), sort);
    let [
        epoch,
        fate_,
        floor,
        current,
        written_epoch,
        same,
        successor,
        others_,
    ] = [
        "epoch",
        "fate",
        "floor",
        "current",
        "written_epoch",
        "same",
        "successor",
        "others",
    ]
    .map(|name| ctx.atom(name));
    let (claim, write, retire) = {
        let t = Terms::new(ctx);
        let c = t.ctx();
        let one_zero = |b: SExpr| c.ite(b, t.int(1), t.int(0));
        let ct = t.claim(encoding.claim, epoch, fate_, floor);
        let owner = t.is(ct.answer, claimed::OWNER);
        let claim = [
            ct.answer,
            c.ite(owner, ct.epoch, t.int(-1)),
            one_zero(ct.writes),
            c.ite(ct.writes, ct.written, t.int(-1)),
        ];
        let write = [
            t.write(encoding.append, false, current, fate_, written_epoch, same),
            t.write(encoding.finish, true, current, fate_, written_epoch, same),
        ];
        let rt = t.retire(encoding.retire, epoch, fate_, successor, others_);
        let removed = t.is(rt.answer, retired::REMOVED);
        let retire = [rt.answer, c.ite(removed, one_zero(rt.tombstone), t.int(-1))];
        (claim, write, retire)
    };
    let claim_args = vec![arg("epoch", int), arg("fate", int), arg("floor", int)];
    let write_args = vec![
        arg("current", int),
        arg("fate", int),
        arg("written_epoch", int),
        arg("same", boolean),
    ];
    let retire_args = vec![
        arg("epoch", int),
        arg("fate", int),
        arg("successor", int),
        arg("others", int),
    ];
    let mut define_each = |what: &str, args: &[(String, SExpr)], bodies: &[SExpr]| {
        bodies
            .iter()
            .enumerate()
            .map(|(f, body)| ctx.define_fun(format!("{what}_{i}_{f}"), args.to_vec(), int, *body))
            .collect::<io::Result<Vec<SExpr>>>()
    };
    let claims = define_each("claim", &claim_args, &claim)?;
    let writes = define_each("write", &write_args, &write)?;
    let retires = define_each("retire", &retire_args, &retire)?;
    Ok(Defined {
        claim: claims.try_into().expect("four"),
        write: writes.try_into().expect("two"),
        retire: retires.try_into().expect("two"),
    })
}

/// The application of `f` to `args`.
fn apply(c: &Context, f: SExpr, args: &[SExpr]) -> SExpr {
    c.list(std::iter::once(f).chain(args.iter().copied()).collect())
}

/// The claim's cases of one rule set: every epoch, floor and fact shape.
fn claim_cases(
    c: &Context,
    model: &FenceModel,
    name: &str,
    rules: Rules,
    d: &Defined,
    out: &mut Vec<Case>,
) {
    let epochs = epochs();
    let floors: Vec<u64> = epochs
        .iter()
        .copied()
        .filter(|e| *e <= Epoch::LAST.get())
        .collect();
    let shapes = [
        (fate::OPEN, 1),
        (fate::HANDED_OFF, 1),
        (fate::FINISHED, 1),
        (fate::RETIRED, 1),
        (fate::CONTRADICTORY, 3),
    ];
    for &epoch in &epochs {
        for &floor in &floors {
            for (shape, twists) in shapes {
                for twist in 0..twists {
                    let facts = claim_facts(model, epoch, shape, twist);
                    let args = [c.numeral(epoch), c.numeral(shape), c.numeral(floor)];
                    out.push(Case {
                        rule: format!("{name}: claim"),
                        input: format!("epoch {epoch}, facts {shape}/{twist}, floor {floor}"),
                        rust: claim_code(&(rules.claim)(&facts, Epoch::new(floor))),
                        terms: d.claim.iter().map(|f| apply(c, *f, &args)).collect(),
                    });
                }
            }
        }
    }
}

/// The append's and the finish's cases of one rule set: every current
/// epoch, fate, written epoch, and the row the same or not.
fn write_cases(
    c: &Context,
    model: &FenceModel,
    name: &str,
    rules: Rules,
    d: &Defined,
    out: &mut Vec<Case>,
) {
    let epochs = epochs();
    let (new_pause, other_pause) = (model.row(0), model.row(1));
    let (new_outcome, other_outcome) = (model.outcome(0), model.outcome(1));
    for &current in &epochs {
        for &epoch in &epochs {
            for shape in [fate::OPEN, fate::HANDED_OFF, fate::FINISHED, fate::RETIRED] {
                for same in [true, false] {
                    let durable_pause = if same { &new_pause } else { &other_pause };
                    let durable_outcome = if same { &new_outcome } else { &other_outcome };
                    let fate_of = match shape {
                        fate::HANDED_OFF => Fate::HandedOff(durable_pause),
                        fate::FINISHED => Fate::Finished(durable_outcome),
                        fate::RETIRED => Fate::Retired,
                        _ => Fate::Open,
                    };
                    let (current_e, epoch_e) = (Epoch::new(current), Epoch::new(epoch));
                    let appended = (rules.append)(
                        ROOT,
                        current_e,
                        fate_of,
                        epoch_e,
                        (&new_pause.source, &new_pause.pause),
                    );
                    let finished = (rules.finish)(
                        ROOT,
                        current_e,
                        fate_of,
                        epoch_e,
                        (&new_outcome.source, &new_outcome.outcome),
                    );
                    let args = [
                        c.numeral(current),
                        c.numeral(shape),
                        c.numeral(epoch),
                        if same { c.true_() } else { c.false_() },
                    ];
                    for (which, rust, f) in [
                        ("append", appended, d.write[0]),
                        ("finish", finished, d.write[1]),
                    ] {
                        out.push(Case {
                            rule: format!("{name}: {which}"),
                            input: format!(
                                "current {current}, fate {shape}, epoch {epoch}, same row {same}"
                            ),
                            rust: vec![write_code(&rust)],
                            terms: vec![apply(c, f, &args)],
                        });
                    }
                }
            }
        }
    }
}

/// The Runs a retirement finds, by id.
type Runs<'a> = Vec<(&'a str, Fate<'a, u8>)>;

/// A pause of Run `run` naming `successor`: what another Run of the
/// root appended.
fn other_pause(model: &FenceModel, run: &str, successor: &str) -> Appended<u8> {
    let mut row = model.row(0);
    let mut intent = (*row.pause.intent).clone();
    intent.successor_run_id = successor.into();
    intent.handoff_id = format!("{run}-handoff");
    row.source.run_id = run.into();
    row.pause = HandoffPause::new(Arc::new(intent), 0);
    row
}

/// The retirement's cases of one rule set: the Run held or not, its fate,
/// its successor's, and the root's other Runs (none; two ended, one
/// handed off to the other; one open; one handed off to a successor the
/// log holds no Run of).
fn retire_cases(
    c: &Context,
    model: &FenceModel,
    name: &str,
    rules: Rules,
    d: &Defined,
    out: &mut Vec<Case>,
) {
    let (pause, outcome) = (model.row(0), model.outcome(0));
    let successor_row = model.successor_outcome();
    let to_other = other_pause(model, "other-1", "other-2");
    let to_nobody = other_pause(model, "other-1", "other-3");
    let other_outcome = Finished {
        source: Invocation {
            run_id: "other-2".into(),
            ..model.successor_outcome().source
        },
        outcome: 1,
    };
    let others: [(i64, Runs<'_>); 4] = [
        (others::NONE, vec![]),
        (
            others::ENDED,
            vec![
                ("other-1", Fate::HandedOff(&to_other)),
                ("other-2", Fate::Finished(&other_outcome)),
            ],
        ),
        (others::OPEN, vec![("other-1", Fate::Open)]),
        (
            others::WAITING,
            vec![("other-1", Fate::HandedOff(&to_nobody))],
        ),
    ];
    for (code, rest) in &others {
        for epoch in [0u64, 1, 7] {
            for shape in [fate::OPEN, fate::HANDED_OFF, fate::FINISHED, fate::RETIRED] {
                for successor in [fate::ABSENT, fate::OPEN, fate::FINISHED] {
                    let fate_of = match shape {
                        fate::HANDED_OFF => Fate::HandedOff(&pause),
                        fate::FINISHED => Fate::Finished(&outcome),
                        fate::RETIRED => Fate::Retired,
                        _ => Fate::Open,
                    };
                    let successor_fate = if successor == fate::FINISHED {
                        Fate::Finished(&successor_row)
                    } else {
                        Fate::Open
                    };
                    let runs: Vec<(&str, Fate<'_, u8>)> = [
                        (epoch > 0).then_some((ROOT, fate_of)),
                        (successor != fate::ABSENT).then_some((SUCCESSOR, successor_fate)),
                    ]
                    .into_iter()
                    .flatten()
                    .chain(rest.iter().copied())
                    .collect();
                    let args = [
                        c.numeral(epoch),
                        c.numeral(shape),
                        c.numeral(successor),
                        c.numeral(*code),
                    ];
                    out.push(Case {
                        rule: format!("{name}: retire"),
                        input: format!(
                            "epoch {epoch}, fate {shape}, successor {successor}, others {code}"
                        ),
                        rust: retire_code(&(rules.retire)(ROOT, shape == fate::RETIRED, &runs)),
                        terms: d.retire.iter().map(|f| apply(c, *f, &args)).collect(),
                    });
                }
            }
        }
    }
}

/// Compares each encoding of `rules` with its Rust functions on the grid
/// (and `timeline_floor` with the floor's term if `floor`).
///
/// # Errors
///
/// The solver's.
pub fn agree_on(
    ctx: &mut Context,
    rules: &[(&'static str, Rules, Encoding)],
    floor: bool,
) -> io::Result<Agreement> {
    let model = FenceModel::new(SELF_TEST_FATES);
    ctx.push()?;
    let mut defined = Vec::new();
    for (i, &(_, _, encoding)) in rules.iter().enumerate() {
        defined.push(define(ctx, i, encoding)?);
    }
    let mut cases = Vec::new();
    {
        let t = Terms::new(ctx);
        let c = t.ctx();
        for timeline in TIMELINES.iter().copied().filter(|_| floor) {
            cases.push(Case {
                rule: "timeline_floor".into(),
                input: format!("timeline {timeline}"),
                rust: vec![i128::from(timeline_floor(timeline).get())],
                terms: vec![t.floor(t.nat(u64::from(timeline)))],
            });
        }
        for (&(name, rules, _), d) in rules.iter().zip(&defined) {
            claim_cases(c, &model, name, rules, d, &mut cases);
            write_cases(c, &model, name, rules, d, &mut cases);
            retire_cases(c, &model, name, rules, d, &mut cases);
        }
    }
    let agreement = evaluate(ctx, cases);
    ctx.pop()?;
    agreement
}

fn evaluate(ctx: &mut Context, cases: Vec<Case>) -> io::Result<Agreement> {
    if ctx.check()? != Response::Sat {
        return Err(io::Error::other("the empty context is not satisfiable"));
    }
    let mut agreement = Agreement::default();
    for chunk in cases.chunks(256) {
        let terms: Vec<SExpr> = chunk
            .iter()
            .flat_map(|case| case.terms.iter().copied())
            .collect();
        let values = ctx.get_value(terms)?;
        let mut values = values.into_iter().map(|(_, v)| v);
        for case in chunk {
            let encoded: Vec<i128> = case
                .terms
                .iter()
                .map(|_| {
                    let v = values.next().expect("a value per term");
                    crate::smt::integer(ctx, v)
                })
                .collect();
            agreement.inputs += 1;
            if encoded != case.rust {
                agreement.disagreements.push(Disagreement {
                    rule: case.rule.clone(),
                    input: case.input.clone(),
                    rust: format!("{:?}", case.rust),
                    encoding: format!("{encoded:?}"),
                });
            }
        }
    }
    Ok(agreement)
}
