//! The request handlers, one room per kind: [`session`] (handshake, closeSession),
//! [`writes`] (create, delete, setData, setACL, check), [`multi`] (multi, multiRead),
//! [`reads`] (exists, getData, getChildren, getACL, sync, getEphemerals,
//! getAllChildrenNumber), [`watches`] (SetWatches, checkWatches, removeWatches,
//! addWatch) and [`auth`] (addauth, whoAmI). This module holds what they share: the
//! [`Outcome`] of a request, the dispatch on the opcode, the reply, and
//! [`State::transaction`], the one shape of every write.
//!
//! Each handler decodes its request with the records of `zk-proto` (in their nullable
//! form where the server must keep null apart from empty) and is an `impl State`
//! block: ops import `state`, never the other way round.

mod auth;
mod multi;
mod reads;
mod session;
mod watches;
mod writes;

use std::time::Instant;

use zk_proto::frame::frame;
use zk_proto::jute::Reader;
use zk_proto::{Decode, Encode, ErrorCode, OpCode, PathRecordOf, ReplyHeader, RequestHeader, Stat, StatResponse};

use super::clock::now_ms;
use super::conn::ConnId;
use super::state::State;
use super::tree::{Ctx, DataTree, Trigger};

/// The result of one request.
pub(crate) struct Outcome {
    zxid: i64,
    err: i32,
    body: Vec<u8>,
    close: bool,
    /// Send `body` even though `err != 0` (multiRead's MarshallingError does).
    body_on_error: bool,
}

impl Outcome {
    fn ok(zxid: i64, body: Vec<u8>) -> Outcome {
        Outcome {
            zxid,
            err: 0,
            body,
            close: false,
            body_on_error: false,
        }
    }

    fn err(zxid: i64, code: ErrorCode) -> Outcome {
        Outcome {
            zxid,
            err: code.code(),
            body: Vec::new(),
            close: false,
            body_on_error: false,
        }
    }

    fn closing(mut self) -> Outcome {
        self.close = true;
        self
    }

    fn result(zxid: i64, r: Result<Vec<u8>, ErrorCode>) -> Outcome {
        match r {
            Ok(b) => Outcome::ok(zxid, b),
            Err(e) => Outcome::err(zxid, e),
        }
    }
}

/// The body of a reply that is just a Stat (setData, setACL, exists).
fn stat_body(stat: Stat) -> Vec<u8> {
    StatResponse { stat }.to_bytes()
}

