//! The server state behind the one global lock: data tree, sessions, connections, watch
//! tables, zxid and counters, and the handling of every request.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_proto::frame::frame;
use zk_proto::jute::{JuteWrite, Reader};
use zk_proto::{
    add_watch_mode, perms, watcher_type, Acl, AuthPacket, CheckVersionRequest, ClientInfo, ConnectRequest,
    ConnectResponse, Create2Response, Decode, DecodeError, DeleteRequest, Encode, ErrorCode, EventType,
    GetAllChildrenNumberResponse, GetEphemeralsResponse, Id, KeeperState, MultiHeader, OpCode, PathRecord,
    PathWatchRequest, ReplyHeader, RequestHeader, SetWatches, SetWatches2, Stat, WatchTypeRequest, WatcherEvent,
    WhoAmIResponse,
};

use super::conn::ConnShared;
use super::tree::{check_acl, CreateArgs, CreateTxn, Ctx, DataTree, Trigger, Undo};
use super::util;
use super::watch::{ConnId, Mode, Watches};
use super::ServerConfig;

/// Wall clock in ms since the epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A live session.
#[derive(Debug)]
pub(crate) struct Session {
    pub passwd: Vec<u8>,
    /// Negotiated timeout, ms.
    pub timeout: i32,
    /// Expiry deadline, rounded up to a tick boundary.
    pub deadline: Instant,
    /// The connection currently bound to the session.
    pub conn: Option<ConnId>,
}

/// Latency statistics in ms.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Latency {
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    pub count: u64,
    pub last: u64,
}

impl Latency {
    fn record(&mut self, ms: u64) {
        if self.count == 0 || ms < self.min {
            self.min = ms;
        }
        self.max = self.max.max(ms);
        self.sum += ms;
        self.count += 1;
        self.last = ms;
    }

    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

/// A registered TCP connection.
#[derive(Debug)]
pub(crate) struct ConnEntry {
    pub shared: Arc<ConnShared>,
    pub peer: SocketAddr,
    pub session: Option<i64>,
    pub ids: Vec<Id>,
    pub recved: u64,
    pub sent: u64,
    pub established: i64,
    pub last_op: &'static str,
    pub lcxid: i32,
    pub lzxid: i64,
    pub lresp: i64,
    pub lat: Latency,
}

impl ConnEntry {
    pub fn new(shared: Arc<ConnShared>, peer: SocketAddr) -> ConnEntry {
        ConnEntry {
            shared,
            peer,
            session: None,
            ids: vec![Id {
                scheme: "ip".into(),
                id: peer.ip().to_string(),
            }],
            recved: 0,
            sent: 0,
            established: now_ms(),
            last_op: "NA",
            lcxid: 0,
            lzxid: 0,
            lresp: 0,
            lat: Latency::default(),
        }
    }
}

/// Counters for `stats()` and the four-letter words.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub requests: HashMap<OpCode, u64>,
    pub notifications: u64,
    pub received: u64,
    pub sent: u64,
    pub accepted: u64,
    pub lat: Latency,
}

