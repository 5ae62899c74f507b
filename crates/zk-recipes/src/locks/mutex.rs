//! `InterProcessMutex`: a reentrant, Curator-compatible distributed mutex.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use zk_framework::recipe::NodeKey;
use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::locks::driver::{Driver, MUTEX_LOCK_NAME};
use crate::locks::holding::{Holding, LockEvent, LockStatus};
use crate::locks::internals::LockInternals;
use crate::locks::lock::sealed::{Member, Sealed};
use crate::locks::lock::{deadline_after, InterProcessLock, Lock, LockGuard, LockKind, NotSend, RawLock};
use crate::locks::revoke::{RevocationListener, Revocations};

/// A thread's hold: the holding and how many levels it has taken.
struct Hold {
    holding: Holding,
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
/// use zk_framework::CuratorFramework;
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
pub type InterProcessMutex = Lock<MutexKind>;

/// The kind of an [`InterProcessMutex`] (its state; see [`Lock`]).
pub struct MutexKind {
    internals: LockInternals,
    threads: Mutex<HashMap<ThreadId, Hold>>,
    revocation: Revocations,
    data: Option<Vec<u8>>,
}

impl std::fmt::Debug for MutexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessMutex")
            .field("path", &self.internals.base_path())
            .field("holders", &self.threads.lock().len())
            .finish()
    }
}

