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
use zk_framework::retry::RetryDecision;

use crate::driver::LEASE_NAME;
use crate::error::{Error, Result};
use crate::internals::{LockEvent, LockStatus, Monitor};
use crate::mutex::{deadline_after, InterProcessMutex};

/// One lease of an [`InterProcessSemaphoreV2`]. Dropping it returns the lease
/// (a guaranteed delete of its node). It may be sent to and returned from any
/// thread.
#[must_use = "the lease is returned as soon as it is dropped"]
pub struct Lease {
    client: CuratorFramework,
    path: String,
    stat: Stat,
    generation: u64,
    returned: bool,
    monitor: std::sync::OnceLock<Monitor>,
    /// The internal mutex node, when the lease keeps holding it (one-lease
    /// semaphores); released together with the lease.
    lock_node: Option<String>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("path", &self.path).finish()
    }
}

impl Lease {
    /// The lease node's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// assert!(lease.fencing_token() > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_token(&self) -> i64 {
        self.stat.czxid
    }

    /// Whether the session that created the lease is still the client's session.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// assert!(lease.is_valid());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_valid(&self) -> bool {
        self.client.session_generation() == self.generation
            && !matches!(self.client.state(), Some(zk_framework::state::ConnectionState::Lost))
    }

    fn monitor(&self) -> &Monitor {
        self.monitor
            .get_or_init(|| Monitor::start(&self.client, &self.path, self.generation))
    }

    /// Whether the lease is held, uncertain (suspended) or lost.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// assert_eq!(lease.status(), zk_recipes::LockStatus::Held);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> LockStatus {
        self.monitor().status()
    }

    /// Loss events for this lease: `Suspended`, `Reconnected`, `Lost`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// let events = lease.loss_receiver();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loss_receiver(&self) -> Receiver<LockEvent> {
        self.monitor().subscribe()
    }

    /// Returns the lease now and reports the outcome.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the delete failed; it then goes on in the
    /// background until it succeeds or the session ends.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// s.acquire()?.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(mut self) -> Result<()> {
        self.returned = true;
        return_lease(&self.client, &self.path, self.lock_node.as_deref())
    }
}

