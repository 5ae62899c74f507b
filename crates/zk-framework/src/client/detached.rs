//! Requests whose replies the caller does not wait for, and what the client
//! knows locally about its connection's liveness.

use std::time::Duration;

use super::handle::Client;
use super::types::Watcher;
use super::watches::{WatchMode, WatchReg};
use crate::error::{Error, Result};
use zk_proto::jute::Decode;
use zk_proto::{DeleteRequest, ErrorCode, GetChildrenResponse, GetDataResponse, OpCode, PathWatchRequest, Stat};

impl Client {
    /// Sets an exists-watch on `path` without waiting for the reply: the
    /// request is written and this returns. `on_reply` is called once, on the
    /// client's I/O thread (so it must only signal: no blocking, no calls into
    /// the client), with `Ok(Some(stat))` if the node existed, `Ok(None)` if it
    /// did not, or the error (for example `ConnectionLoss` when the connection
    /// broke first; the watch is then not registered).
    ///
    /// Lock recipes use it to watch their own node right after a grant without
    /// adding a round trip to the acquire.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], and the immediate connection errors of
    /// [`Client`] (`ConnectionLoss` while disconnected, `SessionExpired`,
    /// `Closed`): nothing was sent then and `on_reply` is not called.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
    /// let (rtx, rrx) = crossbeam_channel::bounded(1);
    /// zk.exists_w_detached("/lock", tx, move |r| {
    ///     let _ = rtx.try_send(r.map(|stat| stat.is_some()));
    /// })?;
    /// println!("exists: {:?}", rrx.recv());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists_w_detached(
        &self,
        path: &str,
        watcher: impl Watcher,
        on_reply: impl FnOnce(Result<Option<Stat>>) + Send + 'static,
    ) -> Result<()> {
        self.exists_detached_inner(path, Some(Box::new(watcher)), Box::new(on_reply))
    }

    /// Asks whether `path` exists without waiting for the reply and without a
    /// watch: `on_reply` is called once, on the client's I/O thread (so it
    /// must only signal), with the node's Stat, `None` when it does not exist,
    /// or the error. Its reply is read after every notification the server
    /// sent before it, and before the reply of any request sent after it.
    ///
    /// Lock recipes use it to prove, after a reconnect, that a node they hold
    /// still exists and belongs to their session.
    ///
    /// # Errors
    ///
    /// As [`Client::exists_w_detached`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// zk.exists_detached("/lock", move |r| {
    ///     let _ = tx.try_send(r);
    /// })?;
    /// println!("stat: {:?}", rx.recv());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<Stat>>) + Send + 'static,
    ) -> Result<()> {
        self.exists_detached_inner(path, None, Box::new(on_reply))
    }

    #[allow(clippy::type_complexity)]
    fn exists_detached_inner(
        &self,
        path: &str,
        watcher: Option<Box<dyn Watcher>>,
        on_reply: Box<dyn FnOnce(Result<Option<Stat>>) + Send>,
    ) -> Result<()> {
        let sp = self.server_path(path, false)?;
        let watch = watcher.map(|w| WatchReg {
            mode: WatchMode::Exists,
            server_path: sp.clone(),
            watcher: w,
        });
        let req = PathWatchRequest {
            watch: watch.is_some(),
            path: sp,
        };
        let inner = self.inner();
        let submitted = inner.submit(
            OpCode::Exists,
            Some(&req),
            watch.map(Into::into),
            false,
            None,
            self.request_bound(),
        )?;
        let p = path.to_string();
        inner.on_reply(
            submitted,
            Box::new(move |r| {
                on_reply(match r {
                    Ok(reply) if reply.header.err == 0 => {
                        Stat::decode(&mut reply.body()).map(Some).map_err(|e| {
                            // As a garbage reply to a waited-for call: nothing
                            // can be learnt from it.
                            log::warn!("garbage exists reply for {p}: {e}");
                            Error::ConnectionLoss
                        })
                    }
                    Ok(reply) if reply.header.err == ErrorCode::NoNode.code() => Ok(None),
                    Ok(reply) => Err(Error::from_raw(reply.header.err, &p)),
                    Err(e) => Err(e.clone()),
                })
            }),
        );
        Ok(())
    }

    /// Reads `path`'s data and `Stat` without waiting for the reply: the
    /// request is written and this returns, so many reads can be in flight
    /// on the connection at once (a cache's first load). `on_reply` is
    /// called once, on the client's I/O thread (so it must only signal), with
    /// `Ok(Some((data, stat)))`, `Ok(None)` if the node does not exist, or the
    /// error.
    ///
    /// # Errors
    ///
    /// As [`Client::exists_detached`]: nothing was sent then and `on_reply`
    /// is not called.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// for p in ["/a", "/b"] {
    ///     let tx = tx.clone();
    ///     zk.get_data_detached(p, move |r| {
    ///         let _ = tx.send(r);
    ///     })?;
    /// }
    /// println!("{:?} {:?}", rx.recv(), rx.recv());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<(Vec<u8>, Stat)>>) + Send + 'static,
    ) -> Result<()> {
        self.read_detached(
            path,
            OpCode::GetData,
            |r| GetDataResponse::decode(r).map(|d| (d.data, d.stat)),
            Box::new(on_reply),
        )
    }

    /// Lists `path`'s children without waiting for the reply (see
    /// [`Client::get_data_detached`]): `Ok(Some(children))`, `Ok(None)` if
    /// the node does not exist, or the error.
    ///
    /// # Errors
    ///
    /// As [`Client::exists_detached`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// zk.get_children_detached("/a", move |r| {
    ///     let _ = tx.try_send(r);
    /// })?;
    /// println!("{:?}", rx.recv());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<Vec<String>>>) + Send + 'static,
    ) -> Result<()> {
        self.read_detached(
            path,
            OpCode::GetChildren,
            |r| GetChildrenResponse::decode(r).map(|c| c.children),
            Box::new(on_reply),
        )
    }

    /// A read without a watch, answered through `on_reply` (NoNode: `None`).
    #[allow(clippy::type_complexity)]
    fn read_detached<T: 'static>(
        &self,
        path: &str,
        op: OpCode,
        decode: fn(&mut zk_proto::jute::Reader<'_>) -> std::result::Result<T, zk_proto::jute::DecodeError>,
        on_reply: Box<dyn FnOnce(Result<Option<T>>) + Send>,
    ) -> Result<()> {
        let sp = self.server_path(path, false)?;
        let req = PathWatchRequest { watch: false, path: sp };
        let inner = self.inner();
        let submitted = inner.submit(op, Some(&req), None, false, None, self.request_bound())?;
        let p = path.to_string();
        inner.on_reply(
            submitted,
            Box::new(move |r| {
                on_reply(match r {
                    Ok(reply) if reply.header.err == 0 => decode(&mut reply.body()).map(Some).map_err(|e| {
                        log::warn!("garbage {op:?} reply for {p}: {e}");
                        Error::ConnectionLoss
                    }),
                    Ok(reply) if reply.header.err == ErrorCode::NoNode.code() => Ok(None),
                    Ok(reply) => Err(Error::from_raw(reply.header.err, &p)),
                    Err(e) => Err(e.clone()),
                })
            }),
        );
        Ok(())
    }

    /// Deletes `path` (at `version`, or any) without waiting for the reply:
    /// the request is written and this returns. `on_reply` is called once, on
    /// the client's I/O thread (so it must only signal), with `Ok(())`, the
    /// server's error (`NoNode`, ...), or `ConnectionLoss` when the connection
    /// broke first (the delete may or may not have been applied).
    ///
    /// A lock's release uses it to wait for its delete no longer than a bound
    /// of its own.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], and the immediate connection errors of
    /// [`Client`] (`ConnectionLoss` while disconnected, `SessionExpired`,
    /// `Closed`): nothing was sent then and `on_reply` is not called.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// zk.delete_detached("/lock/n", None, move |r| {
    ///     let _ = tx.try_send(r);
    /// })?;
    /// println!("deleted: {:?}", rx.recv_timeout(std::time::Duration::from_secs(1)));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete_detached(
        &self,
        path: &str,
        version: Option<i32>,
        on_reply: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<()> {
        let sp = self.server_path(path, false)?;
        let req = DeleteRequest {
            path: sp,
            version: version.unwrap_or(-1),
        };
        let inner = self.inner();
        let submitted = inner.submit(OpCode::Delete, Some(&req), None, false, None, self.request_bound())?;
        let p = path.to_string();
        inner.on_reply(
            submitted,
            Box::new(move |r| {
                on_reply(match r {
                    Ok(reply) if reply.header.err == 0 => Ok(()),
                    Ok(reply) => Err(Error::from_raw(reply.header.err, &p)),
                    Err(e) => Err(e.clone()),
                })
            }),
        );
        Ok(())
    }

    /// How long ago a byte last arrived from a server on any connection of this
    /// handle. A healthy connection hears at least a ping reply every third of
    /// [`Client::read_timeout`]; a process that was paused (a long GC-like
    /// stall, a debugger, SIGSTOP) sees a large value here at once on resuming,
    /// before the I/O thread has noticed anything.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// assert!(zk.since_last_receive() < zk.read_timeout() * 2);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn since_last_receive(&self) -> Duration {
        self.inner().idle_recv()
    }

    /// How long ago the latest request that a server has answered (a ping
    /// included) was sent: its reply proves the session was alive then.
    /// Unlike [`Client::since_last_receive`], this is not made small by
    /// replies read late: a process resumed after a pause reads what the
    /// server sent before the pause (and may have expired the session since),
    /// but those replies answer requests sent before the pause.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// assert!(zk.since_last_confirmed() < zk.read_timeout() * 2);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn since_last_confirmed(&self) -> Duration {
        self.inner().idle_confirmed()
    }

    /// The read timeout: two thirds of the negotiated session timeout (the
    /// requested one before the first connection). A connection that hears
    /// nothing for this long is declared dead.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// assert!(zk.read_timeout() > std::time::Duration::ZERO);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn read_timeout(&self) -> Duration {
        self.inner().read_timeout()
    }
}
