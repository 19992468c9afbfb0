//! The markdown tables: each figure is the median over the rounds, each
//! round's own value after it in brackets. A ratio is the ratio of the
//! medians, its brackets the same round's ratios (the two systems of a
//! round ran back to back, so a round's ratio sees the same machine load).

use crate::awa_units;
use crate::baton_units;
use crate::measure::Cell;
use crate::statements::Breakdown;

/// The four cells of one round at one k.
pub struct Round {
    pub baton: Cell,
    /// awa with its defaults.
    pub awa: Cell,
    /// awa as its own benchmarks tune it (`Tuning::AsItsBenches`).
    pub awa_tuned: Cell,
    pub bare: Cell,
    pub handoff: Cell,
}

impl Round {
    /// The machine's highest 1-minute load average at the end of any of
    /// the round's cells.
    fn load(&self) -> f64 {
        [
            self.baton,
            self.awa,
            self.awa_tuned,
            self.bare,
            self.handoff,
        ]
        .iter()
        .map(|c| c.load)
        .fold(0.0, f64::max)
    }
}

/// Every round of every k, in order.
pub struct Results {
    pub rows: Vec<(usize, Vec<Round>)>,
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `median [r1, r2, …]` of `values`, each shown by `show`.
fn spread(values: &[f64], show: impl Fn(f64) -> String) -> String {
    let each: Vec<String> = values.iter().map(|&v| show(v)).collect();
    format!("{} [{}]", show(median(values)), each.join(", "))
}

/// `ratio of medians [per-round ratios]` of `top` over `bottom`.
fn ratio(top: &[f64], bottom: &[f64], show: impl Fn(f64) -> String) -> String {
    let each: Vec<String> = top.iter().zip(bottom).map(|(t, b)| show(t / b)).collect();
    format!(
        "**{}** [{}]",
        show(median(top) / median(bottom)),
        each.join(", ")
    )
}

/// `x / y [x/y, …]`: two medians and each round's pair.
fn pair(
    rounds: &[Round],
    cell: fn(&Round) -> Cell,
    a: fn(&Cell) -> f64,
    b: fn(&Cell) -> f64,
    show: fn(f64, f64) -> String,
) -> String {
    let xs: Vec<f64> = rounds.iter().map(|r| a(&cell(r))).collect();
    let ys: Vec<f64> = rounds.iter().map(|r| b(&cell(r))).collect();
    let each: Vec<String> = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| show(x, y).replace(' ', ""))
        .collect();
    format!("{} [{}]", show(median(&xs), median(&ys)), each.join(", "))
}

fn whole(v: f64) -> String {
    format!("{v:.0}")
}
fn times(v: f64) -> String {
    format!("{v:.2}×")
}
fn percent(v: f64) -> String {
    format!("{:.0} %", v * 100.0)
}

