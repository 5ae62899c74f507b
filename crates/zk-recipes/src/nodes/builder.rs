//! [`PersistentNodeBuilder`]: a node's mode, name protection, TTL and
//! parents, checked when built.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use zk_framework::{CreateMode, CuratorFramework};

use crate::core::{Stage, Subscribers};
use crate::error::{Error, Result};
use crate::nodes::node::PersistentNode;
use crate::nodes::state::{Fact, Inner, Spec, State};

impl PersistentNode {
    /// A builder for a node at `path` in `mode` (for a sequential mode,
    /// `path` is the prefix of the name).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(client: &CuratorFramework, path: &str, mode: CreateMode) -> PersistentNodeBuilder {
        PersistentNodeBuilder {
            client: client.clone(),
            spec: Spec {
                recipe: "PersistentNode",
                path: path.to_string(),
                mode,
                protected: mode.is_sequential(),
                ttl: None,
                parents: true,
                delete_on_close: true,
            },
            data: client.default_data().to_vec(),
        }
    }

    pub(crate) fn from_spec(client: &CuratorFramework, spec: Spec, data: Vec<u8>) -> Result<PersistentNode> {
        PersistentNodeBuilder {
            client: client.clone(),
            spec,
            data,
        }
        .build()
    }
}

/// Builds a [`PersistentNode`]: [`PersistentNode::builder`].
#[must_use = "a builder does nothing until build()"]
pub struct PersistentNodeBuilder {
    pub(super) client: CuratorFramework,
    pub(super) spec: Spec,
    pub(super) data: Vec<u8>,
}

impl std::fmt::Debug for PersistentNodeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentNodeBuilder")
            .field("path", &self.spec.path)
            .field("mode", &self.spec.mode)
            .field("protected", &self.spec.protected)
            .finish()
    }
}

impl PersistentNodeBuilder {
    /// The node's data (default: the client's default data).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral)
    ///     .data(b"x".to_vec())
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data(mut self, data: Vec<u8>) -> Self {
        self.data = data;
        self
    }

    /// Protected names (`_c_<uuid>-` before the name; Curator's
    /// `useProtection`): a create whose reply was lost is found again
    /// instead of leaving a second node. On by default for the sequential
    /// modes (where a lost reply would otherwise leave an orphan node), off
    /// for the others (a fixed name is found by its path).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a/n-", zk_framework::CreateMode::EphemeralSequential)
    ///     .protected(true)
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn protected(mut self, on: bool) -> Self {
        self.spec.protected = on;
        self
    }

    /// The TTL of a TTL mode (required for them, refused for the others).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::PersistentWithTtl)
    ///     .ttl(std::time::Duration::from_secs(30))
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.spec.ttl = Some(ttl);
        self
    }

    /// Whether missing parents are created (as containers; default on).
    /// Off: a missing parent is watched and the node created when it appears.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a/b", zk_framework::CreateMode::Ephemeral)
    ///     .parent_creation(false)
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parent_creation(mut self, on: bool) -> Self {
        self.spec.parents = on;
        self
    }

    /// The node (not started).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] with [`zk_framework::Error::InvalidPath`] for a
    /// path that breaks ZooKeeper's rules; [`Error::InvalidArgument`] for the
    /// container mode (a container is the server's to delete), a TTL mode
    /// without a TTL or with one of zero or over 2^40 - 1 ms, or a TTL on a
    /// mode without one.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::CreateMode;
    /// assert!(zk_recipes::PersistentNode::builder(&client, "/a", CreateMode::PersistentWithTtl).build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<PersistentNode> {
        check_spec(&self.spec)?;
        let path = self.spec.path.clone();
        Ok(PersistentNode::from_inner(Arc::new(Inner {
            client: self.client,
            spec: self.spec,
            state: Mutex::new(State {
                lifecycle: Stage::New,
                data: self.data,
                data_dirty: false,
                path: None,
                fact: Fact::Unknown,
                created_once: false,
                owned: None,
                creates: 0,
                creating: false,
                told: None,
                subscribers: Subscribers::new(),
                members: Subscribers::new(),
            }),
            changed: Condvar::new(),
            wake: crossbeam_channel::bounded(1),
            fired: crossbeam_channel::bounded(1),
            worker: Mutex::new(None),
            metrics: crate::nodes::metrics::Handles::new(&path),
        })))
    }
}

/// The largest TTL a server accepts (2^40 - 1 ms).
pub(crate) const MAX_TTL: Duration = Duration::from_millis((1 << 40) - 1);

fn check_spec(spec: &Spec) -> Result<()> {
    zk_framework::proto::path::validate_path(&spec.path, spec.mode.is_sequential())
        .map_err(zk_framework::Error::from)?;
    if spec.path == "/" {
        return Err(Error::InvalidArgument("a persistent node cannot be the root".into()));
    }
    if spec.mode.is_container() {
        return Err(Error::InvalidArgument(
            "a persistent node cannot be a container (the server deletes an empty container)".into(),
        ));
    }
    match (spec.mode.is_ttl(), spec.ttl) {
        (true, None) => Err(Error::InvalidArgument(format!("{:?} needs a TTL", spec.mode))),
        (true, Some(t)) if t.is_zero() || t > MAX_TTL => Err(Error::InvalidArgument(format!(
            "a TTL must be between 1 ms and 2^40 - 1 ms, not {t:?}"
        ))),
        (false, Some(_)) => Err(Error::InvalidArgument(format!("{:?} takes no TTL", spec.mode))),
        _ => Ok(()),
    }
}
