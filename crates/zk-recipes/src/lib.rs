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
//! * [`inspect`]: who holds a lock and who waits (typed participants, for
//!   any lock path); [`identity`]: the holder identity our lock nodes carry.
//! * [`guide`]: the manual (using the locks, what they promise under faults,
//!   the safe horizon, fencing, operations, ensembles, TLS and ACLs, Curator
//!   interop), with examples that run.

// Reached through `unstable::driver` (hidden; the path `zk_recipes::driver`
// works too, unstable alike).
#[doc(hidden)]
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
mod queue;
mod revoke;
mod rwlock;
mod semaphore;
mod semaphore_mutex;
pub mod stats;
mod timer;
mod transaction;
mod wait;
mod waiter;
mod worker;

pub use error::{Error, Result};
pub use holding::{Holding, LockEvent, LockStatus};
pub use lock::{ArcLockGuard, InterProcessLock, LockGuard, RawLock};
pub use multi::{MultiLock, MultiLockGuard};
pub use mutex::{InterProcessMutex, InterProcessMutexGuard};
pub use revoke::{Revoker, REVOKE_MESSAGE};
pub use rwlock::{InterProcessReadWriteLock, ReadLock, ReadLockGuard, WriteLock, WriteLockGuard};
pub use semaphore::{InterProcessSemaphoreV2, Lease};
pub use semaphore_mutex::{InterProcessSemaphoreMutex, InterProcessSemaphoreMutexGuard};
pub use transaction::GuardedTransaction;

/// Plumbing that the workspace's own tests, tools and benchmark use: **not a
/// stable API**, hidden from the docs, and free to change in any release.
///
/// * [`driver`](crate::unstable::driver): the pure lock decision ("do I hold
///   it; else which node do I watch") for every lock kind, the specification
///   of Curator's lock layout as code (tests use it to check queue order);
/// * [`Sealed`](crate::unstable::Sealed): the supertrait that seals
///   [`InterProcessLock`] (a test that injects faults into a multi-lock
///   implements it on a wrapper of a real lock);
/// * [`OWN_WATCH_DELAY`](crate::unstable::OWN_WATCH_DELAY) and
///   [`bookkeeping_cost`](crate::unstable::bookkeeping_cost): figures the
///   tests and the benchmark measure against.
#[doc(hidden)]
pub mod unstable {
    pub use crate::driver;
    pub use crate::holding::OWN_WATCH_DELAY;
    pub use crate::stats::bookkeeping_cost;

    /// Seals [`crate::InterProcessLock`]: only types that opt into this
    /// unstable module can implement it.
    pub trait Sealed {}

    impl Sealed for crate::InterProcessMutex {}
    impl Sealed for crate::ReadLock {}
    impl Sealed for crate::WriteLock {}
    impl Sealed for crate::InterProcessSemaphoreV2 {}
    impl Sealed for crate::InterProcessSemaphoreMutex {}
    impl Sealed for crate::MultiLock {}
    impl<L: crate::InterProcessLock + ?Sized> Sealed for std::sync::Arc<L> {}
}
