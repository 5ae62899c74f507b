//! `InterProcessSemaphoreV2` (N leases) with Curator's layout: `<path>/locks`
//! holds an internal mutex taken while obtaining a lease, and `<path>/leases`
//! holds one `_c_<uuid>-lease-<seq>` node per lease. Both waits are the lock
//! core's ([`LockInternals`]): the internal mutex with the mutex driver, the
//! lease with the lease driver (granted while at most `max_leases` leases
//! exist). A lease is the generic owned guard.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_framework::proto::path::{basename, join};
use zk_framework::proto::{CreateMode, Stat};
use zk_framework::recipe::NodeKey;
use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::locks::driver::{Driver, LEASE_NAME, MUTEX_LOCK_NAME};
use crate::locks::holding::{GrantedNode, Holding};
use crate::locks::internals::{timed_out, Attempt, LockInternals, Requeue};
use crate::locks::lock::sealed::Member;
use crate::locks::lock::{deadline_after, ArcLockGuard, InterProcessLock, RawLock};

/// One lease of an [`InterProcessSemaphoreV2`]: the generic owned guard
/// ([`ArcLockGuard`]), `Send`, returned when dropped (a delete of its node,
/// waited for within the release bound, then in the background). Its status
/// tells the truth from the grant on (see [`Holding`]); `lock_path()` is the
/// lease node.
pub type Lease = ArcLockGuard<InterProcessSemaphoreV2>;

/// A counting semaphore across processes: at most `max_leases` leases are out
/// at once. Curator-compatible with `InterProcessSemaphoreV2` on the same
/// path. Cheap to clone (clones share the instance). As an
/// [`InterProcessLock`] it takes one lease, so it can be a member of a
/// [`crate::MultiLock`].
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let sem = zk_recipes::InterProcessSemaphoreV2::new(&client, "/pools/db", 3)?;
/// let lease = sem.acquire()?;
/// // at most 3 processes are here
/// drop(lease);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct InterProcessSemaphoreV2 {
    inner: Arc<Inner>,
}

struct Inner {
    client: CuratorFramework,
    base_path: String,
    /// The internal mutex (`<path>/locks`).
    mutex: LockInternals,
    /// The leases (`<path>/leases`), with the lease driver.
    leases: LockInternals,
    max_leases: u32,
    data: Option<Vec<u8>>,
    stats: Arc<crate::locks::stats::PathStats>,
    /// Leases this instance handed out and that are not returned yet.
    out: AtomicUsize,
}

impl std::fmt::Debug for InterProcessSemaphoreV2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessSemaphoreV2")
            .field("path", &self.inner.base_path)
            .field("max_leases", &self.inner.max_leases)
            .finish()
    }
}

/// What one try at a lease ended with: the lease node won (with the internal
/// mutex node that travels with it, on the one-lease path), a deadline, or a
/// vanished node.
enum Try {
    Won(GrantedNode, Option<String>),
    TimedOut,
    Missing,
}

impl From<Attempt> for Try {
    fn from(a: Attempt) -> Try {
        match a {
            Attempt::Won(node) => Try::Won(node.granted(), None),
            // (A semaphore's waits are never cancelled: no cancel channel.)
            Attempt::TimedOut | Attempt::Cancelled => Try::TimedOut,
            Attempt::Missing => Try::Missing,
        }
    }
}

