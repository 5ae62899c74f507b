//! Distributed atomic counters that never count twice:
//! [`DistributedAtomicLong`], [`DistributedAtomicInteger`] and
//! [`DistributedAtomicValue`] (Curator's `recipes/atomic`).
//!
//! **Layout**, Curator's: one PERSISTENT node at the counter's path. A long
//! is 8 bytes big-endian, an integer 4 (the same bytes as a
//! [`SharedCount`](crate::SharedCount)), a value raw bytes. Reading: a
//! missing node or empty data is 0 (empty bytes for a value); data shorter
//! than the width is [`Error::CorruptValue`] with the bytes; longer data is
//! read from its first 8 or 4 bytes, as Curator does. The node is created on
//! the first write (container parents), never empty.
//!
//! **Updates** are optimistic: read the node and its stat, compute the new
//! value, write it conditional on the version read (or create it when
//! missing). A write that lost the race (`BadVersion`, `NodeExists`,
//! `NoNode`) is tried again after the recipe's [`RetryPolicy`]'s pause; when
//! the policy gives up, the update is [`Outcome::NotApplied`], unless a
//! [`PromotedToLock`] was given: then the same loop runs once more under an
//! [`InterProcessMutex`] on the separate lock path, with the promotion's own
//! policy (one try by default) and a timeout. The lock orders promoted
//! writers only; every write stays versioned.
//!
//! **At most once.** Curator 5.4 applies an increment twice when the reply
//! to its versioned `setData` (or first `create`) is lost: its client
//! re-sends the write, meets `BadVersion` (`NodeExists`), takes that for a
//! lost race, re-reads the value it has just written and adds again; and it
//! reports failure for a `compareAndSet` or `initialize` that was applied.
//! Here a write whose reply may have been lost is never sent again blindly:
//! the node is read back and the read proves the outcome (applied, with
//! [`Proof::ReadBack`]; or not applied, and the write is sent again), or the
//! update ends [`Outcome::Unknown`] with what was read, never retried. The
//! rules and their one bound (another writer producing the same bytes from
//! the same version in the same round trip cannot be told from us: the
//! server's value stays right, but both writers hear "applied") are
//! written out at [`Proof::ReadBack`].
//!
//! Overflow is checked: an increment of `i64::MAX` is
//! [`Error::Overflow`], and nothing is written.
//!
//! # The proof after a lost reply
//!
//! The writer read the node at version `v` (its `czxid` `c`, `mzxid` `m`)
//! and sent `setData(bytes, v)`; the reply was lost. The managed client's
//! retry loop runs the attempt again, but that attempt reads the node
//! instead of writing; it finds data `d`, stat `s`:
//!
//! * `s.czxid == c` and `s.mzxid == m`: nothing happened to the node since
//!   the read (a zxid names one transaction): not applied, and the write is
//!   sent again (still conditional on `v`, so it cannot land twice).
//! * `s.czxid == c`, `s.version == v + 1`, `d == bytes`, `s.mzxid > m`:
//!   exactly one write took the node from our base to our bytes: applied
//!   ([`Proof::ReadBack`]).
//! * anything else: [`Outcome::Unknown`] with what was read.
//!
//! Why the second rule is sound for the value and bounded for the report:
//! any other writer that produced `v + 1` with our bytes either wrote
//! conditionally on `v` (then its write and ours exclude each other: one of
//! them failed, so the node holds one change, never two) or unconditionally
//! (Curator's `forceSet`). The value on the server is right in both cases.
//! What the read cannot tell is *whose* change it was: ZooKeeper keeps no
//! writer in the stat, and Curator's bare 4 or 8 bytes leave no room for a
//! mark. For a counter that case is another client adding the same delta
//! from the same base within our lost round trip; both callers are then
//! told "applied" for one increment. The outcome names its proof so that a
//! caller who cannot accept that (ids handed out from a counter) can treat
//! [`Proof::ReadBack`] as unknown.
//!
//! A first create whose reply was lost is proven the same way: the client's
//! last seen zxid `z` is noted before the create; a persistent node with
//! `czxid > z`, version 0 and our bytes is ours (same bound), no node means
//! not applied (the create is sent again), anything else is unknown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_framework::{CreateMode, CuratorFramework, Error as ZkError, RetryDecision, RetryNTimes, RetryPolicy, Stat};

