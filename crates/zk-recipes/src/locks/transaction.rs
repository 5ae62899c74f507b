//! Writes guarded by the lock: a ZooKeeper transaction (multi) that also
//! checks that the guard's lock node still exists, so that it succeeds only
//! while the lock is held, and writes nothing otherwise.

use zk_framework::proto::{CreateMode, ErrorCode};
use zk_framework::{Op, OpResult};

use crate::error::{Error, Result};
use crate::locks::holding::{Holding, LockStatus};
use crate::locks::stats::LossCause;

/// A transaction that commits only while the lock is held: every write in it
/// and a check op on the lock node (each member's node for a `MultiLock`,
/// the guard's own node for a read or write guard) go to the server as one
/// ZooKeeper multi. Made by `guard.transaction()`.
///
/// This is the second way to fence, next to the fencing token: the token
/// protects a storage that checks it; this protects writes to ZooKeeper
/// itself, which checks the lock node in the same transaction.
///
/// Paths are the client's (relative to its namespace). The multi is sent
/// once and never retried: after a `ConnectionLoss` its outcome is unknown
/// (read back to find out).
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use zk_framework::CreateMode;
/// # client.create().creating_parent_containers_if_needed().for_path("/app/config")?;
/// let lock = zk_recipes::InterProcessMutex::new(&client, "/locks/config")?;
/// let guard = lock.acquire()?;
/// guard
///     .transaction()
///     .set_data("/app/config", b"v2".to_vec(), None)
///     .create("/app/config-history", b"v1".to_vec(), CreateMode::PersistentSequential)
///     .commit()?; // Err(LockLost) if the lock node is gone: then nothing was written
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "nothing is written until commit()"]
#[derive(Debug)]
pub struct GuardedTransaction<'a> {
    holding: Guard<'a>,
    ops: Vec<Op>,
}

/// The holding a transaction is guarded by: a guard's (borrowed) or a
/// leadership's (a handle of its own, so that the transaction outlives the
/// call that made it and still checks that leadership's node).
#[derive(Debug)]
enum Guard<'a> {
    Borrowed(&'a Holding),
    Owned(Holding),
}

impl std::ops::Deref for Guard<'_> {
    type Target = Holding;

    fn deref(&self) -> &Holding {
        match self {
            Guard::Borrowed(h) => h,
            Guard::Owned(h) => h,
        }
    }
}

impl GuardedTransaction<'static> {
    /// A transaction guarded by `holding` (a leadership's shared handle).
    pub(crate) fn owned(holding: Holding) -> Self {
        GuardedTransaction {
            holding: Guard::Owned(holding),
            ops: Vec::new(),
        }
    }
}

impl Holding {
    /// A transaction guarded by this holding (see [`GuardedTransaction`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// g.holding().transaction().set_data("/app/x", b"1".to_vec(), None).commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transaction(&self) -> GuardedTransaction<'_> {
        GuardedTransaction {
            holding: Guard::Borrowed(self),
            ops: Vec::new(),
        }
    }
}

impl GuardedTransaction<'_> {
    /// Adds a create of `path` with `data` in `mode`, with the ACL the
    /// client's ACL provider gives `path`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// g.transaction().create("/app/done", vec![], zk_framework::CreateMode::Persistent).commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(mut self, path: &str, data: Vec<u8>, mode: CreateMode) -> Self {
        let acl = self.acl_for(path);
        self.ops.push(Op::create(path, data, acl, mode));
        self
    }

    /// Adds a set-data of `path` (`version`: `None` for any).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// g.transaction().set_data("/app/x", b"1".to_vec(), Some(3)).commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_data(mut self, path: &str, data: Vec<u8>, version: Option<i32>) -> Self {
        self.ops.push(Op::set_data(path, data, version));
        self
    }

    /// Adds a delete of `path` (`version`: `None` for any).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// g.transaction().delete("/app/old", None).commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(mut self, path: &str, version: Option<i32>) -> Self {
        self.ops.push(Op::delete(path, version));
        self
    }

    /// Adds a version check of `path` (`-1`: it exists, any version).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// g.transaction().check("/app/x", 3).set_data("/app/y", b"1".to_vec(), None).commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(mut self, path: &str, version: i32) -> Self {
        self.ops.push(Op::check(path, version));
        self
    }

    fn acl_for(&self, path: &str) -> Vec<zk_framework::Acl> {
        self.holding
            .first_client()
            .map_or_else(zk_framework::Acl::open_unsafe, |c| c.acl_for_path(path))
    }

    /// Sends the writes and the lock-node checks as one multi: all are applied
    /// or none. Returns the results of the caller's ops, in order (created
    /// paths relative to the namespace).
    ///
    /// # Errors
    ///
    /// * [`Error::LockLost`] when the lock node is gone (deleted by someone
    ///   else, or with its session) or the holding was already known lost:
    ///   nothing was written, and the guard's `status()` is `Lost` from then
    ///   on;
    /// * [`Error::TransactionFailed`] when one of the caller's ops failed
    ///   (its index among them, and its error): nothing was written;
    /// * [`Error::ZooKeeper`] when the multi could not be sent or its reply
    ///   was lost (`ConnectionLoss`: the outcome is unknown);
    /// * [`Error::InvalidArgument`] for a `MultiLock` whose locks are on
    ///   different clients.
    ///
    /// # Examples
    ///
    /// See [`GuardedTransaction`].
    pub fn commit(self) -> Result<Vec<OpResult>> {
        let (client, checks) = self.holding.check_targets()?;
        let lost = || Error::LockLost {
            path: self.holding.base(),
        };
        if self.holding.status() == LockStatus::Lost {
            return Err(lost());
        }
        let k = checks.len();
        let mut ops: Vec<Op> = checks.into_iter().map(|p| Op::check(p, -1)).collect();
        ops.extend(self.ops);
        let results = match client.multi_results(ops) {
            Ok(r) => r,
            Err(zk_framework::Error::SessionExpired) => {
                for i in 0..k {
                    self.holding.lose_member(i, LossCause::SessionExpired);
                }
                return Err(lost());
            }
            Err(e) => return Err(Error::ZooKeeper(e)),
        };
        let failed = results
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.error().map(|e| (i, e)))
            .find(|(_, e)| e.code() != Some(ErrorCode::RuntimeInconsistency))
            .or_else(|| results.iter().enumerate().find_map(|(i, r)| r.error().map(|e| (i, e))));
        match failed {
            None => Ok(results.into_iter().skip(k).collect()),
            Some((i, zk_framework::Error::NoNode { .. })) if i < k => {
                self.holding.lose_member(i, LossCause::NodeDeleted);
                Err(lost())
            }
            Some((i, e)) if i < k => Err(Error::ZooKeeper(e.clone())),
            Some((i, e)) => Err(Error::TransactionFailed {
                index: i - k,
                error: e.clone(),
            }),
        }
    }
}
