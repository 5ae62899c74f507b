//! A follower that lags its leader: the leader's bytes to it held while a backlog of writes
//! is made, then let through in one burst, so that a client that reconnects to it meets a
//! server still applying writes its leader applied long ago. And [`LaggingFollower`], the
//! whole scenario of a lost reply proven on such a follower.

use std::io::{self, ErrorKind};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use zk_proto::{Acl, CreateRequest, OpCode, SetDataRequestRef};

use super::cluster::ApacheCluster;
use super::config::ApacheConfig;
use super::links::LinkState;
use super::router::{parse_srvr_zxid, ClientRouter, ConnectionRecord, LostReply, NewSession, Routes};
use crate::fourlw::four_letter_word;
use crate::raw::RawConnection;

/// The node a backlog's writes go to.
pub const BACKLOG_PATH: &str = "/zk-testing-lag-backlog";

/// Replies a backlog writer waits for at most at once (requests are pipelined up to this).
const WINDOW: usize = 256;
/// Timeout of one `srvr` probe.
const SRVR_TIMEOUT: Duration = Duration::from_secs(2);
/// How long [`LaggingFollower::begin`] waits for every node to catch up with the leader.
const CATCH_UP: Duration = Duration::from_secs(30);

/// The writes of a backlog: `writes` pipelined `setData`s of `data_len` bytes each on
/// [`BACKLOG_PATH`], through the leader.
///
/// A follower that receives a backlog in a burst must read, log and apply each write; its
/// connection to the leader delivers them in order, ahead of anything the leader sends later
/// (such as its answer to a session revalidation). The [`Default`], 5,000 writes of 100
/// bytes, is what made the window reliable on a shared 2-core machine: many small writes,
/// since the follower falls behind by writes, not by bytes (see [`LaggingFollower`] for the
/// figures).
///
/// # Errors
///
/// Not applicable: a plain value.
///
/// # Examples
///
/// ```
/// use zk_testing::apache::Backlog;
/// let small = Backlog { writes: 100, ..Backlog::default() };
/// assert!(small.bytes() < Backlog::default().bytes());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlog {
    /// How many writes.
    pub writes: usize,
    /// The data of each write, in bytes.
    pub data_len: usize,
}

impl Default for Backlog {
    fn default() -> Backlog {
        Backlog {
            writes: 5000,
            data_len: 100,
        }
    }
}

impl Backlog {
    /// The data the backlog carries in all (`writes * data_len`).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_testing::apache::Backlog { writes: 10, data_len: 3 }.bytes(), 30);
    /// ```
    pub fn bytes(&self) -> usize {
        self.writes.saturating_mul(self.data_len)
    }
}

/// A backlog once written: the zxids of its first and last write and how long it took.
///
/// # Errors
///
/// Not applicable: a plain value.
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache::{ApacheCluster, Backlog};
/// let cluster = ApacheCluster::start(3, Default::default())?;
/// let leader = cluster.leader().expect("a leader");
/// let written = cluster.write_backlog(leader, &Backlog { writes: 10, data_len: 8 })?;
/// assert_eq!(written.last_zxid - written.first_zxid, 9);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BacklogWritten {
    /// The zxid of the first write.
    pub first_zxid: i64,
    /// The zxid of the last write.
    pub last_zxid: i64,
    /// From the connection to the last reply.
    pub took: Duration,
}

/// A follower whose leader's bytes are held ([`ApacheCluster::hold_follower`]): it hears
/// nothing from its leader (no proposal, no commit, no ping, no answer to a session
/// revalidation) until [`release`](Self::release), its drop, or the hold's limit, whichever
/// comes first; then what was held reaches it in one burst, in order. Its own bytes to the
/// leader keep flowing.
///
/// # Errors
///
/// See the methods.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zk_testing::apache::{ApacheCluster, ApacheConfig, Backlog};
///
/// let cluster = ApacheCluster::start_partitionable(3, ApacheConfig::default())?;
/// let leader = cluster.leader().expect("a leader");
/// let follower = (leader + 1) % 3;
/// let hold = cluster.hold_follower(follower, Duration::from_secs(2))?;
/// let written = cluster.write_backlog(leader, &Backlog::default())?;
/// assert!(cluster.last_zxid(follower).unwrap() < written.last_zxid);
/// hold.release();
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct FollowerHold {
    inner: Arc<HoldInner>,
    watchdog: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct HoldInner {
    state: Arc<LinkState>,
    leader: usize,
    follower: usize,
    since: Instant,
    /// When it was released, and whether by its limit.
    released: Mutex<Option<(Instant, bool)>>,
    cond: Condvar,
}

impl HoldInner {
    fn release(&self, by_limit: bool) -> Duration {
        let mut released = self.released.lock();
        let at = match *released {
            Some((at, _)) => at,
            None => {
                self.state.set(self.leader, self.follower, false);
                let now = Instant::now();
                *released = Some((now, by_limit));
                self.cond.notify_all();
                now
            }
        };
        at.saturating_duration_since(self.since)
    }
}

impl FollowerHold {
    fn start(state: Arc<LinkState>, leader: usize, follower: usize, max: Duration) -> io::Result<FollowerHold> {
        state.set(leader, follower, true);
        let inner = Arc::new(HoldInner {
            state,
            leader,
            follower,
            since: Instant::now(),
            released: Mutex::new(None),
            cond: Condvar::new(),
        });
        let watched = inner.clone();
        let spawned = thread::Builder::new().name("zk-lag-hold".into()).spawn(move || {
            let until = watched.since + max;
            let mut released = watched.released.lock();
            while released.is_none() && Instant::now() < until {
                watched.cond.wait_until(&mut released, until);
            }
            drop(released);
            watched.release(true);
        });
        match spawned {
            Ok(handle) => Ok(FollowerHold {
                inner,
                watchdog: Some(handle),
            }),
            Err(e) => {
                inner.release(false);
                Err(e)
            }
        }
    }

    /// The leader whose bytes are held.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// # let hold = cluster.hold_follower(1, std::time::Duration::from_secs(1))?;
    /// assert_eq!(Some(hold.leader()), cluster.leader());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn leader(&self) -> usize {
        self.inner.leader
    }

    /// The follower held behind it.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// # let hold = cluster.hold_follower(1, std::time::Duration::from_secs(1))?;
    /// assert_eq!(hold.follower(), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn follower(&self) -> usize {
        self.inner.follower
    }

    /// How long the bytes have been held (until now, or until the release).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// let hold = cluster.hold_follower(1, std::time::Duration::from_secs(1))?;
    /// assert!(hold.held_for() < std::time::Duration::from_secs(1));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn held_for(&self) -> Duration {
        match *self.inner.released.lock() {
            Some((at, _)) => at.saturating_duration_since(self.inner.since),
            None => self.inner.since.elapsed(),
        }
    }

    /// Whether the hold has ended.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// let hold = cluster.hold_follower(1, std::time::Duration::from_secs(1))?;
    /// assert!(!hold.is_released());
    /// hold.release();
    /// assert!(hold.is_released());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_released(&self) -> bool {
        self.inner.released.lock().is_some()
    }

    /// Whether the hold ended by its limit (nobody released it in time).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// let hold = cluster.hold_follower(1, std::time::Duration::from_millis(100))?;
    /// assert!(zk_testing::wait_until(std::time::Duration::from_secs(5), || hold.is_released()));
    /// assert!(hold.released_by_limit());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn released_by_limit(&self) -> bool {
        matches!(*self.inner.released.lock(), Some((_, true)))
    }

    /// Lets the held bytes through (once; later calls do nothing more) and returns how long
    /// they were held.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// let hold = cluster.hold_follower(1, std::time::Duration::from_secs(1))?;
    /// let held = hold.release();
    /// assert_eq!(hold.release(), held);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn release(&self) -> Duration {
        self.inner.release(false)
    }
}

