//! [`GroupMember`]: a member of a group (Curator's layout: an ephemeral node
//! `<group>/<id>` with the member's data), and the group read from a cache.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::{CreateMode, CuratorFramework};

use crate::cache::bridges::{PathChildrenCache, PathChildrenCacheEvent};
use crate::core::{Stage, STOP_BOUND};
use crate::error::{Error, Result};
use crate::freshness::Freshness;
use crate::nodes::node::PersistentNode;
use crate::nodes::registration::{MemberEvent, Registration};
use crate::nodes::state::Spec;

/// A member of a group, wire-compatible with Curator's `GroupMember`: this
/// member is the ephemeral node `<group>/<id>` (no protection, no sequence)
/// carrying its data, kept in place by a [`PersistentNode`] (re-created
/// after a session loss or a deletion, with an honest
/// [`registration`](Self::registration)); the group is read from a
/// [`PathChildrenCache`] of `<group>`, so Java and Rust members see one
/// group. Two members with one id collide: the second is not registered
/// while the first's node is there
/// ([`AbsentReason::OwnedByAnotherSession`](crate::AbsentReason::OwnedByAnotherSession);
/// Curator's second member takes the node over). A close leaves no member
/// node, not even one a create in flight at `close()` makes (see
/// [`PersistentNode::close`]). Clones share this member; it closes at
/// `close()` or when the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_recipes::GroupMember;
///
/// let me = GroupMember::new(&client, "/groups/workers", "w1", b"10.0.0.1".to_vec())?;
/// me.start()?;
/// assert!(me.wait_for_registration_for(Duration::from_secs(10))?);
/// assert!(me.wait_current_for(Duration::from_secs(10)));
/// assert_eq!(me.current_members()?.get("w1").map(Vec::as_slice), Some(&b"10.0.0.1"[..]));
/// me.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct GroupMember {
    shared: Arc<Member>,
}

/// One member, shared by its clones.
struct Member {
    id: String,
    node: PersistentNode,
    cache: PathChildrenCache,
}

impl Member {
    /// Closes the node and the cache under one deadline: the node's close is
    /// begun (nothing more is sent for it), the cache closed, and the node's
    /// close finished by the stop bound.
    fn close(&self) -> Result<()> {
        let end = Instant::now() + STOP_BOUND;
        let closing = self.node.inner.close_begin()?;
        self.cache.close_until(end);
        self.node.inner.close_finish(closing, end);
        Ok(())
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if self.node.inner.state.lock().lifecycle == Stage::Started {
            let _ = self.close();
        }
    }
}

