//! Curator-compatible lock recipes on top of `zk-framework`.
//!
//! * [`InterProcessMutex`]: reentrant per thread, Curator's node layout, with
//!   guards, timeouts as values, a loss signal and a fencing token.
//! * [`InterProcessSemaphoreV2`] (N leases) and [`InterProcessSemaphoreMutex`].
//! * [`InterProcessReadWriteLock`]: its [`ReadLock`] and [`WriteLock`] halves,
//!   with [`WriteLockGuard::downgrade`].
//! * [`MultiLock`]: several locks, all or none, in one canonical order.
//! * [`LockGuard`] and [`ArcLockGuard`]: the one guard of every kind, around a
//!   [`Holding`] whose [`LockStatus`] is true from the grant on; the raw layer is
//!   [`InterProcessLock`].
//! * [`Revoker`]: Curator's cooperative revocation.
//! * [`leader`]: leader election on the same core ([`leader::LeaderLatch`],
//!   [`leader::LeaderSelector`], [`leader::LeaderObserver`]), wire-compatible
//!   with Curator's, with a three-valued status and a fencing term.
//! * [`cache`]: [`cache::CuratorCache`], a subtree kept by one persistent
//!   watch, with exact events in zxid order and a [`cache::Freshness`];
//!   [`watch::PersistentWatcher`], a persistent watch kept through
//!   reconnects and new sessions.
//! * [`shared_value`] and [`atomic`]: Curator's [`SharedValue`] /
//!   [`SharedCount`] and [`DistributedAtomicLong`] /
//!   [`DistributedAtomicInteger`] / [`DistributedAtomicValue`], on Curator's
//!   node layout, whose updates are applied at most once: a write whose
//!   reply was lost is proven by the write's own marker (read after a
//!   `sync`, so no lagging server answers), by reading the node back when
//!   the session changed, or reported [`Outcome::Unknown`]; never sent
//!   again blindly.
//! * [`DistributedBarrier`] and [`DistributedDoubleBarrier`]: Curator's
//!   barriers on their layouts, with timeouts as values;
//!   [`SimpleDistributedQueue`], Curator's simple queue, where a lost reply
//!   neither loses nor duplicates an item.
//! * [`inspect`]: who holds a lock and who waits (typed participants, for
//!   any lock path); [`identity`]: the holder identity our lock nodes carry.
//! * [`guide`]: the manual (using the locks, what they promise under faults,
//!   the safe horizon, fencing, operations, ensembles, TLS and ACLs, Curator
//!   interop), with examples that run.
//!
//! # One convention for every recipe
//!
//! * **Events**: a recipe's changes come on `events()`, an unbounded channel
//!   of what happens from the call on (a lock's loss signals, a latch's
//!   leadership, a cache's node events, a value's changes, a node's
//!   registration), in the order they happened: each is told under the lock
//!   that orders it, so no receiver hears an older event after a newer one.
//!   The channel ends at the recipe's close (a lock's at its release).
//!   Dropping the receiver unsubscribes.
//! * **Life**: a recipe with a background life (a cache, a watcher, a
//!   persistent node, a group member, a shared value, a latch, a selector,
//!   an observer) is made, then `start()`ed, then `close()`d, once each;
//!   `close()` is idempotent and returns within its bound (it waits at most
//!   2 s for the recipe's one thread). A misuse names the recipe and its
//!   path: [`Error::AlreadyStarted`], [`Error::NotStarted`],
//!   [`Error::Closed`]; a thread the system refused is
//!   [`Error::SpawnFailed`].
//! * **Sharing**: such a recipe is `Clone`, `Send` and `Sync`: clones share
//!   the one instance (one thread, one node, one set of subscribers), so
//!   hand a clone to another thread, no `Arc` needed; `close()` on any clone
//!   closes it for all, and dropping the last clone closes it. A lock is
//!   `Send + Sync` and shared by reference or in an `Arc`; its guards are
//!   not `Send` where the lock is reentrant per thread.
//! * **Time**: a timeout is a value, not an error (`Ok(None)`, `Ok(false)`);
//!   `*_for(Duration)` is `*_until(Instant)`.
//! * **Truth**: a write whose reply was lost is proven, never sent again
//!   blindly and never guessed (see the [`guide::truth`] chapter).

pub mod atomic;
mod barrier;
pub mod cache;
mod core;
pub mod driver;
/// The manual: how to use the locks, what they promise under faults, and how
/// to run them. Every example runs as a doctest on the embedded server
/// (`zk-testing`).
pub mod guide {
    #[doc = include_str!("../guide/using.md")]
    pub mod using {}
    #[doc = include_str!("../guide/truth.md")]
    pub mod truth {}
    #[doc = include_str!("../guide/fencing.md")]
    pub mod fencing {}
    #[doc = include_str!("../guide/operating.md")]
    pub mod operating {}
    #[doc = include_str!("../guide/ensemble.md")]
    pub mod ensemble {}
    #[doc = include_str!("../guide/security.md")]
    pub mod security {}
    #[doc = include_str!("../guide/curator.md")]
    pub mod curator {}
    #[doc = include_str!("../guide/leader.md")]
    pub mod leader {}
    #[doc = include_str!("../guide/watching.md")]
    pub mod watching {}
    #[doc = include_str!("../guide/shared-state.md")]
    pub mod shared_state {}
}
mod error;
mod holding;
pub mod identity;
pub mod inspect;
mod internals;
pub mod leader;
mod lock;
mod multi;
mod mutex;
pub mod nodes;
mod once;
mod queue;
mod revoke;
mod rwlock;
mod semaphore;
mod semaphore_mutex;
pub mod shared_value;
mod simple_queue;
pub mod stats;
mod transaction;
mod wait;
mod waiter;
pub mod watch;

pub use atomic::{
    AtomicStats, AtomicValue, DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicValue, Outcome,
    PromotedToLock,
};
pub use barrier::{DistributedBarrier, DistributedDoubleBarrier, READY_NODE};
pub use error::{Error, Result};
pub use holding::{Holding, LockEvent, LockStatus, OWN_WATCH_DELAY};
pub use lock::{ArcLockGuard, InterProcessLock, LockGuard, RawLock};
pub use multi::{MultiLock, MultiLockGuard};
pub use mutex::{InterProcessMutex, InterProcessMutexGuard};
pub use revoke::{Revoker, REVOKE_MESSAGE};
pub use rwlock::{InterProcessReadWriteLock, ReadLock, ReadLockGuard, WriteLock, WriteLockGuard};
pub use semaphore::{InterProcessSemaphoreV2, Lease};
pub use semaphore_mutex::{InterProcessSemaphoreMutex, InterProcessSemaphoreMutexGuard};
pub use shared_value::{Proof, SharedCount, SharedValue, TrySet, ValueEvent, VersionedValue};
pub use simple_queue::{SimpleDistributedQueue, ITEM_PREFIX};
pub use transaction::GuardedTransaction;

/// The seal of [`InterProcessLock`]: only the locks of this crate implement
/// it (a `Holding` can only be made by them).
mod sealed {
    pub trait Sealed {}

    impl Sealed for crate::InterProcessMutex {}
    impl Sealed for crate::ReadLock {}
    impl Sealed for crate::WriteLock {}
    impl Sealed for crate::InterProcessSemaphoreV2 {}
    impl Sealed for crate::InterProcessSemaphoreMutex {}
    impl Sealed for crate::MultiLock {}
    impl<L: crate::InterProcessLock + ?Sized> Sealed for std::sync::Arc<L> {}
    #[cfg(test)]
    impl Sealed for crate::multi::tests::FaultyLock {}
}
