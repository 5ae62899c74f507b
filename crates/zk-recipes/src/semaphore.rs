//! `InterProcessSemaphoreV2` (N leases) and `InterProcessSemaphoreMutex` on top
//! of it, with Curator's layout: `<path>/locks` holds an internal mutex taken
//! while obtaining a lease, and `<path>/leases` holds one
//! `_c_<uuid>-lease-<seq>` node per lease.

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use zk_framework::framework::CuratorFramework;
use zk_framework::proto::path::{basename, join};
use zk_framework::proto::{CreateMode, Stat};

use crate::driver::LEASE_NAME;
use crate::error::{Error, Result};
use crate::holding::{GrantedNode, Holding, LockEvent, LockStatus};
use crate::lock::{deadline_after, InterProcessLock, LockGuard, RawLock};
use crate::mutex::InterProcessMutex;
use crate::wait::Woken;

/// One lease of an [`InterProcessSemaphoreV2`]. Dropping it returns the lease
/// (a guaranteed delete of its node). It may be sent to and returned from any
/// thread. Its status tells the truth from the grant on (see [`Holding`]).
#[must_use = "the lease is returned as soon as it is dropped"]
#[clippy::has_significant_drop]
pub struct Lease {
    path: String,
    holding: Option<Holding>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("path", &self.path).finish()
    }
}

impl Lease {
    fn holding(&self) -> &Holding {
        self.holding
            .as_ref()
            .expect("a lease holds its holding until it is returned")
    }

    fn into_holding(mut self) -> Holding {
        self.holding
            .take()
            .expect("a lease holds its holding until it is returned")
    }

    /// The lease node's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// assert!(lease.path().starts_with("/sem/leases/_c_"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The fencing token: the lease node's czxid.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// assert!(lease.fencing_token() > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_token(&self) -> i64 {
        self.holding().fencing_token()
    }

    /// Whether the lease is not lost (held or uncertain).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// assert!(lease.is_valid());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_valid(&self) -> bool {
        self.status() != LockStatus::Lost
    }

    /// Whether the lease is held, uncertain (suspended, read-only) or lost.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// assert_eq!(lease.status(), zk_recipes::LockStatus::Held);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> LockStatus {
        self.holding().status()
    }

    /// `Ok` only while the lease is certainly held (see [`Holding::check`]).
    ///
    /// # Errors
    ///
    /// [`Error::LockLost`] or [`Error::LockUncertain`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// lease.check()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self) -> Result<()> {
        self.holding().check()
    }

    /// Loss events for this lease: `Suspended`, `HorizonPassed`, `Reconnected`, `Lost`; the
    /// channel ends when the lease is returned.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// let events = lease.loss_receiver();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loss_receiver(&self) -> Receiver<LockEvent> {
        self.holding().loss_receiver()
    }

    /// Writes that commit only while this lease is held (see
    /// [`crate::GuardedTransaction`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// lease.transaction().set_data("/app/x", b"1".to_vec(), None).commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transaction(&self) -> crate::GuardedTransaction<'_> {
        self.holding().transaction()
    }

    /// The instant until which the lease is certainly still held (see
    /// [`Holding::safe_until`]); `None` once lost.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// assert!(lease.safe_until().expect("held") > std::time::Instant::now());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn safe_until(&self) -> Option<Instant> {
        self.holding().safe_until()
    }

    /// Returns the lease, waiting for its delete at most `bound` (see the
    /// guards' `release_within`).
    ///
    /// # Errors
    ///
    /// As [`Lease::release`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// s.acquire()?.release_within(std::time::Duration::from_millis(200))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release_within(self, bound: Duration) -> Result<()> {
        self.holding().set_release_bound(bound);
        self.release()
    }

    /// Returns the lease now and reports the outcome, within the release
    /// bound (a tenth of the session timeout, between 100 ms and 2 s, or
    /// [`Lease::release_within`]'s); `Ok` means it was held until the release
    /// began.
    ///
    /// # Errors
    ///
    /// [`Error::LockLost`] when the lease had been lost;
    /// [`Error::LockUncertain`] when it was uncertain and the delete could
    /// not tell; [`Error::ZooKeeper`] when the server refused the delete (it
    /// goes on in the background).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// s.acquire()?.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(self) -> Result<()> {
        self.into_holding().release_node()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(h) = self.holding.take() {
            if let Err(e) = h.release_node() {
                log::warn!("returning lease {} on drop: {e}", self.path);
            }
        }
    }
}

