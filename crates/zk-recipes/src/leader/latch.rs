//! `LeaderLatch`: Curator's latch (protected `latch-` nodes, the id as data),
//! on the lock core: a participant thread queues a node with the mutex
//! algorithm and leads while that node's holding is held.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use zk_framework::CuratorFramework;

use super::candidate::{self, Ended, Leading, TurnEnd};
use super::contender::{Contender, Kind};
use super::election::{Election, LeaderEvent, LeaderStatus, NotLeaderReason};
use crate::core::{Worker, STOP_BOUND};
use crate::error::{Error, Result};
use crate::leader::builder::ContenderBuilder;
use crate::locks::driver::{Driver, LATCH_LOCK_NAME};
use crate::locks::holding::Holding;
use crate::locks::transaction::GuardedTransaction;

/// Whether closing a leading latch tells its listener and channels.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_recipes::CloseMode::default(), zk_recipes::CloseMode::Silent);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CloseMode {
    /// Say nothing: the event channels end (Curator's `SILENT`, the default).
    /// A normal close is never reported as a loss.
    #[default]
    Silent,
    /// A leader's channels and listener get `NotLeader { reason: Closed }`
    /// before they end (Curator's `NOTIFY_LEADER`).
    NotifyLeader,
}

/// A latch's listener.
type Listener = Box<dyn FnMut(LeaderEvent) + Send>;

/// Builds a [`LeaderLatch`]: [`LeaderLatch::builder`]. Its id, policy and
/// build are every participant's ([`ContenderBuilder`]); its close mode and
/// listener are the latch's own.
pub type LeaderLatchBuilder = ContenderBuilder<Latch>;

/// A latch's own settings (see [`LeaderLatchBuilder`]).
#[derive(Default)]
pub struct LatchOptions {
    close_mode: CloseMode,
    listener: Option<Listener>,
}

impl std::fmt::Debug for LatchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatchOptions")
            .field("close_mode", &self.close_mode)
            .field("listener", &self.listener.is_some())
            .finish()
    }
}

impl LeaderLatchBuilder {
    /// Whether `close()` tells a leader's channels and listener
    /// ([`CloseMode`]; default [`CloseMode::Silent`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::{CloseMode, LeaderLatch};
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = LeaderLatch::builder(&client, "/election").close_mode(CloseMode::NotifyLeader).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close_mode(mut self, mode: CloseMode) -> Self {
        self.options.close_mode = mode;
        self
    }

    /// A listener told every [`LeaderEvent`], in order, on a thread of its
    /// own (it may call the latch, and a slow listener holds nothing up).
    /// It runs from `start()` until the latch closes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::{LeaderEvent, LeaderLatch};
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = LeaderLatch::builder(&client, "/election")
    ///     .listener(|e| match e {
    ///         LeaderEvent::Leader { term } => println!("leading, term {term}"),
    ///         other => println!("{other:?}"),
    ///     })
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn listener(mut self, f: impl FnMut(LeaderEvent) + Send + 'static) -> Self {
        self.options.listener = Some(Box::new(f));
        self
    }
}

/// A participant in a leader election, wire-compatible with Curator's
/// `LeaderLatch`: Java latches and these on one path are one election.
///
/// After [`start`](LeaderLatch::start) a background thread keeps one node
/// (`_c_<uuid>-latch-<seq>`, the participant id as data) in the election and
/// watches only its predecessor; the first node leads. Leadership is granted
/// only when that node belongs to the current session (Curator's
/// CURATOR-696 check), and a node deleted by someone else, gone with an
/// expired session, or whose parent vanished is replaced by a new one while
/// the latch is started.
///
/// The truth about leadership is three-valued ([`LeaderStatus`]):
/// [`check`](LeaderLatch::check) is `Ok` only while certainly leader, and
/// every change goes, in order, to [`events`](LeaderLatch::events) channels
/// and to the builder's listener. Each leadership has a fencing
/// [`term`](LeaderLatch::term) (its node's czxid, which only grows in an
/// election) and guarded writes ([`transaction`](LeaderLatch::transaction)).
///
/// What every participant answers is [`Contender`]'s, written once for
/// the latch and the selector: [`status`](Contender::status),
/// [`has_leadership`](Contender::has_leadership),
/// [`events`](Contender::events), [`last_error`](Contender::last_error),
/// [`id`](Contender::id), [`path`](Contender::path),
/// [`participants`](Contender::participants) and
/// [`leader`](Contender::leader). Dropping a started LeaderLatch closes it.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_recipes::LeaderLatch;
///
/// let latch = LeaderLatch::builder(&client, "/services/billing/leader").id("billing-1").build()?;
/// latch.start()?;
/// if latch.await_leadership_for(Duration::from_secs(10))? {
///     latch.check()?; // before each side effect
///     println!("leading in term {}", latch.term().unwrap());
/// }
/// latch.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type LeaderLatch = Contender<Latch>;

