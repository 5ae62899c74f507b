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
use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::locks::holding::Holding;

/// The seals: [`InterProcessLock`] and [`LockKind`] are implemented by this
/// crate's locks only (a `Holding` can only be made by them).
pub(crate) mod sealed {
    /// Seals [`LockKind`](super::LockKind): each kind seals itself in its
    /// own room.
    pub trait Sealed {}

    /// What a multi-lock asks of each member beside
    /// [`InterProcessLock`](super::InterProcessLock) (it seals that trait):
    /// the canonical order, and which instance it is.
    pub trait Member {
        /// The canonical order of a multi-lock: (server path, rank), where a
        /// write lock ranks before the read lock of the same path.
        fn order_key(&self) -> (String, u8);

        /// Identifies the lock instance (two halves of one read/write lock
        /// share their instance).
        fn instance_id(&self) -> usize {
            self as *const Self as *const () as usize
        }
    }

    impl<L: super::InterProcessLock + ?Sized> Member for std::sync::Arc<L> {
        fn order_key(&self) -> (String, u8) {
            (**self).order_key()
        }

        fn instance_id(&self) -> usize {
            (**self).instance_id()
        }
    }
}

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
/// }
/// ```
pub trait InterProcessLock: sealed::Member + Send + Sync {
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

/// Holds a lock; releases it when dropped. `!Send` for the reentrant locks
/// (mutex, read and write halves, multi-lock), `Send` for the semaphore mutex.
///
/// A guard derefs to its [`Holding`]: `guard.status()`, `guard.check()`,
/// `guard.safe_until()`, `guard.events()`, `guard.fencing_token()`,
/// `guard.lock_path()` and `guard.transaction()` are the holding's. What only
/// a guard does is release ([`release`](Self::release),
/// [`release_within`](Self::release_within), or dropping it).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
/// let g = m.acquire()?;
/// g.check()?; // the holding's check, through the guard
/// g.release()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
#[clippy::has_significant_drop]
pub struct LockGuard<'a, L: RawLock + ?Sized> {
    lock: &'a L,
    holding: Option<Holding>,
    _marker: PhantomData<L::GuardMarker>,
}

/// A guard that owns an `Arc` of its lock, so that it can live in a struct
/// beside the lock or move with it; otherwise as [`LockGuard`].
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
#[must_use = "the lock is released as soon as the guard is dropped"]
#[clippy::has_significant_drop]
pub struct ArcLockGuard<L: RawLock + ?Sized> {
    lock: Arc<L>,
    holding: Option<Holding>,
    _marker: PhantomData<L::GuardMarker>,
}

/// What both guards are: a lock to release to and the holding they hold.
/// Their methods are written once, on this.
trait Guard {
    type Lock: RawLock + ?Sized;

    fn parts(&mut self) -> (&Self::Lock, &mut Option<Holding>);
}

impl<'a, L: RawLock + ?Sized> Guard for LockGuard<'a, L> {
    type Lock = L;

    fn parts(&mut self) -> (&L, &mut Option<Holding>) {
        (self.lock, &mut self.holding)
    }
}

impl<L: RawLock + ?Sized> Guard for ArcLockGuard<L> {
    type Lock = L;

    fn parts(&mut self) -> (&L, &mut Option<Holding>) {
        (&*self.lock, &mut self.holding)
    }
}

/// The holding a live guard holds.
fn held(holding: &Option<Holding>) -> &Holding {
    holding
        .as_ref()
        .expect("a guard holds its holding until it is consumed")
}

/// Releases now and reports the outcome.
fn release_now<G: Guard>(guard: &mut G) -> Result<()> {
    let (lock, holding) = guard.parts();
    match holding.take() {
        Some(h) => lock.release_holding(h),
        None => Ok(()),
    }
}

