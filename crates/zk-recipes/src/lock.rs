//! The raw lock layer and the one generic guard (in the spirit of `lock_api`).
//!
//! Every lock kind implements [`InterProcessLock`]: acquire until a deadline
//! returns a [`Holding`], release consumes it. [`RawLock`] adds the guard's
//! marker (`!Send` for the reentrant locks, `Send` for the semaphore mutex).
//! [`LockGuard`] (borrowing the lock) and [`ArcLockGuard`] (owning an `Arc` of
//! it) are written once for every kind; the timed acquires all funnel into
//! [`acquire_until`], which puts the whole acquire under the deadline
//! ([`zk_framework::deadline`]): the wait for a connection, retries, replies.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use crate::error::{Error, Result};
use crate::holding::{Holding, LockEvent, LockStatus};

/// What every lock is, for [`crate::MultiLock`] and the guards: acquire a
/// holding until a deadline, release it. Sealed: the locks of this crate
/// implement it (a `Holding` can only be made by them), and nothing else can:
///
/// ```compile_fail
/// use std::time::Instant;
/// use zk_recipes::{Holding, InterProcessLock, Result};
/// struct Mine;
/// impl InterProcessLock for Mine {
///     fn acquire_holding(&self, _: Option<Instant>) -> Result<Option<Holding>> { Ok(None) }
///     fn release_holding(&self, _: Holding) -> Result<()> { Ok(()) }
///     fn release(&self) -> Result<()> { Ok(()) }
///     fn is_acquired_in_this_process(&self) -> bool { false }
///     fn order_key(&self) -> (String, u8) { (String::new(), 0) }
/// }
/// ```
pub trait InterProcessLock: crate::sealed::Sealed + Send + Sync {
    /// Acquires until `deadline` (`None`: no limit): `Ok(None)` when it passes
    /// first. Callers normally use the lock's `acquire`/`try_acquire_*`
    /// methods, which put the whole call under the deadline.
    ///
    /// # Errors
    ///
    /// The lock's acquire errors (see each lock).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// if let Some(h) = m.acquire_holding(None)? {
    ///     m.release_holding(h)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_holding(&self, deadline: Option<Instant>) -> Result<Option<Holding>>;

    /// Releases a holding this lock handed out.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] for a holding that is not this thread's (reentrant
    /// locks) or not this lock's; [`Error::LockLost`] when it had been lost
    /// (nothing of anyone else's is deleted); [`Error::ZooKeeper`] when the
    /// delete failed (it goes on in the background).
    ///
    /// # Examples
    ///
    /// See [`InterProcessLock::acquire_holding`].
    fn release_holding(&self, holding: Holding) -> Result<()>;

    /// Curator's guard-less release: one level held by the calling thread (any
    /// thread for the semaphore mutex), taken by an earlier acquire whose
    /// holding was dropped without a release.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] when there is nothing to release; as
    /// [`InterProcessLock::release_holding`] otherwise.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(InterProcessLock::release(&m).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn release(&self) -> Result<()>;

    /// Whether this instance holds the lock (any thread).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(!InterProcessLock::is_acquired_in_this_process(&m));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn is_acquired_in_this_process(&self) -> bool;

    /// The canonical order of a multi-lock: (server path, rank), where a write
    /// lock ranks before the read lock of the same path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert_eq!(m.order_key().0, "/locks/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn order_key(&self) -> (String, u8);

    /// Identifies the lock instance (two halves of one read/write lock share
    /// their instance).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert_eq!(m.instance_id(), m.instance_id());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn instance_id(&self) -> usize {
        self as *const Self as *const () as usize
    }
}

/// A lock with a guard: [`InterProcessLock`] plus the guard's marker.
pub trait RawLock: InterProcessLock {
    /// `NotSend` makes the guard `!Send` (reentrant locks: ownership belongs to
    /// the acquiring thread); `()` leaves it `Send`.
    type GuardMarker;
}

/// The marker of `!Send` guards.
pub(crate) type NotSend = PhantomData<*const ()>;

/// The one slow path of every timed acquire: the whole acquire runs under
/// `deadline` (each recipe sends its requests through a handle bounded by it,
/// [`CuratorFramework::with_deadline`](zk_framework::CuratorFramework::with_deadline)). A deadline that passes while the lock is held by someone else
/// is `Ok(None)`; one that passes while ZooKeeper does not answer is
/// [`Error::NoAnswer`], and one that passes while the client cannot connect
/// is the reason it cannot.
pub(crate) fn acquire_until<L: InterProcessLock + ?Sized>(
    lock: &L,
    deadline: Option<Instant>,
) -> Result<Option<Holding>> {
    match lock.acquire_holding(deadline) {
        Err(e) if e.is_deadline() => Err(no_answer(e, || lock.order_key().0)),
        Ok(None) if deadline.is_none() => Err(Error::ZooKeeper(zk_framework::Error::Closed)),
        r => r,
    }
}

