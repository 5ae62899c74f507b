//! How fresh a cache's view is, and the rule that moves it.

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
/// use zk_recipes::cache::Freshness;
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
    /// assert!(zk_recipes::cache::Freshness::Current.is_current());
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

/// What the cache knows of its link to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link {
    /// The client is connected.
    pub connected: bool,
    /// A request sent within the read timeout was answered.
    pub answered: bool,
    /// The subtree has been read since the last connection (no
    /// re-synchronisation is due).
    pub synced: bool,
    /// Every change announced so far is applied (no note waits).
    pub applied: bool,
}

/// The freshness `link` gives, from `was` (a stale spell keeps its start
/// and zxid; `last_zxid` starts a new one).
pub(crate) fn judge(was: Freshness, link: Link, now: Instant, last_zxid: i64) -> Freshness {
    let stale = || match was {
        Freshness::Stale { .. } => was,
        _ => Freshness::Stale { since: now, last_zxid },
    };
    match link {
        Link { connected: false, .. } => stale(),
        Link { synced: false, .. } => Freshness::Resyncing,
        Link { answered: false, .. } => stale(),
        Link { applied: false, .. } => Freshness::Updating,
        _ => Freshness::Current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_table() {
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_secs(1);
        let stale0 = Freshness::Stale {
            since: t0,
            last_zxid: 7,
        };
        let link = |connected, answered, synced| Link {
            connected,
            answered,
            synced,
            applied: true,
        };
        let behind = Link {
            applied: false,
            ..link(true, true, true)
        };
        let cases = [
            // (was, link, want)
            (Freshness::Current, link(true, true, true), Freshness::Current),
            (
                Freshness::Current,
                link(false, true, true),
                Freshness::Stale {
                    since: t1,
                    last_zxid: 9,
                },
            ),
            (
                Freshness::Current,
                link(true, false, true),
                Freshness::Stale {
                    since: t1,
                    last_zxid: 9,
                },
            ),
            // A stale spell keeps its start and zxid.
            (stale0, link(false, false, false), stale0),
            (stale0, link(true, false, true), stale0),
            // Connected again: re-read before current.
            (stale0, link(true, true, false), Freshness::Resyncing),
            (stale0, link(true, false, false), Freshness::Resyncing),
            (Freshness::Resyncing, link(true, true, true), Freshness::Current),
            (
                Freshness::Resyncing,
                link(false, true, false),
                Freshness::Stale {
                    since: t1,
                    last_zxid: 9,
                },
            ),
            (stale0, link(true, true, true), Freshness::Current),
            // Announced changes not yet read: updating, not current; a
            // stale spell or a re-read says so first.
            (Freshness::Current, behind, Freshness::Updating),
            (Freshness::Updating, link(true, true, true), Freshness::Current),
            (Freshness::Resyncing, behind, Freshness::Updating),
            (
                stale0,
                Link {
                    answered: false,
                    ..behind
                },
                stale0,
            ),
            (
                Freshness::Updating,
                Link {
                    synced: false,
                    ..behind
                },
                Freshness::Resyncing,
            ),
        ];
        for (was, l, want) in cases {
            assert_eq!(judge(was, l, t1, 9), want, "{was:?} {l:?}");
        }
    }
}
