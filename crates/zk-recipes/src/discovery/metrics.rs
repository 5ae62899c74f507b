//! Service discovery's figures through the `metrics` facade, with the
//! feature; nothing without it.
//!
//! | metric | kind | what |
//! |---|---|---|
//! | `zk_discovery_instances{base}` | gauge | instances registered (and not unregistered or closed) by this process's discoveries of `base` |
//! | `zk_discovery_registered{base, service, id}` | gauge | 1 while the instance's [`Registration`](crate::Registration) is `Registered` (the server showed its node ours), else 0 |
//! | `zk_service_instances{path}` | gauge | the instances a [`ServiceCache`](crate::ServiceCache) (a provider's included) of service node `path` holds that read as instances |
//! | `zk_service_unreadable_instances{path}` | gauge | its children whose JSON cannot be read |
//! | `zk_service_provider_offered{path}` | gauge | the instances a [`ServiceProvider`](crate::ServiceProvider) offered at its last look (kept by its filters, not down, enabled; the last look of any provider of `path`) |
//! | `zk_service_provider_picks_total{path, outcome}` | counter | its `instance()` answers: `picked`, `none` (nothing offered), `not_current` (its cache was not current: no answer) |
//!
//! The registration gauge follows the instance's node (its
//! `zk_node_registered{path}` too), told by the node at every change of
//! its registration.

use crate::discovery::instance::ServiceInstance;
use crate::nodes::node::PersistentNode;

/// A discovery's handles (one per discovery; the gauge sums over the
/// discoveries of one base).
#[cfg(feature = "metrics")]
pub(crate) struct Handles {
    base: String,
    instances: metrics::Gauge,
}

#[cfg(feature = "metrics")]
impl Handles {
    pub(crate) fn new(base: &str) -> Handles {
        Handles {
            base: base.to_string(),
            instances: metrics::gauge!("zk_discovery_instances", "base" => base.to_string()),
        }
    }

    /// An instance was registered, kept by `node` (not started yet): its
    /// registration is told to its gauge from now on.
    pub(crate) fn registered(&self, node: &PersistentNode, instance: &ServiceInstance) {
        self.instances.increment(1.0);
        node.inner.metrics.mirror_registered(metrics::gauge!(
            "zk_discovery_registered",
            "base" => self.base.clone(),
            "service" => instance.name().to_string(),
            "id" => instance.id().to_string()
        ));
    }

    /// `n` instances were unregistered (or closed).
    pub(crate) fn removed(&self, n: usize) {
        self.instances.decrement(n as f64);
    }
}

#[cfg(not(feature = "metrics"))]
pub(crate) struct Handles;

#[cfg(not(feature = "metrics"))]
impl Handles {
    pub(crate) fn new(_: &str) -> Handles {
        Handles
    }
    pub(crate) fn registered(&self, _: &PersistentNode, _: &ServiceInstance) {}
    pub(crate) fn removed(&self, _: usize) {}
}

/// A service cache's handles.
#[cfg(feature = "metrics")]
pub(crate) struct CacheHandles {
    readable: metrics::Gauge,
    unreadable: metrics::Gauge,
}

#[cfg(feature = "metrics")]
impl CacheHandles {
    pub(crate) fn new(path: &str) -> CacheHandles {
        CacheHandles {
            readable: metrics::gauge!("zk_service_instances", "path" => path.to_string()),
            unreadable: metrics::gauge!("zk_service_unreadable_instances", "path" => path.to_string()),
        }
    }

    /// The cache now holds `readable` instances and `unreadable` children.
    pub(crate) fn seen(&self, readable: usize, unreadable: usize) {
        self.readable.set(readable as f64);
        self.unreadable.set(unreadable as f64);
    }
}

#[cfg(not(feature = "metrics"))]
pub(crate) struct CacheHandles;

#[cfg(not(feature = "metrics"))]
impl CacheHandles {
    pub(crate) fn new(_: &str) -> CacheHandles {
        CacheHandles
    }
    #[allow(dead_code)]
    pub(crate) fn seen(&self, _: usize, _: usize) {}
}

/// A service provider's handles.
#[cfg(feature = "metrics")]
pub(crate) struct ProviderHandles {
    offered: metrics::Gauge,
    picked: metrics::Counter,
    none: metrics::Counter,
    not_current: metrics::Counter,
}

#[cfg(feature = "metrics")]
impl ProviderHandles {
    pub(crate) fn new(path: &str) -> ProviderHandles {
        let picks = |outcome: &'static str| metrics::counter!("zk_service_provider_picks_total", "path" => path.to_string(), "outcome" => outcome);
        ProviderHandles {
            offered: metrics::gauge!("zk_service_provider_offered", "path" => path.to_string()),
            picked: picks("picked"),
            none: picks("none"),
            not_current: picks("not_current"),
        }
    }

    /// The provider offered `n` instances.
    pub(crate) fn offered(&self, n: usize) {
        self.offered.set(n as f64);
    }

    /// An `instance()` answer: `Some(true)` picked, `Some(false)` none
    /// offered, `None` no answer (the cache was not current).
    pub(crate) fn answered(&self, picked: Option<bool>) {
        match picked {
            Some(true) => self.picked.increment(1),
            Some(false) => self.none.increment(1),
            None => self.not_current.increment(1),
        }
    }
}

#[cfg(not(feature = "metrics"))]
pub(crate) struct ProviderHandles;

#[cfg(not(feature = "metrics"))]
impl ProviderHandles {
    pub(crate) fn new(_: &str) -> ProviderHandles {
        ProviderHandles
    }
    pub(crate) fn offered(&self, _: usize) {}
    pub(crate) fn answered(&self, _: Option<bool>) {}
}
