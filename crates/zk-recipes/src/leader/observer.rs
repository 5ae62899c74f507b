//! `LeaderObserver`: who leads an election, watched without joining it, with
//! one watch at a time (on the leader's node, or on the empty election).

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use zk_framework::CuratorFramework;

use super::participant;
use crate::core::queue;
use crate::core::wait::{wait_or_cancel, Woken};
use crate::core::{Backoff, Subscribers, Worker};
use crate::error::Result;
use crate::locks::driver::Driver;
use crate::locks::internals::state_changes;
use crate::locks::participants::Participant;

/// Which recipe's election an observer watches (their nodes sort
/// differently: see [`crate::guide::leader`]).
///
/// # Examples
///
/// ```
/// assert_eq!(zk_recipes::ElectionKind::Latch.lock_name(), "latch-");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElectionKind {
    /// [`LeaderLatch`](super::LeaderLatch) (and Curator's): `latch-` nodes.
    Latch,
    /// [`LeaderSelector`](super::LeaderSelector) (and Curator's): `lock-`
    /// nodes.
    Selector,
}

impl ElectionKind {
    /// The lock name of the kind's nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ElectionKind::Selector.lock_name(), "lock-");
    /// ```
    pub fn lock_name(self) -> &'static str {
        match self {
            ElectionKind::Latch => crate::locks::driver::LATCH_LOCK_NAME,
            ElectionKind::Selector => crate::locks::driver::MUTEX_LOCK_NAME,
        }
    }

    pub(crate) fn driver(self) -> Driver {
        match self {
            ElectionKind::Latch => Driver::LATCH,
            ElectionKind::Selector => Driver::MUTEX,
        }
    }
}

/// Watches who leads an election without taking part: the current leader
/// (id, identity, term) or none, and every change on a channel.
///
/// Herd-free: it keeps one watch at a time, on the leader's node (only the
/// leader's going can change who leads: new participants queue behind it),
/// or on the election itself while nobody takes part. So an election with
/// many observers wakes each once per change of leader, and a participant
/// joining or leaving the queue wakes none.
///
/// The leader it reports is the first node in the election's order, as
/// Curator's `getLeader()` reads it: that participant may not have noticed
/// yet that it leads. Clones share this observer (one thread, one watch); it
/// closes at [`close`](LeaderObserver::close) or when the last clone is
/// dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_recipes::{ElectionKind, LeaderLatch, LeaderObserver};
///
/// let observer = LeaderObserver::new(&client, "/services/search/leader", ElectionKind::Latch)?;
/// let changes = observer.events();
/// assert_eq!(changes.recv_timeout(Duration::from_secs(10))?, None); // nobody leads yet
/// let latch = LeaderLatch::builder(&client, "/services/search/leader").id("search-1").build()?;
/// latch.start()?;
/// let leader = changes.recv_timeout(Duration::from_secs(10))?.expect("a leader");
/// assert_eq!(leader.id, "search-1");
/// latch.close()?;
/// assert_eq!(changes.recv_timeout(Duration::from_secs(10))?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct LeaderObserver {
    inner: Arc<Inner>,
    closer: Arc<Closer>,
}

/// What the handles share and the thread does not: the last handle dropped
/// closes the observer.
struct Closer {
    inner: Arc<Inner>,
    /// The observing thread (`None` once closed).
    worker: parking_lot::Mutex<Option<Worker>>,
}

impl Closer {
    fn close(&self) {
        if let Some(w) = self.worker.lock().take() {
            w.stop();
        }
        self.inner.state.lock().subscribers.close();
    }
}

impl Drop for Closer {
    fn drop(&mut self) {
        self.close();
    }
}

struct Inner {
    client: CuratorFramework,
    path: String,
    kind: ElectionKind,
    state: Mutex<Seen>,
}

struct Seen {
    /// `None` before the first read.
    current: Option<Option<Participant>>,
    subscribers: Subscribers<Option<Participant>>,
}

impl std::fmt::Debug for LeaderObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderObserver")
            .field("path", &self.inner.path)
            .field("kind", &self.inner.kind)
            .finish()
    }
}