/// A request left unanswered at the deadline, as the caller is told it.
pub(crate) fn no_answer(e: Error, path: impl FnOnce() -> String) -> Error {
    match e {
        Error::ZooKeeper(zk_framework::Error::DeadlineExceeded) => Error::NoAnswer { path: path() },
        e => e,
    }
}

/// An acquire without a deadline: it holds or fails.
pub(crate) fn acquire_blocking<L: InterProcessLock + ?Sized>(lock: &L) -> Result<Holding> {
    acquire_until(lock, None)?.ok_or(Error::ZooKeeper(zk_framework::Error::Closed))
}

/// Converts a timeout to a deadline; a timeout too large to represent means
/// "no deadline" (as `crossbeam-channel` does).
pub(crate) fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

macro_rules! guard_common {
    () => {
        /// Whether the lock is held, uncertain (suspended, read-only) or lost.
        /// Answered locally, at once.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// assert_eq!(g.status(), zk_recipes::LockStatus::Held);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn status(&self) -> LockStatus {
            self.holding().status()
        }

        /// `status() == Held`.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// assert!(g.is_held());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn is_held(&self) -> bool {
            self.status() == LockStatus::Held
        }

        /// `Ok` only while the lock is certainly held: call it before each side
        /// effect (see [`Holding::check`]).
        ///
        /// # Errors
        ///
        /// [`Error::LockLost`], or [`Error::LockUncertain`] while the
        /// connection is suspended, read-only or silent for longer than the
        /// read timeout.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// g.check()?; // then write
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn check(&self) -> Result<()> {
            self.holding().check()
        }

        /// The instant until which the lock is certainly still held (see
        /// [`Holding::safe_until`]); `None` once lost or released.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// assert!(g.safe_until().expect("held") > std::time::Instant::now());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn safe_until(&self) -> Option<std::time::Instant> {
            self.holding().safe_until()
        }

        /// Releases now, waiting for the lock node's delete at most `bound`
        /// (instead of the default: a tenth of the session timeout, between
        /// 100 ms and 2 s); a delete not answered by then goes on in the
        /// background. The result is [`release`](Self::release)'s.
        ///
        /// # Errors
        ///
        /// As [`release`](Self::release).
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// m.acquire()?.release_within(std::time::Duration::from_millis(200))?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn release_within(self, bound: std::time::Duration) -> Result<()> {
            self.holding().set_release_bound(bound);
            self.release()
        }

        /// Loss events (`Suspended`, `HorizonPassed`, `Reconnected`, `Lost`); the channel ends
        /// at a normal release (see [`Holding::events`]).
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// let rx = g.events();
        /// assert!(rx.try_recv().is_err());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn events(&self) -> Receiver<LockEvent> {
            self.holding().events()
        }

        /// The old name of [`events`](Self::events).
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// #[allow(deprecated)]
        /// let rx = g.loss_receiver();
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[deprecated(since = "0.1.0", note = "every recipe's event channel is `events()`")]
        pub fn loss_receiver(&self) -> Receiver<LockEvent> {
            self.events()
        }

        /// The fencing token: the lock node's czxid (a multi-lock's largest).
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// let token = g.fencing_token();
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn fencing_token(&self) -> i64 {
            self.holding().fencing_token()
        }

        /// Each member's fencing token (one for a single lock).
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// assert_eq!(g.fencing_tokens(), vec![g.fencing_token()]);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn fencing_tokens(&self) -> Vec<i64> {
            self.holding().fencing_tokens()
        }

        /// The lock node's path.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// println!("{}", g.lock_path());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn lock_path(&self) -> String {
            self.holding().node()
        }

        /// Writes that commit only while this lock is held: a ZooKeeper multi
        /// with a check of the lock node (see [`crate::GuardedTransaction`]).
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// g.transaction().set_data("/app/x", b"1".to_vec(), None).commit()?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn transaction(&self) -> $crate::GuardedTransaction<'_> {
            self.holding().transaction()
        }

        /// The holding behind this guard.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// let g = m.acquire()?;
        /// assert_eq!(g.holding().fencing_token(), g.fencing_token());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn holding(&self) -> &Holding {
            self.holding
                .as_ref()
                .expect("a guard holds its holding until it is consumed")
        }

        /// Releases now and reports the outcome (dropping the guard releases
        /// too, but can only log a failure). It returns within the release
        /// bound (see [`release_within`](Self::release_within)) plus
        /// scheduling noise, whatever the connection does: a delete not
        /// answered by then goes on in the background. `Ok` means the lock
        /// was held until the release began.
        ///
        /// # Errors
        ///
        /// [`Error::LockLost`] when the lock had been lost (the work done
        /// under it may have overlapped another holder);
        /// [`Error::LockUncertain`] when it was uncertain when the release
        /// began and the delete could not tell; [`Error::ZooKeeper`] when the
        /// server refused the delete (it goes on in the background).
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
        /// m.acquire()?.release()?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn release(mut self) -> Result<()> {
            match self.holding.take() {
                Some(h) => self.lock.release_holding(h),
                None => Ok(()),
            }
        }
    };
}

