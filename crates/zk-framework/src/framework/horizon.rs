//! Until when the session is certainly alive: the safe horizon, and the
//! session's health as the client's own clock judges it.
//!
//! The rule. A reply to a request proves that the server had the session
//! alive when it received the request, which is no earlier than when the
//! request was sent, and a server expires a session no sooner than the
//! negotiated session timeout `T` after it last heard from it. So the session
//! is certainly alive until
//!
//! ```text
//! horizon = send time of the latest answered request + T - margin
//! ```
//!
//! The margin covers the two clocks' rates (the client's monotonic clock
//! against the server's) and the delivery of what the client decides near the
//! horizon: by default `T / 20` (5 %, far above the rate difference of real
//! clocks), at least 50 ms; [`CuratorFrameworkBuilder::session_horizon_margin`]
//! sets another. On an ensemble, a follower cut off from the quorum answers
//! pings until it notices (its `syncLimit` × `tickTime`) while the leader may
//! expire the session already: add that to the margin where such partitions
//! matter.
//!
//! [`CuratorFrameworkBuilder::session_horizon_margin`]: super::CuratorFrameworkBuilder::session_horizon_margin

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::inner::Inner;
use crate::client::Client;
use crate::state::{HealthListener, SessionHealth};

/// The default margin for a negotiated session timeout `t`.
pub(super) fn default_margin(t: Duration) -> Duration {
    (t / 20).max(Duration::from_millis(50))
}

impl Inner {
    /// The margin taken off the horizon for session timeout `t`.
    fn margin(&self, t: Duration) -> Duration {
        self.horizon_margin.unwrap_or_else(|| default_margin(t)).min(t)
    }

    /// The horizon of `client`'s session (`None`: no session, or it ended).
    pub(super) fn horizon_of(&self, client: &Client) -> Option<Instant> {
        if client.state().is_terminal() {
            return None;
        }
        let t = client.negotiated_timeout().filter(|t| !t.is_zero())?;
        client.confirmed_at().checked_add(t - self.margin(t))
    }

    /// The current session's health, and how long until it may next change
    /// by the clock alone (`None`: only a reply or a new session changes it).
    pub(super) fn health_now(&self) -> (SessionHealth, Option<Duration>) {
        // Under the handle's lock, without taking a reference (a lock's
        // `check()` asks for it every time).
        let h = self.handle.lock();
        let client = &h.client;
        let Some(horizon) = self.horizon_of(client) else {
            return (SessionHealth::PastHorizon, None);
        };
        let now = Instant::now();
        if now >= horizon {
            return (SessionHealth::PastHorizon, None);
        }
        // The rule of `since_last_confirmed() > read_timeout()`, as the locks'
        // `check()` applies it.
        let (idle, read_timeout) = (client.since_last_confirmed(), client.read_timeout());
        if idle > read_timeout {
            (SessionHealth::Stale, Some(horizon - now))
        } else {
            let next = (read_timeout - idle).min(horizon - now) + Duration::from_millis(1);
            (SessionHealth::Confirmed, Some(next))
        }
    }

    /// Tells the health listeners when the health changed; returns how long
    /// the session monitor may wait before it looks again.
    pub(super) fn follow_health(&self) -> Option<Duration> {
        let (now, next) = self.health_now();
        let changed = {
            let mut last = self.health.lock();
            let changed = *last != now;
            *last = now;
            changed
        };
        if changed && !self.closed.load(Ordering::SeqCst) {
            log::debug!("session health: {now:?}");
            let listeners: Vec<Arc<HealthListener>> =
                self.health_listeners.lock().iter().map(|(_, l)| l.clone()).collect();
            for l in listeners {
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(now))).is_err() {
                    log::error!("a session-health listener panicked on {now:?}");
                }
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_margin_is_a_twentieth_and_at_least_50_ms() {
        assert_eq!(default_margin(Duration::from_secs(30)), Duration::from_millis(1500));
        assert_eq!(default_margin(Duration::from_secs(4)), Duration::from_millis(200));
        assert_eq!(default_margin(Duration::from_millis(600)), Duration::from_millis(50));
    }
}
