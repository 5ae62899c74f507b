//! The client router: one loopback proxy in front of each node's client port, so that a test
//! decides which server a client (re)connects to, loses the reply to one chosen request, and
//! sees what each connection carried (its handshake, the zxid of its first reply).

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use zk_proto::frame::FrameBuffer;
use zk_proto::jute::{Decode, Reader};
use zk_proto::{ConnectRequest, ConnectResponse, OpCode, ReplyHeader, RequestHeader};

use crate::fourlw::four_letter_word;

/// How long a pump waits in a read before it looks at the stop flag again.
const POLL: Duration = Duration::from_millis(20);
/// The largest frame the router cuts (ZooKeeper's own limit is 1 MiB by default).
const MAX_FRAME: usize = 64 << 20;
/// [`Shared::route`] when each proxy forwards to its own node.
const OWN: usize = usize::MAX;
/// Timeout of the `srvr` asked of a node when a connection to it is established.
const SRVR_TIMEOUT: Duration = Duration::from_secs(2);

type Hook = Box<dyn FnOnce() + Send>;
type LossHook = Box<dyn for<'a> FnOnce(&Routes<'a>, &LostReply) + Send>;
type SessionHook = Box<dyn for<'a> FnOnce(&Routes<'a>, &NewSession) + Send>;
type ConnectHook = Box<dyn FnOnce(usize) + Send>;

/// A lost reply, as the router saw it: the request whose reply it dropped (then it closed
/// that connection both ways).
///
/// # Errors
///
/// Not applicable: a plain value.
///
/// # Examples
///
/// ```no_run
/// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
/// # let router = zk_testing::apache::ClientRouter::start(&cluster)?;
/// for lost in router.lost_replies() {
///     println!("node {}: reply to xid {} (zxid {:#x}) dropped", lost.node, lost.xid, lost.zxid);
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostReply {
    /// The node the request went to.
    pub node: usize,
    /// The connection it went on (an index into [`ClientRouter::connections`]).
    pub connection: usize,
    /// The request's xid.
    pub xid: i32,
    /// The request's opcode ([`OpCode`] as its number).
    pub op: i32,
    /// The zxid in the dropped reply's header: for a write, the node's last applied zxid once
    /// it had applied it (the write's own zxid when nothing else was written meanwhile).
    pub zxid: i64,
    /// The error code in the dropped reply's header (0: the request succeeded).
    pub err: i32,
    /// When the router dropped it.
    pub at: Instant,
}

/// A connection on which a new session was made, cut before its first request went on (see
/// [`ClientRouter::cut_next_new_session`]).
///
/// # Errors
///
/// Not applicable: a plain value.
///
/// # Examples
///
/// ```no_run
/// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
/// # let router = zk_testing::apache::ClientRouter::start(&cluster)?;
/// router.cut_next_new_session(|_, born| println!("session {:#x} born on node {}", born.session, born.node));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The node that made the session.
    pub node: usize,
    /// The connection (an index into [`ClientRouter::connections`]).
    pub connection: usize,
    /// The new session's id.
    pub session: i64,
}

/// What one connection through the router carried.
///
/// # Errors
///
/// Not applicable: a plain value.
///
/// # Examples
///
/// ```no_run
/// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
/// # let router = zk_testing::apache::ClientRouter::start(&cluster)?;
/// for (i, c) in router.connections().iter().enumerate() {
///     println!("connection {i} to node {}: session {:?}", c.node, c.session);
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRecord {
    /// The node it went to.
    pub node: usize,
    /// When the router accepted it.
    pub opened: Instant,
    /// The session its ConnectRequest asked for (0: a new one), once it was sent.
    pub requested_session: Option<i64>,
    /// The `lastZxidSeen` of its ConnectRequest.
    pub last_zxid_seen: Option<i64>,
    /// The session its ConnectResponse granted (`None`: none yet, or the session had expired).
    pub session: Option<i64>,
    /// When the ConnectResponse granting a session went to the client.
    pub established: Option<Instant>,
    /// The node's last applied zxid (`srvr`'s `Zxid:`) asked right after the ConnectResponse
    /// went to the client.
    pub node_zxid_at_establish: Option<i64>,
    /// The node's last applied zxid asked right after the client's first request (not a ping)
    /// on it went on to the node: below a write's zxid, that request reached a node that had
    /// not applied the write.
    pub node_zxid_at_first_request: Option<i64>,
    /// The first replies to requests (xid > 0) on it, up to 16, in order: each one's opcode
    /// and header zxid (the node's last applied zxid when it answered; a read answered with a
    /// zxid below a write's ran before that node had applied the write).
    pub replies: Vec<ReplySeen>,
    /// Whether the router dropped a reply on it (and closed it).
    pub lost_reply: bool,
    /// Whether the router cut it before its first request (a new session moved away).
    pub cut_before_first_request: bool,
}

