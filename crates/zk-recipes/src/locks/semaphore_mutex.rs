//! `InterProcessSemaphoreMutex`: a non-reentrant mutex on a one-lease
//! [`InterProcessSemaphoreV2`] (Curator's layout), whose guard any thread may
//! release.

use std::time::Instant;

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use zk_framework::recipe::NodeKey;
use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::locks::holding::{Holding, LockEvent};
use crate::locks::lock::sealed::{Member, Sealed};
use crate::locks::lock::{InterProcessLock, Lock, LockGuard, LockKind, RawLock};
use crate::locks::semaphore::InterProcessSemaphoreV2;

/// A non-reentrant distributed mutex built on a one-lease
/// [`InterProcessSemaphoreV2`] (Curator's `InterProcessSemaphoreMutex`). Its
/// guard is `Send`: any thread may release.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/jobs")?;
/// let guard = m.acquire()?;
/// std::thread::scope(|s| {
///     s.spawn(move || drop(guard)); // released by another thread
/// });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type InterProcessSemaphoreMutex = Lock<SemaphoreMutexKind>;

/// The kind of an [`InterProcessSemaphoreMutex`] (its state; see [`Lock`]).
pub struct SemaphoreMutexKind {
    semaphore: InterProcessSemaphoreV2,
    /// The holding of the current holder (any thread may release it).
    held: Mutex<Option<Holding>>,
    base_path: String,
}

impl std::fmt::Debug for SemaphoreMutexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessSemaphoreMutex")
            .field("path", &self.base_path)
            .field("held", &self.held.lock().is_some())
            .finish()
    }
}

/// Holds an [`InterProcessSemaphoreMutex`]; releases it when dropped. `Send`:
/// another thread may release it.
pub type InterProcessSemaphoreMutexGuard<'a> = LockGuard<'a, InterProcessSemaphoreMutex>;

impl InterProcessSemaphoreMutex {
    /// A semaphore mutex at `path` (nodes under `path/locks` and `path/leases`).
    ///
    /// # Errors
    ///
    /// An invalid path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str) -> Result<Self> {
        Ok(Lock {
            kind: SemaphoreMutexKind {
                semaphore: InterProcessSemaphoreV2::new(client, path, 1)?,
                held: Mutex::new(None),
                base_path: path.to_string(),
            },
        })
    }

    fn acquire_lease(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        match self.kind.semaphore.acquire_holding(deadline)? {
            Some(holding) => {
                let old = self.kind.held.lock().replace(holding.share());
                if let Some(old) = old {
                    // Cannot happen with one lease, but never leak a node.
                    let _ = self.kind.semaphore.release_holding(old);
                }
                Ok(Some(holding))
            }
            None => Ok(None),
        }
    }

    /// Curator's `acquire()` without a guard; pair with
    /// [`InterProcessSemaphoreMutex::release`] (from any thread). It serves
    /// code ported from Curator whose acquire and release sit in different
    /// functions or threads; new code uses the guard, which is `Send` too.
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreMutex::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// m.acquire_raw()?;
    /// m.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_raw(&self) -> Result<()> {
        // The raw form keeps no guard: the holding stays with the lock.
        crate::locks::lock::acquire_blocking(self).map(drop)
    }

    /// Releases the lock, from any thread.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] when it is not held; [`Error::ZooKeeper`] when the
    /// delete failed (it goes on in the background).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// assert!(m.release().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(&self) -> Result<()> {
        let held = self.kind.held.lock().as_ref().map(Holding::share);
        match held {
            Some(h) => self.release_holding(h),
            None => Err(Error::NotOwner {
                path: self.kind.base_path.clone(),
            }),
        }
    }

    /// Whether this instance holds the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// assert!(!m.is_acquired_in_this_process());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.kind.held.lock().is_some()
    }

    /// The base path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// assert_eq!(m.base_path(), "/locks/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn base_path(&self) -> &str {
        &self.kind.base_path
    }

    pub(crate) fn node_key(&self) -> NodeKey {
        self.kind.semaphore.node_key()
    }

    /// The lease nodes, in sequence order, as typed participants (the
    /// holder's first; see [`InterProcessSemaphoreV2::participant_nodes`]).
    /// A waiter still in the internal mutex's queue, before it creates its
    /// lease node, is in [`lease_queue`](Self::lease_queue).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing or a read fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// if let Some(h) = m.participant_nodes()?.into_iter().find(|p| p.holds) {
    ///     println!("held by {} (session {:#x}, token {}) at {h}", h.identity, h.session_id, h.fencing_token);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_nodes(&self) -> Result<Vec<crate::locks::participants::Participant>> {
        self.kind.semaphore.participant_nodes()
    }

    /// Only the full paths of the lease nodes, in the same order (see
    /// [`InterProcessSemaphoreV2::participant_paths`]).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let leases = m.participant_paths()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_paths(&self) -> Result<Vec<String>> {
        self.kind.semaphore.participant_paths()
    }

    /// The internal mutex's queue, as typed participants (see
    /// [`InterProcessSemaphoreV2::lease_queue`]).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing or a read fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let waiting = m.lease_queue()?.len();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lease_queue(&self) -> Result<Vec<crate::locks::participants::Participant>> {
        self.kind.semaphore.lease_queue()
    }

    /// The fencing token of the held lease.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(m.held_fencing_token().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held_fencing_token(&self) -> Option<i64> {
        self.kind.held.lock().as_ref().map(Holding::fencing_token)
    }

    /// Loss events for the held lock (`None` when not held).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// let rx = m.held_events();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held_events(&self) -> Option<Receiver<LockEvent>> {
        self.kind.held.lock().as_ref().map(Holding::events)
    }

    /// The old name of [`held_events`](Self::held_events).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// #[allow(deprecated)]
    /// let rx = m.held_loss_receiver();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(
        since = "0.1.0",
        note = "every recipe's event channel is `events()` (`held_events()` here)"
    )]
    pub fn held_loss_receiver(&self) -> Option<Receiver<LockEvent>> {
        self.held_events()
    }
}

impl InterProcessLock for InterProcessSemaphoreMutex {
    fn release(&self) -> Result<()> {
        InterProcessSemaphoreMutex::release(self)
    }

    fn acquire_holding(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        self.acquire_lease(deadline)
    }

    fn release_holding(&self, holding: Holding) -> Result<()> {
        {
            let mut held = self.kind.held.lock();
            match held.as_ref() {
                Some(h) if h.same(&holding) => *held = None,
                _ => {
                    return Err(Error::NotOwner {
                        path: self.kind.base_path.clone(),
                    })
                }
            }
        }
        self.kind.semaphore.release_holding(holding)
    }

    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessSemaphoreMutex::is_acquired_in_this_process(self)
    }
}

impl Member for InterProcessSemaphoreMutex {
    fn order_key(&self) -> (String, u8) {
        (self.node_key().to_string(), 0)
    }
}

impl RawLock for InterProcessSemaphoreMutex {
    /// Any thread may release a semaphore mutex.
    type GuardMarker = ();
}

impl Sealed for SemaphoreMutexKind {}

impl LockKind for SemaphoreMutexKind {}