/// Holds one level of an [`InterProcessMutex`]; releases it when dropped.
/// It is `!Send`: ownership belongs to the thread that acquired.
pub type InterProcessMutexGuard<'a> = LockGuard<'a, InterProcessMutex>;

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
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(zk_recipes::InterProcessMutex::new(&client, "relative").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str) -> Result<Self> {
        InterProcessMutex::with_driver(client, path, MUTEX_LOCK_NAME, Driver::MUTEX, None)
    }

    /// A mutex whose lock nodes carry `data` instead of the holder identity
    /// (`Vec<u8>`, `&[u8]`, `&str`, ...: every lock's `with_data` takes the
    /// same).
    ///
    /// # Errors
    ///
    /// As [`InterProcessMutex::new`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessMutex::with_data(&client, "/locks/a", b"worker-7".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_data(client: &CuratorFramework, path: &str, data: impl Into<Vec<u8>>) -> Result<Self> {
        InterProcessMutex::with_driver(client, path, MUTEX_LOCK_NAME, Driver::MUTEX, Some(data.into()))
    }

    pub(crate) fn with_driver(
        client: &CuratorFramework,
        path: &str,
        lock_name: &'static str,
        driver: Driver,
        data: Option<Vec<u8>>,
    ) -> Result<Self> {
        Ok(Lock {
            kind: MutexKind {
                internals: LockInternals::new(client.clone(), path, lock_name, driver)?,
                threads: Mutex::new(HashMap::new()),
                revocation: Revocations::default(),
                data,
            },
        })
    }

    /// As the timed acquire, with a non-sequential node carrying `seq` (the
    /// read/write lock's downgrade).
    pub(crate) fn acquire_with_sequence(&self, deadline: Option<Instant>, seq: &str) -> Result<Option<Holding>> {
        self.acquire_inner(deadline, Some(seq))
    }

    pub(crate) fn internals(&self) -> &LockInternals {
        &self.kind.internals
    }

    /// The base node's key (the server's path): the canonical order of a
    /// multi-lock.
    pub(crate) fn node_key(&self) -> NodeKey {
        self.kind
            .internals
            .client()
            .recipe()
            .node_key(self.kind.internals.base_path())
    }

    fn acquire_inner(&self, deadline: Option<Instant>, seq: Option<&str>) -> Result<Option<Holding>> {
        let me = std::thread::current().id();
        if let Some(h) = self.kind.threads.lock().get_mut(&me) {
            // Reentry: no request, but never on a lost lock.
            if h.holding.status() == LockStatus::Lost {
                return Err(Error::LockLost {
                    path: self.base_path().to_string(),
                });
            }
            h.count = h
                .count
                .checked_add(1)
                .ok_or_else(|| Error::InvalidArgument("too many reentrant acquires".into()))?;
            return Ok(Some(h.holding.share()));
        }
        let data = if self.kind.revocation.is_armed() {
            Some(Vec::new())
        } else {
            self.kind.data.clone()
        };
        match self.kind.internals.attempt_lock(deadline, data, seq)? {
            Some(holding) => {
                self.kind
                    .revocation
                    .on_acquired(&self.kind.internals, &holding.lock_path());
                self.kind.threads.lock().insert(
                    me,
                    Hold {
                        holding: holding.share(),
                        count: 1,
                    },
                );
                Ok(Some(holding))
            }
            None => Ok(None),
        }
    }

    /// Releases one level of `holding` for the calling thread.
    fn release_level(&self, holding: Holding) -> Result<()> {
        let me = std::thread::current().id();
        let last = {
            let mut threads = self.kind.threads.lock();
            let Some(h) = threads.get_mut(&me).filter(|h| h.holding.same(&holding)) else {
                return Err(Error::NotOwner {
                    path: self.kind.internals.base_path().to_string(),
                });
            };
            h.count -= 1;
            if h.count > 0 {
                None
            } else {
                threads.remove(&me)
            }
        };
        match last {
            Some(_) => {
                self.kind.revocation.on_released();
                holding.release_node()
            }
            None if holding.status() == LockStatus::Lost => Err(Error::LockLost {
                path: self.base_path().to_string(),
            }),
            None => Ok(()),
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
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(m.release().is_err()); // not held
    /// m.acquire_raw()?;
    /// m.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(&self) -> Result<()> {
        let mine = self
            .kind
            .threads
            .lock()
            .get(&std::thread::current().id())
            .map(|h| h.holding.share());
        match mine {
            Some(h) => self.release_level(h),
            None => Err(Error::NotOwner {
                path: self.kind.internals.base_path().to_string(),
            }),
        }
    }

    /// Curator's `acquire()`: takes one level for the calling thread, without a
    /// guard. Pair it with [`InterProcessMutex::release`]. It serves code
    /// ported from Curator whose acquire and release sit in different
    /// functions (a callback pair, a state machine); new code uses the guard,
    /// which cannot be forgotten.
    ///
    /// # Errors
    ///
    /// As [`InterProcessMutex::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// m.acquire_raw()?;
    /// m.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_raw(&self) -> Result<()> {
        // The raw form keeps no guard: the level stays in the thread's count.
        crate::locks::lock::acquire_blocking(self).map(drop)
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
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// if m.acquire_raw_for(std::time::Duration::from_millis(100))? {
    ///     m.release()?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_raw_for(&self, timeout: Duration) -> Result<bool> {
        Ok(crate::locks::lock::acquire_until(self, deadline_after(timeout))?.is_some())
    }

    /// Whether any thread of this instance holds the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert!(!m.is_acquired_in_this_process());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_acquired_in_this_process(&self) -> bool {
        !self.kind.threads.lock().is_empty()
    }

    /// Whether the calling thread holds the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(m.is_owned_by_current_thread());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_owned_by_current_thread(&self) -> bool {
        self.kind.threads.lock().contains_key(&std::thread::current().id())
    }

    /// How many levels the calling thread holds.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let a = m.acquire()?;
    /// let b = m.acquire()?;
    /// assert_eq!(m.hold_count(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hold_count(&self) -> u32 {
        self.kind
            .threads
            .lock()
            .get(&std::thread::current().id())
            .map_or(0, |h| h.count)
    }

    /// Every node queued on the lock, in lock order (the holder first), as
    /// typed participants: the node's full path (as Curator's
    /// `getParticipantNodes`; a [`Participant`](crate::locks::participants::Participant)
    /// displays as, compares with and borrows as that path), its kind
    /// ([`ParticipantKind::Mutex`](crate::locks::participants::ParticipantKind::Mutex)),
    /// owning session, holder identity, position, whether it holds (by the
    /// lock's own rule, [`crate::Driver`]), fencing token and creation time
    /// (see [`crate::inspect`]). One listing and one read per node; a node
    /// that vanishes while it is read is left out.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing or a read fails (a missing base
    /// path has no participants).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// # client.block_until_connected(std::time::Duration::from_secs(10))?;
    /// use zk_recipes::ParticipantKind;
    ///
    /// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/typed")?;
    /// let guard = m.acquire()?;
    /// let ps = m.participant_nodes()?;
    /// assert_eq!(ps.len(), 1);
    /// let p = &ps[0];
    /// assert_eq!(p.node, guard.lock_path());
    /// assert_eq!((p.kind, p.position, p.holds), (ParticipantKind::Mutex, 0, true));
    /// assert_eq!(p.session_id, client.session_id());
    /// assert_eq!(p.fencing_token, guard.fencing_token());
    /// println!("{p} held by {} for {:?}", p.identity, p.age());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_nodes(&self) -> Result<Vec<crate::locks::participants::Participant>> {
        crate::locks::participants::participants(
            self.kind.internals.client(),
            self.base_path(),
            crate::locks::participants::LockLayout::Mutex,
        )
    }

    /// Only the full paths of [`participant_nodes`](Self::participant_nodes),
    /// in the same order: one listing and no read, for counting a queue
    /// cheaply (a poll that must not add reads, as the benchmarks' waits
    /// before they count requests).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let queued = m.participant_paths()?.len();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_paths(&self) -> Result<Vec<String>> {
        self.kind.internals.participant_paths()
    }

    /// The lock's base path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert_eq!(m.base_path(), "/locks/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn base_path(&self) -> &str {
        self.kind.internals.base_path()
    }

    /// The calling thread's lock node, if it holds the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(m.held_lock_path().unwrap().starts_with("/locks/a/_c_"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held_lock_path(&self) -> Option<String> {
        self.with_holding(Holding::lock_path)
    }

    /// The fencing token of the calling thread's hold: its lock node's czxid. It
    /// increases with every grant of this lock, across sessions and processes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert_eq!(m.held_fencing_token(), Some(g.fencing_token()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held_fencing_token(&self) -> Option<i64> {
        self.with_holding(Holding::fencing_token)
    }

    /// The calling thread's lock status (`None` when it does not hold the lock).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// assert_eq!(m.held_status(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held_status(&self) -> Option<LockStatus> {
        self.with_holding(Holding::status)
    }

    /// Loss events for the calling thread's hold: `Suspended` (uncertain),
    /// `Reconnected`, `Lost` (certain). `None` when it does not hold the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// let events = m.held_events();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held_events(&self) -> Option<Receiver<LockEvent>> {
        self.with_holding(Holding::events)
    }

    /// The old name of [`held_events`](Self::held_events).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// #[allow(deprecated)]
    /// let events = m.held_loss_receiver();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(
        since = "0.1.0",
        note = "every recipe's event channel is `events()` (`held_events()` here)"
    )]
    pub fn held_loss_receiver(&self) -> Option<Receiver<LockEvent>> {
        self.held_events()
    }

    /// Curator's `makeRevocable`: before acquiring, ask to be told when another
    /// process calls [`crate::Revoker::attempt_revoke`] on our node. The listener
    /// runs on a helper thread; revocation is cooperative (the holder decides
    /// whether to release). It applies to the next acquire only.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// m.make_revocable(|| println!("someone wants the lock"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn make_revocable(&self, listener: impl Fn() + Send + Sync + 'static) {
        self.kind.revocation.arm(Arc::new(listener) as RevocationListener);
    }

    /// Another handle on the calling thread's holding, if it holds the lock.
    pub(crate) fn current_holding(&self) -> Option<Holding> {
        self.with_holding(Holding::share)
    }

    fn with_holding<T>(&self, f: impl FnOnce(&Holding) -> T) -> Option<T> {
        self.kind
            .threads
            .lock()
            .get(&std::thread::current().id())
            .map(|h| f(&h.holding))
    }
}

impl InterProcessLock for InterProcessMutex {
    fn release(&self) -> Result<()> {
        InterProcessMutex::release(self)
    }

    fn acquire_holding(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        self.acquire_inner(deadline, None)
    }

    fn release_holding(&self, holding: Holding) -> Result<()> {
        self.release_level(holding)
    }

    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessMutex::is_acquired_in_this_process(self)
    }
}

impl Member for InterProcessMutex {
    fn order_key(&self) -> (String, u8) {
        (self.node_key().to_string(), 0)
    }
}

impl RawLock for InterProcessMutex {
    type GuardMarker = NotSend;
}

impl Sealed for MutexKind {}

impl LockKind for MutexKind {}
