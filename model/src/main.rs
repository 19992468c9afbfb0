//! `cargo run --release -p baton-model`: the model-checking report — the
//! handoff gate's configurations, the durable handoff's (the gate with the
//! log, crashes and the restart: R1–R5), the delegation ledger's, the
//! fenced handoff's (SPEC §6: zombies, wrong suspicions, lost replies,
//! the finish, the successor and retention: R1–R10, G1, G3–G5; then a
//! failover to a synchronous and to an asynchronous standby: G2 too), and
//! the self-tests on broken variants of each.
//!
//! Flags: `--diagram` prints the Mermaid state diagram of the CI
//! configuration; `--symmetry` reduces symmetry; `--requesters N --tries T`
//! checks that configuration instead; `--no-closer` drops the closer;
//! `--durable` adds the durable log, crashes and the restart to it;
//! `--write-regressions` writes the self-test traces to
//! `model/regressions/`; `--largest SECS` measures which configurations
//! complete within SECS seconds, with and without symmetry; `--variant
//! NAME` checks a broken variant of `step` instead of the real one (to see
//! a counterexample printed, and for the gate written as JSON; the
//! ledger's variants `f_…`–`h_…` and `o_…` run the ledger's configurations, the
//! fence's `k_…`–`u_…` the fence's (those of the finish and retention, its
//! configurations with them; the failover's, those with an asynchronous
//! standby), the durable variants `i_seal_before_append` and
//! `j_reconcile_resumes_a_handed_off_run` the durable ones). Exits 1
//! if a property fails or a broken variant goes uncaught.

use std::path::Path;
use std::process::ExitCode;

use baton_model::explore::{Options, explore};
use baton_model::gate::system::Setup;
use baton_model::gate::{
    CI, DURABLE_CI, DURABLE_REPORT, GateModel, Named, REPORT, durable, durable_full, full, props,
    variants,
};
use baton_model::{fence, ledger, report};

fn value(args: &[String], flag: &str) -> Option<u8> {
    let i = args.iter().position(|a| a == flag)?;
    let v = args.get(i + 1).and_then(|v| v.parse().ok());
    Some(v.unwrap_or_else(|| panic!("{flag} takes a number")))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--diagram") {
        print!("{}", report::diagram());
        return ExitCode::SUCCESS;
    }
    if let Some(limit) = value(&args, "--largest") {
        largest(limit);
        return ExitCode::SUCCESS;
    }
    let symmetry = has("--symmetry");
    let custom = value(&args, "--requesters").map(|k| {
        let tries = value(&args, "--tries").unwrap_or(1);
        let setup = Setup {
            closer: !has("--no-closer"),
            ..if has("--durable") {
                durable_full(k, tries)
            } else {
                full(k, tries)
            }
        };
        let name = format!(
            "{}{k} requesters × {tries}{}",
            if setup.durable.is_on() {
                "durable: "
            } else {
                ""
            },
            if setup.closer { "" } else { ", no closer" }
        );
        Named {
            name: Box::leak(name.into_boxed_str()),
            setup,
        }
    });
    let configs: Vec<Named> = custom.map_or_else(|| REPORT.to_vec(), |c| vec![c]);
    let started = std::time::Instant::now();
    println!(
        "baton model check: every reachable state stored whole (exact), shortest counterexamples\n"
    );
    let mut ok = true;
    let variant = args
        .iter()
        .position(|a| a == "--variant")
        .map(|i| args.get(i + 1).cloned().expect("--variant takes a name"));
    let label = variant.clone().unwrap_or_else(|| "real".into());
    if let Some(broken) = ledger::variants::by_name(&label) {
        for named in ledger::REPORT {
            let checked = ledger::report::check_step(named, broken);
            print!("{}", ledger::report::format(&checked));
            ok &= checked.exploration.all_passed();
        }
        return finish(ok, started);
    }
    if let Some(broken) = fence::by_name(&label) {
        let fates = |s: fence::Setup| (s.finish, s.retire, s.replication);
        for named in fence::REPORT
            .into_iter()
            .filter(|n| fates(n.setup) == fates(broken.setup))
        {
            let model = fence::FenceModel::with_rules(named.setup, broken.rules);
            let checked = fence::report::Checked {
                named,
                exploration: fence::report::explore_all(&model),
            };
            print!("{}", fence::report::format(&checked));
            ok &= checked.exploration.all_passed();
        }
        return finish(ok, started);
    }
    if let Some(broken) = durable::by_name(&label) {
        for named in &DURABLE_REPORT {
            let model = report::durable_model(&broken, named.setup);
            ok &= print_checked(&report::check_model(named, false, model), &label);
        }
        return finish(ok, started);
    }
    let step = variants::by_name(&label).unwrap_or_else(|| panic!("no variant {label}"));
    for named in &configs {
        ok &= print_checked(&report::check_step(named, symmetry, step), &label);
    }
    if custom.is_none() && variant.is_none() {
        let caught = report::self_test(CI.setup);
        print!("{}", report::format_self_test(&caught));
        ok &= caught.iter().all(|c| c.trace.is_some());
        if has("--write-regressions") {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
            for c in &caught {
                if let Some(t) = &c.trace {
                    let path = dir.join(format!("{}.json", c.variant.name));
                    std::fs::write(&path, t.to_json() + "\n").expect("write a regression");
                    println!("  wrote {}", path.display());
                }
            }
        }
        println!();
        for named in &DURABLE_REPORT {
            ok &= print_checked(&report::check(named, false), &label);
        }
        let caught = report::durable_self_test(DURABLE_CI.setup);
        print!("{}", report::format_durable_self_test(&caught));
        ok &= caught.iter().all(|c| c.trace.is_some());
        println!();
        for named in ledger::REPORT {
            let checked = ledger::report::check(named);
            print!("{}", ledger::report::format(&checked));
            ok &= checked.exploration.all_passed();
            println!();
        }
        let caught = ledger::report::self_test(ledger::report::SELF_TEST);
        print!("{}", ledger::report::format_self_test(&caught));
        ok &= caught.iter().all(|c| c.trace.is_some());
        println!();
        for named in fence::REPORT {
            let checked = fence::report::check(named);
            print!("{}", fence::report::format(&checked));
            ok &= checked.exploration.all_passed();
            println!();
        }
        let caught = fence::report::self_test();
        print!("{}", fence::report::format_self_test(&caught));
        ok &= caught.iter().all(|c| c.trace.is_some());
        println!();
        let (proofs, proven) = fence::proof::report::section();
        print!("{proofs}");
        ok &= proven;
        println!();
        let (proofs, proven) = baton_model::gate::proof::section();
        print!("{proofs}");
        ok &= proven;
        println!();
        let (proofs, proven) = baton_model::ledger::proof::section();
        print!("{proofs}");
        ok &= proven;
    }
    finish(ok, started)
}

