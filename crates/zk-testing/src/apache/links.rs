//! The links between the servers of a partitionable ensemble: one forwarding proxy per ordered
//! pair of servers and per port kind (quorum, election), and the per-direction switches that
//! hold a link's bytes (a partition) or let them through.
//!
//! Server `a` reaches server `b` (its quorum port: followers connect to the leader there; its
//! election port: the leader election's connections) only through proxy `a->b`: `a`'s own
//! `zoo.cfg` lists `b` at that proxy's ports, and its own entry at its real ports. A TCP
//! connection is used both ways once open, so the unit of a fault is a *direction*: "bytes
//! from `a` to `b`", whichever of the two opened the connection. A blocked direction is not
//! read any more (the sender's writes pile up in the kernel's buffers, as on a network that
//! drops packets and makes TCP retransmit); new connections are still accepted and opened to
//! the target, and their bytes in that direction are held the same way. Nothing is closed:
//! each server notices a partition by its own timeouts, as it would on a real network. When
//! the direction is unblocked, what was held is delivered (like TCP's retransmissions after a
//! partition heals), and the servers' own closes then flow through.
//!
//! The election protocol needs one rewrite. When a server with a lower id connects to one with
//! a higher id, its first message (protocol version, its id, its election address) makes the
//! receiver close that connection and connect back to the address *in the message*: the
//! sender's real election port, which would bypass the proxies. The election proxy `a->b`
//! rewrites that address to proxy `b->a`'s, so the connection back goes through the proxy
//! too. (Quorum connections carry no address: a follower finds its leader in its own view.)

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a pump waits in a read before it looks at its switches again.
const POLL: Duration = Duration::from_millis(20);
/// How often a blocked pump looks at its switch.
const BLOCKED_POLL: Duration = Duration::from_millis(5);
/// The longest election address a first message may carry before the proxy leaves it alone.
const MAX_ADDR_LEN: i32 = 4096;
/// How long a proxy keeps retrying a target that refuses before it closes the initiator's
/// connection (less than the 5 s a server's election connect waits).
const CONNECT_RETRY: Duration = Duration::from_secs(4);

/// What every proxy of one ensemble shares: the switches, and the open connections.
#[derive(Debug)]
pub(super) struct LinkState {
    n: usize,
    /// `blocked[from * n + to]`: bytes from server `from` to server `to` are held.
    blocked: Vec<AtomicBool>,
    /// Connections accepted so far, by ordered pair (both port kinds).
    accepted: Vec<AtomicUsize>,
    stop: AtomicBool,
    conns: Mutex<Vec<TcpStream>>,
}

impl LinkState {
    fn idx(&self, from: usize, to: usize) -> usize {
        from * self.n + to
    }

    fn is_blocked(&self, from: usize, to: usize) -> bool {
        self.blocked[self.idx(from, to)].load(Ordering::Acquire)
    }

    pub(super) fn set(&self, from: usize, to: usize, blocked: bool) {
        let i = self.idx(from, to);
        self.blocked[i].store(blocked, Ordering::Release);
    }

    pub(super) fn get(&self, from: usize, to: usize) -> bool {
        self.is_blocked(from, to)
    }

    pub(super) fn accepted(&self, from: usize, to: usize) -> usize {
        self.accepted[self.idx(from, to)].load(Ordering::Relaxed)
    }

    pub(super) fn heal_all(&self) {
        for b in &self.blocked {
            b.store(false, Ordering::Release);
        }
    }

    /// Waits while bytes from `from` to `to` are held; `false` when the proxies stop.
    fn wait_open(&self, from: usize, to: usize) -> bool {
        while self.is_blocked(from, to) {
            if self.stop.load(Ordering::Acquire) {
                return false;
            }
            thread::sleep(BLOCKED_POLL);
        }
        !self.stop.load(Ordering::Acquire)
    }
}

/// The proxies of one ensemble of `n` servers. Dropping it stops them and closes every
/// connection through them.
#[derive(Debug)]
pub(super) struct Links {
    pub(super) state: Arc<LinkState>,
    /// `quorum[from * n + to]`: the port of proxy `from->to` for `to`'s quorum port (0 when
    /// `from == to`).
    quorum: Vec<u16>,
    /// The same for the election ports.
    election: Vec<u16>,
    listeners: Vec<(SocketAddr, JoinHandle<()>)>,
}

/// One listener before it runs: its socket and where it forwards to.
struct Pending {
    listener: TcpListener,
    target: SocketAddr,
    from: usize,
    to: usize,
    rewrite: Option<String>,
}

