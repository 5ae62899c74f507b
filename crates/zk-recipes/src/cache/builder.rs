//! [`CuratorCacheBuilder`]: what a cache follows (a subtree, a node, a node
//! and its children), what it keeps, and its bounds.

use std::sync::Arc;

use zk_framework::CuratorFramework;

use super::curator::{CuratorCache, DEFAULT_MAX_NODES};
use super::options::Options;
use crate::error::{Error, Result};

impl CuratorCache {
    /// A builder for a cache of `path` on `client` (paths relative to its
    /// namespace).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/config").build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(client: &CuratorFramework, path: &str) -> CuratorCacheBuilder {
        CuratorCacheBuilder {
            client: client.clone(),
            path: path.to_string(),
            opts: Options {
                max_depth: None,
                load_data: true,
                compressed: false,
                clear_on_close: true,
                max_nodes: DEFAULT_MAX_NODES,
                filter: None,
            },
        }
    }
}

/// Builds a [`CuratorCache`] (Curator's `CuratorCache.builder(client, path)`
/// and its options).
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
/// let cache = zk_recipes::CuratorCache::builder(&client, "/services")
///     .max_depth(Some(1)) // the node and its children
///     .max_nodes(10_000)
///     .data_not_cached()
///     .build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a builder does nothing until `build()`"]
pub struct CuratorCacheBuilder {
    pub(super) client: CuratorFramework,
    pub(super) path: String,
    pub(super) opts: Options,
}

impl std::fmt::Debug for CuratorCacheBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuratorCacheBuilder")
            .field("path", &self.path)
            .field("max_depth", &self.opts.max_depth)
            .field("load_data", &self.opts.load_data)
            .field("compressed", &self.opts.compressed)
            .field("clear_on_close", &self.opts.clear_on_close)
            .field("max_nodes", &self.opts.max_nodes)
            .field("filter", &self.opts.filter.is_some())
            .finish()
    }
}

impl CuratorCacheBuilder {
    /// Only the root node, on a non-recursive persistent watch (Curator's
    /// `SINGLE_NODE_CACHE`); the same as `max_depth(Some(0))`.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/config/flag").single_node().build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn single_node(self) -> Self {
        self.max_depth(Some(0))
    }

    /// How deep below the root the cache follows: `Some(0)` the root only,
    /// `Some(1)` the root and its children, `None` (the default) the whole
    /// subtree.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let members = zk_recipes::CuratorCache::builder(&client, "/group").max_depth(Some(1)).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_depth(mut self, depth: Option<usize>) -> Self {
        self.opts.max_depth = depth;
        self
    }

    /// Keeps stats only, not data (Curator's `withDataNotCached`): nodes are
    /// read with `exists`, and [`ChildData::data`](super::ChildData::data) is `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/big").data_not_cached().build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data_not_cached(mut self) -> Self {
        self.opts.load_data = false;
        self
    }

    /// Reads data as gzip (Curator's `COMPRESSED_DATA`, for nodes written
    /// with Curator's `compressed()`): [`ChildData::data`](super::ChildData::data) is the inflated
    /// bytes. A node whose data is not gzip keeps its bytes as read (and a
    /// warning is logged), so one bad node does not stop the cache.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/zipped").compressed_data().build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compressed_data(mut self) -> Self {
        self.opts.compressed = true;
        self
    }

    /// Keeps the view after [`CuratorCache::close`] (Curator's
    /// `DO_NOT_CLEAR_ON_CLOSE`); by default `close` empties it.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").do_not_clear_on_close().build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn do_not_clear_on_close(mut self) -> Self {
        self.opts.clear_on_close = false;
        self
    }

    /// The most nodes the cache holds ([`DEFAULT_MAX_NODES`](crate::CACHE_DEFAULT_MAX_NODES) unless set): a
    /// subtree that grows past it is refused with [`Error::CacheTooLarge`]
    /// (the cache stops following and tells [`CacheEvent::Failed`](super::CacheEvent::Failed)).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").max_nodes(1_000).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_nodes(mut self, n: usize) -> Self {
        self.opts.max_nodes = n;
        self
    }

    /// Keeps only the nodes whose path `keep` accepts (their descendants
    /// are still followed, and kept when accepted). Called on the cache's
    /// thread: it must be quick.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/cfg")
    ///     .filter(|path| !path.ends_with(".tmp"))
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn filter(mut self, keep: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.opts.filter = Some(Arc::new(keep));
        self
    }

    /// The cache, not started.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] with [`zk_framework::Error::InvalidPath`] for a
    /// path that breaks ZooKeeper's rules; [`Error::InvalidArgument`] for
    /// `max_nodes(0)`.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// assert!(zk_recipes::CuratorCache::builder(&client, "no-slash").build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<CuratorCache> {
        zk_framework::proto::path::validate_path(&self.path, false).map_err(zk_framework::Error::from)?;
        if self.opts.max_nodes == 0 {
            return Err(Error::InvalidArgument("a cache's max_nodes must be at least 1".into()));
        }
        CuratorCache::build(self.client, self.path, self.opts)
    }
}