impl std::fmt::Debug for GroupMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupMember")
            .field("id", &self.shared.id)
            .field("registration", &self.shared.node.registration())
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
    /// assert!(zk_recipes::GroupMember::new(&client, "/g", "a/b", vec![]).is_err());
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
        // The group's changes go to the member's channels, under the node's
        // lock (where its registration is told too).
        let me = Arc::downgrade(&node.inner);
        cache.forward(move |ev| match me.upgrade() {
            Some(inner) => {
                inner.state.lock().members.tell(&MemberEvent::Group(ev));
                true
            }
            None => false,
        });
        Ok(GroupMember {
            shared: Arc::new(Member {
                id: id.to_string(),
                node,
                cache,
            }),
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
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        let m = &self.shared;
        m.node.start()?;
        if let Err(e) = m.cache.start() {
            let _ = m.node.close();
            return Err(e);
        }
        Ok(())
    }

    /// Leaves, for every clone: deletes this member's node (also one a
    /// create in flight makes, see [`PersistentNode::close`]) and closes
    /// the cache; every event channel ends. Returns within the stop bound
    /// (2 s; the node and the cache share it).
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::close`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// m.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        self.shared.close()
    }

    /// This member's id.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// assert_eq!(m.id(), "a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// Changes this member's data (kept across re-creations; see
    /// [`PersistentNode::set_data`]). Allowed before the node exists
    /// (Curator throws there, CURATOR-485).
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] after `close()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.set_this_data(b"busy".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_this_data(&self, data: Vec<u8>) -> Result<()> {
        self.shared.node.set_data(data)
    }

    /// Whether this member is in the group now (see
    /// [`PersistentNode::registration`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// assert!(!m.registration().is_registered());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registration(&self) -> Registration {
        self.shared.node.registration()
    }

    /// This member's events: every change of its registration (first where
    /// it stands) and every change of the group, on one channel (see
    /// [`MemberEvent`]); it ends at close.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// # client.block_until_connected(std::time::Duration::from_secs(10))?;
    /// use std::time::Duration;
    /// use zk_recipes::PathChildrenCacheEvent;
    /// use zk_recipes::{GroupMember, MemberEvent};
    ///
    /// let m = GroupMember::new(&client, "/g", "a", b"x".to_vec())?;
    /// let events = m.events();
    /// m.start()?;
    /// let (mut registered, mut seen_in_group) = (false, false);
    /// while !(registered && seen_in_group) {
    ///     match events.recv_timeout(Duration::from_secs(10))? {
    ///         MemberEvent::Registration(r) => registered |= r.is_registered(),
    ///         MemberEvent::Group(PathChildrenCacheEvent::ChildAdded(d)) => seen_in_group |= d.path() == "/g/a",
    ///         MemberEvent::Group(PathChildrenCacheEvent::Initialized(kids)) => {
    ///             seen_in_group |= kids.iter().any(|d| d.path() == "/g/a")
    ///         }
    ///         _ => {}
    ///     }
    /// }
    /// m.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<MemberEvent> {
        let inner = &self.shared.node.inner;
        let mut st = inner.state.lock();
        let now = inner.registration(&st);
        st.members.subscribe_with(MemberEvent::Registration(now))
    }

    /// Every change of this member's registration (see
    /// [`PersistentNode::events`]). Deprecated: [`events`](Self::events)
    /// tells these as [`MemberEvent::Registration`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// #[allow(deprecated)]
    /// let events = m.registration_events();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "every recipe's event channel is `events()`")]
    pub fn registration_events(&self) -> Receiver<Registration> {
        self.shared.node.events()
    }

    /// Waits until this member is registered now (see
    /// [`PersistentNode::wait_registered_for`]): `Ok(false)` when `timeout`
    /// passes first.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::wait_registered_for`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// m.wait_for_registration_for(std::time::Duration::from_secs(5))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_registration_for(&self, timeout: Duration) -> Result<bool> {
        self.shared.node.wait_registered_for(timeout)
    }

    /// The group as the cache shows it: id → data, with this member's own
    /// entry from its local data while it is started (as Curator's
    /// `getCurrentMembers`, so a member always sees itself).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// assert!(m.members().contains_key("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn members(&self) -> BTreeMap<String, Vec<u8>> {
        let me = &self.shared;
        let mut m = me.cache.members();
        if me.node.inner.state.lock().lifecycle == Stage::Started {
            m.insert(me.id.clone(), me.node.data());
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
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// assert!(m.current_members().is_err()); // not started
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_members(&self) -> Result<BTreeMap<String, Vec<u8>>> {
        self.shared.cache.current_members()?;
        Ok(self.members())
    }

    /// How fresh the group's view is.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// assert!(!m.freshness().is_current());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn freshness(&self) -> Freshness {
        self.shared.cache.freshness()
    }

    /// Waits until the group's view is current: `false` when `timeout`
    /// passes first.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// m.start()?;
    /// m.wait_current_for(std::time::Duration::from_secs(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_current_for(&self, timeout: Duration) -> bool {
        self.shared.cache.wait_current_for(timeout)
    }

    /// The group's changes (members joining, leaving, changing data).
    /// Deprecated: [`events`](Self::events) tells these as
    /// [`MemberEvent::Group`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::GroupMember::new(&client, "/g", "a", vec![])?;
    /// #[allow(deprecated)]
    /// let changes = m.group_events();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "every recipe's event channel is `events()`")]
    pub fn group_events(&self) -> Receiver<PathChildrenCacheEvent> {
        self.shared.cache.events()
    }
}
