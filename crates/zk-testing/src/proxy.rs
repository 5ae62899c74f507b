//! A TCP fault proxy on loopback. Put it between one client and a server (the
//! embedded one or real ZooKeeper) to inject network faults on any backend: cut
//! that client's connections, refuse new ones, freeze its traffic (a partition
//! without resets: the server lives on and expires the session on its own
//! clock), drop one reply, hold one request in flight, or send the client
//! garbage. TLS traffic (a server that answers with TLS records) is forwarded
//! byte for byte: every fault but those that read frames (dropping a reply,
//! losing or holding a request) works on it.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use parking_lot::Mutex;
use zk_proto::frame::FrameBuffer;

const POLL: Duration = Duration::from_millis(20);

/// No request is to be lost ([`FaultProxy::lose_next_request`]).
const NO_OP: i32 = i32::MIN;

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    refuse: AtomicBool,
    frozen: AtomicBool,
    drop_next_reply: AtomicBool,
    dropped: AtomicUsize,
    /// The opcode of the next request to lose on its way (`NO_OP`: none).
    lose_next_request: std::sync::atomic::AtomicI32,
    lost_requests: AtomicUsize,
    /// The opcode of the next request to hold at the proxy (`NO_OP`: none),
    /// whether a held request waits for [`FaultProxy::release_held`], and how
    /// many were held: under one lock, so that a release never misses a hold
    /// being made.
    hold: Mutex<Hold>,
    /// Hold each reply until the client has sent another frame after its
    /// request.
    hold_replies: AtomicBool,
    /// Bumped to ask every server→client pump to send a garbage frame.
    garbage: AtomicUsize,
    accepted: AtomicUsize,
    conns: Mutex<Vec<(TcpStream, TcpStream)>>,
    /// How long a client's re-registered watches wait before they are
    /// forwarded, in ms (0: not at all).
    set_watches_delay_ms: std::sync::atomic::AtomicU64,
    /// SetWatches frames held back so far.
    set_watches_delayed: AtomicUsize,
    /// Wakes a pump waiting out a delay when the proxy stops.
    stopped: parking_lot::Condvar,
    stop_lock: Mutex<()>,
}

/// A request held at the proxy (see [`FaultProxy::hold_next_request`]).
#[derive(Default)]
struct Hold {
    op: i32,
    holding: bool,
    held: usize,
}