use crate::once::{self, Base, Written};
use crate::shared_value::check_path;
use crate::{Error, InterProcessMutex, Proof, Result, VersionedValue};

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
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// Applied, once; how that is known.
    Applied {
        /// The reply, or a read-back after a lost reply (see its bound).
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
    /// let before = *counter.increment()?.pre_value();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pre_value(&self) -> &T {
        &self.pre
    }

    /// The value written (or, when nothing was, the value read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, std::time::Duration::from_millis(10)))?;
    /// let after = *counter.increment()?.post_value();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn post_value(&self) -> &T {
        &self.post
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
/// [`InterProcessMutex`] on `lock_path` (within `timeout`) and try again
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

/// How a counter's type reads and writes its node.
trait Codec: Sized + Clone + PartialEq {
    /// The value of a missing node.
    fn missing() -> Self;
    fn decode(path: &str, bytes: &[u8]) -> Result<Self>;
    fn encode(&self) -> Vec<u8>;
}

macro_rules! number_codec {
    ($t:ty, $width:expr) => {
        impl Codec for $t {
            fn missing() -> Self {
                0
            }
            fn decode(path: &str, bytes: &[u8]) -> Result<Self> {
                if bytes.is_empty() {
                    return Ok(0);
                }
                match bytes.get(..$width).and_then(|b| <[u8; $width]>::try_from(b).ok()) {
                    Some(b) => Ok(<$t>::from_be_bytes(b)),
                    None => Err(Error::CorruptValue {
                        path: path.to_string(),
                        expected: $width,
                        bytes: bytes.to_vec(),
                    }),
                }
            }
            fn encode(&self) -> Vec<u8> {
                self.to_be_bytes().to_vec()
            }
        }
    };
}
number_codec!(i64, 8);
number_codec!(i32, 4);

impl Codec for Vec<u8> {
    fn missing() -> Self {
        Vec::new()
    }
    fn decode(_: &str, bytes: &[u8]) -> Result<Self> {
        Ok(bytes.to_vec())
    }
    fn encode(&self) -> Vec<u8> {
        self.clone()
    }
}

/// One try's end.
enum Try<T> {
    /// Settled (applied, refused, unknown).
    Done(Outcome<T>, T, T),
    /// Lost the race; the value read.
    Lost(T),
}

/// How an optimistic loop ended.
enum Loop<T> {
    /// Settled: the outcome, the value read, the value written.
    Settled(Outcome<T>, T, T),
    /// The policy gave up; the last value read.
    GaveUp(T),
}

/// What every counter shares: the node, the policy, the promotion.
struct Core {
    client: CuratorFramework,
    path: String,
    retry: Arc<dyn RetryPolicy>,
    promoted: Option<(InterProcessMutex, PromotedToLock)>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counter")
            .field("path", &self.path)
            .field("retry", &self.retry)
            .field("promoted", &self.promoted.as_ref().map(|(_, p)| p))
            .finish()
    }
}

/// A change: from the value read (and whether the node exists) to the new
/// value, `None` to write nothing.
type Change<'a, T> = dyn FnMut(&T, bool) -> Result<Option<T>> + 'a;

impl Core {
    fn new(
        client: &CuratorFramework,
        path: &str,
        retry: Arc<dyn RetryPolicy>,
        promoted: Option<PromotedToLock>,
    ) -> Result<Core> {
        check_path(path)?;
        let promoted = match promoted {
            Some(p) => Some((InterProcessMutex::new(client, &p.lock_path)?, p)),
            None => None,
        };
        Ok(Core {
            client: client.clone(),
            path: path.to_string(),
            retry,
            promoted,
        })
    }