/// The result of one request.
struct Outcome {
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

/// One op of a multi or multiRead, with null data kept.
enum MOp {
    Create(CreateArgs),
    Delete(DeleteRequest),
    SetData(String, Option<Vec<u8>>, i32),
    Check(CheckVersionRequest),
    GetData(PathWatchRequest),
    GetChildren(PathWatchRequest),
}

/// One result of a multi or multiRead.
enum MRes {
    Create(String),
    Create2(String, Stat),
    Delete,
    SetData(Stat),
    Check,
    GetData(Option<Vec<u8>>, Stat),
    GetChildren(Vec<String>),
    Error(i32),
}

fn encode_mres(results: &[MRes]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    for r in results {
        let (t, err) = match r {
            MRes::Create(_) => (OpCode::Create.code(), 0),
            MRes::Create2(..) => (OpCode::Create2.code(), 0),
            MRes::Delete => (OpCode::Delete.code(), 0),
            MRes::SetData(_) => (OpCode::SetData.code(), 0),
            MRes::Check => (OpCode::Check.code(), 0),
            MRes::GetData(..) => (OpCode::GetData.code(), 0),
            MRes::GetChildren(_) => (OpCode::GetChildren.code(), 0),
            MRes::Error(e) => (-1, *e),
        };
        MultiHeader {
            op_type: t,
            done: false,
            err,
        }
        .encode(&mut out);
        match r {
            MRes::Create(p) => p.encode(&mut out),
            MRes::Create2(p, s) => {
                p.encode(&mut out);
                s.encode(&mut out);
            }
            MRes::Delete | MRes::Check => {}
            MRes::SetData(s) => s.encode(&mut out),
            MRes::GetData(d, s) => {
                out.put_buffer(d.as_deref());
                s.encode(&mut out);
            }
            MRes::GetChildren(c) => c.encode(&mut out),
            MRes::Error(e) => e.encode(&mut out),
        }
    }
    MultiHeader {
        op_type: -1,
        done: true,
        err: -1,
    }
    .encode(&mut out);
    out
}

fn decode_create(r: &mut Reader<'_>, with_ttl: bool, txn: CreateTxn) -> Result<CreateArgs, DecodeError> {
    let path = String::decode(r)?;
    let data = r.read_buffer()?;
    let acl = Vec::<Acl>::decode(r)?;
    let flags = r.read_i32()?;
    let ttl = if with_ttl { r.read_i64()? } else { -1 };
    Ok(CreateArgs {
        path,
        data,
        acl,
        flags,
        ttl,
        txn,
    })
}

fn decode_set_data(r: &mut Reader<'_>) -> Result<(String, Option<Vec<u8>>, i32), DecodeError> {
    Ok((String::decode(r)?, r.read_buffer()?, r.read_i32()?))
}

/// A request whose path may be null: `(path, rest decoded by f)`. setData, setACL and
/// check validate the path first, so a null path is BadArguments there, not
/// MarshallingError.
fn decode_nullable<T>(
    r: &mut Reader<'_>,
    f: impl FnOnce(&mut Reader<'_>) -> Result<T, DecodeError>,
) -> Result<(Option<String>, T), DecodeError> {
    let path = r.read_ustring()?;
    Ok((path, f(r)?))
}

fn decode_multi(r: &mut Reader<'_>) -> Result<Vec<MOp>, DecodeError> {
    let mut ops = Vec::new();
    loop {
        let h = MultiHeader::decode(r)?;
        if h.done {
            return Ok(ops);
        }
        let op = match OpCode::from_code(h.op_type) {
            Some(OpCode::Create | OpCode::Create2 | OpCode::CreateContainer) => {
                MOp::Create(decode_create(r, false, CreateTxn::ByFlags)?)
            }
            Some(OpCode::CreateTtl) => MOp::Create(decode_create(r, true, CreateTxn::ByFlags)?),
            Some(OpCode::Delete) => MOp::Delete(DeleteRequest::decode(r)?),
            Some(OpCode::SetData) => {
                let (p, d, v) = decode_set_data(r)?;
                MOp::SetData(p, d, v)
            }
            Some(OpCode::Check) => MOp::Check(CheckVersionRequest::decode(r)?),
            Some(OpCode::GetData) => MOp::GetData(PathWatchRequest::decode(r)?),
            Some(OpCode::GetChildren) => MOp::GetChildren(PathWatchRequest::decode(r)?),
            _ => return Err(DecodeError::InvalidValue("multi op type")),
        };
        ops.push(op);
    }
}

fn encode_stat_body(s: &Stat) -> Vec<u8> {
    s.to_bytes()
}

/// The whole mutable server state, guarded by one mutex.
#[derive(Debug)]
pub(crate) struct State {
    pub cfg: ServerConfig,
    pub base: Instant,
    pub port: u16,
    pub started_ms: i64,
    pub tree: DataTree,
    pub zxid: i64,
    pub sessions: HashMap<i64, Session>,
    pub conns: HashMap<ConnId, ConnEntry>,
    pub watches: Watches,
    next_session: i64,
    pub next_conn: ConnId,
    pub paused: bool,
    pub pause_until: Option<Instant>,
    pub listening: bool,
    pub shutdown: bool,
    pub drop_next: Vec<OpCode>,
    pub stats: Counters,
}

impl State {
    pub fn new(cfg: ServerConfig, port: u16) -> State {
        let started_ms = now_ms();
        State {
            cfg,
            base: Instant::now(),
            port,
            started_ms,
            tree: DataTree::new(),
            zxid: 0,
            sessions: HashMap::new(),
            conns: HashMap::new(),
            watches: Watches::default(),
            // Like the real server: serverId 1 in the top byte, then the clock.
            next_session: ((1u64 << 56) | (((started_ms as u64) << 24) >> 8)) as i64,
            next_conn: 1,
            paused: false,
            pause_until: None,
            listening: true,
            shutdown: false,
            drop_next: Vec::new(),
            stats: Counters::default(),
        }
    }

    fn tick(&self) -> Duration {
        self.cfg.tick.max(Duration::from_millis(1))
    }

    /// Rounds `t` up to the next tick boundary (expiry buckets).
    pub fn round_up(&self, t: Instant) -> Instant {
        let tick = self.tick().as_nanos();
        let off = t.saturating_duration_since(self.base).as_nanos();
        let k = off.div_ceil(tick);
        self.base + Duration::from_nanos((k * tick) as u64)
    }

    /// The first tick boundary strictly after `now`.
    pub fn next_boundary(&self, now: Instant) -> Instant {
        let tick = self.tick().as_nanos();
        let off = now.saturating_duration_since(self.base).as_nanos();
        self.base + Duration::from_nanos(((off / tick + 1) * tick) as u64)
    }

    fn deadline(&self, now: Instant, timeout_ms: i32) -> Instant {
        self.round_up(now + Duration::from_millis(timeout_ms.max(0) as u64))
    }

    /// Gives every session a fresh timeout (after a restart).
    pub fn reset_deadlines(&mut self, now: Instant) {
        let ids: Vec<(i64, i32)> = self.sessions.iter().map(|(id, s)| (*id, s.timeout)).collect();
        for (id, t) in ids {
            let d = self.deadline(now, t);
            if let Some(s) = self.sessions.get_mut(&id) {
                s.deadline = d;
            }
        }
    }

    /// Queues a frame on a connection and counts it.
    fn send(&mut self, cid: ConnId, bytes: &[u8]) -> bool {
        match self.conns.get_mut(&cid) {
            Some(e) if e.shared.send(bytes) => {
                e.sent += 1;
                self.stats.sent += 1;
                true
            }
            _ => false,
        }
    }

    /// Gracefully closes a connection: no more processing, its watches are forgotten,
    /// its session (if any) becomes disconnected.
    pub fn close_conn(&mut self, cid: ConnId) {
        if let Some(e) = self.conns.get(&cid) {
            e.shared.close();
            if let Some(sid) = e.session {
                if let Some(s) = self.sessions.get_mut(&sid) {
                    if s.conn == Some(cid) {
                        s.conn = None;
                    }
                }
            }
        }
        self.watches.remove_conn(cid);
    }

    /// Unregisters a finished connection.
    pub fn remove_conn(&mut self, cid: ConnId) {
        self.close_conn(cid);
        self.conns.remove(&cid);
    }

    /// Connections bound to a session.
    pub fn session_conns(&self, sid: i64) -> Vec<ConnId> {
        let mut v: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, e)| e.session == Some(sid) && !e.shared.is_closing())
            .map(|(c, _)| *c)
            .collect();
        v.sort_unstable();
        v
    }