/// The latch's kind of [`Contender`]: its election, close mode, thread and
/// listener.
pub struct Latch {
    election: Arc<Election>,
    close_mode: CloseMode,
    /// The participant thread (cancelled at close: it wakes wherever it
    /// waits).
    worker: Mutex<Option<Worker>>,
    listener: Mutex<Option<Listener>>,
    /// How far the listener has got (for `resign()`).
    told: Arc<Told>,
}

/// How far a latch's listener has got: the count of published events its
/// channel started from and how many it has handled, and its thread. A
/// resign waits for it (bounded) before giving the node up, so that work
/// that stops on the listener's `NotLeader` has stopped before the next
/// participant can be granted.
#[derive(Default)]
struct Told {
    progress: Mutex<Option<(u64, u64)>>,
    changed: parking_lot::Condvar,
    thread: std::sync::OnceLock<std::thread::ThreadId>,
}

impl Told {
    /// Waits until the listener has handled every event up to the
    /// `published`-th, or `deadline`; at once without a listener, or on the
    /// listener's own thread (a listener that resigns).
    fn wait(&self, published: u64, deadline: Instant) {
        if self.thread.get() == Some(&std::thread::current().id()) {
            return;
        }
        let mut p = self.progress.lock();
        while let Some((base, handled)) = *p {
            if base + handled >= published || self.changed.wait_until(&mut p, deadline).timed_out() {
                break;
            }
        }
    }

    fn handled_one(&self) {
        if let Some((_, handled)) = self.progress.lock().as_mut() {
            *handled += 1;
        }
        self.changed.notify_all();
    }
}

