//! Threads: the acceptor, one reader + one writer per connection, and the ticker that
//! expires sessions, sweeps containers and ends timed pauses. The reader cuts frames
//! and hands them to the handlers in `ops` (or to `fourlw`) under the state lock.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use zk_proto::frame::{four_letter_word, FrameBuffer};
use zk_proto::Id;

use super::conn::{writer_main, ConnEntry, ConnShared, Tls};
use super::fourlw;
use super::state::State;

/// How long the reader blocks in one `read` before it re-checks its flags.
const READ_POLL: Duration = Duration::from_millis(200);
/// Connections that do not finish the handshake in this time are closed.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// After a graceful close is flushed, how long to keep reading (and discarding) so that
/// unread client bytes do not turn the close into an RST that eats the last reply.
const LINGER: Duration = Duration::from_millis(1000);
/// Upper bound on the whole closing phase.
const MAX_CLOSING: Duration = Duration::from_secs(5);

/// State shared by every thread of one server.
#[derive(Debug)]
pub(crate) struct Shared {
    pub state: Mutex<State>,
    /// Wakes readers waiting out a pause.
    pub pause_cv: Condvar,
    /// Wakes the ticker.
    pub ticker_cv: Condvar,
    /// Connection threads, joined on stop.
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    pub max_frame: usize,
    /// TLS settings: every connection speaks TLS when set.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Shared {
    /// Waits while the server is paused. False if the connection closed meanwhile.
    fn wait_unpaused(&self, st: &mut parking_lot::MutexGuard<'_, State>, conn: &ConnShared) -> bool {
        while st.paused && !st.shutdown && !conn.is_closing() {
            self.pause_cv.wait_for(st, Duration::from_millis(200));
        }
        !conn.is_closing()
    }

    /// Processes one frame; returns whether the connection is established afterwards.
    pub fn process(&self, conn: &ConnShared, f: &[u8], established: bool) -> bool {
        let mut st = self.state.lock();
        if !self.wait_unpaused(&mut st, conn) {
            return established;
        }
        if established && is_set_watches(f) && !self.wait_set_watches_delay(&mut st, conn) {
            return established;
        }
        let now = Instant::now();
        if established {
            st.handle_request(conn.id, f, now);
            true
        } else {
            st.handle_connect(conn.id, f, now)
        }
    }

    /// Waits out the configured delay of re-registered watches (a slow
    /// server: this connection's later requests wait behind it). False if the
    /// connection closed meanwhile.
    fn wait_set_watches_delay(&self, st: &mut parking_lot::MutexGuard<'_, State>, conn: &ConnShared) -> bool {
        let delay = st.cfg.set_watches_delay;
        if delay.is_zero() {
            return true;
        }
        log::debug!("embedded zk: conn {}: SetWatches delayed {delay:?}", conn.id);
        let until = Instant::now() + delay;
        while Instant::now() < until && !st.shutdown && !conn.is_closing() {
            // The pause condvar: woken by a resume, a stop, or the time.
            self.pause_cv.wait_until(st, until);
        }
        self.wait_unpaused(st, conn)
    }

    /// Answers a four-letter word and closes the connection.
    pub fn four_letter_word(&self, conn: &ConnShared, word: &str) {
        let mut st = self.state.lock();
        if !self.wait_unpaused(&mut st, conn) {
            return;
        }
        st.stats.received += 1;
        if let Some(e) = st.conns.get_mut(&conn.id) {
            e.recved += 1;
        }
        let text = fourlw::answer(&mut st, word, conn.id);
        log::debug!("embedded zk: conn {}: four-letter word {word}", conn.id);
        conn.send(text.as_bytes());
        st.close_conn(conn.id);
    }
}

/// Whether a request frame (xid, opcode, body) is a re-registration of
/// watches (`SetWatches`, `SetWatches2`).
fn is_set_watches(f: &[u8]) -> bool {
    let op = f.get(4..8).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    op.is_some_and(|op| op == zk_proto::OpCode::SetWatches as i32 || op == zk_proto::OpCode::SetWatches2 as i32)
}

/// Registers an accepted connection and spawns its thread.
fn spawn_conn(shared: &Arc<Shared>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let (Ok(peer), Ok(writer), Ok(ctl)) = (stream.peer_addr(), stream.try_clone(), stream.try_clone()) else {
        return;
    };
    let conn = {
        let mut st = shared.state.lock();
        if !st.listening || st.shutdown {
            return;
        }
        let id = st.next_conn;
        st.next_conn += 1;
        st.stats.accepted += 1;
        let conn = Arc::new(ConnShared::new(id, ctl));
        st.conns.insert(id, ConnEntry::new(conn.clone(), peer));
        conn
    };
    log::debug!("embedded zk: conn {} accepted from {peer}", conn.id);
    let id = conn.id;
    let sh = shared.clone();
    let spawned = thread::Builder::new()
        .name(format!("zk-embedded-c{id}"))
        .spawn(move || conn_main(sh, conn, stream, writer));
    match spawned {
        Ok(h) => {
            let mut threads = shared.threads.lock();
            threads.retain(|t| !t.is_finished());
            threads.push(h);
        }
        Err(e) => {
            log::warn!("embedded zk: cannot spawn a connection thread: {e}");
            let mut st = shared.state.lock();
            if let Some(e) = st.conns.get(&id) {
                e.shared.abort();
            }
            st.remove_conn(id);
        }
    }
}

