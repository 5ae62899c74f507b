//! Shared state of a client: the connection's writer half, the in-flight queue,
//! the watch registry and the session; request submission and reply dispatch.
//!
//! Locks: `wire` (writer half, xid counter, write queue) is always taken before
//! `core` (state, pending queue, watches). A request gets its xid, its pending
//! entry and its place in the write queue under `wire`, so xid order is wire
//! order; the bytes are written with no lock held (see [`Wire`]). The I/O thread
//! dispatches replies with `core` only, so a writer blocked on a full socket
//! never stops replies from being read. No user code (watchers, their `Drop`)
//! ever runs under a lock or on the I/O thread.

use std::collections::VecDeque;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::{Condvar, Mutex, MutexGuard};

use super::connect_string::HostPort;
use super::events::{fire, EventMsg};
use super::hosts::HostProvider;
use super::sasl::SaslConfig;
use super::tls::{TlsConfig, Transport};
use super::types::{ClientState, SessionEvent, WatchedEvent, Watcher};
use super::watch_types::ServerWatchTypes;
use super::watches::{Due, Registration, Removed, WatchRegistry};
use crate::error::{Error, Result, SaslError, SaslErrorKind, TlsError};
use zk_proto::frame::{request_frame, EncodeDyn};
use zk_proto::jute::{Decode, Reader};
use zk_proto::{xid, ErrorCode, EventType, KeeperState, OpCode, ReplyHeader, WatcherEvent};

/// Size of a reply header on the wire.
pub(super) const REPLY_HEADER_LEN: usize = 16;

/// How late a reply may be before [`Inner::await_reply`] nudges the server.
pub(super) const NUDGE_AFTER: Duration = Duration::from_millis(250);

/// A request on the wire whose reply has not been awaited yet.
pub(super) struct Submitted {
    slot: Arc<Slot>,
    gen: u64,
    deadline: Instant,
    /// The caller's own deadline (`Client::with_deadline`) is what bounds the wait:
    /// on expiry the reply is abandoned and the connection left alone.
    abandon: bool,
}

impl Submitted {
    /// The connection the request went out on.
    pub fn gen(&self) -> u64 {
        self.gen
    }
}

/// Called with a reply on the I/O thread; it must only signal.
pub(super) type ReplyCallback = Box<dyn FnOnce(&Result<Reply>) + Send>;

/// A reply as read from the wire: its header and the whole frame (the body
/// starts at [`REPLY_HEADER_LEN`]). Bodies are decoded by the calling thread.
pub(super) struct Reply {
    pub header: ReplyHeader,
    pub frame: Vec<u8>,
    /// Generation of the connection it came on.
    pub gen: u64,
}

impl Reply {
    /// A reader over the body.
    pub fn body(&self) -> Reader<'_> {
        Reader::new(&self.frame[REPLY_HEADER_LEN.min(self.frame.len())..])
    }
}

/// Where one call's reply goes: filled once by the I/O thread (or by whoever
/// fails the call), waited on by the caller. Parks at once, without the spinning
/// of a channel: the cores are better left to the I/O thread and the server.
pub(super) struct Slot {
    value: Mutex<Option<Result<Reply>>>,
    ready: Condvar,
    callback: Mutex<Option<ReplyCallback>>,
}

impl Slot {
    pub fn new() -> Arc<Slot> {
        Arc::new(Slot {
            value: Mutex::new(None),
            ready: Condvar::new(),
            callback: Mutex::new(None),
        })
    }

    /// Stores the result (the first one wins) and wakes the caller; a slot with
    /// a callback hands the result to it instead.
    pub fn fill(&self, r: Result<Reply>) {
        // The callback lock is held while the value is stored, so that
        // `Inner::on_reply` sees either the callback slot or the value.
        let mut cb = self.callback.lock();
        if let Some(f) = cb.take() {
            drop(cb);
            f(&r);
            return;
        }
        let mut v = self.value.lock();
        if v.is_none() {
            *v = Some(r);
            drop(v);
            drop(cb);
            self.ready.notify_one();
        }
    }

    /// Waits for the result until `deadline`.
    pub fn wait_until(&self, deadline: Instant) -> Option<Result<Reply>> {
        let mut v = self.value.lock();
        loop {
            if let Some(r) = v.take() {
                return Some(r);
            }
            if self.ready.wait_until(&mut v, deadline).timed_out() {
                return v.take();
            }
        }
    }
}

/// A request written and not yet answered.
pub(super) struct Pending {
    pub xid: i32,
    /// Write sequence number on this connection (for the ping-order check).
    pub seq: u64,
    /// When it was queued for sending (ms since `Inner::base`): its reply
    /// proves the session was alive then.
    pub sent_ms: u64,
    /// Where the reply goes; `None` for internal requests (SetWatches).
    pub slot: Option<Arc<Slot>>,
    /// The watch to register when the reply says the server set it.
    pub watch: Option<Registration>,
    pub op: OpCode,
}