impl Drop for FollowerHold {
    fn drop(&mut self) {
        self.inner.release(false);
        if let Some(h) = self.watchdog.take() {
            // Woken by the release: it returns at once.
            let _ = h.join();
        }
    }
}

impl ApacheCluster {
    /// The last zxid node `i` has applied to its data (`srvr`'s `Zxid:`), or `None` if it does
    /// not answer or is not serving.
    ///
    /// # Errors
    ///
    /// None: an unreachable node gives `None`.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// let leader = cluster.leader().unwrap();
    /// println!("leader at {:#x}", cluster.last_zxid(leader).unwrap());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn last_zxid(&self, i: usize) -> Option<i64> {
        srvr_zxid(&self.node_addr(i))
    }

    /// Waits until every running node has applied everything the leader had applied when it
    /// was asked (their `srvr` zxids at least the leader's, or the leader has committed
    /// nothing yet in its epoch); returns the leader's zxid.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TimedOut`] if that does not happen within `timeout` (no leader, or a node
    /// that stays behind; the message gives the zxids seen last).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// let z = cluster.wait_caught_up(std::time::Duration::from_secs(10))?;
    /// assert!((0..3).all(|i| cluster.last_zxid(i) >= Some(z)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn wait_caught_up(&self, timeout: Duration) -> io::Result<i64> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut seen = Vec::new();
            if let Some(leader) = self.leader() {
                if let Some(z) = self.last_zxid(leader) {
                    // A leader that has committed nothing in its epoch yet says the epoch's
                    // first zxid, and its followers (synced to it before they serve) their
                    // last one of an earlier epoch: nothing to catch up with.
                    let fresh_epoch = z & 0xffff_ffff == 0;
                    let mut all = true;
                    for i in (0..self.len()).filter(|&i| i != leader && self.is_running(i)) {
                        let zi = self.last_zxid(i);
                        seen.push(format!("{i}:{zi:x?}"));
                        all &= zi.is_some_and(|zi| zi >= z || fresh_epoch);
                    }
                    if all {
                        return Ok(z);
                    }
                    seen.push(format!("leader {leader}:{z:#x}"));
                }
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!(
                        "the nodes did not catch up with the leader within {timeout:?} ({})",
                        seen.join(", ")
                    ),
                ));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Holds the bytes from the leader to `follower` (a one-way partition of a partitionable
    /// ensemble, see [`start_partitionable`](Self::start_partitionable)) for at most `max`.
    ///
    /// Mind the sync limit ([`sync_limit`](Self::sync_limit)): a follower that hears nothing
    /// from its leader for that long leaves it (and starts an election), and a leader whose
    /// proposals stay unacknowledged that long drops the follower. So `max` may be at most 60%
    /// of the sync limit (3 s with the defaults), and the hold ends by itself then, whatever
    /// the caller does.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unsupported`] if the ensemble is not partitionable;
    /// [`ErrorKind::InvalidInput`] if `follower` is not a node index or is the leader, or if
    /// `max` is above 60% of the sync limit; [`ErrorKind::NotConnected`] if no node leads now;
    /// an I/O error if the hold's thread cannot be spawned (nothing is held then).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// let leader = cluster.leader().unwrap();
    /// let hold = cluster.hold_follower((leader + 1) % 3, std::time::Duration::from_secs(2))?;
    /// // ... writes through the leader here: the follower does not see them
    /// hold.release();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn hold_follower(&self, follower: usize, max: Duration) -> io::Result<FollowerHold> {
        let state = self.link_state()?;
        if follower >= self.len() {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("no node {follower} in an ensemble of {}", self.len()),
            ));
        }
        let limit = self.sync_limit().mul_f64(0.6);
        if max > limit {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("a hold of {max:?} is above 60% of the sync limit ({limit:?}): the follower would drop out"),
            ));
        }
        let leader = self
            .leader()
            .ok_or_else(|| io::Error::new(ErrorKind::NotConnected, "no node leads now"))?;
        if leader == follower {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("node {follower} is the leader"),
            ));
        }
        FollowerHold::start(state, leader, follower, max)
    }

    /// Writes `backlog` through node `node` (its client port, directly): creates
    /// [`BACKLOG_PATH`] if missing, then pipelines the `setData`s (up to 256 in flight) and
    /// waits for every reply, with a session of its own that it closes at the end.
    ///
    /// # Errors
    ///
    /// An I/O error from the connection; [`ErrorKind::Other`] if the server refuses a write
    /// (the message has its error code).
    ///
    /// # Panics
    ///
    /// If `node >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// let w = cluster.write_backlog(0, &zk_testing::apache::Backlog::default())?;
    /// println!("{} writes in {:?}", w.last_zxid - w.first_zxid + 1, w.took);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_backlog(&self, node: usize, backlog: &Backlog) -> io::Result<BacklogWritten> {
        write_backlog(&self.node_addr(node), backlog)
    }

    /// Ends the session `session_id` (with its `password`) through node `node`: a
    /// `closeSession` on a connection of its own, as an expiry would (its ephemeral nodes go,
    /// its client is told `Expired` at its next connection). A session that is gone already is
    /// not an error.
    ///
    /// # Errors
    ///
    /// An I/O error from the connection or the close (tried again while the server drops the
    /// connection under us, up to 30 s: the session's own client may be taking it back).
    ///
    /// # Panics
    ///
    /// If `node >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// let (_c, resp) = zk_testing::raw::RawConnection::connect(&cluster.connect_string(), 4000, None)?;
    /// cluster.expire_session(0, resp.session_id, &resp.passwd)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn expire_session(&self, node: usize, session_id: i64, password: &[u8]) -> io::Result<()> {
        expire(&self.node_addr(node), session_id, password)
    }
}

