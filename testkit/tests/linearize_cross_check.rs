//! The kit's linearizability search (`baton_testkit::linearize`) against
//! stateright's `LinearizabilityTester`, a checker written by others, on
//! random histories of the real ledger core: both accept, or both reject
//! (issue 50). Each history is a real sequential run of
//! `baton::ledger::core::step`, its operations stretched into overlapping
//! intervals around their real order (so it is linearizable), and in half
//! of them one outcome replaced by what the same event returns in another
//! state (so it may not be). Both checkers judge against the same step;
//! what is compared is the search.
#![cfg(not(loom))]

use std::time::Duration;

use baton::ledger::core::{Child, Event, Ledger, step};
use baton_testkit::linearize::{Call, LedgerOp, LedgerSpec, linearize};
use proptest::prelude::*;
use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Kid;

impl Child for Kid {
    fn begin_ending(&self) {}
    fn is_being_ended(&self) -> bool {
        false
    }
}

type Op = LedgerOp<u8, Kid, Duration>;

/// The ledger as stateright's reference object: an operation (with the
/// outcome it was observed to return) is valid where the real step
/// returns that outcome.
#[derive(Clone)]
struct Reference(Ledger<u8, Kid>);

impl SequentialSpec for Reference {
    type Op = Op;
    type Ret = ();

    fn invoke(&mut self, op: &Op) {
        let _ = step(&mut self.0, op.event.clone());
    }

    fn is_valid_step(&mut self, op: &Op, _: &()) -> bool {
        step(&mut self.0, op.event.clone()) == op.outcome
    }
}

fn event() -> impl Strategy<Value = Event<u8, Kid, Duration>> {
    let id = prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from);
    prop_oneof![
        Just(Event::ScopeTask("task".into())),
        (id.clone(), 0u8..3).prop_map(|(id, data)| Event::Register {
            id,
            task: "task".into(),
            data,
            started: Duration::ZERO,
        }),
        id.clone().prop_map(Event::Arrive),
        id.prop_map(Event::Discard),
        Just(Event::TakeArrived),
        Just(Event::TakeAll),
    ]
}

/// stateright's verdict: each call dealt to the first thread free before
/// it was invoked, the invocations and returns fed in time order.
fn stateright_accepts(calls: &[Call<Op>]) -> bool {
    let mut tester = LinearizabilityTester::<usize, Reference>::new(Reference(Ledger::new()));
    let mut free_at: Vec<u64> = Vec::new();
    let mut events: Vec<(u64, usize, Option<usize>)> = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let thread = match free_at.iter().position(|free| *free < call.invoked) {
            Some(thread) => thread,
            None => {
                free_at.push(0);
                free_at.len() - 1
            }
        };
        free_at[thread] = call.returned;
        events.push((call.invoked, thread, Some(i)));
        events.push((call.returned, thread, None));
    }
    events.sort_unstable_by_key(|(at, ..)| *at);
    for (_, thread, invoked) in events {
        let fed = match invoked {
            Some(i) => tester.on_invoke(thread, calls[i].op.clone()).is_ok(),
            None => tester.on_return(thread, ()).is_ok(),
        };
        assert!(fed, "a well-formed history");
    }
    tester.is_consistent()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn the_kits_search_and_staterights_agree_on_every_history(
        events in prop::collection::vec(event(), 1..9),
        stretch in prop::collection::vec((0u64..250, 1u64..250), 9),
        slip in prop::option::of((0usize..9, 0usize..9)),
    ) {
        // A real sequential run, each step at 10 000·i, its call from up
        // to 25 000 before to 25 000 after, so overlapping up to two
        // neighbours each side (every time distinct: `i` in the last
        // digits, invocations and returns apart modulo 3).
        let mut ledger = Ledger::new();
        let mut outcomes: Vec<_> = events.iter().map(|e| step(&mut ledger, e.clone())).collect();
        // The slip: one outcome as the same event returns after another
        // prefix of the run.
        if let Some((at, prefix)) = slip {
            let at = at % events.len();
            let mut other = Ledger::new();
            for e in events.iter().take(prefix % events.len()) {
                let _ = step(&mut other, e.clone());
            }
            outcomes[at] = step(&mut other, events[at].clone());
        }
        let calls: Vec<Call<Op>> = events
            .into_iter()
            .zip(outcomes)
            .zip(&stretch)
            .enumerate()
            .map(|(i, ((event, outcome), (before, after)))| {
                let (i, point) = (i as u64, 10_000 * (i as u64 + 3));
                Call {
                    invoked: 3 * (100 * (point - 100 * before) + i) + 1,
                    returned: 3 * (100 * (point + 100 * after) + i) + 2,
                    op: LedgerOp { event, outcome },
                }
            })
            .collect();
        let kit = linearize(&LedgerSpec::new(), Ledger::new(), &calls).is_some();
        prop_assert_eq!(kit, stateright_accepts(&calls), "{:#?}", calls);
        if slip.is_none() {
            prop_assert!(kit, "a real run is linearizable");
        }
    }
}
