//! [`LeaderLatchBuilder`]: a latch's id, policy, close mode and listener.

use std::sync::Arc;

use parking_lot::Mutex;
use zk_framework::CuratorFramework;

use super::super::contender::{Contender, Handle};
use super::{CloseMode, Latch, LeaderLatch, Listener};
use crate::driver::{Driver, LATCH_LOCK_NAME};
use crate::error::Result;
use crate::internals::LockInternals;
use crate::leader::election::{self, Election, LeaderEvent, SuspendPolicy};
use crate::leader::participant;

/// Builds a [`LeaderLatch`]: [`LeaderLatch::builder`].
#[must_use = "a builder does nothing until build()"]
pub struct LeaderLatchBuilder {
    pub(super) client: CuratorFramework,
    pub(super) path: String,
    pub(super) id: Option<String>,
    pub(super) policy: SuspendPolicy,
    pub(super) close_mode: CloseMode,
    pub(super) listener: Option<Listener>,
}

impl std::fmt::Debug for LeaderLatchBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLatchBuilder")
            .field("path", &self.path)
            .field("id", &self.id)
            .field("policy", &self.policy)
            .field("close_mode", &self.close_mode)
            .finish()
    }
}

impl LeaderLatchBuilder {
    /// The participant id, written as the node's data (what Curator's
    /// `getParticipants` shows). Default: this process's holder identity
    /// (the JSON the locks write; see [`crate::identity`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::leader::LeaderLatch::builder(&client, "/election").id("node-1").build()?;
    /// assert_eq!(latch.id(), "node-1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// What a suspension does to leadership ([`SuspendPolicy`]; default
    /// [`SuspendPolicy::Standard`]: give it up at once).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::leader::{LeaderLatch, SuspendPolicy};
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = LeaderLatch::builder(&client, "/election").policy(SuspendPolicy::Session).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy(mut self, policy: SuspendPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Whether `close()` tells a leader's channels and listener
    /// ([`CloseMode`]; default [`CloseMode::Silent`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::leader::{CloseMode, LeaderLatch};
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = LeaderLatch::builder(&client, "/election").close_mode(CloseMode::NotifyLeader).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close_mode(mut self, mode: CloseMode) -> Self {
        self.close_mode = mode;
        self
    }

    /// A listener told every [`LeaderEvent`], in order, on a thread of its
    /// own (it may call the latch, and a slow listener holds nothing up).
    /// It runs from `start()` until the latch closes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::leader::{LeaderEvent, LeaderLatch};
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
        self.listener = Some(Box::new(f));
        self
    }

    /// The latch (not started).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`](crate::Error::ZooKeeper) with [`zk_framework::Error::InvalidPath`] for a
    /// path that breaks ZooKeeper's rules; [`Error::InvalidArgument`](crate::Error::InvalidArgument) for the
    /// root path ("an election cannot live at the root path") or an id that is empty,
    /// longer than 4096 bytes, or has control characters.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(zk_recipes::leader::LeaderLatch::builder(&client, "relative").build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<LeaderLatch> {
        election::check_election_path(&self.path)?;
        let internals = LockInternals::new(self.client.clone(), &self.path, LATCH_LOCK_NAME, Driver::LATCH)?;
        let id = participant::id_or_identity(&self.client, self.id)?;
        Ok(Contender {
            inner: Handle::new(Latch {
                election: Election::new("LeaderLatch", &self.client, &self.path, internals, id, self.policy),
                close_mode: self.close_mode,
                worker: Mutex::new(None),
                listener: Mutex::new(self.listener),
                told: Arc::default(),
            }),
        })
    }
}
