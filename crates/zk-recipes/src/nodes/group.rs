//! [`GroupMember`]: a member of a group (Curator's layout: an ephemeral node
//! `<group>/<id>` with the member's data), and the group read from a cache.

use std::collections::BTreeMap;
use std::time::Duration;

use crossbeam_channel::Receiver;
use zk_framework::{CreateMode, CuratorFramework};

use super::{PersistentNode, Registration, Spec};
use crate::cache::{Freshness, PathChildrenCache, PathChildrenCacheEvent};
use crate::error::{Error, Result};

/// A member of a group, wire-compatible with Curator's `GroupMember`: this
/// member is the ephemeral node `<group>/<id>` (no protection, no sequence)
/// carrying its data, kept in place by a [`PersistentNode`] (re-created
/// after a session loss or a deletion, with an honest
/// [`registration`](Self::registration)); the group is read from a
/// [`PathChildrenCache`] of `<group>`, so Java and Rust members see one
/// group. Two members with one id collide: the second is not registered
/// while the first's node is there
/// ([`AbsentReason::OwnedByAnotherSession`](super::AbsentReason::OwnedByAnotherSession);
/// Curator's second member takes the node over).
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_recipes::nodes::GroupMember;
///
/// let me = GroupMember::new(&client, "/groups/workers", "w1", b"10.0.0.1".to_vec())?;
/// me.start()?;
/// assert!(me.wait_for_registration_for(Duration::from_secs(10))?);
/// assert!(me.wait_current_for(Duration::from_secs(10)));
/// assert_eq!(me.current_members()?.get("w1").map(Vec::as_slice), Some(&b"10.0.0.1"[..]));
/// me.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct GroupMember {
    id: String,
    node: PersistentNode,
    cache: PathChildrenCache,
}

impl std::fmt::Debug for GroupMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupMember")
            .field("id", &self.id)
            .field("registration", &self.node.registration())
            .finish()
    }
}

impl GroupMember {
    /// A member `id` of the group at `group_path`, with `data` (not started).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an id that is empty, `.`/`..`, holds a
    /// `/` or is not a valid node name; [`Error::ZooKeeper`] with
    /// [`zk_framework::Error::InvalidPath`] for a bad group path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(zk_recipes::nodes::GroupMember::new(&client, "/g", "a/b", vec![]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, group_path: &str, id: &str, data: Vec<u8>) -> Result<GroupMember> {
        if id.is_empty() || id == "." || id == ".." || id.contains('/') {
            return Err(Error::InvalidArgument(format!(
                "a group member's id must be one node name, not {id:?}"
            )));
        }
        let path = format!("{}/{id}", group_path.trim_end_matches('/'));
        let spec = Spec {
            recipe: "GroupMember",
            path,
            mode: CreateMode::Ephemeral,
            protected: false,
            ttl: None,
            parents: true,
            delete_on_close: true,
        };
        let node = PersistentNode::from_spec(client, spec, data)?;
        let cache = PathChildrenCache::new(client, group_path)?;
        Ok(GroupMember {
            id: id.to_string(),
            node,
            cache,
        })
    }

    /// Joins: starts this member's node and the group's cache.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::start`] and
    /// [`PathChildrenCache::start`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        self.node.start()?;
        if let Err(e) = self.cache.start() {
            let _ = self.node.close();
            return Err(e);
        }
        Ok(())
    }

    /// Leaves: deletes this member's node and closes the cache.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::close`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// m.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        let r = self.node.close();
        self.cache.close();
        r
    }

    /// This member's id.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// assert_eq!(m.id(), "a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Changes this member's data (kept across re-creations; see
    /// [`PersistentNode::set_data`]). Allowed before the node exists
    /// (Curator throws there, CURATOR-485).
    ///
    /// # Errors
    ///
    /// [`Error::NodeClosed`] after `close()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.set_this_data(b"busy".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_this_data(&self, data: Vec<u8>) -> Result<()> {
        self.node.set_data(data)
    }

    /// Whether this member is in the group now (see
    /// [`PersistentNode::registration`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// assert!(!m.registration().is_registered());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registration(&self) -> Registration {
        self.node.registration()
    }

    /// Every change of this member's registration (see
    /// [`PersistentNode::events`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// let events = m.registration_events();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registration_events(&self) -> Receiver<Registration> {
        self.node.events()
    }

    /// Waits until this member is registered: `Ok(false)` when `timeout`
    /// passes first.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::wait_for_initial_create_for`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// m.wait_for_registration_for(std::time::Duration::from_secs(5))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_registration_for(&self, timeout: Duration) -> Result<bool> {
        let end = std::time::Instant::now().checked_add(timeout);
        let events = self.node.events();
        loop {
            if self.node.registration().is_registered() {
                return Ok(true);
            }
            let left = end.map(|e| e.saturating_duration_since(std::time::Instant::now()));
            if left == Some(Duration::ZERO) {
                // Surface a refusal (closed, TTL) rather than a bare false.
                return self.node.wait_for_initial_create_for(Duration::ZERO).map(|_| false);
            }
            let got = match left {
                Some(l) => events.recv_timeout(l).map_err(|_| ()),
                None => events.recv().map_err(|_| ()),
            };
            if got.is_err() && self.node.inner.state.lock().lifecycle == super::Lifecycle::Closed {
                return Err(self.node.inner.closed_error());
            }
        }
    }

    /// The group as the cache shows it: id → data, with this member's own
    /// entry from its local data while it is started (as Curator's
    /// `getCurrentMembers`, so a member always sees itself).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// assert!(m.members().contains_key("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn members(&self) -> BTreeMap<String, Vec<u8>> {
        let mut m = self.cache.members();
        if self.node.inner.state.lock().lifecycle == super::Lifecycle::Started {
            m.insert(self.id.clone(), self.node.data());
        }
        m
    }

    /// The group, only while the cache is current (Curator has no such
    /// check: its view may be stale after a partition without a word).
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotCurrent`] with the freshness otherwise.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// assert!(m.current_members().is_err()); // not started
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_members(&self) -> Result<BTreeMap<String, Vec<u8>>> {
        self.cache.current_members()?;
        Ok(self.members())
    }

    /// How fresh the group's view is.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// assert!(!m.freshness().is_current());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn freshness(&self) -> Freshness {
        self.cache.freshness()
    }

    /// Waits until the group's view is current: `false` when `timeout`
    /// passes first.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// m.wait_current_for(std::time::Duration::from_secs(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_current_for(&self, timeout: Duration) -> bool {
        self.cache.wait_current_for(timeout)
    }

    /// The group's changes (members joining, leaving, changing data).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::nodes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// let changes = m.group_events();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn group_events(&self) -> Receiver<PathChildrenCacheEvent> {
        self.cache.events()
    }
}
