//! `InterProcessLock`, the trait every lock implements, and `MultiLock`, which
//! takes several locks together, all or none, without deadlocks.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use zk_framework::framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::mutex::{deadline_after, InterProcessMutex};
use crate::rwlock::{ReadLock, WriteLock};
use crate::semaphore::InterProcessSemaphoreMutex;

/// What every lock of this crate can do, in Curator's raw shape (no guards), so
/// that [`MultiLock`] can hold any mix of them.
pub trait InterProcessLock: Send + Sync {
    /// Acquires, waiting until `deadline` (`None`: no limit). `Ok(false)` on
    /// timeout.
    ///
    /// # Errors
    ///
    /// The lock's own errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// if m.acquire_until(None)? {
    ///     InterProcessLock::release(&m)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_until(&self, deadline: Option<Instant>) -> Result<bool>;

    /// Releases one level.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] when not held; failures of the delete.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(InterProcessLock::release(&m).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn release(&self) -> Result<()>;

    /// Whether this process holds it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(!InterProcessLock::is_acquired_in_this_process(&m));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn is_acquired_in_this_process(&self) -> bool;

    /// The canonical sort key: the server path (namespace included) and a rank
    /// that puts a write half before a read half of the same lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert_eq!(m.order_key().0, "/locks/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn order_key(&self) -> (String, u8);

    /// Identifies the lock object, so that [`MultiLock::new`] can tell the same
    /// (reentrant) lock given twice from two distinct locks on one path, which
    /// would wait on each other. Both halves of one
    /// [`crate::InterProcessReadWriteLock`] share an identity. The default is the
    /// object's address.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::InterProcessLock;
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// assert_eq!(rw.read_lock().instance_id(), rw.write_lock().instance_id());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn instance_id(&self) -> usize {
        self as *const Self as *const () as usize
    }
}

/// The rank of a read half in [`InterProcessLock::order_key`]: read locks on one
/// path may be held together.
const READ_RANK: u8 = 2;

impl InterProcessLock for InterProcessMutex {
    fn acquire_until(&self, deadline: Option<Instant>) -> Result<bool> {
        self.acquire_deadline(deadline)
    }
    fn release(&self) -> Result<()> {
        InterProcessMutex::release(self)
    }
    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessMutex::is_acquired_in_this_process(self)
    }
    fn order_key(&self) -> (String, u8) {
        (self.full_path(), 1)
    }
}

impl InterProcessLock for InterProcessSemaphoreMutex {
    fn acquire_until(&self, deadline: Option<Instant>) -> Result<bool> {
        self.acquire_deadline(deadline)
    }
    fn release(&self) -> Result<()> {
        InterProcessSemaphoreMutex::release(self)
    }
    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessSemaphoreMutex::is_acquired_in_this_process(self)
    }
    fn order_key(&self) -> (String, u8) {
        (self.full_path(), 1)
    }
}

impl InterProcessLock for WriteLock {
    fn acquire_until(&self, deadline: Option<Instant>) -> Result<bool> {
        self.acquire_deadline(deadline)
    }
    fn release(&self) -> Result<()> {
        WriteLock::release(self)
    }
    fn is_acquired_in_this_process(&self) -> bool {
        WriteLock::is_acquired_in_this_process(self)
    }
    fn order_key(&self) -> (String, u8) {
        (self.full_path(), 0)
    }
    fn instance_id(&self) -> usize {
        WriteLock::instance_id(self)
    }
}

impl InterProcessLock for ReadLock {
    fn acquire_until(&self, deadline: Option<Instant>) -> Result<bool> {
        self.acquire_deadline(deadline)
    }
    fn release(&self) -> Result<()> {
        ReadLock::release(self)
    }
    fn is_acquired_in_this_process(&self) -> bool {
        ReadLock::is_acquired_in_this_process(self)
    }
    fn order_key(&self) -> (String, u8) {
        (self.full_path(), READ_RANK)
    }
    fn instance_id(&self) -> usize {
        ReadLock::instance_id(self)
    }
}

