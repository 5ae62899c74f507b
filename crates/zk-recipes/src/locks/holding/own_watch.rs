//! A holding's exists-watch on its own node: the deletion of the node (an
//! operator breaking the lock) is told as a loss. A mutex waiter's watch on
//! its node is taken over at the grant ([`crate::locks::waiter::WaiterWatch`]);
//! otherwise the watch goes out from the client's executor shortly after the
//! grant, so that a lock held for less than that costs no request.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use zk_framework::proto::{EventType, Stat};
use zk_framework::{WatchedEvent, Watcher};

use super::state::{HoldState, LOST};
use crate::locks::stats::LossCause;
use crate::locks::waiter::WatchedHolding;

/// How long after a grant a holding's own-node watch is sent (and, after a
/// revocation request used it up, set again); at most 5 ms more, as the
/// client's executor works in batches under load. A node deleted within it is
/// reported as soon as the watch finds it gone. A mutex holder that waited
/// for its lock sends none: it has watched its node since it queued.
///
/// # Examples
///
/// ```
/// assert!(zk_recipes::OWN_WATCH_DELAY <= std::time::Duration::from_millis(10));
/// ```
pub const OWN_WATCH_DELAY: Duration = Duration::from_millis(10);

/// A holding's own-node watch goes out from its client's executor
/// ([`zk_framework::recipe::Recipe::schedule`]) [`OWN_WATCH_DELAY`] after the
/// grant; a holding released (or dropped) before its time sends none. No
/// executor thread (the system refused one, or the client is closed): at
/// once.
pub(super) fn schedule_own_watch(st: &Arc<HoldState>) {
    st.schedule(Instant::now() + OWN_WATCH_DELAY);
}

/// A holding's own-node watcher. Once the holding is over (released, lost or
/// gone) its event changes nothing, so it only signals: the notification of a
/// release's own delete is then handled on the client's I/O thread instead
/// of waking the event thread.
pub(super) struct OwnNodeWatcher(pub(super) Weak<HoldState>);

impl Watcher for OwnNodeWatcher {
    fn process(self: Box<Self>, e: WatchedEvent) {
        on_own_node_event(&self.0, e)
    }

    fn only_signals(&self) -> bool {
        is_over(&self.0)
    }
}

impl WatchedHolding for HoldState {
    fn node_deleted(&self) {
        self.lose(LossCause::NodeDeleted);
    }

    fn watched_by_waiter(&self) {
        self.watching.store(true, Ordering::SeqCst);
    }

    fn node_event(&self, e: WatchedEvent) {
        on_own_node_event(&self.me, e);
    }

    fn is_over(&self) -> bool {
        self.status.load(Ordering::SeqCst) >= LOST
    }
}

/// Whether the holding is released, lost or gone: final states, in which an
/// own-node event changes nothing.
pub(super) fn is_over(st: &Weak<HoldState>) -> bool {
    st.upgrade().map_or(true, |st| st.status.load(Ordering::SeqCst) >= LOST)
}

/// Sets the exists-watch on our own node without waiting. The watcher and the
/// reply callback only signal (they run on the client's threads).
pub(crate) fn watch_own_node(st: &Arc<HoldState>) {
    if st.status.load(Ordering::SeqCst) >= LOST {
        return;
    }
    st.watching.store(true, Ordering::SeqCst);
    if st.client.recipe().session_generation() != st.generation {
        st.lose(LossCause::SessionExpired);
        return;
    }
    let (w1, w2) = (Arc::downgrade(st), Arc::downgrade(st));
    let watcher = OwnNodeWatcher(w1);
    let epoch = st.client.recipe().connection_epoch();
    let on_reply = move |r: zk_framework::Result<Option<Stat>>| {
        let Some(st) = w2.upgrade() else { return };
        match r {
            // There and ours: proven for the epoch it was sent in too.
            Ok(Some(stat)) if st.is_ours(&stat) => {
                st.proven.fetch_max(epoch, Ordering::SeqCst);
            }
            Ok(_) => st.lose(st.deletion_cause()),
            // Not registered (the connection broke first): the proof after
            // the reconnect sets it again.
            Err(_) => st.watching.store(false, Ordering::SeqCst),
        }
    };
    if let Err(e) = st.client.recipe().exists_w_detached(&st.node, watcher, on_reply) {
        log::debug!("could not watch own lock node {}: {e}", st.node);
        st.watching.store(false, Ordering::SeqCst);
    }
}

pub(super) fn on_own_node_event(weak: &Weak<HoldState>, e: WatchedEvent) {
    let Some(st) = weak.upgrade() else { return };
    // Released and lost are final: nothing to tell, no watch to set again.
    if st.status.load(Ordering::SeqCst) >= LOST {
        return;
    }
    match e.event_type {
        EventType::NodeDeleted => st.lose(st.deletion_cause()),
        EventType::NodeDataChanged | EventType::NodeCreated => {
            // The watch is used up (a revocation request writes data). Setting
            // it again sends a request, which a watcher must not do on the
            // client's event thread: the executor's thread does it.
            st.watching.store(false, Ordering::SeqCst);
            schedule_own_watch(&st);
        }
        _ => {}
    }
}
