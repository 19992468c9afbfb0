//! The delegation ledger model: the real `baton::ledger::core` ([`state::L`],
//! mutated in place on a copy per successor) inside a system of actors
//! ([`system`]), checked against SPEC §2's D1–D6 ([`props`], [`coverage`]),
//! with broken variants of its `step` to test the checker itself
//! ([`variants`]).
//!
//! States are stored exactly. A state holds its ledger as an index into the
//! model's table of every distinct ledger reached (interned by
//! whole-value equality, never by hash alone), so equal indices mean equal
//! ledgers; the rest of the state packs losslessly into 42 bits. Because
//! the core is pure, each `(ledger, event, children being ended)` is
//! stepped once — on a copy of the ledger, mutated in place — and the
//! answer memoised; the memo is exact (keyed by everything the step reads)
//! and only saves repeated calls.

pub mod child;
pub mod coverage;
pub mod proof;
pub mod props;
pub mod report;
pub mod seen;
pub mod show;
pub mod state;
pub mod system;
pub mod variants;

use std::cell::{Ref, RefCell};
use std::rc::Rc;

use rustc_hash::FxHashMap;

use crate::explore::{Model, Successor};
use child::{World, within};
pub use seen::{Seen, SeenEntry};
use state::{
    Act, Event, Held, L, LStep, LSys, MAX_CHILDREN, MAX_IDS, MAX_SCOPES, MAX_TICKS, MAX_WAITERS,
    Outcome, Setup,
};

/// A step function with the real ledger `step`'s signature; the model
/// explores the real one or a deliberately broken wrapper around it.
pub type StepFn = fn(&mut L, state::Event) -> state::Outcome;

/// A named configuration of the ledger system.
#[derive(Clone, Copy, Debug)]
pub struct Named {
    /// How the report calls it.
    pub name: &'static str,
    /// The actors.
    pub setup: Setup,
}

/// Every actor, with `ids` delegation ids, `children` children each,
/// `scopes` scopes and `ticks` clock ticks (overdue after one tick), and
/// two waiters.
pub const fn full(ids: u8, children: u8, scopes: u8, ticks: u8) -> Setup {
    Setup {
        ids,
        children,
        scopes,
        ticks,
        bound: 1,
        waiters: 2,
        bad_input: true,
    }
}

/// The configuration CI runs: two delegations with up to two children
/// each (so one can be replaced), two scopes (a change, and the stale
/// older scope's drop), one clock tick (so a delegation can be overdue or
/// not yet), two waiters (so that two arrivals can wake two pending waits)
/// and bad input.
pub const CI: Named = Named {
    name: "ci: 2 delegations × 2 children, 2 scopes, 1 tick, 2 waiters",
    setup: full(2, 2, 2, 1),
};

/// The configurations the report checks.
pub const REPORT: [Named; 1] = [CI];

/// The ledger system running a step function.
pub struct LedgerModel {
    /// The actors.
    pub setup: Setup,
    /// The ledger step the actors drive.
    pub step: StepFn,
    ledgers: RefCell<Ledgers>,
    effects: RefCell<FxHashMap<EffectKey, Effect>>,
}

/// Every distinct ledger reached, by index; ledger 0 is the empty one.
struct Ledgers {
    ids: u8,
    bound: u8,
    index: FxHashMap<L, u32>,
    all: Vec<L>,
    /// What each ledger's public queries answer, read once when it is
    /// first reached: the properties read these.
    seen: Vec<Seen>,
}

impl Ledgers {
    fn intern(&mut self, ledger: L) -> u32 {
        if let Some(&i) = self.index.get(&ledger) {
            return i;
        }
        let i = u32::try_from(self.all.len()).expect("fewer than 2^32 ledgers");
        self.seen.push(Seen::of(&ledger, self.ids, self.bound));
        self.index.insert(ledger.clone(), i);
        self.all.push(ledger);
        i
    }
}

/// Everything one step reads: the ledger, the act, the clock, the children
/// being ended, and the act's child (for `adopt`).
type EffectKey = (u32, Act, u8, u8, u8);

/// What one step did: the event fed, the outcome, the ledger after it, and
/// the children whose ending began (by the adapter's follow-up).
#[derive(Clone, Debug)]
pub struct Effect {
    /// The event fed.
    pub event: Rc<Event>,
    /// What `step` returned.
    pub outcome: Rc<Outcome>,
    /// The ledger after it.
    pub ledger: u32,
    /// Children on which `begin_ending` was called, one bit each.
    pub began: u8,
}

impl LedgerModel {
    /// The system around baton's real ledger `step`.
    pub fn new(setup: Setup) -> Self {
        Self::with_step(setup, baton::ledger::core::step)
    }

    /// The system around `step` (a broken variant, for self-tests).
    pub fn with_step(setup: Setup, step: StepFn) -> Self {
        Self::with_initial(setup, step, L::new())
    }