impl Links {
    /// Starts the proxies in front of the real `quorum` and `election` ports of `n` servers.
    pub(super) fn start(quorum_real: &[u16], election_real: &[u16]) -> io::Result<Links> {
        let n = quorum_real.len();
        let state = Arc::new(LinkState {
            n,
            blocked: (0..n * n).map(|_| AtomicBool::new(false)).collect(),
            accepted: (0..n * n).map(|_| AtomicUsize::new(0)).collect(),
            stop: AtomicBool::new(false),
            conns: Mutex::new(Vec::new()),
        });
        let mut quorum = vec![0u16; n * n];
        let mut election = vec![0u16; n * n];
        let mut pending = Vec::new();
        // Bind every listener first: the election rewrite needs the ports of the reverse links.
        for from in 0..n {
            for to in (0..n).filter(|&to| to != from) {
                for (ports, real) in [(&mut quorum, quorum_real), (&mut election, election_real)] {
                    let listener = TcpListener::bind("127.0.0.1:0")?;
                    ports[from * n + to] = listener.local_addr()?.port();
                    pending.push(Pending {
                        listener,
                        target: SocketAddr::from(([127, 0, 0, 1], real[to])),
                        from,
                        to,
                        rewrite: None,
                    });
                }
            }
        }
        for p in &mut pending {
            if p.target.port() == election_real[p.to] {
                p.rewrite = Some(format!("127.0.0.1:{}", election[p.to * n + p.from]));
            }
        }
        let mut listeners = Vec::with_capacity(pending.len());
        for p in pending {
            let addr = p.listener.local_addr()?;
            let st = state.clone();
            let handle = thread::Builder::new()
                .name(format!("zk-link-{}-{}", p.from, p.to))
                .spawn(move || accept_loop(p, st))?;
            listeners.push((addr, handle));
        }
        Ok(Links {
            state,
            quorum,
            election,
            listeners,
        })
    }

    /// The `server.N=` lines of server `me`'s `zoo.cfg`: its own real ports, every other
    /// server at the ports of the proxies `me->other`.
    pub(super) fn server_lines(&self, me: usize, quorum_real: &[u16], election_real: &[u16]) -> String {
        let n = self.state.n;
        let mut s = String::new();
        for j in 0..n {
            let (q, e) = if j == me {
                (quorum_real[j], election_real[j])
            } else {
                (self.quorum[me * n + j], self.election[me * n + j])
            };
            s.push_str(&format!("server.{}=127.0.0.1:{q}:{e}\n", j + 1));
        }
        s
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Release);
        for c in self.state.conns.lock().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
        // Wake every blocking accept so that its thread sees `stop`.
        for (addr, handle) in self.listeners.drain(..) {
            let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(200));
            let _ = handle.join();
        }
    }
}

fn accept_loop(p: Pending, st: Arc<LinkState>) {
    let Pending {
        listener,
        target,
        from,
        to,
        rewrite,
    } = p;
    for incoming in listener.incoming() {
        if st.stop.load(Ordering::Acquire) {
            break;
        }
        let Ok(client) = incoming else { continue };
        st.accepted[st.idx(from, to)].fetch_add(1, Ordering::Relaxed);
        // The rest runs on its own thread: connecting to the target may take retries.
        let st = st.clone();
        let rewrite = rewrite.clone();
        let _ = thread::Builder::new()
            .name(format!("zk-link-{from}>{to}"))
            .spawn(move || connect_and_pump(client, target, &st, (from, to), rewrite));
    }
}