fn srvr_zxid(addr: &str) -> Option<i64> {
    four_letter_word(addr, "srvr", SRVR_TIMEOUT)
        .ok()
        .and_then(|a| parse_srvr_zxid(&a))
}

fn refused(what: &str, err: i32) -> io::Error {
    io::Error::other(format!("{what}: the server answered error {err}"))
}

fn write_backlog(addr: &str, backlog: &Backlog) -> io::Result<BacklogWritten> {
    let t0 = Instant::now();
    let (mut c, resp) = RawConnection::connect(addr, 10_000, None)?;
    if resp.timeout <= 0 {
        return Err(io::Error::new(ErrorKind::ConnectionRefused, "no session was granted"));
    }
    let create = CreateRequest {
        path: BACKLOG_PATH.to_string(),
        data: Vec::new(),
        acl: Acl::open_unsafe(),
        flags: 0,
    };
    let r = c.request(OpCode::Create, &create)?;
    if r.header.err != 0 && r.header.err != zk_proto::ErrorCode::NodeExists as i32 {
        return Err(refused("creating the backlog's node", r.header.err));
    }
    let data = vec![0x5a; backlog.data_len];
    let (mut first, mut last, mut in_flight) = (None, 0, 0usize);
    let mut take = |c: &mut RawConnection| -> io::Result<()> {
        let r = c.read_reply()?;
        if r.header.err != 0 {
            return Err(refused("a backlog write", r.header.err));
        }
        first.get_or_insert(r.header.zxid);
        last = r.header.zxid;
        Ok(())
    };
    for _ in 0..backlog.writes {
        let req = SetDataRequestRef {
            path: BACKLOG_PATH,
            data: &data,
            version: -1,
        };
        c.send(OpCode::SetData, Some(&req))?;
        in_flight += 1;
        if in_flight >= WINDOW {
            take(&mut c)?;
            in_flight -= 1;
        }
    }
    while in_flight > 0 {
        take(&mut c)?;
        in_flight -= 1;
    }
    let _ = c.close_session();
    Ok(BacklogWritten {
        first_zxid: first.unwrap_or(last),
        last_zxid: last,
        took: t0.elapsed(),
    })
}

fn expire(addr: &str, session_id: i64, password: &[u8]) -> io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let err = match RawConnection::connect(addr, 30_000, Some((session_id, password))) {
            Ok((_, resp)) if resp.timeout <= 0 => return Ok(()),
            Ok((mut c, _)) => match c.close_session() {
                Ok(_) => return Ok(()),
                Err(e) => e,
            },
            Err(e) => e,
        };
        let closed = matches!(
            err.kind(),
            ErrorKind::UnexpectedEof
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::BrokenPipe
                | ErrorKind::WouldBlock
                | ErrorKind::TimedOut
        );
        if !closed || Instant::now() >= deadline {
            return Err(err);
        }
    }
}

/// What happens to the lost reply's session in a [`LagRound`].
///
/// # Errors
///
/// Not applicable: a plain value.
///
/// # Examples
///
/// ```
/// use zk_testing::apache::AfterLoss;
/// let same = AfterLoss::SameSession;
/// let expired = AfterLoss::NewSession { session_id: 0x42, password: vec![0; 16] };
/// assert_ne!(same, expired);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterLoss {
    /// The client reconnects its session to the lagging follower at once.
    SameSession,
    /// The session (the client's: its id and password) is ended right after the loss, before
    /// the client can reconnect; the client is told `Expired` on the writer and makes a new
    /// session there; that new session is cut before its first request and resumes on the
    /// lagging follower (which must ask the leader to revalidate it: the answer comes behind
    /// the backlog).
    NewSession {
        /// The lost reply's session.
        session_id: i64,
        /// Its password.
        password: Vec<u8>,
    },
}

