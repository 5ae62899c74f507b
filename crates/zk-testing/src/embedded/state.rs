//! The server state behind the one global lock: data tree, sessions, connections,
//! watch tables, zxid and counters, and what several ops share on them: sending a
//! frame, firing a transaction's watches, closing a connection, expiring a session,
//! the container sweep. The op handlers are in `ops`.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use zk_proto::config::{ClientAddress, EnsembleConfig, Member, QuorumAddress, Role};
use zk_proto::frame::frame;
use zk_proto::{Encode, EventType, Id, KeeperState, OpCode, ReplyHeader, WatcherEvent};

use super::clock::{now_ms, Clock};
use super::config::ServerConfig;
use super::conn::{ConnEntry, ConnId};
use super::sessions::Sessions;
use super::stats::Counters;
use super::tree::{DataTree, Trigger};
use super::watch::Watches;

/// The whole mutable server state, guarded by one mutex.
#[derive(Debug)]
pub(crate) struct State {
    pub cfg: ServerConfig,
    pub clock: Clock,
    pub port: u16,
    pub started_ms: i64,
    pub tree: DataTree,
    pub zxid: i64,
    pub sessions: Sessions,
    pub conns: HashMap<ConnId, ConnEntry>,
    pub watches: Watches,
    pub next_conn: ConnId,
    pub paused: bool,
    pub pause_until: Option<Instant>,
    pub listening: bool,
    pub shutdown: bool,
    pub drop_next: Vec<OpCode>,
    pub stats: Counters,
}

/// The data of `/zookeeper/config` of a one-node 3.8 ensemble
/// (`standaloneEnabled=false`) whose client port is `port`:
/// `server.1=127.0.0.1:<q>:<e>:participant;127.0.0.1:<port>` and
/// `version=0`, where `<q>` and `<e>` are ports free when the server starts
/// (nothing listens on them).
fn config_node_data(port: u16) -> Vec<u8> {
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
    };
    let (quorum_port, election_port) = match (free(), free()) {
        (Ok(q), Ok(e)) if q != e && q != port && e != port => (q, e),
        _ => (port.wrapping_add(1).max(1), port.wrapping_add(2).max(2)),
    };
    let member = Member {
        id: 1,
        addresses: vec![QuorumAddress {
            host: "127.0.0.1".into(),
            quorum_port,
            election_port,
        }],
        role: Role::Participant,
        client: Some(ClientAddress {
            host: "127.0.0.1".into(),
            port,
        }),
    };
    match EnsembleConfig::new(vec![member], 0) {
        Ok(c) => c.to_string().into_bytes(),
        Err(_) => Vec::new(), // one member: never a duplicate id
    }
}

impl State {
    pub fn new(cfg: ServerConfig, port: u16) -> State {
        let started_ms = now_ms();
        let mut tree = DataTree::new();
        tree.set_config_node(config_node_data(port), started_ms);
        State {
            clock: Clock::new(cfg.tick),
            cfg,
            port,
            started_ms,
            tree,
            zxid: 0,
            sessions: Sessions::new(started_ms),
            conns: HashMap::new(),
            watches: Watches::default(),
            next_conn: 1,
            paused: false,
            pause_until: None,
            listening: true,
            shutdown: false,
            drop_next: Vec::new(),
            stats: Counters::default(),
        }
    }

    /// Gives every session a fresh timeout (after a restart).
    pub fn reset_deadlines(&mut self, now: Instant) {
        self.sessions.reset_deadlines(&self.clock, now);
    }

    /// The identities of a connection (its `ip` id and any `digest` ids it added).
    pub fn ids(&self, cid: ConnId) -> &[Id] {
        self.conns.get(&cid).map_or(&[], |e| e.ids.as_slice())
    }

    /// Queues a frame on a connection and counts it.
    pub fn send(&mut self, cid: ConnId, bytes: &[u8]) -> bool {
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
    pub fn notify(&mut self, path: &str, ty: EventType, targets: &BTreeSet<ConnId>) {
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
    pub fn fire(&mut self, trig: Vec<Trigger>) {
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

    /// Ends a session in one transaction: its ephemerals are deleted (watch events go
    /// out) and it is forgotten. Returns the number of ephemerals deleted. The caller
    /// has taken the zxid.
    pub fn kill_session(&mut self, sid: i64, zxid: i64) -> usize {
        let mut trig = Vec::new();
        let n = self.tree.kill_session(sid, zxid, &mut trig);
        self.fire(trig);
        self.sessions.remove(&sid);
        n
    }

    /// Expires a session the way the real server does.
    pub fn expire(&mut self, sid: i64) -> bool {
        if !self.sessions.contains(&sid) {
            return false;
        }
        for c in self.session_conns(sid) {
            self.close_conn(c);
        }
        self.zxid += 1;
        let n = self.kill_session(sid, self.zxid);
        log::debug!("embedded zk: session 0x{sid:x} expired ({n} ephemerals deleted)");
        true
    }

    /// Expires every session whose deadline has passed.
    pub fn expire_due(&mut self, now: Instant) -> usize {
        let due = self.sessions.due(now);
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
}