/// The writer half of the current connection.
///
/// Writes are combined: a caller that finds nobody writing becomes the writer
/// and writes its frame with the lock released, then whatever other callers
/// queued in `outbuf` meanwhile, until the queue is empty. Under load many
/// requests go out in one syscall; alone, a request costs one write and no
/// thread hop.
pub(super) struct Wire {
    pub stream: Option<Arc<Transport>>,
    /// Generation of the current connection (incremented on each establishment).
    pub gen: u64,
    next_xid: i32,
    /// Number of frames with an xid queued on this connection.
    pub seq: u64,
    /// Frames queued for the caller that is writing.
    pub outbuf: Vec<u8>,
    /// Whether a caller is writing (with the lock released).
    pub writing: bool,
}

impl Wire {
    /// The next request xid: 1, 2, ... wrapping back to 1 after `i32::MAX`.
    pub fn next_xid(&mut self) -> i32 {
        let x = self.next_xid;
        self.next_xid = if x == i32::MAX { 1 } else { x + 1 };
        x
    }
}

/// State protected by the `core` lock.
pub(super) struct Core {
    pub state: ClientState,
    pub session_id: i64,
    pub password: Vec<u8>,
    /// Negotiated session timeout, ms (0 until the first connection).
    pub negotiated_ms: i32,
    pub last_zxid: i64,
    pub pending: VecDeque<Pending>,
    /// Pings written on the current connection and not yet answered, in
    /// write order: the write sequence number each went out after (its reply
    /// shows a request sent before it unanswered) and, for the I/O thread's,
    /// when it was sent (ms since `Inner::base`: its reply confirms the
    /// session as of then). A nudge's ping confirms nothing: `None`.
    pub pings: VecDeque<(u64, Option<u64>)>,
    /// Waiters for auth replies (xid -4), in send order; `None` for the packets
    /// re-sent on reconnect.
    pub auth_waiters: VecDeque<Option<Sender<i32>>>,
    /// Credentials re-sent after each connect.
    pub auth: Vec<(String, Vec<u8>)>,
    pub watches: WatchRegistry,
    subscribers: Vec<Sender<SessionEvent>>,
}

impl Core {
    /// Sends `ev` to every subscriber, forgetting the ones that went away.
    pub fn emit(&mut self, ev: SessionEvent) {
        log::debug!("session {:#x}: {ev:?}", self.session_id);
        self.subscribers.retain(|s| s.send(ev).is_ok());
    }

    /// A new subscriber.
    pub fn subscribe(&mut self) -> Receiver<SessionEvent> {
        let (tx, rx) = crossbeam_channel::unbounded();
        self.subscribers.push(tx);
        rx
    }
}

/// A background thread and the means to wait for it with a bound.
pub(super) struct Worker {
    pub handle: JoinHandle<()>,
    /// Disconnected when the thread ends (its sender is dropped on exit, panic included).
    pub done: Receiver<()>,
}

impl Worker {
    /// Joins the thread if it ends before `deadline`; otherwise leaves it detached.
    pub fn join_until(self, deadline: Instant) {
        match self.done.recv_deadline(deadline) {
            Err(RecvTimeoutError::Disconnected) | Ok(()) => {
                let _ = self.handle.join();
            }
            Err(RecvTimeoutError::Timeout) => {
                log::debug!(
                    "zk client thread {:?} still busy; detached",
                    self.handle.thread().name()
                );
            }
        }
    }
}

