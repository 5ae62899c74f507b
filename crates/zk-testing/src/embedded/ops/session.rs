//! The handshake (ConnectRequest: a new session or a reattach) and closeSession.

use std::time::Instant;

use zk_proto::frame::frame;
use zk_proto::jute::Reader;
use zk_proto::{ConnectRequest, ConnectResponse, Decode, Encode, OpCode};

use super::Outcome;
use crate::embedded::conn::ConnId;
use crate::embedded::state::State;

impl State {
    /// Sends a ConnectResponse; `read_only` is echoed only when the request had it.
    fn send_connect_response(
        &mut self,
        cid: ConnId,
        timeout: i32,
        session_id: i64,
        passwd: Vec<u8>,
        read_only: Option<bool>,
    ) {
        let resp = ConnectResponse {
            protocol_version: 0,
            timeout,
            session_id,
            passwd,
            read_only,
        };
        self.send(cid, &frame(|o| resp.encode(o)));
    }

    /// Handles the ConnectRequest; returns whether the connection is now established.
    pub fn handle_connect(&mut self, cid: ConnId, f: &[u8], now: Instant) -> bool {
        self.stats.received += 1;
        if let Some(e) = self.conns.get_mut(&cid) {
            e.recved += 1;
        }
        *self.stats.requests.entry(OpCode::CreateSession).or_default() += 1;
        let req = match ConnectRequest::decode(&mut Reader::new(f)) {
            Ok(r) => r,
            Err(e) => {
                log::debug!("embedded zk: conn {cid}: bad ConnectRequest ({e}); closing");
                self.close_conn(cid);
                return false;
            }
        };
        if req.last_zxid_seen > self.zxid {
            log::debug!(
                "embedded zk: conn {cid}: client has seen zxid 0x{:x} > ours 0x{:x}; closing",
                req.last_zxid_seen,
                self.zxid
            );
            self.close_conn(cid);
            return false;
        }
        let min = self.cfg.min_session_timeout.as_millis().min(i32::MAX as u128) as i32;
        let max = self.cfg.max_session_timeout.as_millis().min(i32::MAX as u128) as i32;
        let t = req.timeout.min(max).max(min);
        let read_only = req.read_only.map(|_| false);
        if req.session_id == 0 {
            self.zxid += 1;
            let deadline = self.clock.deadline(now, t);
            let (sid, passwd) = self.sessions.open(t, deadline, cid);
            if let Some(e) = self.conns.get_mut(&cid) {
                e.session = Some(sid);
            }
            log::debug!("embedded zk: conn {cid}: new session 0x{sid:x} timeout {t}");
            self.send_connect_response(cid, t, sid, passwd, read_only);
            return true;
        }
        let sid = req.session_id;
        for c in self.session_conns(sid) {
            if c != cid {
                log::debug!("embedded zk: closing conn {c}: session 0x{sid:x} reattached on conn {cid}");
                self.close_conn(c);
            }
        }
        let deadline = self.clock.deadline(now, t);
        match self.sessions.get_mut(&sid) {
            Some(s) if s.passwd == req.passwd => {
                s.timeout = t;
                s.deadline = deadline;
                s.conn = Some(cid);
                let passwd = s.passwd.clone();
                if let Some(e) = self.conns.get_mut(&cid) {
                    e.session = Some(sid);
                }
                log::debug!("embedded zk: conn {cid}: reattached session 0x{sid:x} timeout {t}");
                self.send_connect_response(cid, t, sid, passwd, read_only);
                true
            }
            _ => {
                log::debug!("embedded zk: conn {cid}: session 0x{sid:x} expired or wrong password");
                self.send_connect_response(cid, 0, 0, vec![0; 16], read_only);
                self.close_conn(cid);
                false
            }
        }
    }

    pub(super) fn op_close_session(&mut self, sid: i64) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        self.kill_session(sid, zxid);
        log::debug!("embedded zk: session 0x{sid:x} closed by the client");
        Outcome::ok(zxid, Vec::new()).closing()
    }
}