/// A reply the router forwarded: its request's opcode and the reply's header zxid.
///
/// # Errors
///
/// Not applicable: a plain value.
///
/// # Examples
///
/// ```no_run
/// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
/// for c in router.connections() {
///     for r in &c.replies {
///         println!("op {} answered at zxid {:#x}", r.op, r.zxid);
///     }
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplySeen {
    /// The request's opcode (0 if the router did not see the request).
    pub op: i32,
    /// The reply's header zxid.
    pub zxid: i64,
}

/// How many replies a [`ConnectionRecord`] keeps.
const REPLIES_KEPT: usize = 16;

impl ConnectionRecord {
    /// The header zxid of the first reply to a request on this connection.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// let answered: Vec<_> = router.connections().iter().filter_map(|c| c.first_reply_zxid()).collect();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn first_reply_zxid(&self) -> Option<i64> {
        self.replies.first().map(|r| r.zxid)
    }

    /// The header zxid of the first reply to a request with opcode `op` on this connection
    /// (among the first 16 replies).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// let exists: Vec<_> = router.connections().iter().filter_map(|c| c.first_reply_to(zk_proto::OpCode::Exists)).collect();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn first_reply_to(&self, op: OpCode) -> Option<i64> {
        self.replies.iter().find(|r| r.op == op.code()).map(|r| r.zxid)
    }

    fn new(node: usize) -> ConnectionRecord {
        ConnectionRecord {
            node,
            opened: Instant::now(),
            requested_session: None,
            last_zxid_seen: None,
            session: None,
            established: None,
            node_zxid_at_establish: None,
            node_zxid_at_first_request: None,
            replies: Vec::new(),
            lost_reply: false,
            cut_before_first_request: false,
        }
    }
}

/// A lost reply armed by [`ClientRouter::lose_reply`].
struct Armed {
    op: i32,
    before: Option<Hook>,
    after: Option<LossHook>,
}

/// One live connection's sockets, to cut it.
struct Live {
    id: usize,
    node: usize,
    client: TcpStream,
    server: TcpStream,
}

#[derive(Default)]
struct Shared {
    targets: Vec<SocketAddr>,
    /// The node every proxy forwards to, or [`OWN`]: each to its own node.
    route: AtomicUsize,
    accepted: Vec<AtomicUsize>,
    stop: AtomicBool,
    live: Mutex<Vec<Live>>,
    records: Mutex<Vec<ConnectionRecord>>,
    armed: Mutex<Option<Armed>>,
    new_session: Mutex<Option<SessionHook>>,
    /// A hook for the next ConnectRequest forwarded to a node: (node, hook).
    connect: Mutex<Option<(usize, ConnectHook)>>,
    lost: Mutex<Vec<LostReply>>,
    /// Held while a loss's or a cut's hook runs: no new connection is forwarded meanwhile.
    gate: Mutex<()>,
}

/// One connection's state, shared by its two pumps.
#[derive(Default)]
struct ConnState {
    /// The xid whose reply is to be dropped, with the hook to run then.
    drop: Mutex<Option<(i32, i32, Option<LossHook>)>>,
    /// xid -> opcode of the requests in flight (to name the first reply's request).
    ops: Mutex<std::collections::HashMap<i32, i32>>,
    /// Set when the connection made a new session that is to be cut at its first request.
    cut_first: AtomicBool,
}

