//! Retry policies: pure values that say "retry after D" or "give up", and never
//! sleep. The framework's retry loop does the sleeping.
//!
//! Every Curator policy is here with its exact rule, plus (with the
//! `backoff-retry` feature) `BackoffRetry`, an adapter for the `backoff`
//! crate's policies.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use zk_framework::{RetryDecision, RetryNTimes, RetryPolicy};
//! let p = RetryNTimes::new(2, Duration::from_millis(10));
//! assert_eq!(p.next_retry(0, Duration::ZERO), RetryDecision::RetryAfter(Duration::from_millis(10)));
//! assert_eq!(p.next_retry(2, Duration::ZERO), RetryDecision::GiveUp);
//! ```

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(feature = "backoff-retry")]
use parking_lot::Mutex;

use crate::error::Error;

/// What a policy says about one failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Wait this long, then try again.
    RetryAfter(Duration),
    /// Stop; the last error is the result.
    GiveUp,
}

/// A retry policy. `retry_count` is 0 for the first retry (the attempt after the
/// first failure); `elapsed` is the time since the retry loop started.
pub trait RetryPolicy: fmt::Debug + Send + Sync {
    /// Whether (and after how long) to retry.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_framework::{RetryDecision, RetryOneTime, RetryPolicy};
    /// let p = RetryOneTime::new(Duration::from_millis(5));
    /// assert!(matches!(p.next_retry(0, Duration::ZERO), RetryDecision::RetryAfter(_)));
    /// ```
    fn next_retry(&self, retry_count: u32, elapsed: Duration) -> RetryDecision;

    /// Whether this error may be retried at all. By default the retryable set of
    /// Curator 5: ConnectionLoss, OperationTimeout, SessionMoved, SessionExpired.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_framework::{Error, RetryOneTime, RetryPolicy};
    /// let p = RetryOneTime::new(Duration::from_millis(5));
    /// assert!(p.allows(&Error::ConnectionLoss));
    /// assert!(!p.allows(&Error::NoNode { path: "/a".into() }));
    /// ```
    fn allows(&self, err: &Error) -> bool {
        err.is_retryable()
    }
}

impl<P: RetryPolicy + ?Sized> RetryPolicy for std::sync::Arc<P> {
    fn next_retry(&self, retry_count: u32, elapsed: Duration) -> RetryDecision {
        (**self).next_retry(retry_count, elapsed)
    }
    fn allows(&self, err: &Error) -> bool {
        (**self).allows(err)
    }
}

impl<P: RetryPolicy + ?Sized> RetryPolicy for Box<P> {
    fn next_retry(&self, retry_count: u32, elapsed: Duration) -> RetryDecision {
        (**self).next_retry(retry_count, elapsed)
    }
    fn allows(&self, err: &Error) -> bool {
        (**self).allows(err)
    }
}

/// A uniformly random u64 from std's randomly keyed hasher (no extra crate).
fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// Curator's `ExponentialBackoffRetry`: sleeps `base × max(1, random in
/// [0, 2^(retry_count+1)))`, at most `max_sleep`, for at most `max_retries`
/// retries (capped at 29, as Curator caps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExponentialBackoffRetry {
    base: Duration,
    max_retries: u32,
    max_sleep: Duration,
}

impl ExponentialBackoffRetry {
    /// Curator's cap on the number of retries.
    pub const MAX_RETRIES_LIMIT: u32 = 29;

    /// `(baseSleepTimeMs, maxRetries)`; `max_retries` above 29 is pinned to 29.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = zk_framework::ExponentialBackoffRetry::new(Duration::from_millis(100), 3);
    /// assert_eq!(p.max_retries(), 3);
    /// ```
    pub fn new(base: Duration, max_retries: u32) -> Self {
        ExponentialBackoffRetry::with_max_sleep(base, max_retries, Duration::MAX)
    }

