//! Several requests in one round trip: transactions (multi) and the
//! pipelined operations that list children right after a create or a
//! transaction.

use super::handle::Client;
use super::inner::{Reply, Submitted};
use super::request::check_ttl;
use super::types::{Op, OpResult};
use crate::error::{Error, Result};
use zk_proto::jute::Decode;
use zk_proto::{
    Acl, CreateMode, CreateRequest, CreateRequestRef, CreateTtlRequest, DeleteRequest, ErrorCode, GetChildrenResponse,
    MultiOp, MultiRequest, MultiResponse, MultiResult, OpCode, PathWatchRequest, Stat,
};

impl Client {
    /// Creates a node (create2) and lists the children of `children_of`, sent
    /// back to back without waiting in between. ZooKeeper answers a session's
    /// requests in order, so the listing already shows the new node: a lock
    /// recipe learns its node and the queue in one round trip of latency.
    ///
    /// Returns the create's result; on success, also the listing's own result.
    ///
    /// # Errors
    ///
    /// As [`Client::create2`] for the create; the listing's errors are those of
    /// [`Client::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let ((path, _stat), kids) =
    ///     zk.create2_then_get_children("/q/n-", b"", &Acl::open_unsafe(), CreateMode::EphemeralSequential, "/q")?;
    /// assert!(kids?.iter().any(|k| path.ends_with(k.as_str())));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn create2_then_get_children(
        &self,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        mode: CreateMode,
        children_of: &str,
    ) -> Result<((String, Stat), Result<Vec<String>>)> {
        self.pipelined_create(None, path, data, acl, mode, children_of)
    }

    /// [`Client::create2_then_get_children`] with, first, a create of `parent`
    /// (path, ACL, mode) in the same round trip, whose own outcome (made, or
    /// there already) is not reported.
    ///
    /// With a parent to make, the listing is not pipelined: when this call
    /// made the parent (it was not there) and the sequential node got suffix
    /// `0000000000`, the node is the first child the parent has had (the
    /// suffix is the parent's creation counter, which starts at 0 with the
    /// parent and counts every create under it), so the listing at the
    /// create is known without a read: the node alone. Otherwise (the parent
    /// was there already, or another session's create came first) the
    /// listing follows in a second round trip. A lock on a fresh path so
    /// costs one round trip and two writes.
    #[allow(clippy::type_complexity)]
    pub(crate) fn pipelined_create(
        &self,
        parent: Option<(&str, &[Acl], CreateMode)>,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        mode: CreateMode,
        children_of: &str,
    ) -> Result<((String, Stat), Result<Vec<String>>)> {
        if mode.is_ttl() || mode.is_container() {
            return Err(Error::InvalidArgument(format!(
                "{mode:?} cannot be pipelined with a listing"
            )));
        }
        let sp = self.server_path(path, mode.is_sequential())?;
        let list_sp = self.server_path(children_of, false)?;
        self.check_data(data)?;
        Self::check_acl(acl, path)?;
        let req = CreateRequestRef {
            path: &sp,
            data,
            acl,
            flags: mode.code(),
        };
        let inner = self.inner();
        let parent_made = match parent {
            Some((parent_path, parent_acl, parent_mode)) if !parent_mode.is_ttl() && !parent_mode.is_sequential() => {
                let psp = self.server_path(parent_path, false)?;
                Self::check_acl(parent_acl, parent_path)?;
                let preq = CreateRequestRef {
                    path: &psp,
                    data: &[],
                    acl: parent_acl,
                    flags: parent_mode.code(),
                };
                let op = if parent_mode.is_container() {
                    OpCode::CreateContainer
                } else {
                    OpCode::Create
                };
                Some(inner.submit(op, Some(&preq), None, false, None, self.request_bound())?)
            }
            _ => None,
        };
        // The parent's reply is awaited after the create (and the listing, if
        // pipelined) is sent, so that nothing is left in flight. Whether it
        // made the parent matters only to the first-child rule (see above):
        // any other failure fails the create after it too.
        let parent_reply = |parent_made: Option<_>| match parent_made {
            Some(p) => inner.await_reply(p).is_ok_and(|r| r.header.err == 0),
            None => false,
        };
        let created = match inner.submit(OpCode::Create2, Some(&req), None, false, None, self.request_bound()) {
            Ok(c) => c,
            Err(e) => {
                parent_reply(parent_made);
                return Err(e);
            }
        };
        let list = || {
            inner.submit(
                OpCode::GetChildren,
                Some(&PathWatchRequest {
                    path: list_sp.clone(),
                    watch: false,
                }),
                None,
                false,
                None,
                self.request_bound(),
            )
        };
        let decode_listing = |listing: Result<Submitted>| {
            listing.and_then(|l| inner.await_reply(l)).and_then(|r| {
                self.finish(r, children_of, |rd| {
                    zk_proto::GetChildrenResponse::decode(rd).map(|g| g.children)
                })
            })
        };
        // The first child of a parent made just now needs no listing (see
        // above); only a sequential create under that parent can tell.
        let may_be_first =
            parent_made.is_some() && mode.is_sequential() && zk_proto::path::parent(path) == Some(children_of);
        let listing = (!may_be_first).then(list);
        let parent_made = parent_reply(parent_made);
        let created = inner.await_reply(created);
        // Awaited before the create's outcome is looked at: nothing is left
        // in flight.
        let listed = listing.map(decode_listing);
        let c = self.finish(created?, path, zk_proto::Create2Response::decode)?;
        let kids = match listed {
            Some(kids) => kids,
            None => match crate::paths::first_child_listing(parent_made, &c.path) {
                Some(kids) => Ok(kids),
                None => decode_listing(list()),
            },
        };
        Ok(((inner.client_path(&c.path), c.stat), kids))
    }

    /// Checks that the node exists with data version `version`.
    ///
    /// Sent as a one-op multi (a bare check, opcode 13, gets no reply from a
    /// standalone ZooKeeper 3.8.0 when it matches).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`]; [`Error::NoNode`], [`Error::BadVersion`];
    /// connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.check("/config", 3)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn check(&self, path: &str, version: i32) -> Result<()> {
        self.multi(vec![Op::check(path, version)]).map(|_| ())
    }

    /// Runs `ops` as one atomic transaction (multi, opcode 14) and returns one
    /// result per op.
    ///
    /// # Errors
    ///
    /// If the transaction fails, the error of the first failing op (for example
    /// [`Error::NodeExists`] with that op's path); nothing was applied. Use
    /// [`Client::multi_results`] to see every op's result. Client-side checks
    /// ([`Error::InvalidPath`], [`Error::InvalidArgument`], [`Error::DataTooLarge`]
    /// for the whole request) and connection errors as for other calls.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, Op};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let results = zk.multi(vec![
    ///     Op::check("/config", 3),
    ///     Op::create("/config/next", b"x".to_vec(), Acl::open_unsafe(), CreateMode::Persistent),
    ///     Op::delete("/config/old", None),
    /// ])?;
    /// assert_eq!(results.len(), 3);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        let results = self.multi_results(ops)?;
        let first = results
            .iter()
            .filter_map(OpResult::error)
            .find(|e| e.code() != Some(ErrorCode::RuntimeInconsistency))
            .or_else(|| results.iter().find_map(OpResult::error));
        match first {
            Some(e) => Err(e.clone()),
            None => Ok(results),
        }
    }

    /// Runs `ops` as one transaction and returns every op's result, also when
    /// the transaction failed: then the ops before the failing one are
    /// [`OpResult::RolledBack`], the failing one is [`OpResult::Error`] with its
    /// error, and the ops after it are `Error(Keeper { RuntimeInconsistency })`.
    ///
    /// # Errors
    ///
    /// Only the errors of the call itself (client-side checks, connection, a
    /// dead handle), never an op's failure.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, Op, OpResult};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let results = zk.multi_results(vec![Op::check("/a", 0), Op::delete("/b", None)])?;
    /// let failed = results.iter().any(|r| matches!(r, OpResult::Error(_)));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn multi_results(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        self.multi_results_at(ops).map(|(results, _)| results)
    }

    /// As [`Client::multi_results`], with the zxid of the reply: for a
    /// transaction that was applied, its own zxid (the czxid of every node it
    /// created, the mzxid of every node it set).
    pub(crate) fn multi_results_at(&self, ops: Vec<Op>) -> Result<(Vec<OpResult>, i64)> {
        let mut paths = Vec::with_capacity(ops.len());
        let mut mops = Vec::with_capacity(ops.len());
        for op in ops {
            paths.push(op.path().to_string());
            mops.push(self.multi_op(op)?);
        }
        let req = MultiRequest { ops: mops };
        let reply = self.send(OpCode::Multi, &req, None)?;
        let zxid = reply.header.zxid;
        self.decode_multi(reply, &paths).map(|r| (r, zxid))
    }

    /// Runs `ops` as one transaction (as [`Client::multi`]) and lists the
    /// children of each of `children_of`, all sent back to back without waiting
    /// in between. ZooKeeper answers a session's requests in order, so the
    /// listings show the transaction's effect: one round trip of latency.
    ///
    /// Returns the transaction's result (as [`Client::multi`], with the
    /// transaction's zxid, which is the czxid of every node it created) and one
    /// listing result per path.
    ///
    /// # Errors
    ///
    /// The outer error is a failure to send (client-side checks, connection);
    /// the transaction's and the listings' own failures are in the inner
    /// results.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, Op};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let acl = Acl::open_unsafe();
    /// let (txn, lists) = zk.multi_then_get_children(
    ///     vec![Op::create("/a/x-", b"", acl.clone(), CreateMode::EphemeralSequential),
    ///          Op::create("/b/y-", b"", acl, CreateMode::EphemeralSequential)],
    ///     &["/a", "/b"],
    /// )?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn multi_then_get_children(
        &self,
        ops: Vec<Op>,
        children_of: &[&str],
    ) -> Result<(Result<(Vec<OpResult>, i64)>, Vec<Result<Vec<String>>>)> {
        let mut paths = Vec::with_capacity(ops.len());
        let mut mops = Vec::with_capacity(ops.len());
        for op in ops {
            paths.push(op.path().to_string());
            mops.push(self.multi_op(op)?);
        }
        let list_sps = children_of
            .iter()
            .map(|p| self.server_path(p, false))
            .collect::<Result<Vec<_>>>()?;
        let inner = self.inner();
        let txn = inner.submit(
            OpCode::Multi,
            Some(&MultiRequest { ops: mops }),
            None,
            false,
            None,
            self.request_bound(),
        )?;
        let listings: Vec<_> = list_sps
            .into_iter()
            .map(|sp| {
                inner.submit(
                    OpCode::GetChildren,
                    Some(&PathWatchRequest { path: sp, watch: false }),
                    None,
                    false,
                    None,
                    self.request_bound(),
                )
            })
            .collect();
        let txn = inner.await_reply(txn).and_then(|r| {
            let zxid = r.header.zxid;
            let results = self.decode_multi(r, &paths)?;
            match results
                .iter()
                .filter_map(OpResult::error)
                .find(|e| e.code() != Some(ErrorCode::RuntimeInconsistency))
            {
                Some(e) => Err(e.clone()),
                None => Ok((results, zxid)),
            }
        });
        let lists = listings
            .into_iter()
            .zip(children_of)
            .map(|(l, path)| {
                l.and_then(|l| inner.await_reply(l))
                    .and_then(|r| self.finish(r, path, |rd| GetChildrenResponse::decode(rd).map(|g| g.children)))
            })
            .collect();
        Ok((txn, lists))
    }

    fn decode_multi(&self, reply: Reply, paths: &[String]) -> Result<Vec<OpResult>> {
        let first_path = paths.first().cloned().unwrap_or_default();
        let resp = self.finish(reply, &first_path, MultiResponse::decode)?;
        let gen_kill = |why: &str| {
            log::warn!("bad multi response: {why}");
            self.inner().kill(None, "bad multi response");
            Error::ConnectionLoss
        };
        if resp.results.len() != paths.len() {
            return Err(gen_kill("wrong number of results"));
        }
        let mut out = Vec::with_capacity(paths.len());
        for (res, path) in resp.results.into_iter().zip(paths) {
            out.push(match res {
                MultiResult::Create { path } => OpResult::Create {
                    path: self.inner().client_path(&path),
                    stat: None,
                },
                MultiResult::Create2 { path, stat } => OpResult::Create {
                    path: self.inner().client_path(&path),
                    stat: Some(stat),
                },
                MultiResult::Delete => OpResult::Delete,
                MultiResult::SetData { stat } => OpResult::SetData { stat },
                MultiResult::Check => OpResult::Check,
                MultiResult::Error { err: 0 } => OpResult::RolledBack,
                MultiResult::Error { err } => OpResult::Error(Error::from_raw(err, path)),
                MultiResult::GetData { .. } | MultiResult::GetChildren { .. } => {
                    return Err(gen_kill("read result in a write multi"));
                }
            });
        }
        Ok(out)
    }

    fn multi_op(&self, op: Op) -> Result<MultiOp> {
        Ok(match op {
            Op::Create {
                path,
                data,
                acl,
                mode,
                ttl,
            } => {
                let ttl = check_ttl(mode, ttl)?;
                let sp = self.server_path(&path, mode.is_sequential())?;
                self.check_data(&data)?;
                Self::check_acl(&acl, &path)?;
                match ttl {
                    Some(ttl) => MultiOp::CreateTtl(CreateTtlRequest {
                        path: sp,
                        data,
                        acl,
                        flags: mode.code(),
                        ttl,
                    }),
                    None => MultiOp::Create {
                        op: if mode.is_container() {
                            OpCode::CreateContainer
                        } else {
                            OpCode::Create
                        },
                        request: CreateRequest {
                            path: sp,
                            data,
                            acl,
                            flags: mode.code(),
                        },
                    },
                }
            }
            Op::Delete { path, version } => MultiOp::Delete(DeleteRequest {
                path: self.server_path(&path, false)?,
                version: version.unwrap_or(-1),
            }),
            Op::SetData { path, data, version } => {
                let sp = self.server_path(&path, false)?;
                self.check_data(&data)?;
                MultiOp::SetData(zk_proto::SetDataRequest {
                    path: sp,
                    data,
                    version: version.unwrap_or(-1),
                })
            }
            Op::Check { path, version } => MultiOp::Check(DeleteRequest {
                path: self.server_path(&path, false)?,
                version,
            }),
        })
    }
}
