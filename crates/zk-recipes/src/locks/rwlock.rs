//! `InterProcessReadWriteLock`: readers share, a writer is exclusive, one FIFO
//! queue of `_c_<uuid>-__READ__<seq>` / `_c_<uuid>-__WRIT__<seq>` nodes, as Curator
//! lays it out.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Instant;

use parking_lot::Mutex;
use zk_framework::recipe::NodeKey;
use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::locks::driver::{Driver, READ_LOCK_NAME, WRITE_LOCK_NAME};
use crate::locks::holding::{Holding, LockStatus};
use crate::locks::lock::sealed::{Member, Sealed};
use crate::locks::lock::{InterProcessLock, Lock, LockGuard, LockKind, NotSend, RawLock};
use crate::locks::mutex::InterProcessMutex;

/// Read levels held per (server path, thread) through one client, across
/// every instance on it (kept by the client: [`Readers::of`]): a thread
/// holding a read lock through one instance is refused the write lock through
/// another as well (it would wait on itself forever).
#[derive(Debug, Default)]
struct Readers(Mutex<HashMap<(NodeKey, ThreadId), u32>>);

impl Readers {
    fn of(client: &CuratorFramework) -> Arc<Readers> {
        client.recipe().extension(Readers::default)
    }

    fn add(&self, node: NodeKey, delta: i64) {
        let key = (node, std::thread::current().id());
        let mut map = self.0.lock();
        let n = map.get(&key).copied().unwrap_or(0) as i64 + delta;
        if n <= 0 {
            map.remove(&key);
        } else {
            map.insert(key, n as u32);
        }
    }

    fn held_by_this_thread(&self, node: NodeKey) -> bool {
        self.0.lock().contains_key(&(node, std::thread::current().id()))
    }
}

#[derive(Debug)]
struct Shared {
    read: InterProcessMutex,
    write: InterProcessMutex,
    readers: Arc<Readers>,
}

/// A read/write lock across processes, Curator-compatible on the same path,
/// with three fixes over Curator 5.4:
///
/// * **Herd-free readers**: a blocked reader watches the nearest writer before
///   it, so a writer's release wakes only the readers it was blocking.
/// * **Safe downgrade** (CURATOR-621, as Curator 5.5+): a thread holding the
///   write lock takes the read lock at once with an ephemeral node carrying the
///   write node's sequence, so a queued writer cannot get in while the
///   downgraded read lock is held. A write lock lost with its session is not
///   downgraded ([`Error::LockLost`]): Curator grants that read at once, while
///   another writer may hold the lock.
/// * **Upgrade refused**: a thread holding only the read lock that asks for the
///   write lock gets [`Error::UpgradeRefused`] at once instead of waiting on
///   itself forever.
///
/// Both halves are reentrant per thread. Order is FIFO, so a stream of readers
/// cannot starve a queued writer.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/config")?;
/// {
///     let _r = rw.read_lock().acquire()?; // shared
/// }
/// {
///     let _w = rw.write_lock().acquire()?; // exclusive
///     let _r = rw.read_lock().acquire()?; // downgrade: immediate
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct InterProcessReadWriteLock {
    read: ReadLock,
    write: WriteLock,
}

/// The read half of an [`InterProcessReadWriteLock`].
pub type ReadLock = Lock<ReadKind>;

/// The write half of an [`InterProcessReadWriteLock`].
pub type WriteLock = Lock<WriteKind>;

/// The kind of a [`ReadLock`] (see [`Lock`]).
#[derive(Clone)]
pub struct ReadKind {
    shared: Arc<Shared>,
}

/// The kind of a [`WriteLock`] (see [`Lock`]).
#[derive(Clone)]
pub struct WriteKind {
    shared: Arc<Shared>,
    /// The read half, for [`WriteLockGuard::downgrade`].
    read: ReadLock,
}

impl std::fmt::Debug for ReadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadLock").field("shared", &self.shared).finish()
    }
}

impl std::fmt::Debug for WriteKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteLock").field("shared", &self.shared).finish()
    }
}

