//! The old shapes, thin, on [`CuratorCache`]: `NodeCache` (one node) and
//! `PathChildrenCache` (a node's children, and the read side of a group's
//! membership), under Curator's names so users find them. Each is a
//! `CuratorCache` of the right depth: the same events, order and freshness.

use std::collections::BTreeMap;
use std::time::Duration;

use crossbeam_channel::Receiver;
use zk_framework::CuratorFramework;

use super::curator::CuratorCache;
use super::view::{CacheEvent, ChildData};
use crate::error::{Error, Result};
use crate::freshness::Freshness;

/// One node, followed (Curator's `NodeCache`, a `CuratorCache` built with
/// `single_node()`). Clones share this cache; it closes at `close()` or when
/// the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// use std::time::Duration;
/// use zk_recipes::NodeCache;
/// client.create().creating_parents_if_needed().with_data(b"on".to_vec()).for_path("/flags/x")?;
/// let flag = NodeCache::new(&client, "/flags/x")?;
/// flag.start()?;
/// assert!(flag.wait_current_for(Duration::from_secs(10)));
/// assert_eq!(flag.current_data().unwrap().data(), Some(&b"on"[..]));
/// let watching = flag.clone(); // the same cache, for another thread
/// std::thread::spawn(move || drop(watching)).join().unwrap();
/// // One clone dropped: still open (started, not closed).
/// assert!(matches!(flag.start(), Err(zk_recipes::Error::AlreadyStarted { .. })));
/// flag.close();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct NodeCache {
    cache: CuratorCache,
}

impl NodeCache {
    /// A cache of the node at `path`, not started.
    ///
    /// # Errors
    ///
    /// As [`super::CuratorCacheBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// assert!(zk_recipes::NodeCache::new(&client, "bad").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str) -> Result<NodeCache> {
        Ok(NodeCache {
            cache: CuratorCache::builder(client, path).single_node().build()?,
        })
    }

    /// Starts following the node (see [`CuratorCache::start`]).
    ///
    /// # Errors
    ///
    /// As [`CuratorCache::start`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let n = zk_recipes::NodeCache::new(&client, "/a")?;
    /// n.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        self.cache.start()
    }

    /// Stops following (see [`CuratorCache::close`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let n = zk_recipes::NodeCache::new(&client, "/a")?;
    /// n.close();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.cache.close()
    }

    /// The node as last read (`None`: it does not exist), whatever the
    /// freshness (Curator's `getCurrentData()`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let n = zk_recipes::NodeCache::new(&client, "/a")?;
    /// assert!(n.current_data().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_data(&self) -> Option<ChildData> {
        self.cache.get(self.cache.path())
    }

    /// The node, only while the cache is current.
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotCurrent`] with the freshness otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let n = zk_recipes::NodeCache::new(&client, "/a")?;
    /// assert!(n.current().is_err()); // not started
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current(&self) -> Result<Option<ChildData>> {
        self.cache.get_current(self.cache.path())
    }

    /// How fresh the node is (see [`Freshness`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let n = zk_recipes::NodeCache::new(&client, "/a")?;
    /// assert!(!n.freshness().is_current());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn freshness(&self) -> Freshness {
        self.cache.freshness()
    }

    /// Waits until current, at most `timeout`: whether it is.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let n = zk_recipes::NodeCache::new(&client, "/a")?;
    /// n.start()?;
    /// assert!(n.wait_current_for(std::time::Duration::from_secs(10)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_current_for(&self, timeout: Duration) -> bool {
        self.cache.wait_current_for(timeout)
    }

    /// Every event of the node from now on (Curator's `nodeChanged()`, with
    /// what changed): see [`CuratorCache::events`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let n = zk_recipes::NodeCache::new(&client, "/a")?;
    /// let events = n.events();
    /// # drop(events);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<CacheEvent> {
        self.cache.events()
    }

    /// The cache underneath.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let n = zk_recipes::NodeCache::new(&client, "/a")?;
    /// assert_eq!(n.cache().path(), "/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cache(&self) -> &CuratorCache {
        &self.cache
    }
}

/// What a [`PathChildrenCache`] tells (Curator's `PathChildrenCacheEvent`
/// types), about the children only.
///
/// # Examples
///
/// ```
/// use zk_recipes::{ChildData, PathChildrenCacheEvent};
/// let ev = PathChildrenCacheEvent::ChildAdded(ChildData::new("/g/a", Default::default(), None));
/// assert!(matches!(ev, PathChildrenCacheEvent::ChildAdded(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathChildrenCacheEvent {
    /// A child appeared (`CHILD_ADDED`).
    ChildAdded(ChildData),
    /// A child's data changed (`CHILD_UPDATED`).
    ChildUpdated {
        /// What the cache showed.
        old: ChildData,
        /// What it shows now.
        new: ChildData,
    },
    /// A child went (`CHILD_REMOVED`).
    ChildRemoved(ChildData),
    /// The children were read whole (`INITIALIZED`): at start and after
    /// every re-synchronisation, with the children then.
    Initialized(Vec<ChildData>),
    /// The freshness changed (Curator's `CONNECTION_*` events, told
    /// honestly: see [`Freshness`]).
    Freshness(Freshness),
    /// The cache stopped for good (see [`CacheEvent::Failed`]).
    Failed(Error),
}

