//! [`ServiceCache`]: one service's instances, followed by a
//! [`CuratorCache`] of its node, with its freshness.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Receiver;
use parking_lot::Mutex;

use crate::cache::curator::CuratorCache;
use crate::cache::view::{CacheEvent, ChildData};
use crate::discovery::instance::{InstanceRead, ServiceInstance};
use crate::error::{Error, Result};
use crate::freshness::Freshness;

/// What a [`ServiceCache`]'s [`events`](ServiceCache::events) tell, keyed by
/// the instance's node name (its id, but for a `DynamicSequential` one).
///
/// # Examples
///
/// ```
/// use zk_recipes::ServiceCacheEvent;
/// let ev = ServiceCacheEvent::Removed { node: "a".into() };
/// assert!(matches!(ev, ServiceCacheEvent::Removed { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServiceCacheEvent {
    /// An instance appeared (or could not be read: the error says why).
    Added {
        /// Its node name.
        node: String,
        /// The instance read, or why not.
        instance: Result<ServiceInstance>,
    },
    /// An instance's data changed.
    Updated {
        /// Its node name.
        node: String,
        /// The instance read, or why not.
        instance: Result<ServiceInstance>,
    },
    /// An instance went.
    Removed {
        /// Its node name.
        node: String,
    },
    /// The instances were read whole: at start and after every
    /// re-synchronisation (a reconnect, a new session), with the instances
    /// then (Curator's cache tells nothing of its initial load).
    Initialized(Vec<InstanceRead>),
    /// The view's freshness changed (see [`Freshness`]).
    Freshness(Freshness),
    /// The cache stopped following the server for good.
    Failed(Error),
}

/// One service's instances, kept current by a [`CuratorCache`] of
/// `<base>/<name>` (children only; Curator's `ServiceCache`), keyed by node
/// name, with a [`freshness`](Self::freshness): a list that says how
/// current it is. An instance whose JSON cannot be read is left out of
/// [`instances`](Self::instances) (as in Curator's cache) and told on
/// [`events`](Self::events) with its error. Build one with
/// [`ServiceDiscovery::service_cache`](crate::ServiceDiscovery::service_cache).
/// Clones share this cache; it closes at `close()` or when the last clone
/// is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_recipes::{ServiceDiscovery, ServiceInstance};
/// let d = ServiceDiscovery::builder(&client, "/services").build()?;
/// d.start()?;
/// d.register(&ServiceInstance::builder("api").id("a").port(80).build()?)?;
/// let cache = d.service_cache("api")?;
/// cache.start()?;
/// assert!(zk_testing::wait_until(Duration::from_secs(10), || {
///     cache.current_instances().is_ok_and(|i| i.len() == 1)
/// }));
/// cache.close();
/// d.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ServiceCache {
    cache: CuratorCache,
    parsed: Parsed,
}

/// Every child's instance, parsed once when the cache's view changes (not
/// at every lookup), keyed by the child's path, with its node name.
type Parsed = Arc<Mutex<BTreeMap<String, (String, Result<Arc<ServiceInstance>>)>>>;

/// A child's node name and instance, the instance shared.
fn shared((node, instance): (String, Result<ServiceInstance>)) -> (String, Result<Arc<ServiceInstance>>) {
    (node, instance.map(Arc::new))
}

/// Keeps `cache`'s children parsed: filled from the view and changed by
/// each event, under the cache's lock that orders its view's changes (so a
/// read under that lock sees the parsed view of exactly the cache's view).
fn keep_parsed(cache: &CuratorCache) -> Parsed {
    let root = cache.path().to_string();
    let parsed: Parsed = Arc::default();
    let memo = Arc::clone(&parsed);
    cache.subscribe(move |now| {
        *memo.lock() = now
            .iter()
            .filter(|d| d.path() != root)
            .map(|d| (d.path().to_string(), shared(read_child(d))))
            .collect();
        Box::new(move |ev| {
            let child = |d: &ChildData| d.path() != root;
            match ev {
                CacheEvent::Created(d) | CacheEvent::Changed { new: d, .. } if child(d) => {
                    memo.lock().insert(d.path().to_string(), shared(read_child(d)));
                }
                CacheEvent::Deleted(d) if child(d) => {
                    memo.lock().remove(d.path());
                }
                _ => {}
            }
            true
        })
    });
    parsed
}

/// A child's node name and instance.
fn read_child(d: &ChildData) -> (String, Result<ServiceInstance>) {
    let node = d.path().rsplit('/').next().unwrap_or_default().to_string();
    let instance = ServiceInstance::from_json(d.data().unwrap_or_default()).map_err(|e| match e {
        Error::InstanceJson { at, reason, .. } => Error::InstanceJson {
            node: d.path().to_string(),
            at,
            reason,
        },
        e => e,
    });
    (node, instance)
}

/// Tells the `metrics` facade how many instances `cache` holds, readable
/// or not, at every change of its view (told on the cache's thread, under
/// its lock, in order; the subscription lives as long as the cache).
fn count_instances(cache: &CuratorCache) {
    let root = cache.path().to_string();
    let handles = crate::discovery::metrics::CacheHandles::new(&root);
    cache.subscribe(move |now| {
        let mut children: BTreeMap<String, bool> = now
            .iter()
            .filter(|d| d.path() != root)
            .map(|d| (d.path().to_string(), read_child(d).1.is_ok()))
            .collect();
        Box::new(move |ev| {
            let child = |d: &ChildData| d.path() != root;
            match ev {
                CacheEvent::Created(d) | CacheEvent::Changed { new: d, .. } if child(d) => {
                    children.insert(d.path().to_string(), read_child(d).1.is_ok());
                }
                CacheEvent::Deleted(d) if child(d) => {
                    children.remove(d.path());
                }
                _ => return true,
            }
            let readable = children.values().filter(|ok| **ok).count();
            handles.seen(readable, children.len() - readable);
            true
        })
    });
}

