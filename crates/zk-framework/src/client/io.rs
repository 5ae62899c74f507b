//! The I/O thread: connects (host rotation, connect timeouts, backoff), does the
//! handshake, re-sends auth and watches, reads and dispatches replies, pings, and
//! detects dead connections with the read timeout.

use std::io::ErrorKind;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use backoff::backoff::Backoff;
use backoff::ExponentialBackoff;

use super::connect_string::HostPort;
use super::inner::{read_timeout_of, Inner, Pending, Stop};
use super::tls::{self, tls_error_of, HandshakeError, Transport};
use super::types::{ClientState, SessionEvent};
use super::watches::batch_request;
use crate::error::{SaslError, SaslErrorKind, TlsError, TlsErrorKind};
use zk_proto::frame::{frame, request_frame, FrameBuffer};
use zk_proto::jute::{Decode, Encode, Reader};
use zk_proto::sasl::SaslToken;
use zk_proto::{xid, AuthPacket, ConnectRequest, ConnectResponse, ErrorCode, KeeperState, OpCode, ReplyHeader};

/// First pause after a full round of failed attempts.
const BACKOFF_INITIAL: Duration = Duration::from_millis(100);
/// Longest pause between rounds of failed attempts.
pub(super) const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// A connection that lived at least this long resets the backoff.
const STABLE: Duration = Duration::from_secs(1);
/// Extra room over `max_frame` for incoming frames (headers and Stats around
/// data that is at the limit).
pub(super) const INCOMING_SLACK: usize = 64 * 1024;
/// Size of the read buffer.
const READ_BUF: usize = 64 * 1024;

/// A connection that finished its handshake.
struct Conn {
    stream: Transport,
    fb: FrameBuffer,
    gen: u64,
}

enum Attempt {
    Established(Conn),
    Failed(String),
    Terminal,
}

/// Why one connection attempt failed: a reason for the log, and the TLS error
/// when TLS is why.
struct Fail {
    reason: String,
    tls: Option<TlsError>,
    sasl: Option<SaslError>,
}

impl From<String> for Fail {
    fn from(reason: String) -> Fail {
        Fail {
            reason,
            tls: None,
            sasl: None,
        }
    }
}

impl From<&str> for Fail {
    fn from(reason: &str) -> Fail {
        Fail::from(reason.to_string())
    }
}

impl From<TlsError> for Fail {
    fn from(e: TlsError) -> Fail {
        Fail {
            reason: format!("TLS: {e}"),
            tls: Some(e),
            sasl: None,
        }
    }
}

impl From<SaslError> for Fail {
    fn from(e: SaslError) -> Fail {
        Fail {
            reason: format!("SASL: {e}"),
            tls: None,
            sasl: Some(e),
        }
    }
}

/// A failed handshake read or write: the TLS error inside it if there is one.
fn io_fail(what: &str, e: &std::io::Error) -> Fail {
    match tls_error_of(e) {
        Some(t) => Fail::from(t),
        None => Fail::from(format!("{what}: {e}")),
    }
}

