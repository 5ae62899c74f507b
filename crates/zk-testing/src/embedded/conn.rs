//! Outbound connection state: the queue a writer thread drains ([`ConnShared`]) and
//! what the server knows about each registered connection ([`ConnEntry`]). Imports
//! only `clock` and `stats`; the reader loop that feeds requests in is in `server`.

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use zk_proto::Id;

use super::clock::now_ms;
use super::stats::Latency;

/// A connection id.
pub(crate) type ConnId = u64;

/// A write that blocks this long (the client stopped reading) ends the connection.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Default)]
struct Outbound {
    buf: Vec<u8>,
    close: bool,
    abort: bool,
}

/// The parts of a connection that other threads touch.
#[derive(Debug)]
pub(crate) struct ConnShared {
    pub id: ConnId,
    stream: TcpStream,
    out: Mutex<Outbound>,
    cv: Condvar,
    closing: AtomicBool,
    flushed: Mutex<Option<Instant>>,
}

impl ConnShared {
    pub fn new(id: ConnId, stream: TcpStream) -> ConnShared {
        ConnShared {
            id,
            stream,
            out: Mutex::new(Outbound::default()),
            cv: Condvar::new(),
            closing: AtomicBool::new(false),
            flushed: Mutex::new(None),
        }
    }

    /// Queues bytes for the writer. False once the connection is closing.
    pub fn send(&self, bytes: &[u8]) -> bool {
        let mut o = self.out.lock();
        if o.close || o.abort {
            return false;
        }
        let was_empty = o.buf.is_empty();
        o.buf.extend_from_slice(bytes);
        if was_empty {
            self.cv.notify_one();
        }
        true
    }

    /// Graceful close: nothing more is queued or processed; what is queued is flushed,
    /// then the write side is shut down.
    pub fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let mut o = self.out.lock();
        if !o.close {
            o.close = true;
            self.cv.notify_one();
        }
    }

    /// Immediate close: the socket is shut down in both directions.
    pub fn abort(&self) {
        self.closing.store(true, Ordering::SeqCst);
        {
            let mut o = self.out.lock();
            o.abort = true;
            o.close = true;
            self.cv.notify_one();
        }
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Takes what is queued and not yet written (the in-memory replay,
    /// `embedded::replay`, which runs no writer thread, reads the replies so).
    pub fn take_queued(&self) -> Vec<u8> {
        std::mem::take(&mut self.out.lock().buf)
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// When the writer finished (flushed and shut down its side), if it has.
    pub fn flushed_at(&self) -> Option<Instant> {
        *self.flushed.lock()
    }

    fn mark_flushed(&self) {
        *self.flushed.lock() = Some(Instant::now());
    }
}

/// The TLS state of a connection, shared by its reader and writer (`None` for
/// plain TCP).
pub(crate) type Tls = Option<Arc<Mutex<rustls::ServerConnection>>>;

/// Encrypts `plain` (nothing for a plain connection: `plain` is what goes out)
/// and, when `close` is set, adds a TLS close_notify.
fn seal<'a>(tls: &Tls, plain: &'a [u8], close: bool, out: &'a mut Vec<u8>) -> std::io::Result<&'a [u8]> {
    let Some(t) = tls else { return Ok(plain) };
    out.clear();
    let mut c = t.lock();
    if !plain.is_empty() {
        c.writer().write_all(plain)?;
    }
    if close {
        c.send_close_notify();
    }
    while c.wants_write() {
        c.write_tls(out)?;
    }
    Ok(out)
}

/// Drains the outbound queue, batching everything queued into one write
/// (encrypted first on a TLS connection).
pub(crate) fn writer_main(conn: Arc<ConnShared>, mut stream: TcpStream, tls: Tls) {
    let mut sealed = Vec::new();
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let mut batch = Vec::new();
    loop {
        let close;
        {
            let mut o = conn.out.lock();
            while o.buf.is_empty() && !o.close && !o.abort {
                conn.cv.wait(&mut o);
            }
            if o.abort {
                break;
            }
            std::mem::swap(&mut o.buf, &mut batch);
            close = o.close;
        }
        if !batch.is_empty() || (close && tls.is_some()) {
            let written = seal(&tls, &batch, close, &mut sealed).and_then(|b| stream.write_all(b));
            if let Err(e) = written {
                log::debug!("embedded zk: conn {} write failed: {e}", conn.id);
                let _ = stream.shutdown(Shutdown::Both);
                conn.closing.store(true, Ordering::SeqCst);
                break;
            }
            batch.clear();
            if batch.capacity() > 1 << 20 {
                batch = Vec::new();
            }
        }
        if close {
            let _ = stream.flush();
            let _ = stream.shutdown(Shutdown::Write);
            break;
        }
    }
    conn.mark_flushed();
}

/// A connection's SASL exchange (DIGEST-MD5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SaslStage {
    /// Not begun.
    None,
    /// The challenge with this nonce was sent.
    Challenged(String),
    /// Authenticated.
    Done,
}

/// A registered TCP connection.
#[derive(Debug)]
pub(crate) struct ConnEntry {
    pub shared: Arc<ConnShared>,
    pub peer: SocketAddr,
    pub session: Option<i64>,
    pub ids: Vec<Id>,
    /// Where the connection's SASL exchange is.
    pub sasl: SaslStage,
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
            sasl: SaslStage::None,
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