/// A loopback proxy in front of each node's client port of an ensemble: a client given
/// [`connect_string`](Self::connect_string) reaches node `i` through proxy `i`, or, once
/// routed ([`route_to`](Self::route_to)), the one node the test chose through every proxy.
/// The test drops the reply to the next
/// request of one opcode and closes its connection ([`lose_reply`](Self::lose_reply), with a
/// hook before the request goes on and one after the loss, before any new connection is
/// forwarded), moves a new session away before its first request
/// ([`cut_next_new_session`](Self::cut_next_new_session)), and reads what each connection
/// carried ([`connections`](Self::connections): its handshake, the node's last applied zxid
/// when it was established, the zxid of its first reply).
///
/// Frames are forwarded whole and in order; nothing else is changed. Dropping the router
/// stops it and closes every connection through it.
///
/// # Errors
///
/// See the methods.
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache::{ApacheCluster, ApacheConfig, ClientRouter};
///
/// let cluster = ApacheCluster::start(3, ApacheConfig::default())?;
/// let router = ClientRouter::start(&cluster)?;
/// router.route_to(0); // clients of router.connect_string() reach node 0 only
/// // ... connect a client to router.connect_string(), then:
/// router.lose_reply(zk_proto::OpCode::SetData, || {}, |_, lost| println!("lost {lost:?}"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct ClientRouter {
    shared: Arc<Shared>,
    ports: Vec<u16>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for ClientRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRouter").field("ports", &self.ports).finish()
    }
}