impl LeaderLatch {
    /// A latch in the election at `path`, with the defaults (see
    /// [`LeaderLatch::builder`]).
    ///
    /// # Errors
    ///
    /// As [`LeaderLatchBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str) -> Result<LeaderLatch> {
        LeaderLatch::builder(client, path).build()
    }

    /// A builder: id, policy, close mode, listener.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::builder(&client, "/election").id("a").build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(client: &CuratorFramework, path: &str) -> LeaderLatchBuilder {
        ContenderBuilder::new(client, path, LatchOptions::default())
    }

    /// Joins the election: returns at once; a background thread creates the
    /// node (waiting for a connection as the client's retry policy allows,
    /// and again after each failure) and takes leadership when it is first.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] when started before;
    /// [`Error::Closed`] after `close()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// assert!(latch.start().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        let election = &self.inner.election;
        election.start()?;
        if let Some(mut f) = self.inner.listener.lock().take() {
            let (rx, base) = election.subscribe_counted();
            let told = self.inner.told.clone();
            *told.progress.lock() = Some((base, 0));
            // It ends with its channel, at close: no cancel of its own.
            let spawned = Worker::spawn("LeaderLatch", &election.path, "leader-latch-listener", move |_cancel| {
                let _ = told.thread.set(std::thread::current().id());
                for ev in rx {
                    // A listener that panics is logged and keeps hearing the
                    // events that follow.
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(ev))).is_err() {
                        log::error!("a leader latch listener panicked on {ev:?}");
                    }
                    told.handled_one();
                }
                // Gone: nobody waits for it any more.
                *told.progress.lock() = None;
                told.changed.notify_all();
            });
            if let Err(e) = spawned {
                *self.inner.told.progress.lock() = None;
                log::error!("cannot start the latch's listener thread: {e}");
            }
        }
        let inner = self.inner.kind();
        match Worker::spawn("LeaderLatch", &election.path, "leader-latch", move |cancel| {
            candidate::run(&inner.election, &cancel, &mut Turns { inner: &inner });
        }) {
            Ok(w) => {
                *self.inner.worker.lock() = Some(w);
                Ok(())
            }
            Err(e) => {
                let _ = election.close(false);
                Err(e)
            }
        }
    }

    /// Leaves the election: the leadership ends, the node is deleted, every
    /// event channel ends, and every `await` returns [`Error::Closed`].
    /// Returns when the node is deleted, or after 2 s with the delete going
    /// on in the background. No create is begun once the close has begun,
    /// and one in flight at the close (its reply not in yet) leaves no node:
    /// the latch's thread, when the reply comes, deletes it (while this
    /// waits for it, or after it has returned).
    ///
    /// What a leader is told of its close depends on the [`CloseMode`]:
    /// with [`CloseMode::Silent`] (the default) nothing at all (its
    /// [`events`](Self::events) channels end, its listener hears nothing
    /// more); with [`CloseMode::NotifyLeader`] `NotLeader { Closed }` is on
    /// every channel before the node is deleted, and the listener has
    /// handled it (waited for at most 2 s), as for
    /// [`resign`](Self::resign). A participant that was not leading is told
    /// nothing in either mode.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`] when never started; [`Error::Closed`]
    /// when closed before.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// latch.close()?;
    /// assert!(latch.close().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        Kind::close(&**self.inner)
    }

    /// Waits until this latch is certainly the leader.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`], [`Error::Closed`] (also when closed
    /// while waiting); the participant's failure when it cannot take part
    /// and retrying cannot help (for example `NoAuth`: the ACL forbids the
    /// create).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// latch.await_leadership()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn await_leadership(&self) -> Result<()> {
        self.inner.election.await_until(None).map(|_| ())
    }

    /// Waits at most `timeout` to be certainly the leader: `Ok(true)` when it
    /// is, `Ok(false)` when the time ran out (a value, not an error).
    ///
    /// # Errors
    ///
    /// As [`LeaderLatch::await_leadership`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// let leading = latch.await_leadership_for(std::time::Duration::from_secs(5))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn await_leadership_for(&self, timeout: Duration) -> Result<bool> {
        self.await_leadership_until(Instant::now().checked_add(timeout))
    }

    /// As [`LeaderLatch::await_leadership_for`], until `deadline` (`None`:
    /// no deadline).
    ///
    /// # Errors
    ///
    /// As [`LeaderLatch::await_leadership`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    /// let leading = latch.await_leadership_until(Some(deadline))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn await_leadership_until(&self, deadline: Option<Instant>) -> Result<bool> {
        self.inner.election.await_until(deadline)
    }

    /// `Ok` only while certainly the leader: call it before each side effect.
    /// A leader whose session expired while its process was paused gets an
    /// error here before anything else tells it.
    ///
    /// # Errors
    ///
    /// [`Error::LeadershipUncertain`] while uncertain
    /// ([`SuspendPolicy::Session`](crate::SuspendPolicy::Session)); [`Error::NotStarted`] before `start()`,
    /// [`Error::Closed`] after `close()`; [`Error::NotLeader`]
    /// otherwise.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// latch.await_leadership()?;
    /// latch.check()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self) -> Result<()> {
        self.inner.election.check()
    }

    /// The current leadership's fencing term (its node's czxid): it only
    /// grows across the election (a later leader's node was created later).
    /// `None` when not leader; a leadership regained on the same node after
    /// a standard-policy suspension keeps its term (nobody else can have
    /// led in between: the node stayed first).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// latch.await_leadership()?;
    /// assert!(latch.term().unwrap() > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn term(&self) -> Option<i64> {
        self.inner.election.term()
    }

    /// The instant until which the current leadership certainly holds (the
    /// session's safe horizon, as a lock's `safe_until`); `None` when not
    /// leader.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// latch.await_leadership()?;
    /// assert!(latch.safe_until().unwrap() > std::time::Instant::now());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn safe_until(&self) -> Option<Instant> {
        self.inner.election.safe_until()
    }

    /// A ZooKeeper transaction that commits only while this leadership holds:
    /// it checks the leader's node in the same multi (see
    /// [`GuardedTransaction`]).
    ///
    /// # Errors
    ///
    /// As [`LeaderLatch::check`], when not certainly the leader now.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// latch.await_leadership()?;
    /// latch.transaction()?.set_data("/app/config", b"v2".to_vec(), None).commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transaction(&self) -> Result<GuardedTransaction<'static>> {
        self.inner.election.transaction()
    }

    /// Steps down without leaving: the node is deleted (the next participant
    /// leads, on the deletion event alone when it is one of ours) and a new
    /// one joins at the back of the queue. Alone in the election, this latch
    /// leads again, in a new term. Returns when the old node is deleted (or
    /// its delete is handed to the background).
    ///
    /// `NotLeader { Resigned }` is told before the node is deleted, so before
    /// any other participant can lead: it is on every [`events`](Self::events)
    /// channel when this returns, and the builder's
    /// [`listener`](LeaderLatchBuilder::listener) has handled it (waited for
    /// at most 2 s; not when the listener itself resigns), so that work it
    /// stops on that event has stopped before the next leader starts.
    ///
    /// # Errors
    ///
    /// [`Error::NotLeader`] when not the leader (nor uncertain);
    /// [`Error::NotStarted`] / [`Error::Closed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// latch.await_leadership()?;
    /// latch.resign()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resign(&self) -> Result<()> {
        let election = &self.inner.election;
        election.require_started()?;
        if election.status() == LeaderStatus::NotLeader {
            return Err(Error::NotLeader {
                path: election.path.clone(),
            });
        }
        let (Some(h), published) = election.end_counted(NotLeaderReason::Resigned) else {
            return Err(Error::NotLeader {
                path: election.path.clone(),
            });
        };
        // `NotLeader { Resigned }` is on every channel now; the listener
        // handles it before the node goes (and the next participant leads).
        self.inner.told.wait(published, Instant::now() + STOP_BOUND);
        // The release ends the holding's event channel: the participant
        // thread queues again.
        match h.release_node() {
            Err(Error::LockLost { .. }) => Err(Error::NotLeader {
                path: election.path.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Hands leadership to the next participant in the queue: as
    /// [`LeaderLatch::resign`] when there is one (`Ok(Some(its id))`), and
    /// nothing at all when this latch is alone (`Ok(None)`: it stays leader).
    ///
    /// # Errors
    ///
    /// As [`LeaderLatch::resign`]; [`Error::ZooKeeper`] when the queue
    /// cannot be read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// latch.await_leadership()?;
    /// match latch.hand_off()? {
    ///     Some(next) => println!("handed to {next}"),
    ///     None => println!("nobody to hand to: still leading"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hand_off(&self) -> Result<Option<String>> {
        let election = &self.inner.election;
        election.require_started()?;
        self.check()?;
        let ours = election.leader_node();
        let next = self
            .participants()?
            .into_iter()
            .find(|p| Some(&p.node) != ours.as_ref() && !p.holds);
        match next {
            None => Ok(None),
            Some(p) => {
                self.resign()?;
                Ok(Some(p.id))
            }
        }
    }

    /// The node this latch leads with (its full path); `None` when not
    /// leader (nor uncertain). Curator's `getOurPath`, for the leader.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// latch.start()?;
    /// latch.await_leadership()?;
    /// assert!(latch.node().unwrap().contains("-latch-"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn node(&self) -> Option<String> {
        let e = &self.inner.election;
        if e.status() == LeaderStatus::NotLeader {
            return None;
        }
        e.leader_node()
    }
}

