//! What a set partitioner tells: its [`PartitionState`] (kazoo's four
//! states, and what an honest caller needs besides), each change as a
//! [`PartitionEvent`] stamped with its instant.

use std::fmt;
use std::time::Instant;

/// Where a member stands. Only [`Acquired`](PartitionState::Acquired) lets
/// the caller use items; in every other state the member's share is empty
/// (see the [state machine](crate::SetPartitioner#the-state-machine)).
///
/// # Examples
///
/// ```
/// use zk_recipes::{PartitionState, ReleaseReason};
/// let s = PartitionState::Release { reason: ReleaseReason::MembershipChanged };
/// assert!(s.share().is_empty());
/// let a = PartitionState::Acquired { items: vec!["a".into(), "c".into()] };
/// assert_eq!(a.share(), ["a", "c"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PartitionState {
    /// Not yet owning its share: joining the party, waiting for the party
    /// to be quiet for the settle time, releasing, or acquiring the share's
    /// locks (kazoo's `ALLOCATING`). Nothing may be used.
    Allocating(Allocation),
    /// Every item of `items` is held by this member's lock on it, proven by
    /// the server in the current connection: the caller may work on them
    /// (kazoo's `ACQUIRED`). `items` may be empty (more members than items,
    /// an empty set).
    Acquired {
        /// This member's share, sorted.
        items: Vec<String>,
    },
    /// The member must stop using its items and release them: call
    /// [`release_set`](crate::SetPartitioner::release_set) (or build it with
    /// [`auto_release`](crate::SetPartitionerBuilder::auto_release)); the
    /// locks are still held until then (kazoo's `RELEASE`).
    Release {
        /// Why.
        reason: ReleaseReason,
    },
    /// The connection is down or silent (or came back and the server has
    /// not yet shown the locks and the party node still ours): the locks may
    /// still be ours, but nothing may be used. Back to `Acquired` without a
    /// reallocation when the server proves them ours; `Release` or
    /// `Failure` otherwise. (Kazoo goes to `RELEASE` at every blip.)
    Suspended,
    /// Acquiring: the lock of `item` has been held by someone else for
    /// longer than the stuck bound
    /// ([`stuck_after`](crate::SetPartitionerBuilder::stuck_after)). The
    /// member goes on trying (and says so again at each bound); kazoo spins
    /// silently here (kazoo #392).
    Stuck {
        /// The item whose lock is held.
        item: String,
        /// Who holds it.
        holder: LockHolder,
        /// Since when this member has waited for it.
        since: Instant,
    },
    /// For good: the member owns nothing, its party node and locks are gone
    /// (or going with their session), and it does nothing more (kazoo's
    /// `FAILURE`). Build a new partitioner.
    Failure {
        /// Why.
        reason: FailureReason,
    },
}

impl PartitionState {
    /// The items the caller may use now: the share in
    /// [`Acquired`](PartitionState::Acquired), nothing otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_recipes::PartitionState::Suspended.share().is_empty());
    /// ```
    pub fn share(&self) -> &[String] {
        match self {
            PartitionState::Acquired { items } => items,
            _ => &[],
        }
    }

    /// Whether this is [`Acquired`](PartitionState::Acquired).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_recipes::PartitionState::Acquired { items: vec![] }.is_acquired());
    /// ```
    pub fn is_acquired(&self) -> bool {
        matches!(self, PartitionState::Acquired { .. })
    }

    /// Whether this is [`Failure`](PartitionState::Failure).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{FailureReason, PartitionState};
    /// assert!(PartitionState::Failure { reason: FailureReason::Closed }.is_failure());
    /// ```
    pub fn is_failure(&self) -> bool {
        matches!(self, PartitionState::Failure { .. })
    }

    /// Whether this is [`Release`](PartitionState::Release).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{PartitionState, ReleaseReason};
    /// assert!(PartitionState::Release { reason: ReleaseReason::MembershipChanged }.is_release());
    /// ```
    pub fn is_release(&self) -> bool {
        matches!(self, PartitionState::Release { .. })
    }

    /// Whether this is [`Allocating`](PartitionState::Allocating) or
    /// [`Stuck`](PartitionState::Stuck) (stuck is allocating that says why
    /// it takes long).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{Allocation, PartitionState};
    /// assert!(PartitionState::Allocating(Allocation::Joining).is_allocating());
    /// ```
    pub fn is_allocating(&self) -> bool {
        matches!(self, PartitionState::Allocating(_) | PartitionState::Stuck { .. })
    }
}

impl fmt::Display for PartitionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionState::Allocating(a) => write!(f, "allocating ({a})"),
            PartitionState::Acquired { items } => write!(f, "acquired {items:?}"),
            PartitionState::Release { reason } => write!(f, "release ({reason})"),
            PartitionState::Suspended => f.write_str("suspended"),
            PartitionState::Stuck { item, holder, since } => {
                write!(f, "stuck on {item:?} held by {holder} for {:?}", since.elapsed())
            }
            PartitionState::Failure { reason } => write!(f, "failed ({reason})"),
        }
    }
}