impl ClientRouter {
    /// Starts a proxy in front of each node of `cluster` (by its client port), every one
    /// accepting.
    ///
    /// # Errors
    ///
    /// An I/O error from binding a listener or spawning its thread.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// let router = zk_testing::apache::ClientRouter::start(&cluster)?;
    /// assert_eq!(router.connect_string().split(',').count(), 3);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(cluster: &super::ApacheCluster) -> io::Result<ClientRouter> {
        let targets: Vec<String> = (0..cluster.len())
            .map(|i| format!("127.0.0.1:{}", cluster.client_port(i)))
            .collect();
        Self::start_for(&targets)
    }

    /// Starts a proxy in front of each of `targets` (`host:port`), every one accepting; node
    /// `i` is `targets[i]`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] if a target does not resolve; an I/O error from binding a
    /// listener or spawning its thread.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// println!("{}", router.connect_string());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_for(targets: &[String]) -> io::Result<ClientRouter> {
        let mut addrs = Vec::with_capacity(targets.len());
        for t in targets {
            let a = t
                .to_socket_addrs()?
                .next()
                .ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, format!("{t} has no address")))?;
            addrs.push(a);
        }
        let n = addrs.len();
        let shared = Arc::new(Shared {
            targets: addrs,
            route: AtomicUsize::new(OWN),
            accepted: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            ..Shared::default()
        });
        let mut router = ClientRouter {
            shared,
            ports: Vec::with_capacity(n),
            threads: Vec::with_capacity(n),
        };
        for node in 0..n {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            listener.set_nonblocking(true)?;
            router.ports.push(listener.local_addr()?.port());
            let sh = router.shared.clone();
            let handle = thread::Builder::new()
                .name(format!("zk-router-{node}"))
                .spawn(move || accept_loop(listener, node, sh))?;
            router.threads.push(handle);
        }
        Ok(router)
    }

    /// The connect string listing every proxy (node order).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// assert!(router.connect_string().starts_with("127.0.0.1:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_string(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every proxy forwards new connections to node `node` from now on (whichever server of
    /// its connect string a client tries, it reaches `node` at once: no refused attempt, no
    /// backoff), and every connection to another node is cut (its client reconnects, to
    /// `node`). An index out of range makes every proxy close new connections at once.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.route_to(0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn route_to(&self, node: usize) {
        self.routes().route_to(node);
    }

    /// Each proxy forwards to its own node again (connections are left as they are).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.route_to(0);
    /// router.unroute();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn unroute(&self) {
        self.routes().unroute();
    }

    /// Closes every connection through the router (both ways).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.cut_all();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cut_all(&self) {
        self.routes().cut_all();
    }

    /// The routing half of the router, as its hooks get it.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.routes().route_to(0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn routes(&self) -> Routes<'_> {
        Routes { shared: &self.shared }
    }

    /// Connections proxy `node` has accepted so far (whichever node they were forwarded to).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Panics
    ///
    /// If `node` is not a node index.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// assert_eq!(router.accepted(0), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn accepted(&self, node: usize) -> usize {
        self.shared.accepted[node].load(Ordering::Relaxed)
    }

    /// Arms a lost reply: the next request with opcode `op` (on any connection) is held while
    /// `before` runs (on the router's thread; the client's later frames on that connection
    /// wait behind it), then forwarded; its reply is dropped and that connection closed both
    /// ways, so the client sees the connection break with the request in flight, after the
    /// server applied it. Then `after` runs, before any new connection is forwarded to a
    /// server (a client's reconnect waits for it): route the client elsewhere there. Arming
    /// again replaces an armed loss that has not happened.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// # let router = zk_testing::apache::ClientRouter::start(&cluster)?;
    /// router.route_to(0);
    /// router.lose_reply(zk_proto::OpCode::Multi, || {}, |routes, _lost| routes.route_to(1));
    /// // the client's next multi is applied by node 0, its reply lost; it reconnects to node 1
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lose_reply(
        &self,
        op: OpCode,
        before: impl FnOnce() + Send + 'static,
        after: impl for<'a> FnOnce(&Routes<'a>, &LostReply) + Send + 'static,
    ) {
        *self.shared.armed.lock() = Some(Armed {
            op: op.code(),
            before: Some(Box::new(before)),
            after: Some(Box::new(after)),
        });
    }

    /// Whether a lost reply is armed and has not happened yet.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// assert!(!router.is_armed());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_armed(&self) -> bool {
        self.shared.armed.lock().is_some()
    }

    /// Disarms a lost reply, a new-session cut or a connect hook that has not happened (their
    /// hooks are dropped without running).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.lose_reply(zk_proto::OpCode::Create, || {}, |_, _| {});
    /// router.disarm();
    /// assert!(!router.is_armed());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn disarm(&self) {
        self.shared.armed.lock().take();
        self.shared.new_session.lock().take();
        self.shared.connect.lock().take();
    }

    /// Arms a moved new session: the next connection whose handshake makes a new session is
    /// cut when its client sends its first frame after the handshake (that frame is not
    /// forwarded), and `then` runs, before any new connection is forwarded to a server: route
    /// the client elsewhere there, and its new session reconnects to that server. A session
    /// made on one server and resumed on another that has not yet applied its creation: the
    /// second one asks the leader to revalidate it.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// # let router = zk_testing::apache::ClientRouter::start(&cluster)?;
    /// router.cut_next_new_session(|routes, _born| routes.route_to(2));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cut_next_new_session(&self, then: impl for<'a> FnOnce(&Routes<'a>, &NewSession) + Send + 'static) {
        self.routes().cut_next_new_session(then);
    }

    /// Runs `then` (with the connection's index into [`connections`](Self::connections)) once,
    /// right after the next ConnectRequest through node `node`'s proxy has gone on to the
    /// node: the client is then waiting for that node's answer. Arming again replaces a hook
    /// that has not run.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.on_next_connect(0, |connection| println!("connection {connection} asks node 0"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn on_next_connect(&self, node: usize, then: impl FnOnce(usize) + Send + 'static) {
        self.routes().on_next_connect(node, then);
    }

    /// Every reply dropped so far, in order.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// assert!(router.lost_replies().is_empty());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lost_replies(&self) -> Vec<LostReply> {
        self.shared.lost.lock().clone()
    }

    /// What every connection through the router carried so far, in the order they were
    /// accepted and forwarded (one closed at once, for a route to no node, is not listed).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// let first_on_node_0 = router.connections().into_iter().find(|c| c.node == 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connections(&self) -> Vec<ConnectionRecord> {
        self.shared.records.lock().clone()
    }
}

