//! An embedded, in-process ZooKeeper server that speaks the real wire protocol.
//!
//! Real clients (the Java client and Curator, kazoo, the `zookeeper` Rust crate, and
//! `zk-framework`'s own client) cannot tell it from a standalone Apache ZooKeeper 3.8
//! for what lock recipes do: the handshake, zxid accounting (failed writes use a zxid),
//! Stat fields, sequence numbers, containers and TTL nodes, one-shot and persistent
//! watches with ZooKeeper's ordering guarantee (a transaction's events are queued before
//! its reply), multi, SetWatches, session expiry in tick buckets, and the four-letter
//! words all follow Apache ZooKeeper 3.8's behaviour (the conformance tests run the same
//! cases against both servers).
//!
//! On top of that it offers fault injection for tests: [`EmbeddedServer::expire_session`],
//! [`EmbeddedServer::drop_connections`], [`EmbeddedServer::pause`],
//! [`EmbeddedServer::drop_next_reply`], [`EmbeddedServer::stop`] /
//! [`EmbeddedServer::restart`], and counters ([`EmbeddedServer::stats`],
//! [`EmbeddedServer::dump_tree`]).
//!
//! Where it knowingly differs from a real standalone 3.8.0 server:
//!
//! * `check` (opcode 13) outside a multi answers err 0 on a match (the real server hits
//!   an NPE and never answers).
//! * Nothing is persisted; [`EmbeddedServer::stop`] / [`EmbeddedServer::restart`] keep
//!   the state in memory instead.
//! * Auth: `digest` (ids `digest:user:base64(sha1)`), `ip` (IPv4, with prefix lengths),
//!   a super user ([`ServerConfig::super_digest`]) and, when registered
//!   ([`ServerConfig::x509_auth`]), `x509` ACLs; SASL DIGEST-MD5, `sasl` ACLs and
//!   SASL enforcement ([`ServerConfig::sasl`]); ACL checks, their order and which
//!   ACLs are invalid follow ZooKeeper 3.8 (`tests/it/acl_conformance.rs` of this
//!   crate runs one table on both); no SASL, no `skipACL`.
//! * `/zookeeper/config` holds the configuration of a one-node 3.8 ensemble with
//!   `standaloneEnabled=false` and `reconfigEnabled=false`:
//!   `server.1=127.0.0.1:<q>:<e>:participant;127.0.0.1:<port>` and `version=0` (the
//!   zxid before any transaction; a real ensemble's is its first epoch's, `100000000`),
//!   Stat `version` and `aversion` -1, `mzxid` 0, `mtime` the server's start. The
//!   quorum and election ports `<q>` and `<e>` were free when the server started and
//!   nothing listens on them. `reconfig` is answered `ReconfigDisabled` (-123).
//! * No quotas, no read-only mode, no local sessions.
//! * Children come back sorted rather than in hash order (clients sort anyway).
//! * Session ids start from the wall clock rather than the JVM's monotonic clock; the
//!   password is derived from the id exactly as the real server does.
//! * The `createSession` opcode (-10) sent on an established connection is treated as
//!   unknown (Unimplemented, then close).
//!
//! Note on create modes, as checked against a real 3.8.0: outside a multi the *opcode*
//! picks the kind of node. Opcode 19 always makes a container (the flags still decide the
//! sequence suffix and are validated); opcode 1 or 15 with the container flag (4) is
//! answered normally but stores a plain persistent node that is never reaped. Inside a
//! multi the flags decide (4 → container, 5/6 → TTL).
//!
//! Design: one global mutex guards the data tree, sessions, watch tables and the zxid.
//! Each connection has a reader thread, which applies requests under that lock, and a
//! writer thread that drains the connection's outbound queue in batches. Events and the
//! reply of a transaction are queued under the lock, so every connection sees an event
//! before any later reply.
//!
//! Layering: each module imports only modules listed before it (a DAG, no circle).
//!
//! 1. `config` ([`ServerConfig`]), `clock` (wall clock, tick buckets), `util` (Java
//!    `Random`, SHA-1, base64, `ip` matching), `stats` (counters): import nothing of
//!    the server.
//! 2. `conn`: outbound connection state (the queue a writer thread drains, the
//!    registered connection); imports `clock`, `stats`.
//! 3. `tree` (data tree, check order, undo log; imports `util`), `watch` (watch
//!    tables; imports `conn` for the id), `sessions` (session table, deadlines;
//!    imports `clock`, `conn`, `util`).
//! 4. `state`: everything behind the lock and what ops share on it (send, fire
//!    watches, close connections, expire sessions, sweep); imports 1–3.
//! 5. `ops`: the request handlers in rooms by kind (`session`, `writes`, `multi`,
//!    `reads`, `watches`, `auth`), with one helper for the "context, apply, fire
//!    watches" shape of every write; imports `state` and below.
//! 6. `fourlw`: the four-letter words; imports `state` and below.
//! 7. `server`: the acceptor, connection reader threads and the ticker; imports
//!    `ops` (through `State`'s handlers), `fourlw`, `state`, `conn`.
//! 8. `replay` ([`Replay`]): connections fed in memory, as the reader threads feed
//!    them, for the fuzzer; imports `server`, `state`, `conn`, `config`.
//! 9. this module: [`EmbeddedServer`], the public face; imports `server`, `state`,
//!    `config`.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use zk_testing::embedded::{EmbeddedServer, ServerConfig};
//!
//! let server = EmbeddedServer::start(ServerConfig::default())?;
//! let answer = zk_testing::fourlw::four_letter_word(&server.connect_string(), "ruok", Duration::from_secs(5))?;
//! assert_eq!(answer, "imok");
//! server.close();
//! # Ok::<(), std::io::Error>(())
//! ```