    /// `(baseSleepTimeMs, maxRetries, maxSleepMs)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = zk_framework::ExponentialBackoffRetry::with_max_sleep(Duration::from_millis(1), 100, Duration::from_millis(100));
    /// assert_eq!(p.max_retries(), 29);
    /// ```
    pub fn with_max_sleep(base: Duration, max_retries: u32, max_sleep: Duration) -> Self {
        if max_retries > Self::MAX_RETRIES_LIMIT {
            log::warn!(
                "max_retries {max_retries} is too large; using {}",
                Self::MAX_RETRIES_LIMIT
            );
        }
        ExponentialBackoffRetry {
            base,
            max_retries: max_retries.min(Self::MAX_RETRIES_LIMIT),
            max_sleep,
        }
    }

    /// The effective number of retries.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(zk_framework::ExponentialBackoffRetry::new(Duration::from_millis(1), 50).max_retries(), 29);
    /// ```
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// The sleep for `retry_count` given a random draw `random` (the pure core of
    /// the policy, for tests): `base × max(1, random mod 2^(retry_count+1))`,
    /// capped at `max_sleep`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = zk_framework::ExponentialBackoffRetry::new(Duration::from_millis(10), 5);
    /// assert_eq!(p.sleep_for(2, 0), Duration::from_millis(10));
    /// assert_eq!(p.sleep_for(2, 7), Duration::from_millis(70));
    /// assert_eq!(p.sleep_for(2, 8), Duration::from_millis(10));
    /// ```
    pub fn sleep_for(&self, retry_count: u32, random: u64) -> Duration {
        let span = 1u64 << (retry_count.min(62) + 1);
        let factor = (random % span).max(1);
        let sleep = self.base.saturating_mul(u32::try_from(factor).unwrap_or(u32::MAX));
        if sleep > self.max_sleep {
            self.max_sleep
        } else {
            sleep
        }
    }
}

impl RetryPolicy for ExponentialBackoffRetry {
    fn next_retry(&self, retry_count: u32, _elapsed: Duration) -> RetryDecision {
        if retry_count < self.max_retries {
            RetryDecision::RetryAfter(self.sleep_for(retry_count, random_u64()))
        } else {
            RetryDecision::GiveUp
        }
    }
}

/// Curator's `BoundedExponentialBackoffRetry(base, maxSleep, maxRetries)`:
/// exponential backoff with every sleep at most `max_sleep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundedExponentialBackoffRetry(ExponentialBackoffRetry);

impl BoundedExponentialBackoffRetry {
    /// Note Curator's argument order: base, max sleep, max retries.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_framework::{BoundedExponentialBackoffRetry, RetryDecision, RetryPolicy};
    /// let p = BoundedExponentialBackoffRetry::new(Duration::from_millis(100), Duration::from_millis(150), 10);
    /// match p.next_retry(9, Duration::ZERO) {
    ///     RetryDecision::RetryAfter(d) => assert!(d <= Duration::from_millis(150)),
    ///     RetryDecision::GiveUp => unreachable!(),
    /// }
    /// ```
    pub fn new(base: Duration, max_sleep: Duration, max_retries: u32) -> Self {
        BoundedExponentialBackoffRetry(ExponentialBackoffRetry::with_max_sleep(base, max_retries, max_sleep))
    }
}

impl RetryPolicy for BoundedExponentialBackoffRetry {
    fn next_retry(&self, retry_count: u32, elapsed: Duration) -> RetryDecision {
        self.0.next_retry(retry_count, elapsed)
    }
}

/// Curator's `RetryNTimes(n, sleep)`: `n` retries with a constant sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryNTimes {
    n: u32,
    sleep: Duration,
}

impl RetryNTimes {
    /// `n` retries, `sleep` between them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_framework::{RetryDecision, RetryNTimes, RetryPolicy};
    /// assert_eq!(RetryNTimes::new(0, Duration::ZERO).next_retry(0, Duration::ZERO), RetryDecision::GiveUp);
    /// ```
    pub fn new(n: u32, sleep: Duration) -> Self {
        RetryNTimes { n, sleep }
    }
}