impl ServiceCache {
    pub(crate) fn new(client: &zk_framework::CuratorFramework, service_path: &str) -> Result<ServiceCache> {
        let cache = CuratorCache::builder(client, service_path).max_depth(Some(1)).build()?;
        if cfg!(feature = "metrics") {
            count_instances(&cache);
        }
        let parsed = keep_parsed(&cache);
        Ok(ServiceCache { cache, parsed })
    }

    /// Starts following.
    ///
    /// # Errors
    ///
    /// As [`CuratorCache::start`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.service_cache("api")?.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        self.cache.start()
    }

    /// Stops following, for every clone; every event channel ends.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.service_cache("api")?.close();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.cache.close()
    }

    /// The service node's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert_eq!(d.service_cache("api")?.path(), "/services/api");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        self.cache.path()
    }

    /// The readable instances of the parsed view, in node-name order.
    fn readable(&self) -> Vec<Arc<ServiceInstance>> {
        self.parsed
            .lock()
            .values()
            .filter_map(|(_, r)| r.as_ref().ok().cloned())
            .collect()
    }

    /// [`current_instances`](Self::current_instances), shared rather than
    /// copied (a provider copies only the one it picks).
    pub(crate) fn current_shared(&self) -> Result<Vec<Arc<ServiceInstance>>> {
        self.cache.current(self.cache.path(), |_| self.readable())
    }

    /// Every instance as last read, by node name, each read or why not,
    /// whatever the freshness.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(d.service_cache("api")?.by_node().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn by_node(&self) -> BTreeMap<String, Result<ServiceInstance>> {
        self.parsed
            .lock()
            .values()
            .map(|(node, r)| {
                (
                    node.clone(),
                    r.as_ref().map(|i| ServiceInstance::clone(i)).map_err(Clone::clone),
                )
            })
            .collect()
    }

    /// The instances as last read (those that could be read, in node-name
    /// order), whatever the freshness: Curator's `getInstances()`, which
    /// says nothing of how old it is. Prefer
    /// [`current_instances`](Self::current_instances).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(d.service_cache("api")?.instances().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn instances(&self) -> Vec<ServiceInstance> {
        self.readable().iter().map(|i| ServiceInstance::clone(i)).collect()
    }

    /// The instances, only while the view is current (every change the
    /// server announced to the client before this call applied).
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotCurrent`] with the freshness otherwise (not
    /// started, stale, re-synchronising, updating, failed, closed).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(d.service_cache("api")?.current_instances().is_err()); // not started
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_instances(&self) -> Result<Vec<ServiceInstance>> {
        Ok(self
            .current_shared()?
            .iter()
            .map(|i| ServiceInstance::clone(i))
            .collect())
    }

    /// How fresh the view is.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(!d.service_cache("api")?.freshness().is_current());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn freshness(&self) -> Freshness {
        self.cache.freshness()
    }

    /// Waits until current, at most `timeout`: whether it is.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let c = d.service_cache("api")?;
    /// c.start()?;
    /// c.wait_current_for(std::time::Duration::from_secs(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_current_for(&self, timeout: Duration) -> bool {
        self.cache.wait_current_for(timeout)
    }

    /// Every change from now on, in order (instances keyed by node name,
    /// `Initialized` with the instances, freshness changes), on an
    /// unbounded channel that ends when the cache closes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// use zk_recipes::{ServiceCacheEvent, ServiceDiscovery};
    /// let d = ServiceDiscovery::builder(&client, "/services").build()?;
    /// let cache = d.service_cache("api")?;
    /// let events = cache.events();
    /// cache.start()?;
    /// loop {
    ///     if let ServiceCacheEvent::Initialized(now) = events.recv_timeout(std::time::Duration::from_secs(10))? {
    ///         assert!(now.is_empty());
    ///         break;
    ///     }
    /// }
    /// cache.close();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<ServiceCacheEvent> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let root = self.cache.path().to_string();
        self.cache.subscribe(|now| {
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
                        let (node, instance) = read_child(d);
                        ServiceCacheEvent::Added { node, instance }
                    }
                    CacheEvent::Changed { new, .. } if child(new) => {
                        children.insert(new.path().to_string(), new.clone());
                        let (node, instance) = read_child(new);
                        ServiceCacheEvent::Updated { node, instance }
                    }
                    CacheEvent::Deleted(d) if child(d) => {
                        children.remove(d.path());
                        ServiceCacheEvent::Removed { node: read_child(d).0 }
                    }
                    CacheEvent::Initialized => ServiceCacheEvent::Initialized(
                        children
                            .values()
                            .map(|d| {
                                let (node, instance) = read_child(d);
                                InstanceRead { node, instance }
                            })
                            .collect(),
                    ),
                    CacheEvent::Freshness(f) => ServiceCacheEvent::Freshness(*f),
                    CacheEvent::Failed(e) => ServiceCacheEvent::Failed(e.clone()),
                    _ => return true,
                };
                tx.send(out).is_ok()
            })
        });
        rx
    }
}
