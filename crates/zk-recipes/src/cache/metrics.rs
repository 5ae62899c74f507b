//! A cache's figures through the `metrics` facade, with the feature;
//! nothing without it. Each cache registers its handles once, labelled by
//! its root path:
//!
//! | metric | kind | what |
//! |---|---|---|
//! | `zk_cache_events_total{path, kind}` | counter | node events told (`created`, `changed`, `deleted`) |
//! | `zk_cache_resyncs_total{path}` | counter | whole-subtree reads (the first load included) |
//! | `zk_cache_reads_total{path}` | counter | reads sent to the server |
//! | `zk_cache_entries{path}` | gauge | nodes the view holds |
//! | `zk_cache_current{path}` | gauge | 1 while the view is current, else 0 |
//! | `zk_cache_not_current_seconds{path}` | histogram | each spell of not being current, when it ends |

use std::time::Duration;

use super::view::CacheEvent;

#[cfg(feature = "metrics")]
pub(crate) struct Handles {
    created: metrics::Counter,
    changed: metrics::Counter,
    deleted: metrics::Counter,
    resyncs: metrics::Counter,
    reads: metrics::Counter,
    entries: metrics::Gauge,
    current: metrics::Gauge,
    not_current: metrics::Histogram,
}

#[cfg(feature = "metrics")]
impl Handles {
    pub(crate) fn new(path: &str) -> Handles {
        let events =
            |kind: &'static str| metrics::counter!("zk_cache_events_total", "path" => path.to_string(), "kind" => kind);
        Handles {
            created: events("created"),
            changed: events("changed"),
            deleted: events("deleted"),
            resyncs: metrics::counter!("zk_cache_resyncs_total", "path" => path.to_string()),
            reads: metrics::counter!("zk_cache_reads_total", "path" => path.to_string()),
            entries: metrics::gauge!("zk_cache_entries", "path" => path.to_string()),
            current: metrics::gauge!("zk_cache_current", "path" => path.to_string()),
            not_current: metrics::histogram!("zk_cache_not_current_seconds", "path" => path.to_string()),
        }
    }

    pub(crate) fn event(&self, ev: &CacheEvent) {
        match ev {
            CacheEvent::Created(_) => self.created.increment(1),
            CacheEvent::Changed { .. } => self.changed.increment(1),
            CacheEvent::Deleted(_) => self.deleted.increment(1),
            _ => {}
        }
    }

    pub(crate) fn entries(&self, n: usize) {
        self.entries.set(n as f64);
    }

    pub(crate) fn resynced(&self) {
        self.resyncs.increment(1);
    }

    pub(crate) fn read(&self) {
        self.reads.increment(1);
    }

    pub(crate) fn current(&self, yes: bool) {
        self.current.set(if yes { 1.0 } else { 0.0 });
    }

    pub(crate) fn spell_ended(&self, d: Duration) {
        self.not_current.record(d.as_secs_f64());
    }
}

#[cfg(not(feature = "metrics"))]
pub(crate) struct Handles;

#[cfg(not(feature = "metrics"))]
impl Handles {
    pub(crate) fn new(_: &str) -> Handles {
        Handles
    }
    pub(crate) fn event(&self, _: &CacheEvent) {}
    pub(crate) fn entries(&self, _: usize) {}
    pub(crate) fn resynced(&self) {}
    pub(crate) fn read(&self) {}
    pub(crate) fn current(&self, _: bool) {}
    pub(crate) fn spell_ended(&self, _: Duration) {}
}