/// The I/O thread's body.
pub(super) fn io_main(inner: Arc<Inner>) {
    let mut failures = 0usize;
    let mut refused_in_a_row = 0usize;
    let mut sasl_refused_in_a_row = 0usize;
    let mut backoff = ExponentialBackoff {
        current_interval: BACKOFF_INITIAL,
        initial_interval: BACKOFF_INITIAL,
        randomization_factor: 0.2,
        multiplier: 2.0,
        max_interval: BACKOFF_MAX,
        max_elapsed_time: None,
        ..ExponentialBackoff::default()
    };
    backoff.reset();
    let mut buf = vec![0u8; READ_BUF];
    loop {
        if inner.is_closing() || inner.core.lock().state.is_terminal() {
            break;
        }
        // The list may change (`Client::update_server_list`): its size now.
        let n = inner.hosts.lock().len().max(1);
        if failures > 0 && failures % n == 0 {
            let pause = backoff.next_backoff().unwrap_or(BACKOFF_MAX).min(BACKOFF_MAX);
            log::debug!("all {n} server(s) failed; next round in {pause:?}");
            let _ = inner.wake_rx.recv_timeout(pause);
            if inner.is_closing() {
                break;
            }
        }
        let host = inner.hosts.lock().next();
        let host = &host;
        match connect_host(&inner, host, &mut buf) {
            Attempt::Failed(reason) => {
                log::debug!("connecting to {host} failed: {reason}");
                *inner.last_connect_failure.lock() = Some(reason);
                failures += 1;
                // A refusal that no retry can mend, from every server in a row:
                // callers are told at once instead of at their timeout.
                let tls = inner.last_tls_error.lock().clone();
                match tls.filter(|t| t.kind().is_certain()) {
                    Some(t) => {
                        refused_in_a_row += 1;
                        if refused_in_a_row >= n {
                            *inner.certain_refusal.lock() = Some(t);
                            let _core = inner.core.lock();
                            inner.cond.notify_all();
                        }
                    }
                    None => refused_in_a_row = 0,
                }
                // A SASL refusal no retry mends (wrong credentials, a server
                // without SASL or with another mechanism), from every server
                // in a row: the client ends rather than reconnect forever.
                let sasl = inner.last_sasl_error.lock().clone();
                match sasl.filter(|e| e.kind().is_certain()) {
                    Some(e) => {
                        sasl_refused_in_a_row += 1;
                        if sasl_refused_in_a_row >= n {
                            log::error!("every server refused SASL authentication ({e}): the client is closed");
                            inner.end_in_sasl_failure(e);
                            break;
                        }
                    }
                    None => sasl_refused_in_a_row = 0,
                }
            }
            Attempt::Terminal => break,
            Attempt::Established(conn) => {
                refused_in_a_row = 0;
                sasl_refused_in_a_row = 0;
                *inner.last_sasl_error.lock() = None;
                *inner.last_connect_failure.lock() = None;
                *inner.certain_refusal.lock() = None;
                let started = Instant::now();
                match run(&inner, conn, &mut buf) {
                    Stop::Terminal => break,
                    Stop::Broken(_) => {
                        if started.elapsed() >= STABLE {
                            failures = 0;
                            backoff.reset();
                        } else {
                            failures += 1;
                        }
                    }
                }
            }
        }
    }
    log::debug!("zk io thread exits");
}

/// Tries every address of `host` once.
fn connect_host(inner: &Arc<Inner>, host: &HostPort, buf: &mut [u8]) -> Attempt {
    let addrs = match host.resolve() {
        Ok(a) if !a.is_empty() => a,
        Ok(_) => return Attempt::Failed("no address".into()),
        Err(e) => return Attempt::Failed(format!("cannot resolve: {e}")),
    };
    let mut last = String::new();
    for addr in addrs {
        if inner.is_closing() {
            return Attempt::Terminal;
        }
        inner.attempts.fetch_add(1, Ordering::Relaxed);
        let timeout = inner.attempt_timeout();
        let deadline = Instant::now() + timeout;
        let stream = match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => s,
            Err(e) => {
                last = format!("{addr}: {e}");
                *inner.last_tls_error.lock() = None;
                *inner.last_sasl_error.lock() = None;
                continue;
            }
        };
        let transport = match &inner.tls {
            None => Ok(Transport::Plain(stream)),
            Some(config) => match tls::handshake(config, &host.host, stream, deadline) {
                Ok(t) => Ok(t),
                Err(HandshakeError::Tls(e)) => Err(Fail::from(e)),
                Err(HandshakeError::Io(e)) => Err(Fail::from(format!("TLS handshake: {e}"))),
            },
        };
        let result = transport.and_then(|t| handshake(inner, (host, addr), t, deadline, buf));
        match result {
            Ok(a) => {
                *inner.last_tls_error.lock() = None;
                *inner.last_sasl_error.lock() = None;
                return a;
            }
            Err(mut f) => {
                if let Some(config) = &inner.tls {
                    f.tls = f.tls.map(|t| config.refine(t));
                }
                if let Some(t) = &f.tls {
                    log::warn!("connecting to {addr}: TLS: {t}");
                }
                if let Some(e) = &f.sasl {
                    log::warn!("connecting to {addr}: SASL: {e}");
                    crate::metrics::sasl_failed(e.kind());
                }
                last = format!("{addr}: {}", f.reason);
                *inner.last_tls_error.lock() = f.tls;
                *inner.last_sasl_error.lock() = f.sasl;
            }
        }
    }
    Attempt::Failed(last)
}

