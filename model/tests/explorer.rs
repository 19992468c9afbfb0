//! The explorer itself, on toy models whose answers are known by hand.

use baton_model::explore::{
    Check, Fairness, Model, Options, Property, Successor, Verdict, explore,
};

/// A counter from 0 to 20: `+1` always, `+5` while below 10, and `reset`
/// from 20 back to 0. The bad state 12 is 12 steps away by `+1` but 4 by
/// `+5, +5, +1, +1`.
struct Counter;

impl Model for Counter {
    type State = u8;
    type Action = &'static str;
    type Key = u8;

    fn pack(&self, state: &u8) -> u8 {
        *state
    }

    fn unpack(&self, key: u8) -> u8 {
        key
    }

    fn initial_states(&self) -> Vec<u8> {
        vec![0]
    }

    fn successors(&self, s: &u8, out: &mut Vec<Successor<&'static str, u8>>) {
        let mut push = |action, next| {
            out.push(Successor {
                action,
                next,
                fairness: Fairness::Fair(0),
            })
        };
        if *s < 20 {
            push("+1", s + 1);
        }
        if *s < 10 {
            push("+5", s + 5);
        }
        if *s == 20 {
            push("reset", 0);
        }
    }
}

fn run<M: Model>(model: &M, properties: &[Property<M>]) -> Vec<Verdict<M::State, M::Action>> {
    let e = explore(
        model,
        properties,
        Options {
            symmetry: false,
            liveness: true,
            time_limit: None,
        },
    );
    e.verdicts.into_iter().map(|(_, v)| v).collect()
}

#[test]
fn a_state_invariant_violation_comes_with_a_shortest_trace() {
    let verdicts = run(
        &Counter,
        &[Property {
            name: "never 12",
            check: Check::Always(|_, s| *s != 12),
        }],
    );
    let Verdict::Violated(trace) = &verdicts[0] else {
        panic!("12 is reachable")
    };
    let acts: Vec<_> = trace.steps.iter().map(|(a, _)| *a).collect();
    assert_eq!(acts.len(), 4, "{acts:?}");
    assert_eq!(trace.steps.last().map(|(_, s)| *s), Some(12));
}

#[test]
fn a_transition_invariant_violation_ends_with_the_offending_step() {
    let verdicts = run(
        &Counter,
        &[Property {
            name: "no +5 from 5",
            check: Check::AlwaysStep(|_, a, act, _| !(*a == 5 && *act == "+5")),
        }],
    );
    let Verdict::Violated(trace) = &verdicts[0] else {
        panic!("5 --+5--> 10 exists")
    };
    assert_eq!(trace.steps, vec![("+5", 5), ("+5", 10)]);
}

#[test]
fn sometimes_reports_a_shortest_witness_or_unreached() {
    let verdicts = run(
        &Counter,
        &[
            Property {
                name: "reset",
                check: Check::Sometimes(|_, _, act, _| *act == "reset"),
            },
            Property {
                name: "21",
                check: Check::Sometimes(|_, _, _, b| *b == 21),
            },
        ],
    );
    let Verdict::Reached(trace) = &verdicts[0] else {
        panic!("reset is reachable")
    };
    assert_eq!(
        trace.steps.len(),
        2 + 10 + 1,
        "0 +5 +5 then ten +1, then reset"
    );
    assert_eq!(verdicts[1], Verdict::Unreached);
}

#[test]
fn the_counter_is_explored_exactly() {
    let e = explore(&Counter, &[], Options::default());
    assert_eq!((e.states, e.transitions, e.max_depth), (21, 31, 12));
}

/// A worker that may loop between `a` and `b` (fair class 0) while a
/// request is pending, or serve it (`serve`, also class 0); a `tick` of an
/// unfair clock loops at `a`.
struct Loop {
    serve_enabled: bool,
}

impl Model for Loop {
    type State = char;
    type Action = &'static str;
    type Key = char;

    fn pack(&self, state: &char) -> char {
        *state
    }

    fn unpack(&self, key: char) -> char {
        key
    }

