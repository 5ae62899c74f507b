//! `LeaderSelector`: Curator's selector (a mutex of `lock-` nodes with the id
//! as data) on the lock core; the leader's work runs as a closure on the
//! selector's one thread, with a [`Leadership`] it can check and that tells
//! it when to stop.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zk_framework::CuratorFramework;

use super::builder::ContenderBuilder;
use super::candidate::{self, Leading, TurnEnd};
use super::contender::{Contender, Kind};
use super::election::{Election, LeaderStatus, Lifecycle, NotLeaderReason};
use crate::core::Worker;
use crate::error::Result;
use crate::locks::driver::{Driver, MUTEX_LOCK_NAME};
use crate::locks::holding::Holding;

mod leadership;
pub use leadership::Leadership;

type Work = Box<dyn FnMut(&Leadership) + Send>;

/// A participant in a leader election whose leadership is a piece of work,
/// wire-compatible with Curator's `LeaderSelector` (a mutex of
/// `_c_<uuid>-lock-<seq>` nodes carrying the participant id).
///
/// When elected, the selector runs its work closure on its own thread with a
/// [`Leadership`]; the leadership lasts exactly as long as the closure runs.
/// Rust cannot interrupt a thread, so the leadership makes cancellation easy
/// to honour: [`Leadership::check`] before each side effect,
/// [`Leadership::cancelled`] to select on, [`Leadership::sleep`] to wait.
/// It is cancelled when the leadership may be lost (at a suspension with
/// [`SuspendPolicy::Standard`](crate::SuspendPolicy::Standard), at the loss with [`SuspendPolicy::Session`](crate::SuspendPolicy::Session)),
/// by [`LeaderSelector::interrupt_leadership`], and by `close()`. The node
/// is deleted only after the closure returns, so the next leader never
/// starts while this one's closure runs; and one selector never runs two
/// closures at once.
///
/// A closure that panics ends its leadership like a return (the panic is
/// logged); with auto-requeue the selector queues again.
///
/// What every participant answers is [`Contender`]'s, written once for
/// the latch and the selector: [`status`](Contender::status),
/// [`has_leadership`](Contender::has_leadership),
/// [`events`](Contender::events), [`last_error`](Contender::last_error),
/// [`id`](Contender::id), [`path`](Contender::path),
/// [`participants`](Contender::participants) and
/// [`leader`](Contender::leader). Dropping a started LeaderSelector closes it.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_recipes::LeaderSelector;
///
/// let (tx, rx) = crossbeam_channel::unbounded();
/// let selector = LeaderSelector::builder(&client, "/services/cron/leader", move |leadership| {
///     // Lead until told to stop (or for a while, here).
///     while leadership.check().is_ok() {
///         tx.send(leadership.term().unwrap()).unwrap();
///         if leadership.sleep(Duration::from_millis(50)) {
///             break; // cancelled
///         }
///     }
/// })
/// .id("cron-1")
/// .build()?;
/// selector.start()?;
/// let term = rx.recv_timeout(Duration::from_secs(10))?;
/// assert!(term > 0);
/// selector.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type LeaderSelector = Contender<Selector>;

/// The selector's kind of [`Contender`]: its election, queue state, work and
/// thread.
pub struct Selector {
    election: Arc<Election>,
    auto_requeue: AtomicBool,
    /// Whether a turn is queued or running (at most one at a time).
    busy: Mutex<bool>,
    wake: (Sender<()>, Receiver<()>),
    /// The current turn's cancel: dropped to cancel its wait or leadership
    /// (shared with the signal that watches a leadership).
    turn: Arc<Mutex<Option<Sender<()>>>>,
    interrupted: AtomicBool,
    work: Mutex<Option<Work>>,
    /// The selector's one thread: the candidate loop and the work.
    worker: Mutex<Option<Worker>>,
}

/// Builds a [`LeaderSelector`]: [`LeaderSelector::builder`]. Its id, policy
/// and build are every participant's ([`ContenderBuilder`]); its requeue and
/// its work are the selector's own.
pub type LeaderSelectorBuilder = ContenderBuilder<Selector>;