#[derive(Debug, Default)]
struct RoundState {
    hold: Mutex<Option<FollowerHold>>,
    backlog: Mutex<Option<BacklogWritten>>,
    lost: Mutex<Option<LostReply>>,
    born: Mutex<Option<NewSession>>,
    held_for: Mutex<Option<(Duration, bool)>>,
    errors: Mutex<Vec<String>>,
}

impl RoundState {
    fn error(&self, e: String) {
        log::warn!("lagging follower: {e}");
        self.errors.lock().push(e);
    }

    fn release(&self) {
        if let Some(h) = self.hold.lock().take() {
            let held = h.release();
            *self.held_for.lock() = Some((held, h.released_by_limit()));
        }
    }
}

/// A lost reply proven on a follower that has not yet applied it, on a 3-node Apache
/// ensemble: the whole scenario, round after round.
///
/// [`start`](Self::start) starts a partitionable 3-node ensemble
/// ([`ApacheCluster::start_partitionable`]) and a [`ClientRouter`] in front of it; clients
/// under test connect to [`connect_string`](Self::connect_string). Each round
/// ([`begin`](Self::begin)):
///
/// 1. picks the roles: the writer is the leader, the lagging follower one of the two
///    followers (in turn); waits until every node has caught up with the leader; routes
///    clients to the writer ([`ClientRouter::route_to`]: every proxy forwards to it);
/// 2. arms the router on the next request of the given opcode: before it goes on, the
///    leader's bytes to the follower are held ([`ApacheCluster::hold_follower`]) and the
///    [`Backlog`] is written through the leader; then the request goes on, the writer applies
///    it, its reply is dropped and the connection closed;
/// 3. after the loss, before the client can reconnect, clients are routed to the lagging
///    follower, and once the client's ConnectRequest has reached it the hold is released: the
///    follower receives the backlog and the lost write in one burst, in order. The client's reconnect passes the follower's zxid check
///    (the client has seen nothing newer than the follower has applied: the backlog was made
///    after its last reply) and waits for the session's revalidation, which the leader
///    answers behind the burst; by then the follower has read the burst but may not have
///    applied it, and the client's first request (the proof of the lost write) reads state
///    from before the write. With [`AfterLoss::NewSession`] the session is ended first and
///    the client's new session, made on the writer, is moved to the follower before its
///    first request.
///
/// [`LagRound::report`] tells what happened: the lost reply's zxid, the connection on which
/// the client reached the follower, the follower's last applied zxid when that connection was
/// established, and the zxid of its first reply (below the lost write's: the proof read ran
/// on a follower that had not applied the write, [`LagReport::lag_present`]).
///
/// # The window, measured
///
/// The follower reads the burst faster than it applies it: it answers the revalidation (and
/// the client's first request arrives) when it has read every write of the burst but applied
/// only part of them. So the window grows with the *number* of writes, more than with their
/// size. Measured on a shared 2-core machine (debug build, three JVMs of 256 MB, load average
/// 2-12 from other work), 144 rounds of the zk-recipes and zk-framework `lagging::` tests
/// with the default backlog (5,000 writes of 100 bytes):
///
/// * the backlog was written in 0.22-0.92 s (median 0.43 s), so the follower was held
///   0.23-1.46 s (median 0.54 s; the longer holds wait for the client's own reconnect
///   backoff), well within the 3 s this fixture allows of the 5 s sync limit;
/// * the client's session was re-established on the follower 15-150 ms (median 34 ms) after
///   its ConnectRequest reached it;
/// * when the client's first request reached the follower, the follower had still to apply
///   1,434-2,761 of the 5,000 writes (quartiles; median 2,245, up to 4,549) up to the lost
///   one: the fault ([`LagReport::lag_present`]) was there in 130 of the 144 rounds.
///
/// Tried before (8 rounds each, the fault counted by the proof's reply): 500 writes of 64 KiB
/// lagged in 6 rounds (written in 0.18-0.47 s, as long as 5,000 small ones), 2,000 of 100
/// bytes in 6; 4,000 of 4 KiB in 7 and 8,000 of 100 bytes in 8 (held up to 1.7 s), both while
/// the client still met refused servers on its way to the follower. The zk-recipes tests
/// take another backlog from `ZK_TEST_LAG_BACKLOG=<writes>,<bytes>`, to measure again:
/// `ZK_TEST_REQUIRE_APACHE=1 cargo test -p zk-recipes --test it lagging:: -- --nocapture
/// --test-threads=1` prints each round's figures ([`LagReport::summary`]).
///
/// Our client does not take a zxid from a ping's reply (the Java client does not either):
/// pings do not narrow the window. The request whose reply is lost is held while the backlog
/// is written, and a ping the client sends meanwhile queues behind it on the same
/// connection, whose replies are never delivered.
///
/// # Errors
///
/// See the methods.
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache::{AfterLoss, Backlog, LaggingFollower};
///
/// let lag = LaggingFollower::start(Backlog::default())?;
/// // A client under test connects to lag.connect_string(); then, each round:
/// let round = lag.begin(zk_proto::OpCode::Multi, AfterLoss::SameSession)?;
/// // ... the client's operation that sends a multi ...
/// let report = round.report(std::time::Duration::from_secs(10));
/// println!("{}", report.summary());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct LaggingFollower {
    cluster: ApacheCluster,
    router: ClientRouter,
    backlog: Backlog,
    max_hold: Duration,
    rounds: std::sync::atomic::AtomicUsize,
}