    fn read<T: Codec>(&self) -> Result<(T, Option<Stat>)> {
        match self.client.get_data(&self.path) {
            Ok((d, s)) => Ok((T::decode(&self.path, &d)?, Some(s))),
            Err(ZkError::NoNode { .. }) => Ok((T::missing(), None)),
            Err(e) => Err(e.into()),
        }
    }

    fn get<T: Codec>(&self) -> Result<T> {
        self.read().map(|(v, _)| v)
    }

    fn try_once<T: Codec>(&self, change: &mut Change<'_, T>) -> Result<Try<T>> {
        let (pre, stat) = self.read::<T>()?;
        let Some(new) = change(&pre, stat.is_some())? else {
            return Ok(Try::Done(Outcome::NotApplied, pre.clone(), pre));
        };
        let bytes = new.encode();
        let written = match &stat {
            Some(s) => once::set_versioned(&self.client, &self.path, &bytes, &Base::from(s))?,
            None => once::create_once(&self.client, &self.path, &bytes)?,
        };
        Ok(match written {
            Written::Applied { read_back, .. } => {
                let proof = if read_back { Proof::ReadBack } else { Proof::Reply };
                Try::Done(Outcome::Applied { proof }, pre, new)
            }
            Written::Conflict | Written::Missing => Try::Lost(pre),
            Written::Unknown { read } => {
                let read = read.and_then(|(d, s)| match T::decode(&self.path, &d) {
                    Ok(v) => Some(VersionedValue::new(v, &s)),
                    Err(e) => {
                        log::warn!("counter {}: the read-back found no value of this kind: {e}", self.path);
                        None
                    }
                });
                Try::Done(Outcome::Unknown { read }, pre, new)
            }
        })
    }

    /// The optimistic loop under `policy`: settled, or lost (the last value
    /// read) when the policy gave up.
    fn optimistic<T: Codec>(
        &self,
        change: &mut Change<'_, T>,
        policy: &dyn RetryPolicy,
        tries: &mut u32,
    ) -> Result<Loop<T>> {
        let start = Instant::now();
        let mut retries = 0;
        loop {
            *tries += 1;
            match self.try_once(change)? {
                Try::Done(o, pre, post) => return Ok(Loop::Settled(o, pre, post)),
                Try::Lost(pre) => match policy.next_retry(retries, start.elapsed()) {
                    RetryDecision::GiveUp => return Ok(Loop::GaveUp(pre)),
                    RetryDecision::RetryAfter(d) => {
                        self.client.pause(d)?;
                        retries += 1;
                    }
                },
            }
        }
    }

    /// An update: the optimistic loop, then the promotion.
    fn update<T: Codec>(&self, change: &mut Change<'_, T>) -> Result<AtomicValue<T>> {
        let mut stats = AtomicStats::default();
        let t0 = Instant::now();
        let first = self.optimistic(change, &*self.retry, &mut stats.optimistic_tries)?;
        stats.optimistic_time = t0.elapsed();
        let pre = match first {
            Loop::Settled(outcome, pre, post) => {
                return Ok(AtomicValue {
                    outcome,
                    pre,
                    post,
                    stats,
                })
            }
            Loop::GaveUp(pre) => pre,
        };
        let Some((mutex, promoted)) = &self.promoted else {
            return Ok(not_applied(pre, stats));
        };
        let t1 = Instant::now();
        let result = match mutex.try_acquire_for(promoted.timeout)? {
            None => Ok(not_applied(pre, stats)),
            Some(_guard) => match self.optimistic(change, &*promoted.retry, &mut stats.promoted_tries)? {
                Loop::Settled(outcome, pre, post) => Ok(AtomicValue {
                    outcome,
                    pre,
                    post,
                    stats,
                }),
                Loop::GaveUp(pre) => Ok(not_applied(pre, stats)),
            },
        };
        result.map(|mut v| {
            v.stats.promoted_time = t1.elapsed();
            v
        })
    }