/// A forwarding proxy with faults; it stops when dropped.
///
/// # Examples
///
/// ```
/// use zk_testing::{proxy::FaultProxy, Backend, TestingServer};
/// let server = TestingServer::start_backend(Backend::Embedded)?;
/// let proxy = FaultProxy::start(&server.connect_string())?;
/// // connect one client to proxy.connect_string(), then:
/// proxy.freeze(true); // that client alone is partitioned
/// proxy.freeze(false);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct FaultProxy {
    port: u16,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// Listens on a free loopback port and forwards to `target` (`host:port`).
    ///
    /// # Errors
    ///
    /// The target does not resolve, or the listener cannot be bound.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// assert!(proxy.port() > 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(target: &str) -> io::Result<FaultProxy> {
        let target: SocketAddr = target
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "target has no address"))?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            lose_next_request: std::sync::atomic::AtomicI32::new(NO_OP),
            hold: Mutex::new(Hold {
                op: NO_OP,
                holding: false,
                held: 0,
            }),
            ..Shared::default()
        });
        let sh = shared.clone();
        thread::spawn(move || {
            while !sh.stop.load(Ordering::Acquire) {
                let client = match listener.accept() {
                    Ok((s, _)) => s,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(2));
                        continue;
                    }
                    Err(_) => continue,
                };
                sh.accepted.fetch_add(1, Ordering::Relaxed);
                let _ = client.set_nonblocking(false);
                if sh.refuse.load(Ordering::Acquire) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect_timeout(&target, Duration::from_secs(5)) else {
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
                sh.conns.lock().push((c1, s1));
                let link = Arc::new(Link::default());
                let (sh1, l1) = (sh.clone(), link.clone());
                thread::spawn(move || pump_up(client, server, sh1, l1));
                let sh2 = sh.clone();
                thread::spawn(move || pump_down(s2, c2, sh2, link));
            }
        });
        Ok(FaultProxy { port, shared })
    }

    /// The proxy's port.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// assert!(proxy.port() > 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`, for the client to connect to.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// assert!(proxy.connect_string().starts_with("127.0.0.1:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// assert_eq!(proxy.accepted(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::Relaxed)
    }

    /// Closes every current connection.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.cut();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cut(&self) {
        for (c, s) in self.shared.conns.lock().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// While set, new connections are accepted and closed at once.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.refuse(true);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn refuse(&self, on: bool) {
        self.shared.refuse.store(on, Ordering::Release);
    }

    /// While set, nothing is forwarded in either direction (a partition);
    /// connections stay open and new ones are accepted.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.freeze(true);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn freeze(&self, on: bool) {
        self.shared.frozen.store(on, Ordering::Release);
    }

    /// Swallows the next reply (xid > 0) from the server.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.drop_next_reply();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drop_next_reply(&self) {
        self.shared.drop_next_reply.store(true, Ordering::Release);
    }

    /// While `on`, holds each reply to a request (xid > 0) until the client
    /// has sent another frame (any: a request, a ping) after that request: a
    /// server that answers only once it hears from the client again, as
    /// Apache ZooKeeper 3.8 was seen doing on an ensemble (a reply held until
    /// the server next received anything). Frames behind a held reply wait
    /// with it, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.hold_replies(true);
    /// proxy.hold_replies(false);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn hold_replies(&self, on: bool) {
        self.shared.hold_replies.store(on, Ordering::Release);
    }

    /// Loses the next request with opcode `op` on its way to the server: it
    /// is not forwarded, and that client's connection is closed at once. A
    /// request lost before the server saw it: never applied, while the client
    /// sees its connection break with the request in flight (`ConnectionLoss`,
    /// its outcome unknown to it). Not on a TLS connection.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.lose_next_request(zk_proto::OpCode::Multi);
    /// assert_eq!(proxy.lost_requests(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lose_next_request(&self, op: zk_proto::OpCode) {
        self.shared.lose_next_request.store(op as i32, Ordering::Release);
    }

    /// Holds the next request with opcode `op` at the proxy, and everything
    /// that client sends after it on that connection (in order), until
    /// [`FaultProxy::release_held`]: a request in flight for as long as a test
    /// needs (not applied, not answered), while the server goes on answering
    /// what came before it. A test waits for [`FaultProxy::held_requests`] to
    /// know the request is held. (Not on a TLS connection.)
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.hold_next_request(zk_proto::OpCode::Create2);
    /// // ... a client's create through the proxy is held: held_requests() == 1
    /// proxy.release_held();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn hold_next_request(&self, op: zk_proto::OpCode) {
        self.shared.hold.lock().op = op as i32;
    }

    /// Requests held so far (see [`FaultProxy::hold_next_request`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// assert_eq!(proxy.held_requests(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn held_requests(&self) -> usize {
        self.shared.hold.lock().held
    }

    /// Lets a held request (and what waits behind it) go on to the server,
    /// and disarms a hold not met yet.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.release_held();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn release_held(&self) {
        let mut h = self.shared.hold.lock();
        h.op = NO_OP;
        h.holding = false;
    }

    /// Requests lost on their way so far (see
    /// [`FaultProxy::lose_next_request`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// assert_eq!(proxy.lost_requests(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lost_requests(&self) -> usize {
        self.shared.lost_requests.load(Ordering::Relaxed)
    }

    /// Replies dropped so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// assert_eq!(proxy.dropped(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn dropped(&self) -> usize {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// From now on, a client's re-registered watches (the `SetWatches` or
    /// `SetWatches2` it sends after a reconnect) are held back `delay` before
    /// they go on to the server, and so is everything that client sends after
    /// them (order is kept): a slow server, as seen by that client, on any
    /// backend. The events those watches fire (a node deleted while the
    /// client was away) and the replies to its next requests come that much
    /// later. Zero turns it off. (Not on a TLS connection: its frames cannot
    /// be read.)
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.delay_set_watches(std::time::Duration::from_millis(300));
    /// assert_eq!(proxy.set_watches_delayed(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn delay_set_watches(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.shared.set_watches_delay_ms.store(ms, Ordering::Release);
    }

    /// How many `SetWatches` frames were held back so far (see
    /// [`FaultProxy::delay_set_watches`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// assert_eq!(proxy.set_watches_delayed(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_watches_delayed(&self) -> usize {
        self.shared.set_watches_delayed.load(Ordering::Relaxed)
    }

    /// Sends a frame with an invalid length to every connected client.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// let proxy = zk_testing::proxy::FaultProxy::start(&server.connect_string())?;
    /// proxy.send_garbage();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn send_garbage(&self) {
        self.shared.garbage.fetch_add(1, Ordering::AcqRel);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        {
            let _g = self.shared.stop_lock.lock();
            self.shared.stop.store(true, Ordering::Release);
            self.shared.stopped.notify_all();
        }
        self.cut();
    }
}