impl LeaderObserver {
    /// Starts observing the election at `path` of the given kind (a thread
    /// that reads and watches until [`LeaderObserver::close`] or drop).
    ///
    /// # Errors
    ///
    /// [`crate::Error::ZooKeeper`] with [`zk_framework::Error::InvalidPath`]
    /// for a path that breaks ZooKeeper's rules;
    /// [`crate::Error::InvalidArgument`] for the root path;
    /// [`crate::Error::SpawnFailed`] when the thread cannot start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::{ElectionKind, LeaderObserver};
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let observer = LeaderObserver::new(&client, "/election", ElectionKind::Latch)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, kind: ElectionKind) -> Result<LeaderObserver> {
        super::election::check_election_path(path)?;
        let inner = Arc::new(Inner {
            client: client.clone(),
            path: path.to_string(),
            kind,
            state: Mutex::new(Seen {
                current: None,
                subscribers: Subscribers::new(),
            }),
        });
        let thread_inner = inner.clone();
        let worker = Worker::spawn("LeaderObserver", path, "leader-observer", move |cancel| {
            observe(&thread_inner, &cancel)
        })?;
        Ok(LeaderObserver {
            closer: Arc::new(Closer {
                inner: inner.clone(),
                worker: parking_lot::Mutex::new(Some(worker)),
            }),
            inner,
        })
    }

    /// The leader as last read (`None`: nobody leads, or not read yet).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let observer = zk_recipes::LeaderObserver::new(&client, "/election", zk_recipes::ElectionKind::Latch)?;
    /// if let Some(l) = observer.leader() { println!("{} leads in term {}", l.id, l.fencing_token) }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn leader(&self) -> Option<Participant> {
        self.inner.state.lock().current.clone().flatten()
    }

    /// Every change of leader from now on (`None`: nobody leads); first the
    /// leader as last read, once read. The channel ends at close.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let observer = zk_recipes::LeaderObserver::new(&client, "/election", zk_recipes::ElectionKind::Latch)?;
    /// for leader in observer.events() {
    ///     println!("now: {:?}", leader.map(|l| l.id));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<Option<Participant>> {
        let mut st = self.inner.state.lock();
        match st.current.clone() {
            Some(now) => st.subscribers.subscribe_with(now),
            None => st.subscribers.subscribe(),
        }
    }

    /// The old name of [`events`](Self::events).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let observer = zk_recipes::LeaderObserver::new(&client, "/election", zk_recipes::ElectionKind::Latch)?;
    /// #[allow(deprecated)]
    /// let changes = observer.changes();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "every recipe's event channel is `events()`")]
    pub fn changes(&self) -> Receiver<Option<Participant>> {
        self.events()
    }

    /// Stops observing: the thread ends (within 2 s) and every channel ends.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let observer = zk_recipes::LeaderObserver::new(&client, "/election", zk_recipes::ElectionKind::Latch)?;
    /// observer.close();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.closer.close();
    }
}

fn publish(inner: &Inner, now: Option<Participant>) {
    let mut st = inner.state.lock();
    let same = match (&st.current, &now) {
        (Some(Some(a)), Some(b)) => a.node == b.node,
        (Some(None), None) => true,
        _ => false,
    };
    if same {
        return;
    }
    st.current = Some(now.clone());
    st.subscribers.tell(&now);
}

/// Reads the leader and sets one watch: on its node, or on the election
/// while it is empty (children) or missing (exists); waits for it, a state
/// change or the cancel; again.
fn observe(inner: &Inner, cancel: &Receiver<()>) {
    let client = &inner.client;
    let driver = inner.kind.driver();
    let (_states_handle, states) = state_changes(client);
    let mut backoff = Backoff::new();
    loop {
        let (tx, rx) = crossbeam_channel::bounded::<()>(2);
        let watcher = {
            let tx = tx.clone();
            move |_: zk_framework::WatchedEvent| {
                let _ = tx.try_send(());
            }
        };
        let read = (|| -> Result<()> {
            let Some(kids) = super::participant::sorted(client, &inner.path, driver)? else {
                publish(inner, None);
                let tx = tx.clone();
                client
                    .recipe()
                    .exists_w_detached(&inner.path, watcher.clone(), move |r| {
                        if matches!(r, Ok(Some(_))) {
                            let _ = tx.try_send(());
                        }
                    })?;
                return Ok(());
            };
            // The first readable node is the leader: watch it, and only it.
            if let Some(n) = queue::read(client, &inner.path, kids, Some(1), Some(&watcher))?.pop() {
                publish(
                    inner,
                    Some(participant::participant(n.path, driver, &n.data, &n.stat, 0)),
                );
                return Ok(());
            }
            // Nobody: watch the election's children until someone joins.
            match client.get_children_w(&inner.path, watcher.clone()) {
                Ok(k) if k.is_empty() => publish(inner, None),
                // Someone joined meanwhile: read again.
                Ok(_) => {
                    let _ = tx.try_send(());
                }
                Err(zk_framework::Error::NoNode { .. }) => {
                    let _ = tx.try_send(());
                }
                Err(e) => return Err(e.into()),
            }
            Ok(())
        })();
        let deadline = match read {
            Ok(()) => {
                backoff.reset();
                None
            }
            Err(e) => {
                if client.is_closed() {
                    return;
                }
                let pause = backoff.next();
                log::debug!("leader observer at {}: {e}; reading again in {pause:?}", inner.path);
                Some(Instant::now() + pause)
            }
        };
        match wait_or_cancel(client, &rx, &states, deadline, cancel) {
            Woken::Watch(_) | Woken::StateChanged | Woken::Deadline => {}
            Woken::Closed | Woken::Cancelled => return,
        }
    }
}