impl State {
    /// The shape of every write (create, delete, setData, setACL, check, multi): a
    /// context for transaction `zxid` on behalf of connection `cid` and session `sid`,
    /// `apply` run on the tree, and the transaction's watches fired only if it
    /// succeeded.
    fn transaction<T, E>(
        &mut self,
        cid: ConnId,
        sid: i64,
        zxid: i64,
        apply: impl FnOnce(&mut DataTree, &Ctx<'_>, &mut Vec<Trigger>) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut trig = Vec::new();
        let res = {
            let ctx = Ctx {
                zxid,
                now: now_ms(),
                session: sid,
                ids: self.conns.get(&cid).map_or(&[], |e| e.ids.as_slice()),
                extended_types: self.cfg.extended_types,
                x509: self.cfg.x509_auth,
                sasl: self.cfg.sasl.is_some(),
            };
            apply(&mut self.tree, &ctx, &mut trig)
        };
        if res.is_ok() {
            self.fire(trig);
        }
        res
    }

    /// Handles one request frame of an established connection.
    pub fn handle_request(&mut self, cid: ConnId, f: &[u8], now: Instant) {
        let mut r = Reader::new(f);
        let hdr = match RequestHeader::decode(&mut r) {
            Ok(h) => h,
            Err(_) => {
                log::debug!("embedded zk: conn {cid}: frame too short for a request header; closing");
                self.close_conn(cid);
                return;
            }
        };
        let Some(sid) = self.conns.get(&cid).and_then(|e| e.session) else {
            return;
        };
        self.stats.received += 1;
        if let Some(e) = self.conns.get_mut(&cid) {
            e.recved += 1;
        }
        // A request of a session that is gone is dropped; every request but the
        // out-of-band auth touches the session.
        if !self.sessions.contains(&sid) {
            return;
        }
        let op = OpCode::from_code(hdr.op);
        if op != Some(OpCode::Auth) {
            self.sessions.touch(&self.clock, sid, now);
        }
        if let Some(op) = op {
            *self.stats.requests.entry(op).or_default() += 1;
        }
        log::debug!("embedded zk: conn {cid} session 0x{sid:x} xid {} op {:?}", hdr.xid, op);
        // AuthenticationHelper.enforceAuthentication: with SASL required, any
        // request but SASL and `auth` of a connection that has not
        // authenticated is refused and the connection closed (the session
        // lives).
        if !matches!(op, Some(OpCode::Sasl | OpCode::Auth)) && self.sasl_refuses(cid) {
            log::debug!("embedded zk: conn {cid}: a request before SASL authentication; closing");
            self.finish(
                cid,
                op,
                hdr.xid,
                Outcome::err(0, ErrorCode::SessionClosedRequireSaslAuth).closing(),
                now,
            );
            return;
        }
        let mut xid = hdr.xid;
        let out = match op {
            Some(OpCode::Ping) => {
                xid = -2;
                Outcome::ok(self.zxid, Vec::new())
            }
            Some(OpCode::Auth) => self.op_auth(cid, &mut r),
            Some(op @ (OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl)) => {
                self.op_create(cid, sid, op, &mut r)
            }
            Some(OpCode::Delete) => self.op_delete(cid, sid, &mut r),
            Some(OpCode::SetData) => self.op_set_data(cid, sid, &mut r),
            Some(OpCode::SetAcl) => self.op_set_acl(cid, sid, &mut r),
            Some(OpCode::Check) => self.op_check(cid, sid, &mut r),
            Some(OpCode::Multi) => self.op_multi(cid, sid, &mut r),
            Some(OpCode::MultiRead) => self.op_multi_read(cid, &mut r),
            Some(OpCode::Exists) => self.op_exists(cid, &mut r),
            Some(OpCode::GetData) => self.op_get_data(cid, &mut r),
            Some(op @ (OpCode::GetChildren | OpCode::GetChildren2)) => self.op_get_children(cid, op, &mut r),
            Some(OpCode::GetAcl) => self.op_get_acl(cid, &mut r),
            Some(OpCode::Sync) => match PathRecordOf::<Option<String>>::decode(&mut r) {
                // SyncResponse echoes the path, null included.
                Ok(p) => Outcome::ok(self.zxid, p.to_bytes()),
                Err(_) => Outcome::err(self.zxid, ErrorCode::MarshallingError),
            },
            Some(OpCode::Sasl) => self.op_sasl(cid, &mut r),
            Some(OpCode::SetWatches) => self.op_set_watches(cid, &mut r, false),
            Some(OpCode::SetWatches2) => self.op_set_watches(cid, &mut r, true),
            Some(OpCode::CheckWatches) => self.op_watch_type(cid, &mut r, false),
            Some(OpCode::RemoveWatches) => self.op_watch_type(cid, &mut r, true),
            Some(OpCode::AddWatch) => self.op_add_watch(cid, &mut r),
            Some(OpCode::GetEphemerals) => self.op_get_ephemerals(sid, &mut r),
            Some(OpCode::GetAllChildrenNumber) => self.op_all_children(cid, &mut r),
            Some(OpCode::WhoAmI) => self.op_who_am_i(cid),
            Some(OpCode::CloseSession) => self.op_close_session(sid),
            Some(OpCode::DeleteContainer) => {
                self.zxid += 1;
                Outcome::err(self.zxid, ErrorCode::BadArguments)
            }
            Some(OpCode::Reconfig) => {
                self.zxid += 1;
                Outcome::err(self.zxid, ErrorCode::ReconfigDisabled)
            }
            _ => {
                log::debug!("embedded zk: conn {cid}: unimplemented opcode {}; closing", hdr.op);
                Outcome::err(-1, ErrorCode::Unimplemented).closing()
            }
        };
        self.finish(cid, op, xid, out, now);
    }

    /// Records the latency, then sends the reply (or drops it, as
    /// `drop_next_reply` asked) and closes the connection if the outcome says so.
    fn finish(&mut self, cid: ConnId, op: Option<OpCode>, xid: i32, out: Outcome, t0: Instant) {
        let lat = t0.elapsed().as_millis() as u64;
        self.stats.lat.record(lat);
        let now = now_ms();
        if let Some(e) = self.conns.get_mut(&cid) {
            e.lat.record(lat);
            e.last_op = op.map_or("UNKN", OpCode::short_name);
            e.lcxid = xid;
            e.lzxid = out.zxid;
            e.lresp = now;
        }
        if let Some(op) = op {
            if let Some(i) = self.drop_next.iter().position(|o| *o == op) {
                self.drop_next.remove(i);
                log::debug!("embedded zk: conn {cid}: dropping the reply to xid {xid} ({op:?}) and closing");
                self.close_conn(cid);
                return;
            }
        }
        let f = frame(|o| {
            ReplyHeader {
                xid,
                zxid: out.zxid,
                err: out.err,
            }
            .encode(o);
            if out.err == 0 || out.body_on_error {
                o.extend_from_slice(&out.body);
            }
        });
        self.send(cid, &f);
        if out.close {
            self.close_conn(cid);
        }
    }
}