/// Whether a client's first bytes are not a frame: a TLS record.
fn starts_unframed(b: &[u8]) -> bool {
    b.len() >= 2 && b[0] == 0x16 && b[1] == 0x03
}

/// The opcode of a request frame (xid, opcode, body), if it has one.
fn opcode(f: &[u8]) -> Option<i32> {
    f.get(4..8).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Waits out the re-registration delay before a `SetWatches` frame goes on
/// (see [`FaultProxy::delay_set_watches`]); false when the proxy stopped.
fn delay_set_watches(sh: &Shared) -> bool {
    let ms = sh.set_watches_delay_ms.load(Ordering::Acquire);
    if ms == 0 {
        return true;
    }
    sh.set_watches_delayed.fetch_add(1, Ordering::Relaxed);
    let until = std::time::Instant::now() + Duration::from_millis(ms);
    let mut g = sh.stop_lock.lock();
    while !sh.stop.load(Ordering::Acquire) && std::time::Instant::now() < until {
        sh.stopped.wait_until(&mut g, until);
    }
    !sh.stop.load(Ordering::Acquire)
}

/// Waits until a held request is released (see
/// [`FaultProxy::hold_next_request`]); false when the proxy stopped.
fn wait_released(sh: &Shared) -> bool {
    while sh.hold.lock().holding {
        if sh.stop.load(Ordering::Acquire) {
            return false;
        }
        thread::sleep(Duration::from_millis(2));
    }
    true
}

fn wait_thawed(sh: &Shared) -> bool {
    while sh.frozen.load(Ordering::Acquire) {
        if sh.stop.load(Ordering::Acquire) {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
    true
}

/// One proxied connection's requests, as its two pumps see them.
#[derive(Default)]
struct Link {
    sent: Mutex<Sent>,
    /// Signalled when a frame was sent (a held reply waits on it).
    sent_grew: parking_lot::Condvar,
}

/// What the client has sent on one connection.
#[derive(Default)]
struct Sent {
    /// Frames so far.
    frames: usize,
    /// For each request's xid (while replies are held), `frames` once it
    /// was sent.
    at: std::collections::HashMap<i32, usize>,
}

/// Waits until the client has sent another frame after the request `xid`
/// (or the hold is lifted); `false` when the proxy stops.
fn held_until_client_sends(sh: &Shared, link: &Link, xid: i32) -> bool {
    let mut sent = link.sent.lock();
    let mark = sent.at.remove(&xid).unwrap_or(sent.frames);
    while sent.frames <= mark && sh.hold_replies.load(Ordering::Acquire) {
        if sh.stop.load(Ordering::Acquire) {
            return false;
        }
        // Woken by the next frame; the bound only lets a stop or a lifted
        // hold be seen.
        link.sent_grew.wait_for(&mut sent, POLL);
    }
    true
}

/// client → server, byte for byte.
fn pump_up(mut from: TcpStream, mut to: TcpStream, sh: Arc<Shared>, link: Arc<Link>) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut buf = vec![0u8; 64 * 1024];
    // Frames are cut (to find a SetWatches) unless the stream is TLS.
    let mut fb = FrameBuffer::new(64 * 1024 * 1024);
    let mut first = true;
    let mut raw = false;
    'outer: loop {
        if sh.stop.load(Ordering::Acquire) {
            break;
        }
        if sh.frozen.load(Ordering::Acquire) {
            // Do not even read: the client's writes pile up as in a partition.
            if !wait_thawed(&sh) {
                break;
            }
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            // TLS records are not frames: forwarded byte for byte.
            Ok(n) if raw || (first && starts_unframed(&buf[..n])) => {
                raw = true;
                if !wait_thawed(&sh) || to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Ok(n) => {
                fb.extend(&buf[..n]);
                while let Ok(Some(f)) = fb.next_frame() {
                    // The first frame is the ConnectRequest (no opcode).
                    let delay = !std::mem::take(&mut first)
                        && matches!(opcode(&f), Some(op) if op == zk_proto::OpCode::SetWatches as i32
                            || op == zk_proto::OpCode::SetWatches2 as i32);
                    if delay && !delay_set_watches(&sh) {
                        break 'outer;
                    }
                    let lose = sh.lose_next_request.load(Ordering::Acquire);
                    if lose != NO_OP
                        && opcode(&f) == Some(lose)
                        && sh
                            .lose_next_request
                            .compare_exchange(lose, NO_OP, Ordering::AcqRel, Ordering::Acquire)
                            .is_ok()
                    {
                        sh.lost_requests.fetch_add(1, Ordering::Relaxed);
                        break 'outer;
                    }
                    let held = {
                        let mut h = sh.hold.lock();
                        let now = h.op != NO_OP && opcode(&f) == Some(h.op);
                        if now {
                            h.op = NO_OP;
                            h.holding = true;
                            h.held += 1;
                        }
                        now
                    };
                    if held && !wait_released(&sh) {
                        break 'outer;
                    }
                    // Counted before it goes out: its reply may come back
                    // before this pump runs again.
                    {
                        let mut sent = link.sent.lock();
                        sent.frames += 1;
                        if f.len() >= 4 && sh.hold_replies.load(Ordering::Acquire) {
                            let n = sent.frames;
                            sent.at.insert(i32::from_be_bytes([f[0], f[1], f[2], f[3]]), n);
                        }
                    }
                    link.sent_grew.notify_all();
                    let mut out = (f.len() as i32).to_be_bytes().to_vec();
                    out.extend_from_slice(&f);
                    if !wait_thawed(&sh) || to.write_all(&out).is_err() {
                        break 'outer;
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// server → client, frame by frame (to drop a reply or inject garbage); byte for
/// byte when the server speaks TLS.
fn pump_down(mut from: TcpStream, mut to: TcpStream, sh: Arc<Shared>, link: Arc<Link>) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut buf = vec![0u8; 64 * 1024];
    let mut fb = FrameBuffer::new(64 * 1024 * 1024);
    let mut garbage_seen = sh.garbage.load(Ordering::Acquire);
    let mut first = true;
    let mut raw = false;
    'outer: loop {
        if sh.stop.load(Ordering::Acquire) {
            break;
        }
        let g = sh.garbage.load(Ordering::Acquire);
        if g != garbage_seen {
            garbage_seen = g;
            if to.write_all(&[0xff, 0xff, 0xff, 0xf0, 1, 2, 3]).is_err() {
                break;
            }
        }
        if sh.frozen.load(Ordering::Acquire) {
            if !wait_thawed(&sh) {
                break;
            }
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if raw || (first && n >= 2 && matches!(buf[0], 0x15 | 0x16) && buf[1] == 0x03) => {
                // TLS records, not frames: forwarded byte for byte (no reply can
                // be dropped from an encrypted stream).
                raw = true;
                if !wait_thawed(&sh) || to.write_all(&buf[..n]).is_err() {
                    break;
                }
                continue;
            }
            Ok(n) => fb.extend(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(_) => break,
        }
        while let Ok(Some(f)) = fb.next_frame() {
            let xid = if f.len() >= 4 {
                i32::from_be_bytes([f[0], f[1], f[2], f[3]])
            } else {
                0
            };
            if !first && xid > 0 && sh.drop_next_reply.swap(false, Ordering::AcqRel) {
                sh.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if !first && xid > 0 && sh.hold_replies.load(Ordering::Acquire) && !held_until_client_sends(&sh, &link, xid)
            {
                break 'outer;
            }
            first = false;
            let mut out = (f.len() as i32).to_be_bytes().to_vec();
            out.extend_from_slice(&f);
            if !wait_thawed(&sh) || to.write_all(&out).is_err() {
                break 'outer;
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