/// A lease node (and maybe its internal-mutex node) not granted yet: deleted
/// when dropped, unless it becomes a [`Lease`].
struct PendingLease {
    client: CuratorFramework,
    base: String,
    path: String,
    czxid: i64,
    generation: u64,
    lock_node: Option<String>,
    armed: bool,
    stats: std::sync::Arc<crate::stats::PathStats>,
    /// The acquire's deadline, which bounds the cleanup's deletes too.
    deadline: Option<Instant>,
}

impl PendingLease {
    fn grant(mut self) -> Lease {
        self.armed = false;
        let holding = Holding::granted(
            &self.client,
            &self.base,
            GrantedNode {
                path: self.path.clone(),
                token: self.czxid,
                generation: self.generation,
                waited: None,
            },
            self.lock_node.take(),
            &self.stats,
        );
        Lease {
            path: self.path.clone(),
            holding: Some(holding),
        }
    }
}

impl Drop for PendingLease {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for n in std::iter::once(&self.path).chain(self.lock_node.as_ref()) {
            if let Err(e) = self
                .client
                .with_deadline(self.deadline)
                .delete()
                .guaranteed()
                .for_path(n)
            {
                log::debug!("deleting an ungranted lease node {n}: {e}; it goes on in the background");
            }
        }
    }
}

/// A counting semaphore across processes: at most `max_leases` leases are out
/// at once. Curator-compatible with `InterProcessSemaphoreV2` on the same path.
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
pub struct InterProcessSemaphoreV2 {
    client: CuratorFramework,
    base_path: String,
    lock: InterProcessMutex,
    leases_path: String,
    max_leases: u32,
    data: Option<Vec<u8>>,
    stats: std::sync::Arc<crate::stats::PathStats>,
}

impl std::fmt::Debug for InterProcessSemaphoreV2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessSemaphoreV2")
            .field("leases_path", &self.leases_path)
            .field("max_leases", &self.max_leases)
            .finish()
    }
}