impl<L: InterProcessLock + ?Sized> InterProcessLock for Arc<L> {
    fn acquire_until(&self, deadline: Option<Instant>) -> Result<bool> {
        (**self).acquire_until(deadline)
    }
    fn release(&self) -> Result<()> {
        (**self).release()
    }
    fn is_acquired_in_this_process(&self) -> bool {
        (**self).is_acquired_in_this_process()
    }
    fn order_key(&self) -> (String, u8) {
        (**self).order_key()
    }
    fn instance_id(&self) -> usize {
        (**self).instance_id()
    }
}

/// Several locks taken together: all or none.
///
/// * **Deadlock-free**: the locks are always taken in one canonical order, by
///   full server path (namespace included; for one read/write lock, the write
///   half before the read half), whatever order the caller gave. Two
///   `MultiLock`s over the same locks listed in different orders cannot
///   deadlock. (Curator takes them in list order.)
/// * **One deadline** for the whole set, not a timeout per lock.
/// * **All or none**: if one lock cannot be taken (timeout or error), those
///   already taken are released in reverse order, and the first error is
///   returned.
/// * **Release** goes on past a failure and reports every error
///   ([`Error::Multiple`]).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let both = zk_recipes::MultiLock::from_paths(&client, &["/locks/b", "/locks/a"])?;
/// let guard = both.acquire()?; // takes /locks/a, then /locks/b
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct MultiLock {
    locks: Vec<Arc<dyn InterProcessLock>>,
    /// Per thread: how many times this thread holds the whole set (the inner
    /// locks may be reentrant).
    holders: Mutex<Vec<std::thread::ThreadId>>,
}

impl std::fmt::Debug for MultiLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiLock")
            .field("paths", &self.locks.iter().map(|l| l.order_key().0).collect::<Vec<_>>())
            .finish()
    }
}

/// Holds every lock of a [`MultiLock`]; releases them (in reverse order) when
/// dropped. `!Send`, since it may hold reentrant locks.
#[must_use = "the locks are released as soon as the guard is dropped"]
pub struct MultiLockGuard<'a> {
    multi: &'a MultiLock,
    released: bool,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for MultiLockGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiLockGuard").field("multi", &self.multi).finish()
    }
}

impl MultiLock {
    /// A multi-lock over any locks, in canonical order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty list, or for two distinct locks on
    /// one path unless both are read halves: the second would queue behind the
    /// first and wait for ever (until the deadline). The same lock object given
    /// twice is fine (it is reentrant, or refuses itself).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use zk_recipes::{InterProcessLock, InterProcessMutex, InterProcessSemaphoreMutex, MultiLock};
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let locks: Vec<Arc<dyn InterProcessLock>> = vec![
    ///     Arc::new(InterProcessMutex::new(&client, "/locks/a")?),
    ///     Arc::new(InterProcessSemaphoreMutex::new(&client, "/locks/b")?),
    /// ];
    /// let multi = MultiLock::new(locks)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(mut locks: Vec<Arc<dyn InterProcessLock>>) -> Result<Self> {
        if locks.is_empty() {
            return Err(Error::InvalidArgument("a multi-lock needs at least one lock".into()));
        }
        locks.sort_by_key(|l| l.order_key());
        // Sorted by path, so the locks of one path are adjacent.
        for (i, a) in locks.iter().enumerate() {
            let (ka, ida) = (a.order_key(), a.instance_id());
            for b in locks[i + 1..].iter().take_while(|b| b.order_key().0 == ka.0) {
                let kb = b.order_key();
                if b.instance_id() != ida && !(ka.1 == READ_RANK && kb.1 == READ_RANK) {
                    return Err(Error::InvalidArgument(format!(
                        "a multi-lock holds two distinct locks on {}; they would wait on each other",
                        ka.0
                    )));
                }
            }
        }
        Ok(MultiLock {
            locks,
            holders: Mutex::new(Vec::new()),
        })
    }