    /// Sends one event to a set of connections.
    fn notify(&mut self, path: &str, ty: EventType, targets: &BTreeSet<ConnId>) {
        if targets.is_empty() {
            return;
        }
        let f = frame(|out| {
            ReplyHeader {
                xid: -1,
                zxid: -1,
                err: 0,
            }
            .encode(out);
            WatcherEvent {
                event_type: ty.code(),
                state: KeeperState::SyncConnected.code(),
                path: path.to_string(),
            }
            .encode(out);
        });
        for &c in targets {
            if self.send(c, &f) {
                self.stats.notifications += 1;
                log::debug!("embedded zk: event {ty:?} {path} -> conn {c}");
            }
        }
    }

    /// Fires the watches of a transaction, in order.
    fn fire(&mut self, trig: Vec<Trigger>) {
        let none = BTreeSet::new();
        for t in trig {
            match t {
                Trigger::Created(p) => {
                    let ts = self.watches.data.trigger(&p, EventType::NodeCreated, &none);
                    self.notify(&p, EventType::NodeCreated, &ts);
                }
                Trigger::DataChanged(p) => {
                    let ts = self.watches.data.trigger(&p, EventType::NodeDataChanged, &none);
                    self.notify(&p, EventType::NodeDataChanged, &ts);
                }
                Trigger::ChildrenChanged(p) => {
                    let ts = self.watches.child.trigger(&p, EventType::NodeChildrenChanged, &none);
                    self.notify(&p, EventType::NodeChildrenChanged, &ts);
                }
                Trigger::Deleted(p) => {
                    let mut ts = self.watches.data.trigger(&p, EventType::NodeDeleted, &none);
                    let more = self.watches.child.trigger(&p, EventType::NodeDeleted, &ts);
                    ts.extend(more);
                    self.notify(&p, EventType::NodeDeleted, &ts);
                }
            }
        }
    }

