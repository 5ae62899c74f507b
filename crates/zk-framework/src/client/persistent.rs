//! Persistent watches (ZooKeeper 3.6+): addWatch (106), removeWatches (18) and
//! checkWatches (17); the types of their API are in `watch_types.rs`.
//!
//! A persistent registration stays when it fires; a recursive one also sees
//! every descendant (never NodeChildrenChanged). Besides node events its
//! callback gets the session's states, as the Java client gives them:
//! `(None, Disconnected)` when the connection drops, `(None, SyncConnected)`
//! (or `ConnectedReadOnly`) when it is back on the same session, and a final
//! `(None, Expired)` on expiry, `(None, Closed)` on close or
//! `(None, AuthFailed)`, after which the client has forgotten it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::handle::Client;
use super::watch_types::{AddWatchMode, PersistentWatcher, WatchId, WatcherType, TYPES_OLD};
use super::watches::{PersistentReg, Registration, Shot};
use crate::error::{Error, Result};
use zk_proto::{AddWatchRequest, ErrorCode, EventType, OpCode, WatchTypeRequest};

fn too_old(what: &str, needs: &str, code: ErrorCode) -> Error {
    Error::ServerTooOld {
        what: what.to_string(),
        needs: needs.to_string(),
        code,
    }
}

impl Client {
    /// Sends checkWatches (17) or removeWatches (18) for `kind` on the
    /// server path `sp`; the server's result code.
    fn watch_type_err(&self, op: OpCode, sp: &str, kind: WatcherType) -> Result<i32> {
        self.watch_type_call(op, sp, kind).map(|(err, _)| err)
    }

    /// As [`Client::watch_type_err`], with the reply's zxid (the server's
    /// last processed transaction when it answered).
    fn watch_type_call(&self, op: OpCode, sp: &str, kind: WatcherType) -> Result<(i32, i64)> {
        let req = WatchTypeRequest {
            path: sp.to_string(),
            watcher_type: kind.code(),
        };
        let reply = self
            .inner()
            .call(op, Some(&req), None, false, None, self.request_bound())?;
        Ok((reply.header.err, reply.header.zxid))
    }

    /// After a removeWatches of type `Any` on the server path `sp` answered
    /// at `zxid`: the server dropped every watch of this connection on that
    /// path, the one-shot watches other callers still wait on included (and
    /// other persistent registrations of that path). Sets them again with a
    /// SetWatches at `zxid`, as a reconnect does, so that a change made in
    /// between fires them at once (the server compares the node's zxids with
    /// it). Not waited for: this connection's later requests are answered
    /// after it; a connection lost first re-sends every watch on reconnect.
    fn reregister_after_any(&self, sp: &str, zxid: i64) {
        let inner = self.inner();
        let Some(batch) = inner.core.lock().watches.set_watches_for(sp, zxid) else {
            return;
        };
        let (op, body) = super::watches::batch_request(&batch);
        let path = sp.to_string();
        match inner.submit(op, Some(&*body), None, false, None, self.request_bound()) {
            Ok(sent) => inner.on_reply(
                sent,
                Box::new(move |r| match r {
                    Ok(reply) if reply.header.err == 0 => {}
                    Ok(reply) => log::warn!(
                        "the watches on {path} were not set again after a removeWatches (error {})",
                        reply.header.err
                    ),
                    Err(e) => log::debug!("the watches on {path} are set again on reconnect: {e}"),
                }),
            ),
            Err(e) => log::debug!("the watches on {path} are set again on reconnect: {e}"),
        }
    }

