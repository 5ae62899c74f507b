//! Leader election on the lock core, wire-compatible with Curator:
//! [`LeaderLatch`] (a participant that leads while its node is first),
//! [`LeaderSelector`] (a leadership that is a piece of work, run as a
//! closure), and [`LeaderObserver`] (who leads, watched without joining).
//!
//! Every participant tells the truth about its leadership with the locks'
//! machinery: a three-valued [`LeaderStatus`], a `check()` that is `Ok` only
//! while certainly leader, every change as a [`LeaderEvent`] in order, a
//! fencing term, and writes guarded by the leadership. See
//! [`crate::guide::leader`] for the state model, the two
//! [`SuspendPolicy`]s, fencing, the observer and Curator interop.

mod candidate;
mod contender;
mod election;
mod latch;
mod observer;
mod participant;
mod selector;

/// An election's participants are [`crate::inspect::Participant`]s (the one
/// participant type): `holds` is whether it leads, `fencing_token` its term.
pub use crate::inspect::Participant;
pub use contender::Contender;
pub use election::{LeaderEvent, LeaderStatus, NotLeaderReason, SuspendPolicy};
pub use latch::{CloseMode, LeaderLatch, LeaderLatchBuilder};
pub use observer::{ElectionKind, LeaderObserver};
pub use selector::{LeaderSelector, LeaderSelectorBuilder, Leadership};
