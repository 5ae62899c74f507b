//! A mutex waiter's exists-watch on its own node, which lets it be granted on
//! its predecessor's deletion alone; granted, the watch carries on as the
//! holding's own-node watch (no second request).

use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use zk_framework::proto::{EventType, Stat};
use zk_framework::CuratorFramework;
use zk_framework::{WatchedEvent, Watcher};

/// What a waiter's watch reports to once its node is granted: the node's
/// holding (implemented by the holding; the watch knows no more of it).
pub(crate) trait WatchedHolding: Send + Sync {
    /// The node was seen deleted before the grant: the holding is lost.
    fn node_deleted(&self);
    /// The watch reports to this holding from now on: it needs no own-node
    /// watch of its own.
    fn watched_by_waiter(&self);
    /// An event of the node's watch.
    fn node_event(&self, e: WatchedEvent);
    /// Whether the holding is over (released or lost): its events change
    /// nothing.
    fn is_over(&self) -> bool;
}

/// A waiting node's exists-watch on itself. A mutex waiter is granted without
/// a listing when the node it watches is deleted; that is only right while its
/// own node still exists, which a listing would have shown and this watch
/// shows instead: a deletion of our node (another client's delete, `zk-lock
/// break --node`) is notified to this session before the deletion of any node
/// that happened after it, so when the watched node's deletion arrives, ours
/// has already been heard of. Granted, the watch carries on as the holding's
/// own-node watch (no second request).
pub(crate) struct WaiterWatch {
    state: Mutex<WaiterWatchState>,
    /// The connection epoch read before the watch was sent.
    epoch: u64,
}

struct WaiterWatchState {
    watched: Watched,
    /// The holding the watch reports to, once granted.
    holder: Option<Weak<dyn WatchedHolding>>,
}

/// Where a [`WaiterWatch`] stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// Sent; no reply yet.
    Pending,
    /// The server said the node exists: the watch is set.
    Set,
    /// The node is gone (the reply said so, or its deletion was notified).
    Deleted,
    /// The watch tells nothing more: not sent, failed, or used up by a data
    /// change.
    Unusable,
}

impl WaiterWatch {
    /// Sends the exists-watch on `node` (a full client path) without waiting;
    /// its reply is read before the reply of any request sent after it.
    pub(crate) fn send(client: &CuratorFramework, node: &str) -> Arc<WaiterWatch> {
        let w = Arc::new(WaiterWatch {
            state: Mutex::new(WaiterWatchState {
                watched: Watched::Pending,
                holder: None,
            }),
            epoch: client.recipe().connection_epoch(),
        });
        let (watcher, on_reply) = (WaiterWatcher(w.clone()), w.clone());
        let reply = move |r: zk_framework::Result<Option<Stat>>| on_reply.reply(r.map(|s| s.is_some()));
        if let Err(e) = client.recipe().exists_w_detached(node, watcher, reply) {
            log::debug!("could not watch waiting lock node {node}: {e}");
            w.state.lock().watched = Watched::Unusable;
        }
        w
    }

    /// Whether the node is known to exist and is being watched: a deletion of
    /// it would have been reported before any later event of this session.
    pub(crate) fn present(&self) -> bool {
        self.state.lock().watched == Watched::Set
    }

    /// The connection epoch read before the watch was sent: what it shows
    /// holds, in order with the session's other events, while the client's
    /// epoch is still this one.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether the watch can still tell (it is set or its reply is pending).
    pub(crate) fn usable(&self) -> bool {
        matches!(self.state.lock().watched, Watched::Pending | Watched::Set)
    }

    /// The reply comes before any grant (a grant needs `Set`), so there is no
    /// holding to tell yet.
    fn reply(&self, r: zk_framework::Result<bool>) {
        let mut s = self.state.lock();
        if s.watched == Watched::Pending {
            s.watched = match r {
                Ok(true) => Watched::Set,
                Ok(false) => Watched::Deleted,
                Err(_) => Watched::Unusable,
            };
        }
    }

    fn event(&self, e: WatchedEvent) {
        let mut s = self.state.lock();
        s.watched = if e.event_type == EventType::NodeDeleted {
            Watched::Deleted
        } else {
            Watched::Unusable
        };
        let holder = s.holder.take().and_then(|h| h.upgrade());
        drop(s);
        if let Some(st) = holder {
            st.node_event(e);
        }
    }

    /// Whether its event would only change this watch's state: no holding
    /// to tell yet, or one that is over (released, lost or gone).
    fn only_signals(&self) -> bool {
        self.state
            .lock()
            .holder
            .as_ref()
            .map_or(true, |h| h.upgrade().map_or(true, |h| h.is_over()))
    }

    /// Makes `st` the watch's holding: `true` if the watch is set and now
    /// reports to it (or the node's deletion was already heard of, and `st`
    /// is lost); `false` if the holding must watch its node itself.
    pub(crate) fn hand_over(&self, st: &Arc<dyn WatchedHolding>) -> bool {
        let mut s = self.state.lock();
        match s.watched {
            Watched::Deleted => {
                drop(s);
                st.node_deleted();
                true
            }
            Watched::Set => {
                s.holder = Some(Arc::downgrade(st));
                st.watched_by_waiter();
                true
            }
            Watched::Pending | Watched::Unusable => false,
        }
    }
}

/// A [`WaiterWatch`]'s watcher. It only signals (and so may run on the
/// client's I/O thread, in order with the session's other events) while the
/// watch has no live holding to tell.
struct WaiterWatcher(Arc<WaiterWatch>);

impl Watcher for WaiterWatcher {
    fn process(self: Box<Self>, e: WatchedEvent) {
        self.0.event(e)
    }

    fn only_signals(&self) -> bool {
        self.0.only_signals()
    }
}