/// Accepts until the server stops listening.
pub(crate) fn spawn_acceptor(shared: Arc<Shared>, listener: TcpListener) -> std::io::Result<JoinHandle<()>> {
    thread::Builder::new().name("zk-embedded-accept".into()).spawn(move || {
        for s in listener.incoming() {
            {
                let st = shared.state.lock();
                if !st.listening || st.shutdown {
                    break;
                }
            }
            match s {
                Ok(stream) => spawn_conn(&shared, stream),
                Err(e) => {
                    log::debug!("embedded zk: accept failed: {e}");
                    thread::sleep(Duration::from_millis(5));
                }
            }
        }
    })
}

/// Unblocks a blocking `accept` by connecting to it.
pub(crate) fn wake_acceptor(addr: SocketAddr) {
    let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
}

/// Expires sessions at each tick boundary, sweeps containers, ends timed pauses.
pub(crate) fn spawn_ticker(shared: Arc<Shared>, sweep_every: Duration) -> std::io::Result<JoinHandle<()>> {
    let sweep_every = sweep_every.max(Duration::from_millis(1));
    thread::Builder::new().name("zk-embedded-tick".into()).spawn(move || {
        let mut st = shared.state.lock();
        let mut next_sweep = Instant::now() + sweep_every;
        loop {
            if st.shutdown {
                break;
            }
            let now = Instant::now();
            if st.pause_until.is_some_and(|u| now >= u) {
                st.resume(now);
                shared.pause_cv.notify_all();
            }
            let active = st.listening && !st.paused;
            if active {
                st.expire_due(now);
            }
            if now >= next_sweep {
                if active {
                    st.sweep();
                }
                next_sweep = now + sweep_every;
            }
            let mut wake = st.clock.next_boundary(now).min(next_sweep);
            if let Some(u) = st.pause_until {
                wake = wake.min(u);
            }
            shared.ticker_cv.wait_until(&mut st, wake);
        }
    })
}

/// The connection thread: spawns the writer, reads frames until the connection ends,
/// then unregisters the connection and joins the writer.
fn conn_main(shared: Arc<Shared>, conn: Arc<ConnShared>, stream: TcpStream, writer_stream: TcpStream) {
    let tls: Tls = match &shared.tls {
        None => None,
        Some(config) => match tls_handshake(config, &conn, &stream) {
            Ok(t) => {
                if !add_x509_identity(&shared, &conn, &t) {
                    shared.state.lock().remove_conn(conn.id);
                    conn.abort();
                    return;
                }
                Some(Arc::new(Mutex::new(t)))
            }
            Err(e) => {
                log::debug!("embedded zk: conn {}: TLS handshake failed: {e}", conn.id);
                shared.state.lock().remove_conn(conn.id);
                conn.abort();
                return;
            }
        },
    };
    let wconn = conn.clone();
    let wtls = tls.clone();
    let writer = thread::Builder::new()
        .name(format!("zk-embedded-w{}", conn.id))
        .spawn(move || writer_main(wconn, writer_stream, wtls));
    let writer = match writer {
        Ok(w) => w,
        Err(e) => {
            log::warn!("embedded zk: cannot spawn a writer thread: {e}");
            shared.state.lock().remove_conn(conn.id);
            conn.abort();
            return;
        }
    };
    reader_loop(&shared, &conn, stream, &tls);
    shared.state.lock().remove_conn(conn.id);
    conn.close();
    let _ = writer.join();
    log::debug!("embedded zk: conn {} finished", conn.id);
}