/// Prints one checked configuration, writes its counterexamples (if any)
/// as JSON; whether every property passed.
fn print_checked(checked: &report::Checked, label: &str) -> bool {
    print!("{}", report::format(checked));
    let passed = checked.exploration.all_passed();
    if !passed {
        match report::write_counterexamples(checked, label, &report::counterexample_dir()) {
            Ok(paths) => paths
                .iter()
                .for_each(|p| println!("  counterexample written to {}", p.display())),
            Err(e) => eprintln!("  could not write counterexamples: {e}"),
        }
    }
    println!();
    passed
}

/// Prints the verdict and the total time; the exit code.
fn finish(ok: bool, started: std::time::Instant) -> ExitCode {
    println!(
        "\n{} in {:.2} s",
        if ok { "all properties hold" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Checks growing configurations under a time limit, with and without
/// symmetry, and prints each one's size and speed.
fn largest(limit: u8) {
    let limit = std::time::Duration::from_secs(limit.into());
    let sizes = [
        (3, 2),
        (4, 1),
        (5, 1),
        (4, 2),
        (6, 1),
        (5, 2),
        (4, 3),
        (6, 2),
        (5, 3),
        (6, 3),
    ];
    for symmetry in [false, true] {
        for (k, tries) in sizes {
            let model = GateModel::new(full(k, tries));
            let options = Options {
                symmetry,
                liveness: !symmetry,
                time_limit: Some(limit),
            };
            let e = explore(&model, &props::properties(), options);
            let within = e.complete && e.elapsed <= limit;
            println!(
                "{k} requesters × {tries}{}: {} · {} states · {} transitions · {:.1} s ({:.1} s search) · {} states/s · {}",
                if symmetry { ", symmetry" } else { "" },
                if within {
                    "within the limit"
                } else {
                    "OVER the limit"
                },
                report::thousands(e.states as u64),
                report::thousands(e.transitions),
                e.elapsed.as_secs_f64(),
                e.search.as_secs_f64(),
                report::thousands(report::speed(&e) as u64),
                match (e.complete, e.all_passed()) {
                    (false, _) => "incomplete",
                    (true, true) => "all pass",
                    (true, false) => "FAILED",
                },
            );
        }
    }
}
