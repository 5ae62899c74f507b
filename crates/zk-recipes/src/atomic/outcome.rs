//! How an update ended ([`Outcome`], [`AtomicValue`], [`AtomicStats`]) and the promotion to a lock ([`PromotedToLock`]).

use crate::shared::value::{Proof, VersionedValue};
use std::sync::Arc;
use std::time::Duration;
use zk_framework::{RetryNTimes, RetryPolicy};

/// How an update ended.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use zk_recipes::{DistributedAtomicLong, Outcome};
/// let counter = DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, std::time::Duration::from_millis(10)))?;
/// match counter.increment()?.outcome() {
///     Outcome::Applied { .. } => {}
///     Outcome::NotApplied => println!("too much contention: try later"),
///     Outcome::Unknown { read } => println!("reply lost; the counter now reads {read:?}"),
///     _ => {}
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome<T> {
    /// Applied, once; how that is known.
    Applied {
        /// The reply, the write's marker, or a read-back after a lost
        /// reply (see its bound).
        proof: Proof,
    },
    /// Not applied: the comparison failed, the node was there already
    /// (`initialize`), the retry policy gave up on a contended node, or the
    /// promotion's lock was not acquired in time.
    NotApplied,
    /// The reply to the write was lost, and reading the node back could not
    /// tell whether it was applied (the node changed more than once since,
    /// or holds other bytes, or is gone): what was read (`None`: no node, or
    /// the read failed). The update was not retried.
    Unknown {
        /// What the read-back found.
        read: Option<VersionedValue<T>>,
    },
}

/// Tries and times of an update (Curator's `AtomicStats`).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, std::time::Duration::from_millis(10)))?;
/// let stats = counter.increment()?.stats();
/// println!("{} optimistic tries in {:?}", stats.optimistic_tries, stats.optimistic_time);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AtomicStats {
    /// Reads-and-writes of the optimistic loop.
    pub optimistic_tries: u32,
    /// Reads-and-writes under the promotion's lock.
    pub promoted_tries: u32,
    /// Time in the optimistic loop.
    pub optimistic_time: Duration,
    /// Time in the promotion (the lock's acquire included).
    pub promoted_time: Duration,
}

/// The result of an update (Curator's `AtomicValue`, with an explicit
/// [`Outcome`]).
///
/// `pre_value` is the value read before the last write (0, or empty bytes,
/// for a missing node); `post_value` the value that write carried (after
/// [`Outcome::NotApplied`]: the value read, unchanged).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, std::time::Duration::from_millis(10)))?;
/// let r = counter.increment()?;
/// if r.succeeded() {
///     println!("{} -> {}", r.pre_value(), r.post_value());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "an update that was not applied says so only here"]
pub struct AtomicValue<T> {
    pub(crate) outcome: Outcome<T>,
    pub(crate) pre: T,
    pub(crate) post: T,
    pub(crate) stats: AtomicStats,
}

impl<T> AtomicValue<T> {
    /// Whether the update was applied ([`Outcome::Applied`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, std::time::Duration::from_millis(10)))?;
    /// if !counter.compare_and_set(5, 6)?.succeeded() {
    ///     println!("it was not 5 (or the outcome is unknown)");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn succeeded(&self) -> bool {
        matches!(self.outcome, Outcome::Applied { .. })
    }

    /// How the update ended.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, std::time::Duration::from_millis(10)))?;
    /// let r = counter.increment()?;
    /// let unknown = matches!(r.outcome(), zk_recipes::Outcome::Unknown { .. });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn outcome(&self) -> &Outcome<T> {
        &self.outcome
    }

    /// The value read before the (last) write.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, std::time::Duration::from_millis(10)))?;
    /// let before: i64 = counter.increment()?.pre_value();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pre_value(&self) -> T
    where
        T: Clone,
    {
        self.pre.clone()
    }

    /// The value written (or, when nothing was, the value read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, std::time::Duration::from_millis(10)))?;
    /// let after: i64 = counter.increment()?.post_value();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn post_value(&self) -> T
    where
        T: Clone,
    {
        self.post.clone()
    }

    /// Tries and times.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, std::time::Duration::from_millis(10)))?;
    /// let tries = counter.increment()?.stats().optimistic_tries;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> AtomicStats {
        self.stats
    }
}

/// Curator's `PromotedToLock`: when the optimistic loop gives up, take an
/// [`InterProcessMutex`](crate::InterProcessMutex) on `lock_path` (within `timeout`) and try again
/// under it.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use std::time::Duration;
/// use zk_framework::RetryNTimes;
/// use zk_recipes::{DistributedAtomicLong, PromotedToLock};
/// let promoted = PromotedToLock::new("/counters/jobs-lock", Duration::from_secs(5))
///     .retry_policy(RetryNTimes::new(3, Duration::from_millis(10)));
/// let counter = DistributedAtomicLong::with_promotion(&client, "/counters/jobs", RetryNTimes::new(3, Duration::from_millis(10)), promoted)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PromotedToLock {
    pub(crate) lock_path: String,
    pub(crate) timeout: Duration,
    pub(crate) retry: Arc<dyn RetryPolicy>,
}

impl PromotedToLock {
    /// A promotion to the lock at `lock_path`, acquired within `timeout`;
    /// one try under the lock (Curator's default `RetryNTimes(0, 0)`).
    ///
    /// # Examples
    ///
    /// ```
    /// let p = zk_recipes::PromotedToLock::new("/counters/jobs-lock", std::time::Duration::from_secs(5));
    /// assert_eq!(p.lock_path(), "/counters/jobs-lock");
    /// ```
    pub fn new(lock_path: impl Into<String>, timeout: Duration) -> Self {
        PromotedToLock {
            lock_path: lock_path.into(),
            timeout,
            retry: Arc::new(RetryNTimes::new(0, Duration::ZERO)),
        }
    }

    /// The retry policy of the loop under the lock.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = zk_recipes::PromotedToLock::new("/l", Duration::from_secs(5))
    ///     .retry_policy(zk_framework::RetryNTimes::new(3, Duration::from_millis(10)));
    /// ```
    pub fn retry_policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.retry = Arc::new(policy);
        self
    }

    /// The lock's path.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = zk_recipes::PromotedToLock::new("/l", std::time::Duration::from_secs(5));
    /// assert_eq!(p.lock_path(), "/l");
    /// ```
    pub fn lock_path(&self) -> &str {
        &self.lock_path
    }
}