impl LaggingFollower {
    /// Starts a partitionable 3-node ensemble (default [`ApacheConfig`]) and a router in
    /// front of it.
    ///
    /// # Errors
    ///
    /// As [`ApacheCluster::start_partitionable`] and [`ClientRouter::start`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// assert_eq!(lag.cluster().len(), 3);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(backlog: Backlog) -> io::Result<LaggingFollower> {
        let cluster = ApacheCluster::start_partitionable(3, ApacheConfig::default())?;
        let router = ClientRouter::start(&cluster)?;
        let max_hold = cluster.sync_limit().mul_f64(0.6);
        Ok(LaggingFollower {
            cluster,
            router,
            backlog,
            max_hold,
            rounds: Default::default(),
        })
    }

    /// The ensemble.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// println!("leader: {:?}", lag.cluster().leader());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cluster(&self) -> &ApacheCluster {
        &self.cluster
    }

    /// The router the clients under test go through.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// println!("{} connections so far", lag.router().connections().len());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn router(&self) -> &ClientRouter {
        &self.router
    }

    /// The connect string of the clients under test (the router's proxies).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// assert_eq!(lag.connect_string().split(',').count(), 3);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_string(&self) -> String {
        self.router.connect_string()
    }

    /// The connect string of the leader alone, directly (no router): for a test's own client
    /// that checks what the ensemble holds (the leader has applied every committed write).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotConnected`] if no node leads now.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// println!("admin connects to {}", lag.leader_connect_string()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn leader_connect_string(&self) -> io::Result<String> {
        let leader = self
            .cluster
            .leader()
            .ok_or_else(|| io::Error::new(ErrorKind::NotConnected, "no node leads now"))?;
        Ok(self.cluster.node_addr(leader))
    }

    /// Begins a round (see the type's doc): roles picked, nodes caught up, clients routed to
    /// the writer (the leader; a client connected elsewhere is cut and reconnects there), and
    /// the router armed on the next request with opcode `op`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TimedOut`] if the ensemble has no quorum, or its nodes do not catch up with
    /// the leader, within 30 s; [`ErrorKind::NotConnected`] if fewer than two nodes follow;
    /// another error if a node exited (see [`ApacheCluster::wait_for_quorum`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// let round = lag.begin(zk_proto::OpCode::Create2, zk_testing::apache::AfterLoss::SameSession)?;
    /// println!("writer {}, lagging follower {}", round.writer(), round.follower());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn begin(&self, op: OpCode, after: AfterLoss) -> io::Result<LagRound<'_>> {
        self.router.disarm();
        self.cluster.wait_for_quorum(CATCH_UP)?;
        let leader = self
            .cluster
            .leader()
            .ok_or_else(|| io::Error::new(ErrorKind::NotConnected, "no node leads now"))?;
        let followers: Vec<usize> = (0..self.cluster.len())
            .filter(|&i| i != leader && self.cluster.mode(i).as_deref() == Some("follower"))
            .collect();
        if followers.len() < 2 {
            return Err(io::Error::new(
                ErrorKind::NotConnected,
                format!("two followers needed, {} follow now", followers.len()),
            ));
        }
        let n = self.rounds.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let follower = followers[n % followers.len()];
        let writer = leader;
        self.cluster.wait_caught_up(CATCH_UP)?;
        self.router.route_to(writer);
        let first_connection = self.router.connections().len();
        let state = Arc::new(RoundState::default());
        let link = self.cluster.link_state()?;
        let leader_addr = self.cluster.node_addr(leader);
        let (backlog, max_hold) = (self.backlog, self.max_hold);

        let st = state.clone();
        let addr = leader_addr.clone();
        let before = move || {
            match FollowerHold::start(link, leader, follower, max_hold) {
                Ok(h) => *st.hold.lock() = Some(h),
                Err(e) => st.error(format!("holding the follower: {e}")),
            }
            match write_backlog(&addr, &backlog) {
                Ok(w) => *st.backlog.lock() = Some(w),
                Err(e) => st.error(format!("writing the backlog: {e}")),
            }
        };
        let st = state.clone();
        let after_loss = move |routes: &Routes<'_>, lost: &LostReply| {
            *st.lost.lock() = Some(lost.clone());
            match after {
                AfterLoss::SameSession => {
                    routes.route_to(follower);
                    let st = st.clone();
                    routes.on_next_connect(follower, move |_| st.release());
                }
                AfterLoss::NewSession { session_id, password } => {
                    if let Err(e) = expire(&leader_addr, session_id, &password) {
                        st.error(format!("ending the session {session_id:#x}: {e}"));
                    }
                    let st = st.clone();
                    routes.cut_next_new_session(move |routes: &Routes<'_>, born: &NewSession| {
                        *st.born.lock() = Some(born.clone());
                        routes.route_to(follower);
                        let st = st.clone();
                        routes.on_next_connect(follower, move |_| st.release());
                    });
                }
            }
        };
        self.router.lose_reply(op, before, after_loss);
        Ok(LagRound {
            lag: self,
            state,
            leader,
            follower,
            writer,
            first_connection,
        })
    }
}

/// One round of a [`LaggingFollower`]: armed by [`LaggingFollower::begin`], told by
/// [`report`](Self::report). Dropping it disarms what did not happen and releases a hold still
/// on.
///
/// # Errors
///
/// See the methods.
///
/// # Examples
///
/// ```no_run
/// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
/// let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
/// assert_ne!(round.writer(), round.follower());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct LagRound<'a> {
    lag: &'a LaggingFollower,
    state: Arc<RoundState>,
    leader: usize,
    follower: usize,
    writer: usize,
    first_connection: usize,
}

