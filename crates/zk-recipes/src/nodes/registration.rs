//! What a node's registration says: [`Registration`] and its reasons, and
//! what a group member tells ([`MemberEvent`]).

use crate::cache::bridges::PathChildrenCacheEvent;

/// Whether a node is in place, as far as this process can know.
///
/// # Examples
///
/// ```
/// use zk_recipes::{AbsentReason, Registration};
/// let r = Registration::Absent { why: AbsentReason::NotStarted };
/// assert!(!r.is_registered());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Registration {
    /// The server has shown the node in the current connection epoch (owned
    /// by the current session, for an ephemeral node) and the connection is
    /// up and answering.
    Registered {
        /// The node's path (the client's, without its namespace).
        path: String,
    },
    /// The node may or may not be there: the connection is down, silent or
    /// read-only, or it came back and the server has not yet shown the node
    /// again, or the node has not been created yet.
    Uncertain {
        /// Why it is not known.
        why: UncertainReason,
    },
    /// The node is not in place, and why.
    Absent {
        /// Why.
        why: AbsentReason,
    },
}

impl Registration {
    /// Whether this is `Registered`.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = zk_recipes::Registration::Registered { path: "/services/a".into() };
    /// assert!(r.is_registered());
    /// ```
    pub fn is_registered(&self) -> bool {
        matches!(self, Registration::Registered { .. })
    }
}

/// Why a registration is [`Registration::Uncertain`].
///
/// # Examples
///
/// ```
/// let why = zk_recipes::UncertainReason::Disconnected;
/// assert_ne!(why, zk_recipes::UncertainReason::Unproven);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UncertainReason {
    /// The connection is down or read-only.
    Disconnected,
    /// No request has been answered for a read timeout (the process may
    /// have been paused, or the connection died unseen).
    Silent,
    /// The connection moved on (a reconnect, a stale spell) and the server
    /// has not yet shown the node on it; or the first look is under way.
    Unproven,
}

/// Why a registration is [`Registration::Absent`].
///
/// # Examples
///
/// ```
/// let why = zk_recipes::AbsentReason::Deleted;
/// assert_eq!(format!("{why:?}"), "Deleted");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AbsentReason {
    /// `start()` has not been called.
    NotStarted,
    /// The node was closed (and deleted, unless it is a TTL node).
    Closed,
    /// The session that owned the ephemeral node expired; it is created
    /// again on the new session.
    SessionExpired,
    /// The server showed the node gone (someone deleted it, or its parent);
    /// it is being created again.
    Deleted,
    /// An ephemeral node at the path belongs to another session; ours is
    /// created when that one goes.
    OwnedByAnotherSession {
        /// The other session's id.
        owner: i64,
    },
    /// The parent is missing and parent creation is off; the node is
    /// created when the parent appears.
    ParentMissing,
    /// The ACL forbids the create; tried again after a reconnect or a
    /// `set_data`.
    NoAuth,
    /// The server does not allow TTL nodes (its
    /// `zookeeper.extendedTypesEnabled` is off).
    TtlNotEnabled,
    /// The server refused the create for another reason (tried again with
    /// a growing pause).
    Refused(zk_framework::Error),
}

/// What a [`GroupMember`](crate::GroupMember)'s [`events`](crate::GroupMember::events) tell: this
/// member's registration and the group's changes, on one channel. Each kind
/// comes in its own order (a registration never after a newer one, the
/// group's changes as its cache saw them); the two are independent facts.
///
/// # Examples
///
/// ```
/// use zk_recipes::{AbsentReason, MemberEvent, Registration};
/// let ev = MemberEvent::Registration(Registration::Absent { why: AbsentReason::NotStarted });
/// assert!(matches!(ev, MemberEvent::Registration(r) if !r.is_registered()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemberEvent {
    /// This member's registration changed (as
    /// [`PersistentNode::events`](crate::PersistentNode::events) tells it; the first event says where it
    /// stands).
    Registration(Registration),
    /// The group changed (as [`PathChildrenCache::events`](crate::PathChildrenCache::events) tells it).
    Group(PathChildrenCacheEvent),
}