/// Deletes the lease node (and the internal mutex node it kept, in the same
/// transaction): guaranteed, continued in the background on failure.
fn return_lease(client: &CuratorFramework, path: &str, lock_node: Option<&str>) -> Result<()> {
    if !client.is_connected() {
        client.delete_in_background(path)?;
        if let Some(l) = lock_node {
            client.delete_in_background(l)?;
        }
        return Err(Error::ZooKeeper(zk_framework::Error::ConnectionLoss));
    }
    if let Some(l) = lock_node {
        let (lease_sp, lock_sp) = (client.fix_path(path), client.fix_path(l));
        let both = client.call_with_retry(|c| {
            c.multi(vec![
                zk_framework::client::Op::delete(lease_sp.clone(), None),
                zk_framework::client::Op::delete(lock_sp.clone(), None),
            ])
        });
        match both {
            Ok(_) => return Ok(()),
            // One of them is gone already (deleted by someone, or a lost session):
            // delete the other on its own.
            Err(zk_framework::Error::NoNode { .. }) => {}
            Err(e) => {
                client.delete_in_background(path)?;
                client.delete_in_background(l)?;
                return Err(e.into());
            }
        }
        let r1 = client.delete().guaranteed().for_path(path);
        let r2 = client.delete().guaranteed().for_path(l);
        return r1.and(r2).map_err(Error::from);
    }
    client.delete().guaranteed().for_path(path).map_err(Error::from)
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.returned {
            if let Err(e) = return_lease(&self.client, &self.path, self.lock_node.as_deref()) {
                log::warn!("returning lease {} on drop: {e}", self.path);
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
/// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let sem = zk_recipes::InterProcessSemaphoreV2::new(&client, "/pools/db", 3)?;
/// let lease = sem.acquire()?;
/// // at most 3 processes are here
/// drop(lease);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct InterProcessSemaphoreV2 {
    client: CuratorFramework,
    lock: InterProcessMutex,
    leases_path: String,
    max_leases: u32,
    data: Option<Vec<u8>>,
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
    Got(Box<Lease>),
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
            lock,
            leases_path: join(path, "leases"),
            max_leases,
            data: None,
        })
    }

    /// Lease nodes carry `data` instead of the client's default.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.acquire()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire(&self) -> Result<Lease> {
        self.acquire_deadline(None)?
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.try_acquire_for(std::time::Duration::from_millis(500))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_for(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.acquire_deadline(deadline_after(timeout))
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 2)?;
    /// let lease = s.try_acquire_until(std::time::Instant::now())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_until(&self, deadline: Instant) -> Result<Option<Lease>> {
        self.acquire_deadline(Some(deadline))
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
            match self.acquire_deadline(deadline)? {
                Some(l) => leases.push(l),
                None => return Ok(None), // dropping `leases` returns them
            }
        }
        Ok(Some(leases))
    }

    /// Full paths of the lease nodes (held and pending), in sequence order.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let s = zk_recipes::InterProcessSemaphoreV2::new(&client, "/sem", 3)?;
    /// println!("{:?}", s.participant_nodes()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_nodes(&self) -> Result<Vec<String>> {
        let mut kids = match self.client.get_children(&self.leases_path) {
            Ok(k) => k,
            Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        zk_framework::paths::sort_by_sequence(&mut kids, LEASE_NAME);
        Ok(kids.into_iter().map(|k| join(&self.leases_path, &k)).collect())
    }

    pub(crate) fn acquire_deadline(&self, deadline: Option<Instant>) -> Result<Option<Lease>> {
        if self.max_leases == 1 {
            return self.acquire_single(deadline);
        }
        self.retrying_missing(|| {
            // Curator: hold the internal mutex while obtaining the lease.
            if !self.lock.acquire_deadline(deadline)? {
                return Ok(Attempt::TimedOut);
            }
            let attempt = self.attempt(deadline);
            if let Err(e) = self.lock.release() {
                log::debug!("releasing the semaphore's internal mutex: {e}");
            }
            attempt
        })
    }

    /// Runs `attempt` until it gets a lease or times out; a vanished node is
    /// retried as the client's retry policy allows.
    fn retrying_missing(&self, mut attempt: impl FnMut() -> Result<Attempt>) -> Result<Option<Lease>> {
        let start = Instant::now();
        let policy = self.client.retry_policy();
        let mut retries = 0u32;
        loop {
            match attempt()? {
                Attempt::Got(l) => return Ok(Some(*l)),
                Attempt::TimedOut => return Ok(None),
                Attempt::Missing => match policy.next_retry(retries, start.elapsed()) {
                    RetryDecision::RetryAfter(d) => {
                        retries += 1;
                        std::thread::sleep(d);
                    }
                    RetryDecision::GiveUp => {
                        return Err(Error::NodeVanished {
                            path: self.leases_path.clone(),
                        })
                    }
                },
            }
        }
    }

    fn attempt(&self, deadline: Option<Instant>) -> Result<Attempt> {
        let generation = self.client.session_generation();
        let mut b = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(CreateMode::EphemeralSequential);
        if let Some(d) = &self.data {
            b = b.with_data(d.clone());
        }
        let (path, stat) = b.for_path_with_stat(&join(&self.leases_path, LEASE_NAME))?;
        let lease = Lease {
            client: self.client.clone(),
            path,
            stat,
            generation,
            returned: false,
            monitor: std::sync::OnceLock::new(),
            lock_node: None,
        };
        self.wait_for_lease(lease, None, deadline)
    }

    /// Waits until our lease is among the first `max_leases` (by count, as
    /// Curator does). From here on, dropping `lease` deletes the node: every
    /// failure path cleans up. `listing` is a listing of the leases taken with
    /// the create, if any.
    fn wait_for_lease(&self, lease: Lease, listing: Option<Vec<String>>, deadline: Option<Instant>) -> Result<Attempt> {
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
                None if watching => {
                    let txc = tx.clone();
                    self.client.get_children_w(&self.leases_path, move |_e| {
                        let _ = txc.try_send(());
                    })?
                }
                None => self.client.get_children(&self.leases_path)?,
            };
            if !kids.contains(&ours) {
                return Ok(Attempt::Missing);
            }
            if kids.len() <= self.max_leases as usize {
                return Ok(Attempt::Got(Box::new(lease)));
            }
            if !watching {
                watching = true;
                continue;
            }
            if !wait(&rx, &states, deadline) {
                return Ok(Attempt::TimedOut);
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
        self.retrying_missing(|| {
            let pair = self.create_pair()?;
            self.settle_pair(pair, deadline)
        })
    }

    /// Creates the internal-mutex node and the lease in one protected
    /// transaction (both named `_c_<uuid>-...`), with the two listings.
    fn create_pair(&self) -> Result<Pair> {
        let c = &self.client;
        let id = zk_framework::paths::new_protected_id();
        let prefix = format!("{}{id}-", zk_framework::paths::PROTECTED_PREFIX);
        let locks_dir = self.lock.base_path().to_string();
        let (locks_sp, leases_sp) = (c.fix_path(&locks_dir), c.fix_path(&self.leases_path));
        let lock_sp = join(
            &locks_sp,
            &zk_framework::paths::protected_name(&id, crate::driver::MUTEX_LOCK_NAME),
        );
        let lease_sp = join(&leases_sp, &zk_framework::paths::protected_name(&id, LEASE_NAME));
        let lease_data = self.data.clone().unwrap_or_else(|| c.default_data().to_vec());
        let acl = zk_framework::proto::Acl::open_unsafe();
        let mut first = true;
        let result = c.call_with_retry(|zk| {
            // The generation of the handle this attempt runs on.
            let generation = c.session_generation();
            if !first {
                // After a lost reply: did our transaction happen? (It is atomic, so
                // the lock node tells for both.)
                if let Some(found) = find_prefixed(zk, &locks_sp, &prefix)? {
                    let lease = find_prefixed(zk, &leases_sp, &prefix)?;
                    match (zk.exists(&found)?, lease) {
                        (Some(st), Some(lease)) if st.ephemeral_owner == zk.session_id() => {
                            return Ok(Pair {
                                lock: c.unfix_path(&found),
                                lease: c.unfix_path(&lease),
                                czxid: st.czxid,
                                generation,
                                locks: None,
                                leases: None,
                            });
                        }
                        _ => {
                            // An old session's pair: remove it before trying again.
                            let _ = zk.delete(&found, None);
                            if let Some(l) = find_prefixed(zk, &leases_sp, &prefix)? {
                                let _ = zk.delete(&l, None);
                            }
                        }
                    }
                }
            }
            first = false;
            let mut made_parents = 0;
            loop {
                let ops = vec![
                    zk_framework::client::Op::create(
                        lock_sp.clone(),
                        c.default_data().to_vec(),
                        acl.clone(),
                        CreateMode::EphemeralSequential,
                    ),
                    zk_framework::client::Op::create(
                        lease_sp.clone(),
                        lease_data.clone(),
                        acl.clone(),
                        CreateMode::EphemeralSequential,
                    ),
                ];
                let (txn, mut lists) = zk.multi_then_get_children(ops, &[&locks_sp, &leases_sp])?;
                match txn {
                    Ok((results, zxid)) => {
                        let path_of = |r: &zk_framework::client::OpResult| match r {
                            zk_framework::client::OpResult::Create { path, .. } => Some(c.unfix_path(path)),
                            _ => None,
                        };
                        let (Some(lock), Some(lease)) = (path_of(&results[0]), path_of(&results[1])) else {
                            return Err(zk_framework::Error::ConnectionLoss);
                        };
                        let leases = lists.pop().and_then(|l| l.ok());
                        let locks = lists.pop().and_then(|l| l.ok());
                        return Ok(Pair {
                            lock,
                            lease,
                            czxid: zxid,
                            generation,
                            locks,
                            leases,
                        });
                    }
                    Err(zk_framework::Error::NoNode { .. }) if made_parents < 5 => {
                        made_parents += 1;
                        for dir in [&locks_dir, &self.leases_path] {
                            match c
                                .create()
                                .creating_parent_containers_if_needed()
                                .with_mode(CreateMode::Container)
                                .for_path(dir)
                            {
                                Ok(_) | Err(zk_framework::Error::NodeExists { .. }) => {}
                                Err(e) => return Err(e),
                            }
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        });
        match result {
            Ok(p) => Ok(p),
            Err(e) => {
                if matches!(
                    e,
                    zk_framework::Error::ConnectionLoss
                        | zk_framework::Error::OperationTimeout
                        | zk_framework::Error::Closed
                ) {
                    // The transaction may have happened unseen: clean up by prefix.
                    let _ = c.delete_by_prefix_in_background(&locks_dir, &prefix);
                    let _ = c.delete_by_prefix_in_background(&self.leases_path, &prefix);
                }
                Err(e.into())
            }
        }
    }

    /// Decides with the pair's listings; falls back to waiting for the internal
    /// mutex (then for the lease count) as Curator's clients do.
    fn settle_pair(&self, pair: Pair, deadline: Option<Instant>) -> Result<Attempt> {
        let c = &self.client;
        let lease = Lease {
            client: c.clone(),
            path: pair.lease,
            stat: Stat {
                czxid: pair.czxid,
                ..Stat::default()
            },
            generation: pair.generation,
            returned: false,
            monitor: std::sync::OnceLock::new(),
            lock_node: Some(pair.lock.clone()),
        };
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
            return self.wait_for_lease(lease, pair.leases, deadline);
        }
        // Not first (or unknown): our lease must not count against the holder's
        // turn, so return it now, and wait for the mutex with our lock node.
        let mut lease = lease;
        lease.lock_node = None; // keep our place in the mutex queue
        let lease_path = lease.path.clone();
        if let Err(e) = lease.release() {
            log::debug!("dropping a transient lease {lease_path}: {e}");
        }
        let internals = self.lock.internals();
        let mut vanished = false;
        let held = internals.wait_with_node(
            pair.lock.clone(),
            pair.generation,
            Stat {
                czxid: pair.czxid,
                ..Stat::default()
            },
            None,
            deadline,
            &mut vanished,
        );
        let held = match held {
            Ok(Some(h)) => h,
            Ok(None) => {
                internals.delete_node(&pair.lock);
                return Ok(if vanished { Attempt::Missing } else { Attempt::TimedOut });
            }
            Err(e) => {
                internals.delete_node(&pair.lock);
                return Err(e);
            }
        };
        drop(held); // the mutex node now travels with the lease below
                    // Holding the internal mutex: create a lease and wait for the count.
        let attempt = self.attempt(deadline);
        match attempt {
            Ok(Attempt::Got(mut l)) => {
                l.lock_node = Some(pair.lock);
                Ok(Attempt::Got(l))
            }
            other => {
                internals.delete_node(&pair.lock);
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

fn find_prefixed(zk: &zk_framework::client::Client, dir: &str, prefix: &str) -> zk_framework::Result<Option<String>> {
    match zk.get_children(dir) {
        Ok(kids) => Ok(kids.into_iter().find(|k| k.starts_with(prefix)).map(|k| join(dir, &k))),
        Err(zk_framework::Error::NoNode { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Waits for a watch signal or a connection-state change; false when the
/// deadline passes first.
fn wait(rx: &Receiver<()>, states: &Receiver<()>, deadline: Option<Instant>) -> bool {
    let timeout = match deadline {
        Some(d) => {
            let t = d.saturating_duration_since(Instant::now());
            if t.is_zero() {
                return false;
            }
            t
        }
        None => Duration::from_secs(3600),
    };
    crossbeam_channel::select! {
        recv(rx) -> _ => true,
        recv(states) -> _ => true,
        default(timeout) => deadline.is_none(),
    }
}

/// A non-reentrant distributed mutex built on a one-lease
/// [`InterProcessSemaphoreV2`] (Curator's `InterProcessSemaphoreMutex`). Its
/// guard is `Send`: any thread may release.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/jobs")?;
/// let guard = m.acquire()?;
/// std::thread::scope(|s| {
///     s.spawn(move || drop(guard)); // released by another thread
/// });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct InterProcessSemaphoreMutex {
    semaphore: InterProcessSemaphoreV2,
    lease: Mutex<Option<Lease>>,
    base_path: String,
}

impl std::fmt::Debug for InterProcessSemaphoreMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessSemaphoreMutex")
            .field("path", &self.base_path)
            .field("held", &self.lease.lock().is_some())
            .finish()
    }
}

/// Holds an [`InterProcessSemaphoreMutex`]; releases it when dropped. `Send`.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct InterProcessSemaphoreMutexGuard<'a> {
    mutex: &'a InterProcessSemaphoreMutex,
    released: bool,
}

impl std::fmt::Debug for InterProcessSemaphoreMutexGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessSemaphoreMutexGuard")
            .field("path", &self.mutex.base_path)
            .finish()
    }
}

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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str) -> Result<Self> {
        Ok(InterProcessSemaphoreMutex {
            semaphore: InterProcessSemaphoreV2::new(client, path, 1)?,
            lease: Mutex::new(None),
            base_path: path.to_string(),
        })
    }

    /// Blocks until held. Not reentrant: a second acquire while held waits for a
    /// release (from any thread).
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreV2::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire(&self) -> Result<InterProcessSemaphoreMutexGuard<'_>> {
        match self.acquire_deadline(None)? {
            true => Ok(self.guard()),
            false => Err(Error::ZooKeeper(zk_framework::Error::Closed)),
        }
    }

    /// Waits at most `timeout`; `Ok(None)` on timeout (zero: a non-blocking try).
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreMutex::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.try_acquire_for(std::time::Duration::ZERO)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_for(&self, timeout: Duration) -> Result<Option<InterProcessSemaphoreMutexGuard<'_>>> {
        Ok(self.acquire_deadline(deadline_after(timeout))?.then(|| self.guard()))
    }

    /// Waits until `deadline`; `Ok(None)` if it passes first.
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreMutex::acquire`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.try_acquire_until(std::time::Instant::now() + std::time::Duration::from_secs(1))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_until(&self, deadline: Instant) -> Result<Option<InterProcessSemaphoreMutexGuard<'_>>> {
        Ok(self.acquire_deadline(Some(deadline))?.then(|| self.guard()))
    }

    fn guard(&self) -> InterProcessSemaphoreMutexGuard<'_> {
        InterProcessSemaphoreMutexGuard {
            mutex: self,
            released: false,
        }
    }

    pub(crate) fn acquire_deadline(&self, deadline: Option<Instant>) -> Result<bool> {
        match self.semaphore.acquire_deadline(deadline)? {
            Some(lease) => {
                let old = self.lease.lock().replace(lease);
                if let Some(old) = old {
                    // Cannot happen with one lease, but never leak a node.
                    drop(old);
                }
                Ok(true)
            }
            None => Ok(false),
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// assert!(m.release().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(&self) -> Result<()> {
        let lease = self.lease.lock().take();
        match lease {
            Some(l) => l.release(),
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
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// assert!(!m.is_acquired_in_this_process());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.lease.lock().is_some()
    }

    /// The base path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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

    /// The lease nodes, in order.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let nodes = m.participant_nodes()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participant_nodes(&self) -> Result<Vec<String>> {
        self.semaphore.participant_nodes()
    }

    /// The fencing token of the held lease.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(m.fencing_token().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_token(&self) -> Option<i64> {
        self.lease.lock().as_ref().map(Lease::fencing_token)
    }

    /// Loss events for the held lock (`None` when not held).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// let rx = m.loss_receiver();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loss_receiver(&self) -> Option<Receiver<LockEvent>> {
        self.lease.lock().as_ref().map(Lease::loss_receiver)
    }
}

impl InterProcessSemaphoreMutexGuard<'_> {
    /// Releases now and reports the outcome.
    ///
    /// # Errors
    ///
    /// As [`InterProcessSemaphoreMutex::release`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// m.acquire()?.release()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        self.mutex.release()
    }

    /// The held lease node's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(g.lease_path().starts_with("/locks/a/leases/_c_"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lease_path(&self) -> String {
        self.mutex
            .lease
            .lock()
            .as_ref()
            .map(|l| l.path().to_string())
            .unwrap_or_default()
    }

    /// The fencing token (the lease node's czxid).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessSemaphoreMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(g.fencing_token() > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_token(&self) -> i64 {
        self.mutex.fencing_token().unwrap_or(0)
    }
}

impl Drop for InterProcessSemaphoreMutexGuard<'_> {
    fn drop(&mut self) {
        if !self.released {
            match self.mutex.release() {
                Ok(()) | Err(Error::NotOwner { .. }) => {}
                Err(e) => log::warn!("releasing {} on drop: {e}", self.mutex.base_path),
            }
        }
    }
}