    /// Expires a session the way the real server does.
    pub fn expire(&mut self, sid: i64) -> bool {
        if !self.sessions.contains_key(&sid) {
            return false;
        }
        for c in self.session_conns(sid) {
            self.close_conn(c);
        }
        self.zxid += 1;
        let mut trig = Vec::new();
        let n = self.tree.kill_session(sid, self.zxid, &mut trig);
        self.fire(trig);
        self.sessions.remove(&sid);
        log::debug!("embedded zk: session 0x{sid:x} expired ({n} ephemerals deleted)");
        true
    }

    /// Expires every session whose deadline has passed.
    pub fn expire_due(&mut self, now: Instant) -> usize {
        let mut due: Vec<i64> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        due.sort_unstable();
        for sid in &due {
            self.expire(*sid);
        }
        due.len()
    }

    /// Deletes empty containers that once had children and expired TTL nodes.
    pub fn sweep(&mut self) -> usize {
        let mut n = 0;
        for p in self.tree.sweep_candidates(now_ms()) {
            let mut trig = Vec::new();
            if self.tree.sweep_delete(&p, self.zxid + 1, &mut trig) {
                self.zxid += 1;
                self.fire(trig);
                n += 1;
                log::debug!("embedded zk: container sweep deleted {p}");
            }
        }
        n
    }

    /// Ends a pause: sessions whose deadline passed meanwhile expire first.
    pub fn resume(&mut self, now: Instant) {
        if self.listening {
            self.expire_due(now);
        }
        self.paused = false;
        self.pause_until = None;
    }

    // ------------------------------------------------------------------ handshake