/// A half of a read/write lock: its mutex and the tag its nodes carry. The
/// halves' own methods are written once, over this.
mod half {
    pub trait Half {
        /// The half's mutex (its nodes, its reentrancy).
        fn mutex(&self) -> &super::InterProcessMutex;
        /// The tag in its node names (`__READ__`, `__WRIT__`).
        const TAG: &'static str;
    }
}

impl half::Half for ReadKind {
    fn mutex(&self) -> &InterProcessMutex {
        &self.shared.read
    }
    const TAG: &'static str = READ_LOCK_NAME;
}

impl half::Half for WriteKind {
    fn mutex(&self) -> &InterProcessMutex {
        &self.shared.write
    }
    const TAG: &'static str = WRITE_LOCK_NAME;
}

/// A held read lock (released on drop; `!Send`).
pub type ReadLockGuard<'a> = LockGuard<'a, ReadLock>;
/// A held write lock (released on drop; `!Send`). It can be
/// [downgraded](LockGuard::downgrade) to a read lock.
pub type WriteLockGuard<'a> = LockGuard<'a, WriteLock>;

impl InterProcessReadWriteLock {
    /// A read/write lock at `path`; nodes carry the client's default data.
    ///
    /// # Errors
    ///
    /// An invalid path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str) -> Result<Self> {
        Self::build(client, path, None)
    }

    /// A read/write lock whose nodes carry `data` (copied).
    ///
    /// # Errors
    ///
    /// An invalid path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let rw = zk_recipes::InterProcessReadWriteLock::with_data(&client, "/locks/a", vec![1, 2, 3])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_data(client: &CuratorFramework, path: &str, data: impl Into<Vec<u8>>) -> Result<Self> {
        Self::build(client, path, Some(data.into()))
    }

    fn build(client: &CuratorFramework, path: &str, data: Option<Vec<u8>>) -> Result<Self> {
        let shared = Arc::new(Shared {
            read: InterProcessMutex::with_driver(client, path, READ_LOCK_NAME, Driver::Read, data.clone())?,
            write: InterProcessMutex::with_driver(client, path, WRITE_LOCK_NAME, Driver::Write, data)?,
            readers: Readers::of(client),
        });
        let read = Lock {
            kind: ReadKind { shared: shared.clone() },
        };
        Ok(InterProcessReadWriteLock {
            read: read.clone(),
            write: Lock {
                kind: WriteKind { shared, read },
            },
        })
    }

    /// The read half.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// let r = rw.read_lock().acquire()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_lock(&self) -> &ReadLock {
        &self.read
    }

    /// The write half.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// let w = rw.write_lock().acquire()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_lock(&self) -> &WriteLock {
        &self.write
    }

    /// The lock's base path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// assert_eq!(rw.base_path(), "/locks/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn base_path(&self) -> &str {
        self.read.kind.shared.read.base_path()
    }

    /// Every read and write node, in lock order, as typed participants (node
    /// path, [`Read`](crate::locks::participants::ParticipantKind::Read) or
    /// [`Write`](crate::locks::participants::ParticipantKind::Write), session, holder
    /// identity, position, whether it holds by its half's rule, fencing
    /// token; see [`crate::inspect`]). Each half's `participant_nodes()` gives
    /// its own kind only. One listing and one read per node.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing or a read fails (a missing base
    /// path has no participants).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// for p in rw.participant_nodes()? {
    ///     println!("{} {} holds={} session={:#x} {} {}", p.position, p.kind.name(), p.holds, p.session_id, p.identity, p.node);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_nodes(&self) -> Result<Vec<crate::locks::participants::Participant>> {
        let m = &self.read.kind.shared.read;
        crate::locks::participants::participants(
            m.internals().client(),
            m.base_path(),
            crate::locks::participants::LockLayout::ReadWrite,
        )
    }
}

/// The methods of both halves, written once (the examples use the read
/// half; the write half's are the same).
impl<K: LockKind + half::Half> Lock<K> {
    /// Curator's `release()`: releases one level held by this thread.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] when this thread does not hold it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// assert!(rw.read_lock().release().is_err());
    /// assert!(rw.write_lock().release().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(&self) -> Result<()>
    where
        Self: InterProcessLock,
    {
        match self.kind.mutex().current_holding() {
            Some(h) => self.release_holding(h),
            None => Err(Error::NotOwner {
                path: self.base_path().to_string(),
            }),
        }
    }