    /// Sets a persistent watch (addWatch, opcode 106): `watcher` is called for
    /// every event of `mode` on `path` (and, recursive, its descendants) until
    /// [`Client::remove_watch`], the session's expiry or the client's close.
    /// The node need not exist (a later create is reported). Event paths are
    /// the changed node's, relative to the chroot.
    ///
    /// The watcher also gets the session's states: `(None, Disconnected)`
    /// when the connection drops, `(None, SyncConnected)` when it is back on
    /// the same session (the registration is re-sent in SetWatches2), and a
    /// final `(None, Expired)` (or `Closed`, `AuthFailed`) after which the
    /// registration is gone (a recipe adds it again on a new session). **The
    /// server replays nothing for persistent watches after a reconnect**:
    /// changes made while disconnected are never reported, so a caller that
    /// keeps state re-reads it on `SyncConnected`.
    ///
    /// Several registrations may share a path and mode: the server is asked
    /// each time, and each callback is called once per event. The server
    /// sends each (type, path) notification once per connection; the client
    /// hands it to every local watcher it matches, one-shot ones included.
    ///
    /// **ZooKeeper 3.6–3.8 (ZOOKEEPER-4466):** the server keeps one watch mode
    /// per path per connection, the latest one set. A one-shot watch
    /// (`exists_w`, `get_data_w`, `get_children_w`) and a persistent watch, or
    /// a persistent and a recursive one, on the same path of one client
    /// interfere there (e.g. the persistent watch's NodeChildrenChanged stops
    /// after a recursive one is added on that path). The client does not work
    /// around it: use one mode per path per client, or a second client.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] (nothing sent); [`Error::ServerTooOld`] when the
    /// server is older than 3.6 (it answers Unimplemented); the connection
    /// errors of [`Client`] (no registration is left then).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, WatchedEvent, AddWatchMode};
    /// let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::unbounded::<WatchedEvent>();
    /// let id = zk.add_watch("/config", AddWatchMode::PersistentRecursive, tx)?;
    /// // ... every change under /config arrives on rx ...
    /// zk.remove_watch(id)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn add_watch(&self, path: &str, mode: AddWatchMode, watcher: impl PersistentWatcher) -> Result<WatchId> {
        self.add_watch_arc(path, mode, Arc::new(watcher))
    }

    pub(crate) fn add_watch_arc(
        &self,
        path: &str,
        mode: AddWatchMode,
        watcher: Arc<dyn PersistentWatcher>,
    ) -> Result<WatchId> {
        let sp = self.server_path(path, false)?;
        let id = WatchId::next();
        let reg = Registration::Many(PersistentReg {
            mode,
            server_path: sp.clone(),
            id,
            watcher,
        });
        let req = AddWatchRequest {
            path: sp,
            mode: mode.code(),
        };
        let inner = self.inner();
        let reply = match inner.call(
            OpCode::AddWatch,
            Some(&req),
            Some(reg),
            false,
            None,
            self.request_bound(),
        ) {
            Ok(r) => r,
            Err(e) => {
                // The reply may still come (a caller's deadline): drop what
                // it would register.
                if let Some(w) = inner.core.lock().watches.cancel(id) {
                    inner.discard(vec![Box::new(Shot(w))]);
                }
                return Err(e);
            }
        };
        match reply.header.err {
            0 => Ok(id),
            e if e == ErrorCode::Unimplemented.code() => Err(too_old("addWatch", "3.6", ErrorCode::Unimplemented)),
            e => Err(Error::from_raw(e, path)),
        }
    }

    /// Removes one [`add_watch`](Client::add_watch) registration. Its watcher
    /// gets a final event of type [`EventType::PersistentWatchRemoved`] (on the
    /// event thread). When no other local registration of that path and mode
    /// remains, the server is told with removeWatches (18): type
    /// `Persistent`/`PersistentRecursive` (4/5) on ZooKeeper 3.9+; on 3.6–3.8,
    /// which reject 4/5, type `Any` (3), which also removes this client's
    /// other watches on that path on the server: the client sets those again
    /// at once (the one-shot watches other callers wait on, and the other
    /// persistent registrations of that path), with a SetWatches relative to
    /// the zxid the removal was answered at, so that a change made in between
    /// fires them as it would have. The client remembers that the server
    /// rejected 4/5.
    ///
    /// An unknown id (already removed, or forgotten at expiry or close) is
    /// `Ok`: there is nothing to remove. A connection that is down, or a
    /// session that ended, is `Ok` too: the server's watch died with the
    /// connection and is not re-registered.
    ///
    /// # Errors
    ///
    /// The local registration is removed in every case; an error says that
    /// the server may keep sending events for it (the client drops them):
    /// [`Error::OperationTimeout`], [`Error::DeadlineExceeded`], or another
    /// server error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent, AddWatchMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let id = zk.add_watch("/a", AddWatchMode::Persistent, |e: WatchedEvent| println!("{e:?}"))?;
    /// zk.remove_watch(id)?;
    /// zk.remove_watch(id)?; // gone already: Ok
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn remove_watch(&self, id: WatchId) -> Result<()> {
        let inner = self.inner();
        let Some((mode, sp, w, others)) = inner.core.lock().watches.remove_persistent(id) else {
            return Ok(());
        };
        let client_path = inner.client_path(&sp);
        inner.fire_removed(
            vec![(Box::new(Shot(w)), EventType::PersistentWatchRemoved)],
            &client_path,
        );
        if others {
            return Ok(());
        }
        let exact = match mode {
            AddWatchMode::Persistent => WatcherType::Persistent,
            AddWatchMode::PersistentRecursive => WatcherType::PersistentRecursive,
        };
        let mut kind = if inner.watch_types.0.load(Ordering::Relaxed) == TYPES_OLD {
            WatcherType::Any
        } else {
            exact
        };
        loop {
            let (err, zxid) = match self.watch_type_call(OpCode::RemoveWatches, &sp, kind) {
                Ok(e) => e,
                Err(Error::ConnectionLoss | Error::SessionExpired | Error::Closed) => return Ok(()),
                Err(e) => return Err(e),
            };
            match err {
                0 => {
                    if kind == WatcherType::Any {
                        self.reregister_after_any(&sp, zxid);
                    }
                    return Ok(());
                }
                e if e == ErrorCode::NoWatcher.code() => return Ok(()),
                e if e == ErrorCode::MarshallingError.code() && kind.is_persistent() => {
                    log::debug!("the server rejects watcher type {}: ZooKeeper before 3.9", kind.code());
                    inner.watch_types.0.store(TYPES_OLD, Ordering::Relaxed);
                    kind = WatcherType::Any;
                }
                e => return Err(Error::from_raw(e, &client_path)),
            }
        }
    }

    /// Removes every watch of `kind` on `path` (Java's `removeAllWatches`):
    /// with `local` false, removeWatches (opcode 18) asks the server to drop
    /// this connection's matching watches, then the matching local watchers
    /// are removed; with `local` true only the local ones are (nothing is
    /// sent; the server may keep sending events, which the client drops).
    /// Each removed watcher gets a final event: DataWatchRemoved (data and
    /// exists watches), ChildWatchRemoved, or PersistentWatchRemoved (for
    /// [`add_watch`](Client::add_watch) registrations, which `Any`,
    /// `Persistent` and `PersistentRecursive` remove).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] (nothing sent or removed);
    /// [`Error::Keeper`] with [`ErrorCode::NoWatcher`] when neither the server
    /// (unless `local`) nor the client had a matching watch;
    /// [`Error::ServerTooOld`] for `Persistent`/`PersistentRecursive` on a
    /// server before 3.9 (nothing removed: use `Any` or
    /// [`Client::remove_watch`]); connection errors (nothing removed).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent, WatcherType};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.exists_w("/a", |e: WatchedEvent| println!("{e:?}"))?;
    /// zk.remove_all_watches("/a", WatcherType::Data, false)?; // prints DataWatchRemoved
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn remove_all_watches(&self, path: &str, kind: WatcherType, local: bool) -> Result<()> {
        let sp = self.server_path(path, false)?;
        let inner = self.inner();
        let mut server_removed = false;
        if !local {
            match self.watch_type_err(OpCode::RemoveWatches, &sp, kind)? {
                0 => server_removed = true,
                e if e == ErrorCode::NoWatcher.code() => {}
                e if e == ErrorCode::MarshallingError.code() && kind.is_persistent() => {
                    inner.watch_types.0.store(TYPES_OLD, Ordering::Relaxed);
                    return Err(too_old(
                        "removeWatches with WatcherType::Persistent/PersistentRecursive",
                        "3.9",
                        ErrorCode::MarshallingError,
                    ));
                }
                e => return Err(Error::from_raw(e, path)),
            }
        }
        let removed = inner.core.lock().watches.remove_kind(&sp, kind);
        if removed.is_empty() && !server_removed {
            return Err(Error::from_code(ErrorCode::NoWatcher, path));
        }
        inner.fire_removed(removed, path);
        Ok(())
    }

    /// Whether this connection has a watch of `kind` on `path` on the server
    /// (checkWatches, opcode 17). It removes nothing.
    ///
    /// **ZooKeeper 3.6–3.8** answer for the path rather than the connection:
    /// `true` when *any* connection has a watch of that table (data or child)
    /// on exactly that path (their `WatchManager.containsWatcher`), and
    /// `false` on a path covered only by a recursive watch on an ancestor.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`]; [`Error::ServerTooOld`] for
    /// `Persistent`/`PersistentRecursive` on a server before 3.9; connection
    /// errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent, WatcherType};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.get_children_w("/", |_: WatchedEvent| {})?;
    /// assert!(zk.check_watches("/", WatcherType::Children)?);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn check_watches(&self, path: &str, kind: WatcherType) -> Result<bool> {
        let sp = self.server_path(path, false)?;
        let inner = self.inner();
        match self.watch_type_err(OpCode::CheckWatches, &sp, kind)? {
            0 => Ok(true),
            e if e == ErrorCode::NoWatcher.code() => Ok(false),
            e if e == ErrorCode::MarshallingError.code() && kind.is_persistent() => {
                inner.watch_types.0.store(TYPES_OLD, Ordering::Relaxed);
                Err(too_old(
                    "checkWatches with WatcherType::Persistent/PersistentRecursive",
                    "3.9",
                    ErrorCode::MarshallingError,
                ))
            }
            e => Err(Error::from_raw(e, path)),
        }
    }
}