impl RetryPolicy for RetryNTimes {
    fn next_retry(&self, retry_count: u32, _elapsed: Duration) -> RetryDecision {
        if retry_count < self.n {
            RetryDecision::RetryAfter(self.sleep)
        } else {
            RetryDecision::GiveUp
        }
    }
}

/// Curator's `RetryOneTime(sleep)` = `RetryNTimes(1, sleep)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryOneTime(RetryNTimes);

impl RetryOneTime {
    /// One retry after `sleep`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_framework::{RetryDecision, RetryOneTime, RetryPolicy};
    /// assert_eq!(RetryOneTime::new(Duration::ZERO).next_retry(1, Duration::ZERO), RetryDecision::GiveUp);
    /// ```
    pub fn new(sleep: Duration) -> Self {
        RetryOneTime(RetryNTimes::new(1, sleep))
    }
}

impl RetryPolicy for RetryOneTime {
    fn next_retry(&self, retry_count: u32, elapsed: Duration) -> RetryDecision {
        self.0.next_retry(retry_count, elapsed)
    }
}

/// Curator's `RetryUntilElapsed(maxElapsed, sleep)`: retries with a constant
/// sleep while less than `max_elapsed` has passed since the loop started.
///
/// Unlike Curator, which sleeps first and then may refuse, this gives up
/// without the wasted sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryUntilElapsed {
    max_elapsed: Duration,
    sleep: Duration,
}

impl RetryUntilElapsed {
    /// Retry every `sleep` until `max_elapsed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_framework::{RetryDecision, RetryPolicy, RetryUntilElapsed};
    /// let p = RetryUntilElapsed::new(Duration::from_secs(1), Duration::from_millis(100));
    /// assert_eq!(p.next_retry(1000, Duration::from_secs(2)), RetryDecision::GiveUp);
    /// ```
    pub fn new(max_elapsed: Duration, sleep: Duration) -> Self {
        RetryUntilElapsed { max_elapsed, sleep }
    }
}

impl RetryPolicy for RetryUntilElapsed {
    fn next_retry(&self, _retry_count: u32, elapsed: Duration) -> RetryDecision {
        if elapsed < self.max_elapsed {
            RetryDecision::RetryAfter(self.sleep)
        } else {
            RetryDecision::GiveUp
        }
    }
}

/// Curator's `RetryForever(interval)`: always retries after `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryForever {
    interval: Duration,
}

impl RetryForever {
    /// Retry forever every `interval`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a zero interval (Curator requires > 0).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(zk_framework::RetryForever::new(Duration::ZERO).is_err());
    /// assert!(zk_framework::RetryForever::new(Duration::from_millis(1)).is_ok());
    /// ```
    pub fn new(interval: Duration) -> Result<Self, Error> {
        if interval.is_zero() {
            return Err(Error::InvalidArgument(
                "RetryForever interval must be greater than zero".into(),
            ));
        }
        Ok(RetryForever { interval })
    }
}

impl RetryPolicy for RetryForever {
    fn next_retry(&self, _retry_count: u32, _elapsed: Duration) -> RetryDecision {
        RetryDecision::RetryAfter(self.interval)
    }
}

/// Curator's `SessionFailedRetryPolicy(delegate)`: like the delegate, but a
/// session expiry is never retried, for work that must stay in one session.
#[derive(Debug, Clone)]
pub struct SessionFailedRetryPolicy<P> {
    delegate: P,
}

impl<P: RetryPolicy> SessionFailedRetryPolicy<P> {
    /// Wraps `delegate`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_framework::{Error, RetryForever, RetryPolicy, SessionFailedRetryPolicy};
    /// let p = SessionFailedRetryPolicy::new(RetryForever::new(Duration::from_millis(1)).unwrap());
    /// assert!(!p.allows(&Error::SessionExpired));
    /// assert!(p.allows(&Error::ConnectionLoss));
    /// ```
    pub fn new(delegate: P) -> Self {
        SessionFailedRetryPolicy { delegate }
    }
}

