//! [`ServiceProvider`]: picks one instance of a service from its
//! [`ServiceCache`], with Curator's strategies, its down-instance policy and
//! filters, and a typed answer while the cache is not current.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::discovery::cache::ServiceCache;
use crate::discovery::instance::ServiceInstance;
use crate::error::Result;
use crate::freshness::Freshness;

/// How a [`ServiceProvider`] picks an instance (Curator's
/// `ProviderStrategy`s).
///
/// # Examples
///
/// ```
/// assert_eq!(zk_recipes::ProviderStrategy::default(), zk_recipes::ProviderStrategy::RoundRobin);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ProviderStrategy {
    /// Each in turn (a wrapping counter: Curator's `abs(counter++) % n`
    /// goes negative after 2^31 picks).
    #[default]
    RoundRobin,
    /// Uniformly at random.
    Random,
    /// The last pick while it is still offered (same id), else round robin.
    StickyRoundRobin,
    /// The last pick while it is still offered (same id), else random.
    StickyRandom,
}

/// When an instance noted in error is left out (Curator's
/// `DownInstancePolicy`: 30 s, 2 errors).
///
/// # Examples
///
/// ```
/// let p = zk_recipes::DownInstancePolicy::default();
/// assert_eq!((p.timeout.as_secs(), p.error_threshold), (30, 2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DownInstancePolicy {
    /// How long after its FIRST noted error an instance's errors are
    /// forgotten.
    pub timeout: Duration,
    /// How many errors (within the timeout) make an instance down.
    pub error_threshold: u32,
}

impl Default for DownInstancePolicy {
    fn default() -> Self {
        DownInstancePolicy {
            timeout: Duration::from_secs(30),
            error_threshold: 2,
        }
    }
}

type Filter = Arc<dyn Fn(&ServiceInstance) -> bool + Send + Sync>;

/// Builds a [`ServiceProvider`]:
/// [`ServiceDiscovery::provider_builder`](crate::ServiceDiscovery::provider_builder).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use zk_recipes::{ProviderStrategy, ServiceDiscovery};
/// let d = ServiceDiscovery::builder(&client, "/services").build()?;
/// let p = d.provider_builder("api")?
///     .strategy(ProviderStrategy::Random)
///     .filter(|i| i.port().is_some())
///     .build();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a builder does nothing until build()"]
pub struct ServiceProviderBuilder {
    cache: ServiceCache,
    strategy: ProviderStrategy,
    policy: DownInstancePolicy,
    filters: Vec<Filter>,
}

impl std::fmt::Debug for ServiceProviderBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceProviderBuilder")
            .field("path", &self.cache.path())
            .field("strategy", &self.strategy)
            .field("policy", &self.policy)
            .field("filters", &self.filters.len())
            .finish()
    }
}

impl ServiceProviderBuilder {
    pub(crate) fn new(cache: ServiceCache) -> ServiceProviderBuilder {
        ServiceProviderBuilder {
            cache,
            strategy: ProviderStrategy::RoundRobin,
            policy: DownInstancePolicy::default(),
            filters: Vec::new(),
        }
    }

    /// The strategy (default round robin).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let p = d.provider_builder("api")?.strategy(zk_recipes::ProviderStrategy::StickyRandom).build();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn strategy(mut self, strategy: ProviderStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// The down-instance policy (default 30 s, 2 errors).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use std::time::Duration;
    /// use zk_recipes::DownInstancePolicy;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let policy = DownInstancePolicy { timeout: Duration::from_secs(5), error_threshold: 1 };
    /// let p = d.provider_builder("api")?.down_instance_policy(policy).build();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn down_instance_policy(mut self, policy: DownInstancePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Adds a filter: only instances it keeps are offered (filters apply in
    /// the order added, before the down instances and `enabled`, as
    /// Curator's).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let p = d.provider_builder("api")?.filter(|i| i.endpoint().is_some()).build();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn filter(mut self, keep: impl Fn(&ServiceInstance) -> bool + Send + Sync + 'static) -> Self {
        self.filters.push(Arc::new(keep));
        self
    }

    /// The provider (not started).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let p = d.provider_builder("api")?.build();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> ServiceProvider {
        let seed = RandomState::new().build_hasher().finish() | 1;
        ServiceProvider {
            shared: Arc::new(Shared {
                metrics: crate::discovery::metrics::ProviderHandles::new(self.cache.path()),
                cache: self.cache,
                strategy: self.strategy,
                policy: self.policy,
                filters: self.filters,
                state: Mutex::new(Picks {
                    counter: 0,
                    rng: seed,
                    sticky: None,
                    down: HashMap::new(),
                }),
            }),
        }
    }
}

/// One service's provider (Curator's `ServiceProvider`): an instance picked
/// by its [`ProviderStrategy`] among the instances its [`ServiceCache`]
/// shows, kept by its filters, not down (see [`note_error`](Self::note_error))
/// and enabled. Unlike Curator's, it answers only from a CURRENT cache:
/// while the cache is not current (not started, disconnected, resyncing,
/// ...) [`instance`](Self::instance) and
/// [`all_instances`](Self::all_instances) return
/// [`Error::CacheNotCurrent`](crate::Error::CacheNotCurrent) with the
/// freshness, never a stale list in silence. Clones share this provider;
/// its cache closes at `close()` or when the last clone is dropped.
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
/// let provider = d.provider_builder("api")?.build();
/// assert!(provider.instance().is_err()); // not started: no answer from an unknown list
/// provider.start()?;
/// assert!(zk_testing::wait_until(Duration::from_secs(10), || {
///     provider.instance().is_ok_and(|i| i.is_some_and(|i| i.id() == "a"))
/// }));
/// provider.close();
/// d.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ServiceProvider {
    shared: Arc<Shared>,
}

