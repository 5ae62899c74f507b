//! Curator's recipes in Rust, on top of `zk-framework`: locks, leader
//! election, caches and watches, nodes, shared values and counters,
//! barriers and a queue, on Curator's node layouts (a Java service using
//! Curator and a Rust service using this crate see one lock, one election,
//! one counter), on one core and one truth model.
//!
//! Every public item is at this crate's root, one path each, grouped here
//! by Curator's packages:
//!
//! * **locks**: [`InterProcessMutex`] (reentrant per thread),
//!   [`InterProcessSemaphoreV2`] (N leases) and
//!   [`InterProcessSemaphoreMutex`], [`InterProcessReadWriteLock`] (its
//!   [`ReadLock`] and [`WriteLock`] halves, with
//!   [`WriteLockGuard::downgrade`]), [`MultiLock`] (all or none, in one
//!   canonical order), and [`Revoker`] (Curator's cooperative revocation).
//!   They are one generic [`Lock<K>`](Lock) in `lock_api`'s shape (each
//!   Curator name is an alias, such as `InterProcessMutex =
//!   Lock<MutexKind>`), with one guard ([`LockGuard`], [`ArcLockGuard`])
//!   that derefs to its [`Holding`], whose [`LockStatus`] is true from the
//!   grant on: a loss signal, `check()`, a fencing token, a safe horizon
//!   and guarded writes ([`GuardedTransaction`]).
//! * **leader**: [`LeaderLatch`], [`LeaderSelector`] (one generic
//!   [`Contender`], built by one [`ContenderBuilder`]) and
//!   [`LeaderObserver`], wire-compatible with Curator's, with a three-valued
//!   [`LeaderStatus`] and a fencing term.
//! * **cache** and **watch**: [`CuratorCache`] (a subtree kept by one
//!   persistent watch, exact events in zxid order and a [`Freshness`]),
//!   [`NodeCache`] and [`PathChildrenCache`] on it, and
//!   [`PersistentWatcher`], a persistent watch kept through reconnects and
//!   new sessions.
//! * **nodes**: [`PersistentNode`], [`PersistentTtlNode`] and
//!   [`GroupMember`], each with an honest [`Registration`].
//! * **shared** and **atomic**: [`SharedValue`] / [`SharedCount`] and
//!   [`DistributedAtomicLong`] / [`DistributedAtomicInteger`] /
//!   [`DistributedAtomicValue`], whose updates are applied at most once: a
//!   write whose reply was lost is proven by the write's own marker (read
//!   after a `sync`, so no lagging server answers), by reading the node
//!   back when the session changed, or reported [`Outcome::Unknown`]; never
//!   sent again blindly.
//! * **barriers** and **queue**: [`DistributedBarrier`] and
//!   [`DistributedDoubleBarrier`] with timeouts as values;
//!   [`SimpleDistributedQueue`], where a lost reply neither loses nor
//!   duplicates an item.
//! * **discovery**: [`ServiceDiscovery`] (Curator's `curator-x-discovery`
//!   layout and JSON, byte for byte: Java and Rust services find each
//!   other), its [`ServiceInstance`]s (built by [`ServiceInstanceBuilder`],
//!   with a [`ServiceType`], a [`Payload`] that keeps Jackson's class tag,
//!   a [`UriSpec`] and an [`Endpoint`]), each registration a kept node with
//!   an honest [`Registration`]; [`ServiceCache`] (a service's instances
//!   with their [`Freshness`]) and [`ServiceProvider`] (Curator's
//!   strategies, down instances and filters, no answer from a stale list);
//!   see the [`discovery`] family page for Curator's traps and what we do.
//! * **partition**: [`SetPartitioner`] (kazoo's, on these locks): members
//!   of a party split a set of items, each item held by one member's lock,
//!   with an honest [`PartitionState`] (a blip is not a reallocation, a
//!   stuck lock says who holds it, a lost lock is told at once).
//! * **inspection**: who holds a lock and who waits ([`inspect_lock`],
//!   [`lock_participants`], typed [`Participant`]s for any lock path), the
//!   [`HolderIdentity`] our lock nodes carry, a group's members, a counter's
//!   value, a service's instances with their nodes' owners
//!   ([`inspect_service`], [`service_names`]), a partition's members and
//!   who holds each item ([`inspect_partition`]), and the locks' figures
//!   ([`lock_stats`]).
//! * [`guide`]: the manual (using the locks, what they promise under faults,
//!   the safe horizon, fencing, operations, ensembles, TLS and ACLs, Curator
//!   interop, leader election, watching, shared state), with examples that
//!   run.
//!
//! The module paths of the earlier layout (`leader::`, `cache::`,
//! `nodes::`, `watch::`, `atomic::`, `inspect::`, `driver::`, `identity::`,
//! `stats::`, `shared_value::`) still resolve, as deprecated aliases of the
//! root's items.
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

// The house, by Curator's packages: one room per recipe family around one
// core. Each room imports only the layers below it (declared, and checked
// in CI, by scripts/check-house.py): inspect; nodes; leader, cache, atomic,
// queue, barriers; locks, shared, watch; core; error; freshness. Every room
// is private; the public API is the re-exports below, one path per item.
// The rooms that had public paths before (`cache`, `leader`, ...) keep them
// as modules of deprecated aliases (and their family's notes).
pub mod atomic;
mod barriers;
pub mod cache;
mod core;
pub mod discovery;
mod error;
mod freshness;
pub mod inspect;
pub mod leader;
mod locks;
pub mod nodes;
mod partition;
mod paths;
mod queue;
mod shared;
pub mod watch;

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
    #[doc = include_str!("../guide/services.md")]
    pub mod services {}
}