impl<P: RetryPolicy> RetryPolicy for SessionFailedRetryPolicy<P> {
    fn next_retry(&self, retry_count: u32, elapsed: Duration) -> RetryDecision {
        self.delegate.next_retry(retry_count, elapsed)
    }
    fn allows(&self, err: &Error) -> bool {
        !matches!(err, Error::SessionExpired) && self.delegate.allows(err)
    }
}

/// Adapts a policy of the `backoff` crate. The backoff is reset at the start of
/// each retry loop (retry count 0); its `None` means give up. Only with the
/// `backoff-retry` feature (off by default: `backoff` is not maintained, and
/// stays out of the public API unless asked for).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zk_framework::{BackoffRetry, RetryDecision, RetryPolicy};
/// let p = BackoffRetry::new(backoff::backoff::Constant::new(Duration::from_millis(3)));
/// assert_eq!(p.next_retry(0, Duration::ZERO), RetryDecision::RetryAfter(Duration::from_millis(3)));
/// ```
#[cfg(feature = "backoff-retry")]
pub struct BackoffRetry<B> {
    inner: Mutex<B>,
}

#[cfg(feature = "backoff-retry")]
impl<B: backoff::backoff::Backoff + Send> BackoffRetry<B> {
    /// Wraps a `backoff` policy.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = zk_framework::BackoffRetry::new(backoff::ExponentialBackoff::default());
    /// # let _ = p;
    /// ```
    pub fn new(backoff: B) -> Self {
        BackoffRetry {
            inner: Mutex::new(backoff),
        }
    }
}

#[cfg(feature = "backoff-retry")]
impl<B> fmt::Debug for BackoffRetry<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BackoffRetry")
    }
}