impl LagRound<'_> {
    /// The leader (the writer too).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// assert_eq!(round.leader(), round.writer());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn leader(&self) -> usize {
        self.leader
    }

    /// The node the lost request goes to.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// println!("writes go to node {}", round.writer());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn writer(&self) -> usize {
        self.writer
    }

    /// The follower made to lag, where the client reconnects after the loss.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// assert_ne!(round.follower(), round.leader());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn follower(&self) -> usize {
        self.follower
    }

    /// Whether the reply was lost already.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// assert!(!round.lost());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lost(&self) -> bool {
        self.state.lost.lock().is_some()
    }

    /// Waits (up to `timeout`) until the reply was lost and the client has had a reply on the
    /// follower after it (for [`AfterLoss::NewSession`]: on its moved new session), then tells
    /// what happened; after `timeout`, what is known (a field is `None` for what did not
    /// happen). The hold is released by then.
    ///
    /// # Errors
    ///
    /// None: what failed is in [`LagReport::errors`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// // ... the operation under test ...
    /// let report = round.report(std::time::Duration::from_secs(10));
    /// if report.lag_present() {
    ///     println!("the proof ran {} writes behind", report.behind_at_arrival().unwrap_or(0));
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn report(&self, timeout: Duration) -> LagReport {
        let deadline = Instant::now() + timeout;
        let mut answered: Option<Instant> = None;
        let arrival = loop {
            let found = self.arrival();
            if found.as_ref().is_some_and(|c| !c.replies.is_empty()) {
                answered.get_or_insert_with(Instant::now);
            }
            // The probe asked at the first request is in, or will not come.
            let probed = found.as_ref().is_some_and(|c| c.node_zxid_at_first_request.is_some())
                || answered.is_some_and(|at| at.elapsed() > SRVR_TIMEOUT + Duration::from_millis(500));
            if (answered.is_some() && probed) || Instant::now() >= deadline {
                break found;
            }
            thread::sleep(Duration::from_millis(5));
        };
        self.state.release();
        let (held_for, released_by_limit) = match *self.state.held_for.lock() {
            Some((d, by_limit)) => (Some(d), by_limit),
            None => (None, false),
        };
        LagReport {
            leader: self.leader,
            follower: self.follower,
            writer: self.writer,
            backlog: *self.state.backlog.lock(),
            lost: self.state.lost.lock().clone(),
            moved_session: self.state.born.lock().clone(),
            arrival,
            held_for,
            released_by_limit,
            errors: self.state.errors.lock().clone(),
        }
    }

    /// The connection on which the client reached the follower after the loss.
    fn arrival(&self) -> Option<ConnectionRecord> {
        let lost = self.state.lost.lock().clone()?;
        let born = self.state.born.lock().clone();
        self.lag
            .router
            .connections()
            .into_iter()
            .enumerate()
            .skip(self.first_connection.max(lost.connection + 1))
            .map(|(_, c)| c)
            .find(|c| {
                c.node == self.follower
                    && c.session.is_some()
                    && match &born {
                        Some(b) => c.session == Some(b.session),
                        None => true,
                    }
            })
    }
}

impl Drop for LagRound<'_> {
    fn drop(&mut self) {
        self.lag.router.disarm();
        self.state.release();
    }
}

/// What a [`LagRound`] saw.
///
/// # Errors
///
/// Not applicable: a plain value.
///
/// # Examples
///
/// ```no_run
/// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
/// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
/// let report = round.report(std::time::Duration::from_secs(10));
/// assert!(report.errors.is_empty(), "{:?}", report.errors);
/// println!("{}", report.summary());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LagReport {
    /// The leader.
    pub leader: usize,
    /// The lagging follower.
    pub follower: usize,
    /// The node the lost request went to.
    pub writer: usize,
    /// The backlog, once written.
    pub backlog: Option<BacklogWritten>,
    /// The lost reply.
    pub lost: Option<LostReply>,
    /// With [`AfterLoss::NewSession`]: the new session, where it was made.
    pub moved_session: Option<NewSession>,
    /// The connection on which the client reached the follower after the loss.
    pub arrival: Option<ConnectionRecord>,
    /// How long the follower was held.
    pub held_for: Option<Duration>,
    /// Whether the hold ended by its limit (the client took too long to reach the follower).
    pub released_by_limit: bool,
    /// What failed in the round's hooks (holding, writing the backlog, ending the session).
    pub errors: Vec<String>,
}

