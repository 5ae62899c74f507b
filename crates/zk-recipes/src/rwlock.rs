//! `InterProcessReadWriteLock`: readers share, a writer is exclusive, one FIFO
//! queue of `_c_<uuid>-__READ__<seq>` / `_c_<uuid>-__WRIT__<seq>` nodes, as Curator
//! lays it out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_framework::framework::CuratorFramework;
use zk_framework::paths::fix_for_sorting;

use crate::driver::{Driver, READ_LOCK_NAME, WRITE_LOCK_NAME};
use crate::error::{Error, Result};
use crate::internals::LockStatus;
use crate::mutex::{deadline_after, InterProcessMutex, InterProcessMutexGuard};

#[derive(Debug)]
struct Shared {
    read: InterProcessMutex,
    write: InterProcessMutex,
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
/// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
#[derive(Debug, Clone)]
pub struct ReadLock {
    shared: Arc<Shared>,
}

/// The write half of an [`InterProcessReadWriteLock`].
#[derive(Debug, Clone)]
pub struct WriteLock {
    shared: Arc<Shared>,
}

/// A held read lock (released on drop; `!Send`).
pub type ReadLockGuard<'a> = InterProcessMutexGuard<'a>;
/// A held write lock (released on drop; `!Send`).
pub type WriteLockGuard<'a> = InterProcessMutexGuard<'a>;

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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let rw = zk_recipes::InterProcessReadWriteLock::with_data(&client, "/locks/a", &[1, 2, 3])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_data(client: &CuratorFramework, path: &str, data: &[u8]) -> Result<Self> {
        Self::build(client, path, Some(data.to_vec()))
    }

    fn build(client: &CuratorFramework, path: &str, data: Option<Vec<u8>>) -> Result<Self> {
        let shared = Arc::new(Shared {
            read: InterProcessMutex::with_driver(client, path, READ_LOCK_NAME, Driver::Read, data.clone())?,
            write: InterProcessMutex::with_driver(client, path, WRITE_LOCK_NAME, Driver::Write, data)?,
        });
        Ok(InterProcessReadWriteLock {
            read: ReadLock { shared: shared.clone() },
            write: WriteLock { shared },
        })
    }

    /// The read half.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
    /// assert_eq!(rw.base_path(), "/locks/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn base_path(&self) -> &str {
        self.read.shared.read.base_path()
    }
}