/// The routing half of a [`ClientRouter`]: what its hooks may do (they get it as their first
/// argument), and what [`ClientRouter::routes`] gives.
///
/// # Errors
///
/// See the methods.
///
/// # Examples
///
/// ```no_run
/// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string(), "127.0.0.1:2182".to_string()])?;
/// router.route_to(0);
/// router.lose_reply(zk_proto::OpCode::Multi, || {}, |routes, _lost| routes.route_to(1));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Routes<'a> {
    shared: &'a Shared,
}

impl std::fmt::Debug for Routes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes").finish_non_exhaustive()
    }
}

impl Routes<'_> {
    /// As [`ClientRouter::route_to`].
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.routes().route_to(0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn route_to(&self, node: usize) {
        self.shared.route.store(node, Ordering::Release);
        cut_where(self.shared, |l| l.node != node);
    }

    /// As [`ClientRouter::unroute`].
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.routes().unroute();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn unroute(&self) {
        self.shared.route.store(OWN, Ordering::Release);
    }

    /// As [`ClientRouter::cut_all`].
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.routes().cut_all();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cut_all(&self) {
        cut_where(self.shared, |_| true);
    }

    /// As [`ClientRouter::cut_next_new_session`].
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string(), "127.0.0.1:2182".to_string()])?;
    /// router.routes().cut_next_new_session(|routes, _born| routes.route_to(1));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cut_next_new_session(&self, then: impl for<'a> FnOnce(&Routes<'a>, &NewSession) + Send + 'static) {
        *self.shared.new_session.lock() = Some(Box::new(then));
    }

    /// As [`ClientRouter::on_next_connect`].
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let router = zk_testing::apache::ClientRouter::start_for(&["127.0.0.1:2181".to_string()])?;
    /// router.routes().on_next_connect(0, |connection| println!("connection {connection} asks node 0"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn on_next_connect(&self, node: usize, then: impl FnOnce(usize) + Send + 'static) {
        *self.shared.connect.lock() = Some((node, Box::new(then)));
    }
}

impl Drop for ClientRouter {
    fn drop(&mut self) {
        self.disarm();
        self.shared.stop.store(true, Ordering::Release);
        self.cut_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn cut_where(sh: &Shared, which: impl Fn(&Live) -> bool) {
    let mut live = sh.live.lock();
    live.retain(|l| {
        if which(l) {
            let _ = l.client.shutdown(Shutdown::Both);
            let _ = l.server.shutdown(Shutdown::Both);
            false
        } else {
            true
        }
    });
}

fn accept_loop(listener: TcpListener, proxy: usize, sh: Arc<Shared>) {
    while !sh.stop.load(Ordering::Acquire) {
        let client = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(2));
                continue;
            }
            Err(_) => continue,
        };
        sh.accepted[proxy].fetch_add(1, Ordering::Relaxed);
        // A hook under way (after a loss, or a cut) decides where this connection goes.
        drop(sh.gate.lock());
        let node = match sh.route.load(Ordering::Acquire) {
            OWN => proxy,
            n => n,
        };
        if node >= sh.targets.len() || sh.stop.load(Ordering::Acquire) {
            drop(client);
            continue;
        }
        let _ = client.set_nonblocking(false);
        let Ok(server) = TcpStream::connect_timeout(&sh.targets[node], Duration::from_secs(5)) else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (Ok(c1), Ok(s1), Ok(c2), Ok(s2)) = (
            client.try_clone(),
            server.try_clone(),
            client.try_clone(),
            server.try_clone(),
        ) else {
            continue;
        };
        let id = {
            let mut records = sh.records.lock();
            records.push(ConnectionRecord::new(node));
            records.len() - 1
        };
        sh.live.lock().push(Live {
            id,
            node,
            client: c1,
            server: s1,
        });
        let conn = Arc::new(ConnState::default());
        let (sh1, conn1) = (sh.clone(), conn.clone());
        let up = thread::Builder::new()
            .name(format!("zk-router-{node}-up"))
            .spawn(move || pump_up(client, server, &sh1, &conn1, (node, id)));
        let sh2 = sh.clone();
        let down = thread::Builder::new()
            .name(format!("zk-router-{node}-down"))
            .spawn(move || pump_down(s2, c2, &sh2, &conn, (node, id)));
        if up.is_err() || down.is_err() {
            cut_where(&sh, |l| l.id == id);
        }
    }
}