impl LagReport {
    /// Whether the client's first request on the follower after the loss reached it before it
    /// had applied the lost write (its `srvr` zxid, asked right after the request went on, below
    /// the lost reply's zxid): the fault the round is for. A proof read without a `sync` there
    /// may read state from before the write; one after a `sync` waits for the write.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// let lagged = round.report(std::time::Duration::from_secs(10)).lag_present();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lag_present(&self) -> bool {
        self.behind_at_first_request().is_some_and(|b| b > 0)
    }

    /// Whether the client's first request with opcode `op` on the follower after the loss
    /// (its proof: an `exists`, a `getData`, a `getChildren`) was answered before the follower
    /// had applied the lost write. Ask for the report once the operation under test has
    /// returned: every reply it had is recorded by then.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// let stale_proof = round.report(std::time::Duration::from_secs(10)).lag_present_for(zk_proto::OpCode::Exists);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lag_present_for(&self, op: OpCode) -> bool {
        match (&self.lost, &self.arrival) {
            (Some(lost), Some(a)) => a.first_reply_to(op).is_some_and(|z| z < lost.zxid),
            _ => false,
        }
    }

    /// How many writes the follower had still to apply, up to the lost one, when the client's
    /// connection to it was established (the lost reply's zxid less the follower's `srvr`
    /// zxid then); negative when it had applied more.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// println!("{:?} writes behind", round.report(std::time::Duration::from_secs(10)).behind_at_arrival());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn behind_at_arrival(&self) -> Option<i64> {
        let lost = self.lost.as_ref()?;
        let at = self.arrival.as_ref()?.node_zxid_at_establish?;
        Some(lost.zxid - at)
    }

    /// How many writes the follower had still to apply, up to the lost one, when the client's
    /// first request after the loss reached it (at least: the `srvr` asked right after).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// println!("{:?}", round.report(std::time::Duration::from_secs(10)).behind_at_first_request());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn behind_at_first_request(&self) -> Option<i64> {
        let lost = self.lost.as_ref()?;
        Some(lost.zxid - self.arrival.as_ref()?.node_zxid_at_first_request?)
    }

    /// How many writes the follower had still to apply, up to the lost one, when it answered
    /// the client's first request after the loss (its reply's header zxid).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// println!("{:?}", round.report(std::time::Duration::from_secs(10)).behind_at_first_reply());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn behind_at_first_reply(&self) -> Option<i64> {
        let lost = self.lost.as_ref()?;
        Some(lost.zxid - self.arrival.as_ref()?.first_reply_zxid()?)
    }

    /// One line: the roles, the backlog, the hold, and how far behind the follower was.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let lag = zk_testing::apache::LaggingFollower::start(Default::default())?;
    /// # let round = lag.begin(zk_proto::OpCode::Multi, zk_testing::apache::AfterLoss::SameSession)?;
    /// println!("{}", round.report(std::time::Duration::from_secs(10)).summary());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn summary(&self) -> String {
        let backlog = match &self.backlog {
            Some(b) => format!("{} writes in {:?}", b.last_zxid - b.first_zxid + 1, b.took),
            None => "none".into(),
        };
        let since_loss = |at: Option<Instant>| match (&self.lost, at) {
            (Some(l), Some(at)) => format!("{:?}", at.saturating_duration_since(l.at)),
            _ => "-".into(),
        };
        format!(
            "lag {}: writer {} -> follower {}, backlog {backlog}, held {:?}{}, lost zxid {}, \
             reconnect +{} established +{}, behind at arrival {:?}, at first request {:?}, \
             at first reply {:?}{}",
            if self.lag_present() { "PRESENT" } else { "absent" },
            self.writer,
            self.follower,
            self.held_for.unwrap_or_default(),
            if self.released_by_limit { " (by its limit)" } else { "" },
            self.lost.as_ref().map_or("none".into(), |l| format!("{:#x}", l.zxid)),
            since_loss(self.arrival.as_ref().map(|a| a.opened)),
            since_loss(self.arrival.as_ref().and_then(|a| a.established)),
            self.behind_at_arrival(),
            self.behind_at_first_request(),
            self.behind_at_first_reply(),
            if self.errors.is_empty() {
                String::new()
            } else {
                format!(", errors: {}", self.errors.join("; "))
            },
        )
    }
}

// Named `lagging` so that CI's step on Apache ZooKeeper skips it with the other `lagging::`
// suites: it starts its own ensembles whatever `ZK_TEST_SERVER` says, and runs, required, in
// the step on the embedded server.
#[cfg(test)]
mod lagging {
    use super::*;
    use crate::wait_until;
    use zk_proto::{PathWatchRequest, SetDataRequest};

    fn addr(cluster: &ApacheCluster, i: usize) -> String {
        format!("127.0.0.1:{}", cluster.client_port(i))
    }