struct Shared {
    cache: ServiceCache,
    strategy: ProviderStrategy,
    policy: DownInstancePolicy,
    filters: Vec<Filter>,
    state: Mutex<Picks>,
    /// Its figures (the `metrics` feature).
    metrics: crate::discovery::metrics::ProviderHandles,
}

struct Picks {
    counter: u64,
    rng: u64,
    /// The sticky strategies' last pick (its id).
    sticky: Option<String>,
    /// Errors by instance id: how many, and when the first was noted.
    down: HashMap<String, (u32, Instant)>,
}

impl Picks {
    /// xorshift64*: enough for spreading picks, no dependency.
    fn random(&mut self, n: usize) -> usize {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        usize::try_from(r % n as u64).unwrap_or(0)
    }

    fn round_robin(&mut self, n: usize) -> usize {
        let i = self.counter % n as u64;
        self.counter = self.counter.wrapping_add(1);
        usize::try_from(i).unwrap_or(0)
    }
}

impl std::fmt::Debug for ServiceProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceProvider")
            .field("path", &self.shared.cache.path())
            .field("strategy", &self.shared.strategy)
            .field("freshness", &self.shared.cache.freshness())
            .finish()
    }
}

impl ServiceProvider {
    /// Starts its cache.
    ///
    /// # Errors
    ///
    /// As [`ServiceCache::start`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.provider_builder("api")?.build().start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        self.shared.cache.start()
    }

    /// Closes its cache, for every clone.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.provider_builder("api")?.build().close();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.shared.cache.close()
    }

    /// Its cache.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert_eq!(d.provider_builder("api")?.build().cache().path(), "/services/api");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cache(&self) -> &ServiceCache {
        &self.shared.cache
    }

    /// How fresh its cache is.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(!d.provider_builder("api")?.build().freshness().is_current());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn freshness(&self) -> Freshness {
        self.shared.cache.freshness()
    }

    /// The instances offered: the current cache's, kept by the filters
    /// (in order), not down, enabled.
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotCurrent`](crate::Error::CacheNotCurrent) while the
    /// cache is not current.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let p = d.provider_builder("api")?.build();
    /// assert!(p.all_instances().is_err()); // not started
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn all_instances(&self) -> Result<Vec<ServiceInstance>> {
        Ok(self.offered()?.iter().map(|i| ServiceInstance::clone(i)).collect())
    }

    /// The instances offered, shared with the cache (nothing copied).
    fn offered(&self) -> Result<Vec<Arc<ServiceInstance>>> {
        let sh = &self.shared;
        let all = sh.cache.current_shared()?;
        let mut picks = sh.state.lock();
        let now = Instant::now();
        let policy = sh.policy;
        picks
            .down
            .retain(|_, (_, first)| now.saturating_duration_since(*first) < policy.timeout);
        let offered: Vec<Arc<ServiceInstance>> = all
            .into_iter()
            .filter(|i| sh.filters.iter().all(|f| f(i)))
            .filter(|i| {
                picks
                    .down
                    .get(i.id())
                    .map_or(true, |(n, _)| *n < policy.error_threshold)
            })
            .filter(|i| i.enabled())
            .collect();
        sh.metrics.offered(offered.len());
        Ok(offered)
    }

    /// One instance by the strategy, `None` when none is offered.
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotCurrent`](crate::Error::CacheNotCurrent) while the
    /// cache is not current.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let p = d.provider_builder("api")?.build();
    /// p.start()?;
    /// if let Ok(Some(i)) = p.instance() {
    ///     println!("{:?}", i.endpoint());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn instance(&self) -> Result<Option<ServiceInstance>> {
        let answer = self.pick();
        self.shared.metrics.answered(match &answer {
            Ok(pick) => Some(pick.is_some()),
            Err(_) => None,
        });
        answer
    }

    fn pick(&self) -> Result<Option<ServiceInstance>> {
        let offered = self.offered()?;
        if offered.is_empty() {
            return Ok(None);
        }
        let mut picks = self.shared.state.lock();
        let sticky = matches!(
            self.shared.strategy,
            ProviderStrategy::StickyRoundRobin | ProviderStrategy::StickyRandom
        );
        if sticky {
            if let Some(i) = picks
                .sticky
                .as_ref()
                .and_then(|id| offered.iter().find(|i| i.id() == id))
            {
                return Ok(Some(ServiceInstance::clone(i)));
            }
        }
        let n = offered.len();
        let at = match self.shared.strategy {
            ProviderStrategy::Random | ProviderStrategy::StickyRandom => picks.random(n),
            _ => picks.round_robin(n),
        };
        let pick = ServiceInstance::clone(&offered[at]);
        if sticky {
            picks.sticky = Some(pick.id().to_string());
        }
        Ok(Some(pick))
    }

    /// Notes an error of `instance` (by id; Curator's compares every
    /// field, so an edited instance starts over): from its
    /// `error_threshold`-th error it is not offered, until `timeout` after
    /// its FIRST error (Curator: between timeout and 1.5 x timeout, its
    /// purge runs at most every timeout/2).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let p = d.provider_builder("api")?.build();
    /// p.note_error(&zk_recipes::ServiceInstance::builder("api").id("a").build()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn note_error(&self, instance: &ServiceInstance) {
        let mut picks = self.shared.state.lock();
        let now = Instant::now();
        let timeout = self.shared.policy.timeout;
        let e = picks.down.entry(instance.id().to_string()).or_insert((0, now));
        if now.saturating_duration_since(e.1) >= timeout {
            *e = (0, now);
        }
        e.0 = e.0.saturating_add(1);
    }
}
