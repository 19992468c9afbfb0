//! The visited set is exact only if packing loses nothing, and symmetry
//! reduction is sound only if the representative of a state is the
//! representative of every copy of it with the requesters renamed.

use std::collections::HashSet;

use baton_model::explore::Model;
use baton_model::gate::pack::{pack, unpack};
use baton_model::gate::symmetry::{canonical, permute};
use baton_model::gate::system::Sys;
use baton_model::gate::{GateModel, full};

/// Every state reachable with three requesters, one reservation each.
fn reachable() -> HashSet<Sys> {
    let setup = full(3, 1);
    let model = GateModel::new(setup);
    let mut seen = HashSet::new();
    let mut todo = model.initial_states();
    let mut successors = Vec::new();
    while let Some(s) = todo.pop() {
        if !seen.insert(s) {
            continue;
        }
        successors.clear();
        model.successors(&s, &mut successors);
        todo.extend(successors.iter().map(|x| x.next));
    }
    assert_eq!(seen.len(), 12_808);
    seen
}

#[test]
fn packing_a_reachable_state_loses_nothing() {
    let seen = reachable();
    let keys: HashSet<_> = seen.iter().map(pack).collect();
    assert_eq!(keys.len(), seen.len(), "no two states share a key");
    for s in &seen {
        assert_eq!(unpack(pack(s)), *s);
    }
}

#[test]
fn every_renaming_of_a_reachable_state_has_the_same_representative() {
    let seen = reachable();
    let orders: [[u8; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let mut classes = HashSet::new();
    for s in &seen {
        let rep = canonical(3, *s);
        assert_eq!(canonical(3, rep), rep, "a representative represents itself");
        for order in orders {
            let copy = permute(3, *s, &order);
            assert_eq!(canonical(3, copy), rep, "{s:?} renamed by {order:?}");
        }
        classes.insert(rep);
    }
    assert_eq!(
        classes.len(),
        2_283,
        "as many classes as the reduced exploration stores"
    );
}