    /// One try, no retry, no promotion (`compare_and_set`, `initialize`).
    fn single<T: Codec>(&self, change: &mut Change<'_, T>) -> Result<AtomicValue<T>> {
        let t0 = Instant::now();
        let (outcome, pre, post) = match self.try_once(change)? {
            Try::Done(o, pre, post) => (o, pre, post),
            Try::Lost(pre) => (Outcome::NotApplied, pre.clone(), pre),
        };
        let stats = AtomicStats {
            optimistic_tries: 1,
            optimistic_time: t0.elapsed(),
            ..AtomicStats::default()
        };
        Ok(AtomicValue {
            outcome,
            pre,
            post,
            stats,
        })
    }

    /// An unversioned write, or a create when missing (each is harmless to
    /// repeat: the node ends with these bytes).
    fn force_set(&self, bytes: Vec<u8>) -> Result<()> {
        match self.client.set_data(&self.path, bytes.clone(), None) {
            Ok(_) => return Ok(()),
            Err(ZkError::NoNode { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Persistent)
            .with_data(bytes.clone())
            .for_path(&self.path)
        {
            Ok(_) => Ok(()),
            Err(ZkError::NodeExists { .. }) => {
                self.client.set_data(&self.path, bytes, None)?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}

fn not_applied<T: Clone>(pre: T, stats: AtomicStats) -> AtomicValue<T> {
    AtomicValue {
        outcome: Outcome::NotApplied,
        post: pre.clone(),
        pre,
        stats,
    }
}

macro_rules! atomic_number {
    ($name:ident, $t:ty, $width:literal, $curator:literal, $example_path:literal) => {
        #[doc = concat!("A distributed `", stringify!($t), "` counter (Curator's `", $curator, "`): ", $width,
            " bytes big-endian in one node, updated at most once per call (see the [module](crate::atomic)).")]
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// use std::time::Duration;
        /// use zk_framework::RetryNTimes;
        #[doc = concat!("let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
            "\", RetryNTimes::new(10, Duration::from_millis(10)))?;")]
        /// let r = counter.increment()?;
        /// assert!(r.succeeded());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[derive(Debug)]
        pub struct $name {
            core: Core,
        }

        impl $name {
            /// A counter at `path` whose optimistic loop retries under
            /// `policy` (the node is created at the first write).
            ///
            /// # Errors
            ///
            /// [`Error::ZooKeeper`] with `InvalidPath` for a bad path;
            /// [`Error::InvalidArgument`] for the root.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// use std::time::Duration;
            #[doc = concat!("let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryNTimes::new(10, Duration::from_millis(10)))?;")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn new(client: &CuratorFramework, path: &str, policy: impl RetryPolicy + 'static) -> Result<Self> {
                Ok($name {
                    core: Core::new(client, path, Arc::new(policy), None)?,
                })
            }

            /// As `new`, with a promotion to a lock when the optimistic
            /// loop gives up.
            ///
            /// # Errors
            ///
            /// As `new`; a bad lock path.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// use std::time::Duration;
            /// let promoted = zk_recipes::PromotedToLock::new("/counters/lock", Duration::from_secs(5));
            #[doc = concat!("let counter = zk_recipes::", stringify!($name), "::with_promotion(&client, \"", $example_path,
                "\", zk_framework::RetryNTimes::new(3, Duration::from_millis(10)), promoted)?;")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn with_promotion(
                client: &CuratorFramework,
                path: &str,
                policy: impl RetryPolicy + 'static,
                promoted: PromotedToLock,
            ) -> Result<Self> {
                Ok($name {
                    core: Core::new(client, path, Arc::new(policy), Some(promoted))?,
                })
            }

            /// The counter's path.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            #[doc = concat!("assert_eq!(counter.path(), \"", $example_path, "\");")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn path(&self) -> &str {
                &self.core.path
            }

