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
    /// Connected, the subtree read, and every change the server announced
    /// up to an answer it gave within the read timeout applied.
    Current,
    /// Disconnected, or the server has not answered within the read
    /// timeout, since `since`: the view is the server's as of `last_zxid`
    /// (changes after it may be missing).
    Stale {
        /// When the cache stopped being current.
        since: Instant,
        /// The zxid of the last server answer whose changes the view holds.
        last_zxid: i64,
    },
    /// Connected again (or for the first time, or on a new session) and
    /// reading the subtree again: the view may lack changes made while the
    /// cache was away, until the next [`CacheEvent::Initialized`](super::CacheEvent::Initialized).
    Resyncing,
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
            // Unanswered but connected, and synced: not current.
            (stale0, link(true, true, true), Freshness::Current),
        ];
        for (was, l, want) in cases {
            assert_eq!(judge(was, l, t1, 9), want, "{was:?} {l:?}");
        }
    }
}
