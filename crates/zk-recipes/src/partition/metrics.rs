//! A set partitioner member's figures through the `metrics` facade, with
//! the feature; nothing without it. Each member registers its handles once,
//! labelled by the partition's path and the member's identifier:
//!
//! | metric | kind | what |
//! |---|---|---|
//! | `zk_partition_share{path, member}` | gauge | items the member may use: its share while `Acquired`, else 0 |
//! | `zk_partition_state{path, member, state}` | gauge | 1 for the member's state (`allocating`, `acquired`, `suspended`, `release`, `stuck`, `failure`), 0 for the others |
//! | `zk_partition_rebalances_total{path, member, reason}` | counter | moves to `Release`: the share given back for a reallocation (`reason`: `membership_changed`, `lock_lost`) |

use crate::partition::state::PartitionState;

/// The `state` label of each state, in the order of [`PartitionState`].
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
const STATES: [&str; 6] = ["allocating", "acquired", "suspended", "release", "stuck", "failure"];

/// `state`'s label.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
fn state_name(state: &PartitionState) -> &'static str {
    match state {
        PartitionState::Allocating(_) => "allocating",
        PartitionState::Acquired { .. } => "acquired",
        PartitionState::Suspended => "suspended",
        PartitionState::Release { .. } => "release",
        PartitionState::Stuck { .. } => "stuck",
        PartitionState::Failure { .. } => "failure",
    }
}

#[cfg(feature = "metrics")]
pub(crate) struct Handles {
    share: metrics::Gauge,
    states: Vec<(&'static str, metrics::Gauge)>,
    membership: metrics::Counter,
    lock_lost: metrics::Counter,
}

#[cfg(feature = "metrics")]
impl Handles {
    pub(crate) fn new(path: &str, member: &str, state: &PartitionState) -> Handles {
        let labels = || [("path", path.to_string()), ("member", member.to_string())];
        let rebalances = |reason: &'static str| {
            let mut l: Vec<(&'static str, String)> = labels().to_vec();
            l.push(("reason", reason.to_string()));
            metrics::counter!("zk_partition_rebalances_total", &l)
        };
        let h = Handles {
            share: metrics::gauge!("zk_partition_share", &labels()),
            states: STATES
                .iter()
                .map(|s| {
                    let mut l: Vec<(&'static str, String)> = labels().to_vec();
                    l.push(("state", s.to_string()));
                    (*s, metrics::gauge!("zk_partition_state", &l))
                })
                .collect(),
            membership: rebalances("membership_changed"),
            lock_lost: rebalances("lock_lost"),
        };
        h.told(state);
        h
    }

    /// The member moved to `state`.
    pub(crate) fn told(&self, state: &PartitionState) {
        self.share.set(state.share().len() as f64);
        let now = state_name(state);
        for (name, g) in &self.states {
            g.set(if *name == now { 1.0 } else { 0.0 });
        }
        if let PartitionState::Release { reason } = state {
            match reason {
                crate::partition::state::ReleaseReason::MembershipChanged => self.membership.increment(1),
                crate::partition::state::ReleaseReason::LockLost { .. } => self.lock_lost.increment(1),
            }
        }
    }
}

#[cfg(not(feature = "metrics"))]
pub(crate) struct Handles;

#[cfg(not(feature = "metrics"))]
impl Handles {
    pub(crate) fn new(_: &str, _: &str, _: &PartitionState) -> Handles {
        Handles
    }
    pub(crate) fn told(&self, _: &PartitionState) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_has_its_label() {
        use crate::partition::state::{Allocation, FailureReason, ReleaseReason};
        let all = [
            PartitionState::Allocating(Allocation::Joining),
            PartitionState::Acquired { items: vec![] },
            PartitionState::Suspended,
            PartitionState::Release {
                reason: ReleaseReason::MembershipChanged,
            },
            PartitionState::Failure {
                reason: FailureReason::SessionLost,
            },
        ];
        for s in &all {
            assert!(STATES.contains(&state_name(s)), "{s:?}");
        }
    }
}
