//! A node's shared state: its settings, what its thread last learnt, and
//! what its channels were told (one lock, one condition).

use crate::core::{Stage, Subscribers, Worker};
use crate::nodes::metrics;
use crate::nodes::registration::{AbsentReason, MemberEvent, Registration};
use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use std::time::Duration;
use zk_framework::{CreateMode, CuratorFramework};

/// How long a node's thread waits for each request (then tries again).
pub(crate) const REQUEST_BOUND: Duration = Duration::from_secs(10);

/// What the node's thread last learnt from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fact {
    /// Nothing yet (or a failure that says nothing about the node).
    Unknown,
    /// Shown present (and ours) by a request sent and answered in `epoch`.
    Proven { epoch: u64, generation: u64 },
    /// Shown absent, or refused, for a reason.
    Absent(AbsentReason),
}

pub(crate) struct State {
    pub(crate) lifecycle: Stage,
    /// The data to keep on the node.
    pub(crate) data: Vec<u8>,
    /// Whether `data` must still be written to the present node.
    pub(crate) data_dirty: bool,
    /// The node's path once created (a sequential node's full name).
    pub(crate) path: Option<String>,
    pub(crate) fact: Fact,
    /// Whether a create (or a take-over of our own node) succeeded once.
    pub(crate) created_once: bool,
    /// Our node is at `path`, created or shown ours on the session of this
    /// generation, and not shown gone or another session's since: what the
    /// close deletes.
    pub(crate) owned: Option<u64>,
    /// Creates that succeeded (re-creates included).
    pub(crate) creates: u64,
    /// Whether a create is in flight: decided (under this lock, while
    /// started) and not yet answered. A close that finds one leaves the node
    /// it makes to the thread that gets its reply.
    pub(crate) creating: bool,
    /// What the channels were last told.
    pub(crate) told: Option<Registration>,
    /// The receivers of [`PersistentNode::events`](crate::PersistentNode::events).
    pub(crate) subscribers: Subscribers<Registration>,
    /// The receivers of [`GroupMember::events`](crate::GroupMember::events) (a member's node tells its
    /// registration there too, under this lock, and its group's cache its
    /// changes).
    pub(crate) members: Subscribers<MemberEvent>,
}

/// The settings of a node.
#[derive(Clone)]
pub(crate) struct Spec {
    /// The recipe's type, for its errors (`"PersistentNode"`,
    /// `"PersistentTtlNode"`, `"GroupMember"`).
    pub(crate) recipe: &'static str,
    pub(crate) path: String,
    pub(crate) mode: CreateMode,
    pub(crate) protected: bool,
    pub(crate) ttl: Option<Duration>,
    pub(crate) parents: bool,
    /// Whether `close()` deletes the node (a TTL node's is left to expire).
    pub(crate) delete_on_close: bool,
}

pub(crate) struct Inner {
    pub(crate) client: CuratorFramework,
    pub(crate) spec: Spec,
    pub(crate) state: Mutex<State>,
    pub(crate) changed: Condvar,
    /// Wakes the node's thread (a state changed, new data).
    pub(crate) wake: (Sender<()>, Receiver<()>),
    /// A watch on the node (or its parent) fired: look again.
    pub(crate) fired: (Sender<()>, Receiver<()>),
    pub(crate) worker: Mutex<Option<Worker>>,
    pub(crate) metrics: metrics::Handles,
}