/// A selector's own settings (see [`LeaderSelectorBuilder`]).
pub struct SelectorOptions {
    auto_requeue: bool,
    work: Work,
}

impl std::fmt::Debug for SelectorOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectorOptions")
            .field("auto_requeue", &self.auto_requeue)
            .finish()
    }
}

impl LeaderSelectorBuilder {
    /// Queue again after every leadership or failed try (Curator's
    /// `autoRequeue()`); default off: after one turn, call
    /// [`LeaderSelector::requeue`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |_| {}).auto_requeue(true).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn auto_requeue(mut self, on: bool) -> Self {
        self.options.auto_requeue = on;
        self
    }
}

impl LeaderSelector {
    /// A builder for a selector at `path` whose leadership runs `work`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     while !l.sleep(std::time::Duration::from_secs(1)) { /* lead */ }
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(
        client: &CuratorFramework,
        path: &str,
        work: impl FnMut(&Leadership) + Send + 'static,
    ) -> LeaderSelectorBuilder {
        ContenderBuilder::new(
            client,
            path,
            SelectorOptions {
                auto_requeue: false,
                work: Box::new(work),
            },
        )
    }

    /// Starts the selector's thread and queues it once (Curator's `start()`).
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`](crate::Error::AlreadyStarted); [`Error::Closed`](crate::Error::Closed) after `close()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |_| {}).build()?;
    /// s.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        let election = &self.inner.election;
        election.start()?;
        *self.inner.busy.lock() = true;
        let inner = self.inner.kind();
        match Worker::spawn("LeaderSelector", &election.path, "leader-selector", move |cancel| {
            if let Some(mut work) = inner.work.lock().take() {
                let mut turns = Turns {
                    inner: &inner,
                    work: &mut work,
                };
                candidate::run(&inner.election, &cancel, &mut turns);
            }
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

    /// Queues the selector for one more leadership if it is neither queued
    /// nor leading: `Ok(true)`; `Ok(false)` when it is. Once a leadership
    /// has been seen to end, a requeue succeeds.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`](crate::Error::NotStarted); [`Error::Closed`](crate::Error::Closed).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |_| {}).build()?;
    /// s.start()?;
    /// assert!(!s.requeue()?); // already queued by start()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn requeue(&self) -> Result<bool> {
        self.inner.election.require_started()?;
        let mut busy = self.inner.busy.lock();
        if *busy {
            return Ok(false);
        }
        *busy = true;
        let _ = self.inner.wake.0.try_send(());
        Ok(true)
    }

    /// Turns auto-requeue on or off (see
    /// [`LeaderSelectorBuilder::auto_requeue`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |_| {}).build()?;
    /// s.set_auto_requeue(true);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_auto_requeue(&self, on: bool) {
        self.inner.auto_requeue.store(on, Ordering::SeqCst);
    }

    /// Cancels the running leadership, if any (the closure's [`Leadership`]
    /// says so; its node is deleted when the closure returns). A selector
    /// still waiting is not touched. Returns whether there was a leadership
    /// to cancel.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |_| {}).build()?;
    /// assert!(!s.interrupt_leadership());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn interrupt_leadership(&self) -> bool {
        if self.inner.election.leader_node().is_none() {
            return false;
        }
        self.inner.interrupted.store(true, Ordering::SeqCst);
        self.inner.turn.lock().take().is_some()
    }

    /// Leaves the election: a running leadership is cancelled (its node is
    /// deleted when its closure returns), a waiting node is deleted, and no
    /// turn starts again. Waits up to 2 s for the selector's thread to end (a
    /// closure that does not honour the cancellation keeps its node until it
    /// returns: the next leader never starts beside it). No create is begun
    /// once the close has begun, and one in flight at the close (its reply
    /// not in yet) leaves no node: the selector's thread, when the reply
    /// comes, deletes it (while this waits for it, or after it has
    /// returned). Called from the work closure itself, it does not wait for
    /// its own thread.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`](crate::Error::NotStarted); [`Error::Closed`](crate::Error::Closed) when closed before.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |_| {}).build()?;
    /// s.start()?;
    /// s.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        Kind::close(&**self.inner)
    }
}

