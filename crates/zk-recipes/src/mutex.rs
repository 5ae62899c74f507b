//! `InterProcessMutex`: a reentrant, Curator-compatible distributed mutex.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use zk_framework::framework::CuratorFramework;

use crate::driver::{Driver, MUTEX_LOCK_NAME};
use crate::error::{Error, Result};
use crate::internals::{Acquired, LockEvent, LockInternals, LockStatus};
use crate::revoke::{RevocationListener, Revocations};

/// Converts a timeout to a deadline; a timeout too large to represent means
/// "no deadline" (as `crossbeam-channel` does).
pub(crate) fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

struct Holding {
    acquired: Acquired,
    count: u32,
}

/// A reentrant distributed mutex with Curator's node layout
/// (`<path>/_c_<uuid>-lock-<seq>`), so it excludes Curator's
/// `InterProcessMutex` on the same path.
///
/// Ownership is per (instance, thread), like Curator: the same thread may
/// acquire again without any server request; each acquire needs its release.
/// Two instances on one path exclude each other even within one thread.
///
/// # Examples
///
/// ```no_run
/// use zk_framework::framework::CuratorFramework;
/// use zk_recipes::InterProcessMutex;
///
/// let client = CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let mutex = InterProcessMutex::new(&client, "/locks/orders")?;
/// {
///     let guard = mutex.acquire()?;
///     println!("fencing token {}", guard.fencing_token());
/// } // released here
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct InterProcessMutex {
    internals: LockInternals,
    threads: Mutex<HashMap<ThreadId, Holding>>,
    revocation: Revocations,
    data: Option<Vec<u8>>,
}

impl std::fmt::Debug for InterProcessMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessMutex")
            .field("path", &self.internals.base_path())
            .field("holders", &self.threads.lock().len())
            .finish()
    }
}

/// Holds one level of an [`InterProcessMutex`]; releases it when dropped.
///
/// It is `!Send`: ownership belongs to the thread that acquired.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct InterProcessMutexGuard<'a> {
    mutex: &'a InterProcessMutex,
    released: bool,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for InterProcessMutexGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessMutexGuard")
            .field("path", &self.mutex.internals.base_path())
            .finish()
    }
}