/// Connects to `target` for the initiator `client`, retrying while the target refuses (a
/// leader binds its quorum port only once elected, a restarting server its election port
/// only once up: without a proxy, the initiator's own connect would fail and be retried, not
/// a connection that opens and then closes), then pumps both ways.
fn connect_and_pump(
    client: TcpStream,
    target: SocketAddr,
    st: &Arc<LinkState>,
    (from, to): (usize, usize),
    rewrite: Option<String>,
) {
    let give_up = Instant::now() + CONNECT_RETRY;
    let server = loop {
        match TcpStream::connect_timeout(&target, Duration::from_secs(2)) {
            Ok(s) => break s,
            Err(_) if Instant::now() < give_up && !st.stop.load(Ordering::Acquire) => {
                thread::sleep(Duration::from_millis(50));
            }
            // Down for good: the initiator sees its connection closed.
            Err(_) => {
                let _ = client.shutdown(Shutdown::Both);
                return;
            }
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(c1), Ok(s1), Ok(c2), Ok(s2)) = (
        client.try_clone(),
        server.try_clone(),
        client.try_clone(),
        server.try_clone(),
    ) else {
        return;
    };
    {
        let mut conns = st.conns.lock();
        // Forget connections both of whose pumps are gone (their sockets are shut down).
        conns.retain(|c| c.peer_addr().is_ok());
        conns.push(c1);
        conns.push(s1);
    }
    // Initiator `from` -> target `to` here, and back on a thread of its own.
    let down = st.clone();
    let _ = thread::Builder::new()
        .name(format!("zk-link-{to}>{from}"))
        .spawn(move || pump(s2, c2, &down, (to, from), None));
    pump(client, server, st, (from, to), rewrite);
}

/// Reads exactly `buf.len()` bytes, polling so that a stop is seen; `false` on EOF or error.
fn read_full(from: &mut TcpStream, buf: &mut [u8], st: &LinkState) -> bool {
    let mut got = 0;
    while got < buf.len() {
        if st.stop.load(Ordering::Acquire) {
            return false;
        }
        match from.read(&mut buf[got..]) {
            Ok(0) => return false,
            Ok(k) => got += k,
            Err(e) if is_retry(&e) => {}
            Err(_) => return false,
        }
    }
    true
}

fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// The first message of an election connection, with its address replaced by `addr`: the
/// bytes to forward instead. `None` on EOF or error.
fn initial_message(from: &mut TcpStream, addr: &str, st: &LinkState) -> Option<Vec<u8>> {
    let mut head = [0u8; 8];
    if !read_full(from, &mut head, st) {
        return None;
    }
    let mut out = head.to_vec();
    // A non-negative first long is an old peer's server id: no address follows.
    if i64::from_be_bytes(head) >= 0 {
        return Some(out);
    }
    let mut sid_len = [0u8; 12];
    if !read_full(from, &mut sid_len, st) {
        return None;
    }
    let len = i32::from_be_bytes([sid_len[8], sid_len[9], sid_len[10], sid_len[11]]);
    if !(0..=MAX_ADDR_LEN).contains(&len) {
        // Not what we expect: forward as is, and let the receiver judge it.
        out.extend_from_slice(&sid_len);
        return Some(out);
    }
    let mut old = vec![0u8; len as usize];
    if !read_full(from, &mut old, st) {
        return None;
    }
    out.extend_from_slice(&sid_len[..8]);
    out.extend_from_slice(&(addr.len() as i32).to_be_bytes());
    out.extend_from_slice(addr.as_bytes());
    Some(out)
}

/// Forwards the bytes `dir.0 -> dir.1` from `from` to `to`, holding them while that direction
/// is blocked. With `rewrite`, the election connection's first message gets that address.
fn pump(mut from: TcpStream, mut to: TcpStream, st: &LinkState, dir: (usize, usize), rewrite: Option<String>) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut buf = vec![0u8; 64 * 1024];
    'run: {
        if let Some(addr) = rewrite {
            let Some(first) = initial_message(&mut from, &addr, st) else {
                break 'run;
            };
            if !st.wait_open(dir.0, dir.1) || to.write_all(&first).is_err() {
                break 'run;
            }
        }
        loop {
            if st.stop.load(Ordering::Acquire) {
                break;
            }
            if st.is_blocked(dir.0, dir.1) {
                // Do not even read: the sender's writes pile up as in a partition.
                if !st.wait_open(dir.0, dir.1) {
                    break;
                }
                continue;
            }
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => {
                    if !st.wait_open(dir.0, dir.1) || to.write_all(&buf[..k]).is_err() {
                        break;
                    }
                }
                Err(e) if is_retry(&e) => {}
                Err(_) => break,
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// A link made to flap: a thread that blocks and unblocks some directions in turn until it
/// is stopped (then they are left open).
#[derive(Debug)]
pub(super) struct FlapThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl FlapThread {
    pub(super) fn start(
        st: Arc<LinkState>,
        dirs: Vec<(usize, usize)>,
        down: Duration,
        up: Duration,
    ) -> io::Result<FlapThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = thread::Builder::new().name("zk-link-flap".into()).spawn(move || {
            let set = |b: bool| {
                for &(f, t) in &dirs {
                    st.set(f, t, b);
                }
            };
            'flap: while !s.load(Ordering::Acquire) {
                for (blocked, d) in [(true, down), (false, up)] {
                    set(blocked);
                    let until = Instant::now() + d;
                    while Instant::now() < until {
                        if s.load(Ordering::Acquire) {
                            break 'flap;
                        }
                        thread::sleep(BLOCKED_POLL.min(until.saturating_duration_since(Instant::now())));
                    }
                }
            }
            set(false);
        })?;
        Ok(FlapThread {
            stop,
            handle: Some(handle),
        })
    }

    pub(super) fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for FlapThread {
    fn drop(&mut self) {
        self.stop();
    }
}
