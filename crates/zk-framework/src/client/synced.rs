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

use super::handle::Client;
use super::inner::Submitted;
use super::types::{ReadOp, ReadResult};
use crate::error::{Error, Result};
use crate::proto::jute::Decode;
use crate::proto::{ErrorCode, GetChildren2Response, GetDataResponse, OpCode, PathRecord, PathWatchRequest, Stat};

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
        let gen = sync.gen();
        let sent: Vec<Result<Submitted>> = reads
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
        // Every request is waited for, so that nothing is left in flight.
        let synced = inner
            .await_reply(sync)
            .and_then(|reply| self.finish(reply, sync_path, |_| Ok(())));
        let mut answers = Vec::with_capacity(reads.len());
        let mut failure = synced.err();
        for (r, s) in reads.iter().zip(sent) {
            let answer = s.and_then(|s| {
                if s.gen() != gen {
                    failure.get_or_insert(Error::ConnectionLoss);
                }
                inner.await_reply(s)
            });
            match answer {
                Ok(reply) => answers.push(self.decode_read(r, reply)?),
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

    fn decode_read(&self, r: &ReadOp, reply: super::inner::Reply) -> Result<ReadResult> {
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
        Ok(match r {
            ReadOp::Exists(p) => ReadResult::Exists(Some(self.finish(reply, p, Stat::decode)?)),
            ReadOp::GetData(p) => {
                let d = self.finish(reply, p, GetDataResponse::decode)?;
                ReadResult::Data(Some((d.data, d.stat)))
            }
            ReadOp::GetChildren(p) => {
                let c = self.finish(reply, p, GetChildren2Response::decode)?;
                ReadResult::Children(Some((c.children, c.stat)))
            }
        })
    }
}
