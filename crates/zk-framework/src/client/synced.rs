//! Reads after a `sync`, on one connection: what proves a write whose reply
//! was lost, on whichever server the client reconnected to.
//!
//! A follower answers reads from its own state, which may lag the leader's:
//! a write the leader committed (the one whose reply was lost, say) may not
//! be applied there yet when the client reconnects to it. A `sync` makes the
//! server catch up with the leader before it answers, and ZooKeeper handles a
//! session's requests in order: a read sent after the sync on the same
//! connection is answered from a state that has every write committed before
//! the sync. Sent on another connection (a reconnect between the two) it has
//! no such guarantee, so the reads here are refused unless they went out on
//! the sync's connection.

use std::sync::Arc;

use parking_lot::Mutex;

use super::handle::Client;
use super::inner::{Reply, Submitted};
use super::types::{ReadOp, ReadResult};
use crate::error::{Error, Result};
use zk_proto::jute::Decode;
use zk_proto::{ErrorCode, GetChildren2Response, GetDataResponse, OpCode, PathRecord, PathWatchRequest, Stat};

/// The answer to a [`Client::sync_then_read_detached`].
type OnReads = Box<dyn FnOnce(Result<Vec<ReadResult>>) + Send>;

impl Client {
    /// Sends `sync(sync_path)` and then each of `reads`, back to back on one
    /// connection, and waits for every answer: each read is answered by a
    /// server that has applied every write committed before the sync (see
    /// the module doc above). Reads of a missing node answer `None`; a read
    /// the server refuses (`NoAuth`, ...) answers [`ReadResult::Error`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] (nothing sent); the sync's own error; the
    /// connection errors of a request ([`Error::ConnectionLoss`], ...), and
    /// `ConnectionLoss` also when the connection changed between the sync and
    /// a read (a read not ordered after the sync proves nothing).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, ReadOp, ReadResult};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let answers = zk.sync_then_read("/jobs", &[ReadOp::exists("/jobs/_c_1-once"), ReadOp::get_data("/jobs")])?;
    /// if let ReadResult::Exists(Some(stat)) = &answers[0] {
    ///     println!("the marker is there, version {}", stat.version);
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn sync_then_read(&self, sync_path: &str, reads: &[ReadOp]) -> Result<Vec<ReadResult>> {
        let (sync, sent) = self.submit_synced(sync_path, reads)?;
        let inner = self.inner();
        let gen = sync.gen();
        // Every request is waited for, so that nothing is left in flight.
        let synced = inner.await_reply(sync).map(|reply| sync_answer(&reply, sync_path));
        let mut failure = match synced {
            Ok(Ok(())) => None,
            Ok(Err(e)) | Err(e) => Some(e),
        };
        let mut answers = Vec::with_capacity(reads.len());
        for (r, s) in reads.iter().zip(sent) {
            let answer = s.and_then(|s| {
                if s.gen() != gen {
                    failure.get_or_insert(Error::ConnectionLoss);
                }
                inner.await_reply(s)
            });
            match answer.and_then(|reply| decode_read(r, &reply)) {
                Ok(a) => answers.push(a),
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(answers),
        }
    }

    /// [`Client::sync_then_read`] without waiting: the requests are written
    /// and this returns; `on_reply` is called once, on the client's I/O
    /// thread (so it must only signal, or queue work elsewhere), with every
    /// answer or the first failure (as `sync_then_read`'s).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], and the immediate connection errors
    /// (`ConnectionLoss` while disconnected, `SessionExpired`, `Closed`):
    /// nothing was sent then and `on_reply` is not called.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, ReadOp};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// zk.sync_then_read_detached("/jobs", &[ReadOp::get_children("/jobs")], move |r| {
    ///     let _ = tx.try_send(r);
    /// })?;
    /// println!("{:?}", rx.recv());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn sync_then_read_detached(
        &self,
        sync_path: &str,
        reads: &[ReadOp],
        on_reply: impl FnOnce(Result<Vec<ReadResult>>) + Send + 'static,
    ) -> Result<()> {
        let (sync, sent) = self.submit_synced(sync_path, reads)?;
        let gen = sync.gen();
        let collect = Arc::new(Mutex::new(Collect {
            left: reads.len() + 1,
            answers: vec![None; reads.len()],
            failure: None,
            on_reply: Some(Box::new(on_reply)),
        }));
        let inner = self.inner();
        let c = collect.clone();
        let p = sync_path.to_string();
        inner.on_reply(
            sync,
            Box::new(move |r| {
                let e = match r {
                    Ok(reply) => sync_answer(reply, &p).err(),
                    Err(e) => Some(e.clone()),
                };
                Collect::answered(&c, None, e.map(Err));
            }),
        );
        for (i, (r, s)) in reads.iter().zip(sent).enumerate() {
            match s {
                Ok(s) => {
                    let moved = s.gen() != gen;
                    let c = collect.clone();
                    let r = r.clone();
                    inner.on_reply(
                        s,
                        Box::new(move |reply| {
                            let answer = match reply {
                                _ if moved => Err(Error::ConnectionLoss),
                                Ok(reply) => decode_read(&r, reply),
                                Err(e) => Err(e.clone()),
                            };
                            Collect::answered(&c, Some(i), Some(answer));
                        }),
                    );
                }
                Err(e) => Collect::answered(&collect, Some(i), Some(Err(e))),
            }
        }
        Ok(())
    }

