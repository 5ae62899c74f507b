//! The user's node operations on [`CuratorFramework`]: the create and delete
//! builders, the reads (with and without a one-shot watch), the writes, the
//! transaction, and the persistent watches; each through the retry loop, with
//! the namespace applied to its paths and taken off the paths it returns.

use std::sync::Arc;

use super::handle::CuratorFramework;
use super::ops::{CreateBuilder, DeleteBuilder};
use super::watchers::Unnamespaced;
#[cfg(doc)]
use crate::client::Client;
use crate::client::{AddWatchMode, Op, OpResult, PersistentWatcher, WatchId, Watcher, WatcherType};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::paths::{fix_for_namespace, unfix_for_namespace};
use zk_proto::Stat;

/// The nodes: create, read, write, delete, and watch them.
impl CuratorFramework {
    /// Starts a create (Curator's `client.create()...forPath(path)`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = c.create().creating_parent_containers_if_needed().for_path("/a/b")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn create(&self) -> CreateBuilder<'_> {
        CreateBuilder::new(self)
    }

    /// Starts a delete (Curator's `client.delete()...forPath(path)`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete().guaranteed().for_path("/a/b")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete(&self) -> DeleteBuilder<'_> {
        DeleteBuilder::new(self)
    }

    /// Reads a node's data and Stat, with retries.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::InvalidPath`], or the last retryable error
    /// when retries are exhausted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (data, stat) = c.get_data("/a")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let p = self.checked_path(path)?;
        self.retry(|c| c.get_data(&p))
    }

    /// Reads a node's data and leaves a one-shot data watch (event paths are
    /// given without the namespace).
    ///
    /// # Errors
    ///
    /// As [`CuratorFramework::get_data`]; on NoNode no watch is left.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// c.get_data_w("/a", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data_w(&self, path: &str, watcher: impl Watcher) -> Result<(Vec<u8>, Stat)> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.retry(|c| c.get_data_w(&p, slot.attempt()))
    }

    /// Whether a node exists, with retries.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], or the last retryable error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let exists = c.check_exists("/a")?.is_some();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn check_exists(&self, path: &str) -> Result<Option<Stat>> {
        let p = self.checked_path(path)?;
        self.retry(|c| c.exists(&p))
    }

    /// Whether a node exists, leaving a one-shot watch (set even when the node is
    /// missing, so that its creation is reported).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], or the last retryable error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// let stat = c.check_exists_w("/a", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn check_exists_w(&self, path: &str, watcher: impl Watcher) -> Result<Option<Stat>> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.retry(|c| c.exists_w(&p, slot.attempt()))
    }

    /// Lists children (names only), with retries.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::InvalidPath`], or the last retryable error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let kids = c.get_children("/")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children(&self, path: &str) -> Result<Vec<String>> {
        let p = self.checked_path(path)?;
        self.retry(|c| c.get_children(&p))
    }

    /// Lists children and leaves a one-shot child watch.
    ///
    /// # Errors
    ///
    /// As [`CuratorFramework::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// let kids = c.get_children_w("/", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_w(&self, path: &str, watcher: impl Watcher) -> Result<Vec<String>> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.retry(|c| c.get_children_w(&p, slot.attempt()))
    }

    /// Lists children (names only) with the node's own Stat (Curator's
    /// `getChildren().storingStatIn(stat)`), with retries. The Stat's
    /// `pzxid` is the zxid of the last change to the children: every child
    /// listed was created at or before it.
    ///
    /// # Errors
    ///
    /// As [`CuratorFramework::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (kids, stat) = c.get_children_with_stat("/")?;
    /// assert_eq!(kids.len(), stat.num_children as usize);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_with_stat(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        let p = self.checked_path(path)?;
        self.retry(|c| c.get_children2(&p))
    }

    /// As [`get_children_with_stat`](Self::get_children_with_stat), leaving
    /// a one-shot child watch.
    ///
    /// # Errors
    ///
    /// As [`CuratorFramework::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// let (kids, stat) = c.get_children_with_stat_w("/", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_with_stat_w(&self, path: &str, watcher: impl Watcher) -> Result<(Vec<String>, Stat)> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.retry(|c| c.get_children2_w(&p, slot.attempt()))
    }

    /// Sets a node's data, with retries.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::BadVersion`], [`Error::DataTooLarge`],
    /// [`Error::InvalidPath`], or the last retryable error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.set_data("/a", b"v".to_vec(), None)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn set_data(&self, path: &str, data: Vec<u8>, version: Option<i32>) -> Result<Stat> {
        let p = self.checked_path(path)?;
        self.retry(|c| c.set_data(&p, &data, version))
    }

    /// Runs `ops` as one multi, once (no retry: a transaction whose reply
    /// was lost may have been applied), with the namespace applied to every
    /// op's path and removed from created paths. Each op's result comes back
    /// in order; when one op fails, none is applied and the results say which
    /// (`OpResult::Error`). Bounded by this handle's deadline.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a bad path (nothing sent); the connection
    /// errors of a single request (`ConnectionLoss`: the outcome is unknown,
    /// `SessionExpired`, `Closed`, `DeadlineExceeded`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{CreateMode, Op};
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("app").build()?;
    /// let results = c.multi_results(vec![
    ///     Op::check("/config", -1),
    ///     Op::create("/config/new", b"v".to_vec(), zk_framework::Acl::open_unsafe(), CreateMode::Persistent),
    /// ])?;
    /// println!("{results:?}"); // created paths without the namespace
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn multi_results(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        let ns = self.inner.namespace.as_deref();
        let ops = ops
            .into_iter()
            .map(|op| {
                op.map_path(|p, sequential| {
                    zk_proto::path::validate_path(p, sequential)?;
                    Ok(fix_for_namespace(ns, p))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let results = self
            .zookeeper_client()
            .with_deadline(self.deadline)
            .multi_results(ops)?;
        Ok(results
            .into_iter()
            .map(|r| match r {
                OpResult::Create { path, stat } => OpResult::Create {
                    path: unfix_for_namespace(ns, &path),
                    stat,
                },
                r => r,
            })
            .collect())
    }

    /// Sets a persistent watch on `path` (see [`Client::add_watch`]), with
    /// retries. The namespace is added to `path` and taken off the paths of
    /// the events. The registration belongs to the current session's client:
    /// after the session's expiry (the watcher's final `(None, Expired)`
    /// event) it is gone, and a recipe adds it again on the new session; the
    /// server replays nothing for persistent watches after a reconnect, so a
    /// caller that keeps state re-reads on `(None, SyncConnected)`.
    ///
    /// On ZooKeeper 3.6–3.8 a one-shot and a persistent watch (or two modes)
    /// on the same path of one client interfere (ZOOKEEPER-4466, see
    /// [`Client::add_watch`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`]; [`Error::ServerTooOld`] on a server before 3.6;
    /// the last retryable error when retries are exhausted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::{AddWatchMode, WatchedEvent};
    /// let (tx, rx) = crossbeam_channel::unbounded::<WatchedEvent>();
    /// let id = c.add_watch("/config", AddWatchMode::PersistentRecursive, tx)?;
    /// c.remove_watch(id)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn add_watch(&self, path: &str, mode: AddWatchMode, watcher: impl PersistentWatcher) -> Result<WatchId> {
        let p = self.checked_path(path)?;
        let shared: Arc<dyn PersistentWatcher> = Arc::new(Unnamespaced {
            inner: watcher,
            namespace: self.inner.namespace.clone(),
        });
        self.retry(|c| c.add_watch_arc(&p, mode, shared.clone()))
    }

    /// Removes one [`add_watch`](CuratorFramework::add_watch) registration
    /// (see [`Client::remove_watch`]), with retries. An id of an earlier
    /// session's client is already gone: `Ok`.
    ///
    /// # Errors
    ///
    /// As [`Client::remove_watch`], after retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::{AddWatchMode, WatchedEvent};
    /// let id = c.add_watch("/a", AddWatchMode::Persistent, |e: WatchedEvent| println!("{e:?}"))?;
    /// c.remove_watch(id)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn remove_watch(&self, id: WatchId) -> Result<()> {
        self.retry(|c| c.remove_watch(id))
    }

    /// Removes every watch of `kind` on `path` (see
    /// [`Client::remove_all_watches`]), with retries; the namespace is added
    /// to `path`.
    ///
    /// # Errors
    ///
    /// As [`Client::remove_all_watches`], after retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::WatcherType;
    /// c.remove_all_watches("/a", WatcherType::Any, false)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn remove_all_watches(&self, path: &str, kind: WatcherType, local: bool) -> Result<()> {
        let p = self.checked_path(path)?;
        self.retry(|c| c.remove_all_watches(&p, kind, local))
    }

    /// Whether this client's connection has a watch of `kind` on `path` on the
    /// server (see [`Client::check_watches`]), with retries; the namespace is
    /// added to `path`.
    ///
    /// # Errors
    ///
    /// As [`Client::check_watches`], after retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::WatcherType;
    /// let watched = c.check_watches("/a", WatcherType::Any)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn check_watches(&self, path: &str, kind: WatcherType) -> Result<bool> {
        let p = self.checked_path(path)?;
        self.retry(|c| c.check_watches(&p, kind))
    }
}
