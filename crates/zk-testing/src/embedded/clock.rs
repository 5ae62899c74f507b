//! Time: the wall clock and the tick buckets sessions expire in. Imports nothing of
//! the server.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Wall clock in ms since the epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Tick boundaries counted from the server's start: a session expires between T and
/// T + tick after its last request, never before T.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    base: Instant,
    tick: Duration,
}

impl Clock {
    /// Buckets of `tick` (at least 1 ms) from now.
    pub fn new(tick: Duration) -> Clock {
        Clock {
            base: Instant::now(),
            tick: tick.max(Duration::from_millis(1)),
        }
    }

    /// Rounds `t` up to the next tick boundary (expiry buckets).
    pub fn round_up(&self, t: Instant) -> Instant {
        let tick = self.tick.as_nanos();
        let off = t.saturating_duration_since(self.base).as_nanos();
        let k = off.div_ceil(tick);
        self.base + Duration::from_nanos((k * tick) as u64)
    }

    /// The first tick boundary strictly after `now`.
    pub fn next_boundary(&self, now: Instant) -> Instant {
        let tick = self.tick.as_nanos();
        let off = now.saturating_duration_since(self.base).as_nanos();
        self.base + Duration::from_nanos(((off / tick + 1) * tick) as u64)
    }

    /// The expiry deadline of a session with `timeout_ms` touched at `now`.
    pub fn deadline(&self, now: Instant, timeout_ms: i32) -> Instant {
        self.round_up(now + Duration::from_millis(timeout_ms.max(0) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_round_up_to_tick_boundaries() {
        let c = Clock::new(Duration::from_millis(50));
        let now = Instant::now();
        let d = c.deadline(now, 120);
        assert!(d >= now + Duration::from_millis(120));
        assert!(d < now + Duration::from_millis(171));
        assert!(c.next_boundary(d) > d);
        assert_eq!(c.round_up(d), d);
    }
}
