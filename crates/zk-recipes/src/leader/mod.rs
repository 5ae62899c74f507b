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

pub(crate) mod builder;
mod candidate;
pub(crate) mod contender;
pub(crate) mod election;
pub(crate) mod latch;
pub(crate) mod observer;
mod participant;
pub(crate) mod selector;

// The earlier paths of this family's items, as deprecated aliases of the
// crate root's (one path per item).

/// The earlier path of [`crate::Participant`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Participant`")]
pub type Participant = crate::locks::participants::Participant;
/// The earlier path of [`crate::Contender`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Contender`")]
pub type Contender<K> = crate::leader::contender::Contender<K>;
/// The earlier path of [`crate::LeaderEvent`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::LeaderEvent`")]
pub type LeaderEvent = crate::leader::election::LeaderEvent;
/// The earlier path of [`crate::LeaderStatus`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::LeaderStatus`")]
pub type LeaderStatus = crate::leader::election::LeaderStatus;
/// The earlier path of [`crate::NotLeaderReason`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::NotLeaderReason`"
)]
pub type NotLeaderReason = crate::leader::election::NotLeaderReason;
/// The earlier path of [`crate::SuspendPolicy`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::SuspendPolicy`")]
pub type SuspendPolicy = crate::leader::election::SuspendPolicy;
/// The earlier path of [`crate::CloseMode`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::CloseMode`")]
pub type CloseMode = crate::leader::latch::CloseMode;
/// The earlier path of [`crate::LeaderLatch`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::LeaderLatch`")]
pub type LeaderLatch = crate::leader::latch::LeaderLatch;
/// The earlier path of [`crate::LeaderLatchBuilder`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::LeaderLatchBuilder`"
)]
pub type LeaderLatchBuilder = crate::leader::latch::LeaderLatchBuilder;
/// The earlier path of [`crate::ElectionKind`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::ElectionKind`")]
pub type ElectionKind = crate::leader::observer::ElectionKind;
/// The earlier path of [`crate::LeaderObserver`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::LeaderObserver`"
)]
pub type LeaderObserver = crate::leader::observer::LeaderObserver;
/// The earlier path of [`crate::LeaderSelector`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::LeaderSelector`"
)]
pub type LeaderSelector = crate::leader::selector::LeaderSelector;
/// The earlier path of [`crate::LeaderSelectorBuilder`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::LeaderSelectorBuilder`"
)]
pub type LeaderSelectorBuilder = crate::leader::selector::LeaderSelectorBuilder;
/// The earlier path of [`crate::Leadership`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Leadership`")]
pub type Leadership = crate::leader::selector::Leadership;