/// A system's column: its name, and its cell of a round.
type System = (&'static str, fn(&Round) -> Cell);

const SYSTEMS: [System; 5] = [
    ("baton claim+finish", |r| r.baton),
    ("awa dispatch+complete (defaults)", |r| r.awa),
    ("awa (as its benches: deadline 0, poll 50 ms)", |r| {
        r.awa_tuned
    }),
    ("baton 4-op handoff", |r| r.handoff),
    ("bare INSERT", |r| r.bare),
];

impl Results {
    fn column(rounds: &[Round], f: impl Fn(&Round) -> f64) -> Vec<f64> {
        rounds.iter().map(f).collect()
    }

    /// Units per second, the ratios to awa (the faster of its two
    /// tunings in each round), and each baton unit's share of the physical
    /// limit (bare txn/s ÷ the unit's transactions), with the machine's
    /// load.
    pub fn throughput(&self) -> String {
        let mut out = String::from(
            "Throughput, units/s: median [each round]. awa: the faster of its two tunings in each round.\n\n\
             | k | baton claim+finish /s | awa defaults /s | awa as its benches /s | baton ÷ awa | handoff unit /s | handoff ÷ awa | bare txn/s | claim+finish ÷ (bare/2) | handoff ÷ (bare/4) | load (1 min) |\n\
             |---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for (k, rounds) in &self.rows {
            let baton = Self::column(rounds, |r| r.baton.per_second());
            let defaults = Self::column(rounds, |r| r.awa.per_second());
            let tuned = Self::column(rounds, |r| r.awa_tuned.per_second());
            let awa = Self::column(rounds, |r| r.awa.per_second().max(r.awa_tuned.per_second()));
            let load = Self::column(rounds, Round::load);
            let handoff = Self::column(rounds, |r| r.handoff.per_second());
            let bare = Self::column(rounds, |r| r.bare.per_second());
            let half: Vec<f64> = bare.iter().map(|b| b / 2.0).collect();
            let quarter: Vec<f64> = bare.iter().map(|b| b / 4.0).collect();
            out += &format!(
                "| {k} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                spread(&baton, whole),
                spread(&defaults, whole),
                spread(&tuned, whole),
                ratio(&baton, &awa, times),
                spread(&handoff, whole),
                ratio(&handoff, &awa, times),
                spread(&bare, whole),
                ratio(&baton, &half, percent),
                ratio(&handoff, &quarter, percent),
                spread(&load, |v| format!("{v:.1}")),
            );
        }
        out
    }

    /// A table of one `x / y` figure per system.
    fn per_system(
        &self,
        title: &str,
        a: fn(&Cell) -> f64,
        b: fn(&Cell) -> f64,
        show: fn(f64, f64) -> String,
    ) -> String {
        let names: Vec<&str> = SYSTEMS.iter().map(|(n, _)| *n).collect();
        let mut out = format!(
            "{title}\n\n| k | {} |\n|---|{}\n",
            names.join(" | "),
            "---|".repeat(names.len())
        );
        for (k, rounds) in &self.rows {
            let cells: Vec<String> = SYSTEMS
                .iter()
                .map(|(_, cell)| pair(rounds, *cell, a, b, show))
                .collect();
            out += &format!("| {k} | {} |\n", cells.join(" | "));
        }
        out
    }

    /// Write transactions and WAL bytes per unit (exact, server-wide).
    pub fn cost(&self) -> String {
        self.per_system(
            "Physical cost per unit: write transactions / WAL bytes, median [each round].",
            Cell::xacts_per_unit,
            Cell::wal_per_unit,
            |x, w| format!("{x:.2} / {w:.0}"),
        )
    }

    /// Client and server CPU per unit.
    pub fn cpu(&self) -> String {
        self.per_system(
            "CPU per unit, ms: client / server, median [each round] (client: 10 ms ticks, coarse; server: the scheduler's ns).",
            Cell::client_ms,
            Cell::server_ms,
            |c, s| format!("{c:.3} / {s:.3}"),
        )
    }
}

/// The zombie cell: a stale owner's writes after a takeover, on both.
pub fn zombie(baton: &baton_units::Zombie, awa: &awa_units::Zombie) -> String {
    format!(
        "Zombie cell: a stale owner writes after a takeover.\n\n\
         | system | what the zombie does | stale writes that landed | refused / matched 0 rows | rightful owner's write afterwards |\n\
         |---|---|---|---|---|\n\
         | baton | claim → e1; takeover claim → e2; `append_async` and `finish_async` under e1; after the owner's `finish@e2`, `finish@e1` once more | **{} / {}** | {} of the first two answered `LogError::Fenced` | `finish@e2` `Written` {}/{} |\n\
         | awa | `claim_runtime_batch` → run_lease L1; takeover: `rescue_stale_heartbeats(0)`, the deferred row made due, `promote_due`, `claim_runtime_batch` → L2 > L1; `complete_runtime_batch` with the L1 claim | **{} / {}** | {} matched 0 rows | complete with L2: 1 row, {}/{} |\n",
        baton.landed,
        3 * baton.tries,
        baton.fenced,
        baton.owner_written,
        baton.tries,
        awa.landed,
        awa.tries,
        awa.matched_none,
        awa.owner_completed,
        awa.tries,
    )
}

/// The statements mode's tables: for each cell of the first round, its
/// statements and its WAL records, per unit.
pub fn breakdowns(list: &[(String, Breakdown)]) -> String {
    let mut out = String::from(
        "Where a unit's WAL and server time go (first round of each k; \
         `pg_stat_statements`, top-level statements, and `pg_waldump --stats=record` over the \
         window; per unit).\n",
    );
    // The cells' databases end in `_r` and the round's index.
    let first_round = |db: &str| db.rsplit_once("_r").is_some_and(|(_, round)| round == "0");
    for (db, b) in list.iter().filter(|(db, _)| first_round(db)) {
        out += &format!(
            "\n`{db}`\n\n\
             | statement | calls | exec ms | plan ms | rows | WAL bytes | FPI | blocks dirtied |\n\
             |---|---|---|---|---|---|---|---|\n"
        );
        for s in b.statements.iter().take(8) {
            let mut query: String = s.query.chars().take(160).collect();
            if query.len() < s.query.len() {
                query += "…";
            }
            out += &format!(
                "| `{}` | {:.2} | {:.4} | {:.4} | {:.2} | {:.0} | {:.3} | {:.2} |\n",
                query.replace('|', "\\|"),
                s.calls,
                s.exec_ms,
                s.plan_ms,
                s.rows,
                s.wal_bytes,
                s.wal_fpi,
                s.dirtied
            );
        }
        out +=
            "\n| WAL record | records | bytes | of which full-page images |\n|---|---|---|---|\n";
        for w in b.wal.iter().filter(|w| w.bytes >= 1.0).take(12) {
            out += &format!(
                "| {} | {:.2} | {:.0} | {:.0} |\n",
                w.kind, w.records, w.bytes, w.fpi_bytes
            );
        }
    }
    out
}