fn remaining(deadline: Instant) -> Result<Duration, Fail> {
    let now = Instant::now();
    if now >= deadline {
        Err("handshake timed out".into())
    } else {
        Ok((deadline - now).max(Duration::from_millis(1)))
    }
}

/// Sends the ConnectRequest and reads the ConnectResponse before `deadline`.
fn handshake(
    inner: &Arc<Inner>,
    server: (&HostPort, std::net::SocketAddr),
    stream: Transport,
    deadline: Instant,
    buf: &mut [u8],
) -> Result<Attempt, Fail> {
    let _ = stream.socket().set_nodelay(true);
    let req = {
        let core = inner.core.lock();
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: core.last_zxid,
            timeout: inner.requested_timeout_ms,
            session_id: core.session_id,
            passwd: core.password.clone(),
            read_only: Some(inner.read_only),
        }
    };
    let bytes = frame(|out| req.encode(out));
    let sent_ms = inner.now_ms();
    stream
        .socket()
        .set_write_timeout(Some(remaining(deadline)?))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(&bytes)
        .map_err(|e| io_fail("sending the handshake", &e))?;
    let mut fb = FrameBuffer::new(inner.max_frame.saturating_add(INCOMING_SLACK));
    let first = read_frame(&stream, &mut fb, deadline, buf, "the handshake")?;
    let resp = ConnectResponse::decode(&mut Reader::new(&first))
        .map_err(|e| Fail::from(format!("garbage ConnectResponse: {e}")))?;
    inner.touch_recv();
    if resp.timeout > 0 {
        if let Some(sasl) = &inner.sasl {
            if let Err(f) = authenticate(inner, sasl, &server.0.host, &stream, &mut fb, deadline, buf) {
                remember_session(inner, &resp);
                stream.shutdown();
                return Err(f);
            }
        }
    }
    // A new connection: what was known before it is to be proven again. The
    // epoch moves on before its answer makes the session's health confirmed
    // and before the client reports itself connected on it.
    inner.next_epoch();
    inner.confirm(sent_ms);
    establish(inner, server, stream, fb, resp)
}

