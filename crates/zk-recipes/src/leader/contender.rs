//! [`Contender`]: the one type of an election participant, in the shape of
//! `lock_api` (one generic type, a kind underneath). [`LeaderLatch`] is
//! `Contender<Latch>` and [`LeaderSelector`] `Contender<Selector>`: what
//! every participant answers (its status, its events, its id and path, the
//! election's participants and leader) is written here once, over the
//! election both kinds run; what only a latch or only a selector does is in
//! its own module, on its own kind.
//!
//! [`LeaderLatch`]: super::LeaderLatch
//! [`LeaderSelector`]: super::LeaderSelector

use std::sync::Arc;

use crossbeam_channel::Receiver;

use super::election::{Election, LeaderEvent, LeaderStatus, Lifecycle};
use super::participant;
use crate::error::{Error, Result};
use crate::locks::driver::Driver;
use crate::locks::participants::Participant;

/// What a kind of participant is to the [`Contender`] around it: its
/// election, its node layout and its close. Implemented by the latch and the
/// selector only (the trait cannot be named outside this crate).
pub trait Kind: Send + Sync + 'static {
    /// The public name of the kind (for `Debug`).
    const NAME: &'static str;
    /// The name of its builder (for `Debug`).
    const BUILDER_NAME: &'static str;
    /// The node layout (`latch-` or `lock-` nodes).
    const DRIVER: Driver;
    /// The node name's lock part (`latch-`, `lock-`).
    const LOCK_NAME: &'static str;
    /// The kind's own settings, beside every participant's.
    type Options: std::fmt::Debug;

    /// The kind around its election, with its settings.
    fn new(election: Arc<Election>, options: Self::Options) -> Self;

    /// The election this participant runs.
    fn election(&self) -> &Arc<Election>;

    /// Leaves the election (the kind's `close()`).
    fn close(&self) -> Result<()>;
}

/// A participant in a leader election: [`LeaderLatch`](super::LeaderLatch)
/// (`Contender<Latch>`) or [`LeaderSelector`](super::LeaderSelector)
/// (`Contender<Selector>`). Use those names; the methods below are every
/// participant's, written once. Clones share this participant (one node,
/// one thread); it closes at `close()` or when the last clone is dropped.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use zk_recipes::{LeaderLatch, LeaderSelector};
/// let latch = LeaderLatch::new(&client, "/election/a")?;
/// let selector = LeaderSelector::builder(&client, "/election/b", |_| {}).build()?;
/// // The same questions of either kind:
/// assert!(!latch.has_leadership() && !selector.has_leadership());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Contender<K: Kind> {
    pub(crate) inner: Arc<Handle<K>>,
}

impl<K: Kind> Clone for Contender<K> {
    fn clone(&self) -> Self {
        Contender {
            inner: self.inner.clone(),
        }
    }
}

/// The participant as its handles share it: the last one dropped closes it
/// (the participant's threads hold the kind itself, never a handle).
pub(crate) struct Handle<K: Kind> {
    kind: Arc<K>,
}

impl<K: Kind> Handle<K> {
    pub(crate) fn new(kind: K) -> Arc<Handle<K>> {
        Arc::new(Handle { kind: Arc::new(kind) })
    }

    /// The kind, for a thread of the participant's.
    pub(super) fn kind(&self) -> Arc<K> {
        self.kind.clone()
    }
}

impl<K: Kind> std::ops::Deref for Handle<K> {
    type Target = K;

    fn deref(&self) -> &K {
        &self.kind
    }
}

impl<K: Kind> Drop for Handle<K> {
    fn drop(&mut self) {
        if self.kind.election().lifecycle() == Lifecycle::Started {
            let _ = self.kind.close();
        }
    }
}

impl<K: Kind> Contender<K> {
    pub(super) fn election(&self) -> &Arc<Election> {
        self.inner.election()
    }

    /// Leader, uncertain or not leader, drawn from the holding at the moment
    /// of asking (a change seen here is told on [`events`](Self::events)
    /// first).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// assert_eq!(latch.status(), zk_recipes::LeaderStatus::NotLeader);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> LeaderStatus {
        self.election().status()
    }

    /// Whether this participant is certainly the leader now (Curator's
    /// `hasLeadership`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// assert!(!latch.has_leadership());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn has_leadership(&self) -> bool {
        self.status().is_leader()
    }

    /// Every change of leadership from now on, in order; a participant that
    /// leads (or may) is first told where it stands. The channel ends at
    /// close, so treat its end as the end of leadership (an event read after
    /// `close()` began was published before it). What a leader's close tells
    /// is the kind's: a latch's [`CloseMode`](super::CloseMode); a selector's
    /// work hears it as cancellation
    /// ([`Leadership::cancelled`](super::Leadership::cancelled)), and its
    /// node is deleted only when the work returns.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// let events = latch.events();
    /// latch.start()?;
    /// println!("{:?}", events.recv()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<LeaderEvent> {
        self.election().subscribe()
    }

    /// Why the latest try to join the election failed (for example `NoAuth`:
    /// the ACL forbids the create), until a try succeeds; `None` when nothing
    /// failed. The participant keeps trying, with a growing pause of at most
    /// 2 s (a selector without auto-requeue ends that turn instead).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let x = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// if let Some(e) = x.last_error() { eprintln!("cannot take part: {e}") }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn last_error(&self) -> Option<Error> {
        self.election().error()
    }

    /// The participant id (the node's data).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::builder(&client, "/election").id("a").build()?;
    /// assert_eq!(latch.id(), "a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> &str {
        &self.election().id
    }

    /// The election path (the client's, without its namespace).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// assert_eq!(latch.path(), "/election");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.election().path
    }

    /// Every participant, in election order, read from the server (Curator's
    /// `getParticipants`: the first node is marked leader).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the listing or a read fails (a missing
    /// election path has no participants).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// println!("{} participants", latch.participants()?.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn participants(&self) -> Result<Vec<Participant>> {
        let e = self.election();
        participant::read(&e.client, &e.path, K::DRIVER)
    }

    /// The leader by the election's order, read from the server (`None`:
    /// nobody takes part).
    ///
    /// # Errors
    ///
    /// As [`participants`](Self::participants).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::new(&client, "/election")?;
    /// if let Some(l) = latch.leader()? { println!("{} leads", l.id) }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn leader(&self) -> Result<Option<Participant>> {
        let e = self.election();
        participant::leader(&e.client, &e.path, K::DRIVER)
    }
}

impl<K: Kind> std::fmt::Debug for Contender<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.election();
        f.debug_struct(K::NAME)
            .field("path", &e.path)
            .field("id", &e.id)
            .field("status", &e.status())
            .finish()
    }
}