impl Kind for Latch {
    const NAME: &'static str = "LeaderLatch";
    const BUILDER_NAME: &'static str = "LeaderLatchBuilder";
    const DRIVER: Driver = Driver::LATCH;
    const LOCK_NAME: &'static str = LATCH_LOCK_NAME;
    type Options = LatchOptions;

    fn new(election: Arc<Election>, options: LatchOptions) -> Latch {
        Latch {
            election,
            close_mode: options.close_mode,
            worker: Mutex::new(None),
            listener: Mutex::new(options.listener),
            told: Arc::default(),
        }
    }

    fn election(&self) -> &Arc<Election> {
        &self.election
    }

    fn close(&self) -> Result<()> {
        let election = &self.election;
        let (holding, published) = election.close_counted(self.close_mode == CloseMode::NotifyLeader)?;
        let end = Instant::now() + STOP_BOUND;
        if holding.is_some() && self.close_mode == CloseMode::NotifyLeader {
            self.told.wait(published, end);
        }
        if let Some(h) = holding {
            // A lock's release bound: a tenth of the session timeout, 100 ms
            // to 2 s; an unanswered delete goes on in the background.
            let _ = h.release_node();
        }
        // Wakes the participant thread; it deletes a node it is waiting
        // with, or one it wins from now on.
        if let Some(w) = self.worker.lock().take() {
            w.stop_until(end);
        }
        Ok(())
    }
}

/// The latch's turns: one after another while started (its thread's cancel
/// is every turn's); leading is watching the holding until it is lost (it is
/// released and the loop queues again), released (a resign or the close),
/// or the client closes.
struct Turns<'a> {
    inner: &'a Latch,
}

impl Leading for Turns<'_> {
    fn next_turn(&mut self, cancel: &Receiver<()>) -> Option<Receiver<()>> {
        match cancel.try_recv() {
            Err(crossbeam_channel::TryRecvError::Disconnected) => None,
            _ => Some(cancel.clone()),
        }
    }

    fn lead(&mut self, holding: Holding, turn: &Receiver<()>) {
        let election = &self.inner.election;
        let events = holding.events();
        // The election keeps its own share.
        drop(holding);
        let reason = match candidate::watch(election, &events, turn) {
            Ended::ClientClosed => NotLeaderReason::ClientClosed,
            // (A loss seen first is told as the loss: `end` tells the cause.)
            Ended::Lost => NotLeaderReason::SessionExpired,
            Ended::Released | Ended::Stopped => return,
        };
        if let Some(h) = election.end(reason) {
            // Lost or closed: the release only hands its delete to the
            // background (a node deleted with its session is gone; one
            // deleted by someone else too).
            let _ = h.release_node();
        }
    }

    fn turn_over(&mut self, _end: TurnEnd) {}
}
