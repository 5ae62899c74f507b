//! zk-recipes' integration tests, one binary with one module per suite, on the
//! backend `ZK_TEST_SERVER` selects (embedded by default) unless a suite says
//! otherwise. Run one suite with a module filter, e.g.
//! `cargo test -p zk-recipes --test it mutex::` or `... lock_contract::`.
//!
//! The helpers are in [`support`] (the workspace's shared test support,
//! `zk_test_support`, and the helpers about locks). Tests that need a process of their own (a
//! contender stopped with signals, a reader in another process) re-run this
//! binary with an exact test filter. The lock metrics through the `metrics`
//! facade are a binary of their own (`tests/metrics.rs`, its recorder is
//! process-wide): `cargo test -p zk-recipes --features metrics --test metrics`.

mod support;

// The lock contract, written once and instantiated for every lock kind.
mod lock_contract;

// Each kind's own scenarios.
mod multilock;
mod mutex;
mod rwlock;
mod semaphore;

// Leader election (the latch, the selector, the observer).
mod leader;

// Watching: CuratorCache and PersistentWatcher.
mod cache;
mod cache_truth;

// Shared state: SharedValue/SharedCount and the atomic counters (at most once).
mod counters;
// Barriers and the simple queue.
mod barriers;
mod simple_queue;

// Sharing work out: the set partitioner.
mod partition;

// Across kinds: what a holder is told, figures, inspection, clients.
mod bad_input;
mod client_cost;
mod clients;
mod discovery;
mod inspect_services;
mod namespace;
mod nodes;
mod operations;
mod stats;
mod uncertainty;

// Locks under ACLs, over TLS, with x509 identities (the clients' halves of these
// suites are zk-framework's).
mod acl;
mod tls;
mod x509;

// A real 3-node Apache ZooKeeper ensemble.
mod ensemble;
// A lost reply proven on a follower that lags its leader (3-node Apache ensemble).
mod lagging;