/// Everything a client handle and its threads share.
pub(super) struct Inner {
    /// The server list and the choice of the next server (it changes with
    /// `Client::update_server_list`).
    pub hosts: Mutex<HostProvider>,
    pub chroot: Option<String>,
    pub requested_timeout_ms: i32,
    pub connect_timeout: Duration,
    pub read_only: bool,
    pub max_frame: usize,
    /// TLS settings; `None` for plain TCP.
    pub tls: Option<TlsConfig>,
    /// Why the latest finished connection attempt failed in TLS (`None` when it
    /// did not fail, or failed otherwise): what `wait_connected` reports.
    pub last_tls_error: Mutex<Option<TlsError>>,
    /// Why the latest finished connection attempt failed (`None` when it did
    /// not fail): the cause reported to a caller that could not be served.
    pub last_connect_failure: Mutex<Option<String>>,
    /// Set when every server of a whole round refused the TLS handshake for a
    /// reason that retrying cannot mend (an unknown CA, a wrong name, an
    /// expired certificate...); cleared by a connection.
    pub certain_refusal: Mutex<Option<TlsError>>,
    /// SASL settings; `None` for no SASL.
    pub sasl: Option<SaslConfig>,
    /// Why the latest finished connection attempt failed in SASL (`None`
    /// when it did not fail, or failed otherwise): what a caller waiting for
    /// a connection is told at its deadline.
    pub last_sasl_error: Mutex<Option<SaslError>>,
    /// The SASL refusal that ended the client (state `AuthFailed`): what
    /// every call is told from then on.
    pub sasl_failure: Mutex<Option<SaslError>>,
    /// This client's threads waiting for a Kerberos KDC (GSSAPI's bound on
    /// krb5 calls that block past a connection's deadline).
    pub kdc_waiters: Arc<AtomicUsize>,
    pub wire: Mutex<Wire>,
    pub core: Mutex<Core>,
    pub cond: Condvar,
    /// A clone of the current connection's socket, to shut it down from any
    /// thread without waiting for the `wire` lock.
    pub killer: Mutex<Option<(u64, TcpStream)>>,
    pub events: Sender<EventMsg>,
    /// Messages sent to the event thread and not yet handled (`Fire` and
    /// `Discard`; the event thread counts them down once handled). While it is
    /// not zero, a notification's watchers go to the event thread even if they
    /// only signal, behind the events queued before it.
    pub events_queued: Arc<AtomicUsize>,
    pub wake_tx: Sender<()>,
    pub wake_rx: Receiver<()>,
    pub attempts: AtomicU64,
    base: Instant,
    last_send_ms: AtomicU64,
    last_recv_ms: AtomicU64,
    /// When the latest answered request was sent (see `Inner::confirm`).
    last_confirmed_ms: AtomicU64,
    /// The connection epoch: how many times what this client knows of its
    /// session may have had a gap (see [`Inner::epoch`]).
    epoch: AtomicU64,
    /// Read timeout in ms (2/3 of the negotiated or requested session timeout).
    pub read_timeout_ms: AtomicU64,
    pub closing: AtomicBool,
    pub workers: Mutex<Vec<Worker>>,
    pub io_thread: OnceLock<ThreadId>,
    pub event_thread: OnceLock<ThreadId>,
    /// Whether the server takes watcher types 4 and 5 (learnt on use).
    pub watch_types: ServerWatchTypes,
}

/// Settings checked by `Client::connect`.
pub(super) struct Settings {
    pub hosts: Vec<HostPort>,
    pub chroot: Option<String>,
    pub requested_timeout_ms: i32,
    pub connect_timeout: Duration,
    pub read_only: bool,
    pub max_frame: usize,
    pub session: Option<(i64, Vec<u8>)>,
    pub auth: Vec<(String, Vec<u8>)>,
    pub tls: Option<TlsConfig>,
    pub sasl: Option<SaslConfig>,
}

/// What ended a connection's read loop.
pub(super) enum Stop {
    /// The connection is unusable (the reason is logged); reconnect.
    Broken(String),
    /// The client is finished (closed, expired or auth failed).
    Terminal,
}

/// The error a call gets in a state where it cannot be sent: for
/// `AuthFailed`, the SASL refusal that ended the client when there is one.
pub(super) fn state_error(inner: &Inner, state: ClientState) -> Error {
    match state {
        ClientState::Expired => Error::SessionExpired,
        ClientState::AuthFailed => match inner.sasl_failure.lock().clone() {
            Some(e) => Error::Sasl(e),
            None => Error::AuthFailed,
        },
        ClientState::Closed => Error::Closed,
        ClientState::Connecting | ClientState::Connected | ClientState::ConnectedReadOnly => Error::ConnectionLoss,
    }
}