    /// Writes the sync and then each read; the reads' own submissions may
    /// have failed (the connection went between them).
    #[allow(clippy::type_complexity)]
    fn submit_synced(&self, sync_path: &str, reads: &[ReadOp]) -> Result<(Submitted, Vec<Result<Submitted>>)> {
        let sync_sp = self.server_path(sync_path, false)?;
        let read_sps = reads
            .iter()
            .map(|r| self.server_path(r.path(), false))
            .collect::<Result<Vec<_>>>()?;
        let inner = self.inner();
        let bound = self.request_bound();
        let sync = inner.submit(
            OpCode::Sync,
            Some(&PathRecord { path: sync_sp }),
            None,
            false,
            None,
            bound,
        )?;
        let sent = reads
            .iter()
            .zip(read_sps)
            .map(|(r, sp)| {
                let op = match r {
                    ReadOp::Exists(_) => OpCode::Exists,
                    ReadOp::GetData(_) => OpCode::GetData,
                    ReadOp::GetChildren(_) => OpCode::GetChildren2,
                };
                inner.submit(
                    op,
                    Some(&PathWatchRequest { path: sp, watch: false }),
                    None,
                    false,
                    None,
                    bound,
                )
            })
            .collect();
        Ok((sync, sent))
    }
}

/// The answers of a detached synced read, as they come.
struct Collect {
    /// Replies still to come (the sync's included).
    left: usize,
    answers: Vec<Option<ReadResult>>,
    failure: Option<Error>,
    on_reply: Option<OnReads>,
}

impl Collect {
    /// One reply came: the read `i`'s (`None`: the sync's), with its answer
    /// (`None`: the sync succeeded). The last one calls back.
    fn answered(this: &Mutex<Collect>, i: Option<usize>, answer: Option<Result<ReadResult>>) {
        let done = {
            let mut c = this.lock();
            match (i, answer) {
                (_, Some(Err(e))) => {
                    c.failure.get_or_insert(e);
                }
                (Some(i), Some(Ok(a))) => c.answers[i] = Some(a),
                _ => {}
            }
            c.left -= 1;
            if c.left > 0 {
                return;
            }
            let result = match c.failure.take() {
                Some(e) => Err(e),
                None => Ok(c
                    .answers
                    .iter_mut()
                    .map(|a| a.take().expect("every read answered"))
                    .collect()),
            };
            c.on_reply.take().map(|f| (f, result))
        };
        if let Some((f, result)) = done {
            f(result);
        }
    }
}

/// The sync's own answer.
fn sync_answer(reply: &Reply, path: &str) -> Result<()> {
    match reply.header.err {
        0 => Ok(()),
        err => Err(Error::from_raw(err, path)),
    }
}

/// One read's answer.
fn decode_read(r: &ReadOp, reply: &Reply) -> Result<ReadResult> {
    let err = reply.header.err;
    if err == ErrorCode::NoNode.code() {
        return Ok(match r {
            ReadOp::Exists(_) => ReadResult::Exists(None),
            ReadOp::GetData(_) => ReadResult::Data(None),
            ReadOp::GetChildren(_) => ReadResult::Children(None),
        });
    }
    if err != 0 {
        let e = Error::from_raw(err, r.path());
        // A connection error answered in a header is the call's failure,
        // not the node's.
        if e.may_have_applied() || e.is_retryable() {
            return Err(e);
        }
        return Ok(ReadResult::Error(e));
    }
    let garbage = |e: zk_proto::jute::DecodeError| {
        // As a garbage reply to any call: nothing can be learnt from it.
        log::warn!("garbage reply to a read of {}: {e}", r.path());
        Error::ConnectionLoss
    };
    let mut body = reply.body();
    Ok(match r {
        ReadOp::Exists(_) => ReadResult::Exists(Some(Stat::decode(&mut body).map_err(garbage)?)),
        ReadOp::GetData(_) => {
            let d = GetDataResponse::decode(&mut body).map_err(garbage)?;
            ReadResult::Data(Some((d.data, d.stat)))
        }
        ReadOp::GetChildren(_) => {
            let c = GetChildren2Response::decode(&mut body).map_err(garbage)?;
            ReadResult::Children(Some((c.children, c.stat)))
        }
    })
}
