//! A TCP fault proxy on loopback. Put it between one client and a server (the
//! embedded one or real ZooKeeper) to inject network faults on any backend: cut
//! that client's connections, refuse new ones, freeze its traffic (a partition
//! without resets: the server lives on and expires the session on its own
//! clock), drop one reply, or send the client garbage. TLS traffic (a server that
//! answers with TLS records) is forwarded byte for byte: every fault but dropping a
//! reply works on it.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use parking_lot::Mutex;
use zk_proto::frame::FrameBuffer;

const POLL: Duration = Duration::from_millis(20);

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    refuse: AtomicBool,
    frozen: AtomicBool,
    drop_next_reply: AtomicBool,
    dropped: AtomicUsize,
    /// Bumped to ask every server→client pump to send a garbage frame.
    garbage: AtomicUsize,
    accepted: AtomicUsize,
    conns: Mutex<Vec<(TcpStream, TcpStream)>>,
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
        let shared = Arc::new(Shared::default());
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
                let sh1 = sh.clone();
                thread::spawn(move || pump_up(client, server, sh1));
                let sh2 = sh.clone();
                thread::spawn(move || pump_down(s2, c2, sh2));
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
        self.shared.stop.store(true, Ordering::Release);
        self.cut();
    }
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

/// client → server, byte for byte.
fn pump_up(mut from: TcpStream, mut to: TcpStream, sh: Arc<Shared>) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
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
            Ok(n) => {
                if !wait_thawed(&sh) || to.write_all(&buf[..n]).is_err() {
                    break;
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
fn pump_down(mut from: TcpStream, mut to: TcpStream, sh: Arc<Shared>) {
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
