//! What a member shares with its clones, its thread and its signals: its
//! settings, its state (under one lock, with what the signals recorded for
//! the thread), and the signals themselves (a held lock's change, the
//! party's, the connection's), which set the state at once on their own
//! threads.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zk_framework::{ConnectionState, CuratorFramework, ListenerHandle};

use crate::cache::bridges::{PathChildrenCache, PathChildrenCacheEvent};
use crate::core::{Stage, Subscribers, Worker};
use crate::error::{Error, Result};
use crate::locks::holding::{Holding, LockEvent};
use crate::nodes::node::PersistentNode;
use crate::partition::function::PartitionFn;
use crate::partition::state::{Allocation, FailureReason, PartitionEvent, PartitionState, ReleaseReason};

pub(crate) const RECIPE: &str = "SetPartitioner";

/// A member's settings, checked (by the builder).
pub(crate) struct Settings {
    pub(crate) client: CuratorFramework,
    pub(crate) path: String,
    pub(crate) identifier: String,
    /// Sorted, without duplicates.
    pub(crate) items: Vec<String>,
    pub(crate) function: Option<PartitionFn>,
    pub(crate) time_boundary: Duration,
    pub(crate) stuck_after: Duration,
    pub(crate) auto_release: bool,
}

/// One member, shared by its clones, its thread and its signals.
pub(crate) struct Shared {
    pub(crate) client: CuratorFramework,
    pub(crate) path: String,
    pub(crate) party_path: String,
    pub(crate) locks_path: String,
    pub(crate) identifier: String,
    /// The set, sorted, without duplicates.
    pub(crate) items: Vec<String>,
    pub(crate) function: PartitionFn,
    pub(crate) time_boundary: Duration,
    pub(crate) stuck_after: Duration,
    pub(crate) auto_release: bool,
    pub(crate) core: Mutex<Core>,
    /// This member's party node.
    pub(crate) node: PersistentNode,
    /// The party.
    pub(crate) party: PathChildrenCache,
    /// Wakes the thread, and ends its wait in a lock's queue (its cancel):
    /// sent (never blocking) after every change a signal records in
    /// [`Core`].
    pub(crate) wake: (Sender<()>, Receiver<()>),
    pub(crate) worker: Mutex<Option<Worker>>,
    pub(crate) listener: Mutex<Option<ListenerHandle>>,
    /// Whether this member's identifier is in its client's registry (taken
    /// out at the close).
    pub(crate) registered: Mutex<bool>,
}

/// What the member's state lock guards: its state and what the signals
/// recorded for its thread.
pub(crate) struct Core {
    pub(crate) stage: Stage,
    pub(crate) state: PartitionState,
    pub(crate) subscribers: Subscribers<PartitionEvent>,
    /// The party the share was computed from (`None` while settling: then
    /// every change of the party counts).
    pub(crate) members: Option<BTreeSet<String>>,
    /// The party changed since the thread last looked.
    pub(crate) party_changed: bool,
    /// Items whose lock was seen lost since the thread last looked.
    pub(crate) lost: Vec<String>,
    /// `release_set` was called.
    pub(crate) release_requested: bool,
    /// Handles on the locks held (the thread's), for `check()`.
    pub(crate) holdings: Vec<(String, Holding)>,
    /// Bumped by every signal: a decision the thread took on what it read
    /// outside this lock holds only if no signal came meanwhile.
    pub(crate) signals: u64,
    /// The member's figures (the `metrics` feature), told every move.
    pub(crate) metrics: crate::partition::metrics::Handles,
}

impl Core {
    /// Moves to `state` and tells it (unless it is the state already, or
    /// the member has failed: `Failure` is final).
    pub(crate) fn set(&mut self, state: PartitionState) {
        if self.state == state || self.state.is_failure() {
            return;
        }
        self.state = state.clone();
        self.metrics.told(&self.state);
        self.subscribers.tell(&PartitionEvent {
            state,
            at: Instant::now(),
        });
    }
}

/// The identifiers of the members started on one client, by party: a
/// second member with one identifier is refused at its start.
#[derive(Default)]
pub(crate) struct Registry(pub(crate) Mutex<HashSet<(String, String)>>);

impl Shared {
    pub(crate) fn new(b: Settings) -> Result<Arc<Shared>> {
        let Settings {
            client,
            path,
            identifier,
            items,
            function,
            time_boundary,
            stuck_after,
            auto_release,
        } = b;
        let base = path.trim_end_matches('/').to_string();
        let party_path = format!("{base}/party");
        let locks_path = format!("{base}/locks");
        let node = PersistentNode::builder(
            &client,
            &format!("{party_path}/{identifier}"),
            zk_framework::CreateMode::Ephemeral,
        )
        .data(identifier.as_bytes().to_vec())
        .build()?;
        let party = PathChildrenCache::new(&client, &party_path)?;
        let metrics = crate::partition::metrics::Handles::new(
            &base,
            &identifier,
            &PartitionState::Allocating(Allocation::Joining),
        );
        let shared = Arc::new(Shared {
            client,
            path: base,
            party_path,
            locks_path,
            identifier,
            items,
            function: function.unwrap_or_else(|| Box::new(crate::partition::function::default_partition)),
            time_boundary,
            stuck_after,
            auto_release,
            core: Mutex::new(Core {
                stage: Stage::New,
                state: PartitionState::Allocating(Allocation::Joining),
                subscribers: Subscribers::new(),
                members: None,
                party_changed: false,
                lost: Vec::new(),
                release_requested: false,
                holdings: Vec::new(),
                signals: 0,
                metrics,
            }),
            node,
            party,
            wake: crossbeam_channel::bounded(1),
            worker: Mutex::new(None),
            listener: Mutex::new(None),
            registered: Mutex::new(false),
        });
        // The party's changes, told at once (on the cache's thread): a
        // member that owns its share must release.
        let weak = Arc::downgrade(&shared);
        shared.party.forward(move |ev| match weak.upgrade() {
            Some(sh) => {
                sh.on_party_event(&ev);
                true
            }
            None => false,
        });
        Ok(shared)
    }