impl Inner {
    pub fn new(s: Settings, events: Sender<EventMsg>) -> Inner {
        let (wake_tx, wake_rx) = crossbeam_channel::bounded(1);
        let (session_id, password) = s.session.unwrap_or((0, vec![0; 16]));
        Inner {
            hosts: Mutex::new(HostProvider::new(s.hosts)),
            chroot: s.chroot,
            requested_timeout_ms: s.requested_timeout_ms,
            connect_timeout: s.connect_timeout,
            read_only: s.read_only,
            max_frame: s.max_frame,
            tls: s.tls,
            sasl: s.sasl,
            last_sasl_error: Mutex::new(None),
            sasl_failure: Mutex::new(None),
            kdc_waiters: Arc::new(AtomicUsize::new(0)),
            last_tls_error: Mutex::new(None),
            last_connect_failure: Mutex::new(None),
            certain_refusal: Mutex::new(None),
            wire: Mutex::new(Wire {
                stream: None,
                gen: 0,
                next_xid: 1,
                seq: 0,
                outbuf: Vec::new(),
                writing: false,
            }),
            core: Mutex::new(Core {
                state: ClientState::Connecting,
                session_id,
                password,
                negotiated_ms: 0,
                last_zxid: 0,
                pending: VecDeque::new(),
                pings: VecDeque::new(),
                auth_waiters: VecDeque::new(),
                auth: s.auth,
                watches: WatchRegistry::default(),
                subscribers: Vec::new(),
            }),
            cond: Condvar::new(),
            killer: Mutex::new(None),
            events,
            events_queued: Arc::new(AtomicUsize::new(0)),
            wake_tx,
            wake_rx,
            attempts: AtomicU64::new(0),
            base: Instant::now(),
            last_send_ms: AtomicU64::new(0),
            last_recv_ms: AtomicU64::new(0),
            last_confirmed_ms: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            read_timeout_ms: AtomicU64::new(read_timeout_of(s.requested_timeout_ms).as_millis() as u64),
            closing: AtomicBool::new(false),
            workers: Mutex::new(Vec::new()),
            io_thread: OnceLock::new(),
            event_thread: OnceLock::new(),
            watch_types: ServerWatchTypes::new(),
        }
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Records that something was just received.
    pub fn touch_recv(&self) {
        self.last_recv_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// Time since a byte was last received from a server.
    pub fn idle_recv(&self) -> Duration {
        let last = self.last_recv_ms.load(Ordering::Relaxed);
        Duration::from_millis(self.now_ms().saturating_sub(last))
    }

    /// Milliseconds since `base`.
    pub fn now_ms(&self) -> u64 {
        self.base.elapsed().as_millis() as u64
    }

    /// A reply arrived to a request sent at `sent_ms`: the session was alive
    /// at the server no earlier than then. (I/O thread only.)
    ///
    /// When this answer makes the session's health confirmed again after it
    /// was stale (no answered request sent within a read timeout: a process
    /// paused, a connection silent), the epoch moves on first: whatever a
    /// caller learnt before the gap is to be proven again (see
    /// [`Inner::epoch`]).
    pub fn confirm(&self, sent_ms: u64) {
        let prev = self.last_confirmed_ms.load(Ordering::SeqCst);
        if sent_ms <= prev {
            return;
        }
        let rt = self.read_timeout_ms.load(Ordering::Relaxed);
        if confirms_after_stale(prev, sent_ms, self.now_ms(), rt) {
            self.epoch.fetch_add(1, Ordering::SeqCst);
        }
        self.last_confirmed_ms.fetch_max(sent_ms, Ordering::SeqCst);
    }

    /// The connection epoch. It moves on when a connection is established (a
    /// reconnect on the same session included), before the client reports
    /// itself connected on it, and when an answer comes after the session's
    /// health was stale, before that answer makes it confirmed. Between two
    /// values nothing the server said can have been missed: notifications
    /// and replies arrive in order on one connection. A fact learnt from the
    /// server while the epoch was `e` holds, for a caller that listens to
    /// the notifications, while the epoch is still `e`; after a change it is
    /// to be asked again (a reconnect re-registers watches, but the events
    /// they fire come one round trip later).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Moves the epoch on (a new connection is about to be reported).
    pub fn next_epoch(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// When the latest request that has been answered was sent.
    pub fn confirmed_at(&self) -> Instant {
        self.base + Duration::from_millis(self.last_confirmed_ms.load(Ordering::SeqCst))
    }

    /// Time since the sending of the latest request that has been answered.
    /// Unlike [`Inner::idle_recv`], replies read late (a process resumed
    /// after a pause reads what the server sent before the pause) do not make
    /// it small.
    pub fn idle_confirmed(&self) -> Duration {
        let last = self.last_confirmed_ms.load(Ordering::SeqCst);
        Duration::from_millis(self.now_ms().saturating_sub(last))
    }

    pub fn touch_send(&self) {
        self.last_send_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// Time since something was last sent.
    pub fn idle_send(&self) -> Duration {
        let last = self.last_send_ms.load(Ordering::Relaxed);
        Duration::from_millis(self.now_ms().saturating_sub(last))
    }

    pub fn read_timeout(&self) -> Duration {
        Duration::from_millis(self.read_timeout_ms.load(Ordering::Relaxed))
    }

    /// Per-attempt connect bound: `min(connect_timeout, session timeout)`.
    pub fn attempt_timeout(&self) -> Duration {
        let negotiated = self.core.lock().negotiated_ms;
        let t = if negotiated > 0 {
            negotiated
        } else {
            self.requested_timeout_ms
        };
        self.connect_timeout.min(Duration::from_millis(t as u64))
    }

    /// The longest a call waits: read timeout + connect timeout.
    pub fn call_bound(&self) -> Duration {
        self.read_timeout() + self.connect_timeout
    }

    /// The server path for a client path.
    pub fn server_path(&self, path: &str) -> String {
        match &self.chroot {
            None => path.to_string(),
            Some(c) if path == "/" => c.clone(),
            Some(c) => format!("{c}{path}"),
        }
    }

    /// The client path for a server path (the chroot stripped).
    pub fn client_path(&self, server_path: &str) -> String {
        match &self.chroot {
            None => server_path.to_string(),
            Some(c) => match server_path.strip_prefix(c.as_str()) {
                Some("") => "/".to_string(),
                Some(rest) if rest.starts_with('/') => rest.to_string(),
                _ => server_path.to_string(),
            },
        }
    }

    /// Shuts down the connection of generation `gen` (any if `None`), so that the
    /// I/O thread notices at once and cleans up.
    pub fn kill(&self, gen: Option<u64>, reason: &str) {
        let k = self.killer.lock();
        if let Some((g, s)) = k.as_ref() {
            if gen.map_or(true, |want| want == *g) {
                log::debug!("dropping connection {g}: {reason}");
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
    }

    /// Sends a request and waits for its reply until `deadline` (default: now +
    /// read timeout + connect timeout), or until `caller` (the caller's
    /// deadline plus its grace) when that is earlier: the wait then ends with
    /// `DeadlineExceeded` and the connection is left alone.
    ///
    /// Fails fast when not connected. `internal` requests (closeSession) are
    /// allowed while closing.
    pub fn call(
        &self,
        op: OpCode,
        body: Option<&dyn EncodeDyn>,
        watch: Option<Registration>,
        internal: bool,
        deadline: Option<Instant>,
        caller: Option<Instant>,
    ) -> Result<Reply> {
        let submitted = self.submit(op, body, watch, internal, deadline, caller)?;
        self.await_reply(submitted)
    }

    /// Writes a request and returns without waiting; [`Inner::await_reply`]
    /// waits for the reply. Requests submitted one after another by one thread
    /// go out, and are answered, in that order, so a caller can pipeline them.
    pub fn submit(
        &self,
        op: OpCode,
        body: Option<&dyn EncodeDyn>,
        watch: Option<Registration>,
        internal: bool,
        deadline: Option<Instant>,
        caller: Option<Instant>,
    ) -> Result<Submitted> {
        let mut frame = request_frame(0, op, body);
        if frame.len() - 4 > self.max_frame {
            return Err(Error::DataTooLarge {
                len: frame.len() - 4,
                max: self.max_frame,
            });
        }
        if !internal && self.is_closing() {
            return Err(Error::Closed);
        }
        let now = Instant::now();
        let own = deadline.unwrap_or_else(|| now + self.call_bound());
        // The caller's bound: its deadline plus one grace (see
        // `Client::with_deadline`).
        let (deadline, abandon) = match caller {
            Some(c) if c < own => (c, true),
            _ => (own, false),
        };
        let slot = Slot::new();
        let gen = {
            let Some(mut wire) = self.wire.try_lock_until(deadline) else {
                return Err(if abandon {
                    Error::DeadlineExceeded
                } else {
                    Error::OperationTimeout
                });
            };
            if wire.stream.is_none() {
                drop(wire);
                return Err(state_error(self, self.core.lock().state));
            }
            let xid = wire.next_xid();
            wire.seq += 1;
            let seq = wire.seq;
            frame[4..8].copy_from_slice(&xid.to_be_bytes());
            let busy = {
                let mut core = self.core.lock();
                if !core.state.is_connected() {
                    return Err(state_error(self, core.state));
                }
                core.pending.push_back(Pending {
                    xid,
                    seq,
                    sent_ms: self.now_ms(),
                    slot: Some(slot.clone()),
                    watch,
                    op,
                });
                core.pending.len() > 2
            };
            let gen = wire.gen;
            if log::log_enabled!(log::Level::Trace) {
                let sid = self.core.lock().session_id;
                log::trace!("session {sid:#x}: request xid {xid} {op:?} (busy {busy})");
            }
            self.write_frame(wire, frame, busy);
            gen
        };
        Ok(Submitted {
            slot,
            gen,
            deadline,
            abandon,
        })
    }

    /// Hands the reply of a submitted request to `callback` (on the I/O thread,
    /// or at once if it has come already) instead of waiting for it.
    pub fn on_reply(&self, s: Submitted, callback: ReplyCallback) {
        let mut slot_cb = s.slot.callback.lock();
        let ready = s.slot.value.lock().take();
        match ready {
            Some(r) => {
                drop(slot_cb);
                callback(&r);
            }
            None => *slot_cb = Some(callback),
        }
    }

    /// Waits for the reply of a submitted request, until its deadline.
    pub fn await_reply(&self, s: Submitted) -> Result<Reply> {
        // A reply late by `NUDGE_AFTER`: nudge the server (see `nudge`), once.
        let nudge_at = Instant::now() + NUDGE_AFTER;
        if nudge_at < s.deadline {
            if let Some(r) = s.slot.wait_until(nudge_at) {
                return r;
            }
            self.nudge();
        }
        match s.slot.wait_until(s.deadline) {
            Some(r) => r,
            None if s.abandon => Err(Error::DeadlineExceeded),
            None => {
                // A server that answers pings but not this request has a broken
                // queue: drop the connection (the session survives).
                self.kill(Some(s.gen), "a request was not answered in time");
                Err(Error::OperationTimeout)
            }
        }
    }

    /// Sends a ping, after a reply has been [`NUDGE_AFTER`] late. Apache
    /// ZooKeeper 3.8 was seen holding a reply, on a leader and on a follower
    /// of an ensemble, until it next received anything from any client
    /// (3.3-7 s, a ping's interval, in zk-bench's handoff runs: BENCHMARKS.md,
    /// issue 34); the nudge is that anything, so such a stall ends after
    /// about [`NUDGE_AFTER`]. A ping, because the server answers it in order
    /// behind the late request and changes nothing; its reply is read as the
    /// I/O thread's pings are, in write order ([`Core::pings`]): a request
    /// sent before it and still unanswered when its reply comes had its reply
    /// dropped, and the connection is dropped. It confirms nothing of the
    /// session's health (a lock's `check()` rests on the I/O thread's pings
    /// and the replies to requests). Nothing is sent when the connection is
    /// busy or gone.
    fn nudge(&self) {
        let Some(wire) = self.wire.try_lock_for(Duration::from_millis(10)) else {
            return;
        };
        if wire.stream.is_none() {
            return;
        }
        log::debug!("a reply is {NUDGE_AFTER:?} late: nudging the server with a ping");
        // Recorded before it is written: its reply may be read at once.
        self.core.lock().pings.push_back((wire.seq, None));
        self.write_frame(wire, request_frame(xid::PING, OpCode::Ping, None), false);
    }

    /// Writes `frame` on the current connection (see [`Wire`]): queues it if
    /// another caller is writing, otherwise writes it and then the queue. A write
    /// error shuts the socket down; the I/O thread then fails every pending call.
    pub fn write_frame(&self, mut wire: MutexGuard<'_, Wire>, frame: Vec<u8>, busy: bool) {
        if wire.writing {
            wire.outbuf.extend_from_slice(&frame);
            return;
        }
        let Some(stream) = wire.stream.clone() else { return };
        let gen = wire.gen;
        wire.writing = true;
        drop(wire);
        let mut buf = frame;
        if busy {
            // Other requests are in flight: let the callers that their replies
            // woke queue their frames, so that they go out in one write.
            std::thread::yield_now();
            let mut wire = self.wire.lock();
            if wire.gen == gen && !wire.outbuf.is_empty() {
                buf.extend_from_slice(&wire.outbuf);
                wire.outbuf.clear();
            }
        }
        loop {
            log::trace!("gen {gen}: writing {} bytes", buf.len());
            let result = stream.write_all(&buf);
            buf.clear();
            match &result {
                Ok(()) => self.touch_send(),
                Err(e) => {
                    log::debug!("write failed: {e}");
                    stream.shutdown();
                }
            }
            let mut wire = self.wire.lock();
            if wire.gen != gen {
                return; // a new connection: its writer state was reset
            }
            if result.is_err() || wire.outbuf.is_empty() {
                wire.outbuf.clear();
                wire.writing = false;
                return;
            }
            std::mem::swap(&mut buf, &mut wire.outbuf);
        }
    }

    /// Handles one frame read from an established connection (I/O thread).
    pub fn dispatch(&self, frame: Vec<u8>, gen: u64) -> std::result::Result<(), Stop> {
        let header = ReplyHeader::decode(&mut Reader::new(&frame))
            .map_err(|e| Stop::Broken(format!("garbage reply header: {e}")))?;
        if log::log_enabled!(log::Level::Trace) {
            let sid = self.core.lock().session_id;
            log::trace!(
                "session {sid:#x}: reply xid {} zxid {:#x} err {} ({} bytes)",
                header.xid,
                header.zxid,
                header.err,
                frame.len()
            );
        }
        if header.err == ErrorCode::SessionClosedRequireSaslAuth.code() {
            // The server requires SASL on this connection and closes it; the
            // session lives, but every new connection would meet the same
            // refusal: the client ends instead of reconnecting forever.
            let e = match &self.sasl {
                None => SaslError::new(
                    SaslErrorKind::Required,
                    "",
                    "the server requires SASL authentication (SessionClosedRequireSaslAuth, -124) and the client has none: give it a SaslConfig",
                ),
                Some(s) => SaslError::new(
                    SaslErrorKind::Rejected,
                    s.mechanism(),
                    "the server refused a request as unauthenticated (SessionClosedRequireSaslAuth, -124)",
                ),
            };
            log::error!("{e}: the client is closed");
            crate::metrics::sasl_failed(e.kind());
            self.end_in_sasl_failure(e);
            return Err(Stop::Terminal);
        }
        match header.xid {
            xid::NOTIFICATION => self.notification(&frame),
            xid::PING => {
                let mut core = self.core.lock();
                let ping = core.pings.pop_front();
                if let Some((_, Some(sent_ms))) = ping {
                    self.confirm(sent_ms);
                }
                match (core.pending.front(), ping.map(|(seq, _)| seq)) {
                    (Some(front), Some(s)) if front.seq <= s => Err(Stop::Broken(format!(
                        "ping answered before request xid {} sent ahead of it: a reply is missing",
                        front.xid
                    ))),
                    _ => Ok(()),
                }
            }
            xid::AUTH => {
                let waiter = self.core.lock().auth_waiters.pop_front().flatten();
                if let Some(w) = waiter {
                    let _ = w.try_send(header.err);
                }
                if header.err != 0 {
                    log::warn!("authentication failed ({}): the client is closed", header.err);
                    self.terminate(ClientState::AuthFailed);
                    return Err(Stop::Terminal);
                }
                Ok(())
            }
            x => {
                let mut core = self.core.lock();
                match core.pending.front() {
                    None => return Err(Stop::Broken(format!("reply xid {x} with nothing in flight"))),
                    Some(p) if p.xid != x => {
                        return Err(Stop::Broken(format!("xid out of order: got {x}, expected {}", p.xid)));
                    }
                    Some(_) => {}
                }
                let p = core.pending.pop_front().expect("front checked");
                self.confirm(p.sent_ms);
                if header.zxid > core.last_zxid {
                    core.last_zxid = header.zxid;
                }
                let rejected = p.watch.and_then(|w| core.watches.register(w, header.err));
                drop(core);
                if let Some(w) = rejected {
                    self.to_event_thread(EventMsg::Discard(vec![w]));
                }
                match p.slot {
                    Some(slot) => {
                        slot.fill(Ok(Reply { header, frame, gen }));
                    }
                    None if header.err != 0 => {
                        log::warn!("internal request {:?} failed with {}", p.op, header.err);
                    }
                    None => {}
                }
                Ok(())
            }
        }
    }

    fn notification(&self, frame: &[u8]) -> std::result::Result<(), Stop> {
        let ev = WatcherEvent::decode(&mut Reader::new(&frame[REPLY_HEADER_LEN..]))
            .map_err(|e| Stop::Broken(format!("garbage notification: {e}")))?;
        let Some(event_type) = EventType::from_code(ev.event_type) else {
            log::warn!("ignoring notification with unknown type {}", ev.event_type);
            return Ok(());
        };
        let (due, sid) = {
            let mut core = self.core.lock();
            (core.watches.materialize(event_type, &ev.path), core.session_id)
        };
        log::trace!(
            "session {sid:#x}: {event_type:?} {} ({} watchers)",
            ev.path,
            due.in_order.len() + due.watchers.len()
        );
        if !due.is_empty() {
            let event = WatchedEvent {
                event_type,
                state: KeeperState::from_code(ev.state).unwrap_or(KeeperState::SyncConnected),
                path: Some(self.client_path(&ev.path)),
            };
            fire(due.in_order, &event);
            let watchers = due.watchers;
            if watchers.is_empty() {
                return Ok(());
            }
            // Signals only, and nothing queued ahead of them: run them here,
            // one thread hop sooner; otherwise behind what is queued.
            if self.events_queued.load(Ordering::Acquire) == 0 && watchers.iter().all(|w| w.only_signals()) {
                fire(watchers, &event);
            } else {
                self.to_event_thread(EventMsg::Fire(watchers, event));
            }
        }
        Ok(())
    }

    /// Drops `watchers` on the event thread (their `Drop` is user code).
    pub(super) fn discard(&self, watchers: Vec<Box<dyn Watcher>>) {
        if !watchers.is_empty() {
            self.to_event_thread(EventMsg::Discard(watchers));
        }
    }

    /// Hands `msg` (`Fire` or `Discard`) to the event thread, counted until
    /// it is handled.
    pub(super) fn to_event_thread(&self, msg: EventMsg) {
        self.events_queued.fetch_add(1, Ordering::AcqRel);
        if self.events.send(msg).is_err() {
            // The event thread is gone: nothing will count it down.
            self.events_queued.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Hands the removal events of `removed` to the event thread.
    pub(super) fn fire_removed(&self, removed: Vec<Removed>, client_path: &str) {
        for (w, ev) in removed {
            self.to_event_thread(EventMsg::Fire(
                vec![w],
                WatchedEvent {
                    event_type: ev,
                    state: KeeperState::SyncConnected,
                    path: Some(client_path.to_string()),
                },
            ));
        }
    }

    /// Gives every persistent registration a session event (they stay).
    pub(super) fn fire_persistent_state(&self, due: Due, state: KeeperState) {
        let event = WatchedEvent {
            event_type: EventType::None,
            state,
            path: None,
        };
        fire(due.in_order, &event);
        if !due.watchers.is_empty() {
            self.to_event_thread(EventMsg::Fire(due.watchers, event));
        }
    }

    /// The connection died (I/O thread): fail everything in flight with
    /// ConnectionLoss and report Disconnected (unless closing).
    pub fn connection_lost(&self, stream: &Transport, reason: &str) {
        stream.shutdown();
        *self.killer.lock() = None;
        {
            let mut wire = self.wire.lock();
            wire.stream = None;
            wire.outbuf.clear();
            wire.writing = false;
        }
        let closing = self.is_closing();
        let mut core = self.core.lock();
        if !closing {
            log::info!("session {:#x}: connection lost: {reason}", core.session_id);
        }
        let pending = std::mem::take(&mut core.pending);
        let waiters = std::mem::take(&mut core.auth_waiters);
        core.watches.connection_gone();
        let mut shots = super::watches::Due::default();
        if !closing && core.state.is_connected() {
            core.state = ClientState::Connecting;
            core.emit(SessionEvent::Disconnected);
            shots = core.watches.persistent_due();
        }
        drop(core);
        self.fire_persistent_state(shots, KeeperState::Disconnected);
        self.cond.notify_all();
        self.fail_all(pending, waiters, Error::ConnectionLoss, Vec::new());
    }

    /// Enters a final state: fails everything, forgets the watches, reports it.
    /// Ends the client in `AuthFailed` for the SASL refusal `e`.
    pub fn end_in_sasl_failure(&self, e: SaslError) {
        *self.last_sasl_error.lock() = Some(e.clone());
        *self.sasl_failure.lock() = Some(e);
        self.terminate(ClientState::AuthFailed);
    }

    pub fn terminate(&self, new_state: ClientState) {
        self.kill(None, "client finished");
        *self.killer.lock() = None;
        {
            let mut wire = self.wire.lock();
            if let Some(s) = wire.stream.take() {
                s.shutdown();
            }
            wire.outbuf.clear();
            wire.writing = false;
        }
        let mut core = self.core.lock();
        let old = core.state;
        if old == new_state || (old.is_terminal() && new_state != ClientState::Closed) {
            return;
        }
        core.state = new_state;
        let pending = std::mem::take(&mut core.pending);
        let waiters = std::mem::take(&mut core.auth_waiters);
        let watchers = core.watches.take_all();
        core.watches.connection_gone();
        let last = core.watches.take_persistent();
        core.emit(match new_state {
            ClientState::Expired => SessionEvent::Expired,
            ClientState::AuthFailed => SessionEvent::AuthFailed,
            _ => SessionEvent::Closed,
        });
        drop(core);
        self.cond.notify_all();
        // Persistent registrations get a final state, then are forgotten.
        self.fire_persistent_state(
            last,
            match new_state {
                ClientState::Expired => KeeperState::Expired,
                ClientState::AuthFailed => KeeperState::AuthFailed,
                _ => KeeperState::Closed,
            },
        );
        self.fail_all(pending, waiters, state_error(self, new_state), watchers);
        let _ = self.events.send(EventMsg::Stop);
        let _ = self.wake_tx.try_send(());
    }

    fn fail_all(
        &self,
        pending: VecDeque<Pending>,
        waiters: VecDeque<Option<Sender<i32>>>,
        err: Error,
        mut discard: Vec<Box<dyn Watcher>>,
    ) {
        for p in pending {
            if let Some(w) = p.watch {
                discard.push(w.into_watcher());
            }
            if let Some(slot) = p.slot {
                slot.fill(Err(err.clone()));
            }
        }
        let code = err.code().unwrap_or(ErrorCode::ConnectionLoss).code();
        for w in waiters.into_iter().flatten() {
            let _ = w.try_send(code);
        }
        if !discard.is_empty() {
            self.to_event_thread(EventMsg::Discard(discard));
        }
    }
}

/// Whether an answer read at `now` to a request sent at `sent` (ms) makes the
/// session's health confirmed again after it was stale: before it, the latest
/// answered request was sent at `prev`, more than the read timeout `rt` ago;
/// after it, the latest was sent within `rt`. (The health is confirmed while
/// the latest answered request was sent at most `rt` ago.)
fn confirms_after_stale(prev: u64, sent: u64, now: u64, rt: u64) -> bool {
    let was_stale = now.saturating_sub(prev) > rt;
    let fresh = now.saturating_sub(sent.max(prev)) <= rt;
    was_stale && fresh
}

/// The read timeout for a session timeout: 2/3 of it.
pub(super) fn read_timeout_of(session_ms: i32) -> Duration {
    Duration::from_millis((session_ms.max(1) as u64 * 2 / 3).max(1))
}

#[cfg(test)]
mod tests {
    use super::confirms_after_stale;

    #[test]
    fn an_answer_after_a_stale_spell_is_told_once() {
        // (prev, sent, now, rt) -> whether the epoch moves on
        let table = [
            // Healthy all along: answers keep coming within the read timeout.
            ((1500, 1900, 2000, 600), false),
            ((1000, 1400, 1500, 600), false),
            // Stale (nothing sent in the last 600 ms was answered), then an
            // answer to a fresh request: confirmed again.
            ((1000, 1950, 2000, 600), true),
            // Stale, and the answer is to a request sent before the spell (a
            // process resumed after a pause reads old replies): still stale,
            // not yet.
            ((1000, 1100, 2000, 600), false),
            // Exactly at the read timeout: not stale yet.
            ((1000, 1500, 1600, 600), false),
            ((1000, 1601, 1601, 600), true),
        ];
        for ((prev, sent, now, rt), want) in table {
            assert_eq!(
                confirms_after_stale(prev, sent, now, rt),
                want,
                "prev {prev} sent {sent} now {now} rt {rt}"
            );
        }
    }
}