impl Kind for Selector {
    const NAME: &'static str = "LeaderSelector";
    const BUILDER_NAME: &'static str = "LeaderSelectorBuilder";
    const DRIVER: Driver = Driver::MUTEX;
    const LOCK_NAME: &'static str = MUTEX_LOCK_NAME;
    type Options = SelectorOptions;

    fn new(election: Arc<Election>, options: SelectorOptions) -> Selector {
        Selector {
            election,
            auto_requeue: AtomicBool::new(options.auto_requeue),
            busy: Mutex::new(false),
            wake: crossbeam_channel::bounded(1),
            turn: Arc::new(Mutex::new(None)),
            interrupted: AtomicBool::new(false),
            work: Mutex::new(Some(options.work)),
            worker: Mutex::new(None),
        }
    }

    fn election(&self) -> &Arc<Election> {
        &self.election
    }

    fn close(&self) -> Result<()> {
        // The holding stays with the running turn, which releases it when
        // its closure returns.
        let _ = self.election.close(false)?;
        self.turn.lock().take();
        if let Some(w) = self.worker.lock().take() {
            w.stop();
        }
        Ok(())
    }
}

/// The selector's turns: one when queued (at start, by `requeue()`, or by
/// auto-requeue), each with a cancel of its own; leading is running the work.
struct Turns<'a> {
    inner: &'a Selector,
    work: &'a mut Work,
}

impl Leading for Turns<'_> {
    fn next_turn(&mut self, cancel: &Receiver<()>) -> Option<Receiver<()>> {
        let inner = self.inner;
        while !*inner.busy.lock() {
            crossbeam_channel::select! {
                recv(inner.wake.1) -> _ => {}
                recv(cancel) -> _ => return None,
            }
            if inner.election.lifecycle() != Lifecycle::Started {
                return None;
            }
        }
        let (turn_tx, turn_rx) = crossbeam_channel::bounded::<()>(0);
        *inner.turn.lock() = Some(turn_tx);
        inner.interrupted.store(false, Ordering::SeqCst);
        Some(turn_rx)
    }

    /// The work runs while a signal on the holding (not a thread) follows
    /// it: each change of the holding is followed by the election (told on
    /// `events()`), and a change that ends the leadership (a loss, or a
    /// suspension under the standard policy) cancels the turn, as the
    /// client's close does. The node goes only when the work has returned,
    /// so the next leader never starts while this one's work runs.
    fn lead(&mut self, holding: Holding, turn: &Receiver<()>) {
        let election = &self.inner.election;
        let follower = Arc::downgrade(election);
        let cancel = self.inner.turn.clone();
        holding.subscribe_signal(Arc::new(move |_ev| {
            let Some(election) = follower.upgrade() else {
                return false;
            };
            // Uncertain under the session policy is not (yet) a reason.
            if election.follow() == LeaderStatus::NotLeader {
                cancel.lock().take();
            }
            true
        }));
        let cancel = self.inner.turn.clone();
        let on_close = election.client.recipe().on_close(move || {
            cancel.lock().take();
        });
        let leadership = Leadership {
            election: election.clone(),
            cancel: turn.clone(),
        };
        if std::panic::catch_unwind(AssertUnwindSafe(|| (self.work)(&leadership))).is_err() {
            log::error!("the leader's work at {} panicked; its leadership ends", election.path);
        }
        drop(on_close);
        let reason = if self.inner.interrupted.load(Ordering::SeqCst) {
            NotLeaderReason::Interrupted
        } else if election.lifecycle() == Lifecycle::Closed {
            NotLeaderReason::Closed
        } else {
            NotLeaderReason::Finished
        };
        // (A closed election already ended the leadership.)
        let _ = election.end(reason);
        // The node goes only now (and the signal with it).
        let _ = holding.release_node();
    }

    fn turn_over(&mut self, end: TurnEnd) {
        let inner = self.inner;
        inner.turn.lock().take();
        // A node that vanished (or a try that ran out) queues again; any
        // other end queues again only with auto-requeue.
        *inner.busy.lock() = end == TurnEnd::Vanished || inner.auto_requeue.load(Ordering::SeqCst);
    }
}