    /// Whether any thread of this instance holds this half.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// assert!(!rw.read_lock().is_acquired_in_this_process());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.kind.mutex().is_acquired_in_this_process()
    }

    /// Whether the calling thread holds this half.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// assert!(!rw.write_lock().is_owned_by_current_thread());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_owned_by_current_thread(&self) -> bool {
        self.kind.mutex().is_owned_by_current_thread()
    }

    /// This half's queued nodes, in lock order, as typed participants: node
    /// path (Curator's `getParticipantNodes`, which filters on the node
    /// name: so does this, even when the base path contains a lock name),
    /// kind, session, holder identity, position in the whole read/write
    /// queue (readers and writers numbered together, in lock order),
    /// whether it holds by the read/write rule, fencing token (see
    /// [`InterProcessReadWriteLock::participant_nodes`] for both kinds,
    /// and [`crate::inspect`]). One listing and one read per node.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing or a read fails (a missing
    /// base path has no participants).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// for p in rw.read_lock().participant_nodes()? {
    ///     println!("{} {} holds={} {} {}", p.position, p.kind.name(), p.holds, p.identity, p.node);
    /// }
    /// let writers = rw.write_lock().participant_nodes()?.into_iter().filter(|p| p.holds).count();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_nodes(&self) -> Result<Vec<crate::locks::participants::Participant>> {
        let m = self.kind.mutex();
        // Curator filters on the node name; the base path may contain the tag.
        Ok(crate::locks::participants::participants(
            m.internals().client(),
            m.base_path(),
            crate::locks::participants::LockLayout::ReadWrite,
        )?
        .into_iter()
        .filter(|p| zk_framework::proto::path::basename(&p.node).contains(K::TAG))
        .collect())
    }

    /// Only the full paths of `participant_nodes()`, in the same order:
    /// one listing and no read, for counting a queue cheaply.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// let queued = rw.read_lock().participant_paths()?.len();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_paths(&self) -> Result<Vec<String>> {
        // Curator filters on the node name; the base path may contain the tag.
        Ok(self
            .kind
            .mutex()
            .participant_paths()?
            .into_iter()
            .filter(|p| zk_framework::proto::path::basename(p).contains(K::TAG))
            .collect())
    }

    /// The calling thread's node, if it holds this half.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// assert!(rw.read_lock().held_lock_path().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held_lock_path(&self) -> Option<String> {
        self.kind.mutex().held_lock_path()
    }

    /// The calling thread's fencing token (its node's czxid).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// let g = rw.read_lock().acquire()?;
    /// assert!(rw.read_lock().held_fencing_token().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held_fencing_token(&self) -> Option<i64> {
        self.kind.mutex().held_fencing_token()
    }

    /// Loss events for the calling thread's hold.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// let g = rw.write_lock().acquire()?;
    /// let events = rw.write_lock().held_events();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held_events(&self) -> Option<crossbeam_channel::Receiver<crate::locks::holding::LockEvent>> {
        self.kind.mutex().held_events()
    }

    /// The old name of [`held_events`](Self::held_events).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// #[allow(deprecated)]
    /// let events = rw.read_lock().held_loss_receiver();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(
        since = "0.1.0",
        note = "every recipe's event channel is `events()` (`held_events()` here)"
    )]
    pub fn held_loss_receiver(&self) -> Option<crossbeam_channel::Receiver<crate::locks::holding::LockEvent>> {
        self.held_events()
    }

    /// The lock's base path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// assert_eq!(rw.write_lock().base_path(), "/locks/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn base_path(&self) -> &str {
        self.kind.mutex().base_path()
    }

    pub(crate) fn node_key(&self) -> NodeKey {
        self.kind.mutex().node_key()
    }
}

impl RawLock for ReadLock {
    type GuardMarker = NotSend;
}

impl RawLock for WriteLock {
    type GuardMarker = NotSend;
}

