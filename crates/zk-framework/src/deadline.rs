//! Deadlines, given as values: a handle bounded by a deadline
//! ([`crate::CuratorFramework::with_deadline`], [`crate::Client::with_deadline`])
//! ends every wait of its calls by then: the wait for a connection, the retry
//! policy's pauses and the wait for a reply. When the deadline is what ended
//! the wait, the call fails with [`crate::Error::DeadlineExceeded`]; the
//! connection is left alone (a reply that comes later is read and dropped).
//!
//! A request may wait for its reply until the deadline plus [`GRACE`]: a zero
//! timeout can then make its one attempt on a healthy connection (it never
//! waits for a connection), and the cleanup after a deadline (deleting a node
//! that was queued, giving back the members of a multi-lock) is answered at
//! once by a healthy server.

use std::time::{Duration, Instant};

/// How long a request sent under an expired deadline may wait for its reply.
pub const GRACE: Duration = Duration::from_millis(20);

/// The earlier of two optional deadlines (`None` is no deadline).
pub(crate) fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The latest a request sent under `deadline` may wait for its reply: the
/// deadline plus [`GRACE`] (`None`: no deadline).
pub(crate) fn request_bound(deadline: Option<Instant>) -> Option<Instant> {
    deadline.and_then(|d| d.checked_add(GRACE))
}

/// Time left until `deadline` (`None`: no deadline).
pub(crate) fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}

/// Whether `deadline` has passed.
pub(crate) fn expired(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| d <= Instant::now())
}

/// `timeout`, cut to the time left before `deadline`.
pub(crate) fn bound(deadline: Option<Instant>, timeout: Duration) -> Duration {
    match remaining(deadline) {
        Some(r) => r.min(timeout),
        None => timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earlier_deadline_holds() {
        let now = Instant::now();
        let (a, b) = (now + Duration::from_secs(10), now + Duration::from_secs(5));
        assert_eq!(earlier(Some(a), Some(b)), Some(b));
        assert_eq!(earlier(Some(a), None), Some(a));
        assert_eq!(earlier(None, Some(b)), Some(b));
        assert_eq!(earlier(None, None), None);
    }

    #[test]
    fn bound_cuts_to_the_deadline() {
        let d = Some(Instant::now() + Duration::from_millis(100));
        assert!(bound(d, Duration::from_secs(5)) <= Duration::from_millis(100));
        assert_eq!(bound(d, Duration::ZERO), Duration::ZERO);
        assert_eq!(bound(None, Duration::from_secs(5)), Duration::from_secs(5));
        assert!(expired(Some(Instant::now())));
        assert!(!expired(None));
        assert_eq!(request_bound(None), None);
        let now = Instant::now();
        assert_eq!(request_bound(Some(now)), Some(now + GRACE));
    }
}