/// Reads what is there (waiting at most [`POLL`]) into `fb`; `false` on EOF, error or stop.
fn fill(from: &mut TcpStream, fb: &mut FrameBuffer, buf: &mut [u8], sh: &Shared) -> bool {
    loop {
        if sh.stop.load(Ordering::Acquire) {
            return false;
        }
        match from.read(buf) {
            Ok(0) => return false,
            Ok(n) => {
                fb.extend(&buf[..n]);
                return true;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => return false,
        }
    }
}

fn write_frame(to: &mut TcpStream, f: &[u8]) -> bool {
    let mut out = Vec::with_capacity(f.len() + 4);
    out.extend_from_slice(&(f.len() as u32).to_be_bytes());
    out.extend_from_slice(f);
    to.write_all(&out).is_ok()
}

fn close(a: &TcpStream, b: &TcpStream) {
    let _ = a.shutdown(Shutdown::Both);
    let _ = b.shutdown(Shutdown::Both);
}

/// client -> server.
fn pump_up(mut from: TcpStream, mut to: TcpStream, sh: &Arc<Shared>, conn: &ConnState, (node, id): (usize, usize)) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut fb = FrameBuffer::new(MAX_FRAME);
    let mut buf = vec![0u8; 64 << 10];
    let mut first = true;
    let mut asked = false;
    'run: while fill(&mut from, &mut fb, &mut buf, sh) {
        while let Ok(Some(f)) = fb.next_frame() {
            let is_connect = first;
            let mut is_request = false;
            if std::mem::take(&mut first) {
                if let Ok(req) = ConnectRequest::decode(&mut Reader::new(&f)) {
                    let mut records = sh.records.lock();
                    records[id].requested_session = Some(req.session_id);
                    records[id].last_zxid_seen = Some(req.last_zxid_seen);
                }
            } else if conn.cut_first.swap(false, Ordering::AcqRel) {
                // A new session moves away before its first request.
                let hook = sh.new_session.lock().take();
                let _gate = sh.gate.lock();
                close(&from, &to);
                let session = {
                    let mut records = sh.records.lock();
                    records[id].cut_before_first_request = true;
                    records[id].session.unwrap_or(0)
                };
                if let Some(h) = hook {
                    h(
                        &Routes { shared: sh },
                        &NewSession {
                            node,
                            connection: id,
                            session,
                        },
                    );
                }
                break 'run;
            } else if let Ok(h) = RequestHeader::decode(&mut Reader::new(&f)) {
                is_request = h.xid != zk_proto::xid::PING;
                if h.xid > 0 {
                    conn.ops.lock().insert(h.xid, h.op);
                    let armed = {
                        let mut armed = sh.armed.lock();
                        if armed.as_ref().is_some_and(|a| a.op == h.op) {
                            armed.take()
                        } else {
                            None
                        }
                    };
                    if let Some(mut a) = armed {
                        *conn.drop.lock() = Some((h.xid, h.op, a.after.take()));
                        if let Some(before) = a.before.take() {
                            before();
                        }
                    }
                }
            }
            if !write_frame(&mut to, &f) {
                break 'run;
            }
            if is_request && !std::mem::replace(&mut asked, true) {
                // What the node had applied when the request reached it is at most what it
                // says now; asked aside, so that the client's next frames do not wait.
                let (sh, addr) = (sh.clone(), sh.targets[node].to_string());
                let _ = thread::Builder::new().name("zk-router-srvr".into()).spawn(move || {
                    let zxid = four_letter_word(&addr, "srvr", SRVR_TIMEOUT)
                        .ok()
                        .and_then(|a| parse_srvr_zxid(&a));
                    sh.records.lock()[id].node_zxid_at_first_request = zxid;
                });
            }
            if is_connect {
                let hook = {
                    let mut hook = sh.connect.lock();
                    if hook.as_ref().is_some_and(|(n, _)| *n == node) {
                        hook.take()
                    } else {
                        None
                    }
                };
                if let Some((_, h)) = hook {
                    h(id);
                }
            }
        }
    }
    close(&from, &to);
}