    /// The system around `step`, starting from the empty ledger `initial`:
    /// [`Ledger::keeping_indexes_above`](baton::ledger::core::Ledger::keeping_indexes_above)
    /// a small number explores the ledger with its indexes kept, which
    /// [`L::new`] keeps only past 32 entries, far beyond any configuration.
    pub fn with_initial(setup: Setup, step: StepFn, initial: L) -> Self {
        assert!(
            (1..=MAX_IDS).contains(&setup.ids)
                && setup.ids * setup.children <= MAX_CHILDREN
                && (1..=MAX_SCOPES).contains(&setup.scopes)
                && setup.ticks <= MAX_TICKS
                && setup.waiters <= MAX_WAITERS,
            "1..={MAX_IDS} ids, at most {MAX_CHILDREN} children in all, \
             1..={MAX_SCOPES} scopes, at most {MAX_TICKS} ticks, \
             at most {MAX_WAITERS} waiters"
        );
        let mut ledgers = Ledgers {
            ids: setup.ids,
            bound: setup.bound,
            index: FxHashMap::default(),
            all: Vec::new(),
            seen: Vec::new(),
        };
        ledgers.intern(initial);
        Self {
            setup,
            step,
            ledgers: RefCell::new(ledgers),
            effects: RefCell::default(),
        }
    }

    /// The number of distinct ledgers reached so far.
    pub fn ledgers(&self) -> usize {
        self.ledgers.borrow().all.len()
    }

    /// State `s`'s ledger.
    pub fn ledger(&self, s: &LSys) -> Ref<'_, L> {
        Ref::map(self.ledgers.borrow(), |l| &l.all[s.ledger as usize])
    }

    /// What state `s`'s ledger's public queries answer.
    pub fn seen(&self, s: &LSys) -> Seen {
        self.ledgers.borrow().seen[s.ledger as usize]
    }

    /// Feeds `event()` (for `act`, whose child is `child`) to a copy of
    /// `s`'s ledger, then does what the adapter does with the outcome.
    pub fn effect(&self, s: &LSys, act: Act, child: u8, event: impl FnOnce() -> Event) -> Effect {
        let key = (s.ledger, act, s.now, s.world.being_ended, child);
        if let Some(effect) = self.effects.borrow().get(&key) {
            return effect.clone();
        }
        let event = event();
        let mut ledger = self.ledger(s).clone();
        let mut world = World {
            being_ended: s.world.being_ended,
            ended: 0,
        };
        let outcome = within(&mut world, || {
            let outcome = (self.step)(&mut ledger, event.clone());
            system::follow_up(&outcome);
            outcome
        });
        let effect = Effect {
            event: Rc::new(event),
            outcome: Rc::new(outcome),
            ledger: self.ledgers.borrow_mut().intern(ledger),
            began: world.ended,
        };
        self.effects.borrow_mut().insert(key, effect.clone());
        effect
    }
}

/// Appends `value` to `word` in `width` bits, checking that it fits.
fn put(word: &mut (u64, u32), value: u8, width: u32) {
    assert!(
        u32::from(value) < 1 << width,
        "{value} outgrew {width} bits"
    );
    word.0 |= u64::from(value) << word.1;
    word.1 += width;
}

fn take(word: &mut u64, width: u32) -> u8 {
    let value = (*word & ((1 << width) - 1)) as u8;
    *word >>= width;
    value
}

const HELD: [Held; 4] = [Held::Gone, Held::Outstanding, Held::Arrived, Held::Taken];

impl Model for LedgerModel {
    type State = LSys;
    type Action = LStep;
    /// The ledger's index, and the rest packed (42 bits).
    type Key = (u32, u64);

    fn pack(&self, s: &LSys) -> (u32, u64) {
        let mut w = (0u64, 0u32);
        put(&mut w, s.now, 2);
        for mask in [s.world.being_ended, s.world.ended, s.handed, s.finished] {
            put(&mut w, mask, MAX_CHILDREN.into());
        }
        put(&mut w, s.issued, 2);
        put(&mut w, s.scopes, MAX_SCOPES.into());
        put(&mut w, s.waiting, MAX_WAITERS.into());
        put(&mut w, s.given, 2);
        put(&mut w, u8::from(s.owed), 1);
        for held in s.ids {
            let i = HELD.iter().position(|h| *h == held).expect("every Held");
            put(&mut w, i as u8, 2);
        }
        (s.ledger, w.0)
    }

    fn unpack(&self, (ledger, mut w): (u32, u64)) -> LSys {
        let mut s = self.setup.initial();
        s.ledger = ledger;
        s.now = take(&mut w, 2);
        let children = u32::from(MAX_CHILDREN);
        s.world.being_ended = take(&mut w, children);
        s.world.ended = take(&mut w, children);
        s.handed = take(&mut w, children);
        s.finished = take(&mut w, children);
        s.issued = take(&mut w, 2);
        s.scopes = take(&mut w, MAX_SCOPES.into());
        s.waiting = take(&mut w, MAX_WAITERS.into());
        s.given = take(&mut w, 2);
        s.owed = take(&mut w, 1) == 1;
        for held in &mut s.ids {
            *held = HELD[take(&mut w, 2) as usize];
        }
        s
    }

    fn initial_states(&self) -> Vec<LSys> {
        vec![self.setup.initial()]
    }

    fn successors(&self, state: &LSys, out: &mut Vec<Successor<LStep, LSys>>) {
        system::successors(self, state, out);
    }
}