mod clock;
mod config;
mod conn;
mod fourlw;
mod ops;
mod replay;
mod server;
mod sessions;
mod state;
mod stats;
mod tree;
mod util;
mod watch;

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use zk_proto::{OpCode, Stat};

pub use config::{ServerConfig, ServerSasl};
pub use replay::{Fed, Replay};
use server::Shared;
use state::State;

/// A live session, as returned by [`EmbeddedServer::sessions`].
///
/// # Examples
///
/// ```
/// use std::io::{Read, Write};
/// use zk_proto::{frame::frame, ConnectRequest, Encode};
/// use zk_testing::embedded::EmbeddedServer;
///
/// let server = EmbeddedServer::start(Default::default())?;
/// let mut tcp = std::net::TcpStream::connect(server.connect_string())?;
/// let req = ConnectRequest { timeout: 5000, passwd: vec![0; 16], read_only: Some(false), ..Default::default() };
/// tcp.write_all(&frame(|o| req.encode(o)))?;
/// tcp.read_exact(&mut [0u8; 4 + 37])?; // the ConnectResponse
/// let sessions = server.sessions();
/// assert_eq!(sessions.len(), 1);
/// assert_eq!(sessions[0].timeout, std::time::Duration::from_millis(5000));
/// assert!(sessions[0].connected && sessions[0].ephemerals.is_empty());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session id.
    pub id: i64,
    /// The negotiated timeout.
    pub timeout: Duration,
    /// The 16-byte session password.
    pub password: Vec<u8>,
    /// Whether a TCP connection is bound to the session.
    pub connected: bool,
    /// The session's ephemeral nodes, sorted.
    pub ephemerals: Vec<String>,
}

/// Counters, as returned by [`EmbeddedServer::stats`].
///
/// `requests`, `watch_notifications`, `packets_received`, `packets_sent` and
/// `total_connections` count since start or the last [`EmbeddedServer::reset_stats`]; the
/// other fields are current values.
///
/// # Examples
///
/// ```
/// use zk_proto::OpCode;
/// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
/// let stats = server.stats();
/// assert_eq!(stats.requests(OpCode::Create), 0);
/// assert_eq!((stats.connections, stats.watch_notifications), (0, 0));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Requests received per opcode. ConnectRequests count as [`OpCode::CreateSession`];
    /// unknown opcodes are not counted.
    pub requests: HashMap<OpCode, u64>,
    /// Watch notifications sent (one per event per connection).
    pub watch_notifications: u64,
    /// Open TCP connections (handshake done or not, four-letter words included).
    pub connections: usize,
    /// Live sessions.
    pub sessions: usize,
    /// The last zxid used.
    pub zxid: i64,
    /// Frames received (requests, pings, connects, four-letter words).
    pub packets_received: u64,
    /// Frames sent (replies and notifications).
    pub packets_sent: u64,
    /// Connections accepted.
    pub total_connections: u64,
    /// Registered watches, data and child tables together.
    pub watches: usize,
    /// Nodes in the tree, the root and `/zookeeper` nodes included.
    pub nodes: usize,
    /// Ephemeral nodes.
    pub ephemerals: usize,
}