/// Reads one frame before `deadline` (`what` names it in errors).
fn read_frame(
    stream: &Transport,
    fb: &mut FrameBuffer,
    deadline: Instant,
    buf: &mut [u8],
    what: &str,
) -> Result<Vec<u8>, Fail> {
    loop {
        match fb.next_frame() {
            Ok(Some(f)) => return Ok(f),
            Ok(None) => {}
            Err(e) => {
                if matches!(stream, Transport::Plain(_)) && fb.peek4().is_some_and(|w| is_tls_record(&w)) {
                    return Err(Fail::from(TlsError::new(
                        TlsErrorKind::ProtocolMismatch,
                        "the server answered with TLS: this port needs a TLS client (ClientConfig::with_tls)",
                    )));
                }
                return Err(format!("garbage reply in {what}: {e}").into());
            }
        }
        stream
            .socket()
            .set_read_timeout(Some(remaining(deadline)?))
            .map_err(|e| e.to_string())?;
        match stream.read_into(buf, fb) {
            Ok(0) => return Err(format!("the server closed the connection during {what}").into()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(io_fail(&format!("reading {what}"), &e)),
        }
    }
}

/// A new session whose connection failed before it was established (in
/// SASL): the next attempt resumes it rather than leave it to expire on the
/// server beside a new one.
fn remember_session(inner: &Inner, resp: &ConnectResponse) {
    let mut core = inner.core.lock();
    if core.session_id == 0 && resp.session_id != 0 {
        core.session_id = resp.session_id;
        core.password = resp.passwd.clone();
    }
}

/// Runs the SASL exchange on a connection right after its ConnectResponse,
/// before anything else is sent on it (ZooKeeper's opcode 102: a token in an
/// ordinary request, the server's token in the reply). A refusal (-115,
/// -124) or a null first token is a SASL error; the server closes the
/// connection after a refusal.
fn authenticate(
    inner: &Inner,
    sasl: &super::sasl::SaslConfig,
    host: &str,
    stream: &Transport,
    fb: &mut FrameBuffer,
    deadline: Instant,
    buf: &mut [u8],
) -> Result<(), Fail> {
    let mut mech = sasl.start(host, &inner.kdc_waiters).map_err(Fail::from)?;
    mech.set_deadline(deadline);
    let name = mech.name();
    let mut token = mech.initial().map_err(Fail::from)?;
    let mut round = 0u32;
    loop {
        // Sixteen rounds is far more than any mechanism takes (DIGEST-MD5
        // two, GSSAPI three or four).
        if round == 16 {
            return Err(SaslError::new(SaslErrorKind::Protocol, name, "the exchange did not end in 16 rounds").into());
        }
        let x = {
            let mut wire = inner.wire.lock();
            wire.next_xid()
        };
        let bytes = request_frame(x, OpCode::Sasl, Some(&SaslToken { token: Some(token) }));
        stream
            .socket()
            .set_write_timeout(Some(remaining(deadline)?))
            .map_err(|e| e.to_string())?;
        stream
            .write_all(&bytes)
            .map_err(|e| io_fail("sending a SASL token", &e))?;
        let reply = loop {
            let f = read_frame(stream, fb, deadline, buf, "the SASL exchange")?;
            let mut r = Reader::new(&f);
            let h = ReplyHeader::decode(&mut r).map_err(|e| Fail::from(format!("garbage SASL reply header: {e}")))?;
            if h.xid == xid::NOTIFICATION {
                continue;
            }
            if h.xid != x {
                return Err(format!("a reply to xid {} during the SASL exchange (expected {x})", h.xid).into());
            }
            if h.err == ErrorCode::AuthFailed.code() || h.err == ErrorCode::SessionClosedRequireSaslAuth.code() {
                let who = sasl.user().map_or(String::new(), |u| format!(" as {u:?}"));
                return Err(SaslError::new(
                    SaslErrorKind::Rejected,
                    name,
                    format!(
                        "the server refused the authentication{who} ({}, {}): wrong credentials, or a mechanism the server does not speak",
                        ErrorCode::from_code(h.err).map_or("?", ErrorCode::name),
                        h.err
                    ),
                )
                .into());
            }
            if h.err != 0 {
                return Err(format!("the server answered a SASL token with error {}", h.err).into());
            }
            let t = SaslToken::decode(&mut r).map_err(|e| Fail::from(format!("garbage SASL reply: {e}")))?;
            break t.token;
        };
        inner.touch_recv();
        if round == 0 && reply.is_none() && name == super::sasl::DIGEST_MD5 {
            return Err(SaslError::new(
                SaslErrorKind::NotOffered,
                name,
                "the server has no SASL (it answered the first token with nothing): is its JAAS Server section configured?",
            )
            .into());
        }
        match mech.step(reply.as_deref()).map_err(|e| {
            if round == 0 && reply.is_none() {
                SaslError::new(
                    SaslErrorKind::NotOffered,
                    name,
                    "the server has no SASL (it answered the first token with nothing): is its JAAS Server section configured?",
                )
            } else {
                e
            }
        })? {
            super::sasl::Step::Send(t) => token = t,
            super::sasl::Step::Done => {
                log::debug!("SASL {name} authentication done in {} round(s)", round + 1);
                return Ok(());
            }
        }
        round += 1;
    }
}

/// Takes a ConnectResponse: expiry, or a connected session with auth and
/// watches re-sent before any user request.
fn establish(
    inner: &Arc<Inner>,
    server: (&HostPort, std::net::SocketAddr),
    stream: Transport,
    fb: FrameBuffer,
    resp: ConnectResponse,
) -> Result<Attempt, Fail> {
    if resp.timeout <= 0 {
        log::warn!(
            "session {:#x} has expired (told by the server)",
            inner.core.lock().session_id
        );
        stream.shutdown();
        inner.terminate(ClientState::Expired);
        return Ok(Attempt::Terminal);
    }
    if resp.session_id == 0 {
        return Err("the server gave session id 0 with a positive timeout".into());
    }
    let writer = stream.try_clone().map_err(|e| e.to_string())?;
    let killer = stream.socket().try_clone().map_err(|e| e.to_string())?;
    let mut wire = inner.wire.lock();
    let mut core = inner.core.lock();
    if inner.is_closing() || core.state.is_terminal() {
        stream.shutdown();
        return Ok(Attempt::Terminal);
    }
    if core.session_id != 0 && resp.session_id != core.session_id {
        log::warn!(
            "asked for session {:#x}, the server gave {:#x}: treating the session as expired",
            core.session_id,
            resp.session_id
        );
        drop(core);
        drop(wire);
        stream.shutdown();
        inner.terminate(ClientState::Expired);
        return Ok(Attempt::Terminal);
    }
    let resumed = core.session_id != 0;
    core.session_id = resp.session_id;
    core.password = resp.passwd;
    core.negotiated_ms = resp.timeout;
    let read_timeout = read_timeout_of(resp.timeout);
    inner
        .read_timeout_ms
        .store(read_timeout.as_millis() as u64, Ordering::Relaxed);

    // Auth packets first, then SetWatches, as the Java client does.
    wire.gen += 1;
    wire.seq = 0;
    core.pings.clear();
    wire.outbuf.clear();
    wire.writing = false;
    let gen = wire.gen;
    let mut out = Vec::new();
    let auth = core.auth.clone();
    for (scheme, data) in &auth {
        out.extend(request_frame(
            xid::AUTH,
            OpCode::Auth,
            Some(&AuthPacket {
                auth_type: 0,
                scheme: scheme.clone(),
                auth: data.clone(),
            }),
        ));
        core.auth_waiters.push_back(None);
    }
    // Re-registration in the Java order and batches: SetWatches2 only for a
    // batch with a persistent path.
    let set_watches = core.watches.set_watches(core.last_zxid);
    for sw in &set_watches {
        let x = wire.next_xid();
        wire.seq += 1;
        let (op, body) = batch_request(sw);
        out.extend(request_frame(x, op, Some(&*body)));
        core.pending.push_back(Pending {
            xid: x,
            seq: wire.seq,
            sent_ms: inner.now_ms(),
            slot: None,
            watch: None,
            op,
        });
    }
    drop(core);
    let _ = writer.socket().set_write_timeout(Some(read_timeout));
    if !out.is_empty() {
        if let Err(e) = writer.write_all(&out) {
            // The read loop sees the dead socket and cleans up.
            log::debug!("sending auth/SetWatches failed: {e}");
            writer.shutdown();
        }
    }
    inner.touch_send();
    wire.stream = Some(Arc::new(writer));
    *inner.killer.lock() = Some((gen, killer));
    // The server in use is known before anyone is told the client is
    // connected (`connected_to()` right after `wait_connected()`).
    inner.hosts.lock().on_connected(server.0, server.1);
    let mut core = inner.core.lock();
    let read_only = resp.read_only == Some(true);
    core.state = if read_only {
        ClientState::ConnectedReadOnly
    } else {
        ClientState::Connected
    };
    log::info!(
        "session {:#x} {} (timeout {} ms, {} watch path(s) re-registered)",
        core.session_id,
        if resumed { "resumed" } else { "established" },
        resp.timeout,
        set_watches
            .iter()
            .map(|s| s.data_watches.len()
                + s.exist_watches.len()
                + s.child_watches.len()
                + s.persistent_watches.len()
                + s.persistent_recursive_watches.len())
            .sum::<usize>()
    );
    core.emit(if read_only {
        SessionEvent::ConnectedReadOnly
    } else {
        SessionEvent::SyncConnected
    });
    // Persistent watchers hear the connection is back (as in Java), before
    // any event that comes on it.
    let shots = core.watches.persistent_due();
    drop(core);
    inner.fire_persistent_state(
        shots,
        if read_only {
            KeeperState::ConnectedReadOnly
        } else {
            KeeperState::SyncConnected
        },
    );
    drop(wire);
    inner.cond.notify_all();
    Ok(Attempt::Established(Conn { stream, fb, gen }))
}

/// Reads and dispatches until the connection ends.
fn run(inner: &Arc<Inner>, conn: Conn, buf: &mut [u8]) -> Stop {
    let Conn { stream, mut fb, gen } = conn;
    let read_timeout = inner.read_timeout();
    let ping_every = read_timeout / 3;
    // The read wakes when data comes or when the next ping or the read
    // timeout is due, whichever is first; never sooner than `MIN_WAKE`
    // (a ping that could not go out at once is tried again then). An idle
    // client's I/O thread wakes about once per ping, not on a fixed tick.
    let mut wake = ping_every.max(MIN_WAKE);
    let _ = stream.socket().set_read_timeout(Some(wake));
    let ping = request_frame(xid::PING, OpCode::Ping, None);
    let mut last_recv = Instant::now();
    let stop = 'conn: loop {
        loop {
            match fb.next_frame() {
                Ok(Some(f)) => {
                    if let Err(s) = inner.dispatch(f, gen) {
                        break 'conn s;
                    }
                }
                Ok(None) => break,
                Err(e) => break 'conn Stop::Broken(format!("garbage frame: {e}")),
            }
        }
        match stream.read_into(buf, &mut fb) {
            Ok(0) => break Stop::Broken("the server closed the connection".into()),
            Ok(_) => {
                last_recv = Instant::now();
                inner.touch_recv();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => break Stop::Broken(format!("read failed: {e}")),
        }
        if last_recv.elapsed() >= read_timeout {
            break Stop::Broken(format!("nothing received for {read_timeout:?}"));
        }
        if inner.idle_send() >= ping_every {
            send_ping(inner, gen, &ping);
        }
        let want = next_wake(ping_every, inner.idle_send(), read_timeout, last_recv.elapsed());
        // Sooner than the socket's timeout: set it, or a ping (or the read
        // timeout) would be late. Much later: set it, or the thread wakes for
        // nothing. A little later: leave it (one setsockopt less per read).
        if want < wake || want > wake * 2 {
            wake = want;
            let _ = stream.socket().set_read_timeout(Some(wake));
        }
    };
    match stop {
        Stop::Terminal => {
            stream.shutdown();
            Stop::Terminal
        }
        Stop::Broken(reason) => {
            inner.connection_lost(&stream, &reason);
            Stop::Broken(reason)
        }
    }
}

/// The shortest wait of the I/O thread's read.
const MIN_WAKE: Duration = Duration::from_millis(10);

/// How long the I/O thread's read may wait: until a ping is due (`ping_every`
/// after the last send) or the read timeout passes (`read_timeout` after the
/// last receipt), whichever is first, and at least [`MIN_WAKE`].
fn next_wake(ping_every: Duration, idle_send: Duration, read_timeout: Duration, idle_recv: Duration) -> Duration {
    let until_ping = ping_every.saturating_sub(idle_send);
    let until_dead = read_timeout.saturating_sub(idle_recv);
    until_ping.min(until_dead).max(MIN_WAKE)
}

/// Sends a ping unless a writer holds the connection (it is sending anyway).
fn send_ping(inner: &Inner, gen: u64, ping: &[u8]) {
    let Some(wire) = inner.wire.try_lock() else { return };
    if wire.gen != gen || wire.writing {
        // A caller is writing: the connection is not idle, and a ping must not
        // overtake the requests it has queued.
        return;
    }
    let Some(s) = wire.stream.as_ref() else { return };
    let sent_ms = inner.now_ms();
    match s.write_all(ping) {
        Ok(()) => {
            inner.core.lock().pings.push_back((wire.seq, Some(sent_ms)));
            inner.touch_send();
        }
        Err(e) => {
            log::debug!("ping failed: {e}");
            s.shutdown();
        }
    }
}

/// Whether 4 bytes start a TLS record (handshake or alert, TLS 1.x): what a TLS
/// server answers a plain ConnectRequest with.
fn is_tls_record(w: &[u8; 4]) -> bool {
    matches!(w[0], 0x15 | 0x16) && w[1] == 0x03 && w[2] <= 0x04
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_wakes_at_the_next_ping_or_the_read_timeout() {
        let ms = Duration::from_millis;
        // (ping_every, idle_send, read_timeout, idle_recv) -> wake
        let table = [
            // Just sent and received: the next ping is first.
            ((ms(2000), ms(0), ms(6000), ms(0)), ms(2000)),
            // Half-way to the ping.
            ((ms(2000), ms(1500), ms(6000), ms(100)), ms(500)),
            // Nothing received for a while: the read timeout is first.
            ((ms(2000), ms(0), ms(6000), ms(5900)), ms(100)),
            // A ping due (one that could not go out): soon, not at once.
            ((ms(2000), ms(2500), ms(6000), ms(0)), MIN_WAKE),
            // Past the read timeout: soon, not at once.
            ((ms(2000), ms(0), ms(6000), ms(7000)), MIN_WAKE),
            // Tiny timeouts never make it spin.
            ((ms(3), ms(0), ms(10), ms(0)), MIN_WAKE),
        ];
        for ((p, s, r, i), want) in table {
            assert_eq!(next_wake(p, s, r, i), want, "{p:?} {s:?} {r:?} {i:?}");
        }
    }
}
