//! The types of the watch API: the modes of a persistent watch
//! ([`AddWatchMode`]), the kinds a removal or a check means ([`WatcherType`]),
//! the multi-shot callback ([`PersistentWatcher`]) and a registration's id
//! ([`WatchId`]); and what the client learnt of the server's watcher types.
//! The registry (`watches.rs`) and the requests (`persistent.rs`) build on them.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use super::types::WatchedEvent;
#[cfg(doc)]
use super::types::Watcher;

/// The mode of an [`add_watch`](crate::Client::add_watch) registration
/// (`AddWatchMode` of ZooKeeper 3.6+; wire values 0 and 1).
///
/// # Examples
///
/// ```
/// use zk_framework::AddWatchMode;
/// assert_eq!(AddWatchMode::PersistentRecursive.code(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddWatchMode {
    /// The node itself: NodeCreated, NodeDataChanged, NodeDeleted and
    /// NodeChildrenChanged on its path. Wire value 0.
    Persistent,
    /// The node and every descendant: NodeCreated, NodeDataChanged and
    /// NodeDeleted with the changed node's path, never NodeChildrenChanged.
    /// Wire value 1.
    PersistentRecursive,
}

impl AddWatchMode {
    /// The wire value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::AddWatchMode::Persistent.code(), 0);
    /// ```
    pub fn code(self) -> i32 {
        match self {
            AddWatchMode::Persistent => zk_proto::add_watch_mode::PERSISTENT,
            AddWatchMode::PersistentRecursive => zk_proto::add_watch_mode::PERSISTENT_RECURSIVE,
        }
    }
}

/// Which watches [`Client::remove_all_watches`](crate::Client::remove_all_watches)
/// and [`Client::check_watches`](crate::Client::check_watches) mean
/// (`WatcherType`; wire values 1 to 5).
///
/// `Persistent` (4) and `PersistentRecursive` (5) are understood by servers
/// from 3.9.0 on; 3.6–3.8 answer them with MarshallingError, reported as
/// [`Error::ServerTooOld`](crate::Error::ServerTooOld). On 3.6–3.8, `Data`
/// and `Children` also match the data or child half of a persistent watch
/// on the server (ZOOKEEPER-4471), and `Any` removes every mode.
///
/// # Examples
///
/// ```
/// use zk_framework::WatcherType;
/// assert_eq!(WatcherType::Children.code(), 1);
/// assert_eq!(WatcherType::PersistentRecursive.code(), 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WatcherType {
    /// Child watches (getChildren). Wire value 1.
    Children,
    /// Data and exists watches. Wire value 2.
    Data,
    /// Every kind, persistent ones included. Wire value 3.
    Any,
    /// Persistent watches (ZooKeeper 3.9+ on the server). Wire value 4.
    Persistent,
    /// Persistent recursive watches (ZooKeeper 3.9+ on the server). Wire value 5.
    PersistentRecursive,
}

impl WatcherType {
    /// The wire value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::WatcherType::Any.code(), 3);
    /// ```
    pub fn code(self) -> i32 {
        match self {
            WatcherType::Children => 1,
            WatcherType::Data => 2,
            WatcherType::Any => 3,
            WatcherType::Persistent => 4,
            WatcherType::PersistentRecursive => 5,
        }
    }

    pub(super) fn is_persistent(self) -> bool {
        matches!(self, WatcherType::Persistent | WatcherType::PersistentRecursive)
    }
}

/// A multi-shot watch callback, for [`Client::add_watch`](crate::Client::add_watch).
///
/// Implemented for `Fn(WatchedEvent) + Send + Sync + 'static` closures and for
/// `crossbeam_channel::Sender<WatchedEvent>` (the event is sent with
/// `try_send`, so a full bounded channel drops it). It runs on the client's
/// event thread like a one-shot [`Watcher`], one event at a time, with no lock
/// held (it may call the client); a panic is caught and logged and does not
/// stop other watchers or later events. A watcher that only signals (see
/// [`PersistentWatcher::only_signals`]; a channel's `Sender` does) may run on
/// the I/O thread as soon as its notification is read, when nothing is queued
/// for the event thread ahead of it: its event is then in its channel before
/// the reply to any later request is handed to the caller, so whoever reads
/// after a notification sees the notification first.
///
/// # Examples
///
/// ```
/// use zk_framework::{PersistentWatcher, WatchedEvent};
/// fn takes(_: impl PersistentWatcher) {}
/// takes(|e: WatchedEvent| println!("{e:?}"));
/// let (tx, _rx) = crossbeam_channel::unbounded::<WatchedEvent>();
/// takes(tx);
/// ```
pub trait PersistentWatcher: Send + Sync + 'static {
    /// Handles one event (node events and session states).
    fn process(&self, event: WatchedEvent);

    /// Whether [`process`](PersistentWatcher::process) only signals (a
    /// `try_send`, an atomic store): it never blocks, never calls the client
    /// and runs no other code, so it may run on the client's I/O thread (see
    /// [`Watcher::only_signals`]). `false` unless overridden; `true` for a
    /// channel's `Sender`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{PersistentWatcher, WatchedEvent};
    /// let (tx, _rx) = crossbeam_channel::unbounded::<WatchedEvent>();
    /// assert!(PersistentWatcher::only_signals(&tx));
    /// let f = |_: WatchedEvent| {};
    /// assert!(!PersistentWatcher::only_signals(&f));
    /// ```
    fn only_signals(&self) -> bool {
        false
    }
}

impl<F: Fn(WatchedEvent) + Send + Sync + 'static> PersistentWatcher for F {
    fn process(&self, event: WatchedEvent) {
        self(event)
    }
}

impl PersistentWatcher for crossbeam_channel::Sender<WatchedEvent> {
    fn process(&self, event: WatchedEvent) {
        if let Err(e) = self.try_send(event) {
            log::debug!("persistent watch event not delivered to its channel: {e}");
        }
    }

    fn only_signals(&self) -> bool {
        true
    }
}

/// Identifies one registration made by
/// [`Client::add_watch`](crate::Client::add_watch) (unique in the process),
/// for [`Client::remove_watch`](crate::Client::remove_watch).
///
/// # Examples
///
/// ```no_run
/// # use zk_framework::{Client, ClientConfig, WatchedEvent, AddWatchMode};
/// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
/// let id = zk.add_watch("/a", AddWatchMode::Persistent, |_: WatchedEvent| {})?;
/// println!("{id:?}");
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WatchId(u64);

impl WatchId {
    #[cfg(test)]
    pub(crate) fn from_raw(n: u64) -> WatchId {
        WatchId(n)
    }

    pub(super) fn next() -> WatchId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        WatchId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What the client knows of the server's watcher types 4 and 5.
pub(super) const TYPES_UNKNOWN: u8 = 0;
/// The server answered them with MarshallingError (3.6–3.8).
pub(super) const TYPES_OLD: u8 = 1;

/// The server's knowledge of watcher types 4/5, as learnt (per client).
pub(super) struct ServerWatchTypes(pub(super) AtomicU8);

impl ServerWatchTypes {
    pub fn new() -> ServerWatchTypes {
        ServerWatchTypes(AtomicU8::new(TYPES_UNKNOWN))
    }
}
