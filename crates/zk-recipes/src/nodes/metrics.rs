//! A persistent node's figures through the `metrics` facade, with the
//! feature; nothing without it. Each node registers its handles once,
//! labelled by its path:
//!
//! | metric | kind | what |
//! |---|---|---|
//! | `zk_node_registered{path}` | gauge | 1 while the node is `Registered`, else 0 |
//! | `zk_node_creates_total{path}` | counter | creates that succeeded (the first and every re-creation) |
//!
//! A recipe above may add gauges that follow `zk_node_registered`
//! (`mirror_registered`: a discovery's `zk_discovery_registered`).

use crate::nodes::registration::Registration;

#[cfg(feature = "metrics")]
pub(crate) struct Handles {
    registered: metrics::Gauge,
    creates: metrics::Counter,
    /// Gauges of a recipe above (a discovery's per-instance gauge) that
    /// follow `registered`.
    mirrors: parking_lot::Mutex<Vec<metrics::Gauge>>,
}

#[cfg(feature = "metrics")]
impl Handles {
    pub(crate) fn new(path: &str) -> Handles {
        Handles {
            registered: metrics::gauge!("zk_node_registered", "path" => path.to_string()),
            creates: metrics::counter!("zk_node_creates_total", "path" => path.to_string()),
            mirrors: parking_lot::Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn told(&self, r: &Registration) {
        let v = if r.is_registered() { 1.0 } else { 0.0 };
        self.registered.set(v);
        for g in self.mirrors.lock().iter() {
            g.set(v);
        }
    }

    /// `gauge` follows the registration from its next change on (set to 0
    /// now: call it before the node starts).
    pub(crate) fn mirror_registered(&self, gauge: metrics::Gauge) {
        gauge.set(0.0);
        self.mirrors.lock().push(gauge);
    }

    pub(crate) fn created(&self) {
        self.creates.increment(1);
    }
}

#[cfg(not(feature = "metrics"))]
pub(crate) struct Handles;

#[cfg(not(feature = "metrics"))]
impl Handles {
    pub(crate) fn new(_: &str) -> Handles {
        Handles
    }
    pub(crate) fn told(&self, _: &Registration) {}
    pub(crate) fn created(&self) {}
}