impl InterProcessSemaphoreV2 {
    /// A semaphore at `path` with `max_leases` leases.
    ///
    /// # Errors
    ///
    /// An invalid path; [`Error::InvalidArgument`] for zero leases.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, max_leases: u32) -> Result<Self> {
        Self::build(client, path, max_leases, None)
    }

    fn build(client: &CuratorFramework, path: &str, max_leases: u32, data: Option<Vec<u8>>) -> Result<Self> {
        if max_leases == 0 {
            return Err(Error::InvalidArgument("a semaphore needs at least one lease".into()));
        }
        zk_framework::proto::path::validate_path(path, false).map_err(zk_framework::Error::from)?;
        if path == "/" {
            return Err(Error::InvalidArgument(
                "a semaphore cannot live at the root path".into(),
            ));
        }
        Ok(InterProcessSemaphoreV2 {
            inner: Arc::new(Inner {
                client: client.clone(),
                base_path: path.to_string(),
                mutex: LockInternals::new(client.clone(), &join(path, "locks"), MUTEX_LOCK_NAME, Driver::MUTEX)?,
                leases: LockInternals::new(
                    client.clone(),
                    &join(path, "leases"),
                    LEASE_NAME,
                    Driver::Lease {
                        max_leases: max_leases as usize,
                    },
                )?,
                max_leases,
                data,
                stats: crate::locks::stats::for_path(client, &client.recipe().node_key(path)),
                out: AtomicUsize::new(0),
            }),
        })
    }

    /// A semaphore whose lease nodes carry `data` instead of the holder
    /// identity (as every lock's `with_data`).
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreV2::new`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::InterProcessSemaphoreV2::with_data(&client, "/sem", 1, "me")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_data(client: &CuratorFramework, path: &str, max_leases: u32, data: impl Into<Vec<u8>>) -> Result<Self> {
        Self::build(client, path, max_leases, Some(data.into()))
    }

    /// The number of leases.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 4)?.max_leases(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_leases(&self) -> u32 {
        self.inner.max_leases
    }

    /// The semaphore's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 4)?.base_path(), "/sem");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn base_path(&self) -> &str {
        &self.inner.base_path
    }

    /// The base node's key: the canonical order of a multi-lock.
    pub(crate) fn node_key(&self) -> NodeKey {
        self.inner.client.recipe().node_key(&self.inner.base_path)
    }

    /// Blocks until a lease is available.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the client fails and retries run out;
    /// [`Error::NodeVanished`] when our lease node keeps vanishing.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire(&self) -> Result<Lease> {
        crate::locks::lock::acquire_blocking(self).map(|h| self.lease(h))
    }

    /// Waits at most `timeout` for a lease; `Ok(None)` on timeout.
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreV2::acquire`]; [`Error::NoAnswer`] when
    /// ZooKeeper did not answer by the deadline.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.try_acquire_for(std::time::Duration::from_millis(500))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_for(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.lease_until(deadline_after(timeout))
    }

    /// Waits until `deadline` for a lease; `Ok(None)` if it passes first.
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreV2::try_acquire_for`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.try_acquire_until(std::time::Instant::now())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_until(&self, deadline: Instant) -> Result<Option<Lease>> {
        self.lease_until(Some(deadline))
    }

    /// Blocks until `n` leases are held, all or none (leases taken before a
    /// failure are returned).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `n` is zero or more than
    /// [`max_leases`](Self::max_leases); as [`acquire`](Self::acquire)
    /// otherwise.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 3)?;
    /// let leases = s.acquire_many(2)?;
    /// assert_eq!(leases.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_many(&self, n: u32) -> Result<Vec<Lease>> {
        self.many_until(n, None)?
            .ok_or(Error::ZooKeeper(zk_framework::Error::Closed))
    }

    /// Waits at most `timeout` for `n` leases, all or none: `Ok(None)` (and
    /// every lease taken meanwhile returned) when it passes first.
    ///
    /// # Errors
    ///
    /// As [`acquire_many`](Self::acquire_many) and
    /// [`try_acquire_for`](Self::try_acquire_for).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 3)?;
    /// if let Some(leases) = s.try_acquire_many_for(2, std::time::Duration::from_secs(1))? {
    ///     assert_eq!(leases.len(), 2);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_many_for(&self, n: u32, timeout: Duration) -> Result<Option<Vec<Lease>>> {
        self.many_until(n, deadline_after(timeout))
    }

    /// Waits until `deadline` for `n` leases, all or none (see
    /// [`try_acquire_many_for`](Self::try_acquire_many_for)).
    ///
    /// # Errors
    ///
    /// As [`try_acquire_many_for`](Self::try_acquire_many_for).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 3)?;
    /// let leases = s.try_acquire_many_until(2, std::time::Instant::now())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_many_until(&self, n: u32, deadline: Instant) -> Result<Option<Vec<Lease>>> {
        self.many_until(n, Some(deadline))
    }

    fn lease_until(&self, deadline: Option<Instant>) -> Result<Option<Lease>> {
        Ok(crate::locks::lock::acquire_until(self, deadline)?.map(|h| self.lease(h)))
    }

    fn many_until(&self, n: u32, deadline: Option<Instant>) -> Result<Option<Vec<Lease>>> {
        if n == 0 || n > self.inner.max_leases {
            return Err(Error::InvalidArgument(format!(
                "cannot acquire {n} leases of a semaphore with {}",
                self.inner.max_leases
            )));
        }
        let mut leases = Vec::with_capacity(n as usize);
        for _ in 0..n {
            match crate::locks::lock::acquire_until(self, deadline)? {
                Some(h) => leases.push(self.lease(h)),
                None => return Ok(None), // dropping `leases` returns them
            }
        }
        Ok(Some(leases))
    }

    fn lease(&self, holding: Holding) -> Lease {
        ArcLockGuard::new(Arc::new(self.clone()), holding)
    }

    /// The lease nodes (held and pending), in sequence order, as typed
    /// participants: the node's full path (Curator's `getParticipantNodes`
    /// set; a [`Participant`](crate::locks::participants::Participant) displays as,
    /// compares with and borrows as that path), kind
    /// [`Lease`](crate::locks::participants::ParticipantKind::Lease), owning session,
    /// holder identity, position among the leases, whether it holds (judged
    /// with this semaphore's number of leases), fencing token (see
    /// [`crate::inspect`]). The contenders still in the internal mutex's
    /// queue, on their way to a lease node, are [`lease_queue`](Self::lease_queue).
    /// One listing and one read per node.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing or a read fails (a missing path
    /// has no participants).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 3)?;
    /// let leases = s.participant_nodes()?;
    /// assert!(leases.iter().filter(|p| p.holds).count() <= 3);
    /// for p in &leases {
    ///     println!("{} holds={} session={:#x} {} {p}", p.position, p.holds, p.session_id, p.identity);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_nodes(&self) -> Result<Vec<crate::locks::participants::Participant>> {
        crate::locks::participants::semaphore_leases(
            &self.inner.client,
            &self.inner.base_path,
            Some(self.inner.max_leases),
        )
    }

    /// Only the full paths of [`participant_nodes`](Self::participant_nodes),
    /// in the same order: one listing and no read, for counting leases
    /// cheaply.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 3)?;
    /// let leases = s.participant_paths()?.len();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_paths(&self) -> Result<Vec<String>> {
        let mut kids = match self.inner.client.get_children(self.inner.leases.base_path()) {
            Ok(k) => k,
            Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        zk_framework::paths::sort_by_sequence(&mut kids, LEASE_NAME);
        Ok(kids
            .into_iter()
            .map(|k| join(self.inner.leases.base_path(), &k))
            .collect())
    }

    /// The internal mutex's queue (`<path>/locks`), in lock order, as typed
    /// participants of kind
    /// [`LeaseQueue`](crate::locks::participants::ParticipantKind::LeaseQueue): the
    /// contenders on their way to a lease node (Curator's acquirers while
    /// they get a lease; ours also while they hold one). None of them counts
    /// as holding. With [`participant_nodes`](Self::participant_nodes) it is
    /// what [`crate::inspect::inspect_as`] reports for a semaphore.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing or a read fails (a missing path
    /// has an empty queue).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 3)?;
    /// for p in s.lease_queue()? {
    ///     println!("{} queued {:?} ago by {}", p.position, p.age(), p.identity);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lease_queue(&self) -> Result<Vec<crate::locks::participants::Participant>> {
        crate::locks::participants::semaphore_queue(&self.inner.client, &self.inner.base_path)
    }

    /// One lease, counted in the figures: the one-lease fast path, or
    /// Curator's way (the internal mutex held while the lease is obtained).
    fn acquire_lease(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        let i = &self.inner;
        let waiting = i.stats.start_wait();
        let r = if i.max_leases == 1 {
            self.retrying_missing(deadline, |zk| {
                let pair = self.create_pair(zk)?;
                self.settle_pair(zk, pair)
            })
        } else {
            self.retrying_missing(deadline, |zk| {
                // Held for a moment only: no loss tracking for it.
                let Some(mutex_node) = i.mutex.attempt_untracked(deadline)? else {
                    return Ok(Try::TimedOut);
                };
                let attempt = i.leases.attempt_once(zk, i.data.clone(), None);
                i.mutex.delete_node(&mutex_node, deadline);
                attempt.map(Try::from)
            })
        };
        waiting.finish_with(&r);
        if r.as_ref().is_ok_and(Option::is_some) {
            i.out.fetch_add(1, Ordering::SeqCst);
        }
        r
    }

    /// Runs `attempt` (with a handle bounded by the deadline) until it gets
    /// a lease or times out; a vanished node (or a session change) is tried
    /// again as the client's retry policy allows, never past the deadline.
    fn retrying_missing(
        &self,
        deadline: Option<Instant>,
        mut attempt: impl FnMut(&CuratorFramework) -> Result<Try>,
    ) -> Result<Option<Holding>> {
        let i = &self.inner;
        let zk = i.client.with_deadline(deadline);
        let mut requeue = Requeue::new(&i.client, deadline);
        loop {
            let outcome = match attempt(&zk) {
                Err(Error::ZooKeeper(zk_framework::Error::SessionExpired)) => Try::Missing,
                r => r?,
            };
            match outcome {
                Try::Won(node, mutex_node) => {
                    return Ok(Some(Holding::granted(
                        &i.client,
                        &i.base_path,
                        node,
                        mutex_node,
                        &i.stats,
                    )))
                }
                Try::TimedOut => return timed_out(&i.client),
                Try::Missing => {
                    if !requeue.pause(i.leases.base_path())? {
                        return timed_out(&i.client);
                    }
                }
            }
        }
    }

    /// The one-lease fast path: one transaction creates our internal-mutex
    /// node and our lease, pipelined with listings of both directories, so an
    /// uncontended acquire takes one round trip; the holder keeps the
    /// internal mutex while it holds the lease and returns both in one
    /// round trip (four requests per cycle, against Curator's seven).
    /// Curator's protocol is kept: a lease is held only by the internal
    /// mutex's holder when at most one lease exists; a contender that is not
    /// first in the mutex queue drops its lease at once and waits for the
    /// mutex like Curator's clients do, so a release wakes exactly one
    /// waiter. Both nodes are named `_c_<uuid>-...` by the managed client's
    /// protected create.
    fn create_pair(&self, zk: &CuratorFramework) -> Result<Pair> {
        let i = &self.inner;
        let identity = crate::locks::identity::node_data(zk);
        let lease_data = i.data.clone().unwrap_or_else(|| identity.clone());
        let epoch = zk.recipe().connection_epoch();
        let created = zk
            .create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(CreateMode::EphemeralSequential)
            .for_paths_together(&[
                (&join(i.mutex.base_path(), MUTEX_LOCK_NAME), identity),
                (&join(i.leases.base_path(), LEASE_NAME), lease_data),
            ])?;
        // Nodes of an older session than the current one are not ours to hold:
        // the waits see a foreign generation and queue again.
        let generation = if created.session_id == zk.session_id() {
            zk.recipe().session_generation()
        } else {
            u64::MAX
        };
        let mut paths = created.paths.into_iter();
        let mut lists = created.siblings.into_iter();
        match (paths.next(), paths.next()) {
            (Some(lock), Some(lease)) => Ok(Pair {
                lock,
                lease,
                czxid: created.czxid,
                generation,
                epoch,
                locks: lists.next().flatten(),
                leases: lists.next().flatten(),
            }),
            _ => Err(Error::ZooKeeper(zk_framework::Error::ConnectionLoss)),
        }
    }

    /// Decides with the pair's listings; falls back to waiting for the
    /// internal mutex (then for a lease) as Curator's clients do. Every exit
    /// but a win deletes what is left of the pair.
    fn settle_pair(&self, zk: &CuratorFramework, pair: Pair) -> Result<Try> {
        let i = &self.inner;
        let deadline = zk.deadline();
        let stat = Stat {
            czxid: pair.czxid,
            ..Stat::default()
        };
        let lock_name = basename(&pair.lock).to_string();
        let first_in_locks = pair.locks.as_ref().is_some_and(|kids| {
            let mut kids = kids.clone();
            Driver::MUTEX.sort(&mut kids);
            kids.first() == Some(&lock_name)
        });
        let give_up = |r: Result<bool>, vanished: bool, nodes: &[&str]| -> Result<Try> {
            for n in nodes {
                i.leases.delete_node(n, deadline);
            }
            r.map(|_| if vanished { Try::Missing } else { Try::TimedOut })
        };
        if first_in_locks {
            // We hold the internal mutex: wait for the lease count, as
            // Curator's mutex holder does (at once when we are alone).
            let mut vanished = false;
            let won = i.leases.wait_with_node(
                pair.lease.clone(),
                pair.generation,
                stat,
                pair.leases,
                pair.epoch,
                deadline,
                &mut vanished,
            );
            return match won {
                Ok(Some(epoch)) => Ok(Try::Won(
                    GrantedNode {
                        path: pair.lease,
                        token: pair.czxid,
                        generation: pair.generation,
                        waited: None,
                        epoch,
                        watch_at_once: false,
                    },
                    Some(pair.lock),
                )),
                r => give_up(r.map(|w| w.is_some()), vanished, &[&pair.lease, &pair.lock]),
            };
        }
        // Not first (or unknown): our lease must not count against the
        // holder's turn, so return it now, and wait for the mutex with our
        // lock node (its listing came with the create).
        i.leases.delete_node(&pair.lease, deadline);
        let mut vanished = false;
        let held = i.mutex.wait_with_node(
            pair.lock.clone(),
            pair.generation,
            stat,
            pair.locks,
            pair.epoch,
            deadline,
            &mut vanished,
        );
        if !matches!(held, Ok(Some(_))) {
            return give_up(held.map(|w| w.is_some()), vanished, &[&pair.lock]);
        }
        // Holding the internal mutex: a lease as Curator's holder takes it;
        // the mutex node then travels with the lease.
        match i.leases.attempt_once(zk, i.data.clone(), None) {
            Ok(Attempt::Won(node)) => Ok(Try::Won(node.granted(), Some(pair.lock))),
            other => {
                i.mutex.delete_node(&pair.lock, deadline);
                other.map(Try::from)
            }
        }
    }
}

/// An internal-mutex node and a lease created in one transaction.
struct Pair {
    lock: String,
    lease: String,
    czxid: i64,
    generation: u64,
    /// The connection epoch read before the create (see
    /// [`Recipe::connection_epoch`](zk_framework::recipe::Recipe::connection_epoch)).
    epoch: u64,
    locks: Option<Vec<String>>,
    leases: Option<Vec<String>>,
}

impl InterProcessLock for InterProcessSemaphoreV2 {
    /// A semaphore hands out leases, not one lock: its leases are returned
    /// through their guards ([`Lease`]), so there is no guard-less release.
    fn release(&self) -> Result<()> {
        Err(Error::NotOwner {
            path: self.inner.base_path.clone(),
        })
    }

    fn acquire_holding(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        self.acquire_lease(deadline)
    }

    fn release_holding(&self, holding: Holding) -> Result<()> {
        let _ = self
            .inner
            .out
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        holding.release_node()
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.inner.out.load(Ordering::SeqCst) > 0
    }
}

impl Member for InterProcessSemaphoreV2 {
    fn order_key(&self) -> (String, u8) {
        (self.node_key().to_string(), 0)
    }

    fn instance_id(&self) -> usize {
        Arc::as_ptr(&self.inner) as *const () as usize
    }
}

impl RawLock for InterProcessSemaphoreV2 {
    /// Any thread may return a lease.
    type GuardMarker = ();
}