    fn initial_states(&self) -> Vec<char> {
        vec!['a']
    }

    fn successors(&self, s: &char, out: &mut Vec<Successor<&'static str, char>>) {
        match s {
            'a' => {
                out.push(Successor {
                    action: "go",
                    next: 'b',
                    fairness: Fairness::Fair(0),
                });
                out.push(Successor {
                    action: "tick",
                    next: 'a',
                    fairness: Fairness::Optional,
                });
            }
            'b' => {
                out.push(Successor {
                    action: "back",
                    next: 'a',
                    fairness: Fairness::Fair(0),
                });
                if self.serve_enabled {
                    out.push(Successor {
                        action: "serve",
                        next: 'z',
                        fairness: Fairness::Fair(1),
                    });
                }
            }
            _ => {}
        }
    }
}

fn pending() -> Property<Loop> {
    Property {
        name: "served",
        check: Check::Eventually(|_, s| u64::from(*s != 'z')),
    }
}

#[test]
fn a_livelock_is_found_as_a_lasso() {
    let verdicts = run(
        &Loop {
            serve_enabled: false,
        },
        &[pending()],
    );
    let Verdict::Violated(trace) = &verdicts[0] else {
        panic!("a-b-a forever is fair")
    };
    assert_eq!(trace.loop_start, Some(0));
    assert_eq!(
        trace.steps.iter().map(|(a, _)| *a).collect::<Vec<_>>(),
        ["go", "back"]
    );
}

#[test]
fn weak_fairness_excuses_no_cycle_whose_fair_class_stays_disabled_somewhere() {
    // `serve` (class 1) is enabled only in `b`: the a-b cycle passes `a`
    // where it is disabled, so weak fairness does not force it. Violated.
    let verdicts = run(
        &Loop {
            serve_enabled: true,
        },
        &[pending()],
    );
    assert!(matches!(verdicts[0], Verdict::Violated(_)));
}

/// `a` with an unfair self-loop and a fair exit to `z`.
struct Exit;

impl Model for Exit {
    type State = char;
    type Action = &'static str;
    type Key = char;

    fn pack(&self, state: &char) -> char {
        *state
    }

    fn unpack(&self, key: char) -> char {
        key
    }

    fn initial_states(&self) -> Vec<char> {
        vec!['a']
    }

    fn successors(&self, s: &char, out: &mut Vec<Successor<&'static str, char>>) {
        if *s == 'a' {
            out.push(Successor {
                action: "spin",
                next: 'a',
                fairness: Fairness::Optional,
            });
            out.push(Successor {
                action: "exit",
                next: 'z',
                fairness: Fairness::Fair(0),
            });
        }
    }
}

#[test]
fn an_unfair_self_loop_cannot_postpone_a_fair_step_forever() {
    let verdicts = run(
        &Exit,
        &[Property {
            name: "exits",
            check: Check::Eventually(|_, s| u64::from(*s == 'a')),
        }],
    );
    assert_eq!(verdicts[0], Verdict::Holds);
}

/// `a` whose only step, to `z`, is optional.
struct Idle;

impl Model for Idle {
    type State = char;
    type Action = &'static str;
    type Key = char;

    fn pack(&self, state: &char) -> char {
        *state
    }

    fn unpack(&self, key: char) -> char {
        key
    }

    fn initial_states(&self) -> Vec<char> {
        vec!['a']
    }

    fn successors(&self, s: &char, out: &mut Vec<Successor<&'static str, char>>) {
        if *s == 'a' {
            out.push(Successor {
                action: "maybe",
                next: 'z',
                fairness: Fairness::Optional,
            });
        }
    }
}

#[test]
fn a_state_with_no_fair_step_may_stutter_forever() {
    let verdicts = run(
        &Idle,
        &[Property {
            name: "leaves a",
            check: Check::Eventually(|_, s| u64::from(*s == 'a')),
        }],
    );
    let Verdict::Violated(trace) = &verdicts[0] else {
        panic!("nothing forces the step")
    };
    assert_eq!((trace.steps.len(), trace.loop_start), (0, Some(0)));
}
