//! The runtime kit every recipe is built on, written once:
//!
//! * [`Worker`]: a recipe's background thread (named, cancelled by a
//!   channel, stopped within [`STOP_BOUND`]; a refused spawn is
//!   [`crate::Error::SpawnFailed`]), and [`Backoff`], the pause between a
//!   background thread's failed attempts (50 ms doubling to 2 s).
//! * [`Lifecycle`]: not started, started, closed; a recipe's `start`, its
//!   use and its `close` checked in one place, the errors
//!   [`crate::Error::AlreadyStarted`], [`crate::Error::NotStarted`] and
//!   [`crate::Error::Closed`] naming the recipe and its path.
//! * [`Subscribers`]: the receivers of a recipe's `events()`, told under
//!   the lock that orders the events (so no receiver hears an older event
//!   after a newer one).
//!
//! Delayed and background work that only signals runs on the client's one
//! executor (zk-framework's recipe API, [`zk_framework::recipe::Recipe::schedule`]).

mod lifecycle;
pub(crate) mod marked;
pub(crate) mod queue;
mod subscribers;
pub(crate) mod wait;
mod worker;

pub(crate) use lifecycle::{Lifecycle, Stage};
pub(crate) use subscribers::Subscribers;
pub(crate) use worker::{Backoff, Worker, STOP_BOUND};