/// server -> client.
fn pump_down(mut from: TcpStream, mut to: TcpStream, sh: &Shared, conn: &ConnState, (node, id): (usize, usize)) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut fb = FrameBuffer::new(MAX_FRAME);
    let mut buf = vec![0u8; 64 << 10];
    let mut first = true;
    'run: while fill(&mut from, &mut fb, &mut buf, sh) {
        while let Ok(Some(f)) = fb.next_frame() {
            if std::mem::take(&mut first) {
                let granted = ConnectResponse::decode(&mut Reader::new(&f))
                    .ok()
                    .filter(|r| r.timeout > 0)
                    .map(|r| r.session_id);
                let new = {
                    let mut records = sh.records.lock();
                    records[id].session = granted;
                    if granted.is_some() {
                        records[id].established = Some(Instant::now());
                    }
                    granted.is_some() && records[id].requested_session == Some(0)
                };
                if new && sh.new_session.lock().is_some() {
                    conn.cut_first.store(true, Ordering::Release);
                }
                if !write_frame(&mut to, &f) {
                    break 'run;
                }
                if granted.is_some() {
                    let addr = sh.targets[node].to_string();
                    let zxid = four_letter_word(&addr, "srvr", SRVR_TIMEOUT)
                        .ok()
                        .and_then(|a| parse_srvr_zxid(&a));
                    sh.records.lock()[id].node_zxid_at_establish = zxid;
                }
                continue;
            }
            let Ok(h) = ReplyHeader::decode(&mut Reader::new(&f)) else {
                if !write_frame(&mut to, &f) {
                    break 'run;
                }
                continue;
            };
            if h.xid > 0 {
                let op = conn.ops.lock().remove(&h.xid);
                let mut doomed = conn.drop.lock();
                if doomed.as_ref().is_some_and(|(xid, _, _)| *xid == h.xid) {
                    let (xid, op, after) = doomed.take().expect("checked");
                    drop(doomed);
                    let _gate = sh.gate.lock();
                    close(&from, &to);
                    let lost = LostReply {
                        node,
                        connection: id,
                        xid,
                        op,
                        zxid: h.zxid,
                        err: h.err,
                        at: Instant::now(),
                    };
                    sh.records.lock()[id].lost_reply = true;
                    sh.lost.lock().push(lost.clone());
                    if let Some(after) = after {
                        after(&Routes { shared: sh }, &lost);
                    }
                    break 'run;
                }
                drop(doomed);
                let mut records = sh.records.lock();
                if records[id].replies.len() < REPLIES_KEPT {
                    records[id].replies.push(ReplySeen {
                        op: op.unwrap_or(0),
                        zxid: h.zxid,
                    });
                }
            }
            if !write_frame(&mut to, &f) {
                break 'run;
            }
        }
    }
    close(&from, &to);
}

/// The `Zxid:` of a `srvr` answer (hexadecimal, `0x` prefixed).
pub(super) fn parse_srvr_zxid(answer: &str) -> Option<i64> {
    let v = answer.lines().find_map(|l| l.strip_prefix("Zxid:"))?.trim();
    let hex = v.strip_prefix("0x").unwrap_or(v);
    u64::from_str_radix(hex, 16).ok().map(|z| z as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srvr_zxid_is_read_as_hex() {
        let a = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.1/3\nZxid: 0x10000002a\nMode: follower\n";
        assert_eq!(parse_srvr_zxid(a), Some(0x1_0000_002a));
        assert_eq!(parse_srvr_zxid("Mode: leader\n"), None);
        assert_eq!(parse_srvr_zxid("Zxid: nonsense\n"), None);
    }
}
