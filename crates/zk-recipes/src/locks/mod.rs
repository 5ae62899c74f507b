//! The lock family: the raw lock and its one guard ([`lock`]), the algorithm
//! written once ([`internals`]) with its pure rules ([`driver`]), a
//! holding's truth ([`holding`]), the waiter's watch ([`waiter`]), guarded
//! transactions, the figures ([`stats`]), the identity lock nodes carry
//! ([`identity`]), the participants a lock path shows ([`participants`]),
//! and the kinds: [`mutex`], [`semaphore`], [`semaphore_mutex`],
//! [`rwlock`], [`multi`], with Curator's revocation ([`revoke`]).

pub(crate) mod driver;
pub(crate) mod holding;
pub(crate) mod identity;
pub(crate) mod internals;
pub(crate) mod lock;
pub(crate) mod multi;
pub(crate) mod mutex;
pub(crate) mod participants;
pub(crate) mod revoke;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
pub(crate) mod semaphore_mutex;
pub(crate) mod stats;
pub(crate) mod transaction;
pub(crate) mod waiter;