/// Releases what a dropped guard still holds, logging a failure (a `Drop`
/// cannot report it).
fn release_on_drop<G: Guard>(guard: &mut G) {
    let (lock, holding) = guard.parts();
    if let Some(h) = holding.take() {
        let base = h.base();
        if let Err(e) = lock.release_holding(h) {
            log::warn!("releasing {base} on drop: {e}");
        }
    }
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

    /// The holding behind this guard (the guard derefs to it as well).
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
        held(&self.holding)
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
        release_now(&mut self)
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
    pub fn release_within(mut self, bound: Duration) -> Result<()> {
        self.holding().set_release_bound(bound);
        release_now(&mut self)
    }
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

    /// As [`LockGuard::holding`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = std::sync::Arc::new(zk_recipes::InterProcessMutex::new(&client, "/locks/a")?);
    /// let g = zk_recipes::InterProcessMutex::acquire_arc(&m)?;
    /// assert_eq!(g.holding().fencing_token(), g.fencing_token());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn holding(&self) -> &Holding {
        held(&self.holding)
    }

    /// As [`LockGuard::release`].
    ///
    /// # Errors
    ///
    /// As [`LockGuard::release`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = std::sync::Arc::new(zk_recipes::InterProcessMutex::new(&client, "/locks/a")?);
    /// zk_recipes::InterProcessMutex::acquire_arc(&m)?.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(mut self) -> Result<()> {
        release_now(&mut self)
    }

    /// As [`LockGuard::release_within`].
    ///
    /// # Errors
    ///
    /// As [`LockGuard::release`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = std::sync::Arc::new(zk_recipes::InterProcessMutex::new(&client, "/locks/a")?);
    /// zk_recipes::InterProcessMutex::acquire_arc(&m)?.release_within(std::time::Duration::from_millis(200))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release_within(mut self, bound: Duration) -> Result<()> {
        self.holding().set_release_bound(bound);
        release_now(&mut self)
    }
}

impl<L: RawLock + ?Sized> Deref for LockGuard<'_, L> {
    type Target = Holding;

    fn deref(&self) -> &Holding {
        held(&self.holding)
    }
}

impl<L: RawLock + ?Sized> Deref for ArcLockGuard<L> {
    type Target = Holding;

    fn deref(&self) -> &Holding {
        held(&self.holding)
    }
}

impl<L: RawLock + ?Sized> std::fmt::Debug for LockGuard<'_, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard").field("holding", &self.holding).finish()
    }
}

impl<L: RawLock + ?Sized> std::fmt::Debug for ArcLockGuard<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArcLockGuard").field("holding", &self.holding).finish()
    }
}

impl<L: RawLock + ?Sized> Drop for LockGuard<'_, L> {
    fn drop(&mut self) {
        release_on_drop(self);
    }
}

impl<L: RawLock + ?Sized> Drop for ArcLockGuard<L> {
    fn drop(&mut self) {
        release_on_drop(self);
    }
}

/// A kind of lock: [`MutexKind`](crate::MutexKind),
/// [`SemaphoreMutexKind`](crate::SemaphoreMutexKind),
/// [`ReadKind`](crate::ReadKind), [`WriteKind`](crate::WriteKind) and
/// [`MultiKind`](crate::MultiKind). Sealed: the kinds are this crate's.
///
/// # Examples
///
/// ```
/// fn path_of<K: zk_recipes::LockKind>(_: &zk_recipes::Lock<K>) {}
/// ```
pub trait LockKind: sealed::Sealed + Send + Sync + 'static {}

/// A lock of one kind, in `lock_api`'s shape: what every kind does (acquire
/// with a guard, until a deadline or for a timeout, with an `Arc`, around a
/// closure) is written once here, and each kind adds its own methods in its
/// own `impl`. Curator's names are its aliases:
/// [`InterProcessMutex`](crate::InterProcessMutex) is `Lock<MutexKind>`,
/// [`InterProcessSemaphoreMutex`](crate::InterProcessSemaphoreMutex)
/// `Lock<SemaphoreMutexKind>`, [`ReadLock`](crate::ReadLock) and
/// [`WriteLock`](crate::WriteLock) `Lock<ReadKind>` and `Lock<WriteKind>`,
/// [`MultiLock`](crate::MultiLock) `Lock<MultiKind>`.
///
/// # Examples
///
/// ```no_run
/// use zk_recipes::{InterProcessMutex, Lock, MutexKind};
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let m: Lock<MutexKind> = InterProcessMutex::new(&client, "/locks/a")?;
/// let guard = m.acquire()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Lock<K: LockKind> {
    pub(crate) kind: K,
}

