//! A step of a fence history in words, read back from the solver's model
//! (the histories themselves are [`crate::smt::shortest_break`]'s).

use std::io;

use easy_smt::Context;

use super::encode::{claimed, fate, retired, wrote};
use super::system::{Answers, Choice, Copy, Frame, Mode, step};
use crate::smt::values;

fn fate_name(code: i128) -> &'static str {
    match i64::try_from(code) {
        Ok(fate::OPEN) => "open",
        Ok(fate::HANDED_OFF) => "handed off",
        Ok(fate::FINISHED) => "finished",
        Ok(fate::RETIRED) => "retired (tombstone)",
        Ok(fate::ABSENT) => "not claimed",
        _ => "?",
    }
}

fn write_name(code: i128) -> &'static str {
    match i64::try_from(code) {
        Ok(wrote::WRITTEN) => "Written",
        Ok(wrote::ALREADY_DURABLE) => "AlreadyDurable",
        Ok(wrote::FENCED) => "Fenced",
        Ok(wrote::NOT_ISSUED) => "EpochNotIssued",
        Ok(wrote::ALREADY_HANDED_OFF) => "AlreadyHandedOff",
        Ok(wrote::ALREADY_FINISHED) => "AlreadyFinished",
        Ok(wrote::RETIRED) => "Retired",
        _ => "?",
    }
}

fn copy(ctx: &mut Context, c: &Copy) -> io::Result<String> {
    let v = values(ctx, vec![c.epoch, c.fate, c.successor])?;
    Ok(format!(
        "epoch {}, {}, successor {}",
        v[0],
        fate_name(v[1]),
        fate_name(v[2])
    ))
}

/// Step `x` (answers `a`, leading to `n`) in words.
pub(super) fn describe(
    ctx: &mut Context,
    mode: Mode,
    x: &Choice,
    a: &Answers,
    n: &Frame,
) -> io::Result<String> {
    let v = values(
        ctx,
        vec![
            x.kind,
            x.lost,
            x.epoch,
            a.claim.answer,
            a.claim.epoch,
            a.append,
            a.finish,
            a.retire.answer,
            n.term,
            x.others,
        ],
    )?;
    let kind = i64::try_from(v[0]).unwrap_or(-1);
    let answer = match kind {
        step::CLAIM => match i64::try_from(v[3]) {
            Ok(claimed::OWNER) => format!("Owner({})", v[4]),
            Ok(claimed::HANDED_OFF) => "HandedOff".into(),
            Ok(claimed::FINISHED) => "Finished".into(),
            Ok(claimed::RETIRED) => "Retired".into(),
            Ok(claimed::EXHAUSTED) => "EpochsExhausted".into(),
            _ => "Contradictory".into(),
        },
        step::APPEND => write_name(v[5]).into(),
        step::FINISH => write_name(v[6]).into(),
        step::RETIRE => match i64::try_from(v[7]) {
            Ok(retired::REMOVED) => "Retired (rows removed)".into(),
            Ok(retired::ALREADY) => "AlreadyRetired".into(),
            Ok(retired::RUN_OPEN) => "RunOpen".into(),
            _ => "NothingToRetire".into(),
        },
        _ => "done".into(),
    };
    let name = usize::try_from(kind)
        .ok()
        .and_then(|k| step::NAMES.get(k))
        .unwrap_or(&"?");
    let epoch = if matches!(kind, step::APPEND | step::FINISH) {
        format!(" under epoch {}", v[2])
    } else {
        String::new()
    };
    let lost = if v[1] == 1 { " (reply lost)" } else { "" };
    let epoch = if kind == step::RETIRE {
        let others = [
            "no other Run",
            "other Runs ended",
            "another Run open",
            "another Run's successor not final",
        ];
        let which = usize::try_from(v[9])
            .ok()
            .and_then(|o| others.get(o))
            .unwrap_or(&"?");
        format!(" ({which})")
    } else {
        epoch
    };
    let mut line = format!(
        "{name}{epoch}{lost} -> {answer}; log: {}",
        copy(ctx, &n.log)?
    );
    if mode != Mode::Single {
        line += &format!("; standby: {}; term {}", copy(ctx, &n.standby)?, v[8]);
    }
    Ok(line)
}