/// What an allocating member is doing.
///
/// # Examples
///
/// ```
/// let a = zk_recipes::Allocation::Acquiring { held: 1, wanted: 3 };
/// assert_eq!(a.to_string(), "acquiring 1 of 3 locks");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Allocation {
    /// Its party node is being created (or proven after a reconnect).
    Joining,
    /// Its party node is there, but another session owns a node with this
    /// member's identifier (another process with the same identifier, or
    /// this identifier's previous session not yet expired): it waits for
    /// that node to go and never shares its index.
    IdentifierTaken {
        /// The session that owns the other node.
        owner: i64,
    },
    /// Giving its locks back (after [`release_set`](crate::SetPartitioner::release_set)
    /// or a change seen while acquiring).
    Releasing,
    /// Waiting for the party to be quiet: it partitions at `until` unless
    /// the party changes before (then the wait starts again).
    Settling {
        /// When it partitions if nothing changes.
        until: Instant,
    },
    /// Taking the locks of its share, one by one in item order.
    Acquiring {
        /// Locks held so far.
        held: usize,
        /// The share's size.
        wanted: usize,
    },
}

impl fmt::Display for Allocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Allocation::Joining => f.write_str("joining the party"),
            Allocation::IdentifierTaken { owner } => {
                write!(f, "the identifier is taken by session 0x{owner:x}")
            }
            Allocation::Releasing => f.write_str("releasing"),
            Allocation::Settling { until } => write!(
                f,
                "settling, {:?} to go",
                until.saturating_duration_since(Instant::now())
            ),
            Allocation::Acquiring { held, wanted } => write!(f, "acquiring {held} of {wanted} locks"),
        }
    }
}

/// Why a member must release.
///
/// # Examples
///
/// ```
/// let r = zk_recipes::ReleaseReason::LockLost { item: "a".into() };
/// assert_eq!(r.to_string(), "the lock of \"a\" was lost");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReleaseReason {
    /// A member joined or left the party: every member re-partitions.
    MembershipChanged,
    /// The lock of `item` was lost (its node deleted by someone), the
    /// session alive: the share is no longer whole.
    LockLost {
        /// The item.
        item: String,
    },
}

impl fmt::Display for ReleaseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReleaseReason::MembershipChanged => f.write_str("the party changed"),
            ReleaseReason::LockLost { item } => write!(f, "the lock of {item:?} was lost"),
        }
    }
}

/// Who holds the lock a [`Stuck`](PartitionState::Stuck) member waits for.
///
/// # Examples
///
/// ```
/// let h = zk_recipes::LockHolder::NotAMember { session: 0x1f };
/// assert_eq!(h.to_string(), "session 0x1f, not a member of the party");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockHolder {
    /// A member of the party (by its session): one that has not released
    /// yet, or that partitions differently (another set, another function).
    Member {
        /// Its identifier.
        identifier: String,
        /// Its session.
        session: i64,
    },
    /// A session with no node in the party: a process outside the party
    /// (kazoo #392's foreign lock), or a member that left.
    NotAMember {
        /// The holder's session.
        session: i64,
    },
    /// The holder could not be read (the lock was free again, or the read
    /// failed).
    Unknown,
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockHolder::Member { identifier, session } => {
                write!(f, "member {identifier:?} (session 0x{session:x})")
            }
            LockHolder::NotAMember { session } => write!(f, "session 0x{session:x}, not a member of the party"),
            LockHolder::Unknown => f.write_str("an unknown holder"),
        }
    }
}

/// Why a member failed.
///
/// # Examples
///
/// ```
/// let r = zk_recipes::FailureReason::ForeignItem { member: "m1".into(), item: "z".into() };
/// assert_eq!(r.to_string(), "the partition function gave m1 \"z\", which is not in the set");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureReason {
    /// The session expired (or was given up): the party node and every
    /// lock went with it.
    SessionLost,
    /// The partition function panicked.
    FunctionPanicked {
        /// The member whose share it was computing.
        member: String,
        /// The panic's message.
        message: String,
    },
    /// The partition function gave a member an item not in the set.
    ForeignItem {
        /// The member.
        member: String,
        /// The item.
        item: String,
    },
    /// The partition function gave one item to two members.
    ItemTwice {
        /// The item.
        item: String,
        /// The first member it went to.
        first: String,
        /// The second.
        second: String,
    },
    /// The partitioner was closed.
    Closed,
    /// The client was closed.
    ClientClosed,
}

impl fmt::Display for FailureReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureReason::SessionLost => f.write_str("the session was lost"),
            FailureReason::FunctionPanicked { member, message } => {
                write!(f, "the partition function panicked for {member}: {message}")
            }
            FailureReason::ForeignItem { member, item } => {
                write!(
                    f,
                    "the partition function gave {member} {item:?}, which is not in the set"
                )
            }
            FailureReason::ItemTwice { item, first, second } => {
                write!(f, "the partition function gave {item:?} to both {first} and {second}")
            }
            FailureReason::Closed => f.write_str("closed"),
            FailureReason::ClientClosed => f.write_str("the client was closed"),
        }
    }
}

/// A change of a member's state, stamped with the instant it took effect
/// (taken under the lock that orders the changes: a member stops owning
/// its items at the `at` of the event that leaves `Acquired`).
///
/// # Examples
///
/// ```
/// use zk_recipes::{PartitionEvent, PartitionState};
/// let ev = PartitionEvent { state: PartitionState::Suspended, at: std::time::Instant::now() };
/// assert!(ev.state.share().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionEvent {
    /// The new state.
    pub state: PartitionState,
    /// When it took effect.
    pub at: Instant,
}
