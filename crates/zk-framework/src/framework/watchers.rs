//! Watchers that are given paths without the namespace: a one-shot watcher
//! shared by the watches of a retried call's attempts ([`WatchSlot`]), and a
//! persistent one ([`Unnamespaced`]).

use std::sync::Arc;

use parking_lot::Mutex;

use super::handle::CuratorFramework;
use crate::client::{PersistentWatcher, WatchedEvent, Watcher};
use crate::paths::unfix_for_namespace;

impl CuratorFramework {
    /// Wraps a one-shot watcher so that every retry attempt can register it; the
    /// first event delivered wins, and event paths lose the namespace.
    pub(crate) fn watch_slot(&self, watcher: impl Watcher) -> WatchSlot {
        WatchSlot {
            signals: watcher.only_signals(),
            slot: Arc::new(Mutex::new(Some(Box::new(watcher)))),
            namespace: self.inner.namespace.clone(),
        }
    }

    /// As [`watch_slot`](Self::watch_slot), for a watch on an absolute path
    /// that the namespace never applies to (`/zookeeper/config`): event
    /// paths are given as they come.
    pub(crate) fn watch_slot_absolute(&self, watcher: impl Watcher) -> WatchSlot {
        WatchSlot {
            signals: watcher.only_signals(),
            slot: Arc::new(Mutex::new(Some(Box::new(watcher)))),
            namespace: None,
        }
    }
}

/// The user's watcher behind the watches of a call's attempts (a retried call
/// sets one watch per attempt): the first to fire runs it.
pub(crate) struct WatchSlot {
    slot: Arc<Mutex<Option<Box<dyn Watcher>>>>,
    namespace: Option<String>,
    /// Whether the user's watcher only signals (so do the attempts').
    signals: bool,
}

impl WatchSlot {
    pub(crate) fn attempt(&self) -> impl Watcher {
        SlotAttempt {
            slot: self.slot.clone(),
            namespace: self.namespace.clone(),
            signals: self.signals,
        }
    }
}

/// One attempt's watcher: takes the user's watcher from the slot and runs it
/// with the path as the user knows it (namespace taken off).
struct SlotAttempt {
    slot: Arc<Mutex<Option<Box<dyn Watcher>>>>,
    namespace: Option<String>,
    signals: bool,
}

impl Watcher for SlotAttempt {
    fn process(self: Box<Self>, mut e: WatchedEvent) {
        let Some(w) = self.slot.lock().take() else { return };
        if let Some(p) = e.path.take() {
            e.path = Some(unfix_for_namespace(self.namespace.as_deref(), &p));
        }
        w.process(e)
    }

    fn only_signals(&self) -> bool {
        self.signals
    }
}

/// A persistent watcher that is given event paths without the namespace.
pub(super) struct Unnamespaced<W> {
    pub(super) inner: W,
    pub(super) namespace: Option<String>,
}

impl<W: PersistentWatcher> PersistentWatcher for Unnamespaced<W> {
    fn process(&self, mut e: WatchedEvent) {
        if let Some(p) = e.path.take() {
            e.path = Some(unfix_for_namespace(self.namespace.as_deref(), &p));
        }
        self.inner.process(e)
    }

    /// Taking the namespace off a path only signals too.
    fn only_signals(&self) -> bool {
        self.inner.only_signals()
    }
}
