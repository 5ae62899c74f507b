//! Distributed atomic counters that never count twice:
//! [`DistributedAtomicLong`], [`DistributedAtomicInteger`] and
//! [`DistributedAtomicValue`] (Curator's `recipes/atomic`).
//!
//! **Layout**, Curator's: one PERSISTENT node at the counter's path. A long
//! is 8 bytes big-endian, an integer 4 (the same bytes as a
//! [`SharedCount`](crate::SharedCount)), a value raw bytes. Reading: a
//! missing node or empty data is 0 (empty bytes for a value); data shorter
//! than the width is [`Error::CorruptValue`](crate::Error::CorruptValue) with the bytes; longer data is
//! read from its first 8 or 4 bytes, as Curator does. The node is created on
//! the first write (container parents), never empty.
//!
//! **Updates** are optimistic: read the node and its stat, compute the new
//! value, write it conditional on the version read (or create it when
//! missing). A write that lost the race (`BadVersion`, `NodeExists`,
//! `NoNode`) is tried again after the recipe's [`RetryPolicy`]'s pause; when
//! the policy gives up, the update is [`Outcome::NotApplied`], unless a
//! [`PromotedToLock`] was given: then the same loop runs once more under an
//! [`InterProcessMutex`](crate::InterProcessMutex) on the separate lock path, with the promotion's own
//! policy (one try by default) and a timeout. The lock orders promoted
//! writers only; every write stays versioned.
//!
//! **At most once.** Curator 5.4 applies an increment twice when the reply
//! to its versioned `setData` (or first `create`) is lost: its client
//! re-sends the write, meets `BadVersion` (`NodeExists`), takes that for a
//! lost race, re-reads the value it has just written and adds again; and it
//! reports failure for a `compareAndSet` or `initialize` that was applied.
//! Here a write whose reply may have been lost is never sent again blindly,
//! and its outcome is proven, not guessed.
//!
//! Overflow is checked: an increment of `i64::MAX` is
//! [`Error::Overflow`](crate::Error::Overflow), and nothing is written.
//!
//! # The proof after a lost reply: the write's marker
//!
//! Each write (a versioned `setData`, or the first `create`) goes out as one
//! transaction with a marker: an EPHEMERAL child `<path>/_c_<uuid>-once`,
//! written with the write or not at all. The counter's first write creates
//! it; the counter keeps it, and each later write sets it again (at its
//! version) in its transaction: a read and a transaction per update, two
//! requests, as Curator's read and write. The node's data stays Curator's
//! bare bytes, so Java and Rust share it (no Curator recipe lists a
//! counter's children). This is zk-framework's marked write
//! ([`zk_framework::recipe::Recipe::marked_write`]). After a lost reply the
//! client's retry loop does not write again: on the same session it looks
//! at the marker, after a `sync` on the connection it looks on, so that a
//! server that has not yet applied the lost write (a follower the client
//! reconnected to, behind the leader) cannot answer. Created, or
//! one version on: **applied**, by this writer ([`Proof::Marker`], as
//! certain as a reply, whatever other writers did meanwhile; each kept
//! marker serves one write at a time). Missing, or unchanged: **not
//! applied**, and the write is sent again (still conditional on the version
//! read, so it cannot land twice).
//!
//! Three cases leave the marker unable to tell, and the node's data is read
//! back instead: the session changed before the proof (the marker went with
//! it), someone deleted or wrote the kept marker meanwhile, or the node's
//! ACL refuses the marker's create (the write then goes out alone). The
//! read-back, after a `sync` too, finds data `d`, stat `s`, against the
//! base the writer read (version `v`, `czxid` `c`, `mzxid` `m`):
//!
//! * `s.czxid == c` and `s.mzxid == m`: nothing happened to the node since
//!   the read: not applied, sent again.
//! * `s.czxid == c`, `s.version == v + 1`, `d == bytes`, `s.mzxid > m`:
//!   exactly one write took the node from our base to our bytes: applied
//!   ([`Proof::ReadBack`]), with a bound: the read cannot tell *whose*
//!   write it was. Another client adding the same delta from the same base
//!   while this one was away makes both callers hear "applied" for one
//!   increment (the value on the server is right, never counted twice). A
//!   caller who cannot accept that (ids handed out from a counter) treats
//!   [`Proof::ReadBack`] as unknown.
//! * anything else: [`Outcome::Unknown`] with what was read.
//!
//! A first create read back: a persistent node with a `czxid` past the
//! client's last seen zxid before the create, version 0 and our bytes is
//! ours (same bound); no node means not applied; anything else is unknown.
//!
//! When no proof can be made in time (the `sync` or the read fails until
//! the retry policy or the caller's deadline gives up), the outcome is
//! [`Outcome::Unknown`] with nothing read: never a guess.
//!
//! The marker costs a transaction (two operations) instead of a plain
//! write. One consequence: while a counter that has written lives, its
//! node has a child (one per write the counter had in flight at once, at
//! most 16), deleted without waiting when the counter is dropped (and
//! gone with its session otherwise); another client deleting the counter
//! node meanwhile meets `NotEmpty` unless it deletes the children too
//! (`deleting_children_if_needed`). A counter whose marker was deleted
//! under it makes a new one at its next write.

use std::sync::Arc;
use std::time::Duration;

use zk_framework::{RetryNTimes, RetryPolicy};

use crate::{Proof, VersionedValue};

mod core;
mod metrics;
mod number;
mod value;

pub use number::{DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicNumber};
pub use value::DistributedAtomicValue;

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
    outcome: Outcome<T>,
    pre: T,
    post: T,
    stats: AtomicStats,
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
    lock_path: String,
    timeout: Duration,
    retry: Arc<dyn RetryPolicy>,
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

#[cfg(test)]
mod tests {
    use super::core::Codec;
    use crate::Error;

    #[test]
    fn numbers_read_as_curator_reads_them() {
        assert_eq!(<i64 as Codec>::decode("/c", &[]).unwrap(), 0);
        assert_eq!(<i64 as Codec>::decode("/c", &[0, 0, 0, 0, 0, 0, 1, 0]).unwrap(), 256);
        assert_eq!(
            <i64 as Codec>::decode("/c", &[0, 0, 0, 0, 0, 0, 0, 1, 9]).unwrap(),
            1,
            "longer: the first 8"
        );
        assert_eq!(
            <i64 as Codec>::decode("/c", &[0, 0, 0, 1]),
            Err(Error::CorruptValue {
                path: "/c".into(),
                expected: 8,
                bytes: vec![0, 0, 0, 1]
            })
        );
        assert_eq!(<i32 as Codec>::decode("/c", &[0xff, 0xff, 0xff, 0xff]).unwrap(), -1);
        assert!(<i32 as Codec>::decode("/c", &[0, 1]).is_err());
        assert_eq!(Codec::encode(&1i64), vec![0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(Codec::encode(&-2i32), vec![0xff, 0xff, 0xff, 0xfe]);
    }
}
