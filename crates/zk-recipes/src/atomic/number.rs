//! [`DistributedAtomicNumber`]: a counter of a number type written once,
//! with Curator's two names for its instances ([`DistributedAtomicLong`],
//! [`DistributedAtomicInteger`]), in the shape of `lock_api`'s generic
//! types.

use std::marker::PhantomData;
use std::sync::Arc;

use zk_framework::{CuratorFramework, RetryPolicy};

use super::core::{Codec, Core};
use crate::atomic::outcome::{AtomicValue, PromotedToLock};
use crate::error::{Error, Result};

/// The number types a [`DistributedAtomicNumber`] counts in: `i64` (8 bytes)
/// and `i32` (4 bytes). Implemented for those two only (the trait cannot be
/// named outside this crate).
pub trait Number: Codec + Copy + std::fmt::Debug + Into<i64> + Send + Sync + 'static {
    /// One.
    const ONE: Self;
    /// `self + d`, `None` on overflow.
    fn checked_add(self, d: Self) -> Option<Self>;
    /// `self - d`, `None` on overflow.
    fn checked_sub(self, d: Self) -> Option<Self>;
}

impl Number for i64 {
    const ONE: Self = 1;
    fn checked_add(self, d: Self) -> Option<Self> {
        i64::checked_add(self, d)
    }
    fn checked_sub(self, d: Self) -> Option<Self> {
        i64::checked_sub(self, d)
    }
}

impl Number for i32 {
    const ONE: Self = 1;
    fn checked_add(self, d: Self) -> Option<Self> {
        i32::checked_add(self, d)
    }
    fn checked_sub(self, d: Self) -> Option<Self> {
        i32::checked_sub(self, d)
    }
}

/// A distributed `i64` counter (Curator's `DistributedAtomicLong`): 8 bytes
/// big-endian in one node, updated at most once per call (see the
/// [module](crate::atomic)).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use std::time::Duration;
/// use zk_framework::RetryNTimes;
/// let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", RetryNTimes::new(10, Duration::from_millis(10)))?;
/// let r = counter.increment()?;
/// assert!(r.succeeded());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type DistributedAtomicLong = DistributedAtomicNumber<i64>;

/// A distributed `i32` counter (Curator's `DistributedAtomicInteger`): 4
/// bytes big-endian in one node (the bytes of a
/// [`SharedCount`](crate::SharedCount)), updated at most once per call.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use std::time::Duration;
/// use zk_framework::RetryNTimes;
/// let counter = zk_recipes::DistributedAtomicInteger::new(&client, "/counters/small", RetryNTimes::new(10, Duration::from_millis(10)))?;
/// let r = counter.add(5)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type DistributedAtomicInteger = DistributedAtomicNumber<i32>;

/// A distributed counter of a number type (`i64` or `i32`): use its names,
/// [`DistributedAtomicLong`] and [`DistributedAtomicInteger`]. Every
/// method is written once here for both.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use zk_recipes::DistributedAtomicNumber;
/// let counter: DistributedAtomicNumber<i64> =
///     DistributedAtomicNumber::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DistributedAtomicNumber<T: Number> {
    core: Core,
    number: PhantomData<fn() -> T>,
}

impl<T: Number> DistributedAtomicNumber<T> {
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
    /// let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryNTimes::new(10, Duration::from_millis(10)))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, policy: impl RetryPolicy + 'static) -> Result<Self> {
        Ok(DistributedAtomicNumber {
            core: Core::new(client, path, Arc::new(policy), None)?,
            number: PhantomData,
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
    /// let counter = zk_recipes::DistributedAtomicLong::with_promotion(&client, "/counters/jobs", zk_framework::RetryNTimes::new(3, Duration::from_millis(10)), promoted)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_promotion(
        client: &CuratorFramework,
        path: &str,
        policy: impl RetryPolicy + 'static,
        promoted: PromotedToLock,
    ) -> Result<Self> {
        Ok(DistributedAtomicNumber {
            core: Core::new(client, path, Arc::new(policy), Some(promoted))?,
            number: PhantomData,
        })
    }

    /// The counter's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// assert_eq!(counter.path(), "/counters/jobs");
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
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let n = counter.get()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self) -> Result<T> {
        self.core.get()
    }

    /// Adds 1.
    ///
    /// # Errors
    ///
    /// [`Error::Overflow`] (nothing written); [`Error::CorruptValue`];
    /// a read's or write's error after the client's retries, when
    /// nothing was applied (an update whose outcome is in doubt is
    /// [`Outcome::Unknown`](super::Outcome::Unknown), not an error); the promotion's lock
    /// errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = counter.increment()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn increment(&self) -> Result<AtomicValue<T>> {
        self.add(T::ONE)
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
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = counter.decrement()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decrement(&self) -> Result<AtomicValue<T>> {
        self.subtract(T::ONE)
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
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = counter.add(10)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add(&self, delta: T) -> Result<AtomicValue<T>> {
        let path = &self.core.path;
        self.core.update(&mut |v: &T, _| {
            T::checked_add(*v, delta).map(Some).ok_or_else(|| Error::Overflow {
                path: path.clone(),
                value: (*v).into(),
                operation: "+",
                operand: delta.into(),
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
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = counter.subtract(10)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subtract(&self, delta: T) -> Result<AtomicValue<T>> {
        let path = &self.core.path;
        self.core.update(&mut |v: &T, _| {
            T::checked_sub(*v, delta).map(Some).ok_or_else(|| Error::Overflow {
                path: path.clone(),
                value: (*v).into(),
                operation: "-",
                operand: delta.into(),
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
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = counter.compare_and_set(5, 6)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compare_and_set(&self, expected: T, new: T) -> Result<AtomicValue<T>> {
        self.core
            .single(&mut |v: &T, exists| Ok((exists && *v == expected).then_some(new)))
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
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = counter.try_set(100)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_set(&self, new: T) -> Result<AtomicValue<T>> {
        self.core.update(&mut |_: &T, _| Ok(Some(new)))
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
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// counter.force_set(0)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn force_set(&self, new: T) -> Result<()> {
        self.core.force_set(Codec::encode(&new))
    }

    /// Creates the counter with `value` if it does not exist: one
    /// try; [`Outcome::NotApplied`](super::Outcome::NotApplied) when it exists. A lost create
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
    /// # let counter = zk_recipes::DistributedAtomicLong::new(&client, "/counters/jobs", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let created = counter.initialize(100)?.succeeded();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn initialize(&self, value: T) -> Result<AtomicValue<T>> {
        self.core.single(&mut |_: &T, exists| Ok((!exists).then_some(value)))
    }
}
