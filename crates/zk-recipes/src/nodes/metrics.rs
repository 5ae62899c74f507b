//! A persistent node's figures through the `metrics` facade, with the
//! feature; nothing without it. Each node registers its handles once,
//! labelled by its path:
//!
//! | metric | kind | what |
//! |---|---|---|
//! | `zk_node_registered{path}` | gauge | 1 while the node is `Registered`, else 0 |
//! | `zk_node_creates_total{path}` | counter | creates that succeeded (the first and every re-creation) |

use crate::nodes::registration::Registration;

#[cfg(feature = "metrics")]
pub(crate) struct Handles {
    registered: metrics::Gauge,
    creates: metrics::Counter,
}

#[cfg(feature = "metrics")]
impl Handles {
    pub(crate) fn new(path: &str) -> Handles {
        Handles {
            registered: metrics::gauge!("zk_node_registered", "path" => path.to_string()),
            creates: metrics::counter!("zk_node_creates_total", "path" => path.to_string()),
        }
    }

    pub(crate) fn told(&self, r: &Registration) {
        self.registered.set(if r.is_registered() { 1.0 } else { 0.0 });
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