enum Attempt {
    Got(Box<PendingLease>),
    TimedOut,
    Missing,
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
        if max_leases == 0 {
            return Err(Error::InvalidArgument("a semaphore needs at least one lease".into()));
        }
        zk_framework::proto::path::validate_path(path, false).map_err(zk_framework::Error::from)?;
        if path == "/" {
            return Err(Error::InvalidArgument(
                "a semaphore cannot live at the root path".into(),
            ));
        }
        let lock = InterProcessMutex::new(client, &join(path, "locks"))?;
        Ok(InterProcessSemaphoreV2 {
            client: client.clone(),
            base_path: path.to_string(),
            lock,
            leases_path: join(path, "leases"),
            max_leases,
            data: None,
            stats: crate::stats::for_path(client, &client.fix_path(path)),
        })
    }

    /// Lease nodes carry `data` instead of the client's default.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 1)?.with_node_data(b"me".to_vec());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_node_data(mut self, data: Vec<u8>) -> Self {
        self.data = Some(data);
        self
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
        self.max_leases
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
        self.lease_until(None)?
            .ok_or(Error::ZooKeeper(zk_framework::Error::Closed))
    }

    /// Waits at most `timeout` for a lease; `Ok(None)` on timeout.
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreV2::acquire`].
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
    /// As [`InterProcessSemaphoreV2::acquire`].
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

    /// The one slow path: the whole acquire under `deadline`, a passed deadline
    /// being `Ok(None)`.
    fn lease_until(&self, deadline: Option<Instant>) -> Result<Option<Lease>> {
        match self.acquire_deadline(deadline) {
            Err(e) if e.is_deadline() => Err(crate::lock::no_answer(e, || self.base_path.clone())),
            r => r,
        }
    }

    /// Acquires `n` leases, all or none, within one deadline (`None`: no limit).
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreV2::acquire`]; leases already taken are returned.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 3)?;
    /// let leases = s.acquire_many(2, None)?.expect("no deadline");
    /// assert_eq!(leases.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_many(&self, n: u32, deadline: Option<Instant>) -> Result<Option<Vec<Lease>>> {
        if n == 0 || n > self.max_leases {
            return Err(Error::InvalidArgument(format!(
                "cannot acquire {n} leases of a semaphore with {}",
                self.max_leases
            )));
        }
        let mut leases = Vec::new();
        for _ in 0..n {
            match self.lease_until(deadline)? {
                Some(l) => leases.push(l),
                None => return Ok(None), // dropping `leases` returns them
            }
        }
        Ok(Some(leases))
    }

    /// The lease nodes (held and pending), in sequence order, as typed
    /// participants: the node's full path (Curator's `getParticipantNodes`
    /// set; a [`Participant`](crate::inspect::Participant) displays as,
    /// compares with and borrows as that path), kind
    /// [`Lease`](crate::inspect::ParticipantKind::Lease), owning session,
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
    pub fn participant_nodes(&self) -> Result<Vec<crate::inspect::Participant>> {
        crate::inspect::semaphore_leases(&self.client, &self.base_path, Some(self.max_leases))
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
        let mut kids = match self.client.get_children(&self.leases_path) {
            Ok(k) => k,
            Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        zk_framework::paths::sort_by_sequence(&mut kids, LEASE_NAME);
        Ok(kids.into_iter().map(|k| join(&self.leases_path, &k)).collect())
    }

    /// The internal mutex's queue (`<path>/locks`), in lock order, as typed
    /// participants of kind
    /// [`LeaseQueue`](crate::inspect::ParticipantKind::LeaseQueue): the
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
    pub fn lease_queue(&self) -> Result<Vec<crate::inspect::Participant>> {
        crate::inspect::semaphore_queue(&self.client, &self.base_path)
    }

    pub(crate) fn acquire_deadline(&self, deadline: Option<Instant>) -> Result<Option<Lease>> {
        let waiting = self.stats.start_wait();
        let r = self.acquire_counted(deadline);
        waiting.finish_with(&r);
        r
    }

    fn acquire_counted(&self, deadline: Option<Instant>) -> Result<Option<Lease>> {
        if self.max_leases == 1 {
            return self.acquire_single(deadline);
        }
        self.retrying_missing(deadline, || {
            // Curator: hold the internal mutex while obtaining the lease.
            // It is held for a moment only: no loss tracking for it.
            let internals = self.lock.internals();
            let Some(mutex_node) = internals.attempt_untracked(deadline)? else {
                return Ok(Attempt::TimedOut);
            };
            let attempt = self.attempt(deadline);
            internals.delete_node(&mutex_node, deadline);
            attempt
        })
    }

    /// Runs `attempt` until it gets a lease or times out; a vanished node (or
    /// a session change) is retried as the client's retry policy allows,
    /// never sleeping past the deadline.
    fn retrying_missing(
        &self,
        deadline: Option<Instant>,
        mut attempt: impl FnMut() -> Result<Attempt>,
    ) -> Result<Option<Lease>> {
        let mut requeue = crate::internals::Requeue::new(&self.client, deadline);
        loop {
            let outcome = match attempt() {
                Err(Error::ZooKeeper(zk_framework::Error::SessionExpired)) => Attempt::Missing,
                r => r?,
            };
            match outcome {
                Attempt::Got(l) => return Ok(Some(l.grant())),
                Attempt::TimedOut => return crate::internals::timed_out(&self.client),
                Attempt::Missing => {
                    if !requeue.pause(&self.leases_path)? {
                        return crate::internals::timed_out(&self.client);
                    }
                }
            }
        }
    }

    fn attempt(&self, deadline: Option<Instant>) -> Result<Attempt> {
        let generation = self.client.session_generation();
        let zk = self.client.with_deadline(deadline);
        let mut b = zk
            .create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(CreateMode::EphemeralSequential);
        b = b.with_data(
            self.data
                .clone()
                .unwrap_or_else(|| crate::identity::node_data(&self.client)),
        );
        let (path, stat) = b.for_path_with_stat(&join(&self.leases_path, LEASE_NAME))?;
        let generation = if stat.ephemeral_owner == self.client.session_id() {
            self.client.session_generation()
        } else {
            generation
        };
        let lease = self.pending(path, stat.czxid, generation, None, deadline);
        self.wait_for_lease(lease, None)
    }

    fn pending(
        &self,
        path: String,
        czxid: i64,
        generation: u64,
        lock_node: Option<String>,
        deadline: Option<Instant>,
    ) -> PendingLease {
        PendingLease {
            deadline,
            client: self.client.clone(),
            base: self.base_path.clone(),
            path,
            czxid,
            generation,
            lock_node,
            armed: true,
            stats: self.stats.clone(),
        }
    }

    /// Waits until our lease is among the first `max_leases` (by count, as
    /// Curator does). From here on, dropping `lease` deletes the node: every
    /// failure path cleans up. `listing` is a listing of the leases taken with
    /// the create, if any. The wait ends by the lease's deadline.
    fn wait_for_lease(&self, lease: PendingLease, listing: Option<Vec<String>>) -> Result<Attempt> {
        let deadline = lease.deadline;
        let zk = self.client.with_deadline(deadline);
        let generation = lease.generation;
        let ours = basename(&lease.path).to_string();
        let (tx, rx) = crossbeam_channel::bounded::<()>(1);
        let (_states_listener, states) = crate::internals::state_changes(&self.client);
        // The first look sets no watch: an uncontended acquire then leaves nothing
        // to fire when the lease is returned.
        let mut watching = false;
        let mut listing = listing;
        loop {
            if self.client.session_generation() != generation {
                return Ok(Attempt::Missing);
            }
            let kids = match listing.take() {
                Some(k) => k,
                None => {
                    let listed = if watching {
                        let txc = tx.clone();
                        zk.get_children_w(&self.leases_path, move |_e| {
                            let _ = txc.try_send(());
                        })
                    } else {
                        zk.get_children(&self.leases_path)
                    };
                    match listed {
                        Ok(k) => k,
                        // The leases directory was reaped: our lease went with an
                        // ended session. Queue again.
                        Err(zk_framework::Error::NoNode { .. }) => return Ok(Attempt::Missing),
                        Err(e) => return Err(e.into()),
                    }
                }
            };
            match crate::driver::lease_granted(&kids, &ours, self.max_leases as usize) {
                Err(crate::driver::NodeMissing) => return Ok(Attempt::Missing),
                Ok(true) => return Ok(Attempt::Got(Box::new(lease))),
                Ok(false) => {}
            }
            if !watching {
                watching = true;
                continue;
            }
            match crate::wait::wait(&self.client, &rx, &states, deadline) {
                Woken::Watch(_) | Woken::StateChanged => {}
                Woken::Deadline => return Ok(Attempt::TimedOut),
                Woken::Closed => return Err(Error::ZooKeeper(zk_framework::Error::Closed)),
            }
        }
    }

    /// The one-lease fast path: one transaction creates our internal-mutex node
    /// and our lease, pipelined with listings of both directories, so an
    /// uncontended acquire takes one round trip; the holder keeps the internal
    /// mutex while it holds the lease and returns both in one transaction
    /// (four requests per cycle, against Curator's seven). Curator's protocol is
    /// kept: a lease is held only by the internal mutex's holder when at most
    /// one lease exists; a contender that is not first in the mutex queue drops
    /// its lease at once and waits for the mutex like Curator's clients do, so a
    /// release wakes exactly one waiter.
    fn acquire_single(&self, deadline: Option<Instant>) -> Result<Option<Lease>> {
        self.retrying_missing(deadline, || {
            let pair = self.create_pair(deadline)?;
            self.settle_pair(pair, deadline)
        })
    }

    /// Creates the internal-mutex node and the lease in one protected
    /// transaction (both named `_c_<uuid>-...`, through the managed client's
    /// protected create), with the two listings.
    fn create_pair(&self, deadline: Option<Instant>) -> Result<Pair> {
        let c = &self.client.with_deadline(deadline);
        let identity = crate::identity::node_data(c);
        let lease_data = self.data.clone().unwrap_or_else(|| identity.clone());
        let created = c
            .create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(CreateMode::EphemeralSequential)
            .for_paths_together(&[
                (&join(self.lock.base_path(), crate::driver::MUTEX_LOCK_NAME), identity),
                (&join(&self.leases_path, LEASE_NAME), lease_data),
            ])?;
        // Nodes of an older session than the current one are not ours to hold:
        // the waits see a foreign generation and queue again.
        let generation = if created.session_id == c.session_id() {
            c.session_generation()
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
                locks: lists.next().flatten(),
                leases: lists.next().flatten(),
            }),
            _ => Err(Error::ZooKeeper(zk_framework::Error::ConnectionLoss)),
        }
    }

    /// Decides with the pair's listings; falls back to waiting for the internal
    /// mutex (then for the lease count) as Curator's clients do.
    fn settle_pair(&self, pair: Pair, deadline: Option<Instant>) -> Result<Attempt> {
        let lease = self.pending(
            pair.lease,
            pair.czxid,
            pair.generation,
            Some(pair.lock.clone()),
            deadline,
        );
        // From here on, dropping `lease` deletes both nodes.
        let lock_name = basename(&pair.lock).to_string();
        let first_in_locks = pair.locks.as_ref().map(|kids| {
            let mut kids = kids.clone();
            crate::driver::Driver::MUTEX.sort(&mut kids);
            kids.first() == Some(&lock_name)
        });
        if first_in_locks == Some(true) {
            // We hold the internal mutex: wait for the lease count, as Curator's
            // mutex holder does (at once when we are alone).
            return self.wait_for_lease(lease, pair.leases);
        }
        // Not first (or unknown): our lease must not count against the holder's
        // turn, so return it now, and wait for the mutex with our lock node.
        let mut lease = lease;
        lease.lock_node = None; // keep our place in the mutex queue
        drop(lease); // deletes the lease node only
        let internals = self.lock.internals();
        let mut vanished = false;
        let held = internals.wait_with_node(
            pair.lock.clone(),
            pair.generation,
            Stat {
                czxid: pair.czxid,
                ..Stat::default()
            },
            deadline,
            &mut vanished,
        );
        match held {
            Ok(true) => {}
            Ok(false) => {
                internals.delete_node(&pair.lock, deadline);
                return Ok(if vanished { Attempt::Missing } else { Attempt::TimedOut });
            }
            Err(e) => {
                internals.delete_node(&pair.lock, deadline);
                return Err(e);
            }
        }
        // Holding the internal mutex: create a lease and wait for the count;
        // the mutex node then travels with the lease.
        let attempt = self.attempt(deadline);
        match attempt {
            Ok(Attempt::Got(mut l)) => {
                l.lock_node = Some(pair.lock);
                Ok(Attempt::Got(l))
            }
            other => {
                internals.delete_node(&pair.lock, deadline);
                other
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
    locks: Option<Vec<String>>,
    leases: Option<Vec<String>>,
}

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
pub struct InterProcessSemaphoreMutex {
    semaphore: InterProcessSemaphoreV2,
    /// The holding of the current holder (any thread may release it).
    held: Mutex<Option<Holding>>,
    base_path: String,
}

impl std::fmt::Debug for InterProcessSemaphoreMutex {
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
        Ok(InterProcessSemaphoreMutex {
            semaphore: InterProcessSemaphoreV2::new(client, path, 1)?,
            held: Mutex::new(None),
            base_path: path.to_string(),
        })
    }

    crate::lock::lock_methods!(
        InterProcessSemaphoreMutex,
        "zk_recipes::InterProcessSemaphoreMutex::new(&client, \"/locks/a\")?"
    );

    fn acquire_lease(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        match self.semaphore.acquire_deadline(deadline)? {
            Some(lease) => {
                let holding = lease.into_holding();
                let old = self.held.lock().replace(holding.share());
                if let Some(old) = old {
                    // Cannot happen with one lease, but never leak a node.
                    let _ = old.release_node();
                }
                Ok(Some(holding))
            }
            None => Ok(None),
        }
    }

    /// Curator's `acquire()` without a guard; pair with
    /// [`InterProcessSemaphoreMutex::release`].
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
        crate::lock::acquire_blocking(self).map(drop)
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
        let held = self.held.lock().as_ref().map(Holding::share);
        match held {
            Some(h) => self.release_holding(h),
            None => Err(Error::NotOwner {
                path: self.base_path.clone(),
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
        self.held.lock().is_some()
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
        &self.base_path
    }

    pub(crate) fn full_path(&self) -> String {
        self.semaphore.client.fix_path(&self.base_path)
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
    pub fn participant_nodes(&self) -> Result<Vec<crate::inspect::Participant>> {
        self.semaphore.participant_nodes()
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
        self.semaphore.participant_paths()
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
    pub fn lease_queue(&self) -> Result<Vec<crate::inspect::Participant>> {
        self.semaphore.lease_queue()
    }

    /// The fencing token of the held lease.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(m.fencing_token().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_token(&self) -> Option<i64> {
        self.held.lock().as_ref().map(Holding::fencing_token)
    }

    /// Loss events for the held lock (`None` when not held).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// let rx = m.loss_receiver();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loss_receiver(&self) -> Option<Receiver<LockEvent>> {
        self.held.lock().as_ref().map(Holding::loss_receiver)
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
            let mut held = self.held.lock();
            match held.as_ref() {
                Some(h) if h.same(&holding) => *held = None,
                _ => {
                    return Err(Error::NotOwner {
                        path: self.base_path.clone(),
                    })
                }
            }
        }
        holding.release_node()
    }

    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessSemaphoreMutex::is_acquired_in_this_process(self)
    }

    fn order_key(&self) -> (String, u8) {
        (self.full_path(), 0)
    }
}

impl RawLock for InterProcessSemaphoreMutex {
    /// Any thread may release a semaphore mutex.
    type GuardMarker = ();
}
