//! The model's launched child: a small id whose "being ended" bit lives in
//! the world outside the ledger, as a real process's does in the OS.
//!
//! The ledger stores [`ModelChild`] values (plain ids, so the ledger stays
//! `Clone + Eq + Hash` and each successor gets its own copy). What a child
//! *is doing* is the system state's [`World`]: the model installs it around
//! every call into the core and the adapter's follow-up, where
//! [`Child::is_being_ended`] reads it and [`Child::begin_ending`] writes it,
//! and reads it back afterwards. The explorer is single-threaded, so the
//! thread-local is the one world of the one state being expanded.

use std::cell::Cell;

use baton::ledger::Child;

/// What the children are doing, one bit per child.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct World {
    /// Being ended, by the ledger's owner or by anyone else (an input the
    /// model may flip at any time).
    pub being_ended: u8,
    /// Ghost: `begin_ending` was called on it (by the adapter's follow-up:
    /// a child the ledger let go of before it arrived). D3 counts these.
    pub ended: u8,
}

thread_local! {
    static WORLD: Cell<World> = const { Cell::new(World { being_ended: 0, ended: 0 }) };
}

/// Runs `f` with `world` installed, and keeps what `f` did to it.
pub fn within<R>(world: &mut World, f: impl FnOnce() -> R) -> R {
    WORLD.with(|installed| {
        installed.set(*world);
        let result = f();
        *world = installed.replace(World::default());
        result
    })
}

/// A launched child, by index (`id × children + k` for delegation `id`'s
/// `k`-th child).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ModelChild(pub u8);

impl ModelChild {
    /// Its bit in the [`World`] masks.
    pub const fn bit(self) -> u8 {
        1 << self.0
    }
}

impl Child for ModelChild {
    fn begin_ending(&self) {
        WORLD.with(|world| {
            let mut w = world.get();
            w.being_ended |= self.bit();
            w.ended |= self.bit();
            world.set(w);
        });
    }

    fn is_being_ended(&self) -> bool {
        WORLD.with(|world| world.get().being_ended & self.bit() != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_reads_and_writes_only_the_world_installed_around_the_call() {
        let mut world = World {
            being_ended: ModelChild(1).bit(),
            ended: 0,
        };
        let seen = within(&mut world, || {
            let before = (
                ModelChild(0).is_being_ended(),
                ModelChild(1).is_being_ended(),
            );
            ModelChild(0).begin_ending();
            (before, ModelChild(0).is_being_ended())
        });
        assert_eq!(seen, ((false, true), true));
        assert_eq!(
            world,
            World {
                being_ended: 0b11,
                ended: 0b01
            }
        );
        assert!(!ModelChild(0).is_being_ended(), "nothing stays installed");
    }
}
