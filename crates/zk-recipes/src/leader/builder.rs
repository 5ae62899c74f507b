//! [`ContenderBuilder`]: what every participant is built from (a path, an
//! id, a suspension policy) and how it is checked and built, written once
//! for the latch and the selector; each kind adds its own settings in its
//! own room (a latch's close mode and listener, a selector's requeue).

use zk_framework::CuratorFramework;

use crate::error::Result;
use crate::leader::contender::{Contender, Handle, Kind};
use crate::leader::election::{self, Election, SuspendPolicy};
use crate::leader::participant;
use crate::locks::internals::LockInternals;

/// Builds a participant of a leader election:
/// [`LeaderLatchBuilder`](crate::LeaderLatchBuilder) is
/// `ContenderBuilder<Latch>` ([`LeaderLatch::builder`](crate::LeaderLatch::builder)),
/// [`LeaderSelectorBuilder`](crate::LeaderSelectorBuilder)
/// `ContenderBuilder<Selector>` ([`LeaderSelector::builder`](crate::LeaderSelector::builder)).
/// The settings below are every participant's; each kind adds its own.
///
/// # Examples
///
/// ```no_run
/// use zk_recipes::{LeaderLatch, LeaderSelector, SuspendPolicy};
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let latch = LeaderLatch::builder(&client, "/election/a").id("a-1").policy(SuspendPolicy::Session).build()?;
/// let selector = LeaderSelector::builder(&client, "/election/b", |_| {}).id("b-1").build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a builder does nothing until build()"]
pub struct ContenderBuilder<K: Kind> {
    client: CuratorFramework,
    path: String,
    id: Option<String>,
    policy: SuspendPolicy,
    /// The kind's own settings.
    pub(crate) options: K::Options,
}

impl<K: Kind> std::fmt::Debug for ContenderBuilder<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(K::BUILDER_NAME)
            .field("path", &self.path)
            .field("id", &self.id)
            .field("policy", &self.policy)
            .field("options", &self.options)
            .finish()
    }
}

impl<K: Kind> ContenderBuilder<K> {
    /// A builder with the defaults and the kind's `options`.
    pub(crate) fn new(client: &CuratorFramework, path: &str, options: K::Options) -> Self {
        ContenderBuilder {
            client: client.clone(),
            path: path.to_string(),
            id: None,
            policy: SuspendPolicy::default(),
            options,
        }
    }

    /// The participant id, written as the node's data (what Curator's
    /// `getParticipants` shows). Default: this process's holder identity
    /// (the JSON the locks write; see [`crate::HolderIdentity`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = zk_recipes::LeaderLatch::builder(&client, "/election").id("node-1").build()?;
    /// assert_eq!(latch.id(), "node-1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// What a suspension does to leadership ([`SuspendPolicy`]; default
    /// [`SuspendPolicy::Standard`]: give it up at once; a selector cancels
    /// its running leadership, as Curator's
    /// `LeaderSelectorListenerAdapter` does).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_recipes::{LeaderLatch, SuspendPolicy};
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let latch = LeaderLatch::builder(&client, "/election").policy(SuspendPolicy::Session).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy(mut self, policy: SuspendPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The participant (not started).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`](crate::Error::ZooKeeper) with
    /// [`zk_framework::Error::InvalidPath`] for a path that breaks
    /// ZooKeeper's rules; [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// for the root path ("an election cannot live at the root path") or an
    /// id that is empty, longer than 4096 bytes, or has control characters.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(zk_recipes::LeaderLatch::builder(&client, "relative").build().is_err());
    /// assert!(zk_recipes::LeaderSelector::builder(&client, "/", |_| {}).build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<Contender<K>> {
        election::check_election_path(&self.path)?;
        let internals = LockInternals::new(self.client.clone(), &self.path, K::LOCK_NAME, K::DRIVER)?;
        let id = participant::id_or_identity(&self.client, self.id)?;
        let election = Election::new(K::NAME, &self.client, &self.path, internals, id, self.policy);
        Ok(Contender {
            inner: Handle::new(K::new(election, self.options)),
        })
    }
}