impl ServerStats {
    /// Requests received with opcode `op`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::OpCode;
    /// let stats = zk_testing::embedded::ServerStats::default();
    /// assert_eq!(stats.requests(OpCode::Create), 0);
    /// ```
    pub fn requests(&self, op: OpCode) -> u64 {
        self.requests.get(&op).copied().unwrap_or(0)
    }
}

#[derive(Debug, Default)]
struct Control {
    acceptor: Option<JoinHandle<()>>,
    ticker: Option<JoinHandle<()>>,
    closed: bool,
}

/// An in-process ZooKeeper server on 127.0.0.1.
///
/// All methods take `&self`, so a server can be shared between threads (for example in
/// an `Arc`). Dropping it is the same as [`EmbeddedServer::close`].
///
/// # Examples
///
/// ```
/// use zk_testing::embedded::{EmbeddedServer, ServerConfig};
///
/// let server = EmbeddedServer::start(ServerConfig::default())?;
/// assert!(server.is_running());
/// assert_eq!(server.connect_string(), format!("127.0.0.1:{}", server.port()));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct EmbeddedServer {
    shared: Arc<Shared>,
    port: u16,
    control: Mutex<Control>,
}

impl EmbeddedServer {
    /// Starts a server on 127.0.0.1 with `config` (port 0 picks a free port). The server
    /// accepts connections when this returns.
    ///
    /// # Errors
    ///
    /// The error of binding the port (for example `AddrInUse`), or of spawning a thread;
    /// `InvalidInput` for TLS settings that cannot be used (garbage PEM, a key that does
    /// not match the certificate).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_testing::embedded::{EmbeddedServer, ServerConfig};
    /// let server = EmbeddedServer::start(ServerConfig::default())?;
    /// assert_ne!(server.port(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(config: ServerConfig) -> io::Result<EmbeddedServer> {
        let listener = TcpListener::bind(("127.0.0.1", config.port))?;
        let port = listener.local_addr()?.port();
        let sweep = config.container_check_interval;
        let max_frame = config.max_frame;
        let tls = config.tls.as_ref().map(|t| t.rustls_config()).transpose()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(config, port)),
            pause_cv: Condvar::new(),
            ticker_cv: Condvar::new(),
            threads: Mutex::new(Vec::new()),
            max_frame,
            tls,
        });
        let ticker = server::spawn_ticker(shared.clone(), sweep)?;
        let acceptor = match server::spawn_acceptor(shared.clone(), listener) {
            Ok(a) => a,
            Err(e) => {
                shared.state.lock().shutdown = true;
                shared.ticker_cv.notify_all();
                let _ = ticker.join();
                return Err(e);
            }
        };
        log::info!("embedded ZooKeeper listening on 127.0.0.1:{port}");
        Ok(EmbeddedServer {
            shared,
            port,
            control: Mutex::new(Control {
                acceptor: Some(acceptor),
                ticker: Some(ticker),
                closed: false,
            }),
        })
    }

    /// The TCP port (the same across [`EmbeddedServer::restart`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert!(server.port() > 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `"127.0.0.1:PORT"`, for clients.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert!(server.connect_string().starts_with("127.0.0.1:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The configuration the server was started with, and the changes made
    /// since ([`EmbeddedServer::delay_set_watches`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert!(server.config().extended_types);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn config(&self) -> ServerConfig {
        self.shared.state.lock().cfg.clone()
    }

    /// Whether the server is listening (started and not stopped or closed).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// server.stop();
    /// assert!(!server.is_running());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_running(&self) -> bool {
        self.control.lock().acceptor.is_some()
    }

    /// Stops serving like a killed server with its data directory kept: closes the
    /// listener and every connection. The data tree, the zxid and the sessions are kept
    /// (their ephemerals too); no session expires while stopped, and each gets a fresh
    /// timeout on [`EmbeddedServer::restart`]. Does nothing if already stopped.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// server.stop();
    /// assert!(std::net::TcpStream::connect(server.connect_string()).is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stop(&self) {
        let mut ctl = self.control.lock();
        let Some(acceptor) = ctl.acceptor.take() else { return };
        self.shared.state.lock().listening = false;
        server::wake_acceptor(SocketAddr::from(([127, 0, 0, 1], self.port)));
        let _ = acceptor.join();
        let conns: Vec<_> = {
            let mut st = self.shared.state.lock();
            let ids: Vec<_> = st.conns.keys().copied().collect();
            for id in &ids {
                st.close_conn(*id);
            }
            st.conns.values().map(|e| e.shared.clone()).collect()
        };
        for c in conns {
            c.abort();
        }
        self.shared.pause_cv.notify_all();
        let threads = std::mem::take(&mut *self.shared.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        log::info!("embedded ZooKeeper on 127.0.0.1:{} stopped", self.port);
    }

    /// Listens again on the same port with the same data and sessions (stopping first if
    /// running). Every session gets a fresh timeout, as on a real restart.
    ///
    /// # Errors
    ///
    /// The error of binding the port (retried for about a second), `Other` if the server
    /// was closed, or the error of spawning the acceptor thread.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// let port = server.port();
    /// server.restart()?;
    /// assert!(server.is_running());
    /// assert_eq!(server.port(), port);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn restart(&self) -> io::Result<()> {
        if self.is_running() {
            self.stop();
        }
        let mut ctl = self.control.lock();
        if ctl.closed {
            return Err(io::Error::other("the embedded server was closed"));
        }
        if ctl.acceptor.is_some() {
            return Ok(());
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", self.port)) {
                Ok(l) => break l,
                Err(e) if Instant::now() < deadline => {
                    log::debug!("embedded zk: rebinding port {} failed ({e}); retrying", self.port);
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        };
        {
            let mut st = self.shared.state.lock();
            st.listening = true;
            st.reset_deadlines(Instant::now());
        }
        match server::spawn_acceptor(self.shared.clone(), listener) {
            Ok(a) => ctl.acceptor = Some(a),
            Err(e) => {
                self.shared.state.lock().listening = false;
                return Err(e);
            }
        }
        log::info!("embedded ZooKeeper listening again on 127.0.0.1:{}", self.port);
        Ok(())
    }

    /// Stops everything and joins every thread. Idempotent; also done by `Drop`.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// server.close();
    /// assert!(server.restart().is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close(&self) {
        self.stop();
        let ticker = {
            let mut ctl = self.control.lock();
            ctl.closed = true;
            ctl.ticker.take()
        };
        {
            let mut st = self.shared.state.lock();
            st.shutdown = true;
            st.paused = false;
        }
        self.shared.ticker_cv.notify_all();
        self.shared.pause_cv.notify_all();
        if let Some(t) = ticker {
            let _ = t.join();
        }
    }

    /// Expires a session exactly as the real server does: its connections are closed
    /// without a message, its ephemerals are deleted in one transaction (watch events go
    /// to the other connections), and it is forgotten, so a reattach gets the timeout-0
    /// ConnectResponse. Returns false if there is no such session.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert!(!server.expire_session(42));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn expire_session(&self, session_id: i64) -> bool {
        self.shared.state.lock().expire(session_id)
    }

    /// Closes every client TCP connection; sessions (and their ephemerals) survive and
    /// clients may reattach. Returns the number of connections closed.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert_eq!(server.drop_connections(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drop_connections(&self) -> usize {
        let mut st = self.shared.state.lock();
        let ids: Vec<_> = st
            .conns
            .iter()
            .filter(|(_, e)| !e.shared.is_closing())
            .map(|(c, _)| *c)
            .collect();
        for id in &ids {
            st.close_conn(*id);
        }
        ids.len()
    }

    /// Closes the TCP connections bound to one session; the session survives. Returns
    /// the number of connections closed.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert_eq!(server.drop_session_connections(42), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drop_session_connections(&self, session_id: i64) -> usize {
        let mut st = self.shared.state.lock();
        let ids = st.session_conns(session_id);
        for id in &ids {
            st.close_conn(*id);
        }
        ids.len()
    }

    /// Freezes the server: requests (and handshakes, and four-letter words) are neither
    /// read nor answered, connections stay open, no session is touched and none expires
    /// until [`EmbeddedServer::resume`]; then sessions whose deadline passed meanwhile
    /// expire first, before any waiting request is processed.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// server.pause();
    /// assert!(server.is_paused());
    /// server.resume();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pause(&self) {
        let mut st = self.shared.state.lock();
        st.paused = true;
        st.pause_until = None;
    }

    /// Pauses for `duration`, then resumes by itself (see [`EmbeddedServer::pause`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// server.pause_for(std::time::Duration::from_millis(10));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pause_for(&self, duration: Duration) {
        {
            let mut st = self.shared.state.lock();
            st.paused = true;
            st.pause_until = Some(Instant::now() + duration);
        }
        self.shared.ticker_cv.notify_all();
    }

    /// Ends a pause (see [`EmbeddedServer::pause`]). Does nothing if not paused.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// server.resume();
    /// assert!(!server.is_paused());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn resume(&self) {
        {
            let mut st = self.shared.state.lock();
            if !st.paused {
                return;
            }
            st.resume(Instant::now());
        }
        self.shared.pause_cv.notify_all();
        self.shared.ticker_cv.notify_all();
    }

    /// Whether the server is paused.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert!(!server.is_paused());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_paused(&self) -> bool {
        self.shared.state.lock().paused
    }

    /// The next request with opcode `op` (on any connection) is applied, but instead of
    /// its reply the connection is closed: a lost response. Calls accumulate.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::OpCode;
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// server.drop_next_reply(OpCode::Create2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drop_next_reply(&self, op: OpCode) {
        self.shared.state.lock().drop_next.push(op);
    }

    /// From now on, a connection's re-registered watches (`SetWatches`,
    /// `SetWatches2`, sent by a client that reconnects with watches) wait
    /// `delay` before they are processed, and so does every later request of
    /// that connection: a slow real server, on which the events those watches
    /// fire (a node deleted while the client was away) come that much later.
    /// Zero turns it off (see [`ServerConfig::set_watches_delay`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// server.delay_set_watches(std::time::Duration::from_millis(300));
    /// assert_eq!(server.config().set_watches_delay, std::time::Duration::from_millis(300));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn delay_set_watches(&self, delay: Duration) {
        self.shared.state.lock().cfg.set_watches_delay = delay;
    }

    /// The live sessions, sorted by id.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert!(server.sessions().is_empty());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn sessions(&self) -> Vec<SessionInfo> {
        let st = self.shared.state.lock();
        let mut v: Vec<SessionInfo> = st
            .sessions
            .iter()
            .map(|(id, s)| SessionInfo {
                id: *id,
                timeout: Duration::from_millis(s.timeout.max(0) as u64),
                password: s.passwd.clone(),
                connected: s.conn.is_some(),
                ephemerals: st
                    .tree
                    .ephemerals
                    .get(id)
                    .map(|e| e.iter().cloned().collect())
                    .unwrap_or_default(),
            })
            .collect();
        v.sort_by_key(|s| s.id);
        v
    }

    /// The last zxid used.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert_eq!(server.zxid(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn zxid(&self) -> i64 {
        self.shared.state.lock().zxid
    }

    /// The counters.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// let stats = server.stats();
    /// assert_eq!((stats.sessions, stats.zxid, stats.nodes), (0, 0, 4));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stats(&self) -> ServerStats {
        let st = self.shared.state.lock();
        ServerStats {
            requests: st.stats.requests.clone(),
            watch_notifications: st.stats.notifications,
            connections: st.conns.values().filter(|e| !e.shared.is_closing()).count(),
            sessions: st.sessions.len(),
            zxid: st.zxid,
            packets_received: st.stats.received,
            packets_sent: st.stats.sent,
            total_connections: st.stats.accepted,
            watches: st.watches.data.count() + st.watches.child.count(),
            nodes: st.tree.len(),
            ephemerals: st.tree.ephemeral_count(),
        }
    }

    /// Resets the cumulative counters of [`ServerStats`].
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// server.reset_stats();
    /// assert_eq!(server.stats().watch_notifications, 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn reset_stats(&self) {
        let mut st = self.shared.state.lock();
        st.stats.requests.clear();
        st.stats.notifications = 0;
        st.stats.received = 0;
        st.stats.sent = 0;
        st.stats.accepted = 0;
    }

    /// Every node as `(path, Stat, data)`, sorted by path, the root and the `/zookeeper`
    /// nodes included (null data is returned as empty).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// let paths: Vec<String> = server.dump_tree().into_iter().map(|(p, _, _)| p).collect();
    /// assert_eq!(paths, ["/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn dump_tree(&self) -> Vec<(String, Stat, Vec<u8>)> {
        let st = self.shared.state.lock();
        let mut v: Vec<(String, Stat, Vec<u8>)> = st
            .tree
            .iter()
            .map(|(p, n)| (p.clone(), n.stat(), n.data_bytes().to_vec()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Runs the container / TTL sweep now; returns the number of nodes deleted.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::EmbeddedServer::start(Default::default())?;
    /// assert_eq!(server.run_container_sweep(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn run_container_sweep(&self) -> usize {
        self.shared.state.lock().sweep()
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        self.close();
    }
}