impl<K: LockKind + std::fmt::Debug> std::fmt::Debug for Lock<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.kind.fmt(f)
    }
}

impl<K: LockKind> Lock<K>
where
    Self: RawLock,
{
    /// Blocks until the lock is held.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the client fails for good (closed, retries
    /// exhausted; our node is deleted first), [`Error::NodeVanished`] when
    /// our node keeps vanishing, [`Error::LockLost`] for a reentrant acquire
    /// of a lock this thread holds but has lost, [`Error::UpgradeRefused`]
    /// for a write lock asked by a thread holding only the read lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let lock = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let guard = lock.acquire()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire(&self) -> Result<LockGuard<'_, Self>> {
        acquire_blocking(self).map(|h| LockGuard::new(self, h))
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
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let lock = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// match lock.try_acquire_for(std::time::Duration::from_millis(200))? {
    ///     Some(_guard) => println!("held"),
    ///     None => println!("busy"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_for(&self, timeout: Duration) -> Result<Option<LockGuard<'_, Self>>> {
        self.try_acquire_until_opt(deadline_after(timeout))
    }

    /// Waits until `deadline`: `Ok(None)` when it passes first (see
    /// [`try_acquire_for`](Self::try_acquire_for)).
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    /// let guard = rw.read_lock().try_acquire_until(deadline)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_until(&self, deadline: Instant) -> Result<Option<LockGuard<'_, Self>>> {
        self.try_acquire_until_opt(Some(deadline))
    }

    fn try_acquire_until_opt(&self, deadline: Option<Instant>) -> Result<Option<LockGuard<'_, Self>>> {
        Ok(acquire_until(self, deadline)?.map(|h| LockGuard::new(self, h)))
    }

    /// Blocks until held, returning a guard that owns an `Arc` of the lock
    /// (it can live in a struct beside the lock).
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let lock = std::sync::Arc::new(zk_recipes::InterProcessMutex::new(&client, "/locks/a")?);
    /// let guard = zk_recipes::InterProcessMutex::acquire_arc(&lock)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_arc(this: &Arc<Self>) -> Result<ArcLockGuard<Self>> {
        acquire_blocking(&**this).map(|h| ArcLockGuard::new(this.clone(), h))
    }

    /// [`acquire_arc`](Self::acquire_arc) with a timeout: `Ok(None)` when it
    /// passes first.
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let lock = std::sync::Arc::new(zk_recipes::InterProcessMutex::new(&client, "/locks/a")?);
    /// let guard = zk_recipes::InterProcessMutex::try_acquire_arc_for(&lock, std::time::Duration::from_secs(1))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_arc_for(this: &Arc<Self>, timeout: Duration) -> Result<Option<ArcLockGuard<Self>>> {
        Self::try_acquire_arc_until_opt(this, deadline_after(timeout))
    }

    /// [`acquire_arc`](Self::acquire_arc) until a deadline: `Ok(None)` when
    /// it passes first.
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let lock = std::sync::Arc::new(zk_recipes::InterProcessMutex::new(&client, "/locks/a")?);
    /// let guard = zk_recipes::InterProcessMutex::try_acquire_arc_until(&lock, std::time::Instant::now())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_arc_until(this: &Arc<Self>, deadline: Instant) -> Result<Option<ArcLockGuard<Self>>> {
        Self::try_acquire_arc_until_opt(this, Some(deadline))
    }

    fn try_acquire_arc_until_opt(this: &Arc<Self>, deadline: Option<Instant>) -> Result<Option<ArcLockGuard<Self>>> {
        Ok(acquire_until(&**this, deadline)?.map(|h| ArcLockGuard::new(this.clone(), h)))
    }

    /// Runs `f` while holding the lock; released even if `f` panics. `f`
    /// does not run on a lock this thread holds but has lost.
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire) (then `f` does not run);
    /// [`Error::LockLost`] when the lock was lost while `f` ran (its result
    /// is dropped: its work may have overlapped another holder).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let lock = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert_eq!(lock.with_lock(|| 40 + 2)?, 42);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_lock<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        let guard = self.acquire()?;
        let out = f();
        guard.release()?;
        Ok(out)
    }
}
