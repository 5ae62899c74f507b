//! The state a cache's handle and its thread share ([`Shared`]): the view,
//! what it has told ([`CacheStats`]) and to whom (its outlets).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};

use super::metrics;
use super::view::{self, CacheEvent, View};
use crate::core::{Subscribers, Worker};
use crate::error::Error;
use crate::freshness::Freshness;

/// What a cache has told and done so far.
///
/// # Examples
///
/// ```
/// let s = zk_recipes::CacheStats::default();
/// assert_eq!(s.events, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Node events told (created, changed, deleted).
    pub events: u64,
    /// Whole-subtree reads completed (the first load included).
    pub resyncs: u64,
    /// Reads sent to the server.
    pub reads: u64,
    /// Nodes the view holds now.
    pub entries: usize,
    /// Time spent not current (stale, re-synchronising or updating), ended
    /// spells and the current one.
    pub time_not_current: Duration,
}

/// A subscriber that maps the events (a bridge's channel): tells it an
/// event (sending, never blocking), `false` once it is gone.
pub(crate) type Sink = Box<dyn FnMut(&CacheEvent) -> bool + Send>;

/// A listener of the deprecated [`CuratorCache::listen`]: its channel and
/// the thread that calls it.
pub(crate) struct Listener {
    pub(crate) id: u64,
    pub(crate) tx: Sender<CacheEvent>,
    /// Ends when `tx` goes (after the events queued for it).
    pub(crate) _thread: Worker,
}

/// Where a cache's events go, and what its waiters wait on: behind the lock
/// that orders the events.
pub(crate) struct Outlets {
    pub(crate) channels: Subscribers<CacheEvent>,
    pub(crate) sinks: Vec<Sink>,
    pub(crate) listeners: Vec<Listener>,
    /// The freshness the cache's thread judged last.
    pub(crate) freshness: Freshness,
    /// The number of the last watcher event whose change the view holds
    /// (every one before it too).
    pub(crate) applied: u64,
    /// Since when the view has not been current (`None` while it is).
    pub(crate) not_current_since: Option<Instant>,
    pub(crate) not_current_total: Duration,
    pub(crate) initialized: u64,
    pub(crate) failed: Option<Error>,
    pub(crate) closed: bool,
}

/// What the cache's thread and its users share.
pub(crate) struct Shared {
    pub(crate) root: String,
    pub(crate) view: RwLock<View>,
    pub(crate) out: Mutex<Outlets>,
    pub(crate) changed: Condvar,
    /// The number of the watcher's last event told (see
    /// [`PersistentWatcher`]): beyond `applied`, a change is announced and
    /// not yet applied.
    pub(crate) told: Arc<AtomicU64>,
    pub(crate) events: AtomicU64,
    pub(crate) resyncs: AtomicU64,
    pub(crate) reads: AtomicU64,
    pub(crate) next_listener: AtomicU64,
    pub(crate) metrics: metrics::Handles,
}

impl Shared {
    pub(crate) fn new(root: String, told: Arc<AtomicU64>) -> Shared {
        Shared {
            metrics: metrics::Handles::new(&root),
            root,
            view: RwLock::new(View::new()),
            out: Mutex::new(Outlets {
                channels: Subscribers::new(),
                sinks: Vec::new(),
                listeners: Vec::new(),
                freshness: Freshness::Resyncing,
                applied: 0,
                not_current_since: Some(Instant::now()),
                not_current_total: Duration::ZERO,
                initialized: 0,
                failed: None,
                closed: false,
            }),
            changed: Condvar::new(),
            told,
            events: AtomicU64::new(0),
            resyncs: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            next_listener: AtomicU64::new(0),
        }
    }

    /// The freshness as asked now: the thread's judgement, and `Updating`
    /// while the watcher has told an event the view has not taken (the
    /// thread says so itself a moment later).
    pub(crate) fn freshness_of(&self, out: &Outlets) -> Freshness {
        if out.freshness.is_current() && self.told.load(Ordering::Acquire) > out.applied {
            Freshness::Updating
        } else {
            out.freshness
        }
    }