impl ReadLock {
    fn acquire_read(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        let s = &self.kind.shared;
        if s.read.is_owned_by_current_thread() {
            return s.read.acquire_holding(deadline);
        }
        // Downgrade: the write holder reads at once, with a node that carries the
        // write node's sequence (Curator 5.5+), so that it sorts where the write
        // node is and keeps later writers out after the write lock is released.
        // A write lock that was lost grants nothing: another writer may hold
        // the lock now, and the read node would be granted unchecked.
        if let Some(write) = s.write.current_holding() {
            let lost = || write.status() == LockStatus::Lost;
            if lost() {
                return Err(Error::LockLost {
                    path: s.write.base_path().to_string(),
                });
            }
            let node = write.lock_path();
            let Some(seq) = crate::locks::driver::downgrade_sequence(&node) else {
                return Err(Error::InvalidArgument(format!("{node} is not a write lock node")));
            };
            let held = s.read.acquire_with_sequence(deadline, seq)?;
            // The session may have ended while the read node was being created.
            if let Some(h) = held {
                if lost() {
                    let _ = s.read.release_holding(h);
                    return Err(Error::LockLost {
                        path: s.write.base_path().to_string(),
                    });
                }
                return Ok(Some(h));
            }
            return Ok(None);
        }
        s.read.acquire_holding(deadline)
    }
}

impl InterProcessLock for ReadLock {
    fn release(&self) -> Result<()> {
        ReadLock::release(self)
    }

    fn acquire_holding(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        let h = self.acquire_read(deadline)?;
        if h.is_some() {
            self.kind.shared.readers.add(self.node_key(), 1);
        }
        Ok(h)
    }

    fn release_holding(&self, holding: Holding) -> Result<()> {
        let r = self.kind.shared.read.release_holding(holding);
        if !matches!(r, Err(Error::NotOwner { .. })) {
            self.kind.shared.readers.add(self.node_key(), -1);
        }
        r
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.kind.shared.read.is_acquired_in_this_process()
    }
}

impl Member for ReadLock {
    fn order_key(&self) -> (String, u8) {
        (self.node_key().to_string(), 2)
    }

    fn instance_id(&self) -> usize {
        Arc::as_ptr(&self.kind.shared) as usize
    }
}

impl InterProcessLock for WriteLock {
    fn release(&self) -> Result<()> {
        WriteLock::release(self)
    }

    fn acquire_holding(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        let s = &self.kind.shared;
        // An upgrade would wait on our own read node forever: refuse it, also
        // when the read lock is held through another instance on this path
        // (of the same client).
        if !s.write.is_owned_by_current_thread()
            && (s.read.is_owned_by_current_thread() || s.readers.held_by_this_thread(self.node_key()))
        {
            return Err(Error::UpgradeRefused {
                path: s.write.base_path().to_string(),
            });
        }
        s.write.acquire_holding(deadline)
    }

    fn release_holding(&self, holding: Holding) -> Result<()> {
        self.kind.shared.write.release_holding(holding)
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.kind.shared.write.is_acquired_in_this_process()
    }
}

impl Member for WriteLock {
    fn order_key(&self) -> (String, u8) {
        (self.node_key().to_string(), 1)
    }

    fn instance_id(&self) -> usize {
        Arc::as_ptr(&self.kind.shared) as usize
    }
}

impl<'a> LockGuard<'a, WriteLock> {
    /// Downgrades to a read lock without letting a writer in between: the read
    /// lock is taken at once (its node sorts where the write node is), then
    /// the write lock is released.
    ///
    /// # Errors
    ///
    /// [`Error::LockLost`] when the write lock had been lost (nothing is held
    /// then); the errors of the read node's create or the write release (the
    /// read lock is released again then).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// let w = rw.write_lock().acquire()?;
    /// let r = w.downgrade()?; // readers may join now; writers still wait
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn downgrade(self) -> Result<ReadLockGuard<'a>> {
        let (write, holding) = self.into_parts();
        let read = &write.kind.read;
        let r = match crate::locks::lock::acquire_blocking(read) {
            Ok(r) => r,
            Err(e) => {
                let _ = write.release_holding(holding);
                return Err(e);
            }
        };
        let guard = LockGuard::new(read, r);
        write.release_holding(holding)?;
        Ok(guard)
    }
}

impl Sealed for ReadKind {}

impl LockKind for ReadKind {}

impl Sealed for WriteKind {}

impl LockKind for WriteKind {}
