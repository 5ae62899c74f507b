//! How fresh a view of the server is ([`Freshness`]): the vocabulary of the
//! caches and of what is built on them, and of the error a view that is not
//! current answers with. A leaf: it imports nothing of this crate.

use std::time::Instant;

/// How far a cache's view can be trusted right now.
///
/// No peer's cache says this: after a partition a Curator cache serves
/// what it had with nothing to say it is old. Every change of it is a
/// [`CacheEvent::Freshness`](super::CacheEvent::Freshness).
///
/// # Examples
///
/// ```
/// use zk_recipes::Freshness;
/// assert!(Freshness::Current.is_current());
/// assert!(!Freshness::Resyncing.is_current());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Freshness {
    /// Connected, the subtree read, a request answered within the read
    /// timeout, and every change the server has announced to the cache's
    /// client so far applied: the view is the server's subtree as of the
    /// last of them.
    Current,
    /// Disconnected, or the server has not answered within the read
    /// timeout, since `since`: the view is the server's as of `last_zxid`
    /// (changes after it may be missing).
    Stale {
        /// When the cache stopped being current.
        since: Instant,
        /// The newest zxid the view's nodes show (a change, or a change
        /// among a node's children): the view holds the server's changes up
        /// to it.
        last_zxid: i64,
    },
    /// Connected again (or for the first time, or on a new session) and
    /// reading the subtree again: the view may lack changes made while the
    /// cache was away, until the next [`CacheEvent::Initialized`](super::CacheEvent::Initialized).
    Resyncing,
    /// Connected and read, with changes the server announced that the
    /// cache is still reading (it reads them at once, in rounds of a round
    /// trip): the view is the server's subtree as of an earlier
    /// announcement, every node as of that one moment. Under writes that
    /// never pause the cache may stay here; each of its rounds applies what
    /// was announced before it began.
    Updating,
}

impl Freshness {
    /// Whether the view is current.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_recipes::Freshness::Current.is_current());
    /// ```
    pub fn is_current(&self) -> bool {
        *self == Freshness::Current
    }
}

impl std::fmt::Display for Freshness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Freshness::Current => f.write_str("current"),
            Freshness::Stale { since, last_zxid } => write!(
                f,
                "stale for {:?} (the server's view as of zxid {last_zxid:#x})",
                since.elapsed()
            ),
            Freshness::Resyncing => f.write_str("re-synchronising"),
            Freshness::Updating => f.write_str("updating (announced changes not yet read)"),
        }
    }
}