#[cfg(feature = "backoff-retry")]
impl<B: backoff::backoff::Backoff + Send> RetryPolicy for BackoffRetry<B> {
    fn next_retry(&self, retry_count: u32, _elapsed: Duration) -> RetryDecision {
        let mut b = self.inner.lock();
        if retry_count == 0 {
            b.reset();
        }
        match b.next_backoff() {
            Some(d) => RetryDecision::RetryAfter(d),
            None => RetryDecision::GiveUp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_sleep_table() {
        let p = ExponentialBackoffRetry::new(100 * MS, 3);
        // (retry_count, random draw, expected sleep)
        let table = [
            (0, 0, 100),
            (0, 1, 100),
            (0, 2, 100), // 2 mod 2 = 0 -> max(1, 0)
            (1, 3, 300),
            (1, 4, 100),
            (2, 7, 700),
            (2, 5, 500),
            (3, 15, 1500),
            (3, 16, 100),
        ];
        for (count, random, ms) in table {
            assert_eq!(p.sleep_for(count, random), ms * MS, "count={count} random={random}");
        }
        assert!(matches!(p.next_retry(2, Duration::ZERO), RetryDecision::RetryAfter(_)));
        assert_eq!(p.next_retry(3, Duration::ZERO), RetryDecision::GiveUp);
    }

    #[test]
    fn exponential_never_exceeds_max_sleep_and_caps_retries() {
        // Curator's TestRetryLoop: ExponentialBackoffRetry(1, MAX, 100) never sleeps > 100 ms.
        let p = ExponentialBackoffRetry::with_max_sleep(MS, u32::MAX, 100 * MS);
        assert_eq!(p.max_retries(), 29);
        for count in 0..29 {
            for _ in 0..50 {
                match p.next_retry(count, Duration::ZERO) {
                    RetryDecision::RetryAfter(d) => assert!(d <= 100 * MS && d >= MS),
                    RetryDecision::GiveUp => panic!("count {count} should retry"),
                }
            }
        }
        assert_eq!(p.next_retry(29, Duration::ZERO), RetryDecision::GiveUp);
        // Huge counts and draws do not overflow.
        let q = ExponentialBackoffRetry::new(Duration::from_secs(1000), 29);
        let _ = q.sleep_for(u32::MAX, u64::MAX);
    }

    #[test]
    fn exponential_draws_cover_the_range() {
        let p = ExponentialBackoffRetry::new(MS, 29);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2000 {
            if let RetryDecision::RetryAfter(d) = p.next_retry(2, Duration::ZERO) {
                assert!(d >= MS && d <= 7 * MS);
                seen.insert(d);
            }
        }
        assert_eq!(seen.len(), 7, "factors 1..=7 all occur: {seen:?}");
    }

    #[test]
    fn constant_policies_table() {
        let z = Duration::ZERO;
        let s = Duration::from_secs(10);
        let cases: Vec<(Box<dyn RetryPolicy>, u32, Duration, RetryDecision)> = vec![
            (
                Box::new(RetryNTimes::new(3, 5 * MS)),
                0,
                z,
                RetryDecision::RetryAfter(5 * MS),
            ),
            (
                Box::new(RetryNTimes::new(3, 5 * MS)),
                2,
                z,
                RetryDecision::RetryAfter(5 * MS),
            ),
            (Box::new(RetryNTimes::new(3, 5 * MS)), 3, z, RetryDecision::GiveUp),
            (
                Box::new(RetryOneTime::new(7 * MS)),
                0,
                z,
                RetryDecision::RetryAfter(7 * MS),
            ),
            (Box::new(RetryOneTime::new(7 * MS)), 1, z, RetryDecision::GiveUp),
            (
                Box::new(RetryUntilElapsed::new(s, MS)),
                1000,
                9 * Duration::from_secs(1),
                RetryDecision::RetryAfter(MS),
            ),
            (Box::new(RetryUntilElapsed::new(s, MS)), 0, s, RetryDecision::GiveUp),
            (
                Box::new(RetryForever::new(2 * MS).unwrap()),
                u32::MAX,
                s * 1000,
                RetryDecision::RetryAfter(2 * MS),
            ),
            (
                Box::new(BoundedExponentialBackoffRetry::new(MS, MS, 5)),
                4,
                z,
                RetryDecision::RetryAfter(MS),
            ),
            (
                Box::new(BoundedExponentialBackoffRetry::new(MS, MS, 5)),
                5,
                z,
                RetryDecision::GiveUp,
            ),
        ];
        for (i, (p, count, elapsed, want)) in cases.into_iter().enumerate() {
            assert_eq!(p.next_retry(count, elapsed), want, "case {i}: {p:?}");
        }
    }

    #[test]
    fn which_errors_are_retried() {
        let plain = RetryNTimes::new(1, MS);
        let session = SessionFailedRetryPolicy::new(plain);
        let table = [
            (Error::ConnectionLoss, true, true),
            (Error::OperationTimeout, true, true),
            (Error::SessionMoved, true, true),
            (Error::SessionExpired, true, false),
            (Error::NoNode { path: "/".into() }, false, false),
            (Error::NodeExists { path: "/".into() }, false, false),
            (Error::Closed, false, false),
        ];
        for (e, plain_ok, session_ok) in table {
            assert_eq!(plain.allows(&e), plain_ok, "{e}");
            assert_eq!(session.allows(&e), session_ok, "{e}");
        }
    }

    #[cfg(feature = "backoff-retry")]
    #[test]
    fn backoff_adapter_resets_per_loop_and_gives_up() {
        let b = backoff::ExponentialBackoff {
            initial_interval: 10 * MS,
            randomization_factor: 0.0,
            multiplier: 2.0,
            max_interval: Duration::from_secs(1),
            max_elapsed_time: None,
            ..Default::default()
        };
        let p = BackoffRetry::new(b);
        assert_eq!(p.next_retry(0, Duration::ZERO), RetryDecision::RetryAfter(10 * MS));
        assert_eq!(p.next_retry(1, Duration::ZERO), RetryDecision::RetryAfter(20 * MS));
        assert_eq!(
            p.next_retry(0, Duration::ZERO),
            RetryDecision::RetryAfter(10 * MS),
            "reset at count 0"
        );
        let stop = BackoffRetry::new(backoff::backoff::Stop {});
        assert_eq!(stop.next_retry(0, Duration::ZERO), RetryDecision::GiveUp);
    }
}