    /// A multi-lock of [`InterProcessMutex`]es at `paths`.
    ///
    /// # Errors
    ///
    /// An invalid path, or an empty list.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_paths(client: &CuratorFramework, paths: &[&str]) -> Result<Self> {
        let locks = paths
            .iter()
            .map(|p| InterProcessMutex::new(client, p).map(|m| Arc::new(m) as Arc<dyn InterProcessLock>))
            .collect::<Result<Vec<_>>>()?;
        MultiLock::new(locks)
    }

    /// The locks' full paths in the order they are taken.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::MultiLock::from_paths(&client, &["/b", "/a"])?;
    /// assert_eq!(m.order(), vec!["/a".to_string(), "/b".to_string()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn order(&self) -> Vec<String> {
        self.locks.iter().map(|l| l.order_key().0).collect()
    }

    /// Blocks until every lock is held.
    ///
    /// # Errors
    ///
    /// The first error of any lock (those already taken are released first).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// let g = m.acquire()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire(&self) -> Result<MultiLockGuard<'_>> {
        if self.acquire_deadline(None)? {
            Ok(self.guard())
        } else {
            Err(Error::ZooKeeper(zk_framework::Error::Closed))
        }
    }

    /// Waits at most `timeout` for the whole set; `Ok(None)` on timeout.
    ///
    /// # Errors
    ///
    /// As [`MultiLock::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// let g = m.try_acquire_for(std::time::Duration::from_secs(1))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_for(&self, timeout: Duration) -> Result<Option<MultiLockGuard<'_>>> {
        match deadline_after(timeout) {
            Some(d) => self.try_acquire_until(d),
            None => self.acquire().map(Some),
        }
    }

    /// Waits until `deadline` for the whole set; `Ok(None)` if it passes first.
    ///
    /// # Errors
    ///
    /// As [`MultiLock::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// let g = m.try_acquire_until(std::time::Instant::now())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_until(&self, deadline: Instant) -> Result<Option<MultiLockGuard<'_>>> {
        Ok(self.acquire_deadline(Some(deadline))?.then(|| self.guard()))
    }

    fn guard(&self) -> MultiLockGuard<'_> {
        MultiLockGuard {
            multi: self,
            released: false,
            _not_send: PhantomData,
        }
    }

    fn acquire_deadline(&self, deadline: Option<Instant>) -> Result<bool> {
        let mut taken: Vec<&Arc<dyn InterProcessLock>> = Vec::new();
        let mut outcome = Ok(true);
        for lock in &self.locks {
            match lock.acquire_until(deadline) {
                Ok(true) => taken.push(lock),
                Ok(false) => {
                    outcome = Ok(false);
                    break;
                }
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        if !matches!(outcome, Ok(true)) {
            for lock in taken.iter().rev() {
                if let Err(e) = lock.release() {
                    log::warn!("rolling back a multi-lock: releasing {}: {e}", lock.order_key().0);
                }
            }
            return outcome;
        }
        self.holders.lock().push(std::thread::current().id());
        Ok(true)
    }

    /// Releases every lock in reverse order, going on past failures.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] when the calling thread does not hold the set;
    /// [`Error::Multiple`] with every release error otherwise.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// assert!(m.release().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(&self) -> Result<()> {
        {
            let me = std::thread::current().id();
            let mut holders = self.holders.lock();
            match holders.iter().position(|t| *t == me) {
                Some(i) => {
                    holders.remove(i);
                }
                None => {
                    return Err(Error::NotOwner {
                        path: self.order().join(","),
                    })
                }
            }
        }
        let errors: Vec<Error> = self.locks.iter().rev().filter_map(|l| l.release().err()).collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Multiple(errors))
        }
    }

    /// Whether every lock is held by this process.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// assert!(!m.is_acquired_in_this_process());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.locks.iter().all(|l| l.is_acquired_in_this_process())
    }
}

impl InterProcessLock for MultiLock {
    fn acquire_until(&self, deadline: Option<Instant>) -> Result<bool> {
        self.acquire_deadline(deadline)
    }
    fn release(&self) -> Result<()> {
        MultiLock::release(self)
    }
    fn is_acquired_in_this_process(&self) -> bool {
        MultiLock::is_acquired_in_this_process(self)
    }
    fn order_key(&self) -> (String, u8) {
        self.locks[0].order_key()
    }
}

impl MultiLockGuard<'_> {
    /// Releases now and reports every error.
    ///
    /// # Errors
    ///
    /// As [`MultiLock::release`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// m.acquire()?.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        self.multi.release()
    }
}

impl Drop for MultiLockGuard<'_> {
    fn drop(&mut self) {
        if !self.released {
            if let Err(e) = self.multi.release() {
                log::warn!("releasing a multi-lock on drop: {e}");
            }
        }
    }
}
