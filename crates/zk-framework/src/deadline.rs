//! A deadline for everything one thread does with the client, set once by the
//! caller that owns the time budget (a lock's timed acquire, for example).
//!
//! Inside [`with_deadline`], every call of [`crate::Client`] and every retry
//! loop of [`crate::framework::CuratorFramework`] on this thread is bounded by
//! the deadline: the wait for a connection, the retry policy's sleeps and the
//! wait for a reply. When the deadline is what ended the wait, the call fails
//! with [`crate::Error::DeadlineExceeded`]; the connection is left alone (a
//! reply that comes later is read and dropped). Scopes nest: the inner
//! deadline is the earlier of the two.
//!
//! A request may wait for its reply until the deadline plus [`GRACE`]: a zero
//! timeout can then make its one attempt on a healthy connection (it never
//! waits for a connection), and the cleanup after a deadline (deleting a node
//! that was queued, giving back the members of a multi-lock) is answered at
//! once by a healthy server. The grace is shared by every request of the
//! scope, so nothing ends later than the deadline plus one grace.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// How long a request sent under an expired deadline may wait for its reply.
pub const GRACE: Duration = Duration::from_millis(20);

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

struct Restore(Option<Instant>);

impl Drop for Restore {
    fn drop(&mut self) {
        DEADLINE.with(|d| d.set(self.0));
    }
}

/// Runs `f` with `deadline` as this thread's deadline (`None` adds none; an
/// enclosing scope's earlier deadline stays in force).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use zk_framework::deadline;
/// let d = Instant::now() + Duration::from_millis(200);
/// deadline::with_deadline(Some(d), || assert_eq!(deadline::current(), Some(d)));
/// assert_eq!(deadline::current(), None);
/// ```
pub fn with_deadline<T>(deadline: Option<Instant>, f: impl FnOnce() -> T) -> T {
    let prev = current();
    let new = match (prev, deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    DEADLINE.with(|d| d.set(new));
    let _restore = Restore(prev);
    f()
}

/// This thread's deadline, if a [`with_deadline`] scope is active.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_framework::deadline::current(), None);
/// ```
pub fn current() -> Option<Instant> {
    DEADLINE.with(|d| d.get())
}

/// The latest a request sent now may wait for its reply under this thread's
/// deadline: the deadline plus [`GRACE`] (`None`: no deadline).
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use zk_framework::deadline;
/// let d = Instant::now();
/// deadline::with_deadline(Some(d), || assert_eq!(deadline::request_bound(), Some(d + deadline::GRACE)));
/// ```
pub fn request_bound() -> Option<Instant> {
    current().and_then(|d| d.checked_add(GRACE))
}

/// Time left until this thread's deadline (`None`: no deadline).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use zk_framework::deadline;
/// deadline::with_deadline(Some(Instant::now()), || assert_eq!(deadline::remaining(), Some(Duration::ZERO)));
/// ```
pub fn remaining() -> Option<Duration> {
    current().map(|d| d.saturating_duration_since(Instant::now()))
}

/// Whether this thread's deadline has passed.
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use zk_framework::deadline;
/// assert!(!deadline::expired());
/// deadline::with_deadline(Some(Instant::now()), || assert!(deadline::expired()));
/// ```
pub fn expired() -> bool {
    current().is_some_and(|d| d <= Instant::now())
}

/// `timeout`, cut to the time left before this thread's deadline.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(zk_framework::deadline::bound(Duration::from_secs(1)), Duration::from_secs(1));
/// ```
pub fn bound(timeout: Duration) -> Duration {
    match remaining() {
        Some(r) => r.min(timeout),
        None => timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        let now = Instant::now();
        let (a, b) = (now + Duration::from_secs(10), now + Duration::from_secs(5));
        with_deadline(Some(a), || {
            assert_eq!(current(), Some(a));
            with_deadline(Some(b), || assert_eq!(current(), Some(b)));
            // A later inner deadline does not extend the outer one.
            with_deadline(Some(a + Duration::from_secs(1)), || assert_eq!(current(), Some(a)));
            with_deadline(None, || assert_eq!(current(), Some(a)));
            assert_eq!(current(), Some(a));
        });
        assert_eq!(current(), None);
    }

    #[test]
    fn restored_after_a_panic() {
        let r = std::panic::catch_unwind(|| with_deadline(Some(Instant::now()), || panic!("boom")));
        assert!(r.is_err());
        assert_eq!(current(), None);
    }

    #[test]
    fn bound_cuts_to_the_deadline() {
        with_deadline(Some(Instant::now() + Duration::from_millis(100)), || {
            assert!(bound(Duration::from_secs(5)) <= Duration::from_millis(100));
            assert_eq!(bound(Duration::ZERO), Duration::ZERO);
        });
    }
}