impl InterProcessMutex {
    /// A mutex at `path` (created on first acquire, with container parents).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] with `InvalidPath` when `path` breaks ZooKeeper's
    /// rules; [`Error::InvalidArgument`] for the root path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(zk_recipes::InterProcessMutex::new(&client, "relative").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str) -> Result<Self> {
        InterProcessMutex::with_driver(client, path, MUTEX_LOCK_NAME, Driver::MUTEX, None)
    }

    /// A mutex whose lock nodes carry `data` instead of the client's default.
    ///
    /// # Errors
    ///
    /// As [`InterProcessMutex::new`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::with_data(&client, "/locks/a", b"worker-7".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_data(client: &CuratorFramework, path: &str, data: Vec<u8>) -> Result<Self> {
        InterProcessMutex::with_driver(client, path, MUTEX_LOCK_NAME, Driver::MUTEX, Some(data))
    }

    pub(crate) fn with_driver(
        client: &CuratorFramework,
        path: &str,
        lock_name: &'static str,
        driver: Driver,
        data: Option<Vec<u8>>,
    ) -> Result<Self> {
        Ok(InterProcessMutex {
            internals: LockInternals::new(client.clone(), path, lock_name, driver)?,
            threads: Mutex::new(HashMap::new()),
            revocation: Revocations::default(),
            data,
        })
    }

    /// Blocks until the lock is held.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the client fails and retries run out (our node is
    /// deleted first), [`Error::NodeVanished`] when our node keeps vanishing.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// drop(g);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire(&self) -> Result<InterProcessMutexGuard<'_>> {
        match self.acquire_deadline(None)? {
            true => Ok(self.guard()),
            false => Err(Error::ZooKeeper(zk_framework::Error::Closed)),
        }
    }

    /// Waits at most `timeout`; `Ok(None)` on timeout. A zero timeout is a
    /// non-blocking try (a node is still queued and removed, as in Curator).
    ///
    /// # Errors
    ///
    /// As [`InterProcessMutex::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// if let Some(g) = m.try_acquire_for(std::time::Duration::from_secs(1))? {
    ///     // held
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_for(&self, timeout: Duration) -> Result<Option<InterProcessMutexGuard<'_>>> {
        match deadline_after(timeout) {
            Some(d) => self.try_acquire_until(d),
            None => self.acquire().map(Some),
        }
    }

    /// Waits until `deadline`; `Ok(None)` if it passes first.
    ///
    /// # Errors
    ///
    /// As [`InterProcessMutex::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    /// let g = m.try_acquire_until(deadline)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_until(&self, deadline: Instant) -> Result<Option<InterProcessMutexGuard<'_>>> {
        Ok(self.acquire_deadline(Some(deadline))?.then(|| self.guard()))
    }

    fn guard(&self) -> InterProcessMutexGuard<'_> {
        InterProcessMutexGuard {
            mutex: self,
            released: false,
            _not_send: PhantomData,
        }
    }

    /// The single slow path: `Ok(true)` when held, `Ok(false)` on timeout.
    pub(crate) fn acquire_deadline(&self, deadline: Option<Instant>) -> Result<bool> {
        self.acquire_inner(deadline, None)
    }

    /// As `acquire_deadline`, with a non-sequential node carrying `seq` (the
    /// read/write lock's downgrade).
    pub(crate) fn acquire_with_sequence(&self, deadline: Option<Instant>, seq: &str) -> Result<bool> {
        self.acquire_inner(deadline, Some(seq))
    }

    /// A guard for a level the calling thread already holds.
    pub(crate) fn adopt_guard(&self) -> InterProcessMutexGuard<'_> {
        self.guard()
    }

    pub(crate) fn internals(&self) -> &LockInternals {
        &self.internals
    }

    /// The base path as the server sees it (namespace included): the canonical
    /// order of a multi-lock.
    pub(crate) fn full_path(&self) -> String {
        self.internals.client().fix_path(self.internals.base_path())
    }

    fn acquire_inner(&self, deadline: Option<Instant>, seq: Option<&str>) -> Result<bool> {
        let me = std::thread::current().id();
        if let Some(h) = self.threads.lock().get_mut(&me) {
            h.count += 1;
            return Ok(true);
        }
        let data = if self.revocation.is_armed() {
            Some(Vec::new())
        } else {
            self.data.clone()
        };
        match self.internals.attempt_lock(deadline, data, seq)? {
            Some(acquired) => {
                self.revocation.on_acquired(&self.internals, &acquired.path);
                self.threads.lock().insert(me, Holding { acquired, count: 1 });
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Releases one level held by the calling thread (Curator's `release()`).
    /// Use it only with [`InterProcessMutex::acquire_raw`]; guards release
    /// themselves.
    ///
    /// When the last level is released, the lock node is deleted with a
    /// guaranteed delete: if that fails (connection loss), the error is returned,
    /// the lock counts as released here, and the delete goes on in the
    /// background until it succeeds or the session ends.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] when the calling thread does not hold the lock (never
    /// acquired, already released, or another thread); [`Error::ZooKeeper`] when
    /// the delete failed (see above).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(m.release().is_err()); // not held
    /// m.acquire_raw()?;
    /// m.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(&self) -> Result<()> {
        let me = std::thread::current().id();
        let done = {
            let mut threads = self.threads.lock();
            let Some(h) = threads.get_mut(&me) else {
                return Err(Error::NotOwner {
                    path: self.internals.base_path().to_string(),
                });
            };
            h.count -= 1;
            if h.count > 0 {
                return Ok(());
            }
            threads.remove(&me).map(|h| h.acquired)
        };
        match done {
            Some(acquired) => {
                self.revocation.on_released();
                self.internals.release(acquired)
            }
            None => Ok(()),
        }
    }

    /// Curator's `acquire()`: takes one level for the calling thread, without a
    /// guard. Pair it with [`InterProcessMutex::release`].
    ///
    /// # Errors
    ///
    /// As [`InterProcessMutex::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// m.acquire_raw()?;
    /// m.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_raw(&self) -> Result<()> {
        if self.acquire_deadline(None)? {
            Ok(())
        } else {
            Err(Error::ZooKeeper(zk_framework::Error::Closed))
        }
    }

    /// Curator's `acquire(time, unit)` without a guard: `Ok(false)` on timeout.
    ///
    /// # Errors
    ///
    /// As [`InterProcessMutex::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// if m.acquire_raw_for(std::time::Duration::from_millis(100))? {
    ///     m.release()?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_raw_for(&self, timeout: Duration) -> Result<bool> {
        self.acquire_deadline(deadline_after(timeout))
    }

    /// Runs `f` while holding the lock (the seeds' `Locker.lock(key, Runnable)`);
    /// the lock is released even if `f` panics.
    ///
    /// # Errors
    ///
    /// As [`InterProcessMutex::acquire`]; `f` does not run then.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let n = m.with_lock(|| 40 + 2)?;
    /// assert_eq!(n, 42);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_lock<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        let guard = self.acquire()?;
        let out = f();
        guard.release()?;
        Ok(out)
    }

    /// Whether any thread of this instance holds the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(!m.is_acquired_in_this_process());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_acquired_in_this_process(&self) -> bool {
        !self.threads.lock().is_empty()
    }

    /// Whether the calling thread holds the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(m.is_owned_by_current_thread());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_owned_by_current_thread(&self) -> bool {
        self.threads.lock().contains_key(&std::thread::current().id())
    }

    /// How many levels the calling thread holds.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let a = m.acquire()?;
    /// let b = m.acquire()?;
    /// assert_eq!(m.hold_count(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hold_count(&self) -> u32 {
        self.threads
            .lock()
            .get(&std::thread::current().id())
            .map_or(0, |h| h.count)
    }

    /// Full paths of every node queued on the lock, in lock order (the holder
    /// first).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// for node in m.participant_nodes()? {
    ///     println!("{node}");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_nodes(&self) -> Result<Vec<String>> {
        self.internals.participant_nodes()
    }

    /// The lock's base path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert_eq!(m.base_path(), "/locks/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn base_path(&self) -> &str {
        self.internals.base_path()
    }

    /// The calling thread's lock node, if it holds the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(m.lock_path().unwrap().starts_with("/locks/a/_c_"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lock_path(&self) -> Option<String> {
        self.with_holding(|a| a.path.clone())
    }

    /// The fencing token of the calling thread's hold: its lock node's czxid. It
    /// increases with every grant of this lock, across sessions and processes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert_eq!(m.fencing_token(), Some(g.fencing_token()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_token(&self) -> Option<i64> {
        self.with_holding(Acquired::fencing_token)
    }

    /// The calling thread's lock status (`None` when it does not hold the lock).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert_eq!(m.status(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> Option<LockStatus> {
        self.with_holding(|a| a.monitor.status())
    }

    /// Loss events for the calling thread's hold: `Suspended` (uncertain),
    /// `Reconnected`, `Lost` (certain). `None` when it does not hold the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// let events = g.loss_receiver();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loss_receiver(&self) -> Option<Receiver<LockEvent>> {
        self.with_holding(|a| a.monitor.subscribe())
    }

    /// Curator's `makeRevocable`: before acquiring, ask to be told when another
    /// process calls [`crate::Revoker::attempt_revoke`] on our node. The listener
    /// runs on a helper thread; revocation is cooperative (the holder decides
    /// whether to release). It applies to the next acquire only.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// m.make_revocable(|| println!("someone wants the lock"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn make_revocable(&self, listener: impl Fn() + Send + Sync + 'static) {
        self.revocation.arm(Arc::new(listener) as RevocationListener);
    }

    fn with_holding<T>(&self, f: impl FnOnce(&Acquired) -> T) -> Option<T> {
        self.threads
            .lock()
            .get(&std::thread::current().id())
            .map(|h| f(&h.acquired))
    }
}