/// The server side of a TLS handshake, bounded by the handshake timeout. A
/// failure's alert is sent before the error is returned.
fn tls_handshake(
    config: &Arc<rustls::ServerConfig>,
    conn: &ConnShared,
    mut stream: &TcpStream,
) -> std::io::Result<rustls::ServerConnection> {
    let mut tls = rustls::ServerConnection::new(config.clone()).map_err(std::io::Error::other)?;
    // A reply may be bigger than rustls' default 64 KiB buffer: encrypt it whole.
    tls.set_buffer_limit(None);
    let _ = stream.set_read_timeout(Some(READ_POLL));
    let started = Instant::now();
    while tls.is_handshaking() {
        if conn.is_closing() || started.elapsed() >= HANDSHAKE_TIMEOUT {
            return Err(std::io::Error::new(ErrorKind::TimedOut, "no TLS handshake in time"));
        }
        match tls.complete_io(&mut stream) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    while tls.wants_write() {
        tls.write_tls(&mut stream)?;
    }
    Ok(tls)
}

/// NettyServerCnxnFactory's CertificateVerifier with X509AuthenticationProvider:
/// when the `x509` scheme is registered and the client presented a (verified)
/// certificate, its subject becomes the connection's `x509` identity (and
/// `super` too for the configured super user). False when the subject cannot be
/// read (ZooKeeper's "Authentication failed": the connection is closed).
fn add_x509_identity(shared: &Shared, conn: &ConnShared, tls: &rustls::ServerConnection) -> bool {
    let Some(cert) = tls.peer_certificates().and_then(|c| c.first()) else {
        return true;
    };
    let mut st = shared.state.lock();
    if !st.cfg.x509_auth {
        return true;
    }
    let Some(subject) = zk_proto::x509::subject_id(cert.as_ref()) else {
        log::warn!(
            "embedded zk: conn {}: cannot read the client certificate's subject",
            conn.id
        );
        return false;
    };
    log::debug!("embedded zk: conn {}: x509 identity {subject:?}", conn.id);
    let is_super = st.cfg.x509_super_user.as_deref() == Some(subject.as_str());
    if let Some(e) = st.conns.get_mut(&conn.id) {
        if is_super {
            e.ids.push(Id {
                scheme: "super".into(),
                id: subject.clone(),
            });
        }
        e.ids.push(Id {
            scheme: "x509".into(),
            id: subject,
        });
    }
    true
}

/// Feeds raw bytes to a TLS connection and appends the plaintext to `fb`. On a
/// TLS error the alert is sent and the error returned; `Ok(false)` when the
/// client sent close_notify.
fn unseal(
    t: &Mutex<rustls::ServerConnection>,
    mut raw: &[u8],
    fb: &mut FrameBuffer,
    mut stream: &TcpStream,
) -> std::io::Result<bool> {
    let mut plain = [0u8; 16 * 1024];
    let mut c = t.lock();
    loop {
        if !raw.is_empty() {
            c.read_tls(&mut raw)?;
        }
        let state = match c.process_new_packets() {
            Ok(s) => s,
            Err(e) => {
                let mut alert = Vec::new();
                let _ = c.write_tls(&mut alert);
                drop(c);
                let _ = stream.write_all(&alert);
                return Err(std::io::Error::new(ErrorKind::InvalidData, e));
            }
        };
        let closed = state.peer_has_closed();
        loop {
            match c.reader().read(&mut plain) {
                Ok(0) => return Ok(false),
                Ok(k) => fb.extend(&plain[..k]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if closed {
            return Ok(false);
        }
        if raw.is_empty() {
            return Ok(true);
        }
    }
}

fn reader_loop(shared: &Arc<Shared>, conn: &Arc<ConnShared>, mut stream: TcpStream, tls: &Tls) {
    let _ = stream.set_read_timeout(Some(READ_POLL));
    let mut fb = FrameBuffer::new(shared.max_frame);
    let mut established = false;
    let mut first = true;
    let started = Instant::now();
    let mut closing_since: Option<Instant> = None;
    let mut buf = vec![0u8; 64 * 1024];
    let mut primed = tls.is_some();
    loop {
        if conn.is_closing() {
            let since = *closing_since.get_or_insert_with(Instant::now);
            if conn.flushed_at().is_some_and(|f| f.elapsed() >= LINGER) || since.elapsed() >= MAX_CLOSING {
                return;
            }
        } else if !established && started.elapsed() >= HANDSHAKE_TIMEOUT {
            let mut st = shared.state.lock();
            if !st.paused {
                log::debug!("embedded zk: conn {} did not finish the handshake in time", conn.id);
                st.close_conn(conn.id);
            }
        }
        // Plaintext that came with the end of the TLS handshake is processed
        // before the first read.
        let read: std::io::Result<usize> = if std::mem::take(&mut primed) {
            Ok(usize::MAX)
        } else {
            stream.read(&mut buf)
        };
        match read {
            Ok(0) => return,
            Ok(n) => {
                if conn.is_closing() {
                    continue;
                }
                let raw = if n == usize::MAX { &buf[..0] } else { &buf[..n] };
                match tls {
                    None => fb.extend(raw),
                    Some(t) => match unseal(t, raw, &mut fb, &stream) {
                        Ok(true) => {}
                        Ok(false) => return,
                        Err(e) => {
                            log::debug!("embedded zk: conn {}: TLS: {e}", conn.id);
                            return;
                        }
                    },
                }
                if first {
                    let Some(w) = fb.peek4() else { continue };
                    first = false;
                    if let Some(word) = four_letter_word(w) {
                        shared.four_letter_word(conn, word);
                        continue;
                    }
                }
                loop {
                    match fb.next_frame() {
                        Ok(Some(f)) => {
                            established = shared.process(conn, &f, established);
                            if conn.is_closing() {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            log::debug!("embedded zk: conn {}: {e}; closing", conn.id);
                            shared.state.lock().close_conn(conn.id);
                            break;
                        }
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                log::debug!("embedded zk: conn {} read error: {e}", conn.id);
                return;
            }
        }
    }
}