/// A node's children, followed (Curator's `PathChildrenCache`, a
/// `CuratorCache` built with `max_depth(Some(1))`); also the read side of a
/// group's membership ([`members`](PathChildrenCache::members)). Clones
/// share this cache; it closes at `close()` or when the last clone is
/// dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// use std::time::Duration;
/// use zk_recipes::PathChildrenCache;
/// client.create().creating_parents_if_needed().with_data(b"10.0.0.1".to_vec()).for_path("/group/a")?;
/// let group = PathChildrenCache::new(&client, "/group")?;
/// group.start()?;
/// assert!(group.wait_current_for(Duration::from_secs(10)));
/// assert_eq!(group.members()["a"], b"10.0.0.1".to_vec());
/// let members = group.clone(); // the same cache, for another thread
/// assert_eq!(std::thread::spawn(move || members.members().len()).join().unwrap(), 1);
/// group.close();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PathChildrenCache {
    cache: CuratorCache,
}

impl PathChildrenCache {
    /// A cache of the children of `path`, not started.
    ///
    /// # Errors
    ///
    /// As [`super::CuratorCacheBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// assert!(zk_recipes::PathChildrenCache::new(&client, "").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str) -> Result<PathChildrenCache> {
        Ok(PathChildrenCache {
            cache: CuratorCache::builder(client, path).max_depth(Some(1)).build()?,
        })
    }

    /// Starts following (see [`CuratorCache::start`]).
    ///
    /// # Errors
    ///
    /// As [`CuratorCache::start`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// zk_recipes::PathChildrenCache::new(&client, "/g")?.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        self.cache.start()
    }

    /// Stops following (see [`CuratorCache::close`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// zk_recipes::PathChildrenCache::new(&client, "/g")?.close();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.cache.close()
    }

    /// As [`close`](Self::close), waiting until `deadline` at most.
    pub(crate) fn close_until(&self, deadline: std::time::Instant) {
        self.cache.close_until(deadline)
    }

    /// The children as last read, in path order (Curator's
    /// `getCurrentData()`), whatever the freshness.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let g = zk_recipes::PathChildrenCache::new(&client, "/g")?;
    /// assert!(g.current_data().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_data(&self) -> Vec<ChildData> {
        let root = self.cache.path();
        self.cache.snapshot().into_iter().filter(|d| d.path() != root).collect()
    }

    /// One child by its full path (Curator's `getCurrentData(fullPath)`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let g = zk_recipes::PathChildrenCache::new(&client, "/g")?;
    /// assert!(g.current_data_for("/g/a").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_data_for(&self, path: &str) -> Option<ChildData> {
        if path == self.cache.path() {
            return None;
        }
        self.cache.get(path)
    }

    /// Who is in the group: each child's name and data (Curator's
    /// `GroupMember.getCurrentMembers()`), whatever the freshness; data is
    /// empty for a cache that does not load data.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let g = zk_recipes::PathChildrenCache::new(&client, "/g")?;
    /// assert!(g.members().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn members(&self) -> BTreeMap<String, Vec<u8>> {
        members_of(&self.current_data())
    }

    /// The members, only while the cache is current.
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotCurrent`] with the freshness otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let g = zk_recipes::PathChildrenCache::new(&client, "/g")?;
    /// assert!(g.current_members().is_err()); // not started
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_members(&self) -> Result<BTreeMap<String, Vec<u8>>> {
        // Asked under the freshness check: the root's entry (or its absence).
        self.cache.get_current(self.cache.path())?;
        Ok(self.members())
    }

    /// How fresh the view is.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let g = zk_recipes::PathChildrenCache::new(&client, "/g")?;
    /// assert!(!g.freshness().is_current());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn freshness(&self) -> Freshness {
        self.cache.freshness()
    }

    /// Waits until current, at most `timeout`: whether it is.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let g = zk_recipes::PathChildrenCache::new(&client, "/g")?;
    /// g.start()?;
    /// assert!(g.wait_current_for(std::time::Duration::from_secs(10)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_current_for(&self, timeout: Duration) -> bool {
        self.cache.wait_current_for(timeout)
    }

    /// Every event about the children from now on, on an unbounded channel
    /// that ends when the cache closes (the root's own events are left
    /// out; `Initialized` carries the children).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// use zk_recipes::{PathChildrenCache, PathChildrenCacheEvent};
    /// let g = PathChildrenCache::new(&client, "/g")?;
    /// let events = g.events();
    /// g.start()?;
    /// let first = events.recv_timeout(std::time::Duration::from_secs(10))?;
    /// assert!(matches!(first, PathChildrenCacheEvent::Freshness(_) | PathChildrenCacheEvent::Initialized(_)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<PathChildrenCacheEvent> {
        let (tx, rx) = crossbeam_channel::unbounded();
        self.forward(move |ev| tx.send(ev).is_ok());
        rx
    }

    /// Hands every event from now on to `send`, in order, until it returns
    /// `false` (the channel of [`events`](Self::events), and a group
    /// member's).
    pub(crate) fn forward(&self, mut send: impl FnMut(PathChildrenCacheEvent) -> bool + Send + 'static) {
        let root = self.cache.path().to_string();
        self.cache.subscribe(|now| {
            // The children shown when subscribed seed the list that
            // `Initialized` carries.
            let mut children: BTreeMap<String, ChildData> = now
                .iter()
                .filter(|d| d.path() != root)
                .map(|d| (d.path().to_string(), d.clone()))
                .collect();
            Box::new(move |ev| {
                let child = |d: &ChildData| d.path() != root;
                let out = match ev {
                    CacheEvent::Created(d) if child(d) => {
                        children.insert(d.path().to_string(), d.clone());
                        PathChildrenCacheEvent::ChildAdded(d.clone())
                    }
                    CacheEvent::Changed { old, new } if child(new) => {
                        children.insert(new.path().to_string(), new.clone());
                        PathChildrenCacheEvent::ChildUpdated {
                            old: old.clone(),
                            new: new.clone(),
                        }
                    }
                    CacheEvent::Deleted(d) if child(d) => {
                        children.remove(d.path());
                        PathChildrenCacheEvent::ChildRemoved(d.clone())
                    }
                    CacheEvent::Initialized => {
                        PathChildrenCacheEvent::Initialized(children.values().cloned().collect())
                    }
                    CacheEvent::Freshness(f) => PathChildrenCacheEvent::Freshness(*f),
                    CacheEvent::Failed(e) => PathChildrenCacheEvent::Failed(e.clone()),
                    _ => return true,
                };
                send(out)
            })
        });
    }

    /// The cache underneath.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let g = zk_recipes::PathChildrenCache::new(&client, "/g")?;
    /// assert_eq!(g.cache().path(), "/g");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cache(&self) -> &CuratorCache {
        &self.cache
    }
}

/// Each child's name and data.
fn members_of(children: &[ChildData]) -> BTreeMap<String, Vec<u8>> {
    children
        .iter()
        .map(|d| {
            let name = d.path().rsplit('/').next().unwrap_or_default().to_string();
            (name, d.data().unwrap_or_default().to_vec())
        })
        .collect()
}