    /// Changes the view by `f` and tells the events it returns, in order,
    /// under one lock: a reader of the view never sees it ahead of or
    /// behind the events told.
    pub(crate) fn change(&self, f: impl FnOnce(&mut View) -> Vec<CacheEvent>) {
        let mut out = self.out.lock();
        if out.closed {
            return;
        }
        let mut view = self.view.write();
        let evs = f(&mut view);
        self.metrics.entries(view.len());
        drop(view);
        self.tell_all(&mut out, evs);
    }

    pub(crate) fn tell_all(&self, out: &mut Outlets, evs: Vec<CacheEvent>) {
        self.events.fetch_add(evs.len() as u64, Ordering::Relaxed);
        for ev in evs {
            self.metrics.event(&ev);
            Self::tell(out, ev);
        }
    }

    /// A whole-subtree read is done: under one lock, the view becomes
    /// `fresh`, the difference is told (ordered by zxid), then
    /// `Initialized`, then the freshness `f` with how far the view has taken
    /// the watcher's events. So `Resyncing` lasts until `Initialized`, and
    /// whoever hears `Initialized` finds the view current when it is.
    pub(crate) fn resynced(&self, fresh: View, f: Freshness, applied: u64) {
        let mut out = self.out.lock();
        if out.closed {
            return;
        }
        let mut view = self.view.write();
        let evs = view::resync(&mut view, fresh);
        self.metrics.entries(view.len());
        drop(view);
        self.tell_all(&mut out, evs);
        self.resyncs.fetch_add(1, Ordering::Relaxed);
        self.metrics.resynced();
        out.initialized += 1;
        Self::tell(&mut out, CacheEvent::Initialized);
        self.set_freshness(&mut out, f, applied);
    }

    /// The thread's judgement: the freshness `f` (told when it changed) and
    /// how far the view has taken the watcher's events.
    pub(crate) fn settle(&self, f: Freshness, applied: u64) {
        let mut out = self.out.lock();
        if out.closed {
            return;
        }
        self.set_freshness(&mut out, f, applied);
    }

    pub(crate) fn set_freshness(&self, out: &mut MutexGuard<'_, Outlets>, f: Freshness, applied: u64) {
        let moved = out.applied != applied;
        out.applied = applied;
        if out.freshness != f {
            out.freshness = f;
            let now = Instant::now();
            self.metrics.current(f.is_current());
            match (f.is_current(), out.not_current_since) {
                (true, Some(since)) => {
                    out.not_current_total += now - since;
                    out.not_current_since = None;
                    self.metrics.spell_ended(now - since);
                }
                (false, None) => out.not_current_since = Some(now),
                _ => {}
            }
            Self::tell(out, CacheEvent::Freshness(f));
        } else if !moved {
            return;
        }
        self.changed.notify_all();
    }

    /// One read sent.
    pub(crate) fn read_sent(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.metrics.read();
    }

    /// The freshness the thread judged last (what it judges from).
    pub(crate) fn freshness_stored(&self) -> Freshness {
        self.out.lock().freshness
    }

    pub(crate) fn freshness(&self) -> Freshness {
        let out = self.out.lock();
        self.freshness_of(&out)
    }

    /// The cache stopped for good: tells why.
    pub(crate) fn fail(&self, e: Error) {
        let mut out = self.out.lock();
        if out.failed.is_some() || out.closed {
            return;
        }
        out.failed = Some(e.clone());
        Self::tell(&mut out, CacheEvent::Failed(e));
        self.changed.notify_all();
    }

    pub(crate) fn tell(out: &mut Outlets, ev: CacheEvent) {
        out.channels.tell(&ev);
        out.sinks.retain_mut(|s| s(&ev));
        out.listeners.retain(|l| l.tx.send(ev.clone()).is_ok());
    }
}