/// Holds a lock; releases it when dropped. `!Send` for the reentrant locks
/// (mutex, read and write halves, multi-lock), `Send` for the semaphore mutex.
#[must_use = "the lock is released as soon as the guard is dropped"]
#[clippy::has_significant_drop]
pub struct LockGuard<'a, L: RawLock + ?Sized> {
    lock: &'a L,
    holding: Option<Holding>,
    _marker: PhantomData<L::GuardMarker>,
}

impl<'a, L: RawLock + ?Sized> LockGuard<'a, L> {
    pub(crate) fn new(lock: &'a L, holding: Holding) -> Self {
        LockGuard {
            lock,
            holding: Some(holding),
            _marker: PhantomData,
        }
    }

    pub(crate) fn into_parts(mut self) -> (&'a L, Holding) {
        let h = self
            .holding
            .take()
            .expect("a guard holds its holding until it is consumed");
        (self.lock, h)
    }

    guard_common!();
}

impl<L: RawLock + ?Sized> std::fmt::Debug for LockGuard<'_, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard").field("holding", &self.holding).finish()
    }
}

impl<L: RawLock + ?Sized> Drop for LockGuard<'_, L> {
    fn drop(&mut self) {
        if let Some(h) = self.holding.take() {
            release_on_drop(self.lock, h);
        }
    }
}

/// A guard that owns an `Arc` of its lock, so that it can live in a struct
/// beside the lock or move with it; otherwise as [`LockGuard`].
#[must_use = "the lock is released as soon as the guard is dropped"]
#[clippy::has_significant_drop]
pub struct ArcLockGuard<L: RawLock + ?Sized> {
    lock: Arc<L>,
    holding: Option<Holding>,
    _marker: PhantomData<L::GuardMarker>,
}

impl<L: RawLock + ?Sized> ArcLockGuard<L> {
    pub(crate) fn new(lock: Arc<L>, holding: Holding) -> Self {
        ArcLockGuard {
            lock,
            holding: Some(holding),
            _marker: PhantomData,
        }
    }

    /// The lock this guard holds.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = std::sync::Arc::new(zk_recipes::InterProcessMutex::new(&client, "/locks/a")?);
    /// let g = zk_recipes::InterProcessMutex::acquire_arc(&m)?;
    /// assert_eq!(g.lock().base_path(), "/locks/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lock(&self) -> &Arc<L> {
        &self.lock
    }

    guard_common!();
}

impl<L: RawLock + ?Sized> std::fmt::Debug for ArcLockGuard<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArcLockGuard").field("holding", &self.holding).finish()
    }
}

impl<L: RawLock + ?Sized> Drop for ArcLockGuard<L> {
    fn drop(&mut self) {
        if let Some(h) = self.holding.take() {
            release_on_drop(&*self.lock, h);
        }
    }
}

fn release_on_drop<L: InterProcessLock + ?Sized>(lock: &L, h: Holding) {
    let base = h.base();
    match lock.release_holding(h) {
        Ok(()) => {}
        Err(e @ Error::LockLost { .. }) => log::warn!("releasing {base} on drop: {e}"),
        Err(e) => log::warn!("releasing {base} on drop: {e}"),
    }
}