    /// Wakes the thread (and ends its wait in a lock's queue).
    pub(crate) fn wake(&self) {
        let _ = self.wake.0.try_send(());
    }

    fn on_party_event(&self, ev: &PathChildrenCacheEvent) {
        let name = |p: &str| p.rsplit('/').next().unwrap_or("").to_string();
        let mut core = self.core.lock();
        let changed = match (ev, &core.members) {
            (PathChildrenCacheEvent::Freshness(_), _) => false,
            (PathChildrenCacheEvent::ChildUpdated { .. }, _) => false,
            (PathChildrenCacheEvent::Failed(_), _) => true,
            (_, None) => true,
            (PathChildrenCacheEvent::ChildAdded(d), Some(m)) => !m.contains(&name(d.path())),
            (PathChildrenCacheEvent::ChildRemoved(d), Some(m)) => m.contains(&name(d.path())),
            (PathChildrenCacheEvent::Initialized(kids), Some(m)) => {
                kids.iter().map(|d| name(d.path())).collect::<BTreeSet<_>>() != *m
            }
        };
        if changed {
            core.party_changed = true;
            core.signals += 1;
            if matches!(core.state, PartitionState::Acquired { .. } | PartitionState::Suspended) {
                core.set(PartitionState::Release {
                    reason: ReleaseReason::MembershipChanged,
                });
            }
        }
        drop(core);
        self.wake();
    }

    /// A held lock's change, told on the holding's thread: the member stops
    /// owning at once.
    pub(crate) fn on_lock_event(&self, item: &str, ev: LockEvent) {
        let mut core = self.core.lock();
        core.signals += 1;
        match ev {
            LockEvent::Lost => {
                core.lost.push(item.to_string());
                if matches!(core.state, PartitionState::Acquired { .. } | PartitionState::Suspended) {
                    core.set(PartitionState::Release {
                        reason: ReleaseReason::LockLost { item: item.to_string() },
                    });
                }
            }
            LockEvent::Suspended | LockEvent::HorizonPassed if core.state.is_acquired() => {
                core.set(PartitionState::Suspended);
            }
            _ => {}
        }
        drop(core);
        self.wake();
    }

    pub(crate) fn on_connection(&self, s: ConnectionState) {
        let mut core = self.core.lock();
        core.signals += 1;
        match s {
            ConnectionState::Lost | ConnectionState::AuthFailed if core.stage == Stage::Started => {
                core.set(PartitionState::Failure {
                    reason: FailureReason::SessionLost,
                })
            }
            ConnectionState::Suspended | ConnectionState::ReadOnly if core.state.is_acquired() => {
                core.set(PartitionState::Suspended)
            }
            _ => {}
        }
        drop(core);
        self.wake();
    }

    pub(crate) fn registry(&self) -> Arc<Registry> {
        self.client.recipe().extension(Registry::default)
    }

    pub(crate) fn registry_key(&self) -> (String, String) {
        (
            self.client.recipe().node_key(&self.party_path).to_string(),
            self.identifier.clone(),
        )
    }

    /// Closes the member (idempotent): `Failure(Closed)` is told and the
    /// channels end; the thread gives its locks back and stops (at most the
    /// stop bound), the party node is deleted.
    pub(crate) fn close(&self) -> Result<()> {
        {
            let mut core = self.core.lock();
            if core.stage == Stage::Closed {
                return Ok(());
            }
            let was = std::mem::replace(&mut core.stage, Stage::Closed);
            core.set(PartitionState::Failure {
                reason: FailureReason::Closed,
            });
            core.subscribers.close();
            if was == Stage::New {
                return Ok(());
            }
        }
        self.wake();
        if let Some(w) = self.worker.lock().take() {
            w.stop();
        }
        self.listener.lock().take();
        // A failed member's thread has closed the node already.
        let node = match self.node.close() {
            Err(Error::Closed { .. } | Error::NotStarted { .. }) => Ok(()),
            r => r,
        };
        self.party.close();
        if std::mem::take(&mut *self.registered.lock()) {
            self.registry().0.lock().remove(&self.registry_key());
        }
        node
    }

    pub(crate) fn check_usable(&self) -> Result<()> {
        let core = self.core.lock();
        match core.stage {
            Stage::Started => Ok(()),
            s => Err(s.error(RECIPE, &self.path)),
        }
    }
}