    /// Sends a ConnectResponse; `read_only` is echoed only when the request had it.
    fn send_connect_response(
        &mut self,
        cid: u64,
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
            self.next_session += 1;
            let mut sid = self.next_session;
            while sid == 0 || sid == i64::MIN || self.sessions.contains_key(&sid) {
                self.next_session += 1;
                sid = self.next_session;
            }
            let passwd = util::java_random_bytes(sid ^ 0xB341_5C00, 16);
            let deadline = self.deadline(now, t);
            self.sessions.insert(
                sid,
                Session {
                    passwd: passwd.clone(),
                    timeout: t,
                    deadline,
                    conn: Some(cid),
                },
            );
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
        let deadline = self.deadline(now, t);
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

    // ------------------------------------------------------------------ requests

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
        let Some(timeout) = self.sessions.get(&sid).map(|s| s.timeout) else {
            return;
        };
        let op = OpCode::from_code(hdr.op);
        if op != Some(OpCode::Auth) {
            let deadline = self.deadline(now, timeout);
            if let Some(s) = self.sessions.get_mut(&sid) {
                s.deadline = deadline;
            }
        }
        if let Some(op) = op {
            *self.stats.requests.entry(op).or_default() += 1;
        }
        log::debug!("embedded zk: conn {cid} session 0x{sid:x} xid {} op {:?}", hdr.xid, op);
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
            Some(OpCode::Sync) => match r.read_ustring() {
                Ok(p) => {
                    let mut b = Vec::new();
                    b.put_buffer(p.as_deref().map(str::as_bytes));
                    Outcome::ok(self.zxid, b)
                }
                Err(_) => Outcome::err(self.zxid, ErrorCode::MarshallingError),
            },
            // No SASL server: the reply carries a null token, the connection stays.
            Some(OpCode::Sasl) => Outcome::ok(0, (-1i32).to_bytes()),
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

    fn ids(&self, cid: ConnId) -> &[Id] {
        self.conns.get(&cid).map_or(&[], |e| e.ids.as_slice())
    }

    fn op_auth(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let ok = match AuthPacket::decode(r) {
            Ok(p) => match p.scheme.as_str() {
                "digest" => {
                    let id = Id {
                        scheme: "digest".into(),
                        id: util::digest_id(&String::from_utf8_lossy(&p.auth)),
                    };
                    if let Some(e) = self.conns.get_mut(&cid) {
                        if !e.ids.contains(&id) {
                            e.ids.push(id);
                        }
                    }
                    true
                }
                "ip" => true,
                _ => false,
            },
            Err(_) => false,
        };
        if ok {
            Outcome::ok(0, Vec::new())
        } else {
            Outcome::err(0, ErrorCode::AuthFailed).closing()
        }
    }

    fn op_create(&mut self, cid: ConnId, sid: i64, op: OpCode, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let txn = match op {
            OpCode::CreateContainer => CreateTxn::Container,
            OpCode::CreateTtl => CreateTxn::Ttl,
            _ => CreateTxn::Plain,
        };
        let args = match decode_create(r, op == OpCode::CreateTtl, txn) {
            Ok(a) => a,
            Err(_) => return Outcome::err(zxid, ErrorCode::MarshallingError),
        };
        let mut trig = Vec::new();
        let res = {
            let ctx = Ctx {
                zxid,
                now: now_ms(),
                session: sid,
                ids: self.conns.get(&cid).map_or(&[], |e| e.ids.as_slice()),
                extended_types: self.cfg.extended_types,
            };
            self.tree.create(&ctx, &args, None, &mut trig)
        };
        match res {
            Ok((path, stat, _)) => {
                self.fire(trig);
                let body = if op == OpCode::Create {
                    PathRecord { path }.to_bytes()
                } else {
                    Create2Response { path, stat }.to_bytes()
                };
                Outcome::ok(zxid, body)
            }
            Err(e) => Outcome::err(zxid, e),
        }
    }

    fn op_delete(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let Ok(req) = DeleteRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let mut trig = Vec::new();
        let res = {
            let ctx = Ctx {
                zxid,
                now: now_ms(),
                session: sid,
                ids: self.conns.get(&cid).map_or(&[], |e| e.ids.as_slice()),
                extended_types: self.cfg.extended_types,
            };
            self.tree.delete(&ctx, &req.path, req.version, None, &mut trig)
        };
        if res.is_ok() {
            self.fire(trig);
        }
        Outcome::result(zxid, res.map(|_| Vec::new()))
    }

    fn op_set_data(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let Ok((path, (data, version))) = decode_nullable(r, |r| Ok((r.read_buffer()?, r.read_i32()?))) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let Some(path) = path else {
            return Outcome::err(zxid, ErrorCode::BadArguments);
        };
        let mut trig = Vec::new();
        let res = {
            let ctx = Ctx {
                zxid,
                now: now_ms(),
                session: sid,
                ids: self.conns.get(&cid).map_or(&[], |e| e.ids.as_slice()),
                extended_types: self.cfg.extended_types,
            };
            self.tree.set_data(&ctx, &path, data, version, None, &mut trig)
        };
        if res.is_ok() {
            self.fire(trig);
        }
        Outcome::result(zxid, res.map(|s| encode_stat_body(&s)))
    }

    fn op_set_acl(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let Ok((path, (acl, version))) = decode_nullable(r, |r| Ok((Vec::<Acl>::decode(r)?, r.read_i32()?))) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let Some(path) = path else {
            return Outcome::err(zxid, ErrorCode::BadArguments);
        };
        let res = {
            let ctx = Ctx {
                zxid,
                now: now_ms(),
                session: sid,
                ids: self.conns.get(&cid).map_or(&[], |e| e.ids.as_slice()),
                extended_types: self.cfg.extended_types,
            };
            self.tree.set_acl(&ctx, &path, &acl, version)
        };
        Outcome::result(zxid, res.map(|s| encode_stat_body(&s)))
    }

    fn op_check(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let Ok((path, version)) = decode_nullable(r, |r| r.read_i32()) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let Some(path) = path else {
            return Outcome::err(zxid, ErrorCode::BadArguments);
        };
        let ctx = Ctx {
            zxid,
            now: now_ms(),
            session: sid,
            ids: self.ids(cid),
            extended_types: self.cfg.extended_types,
        };
        Outcome::result(zxid, self.tree.check(&ctx, &path, version).map(|_| Vec::new()))
    }

    fn op_multi(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let ops = match decode_multi(r) {
            Ok(ops) if !ops.iter().any(|o| matches!(o, MOp::GetData(_) | MOp::GetChildren(_))) => ops,
            _ => return Outcome::err(zxid, ErrorCode::MarshallingError),
        };
        let ids = self.conns.get(&cid).map_or_else(Vec::new, |e| e.ids.clone());
        let ctx = Ctx {
            zxid,
            now: now_ms(),
            session: sid,
            ids: &ids,
            extended_types: self.cfg.extended_types,
        };
        let mut undo: Vec<Undo> = Vec::new();
        let mut trig = Vec::new();
        let mut results = Vec::with_capacity(ops.len());
        let mut failed = None;
        for (i, op) in ops.iter().enumerate() {
            let res = match op {
                MOp::Create(args) => self
                    .tree
                    .create(&ctx, args, Some(&mut undo), &mut trig)
                    .map(|(p, s, mode)| {
                        if mode.is_container() || mode.is_ttl() {
                            MRes::Create2(p, s)
                        } else {
                            MRes::Create(p)
                        }
                    }),
                MOp::Delete(d) => self
                    .tree
                    .delete(&ctx, &d.path, d.version, Some(&mut undo), &mut trig)
                    .map(|_| MRes::Delete),
                MOp::SetData(p, d, v) => self
                    .tree
                    .set_data(&ctx, p, d.clone(), *v, Some(&mut undo), &mut trig)
                    .map(MRes::SetData),
                MOp::Check(c) => self.tree.check(&ctx, &c.path, c.version).map(|_| MRes::Check),
                MOp::GetData(_) | MOp::GetChildren(_) => Err(ErrorCode::MarshallingError),
            };
            match res {
                Ok(x) => results.push(x),
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        if let Some((k, e)) = failed {
            self.tree.rollback(undo);
            results = (0..ops.len())
                .map(|j| {
                    MRes::Error(match j.cmp(&k) {
                        std::cmp::Ordering::Less => 0,
                        std::cmp::Ordering::Equal => e.code(),
                        std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency.code(),
                    })
                })
                .collect();
        } else {
            self.fire(trig);
        }
        Outcome::ok(zxid, encode_mres(&results))
    }

    fn op_multi_read(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let ops = match decode_multi(r) {
            Ok(ops) if ops.iter().all(|o| matches!(o, MOp::GetData(_) | MOp::GetChildren(_))) => ops,
            _ => {
                let mut out = Outcome::err(zxid, ErrorCode::MarshallingError);
                out.body = encode_mres(&[]);
                out.body_on_error = true;
                return out;
            }
        };
        let ids = self.ids(cid);
        let results: Vec<MRes> = ops
            .iter()
            .map(|op| {
                let (MOp::GetData(req) | MOp::GetChildren(req)) = op else {
                    return MRes::Error(ErrorCode::MarshallingError.code());
                };
                match self.tree.get(&req.path) {
                    None => MRes::Error(ErrorCode::NoNode.code()),
                    Some(n) if !check_acl(&n.acl, perms::READ, ids) => MRes::Error(ErrorCode::NoAuth.code()),
                    Some(n) => match op {
                        MOp::GetData(_) => MRes::GetData(n.data.clone(), n.stat()),
                        _ => MRes::GetChildren(n.children.iter().cloned().collect()),
                    },
                }
            })
            .collect();
        Outcome::ok(zxid, encode_mres(&results))
    }

    fn op_exists(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathWatchRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        if req.path.contains('\0') {
            return Outcome::err(zxid, ErrorCode::BadArguments);
        }
        if req.watch {
            self.watches.data.add(&req.path, cid, Mode::Standard);
        }
        match self.tree.get(&req.path) {
            Some(n) => Outcome::ok(zxid, encode_stat_body(&n.stat())),
            None => Outcome::err(zxid, ErrorCode::NoNode),
        }
    }

    fn op_get_data(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathWatchRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let ids = self.conns.get(&cid).map_or(&[][..], |e| e.ids.as_slice());
        let body = match self.tree.get(&req.path) {
            None => return Outcome::err(zxid, ErrorCode::NoNode),
            Some(n) if !check_acl(&n.acl, perms::READ, ids) => return Outcome::err(zxid, ErrorCode::NoAuth),
            Some(n) => {
                let mut b = Vec::with_capacity(n.data_bytes().len() + 72);
                b.put_buffer(n.data.as_deref());
                n.stat().encode(&mut b);
                b
            }
        };
        if req.watch {
            self.watches.data.add(&req.path, cid, Mode::Standard);
        }
        Outcome::ok(zxid, body)
    }

    fn op_get_children(&mut self, cid: ConnId, op: OpCode, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathWatchRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let ids = self.conns.get(&cid).map_or(&[][..], |e| e.ids.as_slice());
        let body = match self.tree.get(&req.path) {
            None => return Outcome::err(zxid, ErrorCode::NoNode),
            Some(n) if !check_acl(&n.acl, perms::READ, ids) => return Outcome::err(zxid, ErrorCode::NoAuth),
            Some(n) => {
                let mut b = Vec::with_capacity(16 + n.children.len() * 24);
                b.put_i32(n.children.len() as i32);
                for c in &n.children {
                    c.encode(&mut b);
                }
                if op == OpCode::GetChildren2 {
                    n.stat().encode(&mut b);
                }
                b
            }
        };
        if req.watch {
            self.watches.child.add(&req.path, cid, Mode::Standard);
        }
        Outcome::ok(zxid, body)
    }

    fn op_get_acl(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathRecord::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let ids = self.ids(cid);
        let Some(n) = self.tree.get(&req.path) else {
            return Outcome::err(zxid, ErrorCode::NoNode);
        };
        if !check_acl(&n.acl, perms::READ | perms::ADMIN, ids) {
            return Outcome::err(zxid, ErrorCode::NoAuth);
        }
        let admin = check_acl(&n.acl, perms::ADMIN, ids);
        let acl: Vec<Acl> = n
            .acl
            .iter()
            .map(|a| {
                if !admin && a.id.scheme == "digest" {
                    let user = a.id.id.split(':').next().unwrap_or("");
                    Acl {
                        perms: a.perms,
                        id: Id {
                            scheme: a.id.scheme.clone(),
                            id: format!("{user}:x"),
                        },
                    }
                } else {
                    a.clone()
                }
            })
            .collect();
        let mut b = acl.to_bytes();
        n.stat().encode(&mut b);
        Outcome::ok(zxid, b)
    }

    fn op_set_watches(&mut self, cid: ConnId, r: &mut Reader<'_>, v2: bool) -> Outcome {
        let zxid = self.zxid;
        let sw = if v2 {
            SetWatches2::decode(r)
        } else {
            SetWatches::decode(r).map(|s| SetWatches2 {
                relative_zxid: s.relative_zxid,
                data_watches: s.data_watches,
                exist_watches: s.exist_watches,
                child_watches: s.child_watches,
                persistent_watches: Vec::new(),
                persistent_recursive_watches: Vec::new(),
            })
        };
        let Ok(sw) = sw else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let rel = sw.relative_zxid;
        let me = BTreeSet::from([cid]);
        for p in &sw.data_watches {
            match self.tree.get(p).map(|n| n.mzxid) {
                None => self.notify(p, EventType::NodeDeleted, &me),
                Some(m) if m > rel => self.notify(p, EventType::NodeDataChanged, &me),
                Some(_) => self.watches.data.add(p, cid, Mode::Standard),
            }
        }
        for p in &sw.exist_watches {
            if self.tree.get(p).is_some() {
                self.notify(p, EventType::NodeCreated, &me);
            } else {
                self.watches.data.add(p, cid, Mode::Standard);
            }
        }
        for p in &sw.child_watches {
            match self.tree.get(p).map(|n| n.pzxid) {
                None => self.notify(p, EventType::NodeDeleted, &me),
                Some(z) if z > rel => self.notify(p, EventType::NodeChildrenChanged, &me),
                Some(_) => self.watches.child.add(p, cid, Mode::Standard),
            }
        }
        for (paths, mode) in [
            (&sw.persistent_watches, Mode::Persistent),
            (&sw.persistent_recursive_watches, Mode::Recursive),
        ] {
            for p in paths {
                self.watches.data.add(p, cid, mode);
                self.watches.child.add(p, cid, mode);
            }
        }
        Outcome::ok(zxid, Vec::new())
    }

    fn op_watch_type(&mut self, cid: ConnId, r: &mut Reader<'_>, remove: bool) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = WatchTypeRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let (data, child) = match req.watcher_type {
            watcher_type::CHILDREN => (false, true),
            watcher_type::DATA => (true, false),
            watcher_type::ANY => (true, true),
            _ => return Outcome::err(zxid, ErrorCode::MarshallingError),
        };
        let found = if remove {
            let d = data && self.watches.data.remove(&req.path, cid);
            let c = child && self.watches.child.remove(&req.path, cid);
            d || c
        } else {
            (data && self.watches.data.contains(&req.path, cid))
                || (child && self.watches.child.contains(&req.path, cid))
        };
        if found {
            Outcome::ok(zxid, Vec::new())
        } else {
            Outcome::err(zxid, ErrorCode::NoWatcher)
        }
    }

    fn op_add_watch(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok((path, mode)) = decode_nullable(r, |r| r.read_i32()) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let mode = match mode {
            add_watch_mode::PERSISTENT => Mode::Persistent,
            add_watch_mode::PERSISTENT_RECURSIVE => Mode::Recursive,
            _ => return Outcome::err(zxid, ErrorCode::MarshallingError),
        };
        if let Some(path) = path {
            self.watches.data.add(&path, cid, mode);
            self.watches.child.add(&path, cid, mode);
        }
        Outcome::ok(zxid, 0i32.to_bytes())
    }

    fn op_get_ephemerals(&mut self, sid: i64, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(prefix) = r.read_ustring() else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let all = matches!(prefix.as_deref().map(str::trim), None | Some("" | "/"));
        let prefix = prefix.unwrap_or_default();
        let ephemerals: Vec<String> = self
            .tree
            .ephemerals
            .get(&sid)
            .map(|set| set.iter().filter(|p| all || p.starts_with(&prefix)).cloned().collect())
            .unwrap_or_default();
        Outcome::ok(zxid, GetEphemeralsResponse { ephemerals }.to_bytes())
    }

    fn op_all_children(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathRecord::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let ids = self.ids(cid);
        match self.tree.get(&req.path) {
            None => Outcome::err(zxid, ErrorCode::NoNode),
            Some(n) if !check_acl(&n.acl, perms::READ, ids) => Outcome::err(zxid, ErrorCode::NoAuth),
            Some(_) => {
                let total_number = self.tree.descendants(&req.path) as i32;
                Outcome::ok(zxid, GetAllChildrenNumberResponse { total_number }.to_bytes())
            }
        }
    }

    fn op_who_am_i(&mut self, cid: ConnId) -> Outcome {
        let client_info = self
            .ids(cid)
            .iter()
            .map(|id| ClientInfo {
                auth_scheme: id.scheme.clone(),
                user: if id.scheme == "digest" {
                    id.id.split(':').next().unwrap_or("").to_string()
                } else {
                    id.id.clone()
                },
            })
            .collect();
        Outcome::ok(self.zxid, WhoAmIResponse { client_info }.to_bytes())
    }

    fn op_close_session(&mut self, sid: i64) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let mut trig = Vec::new();
        self.tree.kill_session(sid, zxid, &mut trig);
        self.fire(trig);
        self.sessions.remove(&sid);
        log::debug!("embedded zk: session 0x{sid:x} closed by the client");
        Outcome::ok(zxid, Vec::new()).closing()
    }
}