            /// The current value (0 when the node is missing or empty).
            ///
            /// # Errors
            ///
            /// The read's error; [`Error::CorruptValue`] for data shorter
            /// than the width.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            /// let n = counter.get()?;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn get(&self) -> Result<$t> {
                self.core.get()
            }

            /// Adds 1.
            ///
            /// # Errors
            ///
            /// [`Error::Overflow`] (nothing written); [`Error::CorruptValue`];
            /// a read's or write's error after the client's retries, when
            /// nothing was applied (an update whose outcome is in doubt is
            /// [`Outcome::Unknown`], not an error); the promotion's lock
            /// errors.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            /// let r = counter.increment()?;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn increment(&self) -> Result<AtomicValue<$t>> {
                self.add(1)
            }

            /// Subtracts 1.
            ///
            /// # Errors
            ///
            /// As [`increment`](Self::increment).
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            /// let r = counter.decrement()?;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn decrement(&self) -> Result<AtomicValue<$t>> {
                self.subtract(1)
            }

            /// Adds `delta` (checked).
            ///
            /// # Errors
            ///
            /// As [`increment`](Self::increment).
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            /// let r = counter.add(10)?;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn add(&self, delta: $t) -> Result<AtomicValue<$t>> {
                let path = &self.core.path;
                self.core.update(&mut |v: &$t, _| {
                    v.checked_add(delta).map(Some).ok_or_else(|| Error::Overflow {
                        path: path.clone(),
                        value: i64::from(*v),
                        operation: "+",
                        operand: i64::from(delta),
                    })
                })
            }

            /// Subtracts `delta` (checked).
            ///
            /// # Errors
            ///
            /// As [`increment`](Self::increment).
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            /// let r = counter.subtract(10)?;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn subtract(&self, delta: $t) -> Result<AtomicValue<$t>> {
                let path = &self.core.path;
                self.core.update(&mut |v: &$t, _| {
                    v.checked_sub(delta).map(Some).ok_or_else(|| Error::Overflow {
                        path: path.clone(),
                        value: i64::from(*v),
                        operation: "-",
                        operand: i64::from(delta),
                    })
                })
            }

            /// Sets `new` if the counter holds `expected`: one try (no
            /// retry, no promotion); a missing node fails, as Curator's.
            /// Never reports failure for a write that was applied.
            ///
            /// # Errors
            ///
            /// As [`increment`](Self::increment), without overflow.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            /// let r = counter.compare_and_set(5, 6)?;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn compare_and_set(&self, expected: $t, new: $t) -> Result<AtomicValue<$t>> {
                self.core
                    .single(&mut |v: &$t, exists| Ok((exists && *v == expected).then_some(new)))
            }

            /// Sets `new` whatever the value is, through the optimistic
            /// loop and the promotion.
            ///
            /// # Errors
            ///
            /// As [`increment`](Self::increment), without overflow.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            /// let r = counter.try_set(100)?;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_set(&self, new: $t) -> Result<AtomicValue<$t>> {
                self.core.update(&mut |_: &$t, _| Ok(Some(new)))
            }

            /// Sets `new` with an unversioned write (or a create), as
            /// Curator's `forceSet`.
            ///
            /// # Errors
            ///
            /// The write's error after the client's retries.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            /// counter.force_set(0)?;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn force_set(&self, new: $t) -> Result<()> {
                self.core.force_set(Codec::encode(&new))
            }

            /// Creates the counter with `value` if it does not exist: one
            /// try; [`Outcome::NotApplied`] when it exists. A lost create
            /// reply is settled by a read-back.
            ///
            /// # Errors
            ///
            /// As [`increment`](Self::increment), without overflow.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            #[doc = concat!("# let counter = zk_recipes::", stringify!($name), "::new(&client, \"", $example_path,
                "\", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;")]
            /// let created = counter.initialize(100)?.succeeded();
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn initialize(&self, value: $t) -> Result<AtomicValue<$t>> {
                self.core.single(&mut |_: &$t, exists| Ok((!exists).then_some(value)))
            }
        }
    };
}

