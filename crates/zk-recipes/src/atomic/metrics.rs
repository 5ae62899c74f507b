//! A counter's figures through the `metrics` facade, with the feature;
//! nothing without it. Each counter registers its handles once, labelled by
//! its path:
//!
//! | metric | kind | what |
//! |---|---|---|
//! | `zk_counter_updates_total{path, outcome}` | counter | updates by how they ended: `applied` (the server's reply), `applied_marker` (a lost reply, proven by the write's marker), `applied_read_back` (a lost reply, proven by a read-back), `not_applied`, `unknown` |

use crate::atomic::outcome::Outcome;

#[cfg(feature = "metrics")]
pub(super) struct Handles {
    applied: metrics::Counter,
    marker: metrics::Counter,
    read_back: metrics::Counter,
    not_applied: metrics::Counter,
    unknown: metrics::Counter,
}

#[cfg(feature = "metrics")]
impl Handles {
    pub(super) fn new(path: &str) -> Handles {
        let c = |outcome: &'static str| metrics::counter!("zk_counter_updates_total", "path" => path.to_string(), "outcome" => outcome);
        Handles {
            applied: c("applied"),
            marker: c("applied_marker"),
            read_back: c("applied_read_back"),
            not_applied: c("not_applied"),
            unknown: c("unknown"),
        }
    }

    pub(super) fn ended<T>(&self, o: &Outcome<T>) {
        match o {
            Outcome::Applied {
                proof: crate::shared::value::Proof::Reply,
            } => self.applied.increment(1),
            Outcome::Applied {
                proof: crate::shared::value::Proof::Marker,
            } => self.marker.increment(1),
            Outcome::Applied { .. } => self.read_back.increment(1),
            Outcome::NotApplied => self.not_applied.increment(1),
            Outcome::Unknown { .. } => self.unknown.increment(1),
        }
    }
}

#[cfg(not(feature = "metrics"))]
pub(super) struct Handles;

#[cfg(not(feature = "metrics"))]
impl Handles {
    pub(super) fn new(_: &str) -> Handles {
        Handles
    }
    pub(super) fn ended<T>(&self, _: &Outcome<T>) {}
}
