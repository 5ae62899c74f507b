//! `CuratorCache`: a local copy of a subtree, a node, or a node and its
//! children, kept by one persistent watch (ZooKeeper 3.6+), that says how
//! fresh it is.
//!
//! * **On a [`PersistentWatcher`](crate::PersistentWatcher)**, as
//!   Curator's is: the watcher keeps the watch (recursive unless the cache
//!   follows one node) through reconnects and new sessions and tells its
//!   node events and connection states in the client's order; the cache
//!   reads each announced node with a plain `getData`, and reads the whole
//!   subtree again after each of the watcher's resets (at start, after a
//!   reconnect: the server replays nothing a persistent watch missed while
//!   the connection was down, and on a new session).
//! * **Exact events, in zxid order.** Each event is the difference between
//!   what the cache showed and what the server has: a node deleted and
//!   created again is a [`CacheEvent::Deleted`] and a
//!   [`CacheEvent::Created`] (judged by `czxid`, not by version, so the gap
//!   of Curator's CURATOR-391 is closed), changes come in the order of the
//!   server's zxids, and [`CacheEvent::Initialized`] comes at start and
//!   again after every re-synchronisation. Two changes of one node's data
//!   that no read saw apart are one event: ZooKeeper keeps only the latest
//!   data.
//! * **Nothing announced is left unread.** Every announced change waits in
//!   one queue until a read shows it; each round reads what waits and
//!   applies what it can at once, so under writes that never pause the view
//!   trails the server by about a round trip, and it is always the server's
//!   subtree as of one moment.
//! * **Freshness.** [`CuratorCache::freshness`] says whether the view is
//!   [`Freshness::Current`] (every change announced to the cache's client
//!   so far is applied), [`Freshness::Updating`] (some are being read),
//!   [`Freshness::Stale`] (since when, as of which zxid) or
//!   [`Freshness::Resyncing`]; every change of it is an event, and
//!   [`CuratorCache::get_current`] answers only while it is current.
//! * **Bounded.** A subtree larger than [`CuratorCacheBuilder::max_nodes`]
//!   is refused with [`Error::CacheTooLarge`](crate::Error::CacheTooLarge) (the cache stops following
//!   the server and says so), never grown without bound.
//!
//! The events reach [`CuratorCache::events`] channels in order, told under
//! the lock that changes the view. Clones of a cache share it; it closes at
//! `close()` or when the last clone is dropped.
//!
//! # Examples
//!
//! ```
//! # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
//! # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
//! use std::time::Duration;
//! use zk_recipes::{CacheEvent, CuratorCache};
//!
//! client.create().creating_parents_if_needed().with_data(b"v1".to_vec()).for_path("/config/a")?;
//! let cache = CuratorCache::builder(&client, "/config").build()?;
//! let events = cache.events();
//! cache.start()?;
//! assert!(cache.wait_current_for(Duration::from_secs(10)));
//! assert_eq!(cache.get("/config/a").unwrap().data(), Some(&b"v1"[..]));
//!
//! client.set_data("/config/a", b"v2".to_vec(), None)?;
//! let changed = events
//!     .iter()
//!     .find(|e| matches!(e, CacheEvent::Changed { .. }))
//!     .unwrap();
//! assert_eq!(changed.path(), Some("/config/a"));
//! cache.close();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod bridges;
pub(crate) mod builder;
pub(crate) mod curator;
mod freshness;
mod metrics;
pub(crate) mod options;
pub(crate) mod state;
mod sync;
pub(crate) mod view;

// The earlier paths of this family's items, as deprecated aliases of the
// crate root's (one path per item).

/// The earlier path of [`crate::CuratorCache`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::CuratorCache`")]
pub type CuratorCache = crate::cache::curator::CuratorCache;
/// The earlier path of [`crate::CuratorCacheBuilder`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::CuratorCacheBuilder`"
)]
pub type CuratorCacheBuilder = crate::cache::builder::CuratorCacheBuilder;
/// The earlier path of [`crate::CacheEvent`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::CacheEvent`")]
pub type CacheEvent = crate::cache::view::CacheEvent;
/// The earlier path of [`crate::ChildData`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::ChildData`")]
pub type ChildData = crate::cache::view::ChildData;
/// The earlier path of [`crate::CacheStats`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::CacheStats`")]
pub type CacheStats = crate::cache::state::CacheStats;
/// The earlier path of [`crate::CacheListener`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::CacheListener`")]
pub type CacheListener = crate::cache::curator::CacheListener;
/// The earlier path of [`crate::Freshness`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Freshness`")]
pub type Freshness = crate::freshness::Freshness;
/// The earlier path of [`crate::NodeCache`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::NodeCache`")]
pub type NodeCache = crate::cache::bridges::NodeCache;
/// The earlier path of [`crate::PathChildrenCache`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::PathChildrenCache`"
)]
pub type PathChildrenCache = crate::cache::bridges::PathChildrenCache;
/// The earlier path of [`crate::PathChildrenCacheEvent`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::PathChildrenCacheEvent`"
)]
pub type PathChildrenCacheEvent = crate::cache::bridges::PathChildrenCacheEvent;
/// The earlier path of [`crate::CACHE_DEFAULT_MAX_NODES`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::CACHE_DEFAULT_MAX_NODES`"
)]
pub const DEFAULT_MAX_NODES: usize = crate::cache::curator::DEFAULT_MAX_NODES;