impl InterProcessMutexGuard<'_> {
    /// The fencing token (the lock node's czxid): pass it to the resource you
    /// protect, which rejects writes carrying a smaller token than one it saw.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// let token = g.fencing_token();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_token(&self) -> i64 {
        self.mutex.fencing_token().unwrap_or(0)
    }

    /// Whether the lock is held, uncertain (suspended) or lost.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert_eq!(g.status(), zk_recipes::LockStatus::Held);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> LockStatus {
        self.mutex.status().unwrap_or(LockStatus::Lost)
    }

    /// `status() == Held`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(g.is_held());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_held(&self) -> bool {
        self.status() == LockStatus::Held
    }

    /// Loss events for this hold (see [`InterProcessMutex::loss_receiver`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// let rx = g.loss_receiver();
    /// assert!(rx.try_recv().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loss_receiver(&self) -> Receiver<LockEvent> {
        self.mutex.loss_receiver().unwrap_or_else(|| {
            let (tx, rx) = crossbeam_channel::bounded(1);
            let _ = tx.try_send(LockEvent::Lost);
            rx
        })
    }

    /// The lock node's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// println!("{}", g.lock_path());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lock_path(&self) -> String {
        self.mutex.lock_path().unwrap_or_default()
    }

    /// Releases now and reports the outcome (dropping the guard releases too, but
    /// can only log a failure).
    ///
    /// # Errors
    ///
    /// As [`InterProcessMutex::release`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// m.acquire()?.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        self.mutex.release()
    }
}

impl Drop for InterProcessMutexGuard<'_> {
    fn drop(&mut self) {
        if !self.released {
            if let Err(e) = self.mutex.release() {
                log::warn!("releasing {} on drop: {e}", self.mutex.base_path());
            }
        }
    }
}