/// Implements the shared query methods of both halves over one mutex field.
macro_rules! half_common {
    ($half:ident, $field:ident, $name:literal, $acq:literal) => {
        impl $half {
            /// Waits at most `timeout`; `Ok(None)` on timeout (zero: a
            /// non-blocking try).
            ///
            /// # Errors
            ///
            /// As `acquire`.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("let g = rw.", $acq, "().try_acquire_for(std::time::Duration::from_secs(1))?;")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_acquire_for(&self, timeout: Duration) -> Result<Option<InterProcessMutexGuard<'_>>> {
                match deadline_after(timeout) {
                    Some(d) => self.try_acquire_until(d),
                    None => self.acquire().map(Some),
                }
            }

            /// Blocks until held.
            ///
            /// # Errors
            ///
            /// As `try_acquire_until`.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("let g = rw.", $acq, "().acquire()?;")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn acquire(&self) -> Result<InterProcessMutexGuard<'_>> {
                if self.acquire_deadline(None)? {
                    Ok(self.guard())
                } else {
                    Err(Error::ZooKeeper(zk_framework::Error::Closed))
                }
            }

            /// Waits until `deadline`; `Ok(None)` if it passes first.
            ///
            /// # Errors
            ///
            /// [`Error::ZooKeeper`] when the client fails and retries run out;
            /// [`Error::UpgradeRefused`] for a write request by a read-only holder;
            /// [`Error::LockLost`] for a read request (a downgrade) by a thread whose
            /// write lock was lost with its session.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("let g = rw.", $acq, "().try_acquire_until(std::time::Instant::now())?;")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_acquire_until(&self, deadline: Instant) -> Result<Option<InterProcessMutexGuard<'_>>> {
                Ok(self.acquire_deadline(Some(deadline))?.then(|| self.guard()))
            }

            fn guard(&self) -> InterProcessMutexGuard<'_> {
                self.shared.$field.adopt_guard()
            }

            /// Curator's `release()`: releases one level held by this thread.
            ///
            /// # Errors
            ///
            /// [`Error::NotOwner`] when this thread does not hold it.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("assert!(rw.", $acq, "().release().is_err());")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn release(&self) -> Result<()> {
                self.shared.$field.release()
            }

            #[doc = concat!("Whether any thread of this instance holds the ", $name, " lock.")]
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("assert!(!rw.", $acq, "().is_acquired_in_this_process());")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn is_acquired_in_this_process(&self) -> bool {
                self.shared.$field.is_acquired_in_this_process()
            }

            #[doc = concat!("Whether the calling thread holds the ", $name, " lock.")]
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("assert!(!rw.", $acq, "().is_owned_by_current_thread());")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn is_owned_by_current_thread(&self) -> bool {
                self.shared.$field.is_owned_by_current_thread()
            }

            #[doc = concat!("Full paths of the queued ", $name, " nodes, in lock order.")]
            ///
            /// # Errors
            ///
            /// [`Error::ZooKeeper`] when the listing fails.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("let nodes = rw.", $acq, "().participant_nodes()?;")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn participant_nodes(&self) -> Result<Vec<String>> {
                let all = self.shared.$field.participant_nodes()?;
                let tag = if stringify!($field) == "read" {
                    READ_LOCK_NAME
                } else {
                    WRITE_LOCK_NAME
                };
                // Curator filters on the node name; the base path may contain the tag.
                Ok(all
                    .into_iter()
                    .filter(|p| zk_framework::proto::path::basename(p).contains(tag))
                    .collect())
            }

            /// The calling thread's node, if it holds this half.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("assert!(rw.", $acq, "().lock_path().is_none());")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn lock_path(&self) -> Option<String> {
                self.shared.$field.lock_path()
            }

            /// The calling thread's fencing token (its node's czxid).
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("let g = rw.", $acq, "().acquire()?;")]
            #[doc = concat!("assert!(rw.", $acq, "().fencing_token().is_some());")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn fencing_token(&self) -> Option<i64> {
                self.shared.$field.fencing_token()
            }

            /// Loss events for the calling thread's hold.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("let g = rw.", $acq, "().acquire()?;")]
            #[doc = concat!("let events = rw.", $acq, "().loss_receiver();")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn loss_receiver(&self) -> Option<crossbeam_channel::Receiver<crate::LockEvent>> {
                self.shared.$field.loss_receiver()
            }

            /// The lock's base path.
            ///
            /// # Examples
            ///
            /// ```no_run
            /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
            /// # let rw = zk_recipes::InterProcessReadWriteLock::new(&client, "/locks/a")?;
            #[doc = concat!("assert_eq!(rw.", $acq, "().base_path(), \"/locks/a\");")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn base_path(&self) -> &str {
                self.shared.$field.base_path()
            }

            pub(crate) fn full_path(&self) -> String {
                self.shared.$field.full_path()
            }

            /// Shared by both halves of one read/write lock.
            pub(crate) fn instance_id(&self) -> usize {
                Arc::as_ptr(&self.shared) as usize
            }
        }
    };
}

half_common!(ReadLock, read, "read", "read_lock");
half_common!(WriteLock, write, "write", "write_lock");

impl ReadLock {
    pub(crate) fn acquire_deadline(&self, deadline: Option<Instant>) -> Result<bool> {
        let s = &self.shared;
        if s.read.is_owned_by_current_thread() {
            return s.read.acquire_deadline(deadline);
        }
        // Downgrade: the write holder reads at once, with a node that carries the
        // write node's sequence (Curator 5.5+), so that it sorts where the write
        // node is and keeps later writers out after the write lock is released.
        // A write lock lost with its session grants nothing: another writer may
        // hold the lock now, and the read node would be granted unchecked.
        if let Some(write_path) = s.write.lock_path() {
            let lost = || s.write.status() == Some(LockStatus::Lost);
            if lost() {
                return Err(Error::LockLost {
                    path: s.write.base_path().to_string(),
                });
            }
            let seq = fix_for_sorting(&write_path, WRITE_LOCK_NAME).to_string();
            let held = s.read.acquire_with_sequence(deadline, &seq)?;
            // The session may have ended while the read node was being created.
            if held && lost() {
                let _ = s.read.release();
                return Err(Error::LockLost {
                    path: s.write.base_path().to_string(),
                });
            }
            return Ok(held);
        }
        s.read.acquire_deadline(deadline)
    }
}

impl WriteLock {
    pub(crate) fn acquire_deadline(&self, deadline: Option<Instant>) -> Result<bool> {
        let s = &self.shared;
        if s.read.is_owned_by_current_thread() && !s.write.is_owned_by_current_thread() {
            return Err(Error::UpgradeRefused {
                path: s.write.base_path().to_string(),
            });
        }
        s.write.acquire_deadline(deadline)
    }
}