    /// The promises of the hold, the backlog, the session end and the router, on one
    /// partitionable ensemble (and one that is not).
    #[test]
    fn a_held_follower_falls_behind_and_catches_up_and_the_router_routes_loses_and_moves() {
        if !crate::apache::available_or_skip("apache::lag::lagging::a_held_follower_falls_behind") {
            return;
        }
        crate::support::init_log();
        let wait = Duration::from_secs(30);
        let cluster = ApacheCluster::start_partitionable(3, ApacheConfig::default()).unwrap();
        let leader = cluster.leader().unwrap();
        let follower = (leader + 1) % 3;

        // What a hold refuses.
        let kind = |r: io::Result<FollowerHold>| r.map(|_| ()).unwrap_err().kind();
        assert_eq!(
            kind(cluster.hold_follower(leader, Duration::from_secs(1))),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            kind(cluster.hold_follower(7, Duration::from_secs(1))),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            kind(cluster.hold_follower(follower, cluster.sync_limit().mul_f64(0.61))),
            ErrorKind::InvalidInput
        );

        // Held, the follower does not see a backlog; released, it catches up.
        cluster.wait_caught_up(wait).unwrap();
        let hold = cluster.hold_follower(follower, Duration::from_secs(2)).unwrap();
        assert_eq!((hold.leader(), hold.follower()), (leader, follower));
        let w = cluster
            .write_backlog(
                leader,
                &Backlog {
                    writes: 300,
                    data_len: 10,
                },
            )
            .unwrap();
        assert_eq!(w.last_zxid - w.first_zxid, 299, "{w:?}");
        assert!(cluster.last_zxid(leader).unwrap() >= w.last_zxid);
        assert!(
            cluster.last_zxid(follower).unwrap() < w.first_zxid,
            "the follower applied the backlog"
        );
        assert!(!hold.is_released());
        let held = hold.release();
        assert!(hold.is_released() && !hold.released_by_limit());
        assert_eq!(hold.release(), held, "a second release changes nothing");
        assert_eq!(hold.held_for(), held);
        let z = cluster.wait_caught_up(wait).unwrap();
        assert!(z >= w.last_zxid);
        assert!(cluster.last_zxid(follower).unwrap() >= w.last_zxid);
        drop(hold);

        // A hold ends by its limit.
        let hold = cluster.hold_follower(follower, Duration::from_millis(300)).unwrap();
        assert!(wait_until(Duration::from_secs(5), || hold.is_released()));
        assert!(hold.released_by_limit());
        let held = hold.held_for();
        assert!(
            held >= Duration::from_millis(300) && held < Duration::from_secs(3),
            "{held:?}"
        );
        drop(hold);
        assert!(
            !cluster.link_state().unwrap().get(leader, follower),
            "the link flows again"
        );

        // A session ended through the leader is gone; ending it again is no error.
        let (_c, resp) = RawConnection::connect(&addr(&cluster, follower), 10_000, None).unwrap();
        cluster.expire_session(leader, resp.session_id, &resp.passwd).unwrap();
        let (_again, r) =
            RawConnection::connect(&addr(&cluster, leader), 10_000, Some((resp.session_id, &resp.passwd))).unwrap();
        assert!(r.timeout <= 0, "the session still lives: {r:?}");
        cluster.expire_session(leader, resp.session_id, &resp.passwd).unwrap();

        // The router: every proxy forwards to the node routed to.
        let router = ClientRouter::start(&cluster).unwrap();
        let proxies: Vec<String> = router.connect_string().split(',').map(String::from).collect();
        assert_eq!(proxies.len(), 3);
        router.route_to(follower);
        let (connected_tx, connected_rx) = crossbeam_channel::bounded(1);
        router.on_next_connect(follower, move |id| {
            let _ = connected_tx.send(id);
        });
        let (mut c, resp) = RawConnection::connect(&proxies[leader], 10_000, None).unwrap();
        let id = connected_rx.recv_timeout(wait).expect("the connect hook ran");
        // The probe at the establishment is asked after the ConnectResponse went on.
        assert!(wait_until(wait, || router.connections()[id]
            .node_zxid_at_establish
            .is_some()));
        let record = router.connections()[id].clone();
        assert_eq!(record.node, follower);
        assert_eq!(
            (record.requested_session, record.session),
            (Some(0), Some(resp.session_id))
        );
        assert!(record.established.is_some());
        assert!(router.accepted(leader) >= 1);
        let r = c
            .request(
                OpCode::Exists,
                &PathWatchRequest {
                    path: "/".into(),
                    watch: false,
                },
            )
            .unwrap();
        assert!(wait_until(wait, || {
            let rec = &router.connections()[id];
            rec.node_zxid_at_first_request.is_some() && rec.first_reply_to(OpCode::Exists) == Some(r.header.zxid)
        }));
        assert_eq!(router.connections()[id].first_reply_zxid(), Some(r.header.zxid));

        // A lost reply: held while `before` runs, applied, dropped, the connection closed,
        // `after` run; then routed back to each proxy's own node.
        let (tx, rx) = crossbeam_channel::unbounded::<&str>();
        let tx2 = tx.clone();
        router.lose_reply(
            OpCode::SetData,
            move || {
                let _ = tx.send("before");
            },
            move |routes, lost| {
                routes.unroute();
                let _ = tx2.send(if lost.err == 0 { "after" } else { "after, refused" });
            },
        );
        assert!(router.is_armed());
        let set = SetDataRequest {
            path: BACKLOG_PATH.into(),
            data: b"lost".to_vec(),
            version: -1,
        };
        c.send(OpCode::SetData, Some(&set)).unwrap();
        assert!(
            c.read_reply().is_err(),
            "the reply was dropped and the connection closed"
        );
        assert_eq!(rx.recv_timeout(wait).ok(), Some("before"));
        assert_eq!(rx.recv_timeout(wait).ok(), Some("after"));
        assert!(!router.is_armed());
        let lost = router.lost_replies();
        assert_eq!(lost.len(), 1);
        assert_eq!(
            (lost[0].node, lost[0].connection, lost[0].op),
            (follower, id, OpCode::SetData.code())
        );
        assert!(router.connections()[id].lost_reply);
        cluster.wait_caught_up(wait).unwrap();
        assert!(
            cluster.last_zxid(leader).unwrap() >= lost[0].zxid,
            "the write was applied"
        );
        let (_d, _) = RawConnection::connect(&proxies[leader], 10_000, None).unwrap();
        assert_eq!(
            router.connections().last().unwrap().node,
            leader,
            "unrouted: proxy i reaches node i"
        );

        // A new session moved before its first request.
        let (tx, rx) = crossbeam_channel::bounded(1);
        router.cut_next_new_session(move |routes, born| {
            routes.route_to(follower);
            let _ = tx.send(born.clone());
        });
        let (mut e, resp) = RawConnection::connect(&proxies[leader], 10_000, None).unwrap();
        let _ = e.send(
            OpCode::Exists,
            Some(&PathWatchRequest {
                path: "/".into(),
                watch: false,
            }),
        );
        assert!(e.read_reply().is_err(), "cut before its first request");
        let born = rx.recv_timeout(wait).expect("the cut's hook ran");
        assert_eq!((born.node, born.session), (leader, resp.session_id));
        assert!(router.connections()[born.connection].cut_before_first_request);
        let (_moved, again) =
            RawConnection::connect(&proxies[leader], 10_000, Some((resp.session_id, &resp.passwd))).unwrap();
        assert_eq!(again.session_id, resp.session_id, "the session resumed");
        assert_eq!(router.connections().last().unwrap().node, follower);
        router.disarm();
        drop(router);
        drop(cluster);

        // An ensemble that is not partitionable holds nothing.
        let plain = ApacheCluster::start(1, ApacheConfig::default()).unwrap();
        assert_eq!(
            kind(plain.hold_follower(0, Duration::from_secs(1))),
            ErrorKind::Unsupported
        );
    }
}