atomic_number!(
    DistributedAtomicLong,
    i64,
    "8",
    "DistributedAtomicLong",
    "/counters/jobs"
);
atomic_number!(
    DistributedAtomicInteger,
    i32,
    "4",
    "DistributedAtomicInteger",
    "/counters/small"
);

/// A distributed byte value with atomic updates (Curator's
/// `DistributedAtomicValue`): raw bytes in one node; a missing node reads
/// as empty bytes.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use zk_recipes::DistributedAtomicValue;
/// let value = DistributedAtomicValue::new(&client, "/values/leader", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
/// let r = value.compare_and_set(b"a", b"b".to_vec())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DistributedAtomicValue {
    core: Core,
}

impl DistributedAtomicValue {
    /// A value at `path` whose optimistic loop retries under `policy`.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] with `InvalidPath` for a bad path;
    /// [`Error::InvalidArgument`] for the root.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, policy: impl RetryPolicy + 'static) -> Result<Self> {
        Ok(DistributedAtomicValue {
            core: Core::new(client, path, Arc::new(policy), None)?,
        })
    }

    /// As `new`, with a promotion to a lock.
    ///
    /// # Errors
    ///
    /// As `new`; a bad lock path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let promoted = zk_recipes::PromotedToLock::new("/values/a-lock", std::time::Duration::from_secs(5));
    /// let value = zk_recipes::DistributedAtomicValue::with_promotion(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)), promoted)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_promotion(
        client: &CuratorFramework,
        path: &str,
        policy: impl RetryPolicy + 'static,
        promoted: PromotedToLock,
    ) -> Result<Self> {
        Ok(DistributedAtomicValue {
            core: Core::new(client, path, Arc::new(policy), Some(promoted))?,
        })
    }

    /// The current bytes (empty when the node is missing).
    ///
    /// # Errors
    ///
    /// The read's error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let bytes = value.get()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self) -> Result<Vec<u8>> {
        self.core.get()
    }

    /// Sets `new` if the node holds `expected`: one try; a missing node
    /// fails.
    ///
    /// # Errors
    ///
    /// A read's or write's error when nothing was applied.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = value.compare_and_set(b"a", b"b".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compare_and_set(&self, expected: &[u8], new: Vec<u8>) -> Result<AtomicValue<Vec<u8>>> {
        self.core
            .single(&mut |v: &Vec<u8>, exists| Ok((exists && v.as_slice() == expected).then(|| new.clone())))
    }

    /// Sets `new` through the optimistic loop and the promotion.
    ///
    /// # Errors
    ///
    /// As [`compare_and_set`](Self::compare_and_set); the promotion's lock
    /// errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = value.try_set(b"c".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_set(&self, new: Vec<u8>) -> Result<AtomicValue<Vec<u8>>> {
        self.core.update(&mut |_: &Vec<u8>, _| Ok(Some(new.clone())))
    }

    /// Sets `new` with an unversioned write (or a create).
    ///
    /// # Errors
    ///
    /// The write's error after the client's retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// value.force_set(b"d".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn force_set(&self, new: Vec<u8>) -> Result<()> {
        self.core.force_set(new)
    }

    /// Creates the node with `value` if it does not exist: one try.
    ///
    /// # Errors
    ///
    /// As [`compare_and_set`](Self::compare_and_set).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let created = value.initialize(b"first".to_vec())?.succeeded();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn initialize(&self, value: Vec<u8>) -> Result<AtomicValue<Vec<u8>>> {
        self.core
            .single(&mut |_: &Vec<u8>, exists| Ok((!exists).then(|| value.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
