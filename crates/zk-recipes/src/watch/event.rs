//! What a persistent watch tells ([`WatcherEvent`]).

use crate::error::Error;
use zk_framework::EventType;

/// What a [`PersistentWatcher`](crate::PersistentWatcher) tells.
///
/// # Examples
///
/// ```
/// use zk_recipes::WatcherEvent;
/// let ev = WatcherEvent::Reset { new_session: false };
/// assert!(ev.is_reset());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatcherEvent {
    /// A change the server announced: its type and the changed node's path
    /// (relative to the client's namespace).
    Node {
        /// What happened (`NodeCreated`, `NodeDeleted`, `NodeDataChanged`,
        /// or `NodeChildrenChanged` for a non-recursive watch).
        event_type: EventType,
        /// The node that changed.
        path: String,
    },
    /// The watch is in place at the server: first when the server accepted
    /// the watch (at start, on a new session), then each time the client is
    /// connected again on the same session, once an answer on the new
    /// connection proves it (the client sets its watches again ahead of any
    /// other request there). Every change after it is announced; changes
    /// made while it was not in place were not, and a read sent after this
    /// event sees them. Node events the new connection brought while the
    /// proof was on its way are told after it, in their order.
    Reset {
        /// Whether the watch was added anew (at start, or on a new session)
        /// rather than kept by the server through a reconnect.
        new_session: bool,
    },
    /// The connection is down, or the session ended: nothing is announced
    /// until the next `Reset`.
    Suspended,
    /// The watch cannot be kept (the server is older than 3.6 and has no
    /// `addWatch`): the watcher stopped, and the channel ends.
    Failed(Error),
}

impl WatcherEvent {
    /// Whether this is a [`WatcherEvent::Reset`].
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!zk_recipes::WatcherEvent::Suspended.is_reset());
    /// ```
    pub fn is_reset(&self) -> bool {
        matches!(self, WatcherEvent::Reset { .. })
    }
}