pub use error::{Error, Result};
pub use freshness::Freshness;

// Locks.
pub use locks::driver::{
    downgrade_sequence, lease_granted, rw_sort_key, Decision, Deletion, Driver, NodeMissing, LATCH_LOCK_NAME,
    LEASE_NAME, MUTEX_LOCK_NAME, READ_LOCK_NAME, WRITE_LOCK_NAME,
};
pub use locks::holding::{Holding, LockEvent, LockStatus, OWN_WATCH_DELAY};
pub use locks::identity::{process_name, set_process_name, HolderIdentity, ProcessIdentity, IDENTITY_VERSION};
pub use locks::lock::{ArcLockGuard, InterProcessLock, Lock, LockGuard, LockKind, RawLock};
pub use locks::multi::{MultiKind, MultiLock, MultiLockGuard};
pub use locks::mutex::{InterProcessMutex, InterProcessMutexGuard, MutexKind};
pub use locks::participants::{LockLayout, Participant, ParticipantKind};
pub use locks::revoke::{Revoker, REVOKE_MESSAGE};
pub use locks::rwlock::{
    InterProcessReadWriteLock, ReadKind, ReadLock, ReadLockGuard, WriteKind, WriteLock, WriteLockGuard,
};
pub use locks::semaphore::{InterProcessSemaphoreV2, Lease};
pub use locks::semaphore_mutex::{InterProcessSemaphoreMutex, InterProcessSemaphoreMutexGuard, SemaphoreMutexKind};
pub use locks::stats::{
    bookkeeping_cost as lock_stats_bookkeeping_cost, forget as forget_lock_stats, is_enabled as lock_stats_enabled,
    set_enabled as set_lock_stats_enabled, snapshot as lock_stats, snapshot_of as lock_stats_of, HistogramSnapshot,
    LockStats, LossCause, BUCKETS as LOCK_STATS_BUCKETS, KEPT_PATHS as LOCK_STATS_KEPT_PATHS,
};
pub use locks::transaction::GuardedTransaction;

// Leader election.
pub use leader::builder::ContenderBuilder;
pub use leader::contender::Contender;
pub use leader::election::{LeaderEvent, LeaderStatus, NotLeaderReason, SuspendPolicy};
pub use leader::latch::{CloseMode, LeaderLatch, LeaderLatchBuilder};
pub use leader::observer::{ElectionKind, LeaderObserver};
pub use leader::selector::{LeaderSelector, LeaderSelectorBuilder, Leadership};

// Watching.
pub use cache::bridges::{NodeCache, PathChildrenCache, PathChildrenCacheEvent};
pub use cache::builder::CuratorCacheBuilder;
pub use cache::curator::{CacheListener, CuratorCache, DEFAULT_MAX_NODES as CACHE_DEFAULT_MAX_NODES};
pub use cache::state::CacheStats;
pub use cache::view::{CacheEvent, ChildData};
pub use watch::event::WatcherEvent;
pub use watch::watcher::PersistentWatcher;

// Registration and shared state.
pub use atomic::number::{DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicNumber};
pub use atomic::outcome::{AtomicStats, AtomicValue, Outcome, PromotedToLock};
pub use atomic::value::DistributedAtomicValue;
pub use barriers::{DistributedBarrier, DistributedDoubleBarrier, READY_NODE};
pub use nodes::builder::PersistentNodeBuilder;
pub use nodes::group::GroupMember;
pub use nodes::node::PersistentNode;
pub use nodes::registration::MemberEvent;
pub use nodes::registration::{AbsentReason, Registration, UncertainReason};
pub use nodes::ttl::PersistentTtlNode;
pub use queue::{SimpleDistributedQueue, ITEM_PREFIX};
pub use shared::count::SharedCount;
pub use shared::value::{Proof, SharedValue, TrySet, ValueEvent, VersionedValue};

// Service discovery.
pub use discovery::cache::{ServiceCache, ServiceCacheEvent};
pub use discovery::instance::InstanceRead;
pub use discovery::instance::{JsonMode, ServiceInstance, ServiceInstanceBuilder, ServiceType};
pub use discovery::payload::{Payload, ZookeeperInstance, JAVA_LINKED_HASH_MAP, JAVA_LONG};
pub use discovery::provider::{DownInstancePolicy, ProviderStrategy, ServiceProvider, ServiceProviderBuilder};
pub use discovery::service::{ServiceDiscovery, ServiceDiscoveryBuilder};
pub use discovery::uri::{Endpoint, UriPart, UriSpec};
// Sharing work out.
pub use partition::builder::SetPartitionerBuilder;
pub use partition::function::{default_partition, PartitionFn};
pub use partition::partitioner::SetPartitioner;
pub use partition::state::{Allocation, FailureReason, LockHolder, PartitionEvent, PartitionState, ReleaseReason};

// Inspection.
pub use inspect::services::{
    inspect_partition, inspect_service, service_names, InstanceNode, ItemOwner, PartitionReport, ServiceReport,
};
pub use inspect::tool::{
    counter as read_counter, detect_layout as detect_lock_layout, group_members, inspect as inspect_lock,
    inspect_as as inspect_lock_as, CounterReading, LockReport, Member,
};
pub use locks::participants::participants as lock_participants;

// The paths of the earlier layout, as deprecated aliases.
#[allow(deprecated)]
pub use paths::{driver, identity, shared_value, stats};