/// The acquire methods, written once and generated for each lock type.
macro_rules! lock_methods {
    ($ty:ty, $ctor:literal) => {
        /// Blocks until the lock is held.
        ///
        /// # Errors
        ///
        /// [`crate::Error::ZooKeeper`] when the client fails for good (closed,
        /// retries exhausted; our node is deleted first),
        /// [`crate::Error::NodeVanished`] when our node keeps vanishing,
        /// [`crate::Error::LockLost`] for a reentrant acquire of a lock this
        /// thread holds but has lost.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        #[doc = concat!("let lock = ", $ctor, ";")]
        /// let guard = lock.acquire()?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn acquire(&self) -> $crate::Result<$crate::LockGuard<'_, Self>> {
            $crate::lock::acquire_blocking(self).map(|h| $crate::LockGuard::new(self, h))
        }

        /// Waits at most `timeout`: `Ok(None)` when it passes first. The whole
        /// acquire (the wait for a connection, retries, replies) is bounded by
        /// it; a zero timeout makes one attempt and never waits for a
        /// connection. That attempt's replies get
        /// [`zk_framework::deadline::GRACE`] (20 ms) in all, so a server slower
        /// than that (a loaded machine) makes it `Ok(None)` even on a free
        /// lock. Nothing is left behind on a timeout (a node whose create
        /// reply came too late is deleted in the background).
        ///
        /// # Errors
        ///
        /// As `acquire`.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        #[doc = concat!("let lock = ", $ctor, ";")]
        /// match lock.try_acquire_for(std::time::Duration::from_millis(200))? {
        ///     Some(_guard) => println!("held"),
        ///     None => println!("busy"),
        /// }
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn try_acquire_for(
            &self,
            timeout: std::time::Duration,
        ) -> $crate::Result<Option<$crate::LockGuard<'_, Self>>> {
            let deadline = $crate::lock::deadline_after(timeout);
            Ok($crate::lock::acquire_until(self, deadline)?.map(|h| $crate::LockGuard::new(self, h)))
        }

        /// Waits until `deadline`: `Ok(None)` when it passes first (see
        /// `try_acquire_for`).
        ///
        /// # Errors
        ///
        /// As `acquire`.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        #[doc = concat!("let lock = ", $ctor, ";")]
        /// let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        /// let guard = lock.try_acquire_until(deadline)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn try_acquire_until(
            &self,
            deadline: std::time::Instant,
        ) -> $crate::Result<Option<$crate::LockGuard<'_, Self>>> {
            Ok($crate::lock::acquire_until(self, Some(deadline))?.map(|h| $crate::LockGuard::new(self, h)))
        }

        /// Blocks until held, returning a guard that owns an `Arc` of the lock
        /// (it can live in a struct beside the lock).
        ///
        /// # Errors
        ///
        /// As `acquire`.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        #[doc = concat!("let lock = std::sync::Arc::new(", $ctor, ");")]
        #[doc = concat!("let guard = zk_recipes::", stringify!($ty), "::acquire_arc(&lock)?;")]
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn acquire_arc(this: &std::sync::Arc<Self>) -> $crate::Result<$crate::ArcLockGuard<Self>> {
            $crate::lock::acquire_blocking(&**this).map(|h| $crate::ArcLockGuard::new(this.clone(), h))
        }

        /// `acquire_arc` with a timeout: `Ok(None)` when it passes first.
        ///
        /// # Errors
        ///
        /// As `acquire`.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        #[doc = concat!("let lock = std::sync::Arc::new(", $ctor, ");")]
        #[doc = concat!("let guard = zk_recipes::", stringify!($ty), "::try_acquire_arc_for(&lock, std::time::Duration::from_secs(1))?;")]
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn try_acquire_arc_for(
            this: &std::sync::Arc<Self>,
            timeout: std::time::Duration,
        ) -> $crate::Result<Option<$crate::ArcLockGuard<Self>>> {
            Self::try_acquire_arc_until_opt(this, $crate::lock::deadline_after(timeout))
        }

        /// `acquire_arc` until a deadline: `Ok(None)` when it passes first.
        ///
        /// # Errors
        ///
        /// As `acquire`.
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        #[doc = concat!("let lock = std::sync::Arc::new(", $ctor, ");")]
        #[doc = concat!("let guard = zk_recipes::", stringify!($ty), "::try_acquire_arc_until(&lock, std::time::Instant::now())?;")]
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn try_acquire_arc_until(
            this: &std::sync::Arc<Self>,
            deadline: std::time::Instant,
        ) -> $crate::Result<Option<$crate::ArcLockGuard<Self>>> {
            Self::try_acquire_arc_until_opt(this, Some(deadline))
        }

        fn try_acquire_arc_until_opt(
            this: &std::sync::Arc<Self>,
            deadline: Option<std::time::Instant>,
        ) -> $crate::Result<Option<$crate::ArcLockGuard<Self>>> {
            Ok($crate::lock::acquire_until(&**this, deadline)?.map(|h| $crate::ArcLockGuard::new(this.clone(), h)))
        }

        /// Runs `f` while holding the lock; released even if `f` panics. `f`
        /// does not run on a lock this thread holds but has lost.
        ///
        /// # Errors
        ///
        /// As `acquire` (then `f` does not run); [`crate::Error::LockLost`]
        /// when the lock was lost while `f` ran (its result is dropped: its
        /// work may have overlapped another holder).
        ///
        /// # Examples
        ///
        /// ```no_run
        /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
        #[doc = concat!("let lock = ", $ctor, ";")]
        /// assert_eq!(lock.with_lock(|| 40 + 2)?, 42);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn with_lock<T>(&self, f: impl FnOnce() -> T) -> $crate::Result<T> {
            let guard = self.acquire()?;
            let out = f();
            guard.release()?;
            Ok(out)
        }
    };
}

pub(crate) use lock_methods;
