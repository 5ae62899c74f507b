//! Per-connection plumbing: the outbound queue drained by a writer thread, and the
//! reader loop that cuts frames and hands them to the state machine.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use zk_proto::frame::{four_letter_word, FrameBuffer};

use super::server::Shared;
use super::watch::ConnId;

/// How long the reader blocks in one `read` before it re-checks its flags.
const READ_POLL: Duration = Duration::from_millis(200);
/// Connections that do not finish the handshake in this time are closed.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// After a graceful close is flushed, how long to keep reading (and discarding) so that
/// unread client bytes do not turn the close into an RST that eats the last reply.
const LINGER: Duration = Duration::from_millis(1000);
/// Upper bound on the whole closing phase.
const MAX_CLOSING: Duration = Duration::from_secs(5);
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

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    fn flushed_at(&self) -> Option<Instant> {
        *self.flushed.lock()
    }

    fn mark_flushed(&self) {
        *self.flushed.lock() = Some(Instant::now());
    }
}

/// Drains the outbound queue, batching everything queued into one write.
fn writer_main(conn: Arc<ConnShared>, mut stream: TcpStream) {
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
        if !batch.is_empty() {
            if let Err(e) = stream.write_all(&batch) {
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

/// The connection thread: spawns the writer, reads frames until the connection ends,
/// then unregisters the connection and joins the writer.
pub(crate) fn conn_main(shared: Arc<Shared>, conn: Arc<ConnShared>, stream: TcpStream, writer_stream: TcpStream) {
    let wconn = conn.clone();
    let writer = thread::Builder::new()
        .name(format!("zk-embedded-w{}", conn.id))
        .spawn(move || writer_main(wconn, writer_stream));
    let writer = match writer {
        Ok(w) => w,
        Err(e) => {
            log::warn!("embedded zk: cannot spawn a writer thread: {e}");
            shared.state.lock().remove_conn(conn.id);
            conn.abort();
            return;
        }
    };
    reader_loop(&shared, &conn, stream);
    shared.state.lock().remove_conn(conn.id);
    conn.close();
    let _ = writer.join();
    log::debug!("embedded zk: conn {} finished", conn.id);
}

fn reader_loop(shared: &Arc<Shared>, conn: &Arc<ConnShared>, mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(READ_POLL));
    let mut fb = FrameBuffer::new(shared.max_frame);
    let mut established = false;
    let mut first = true;
    let started = Instant::now();
    let mut closing_since: Option<Instant> = None;
    let mut buf = vec![0u8; 64 * 1024];
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
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if conn.is_closing() {
                    continue;
                }
                fb.extend(&buf[..n]);
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
