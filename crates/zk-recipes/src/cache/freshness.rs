//! The rule that moves a cache's [`Freshness`].

use std::time::Instant;

use crate::freshness::Freshness;

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
