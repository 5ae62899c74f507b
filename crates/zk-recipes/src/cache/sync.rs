//! The cache's thread: follows its [`PersistentWatcher`](crate::PersistentWatcher)'s events, reads
//! what they announce, reads the whole subtree again after each `Reset`,
//! and judges the freshness.
//!
//! Order. ZooKeeper sends a connection its notifications in zxid order, and
//! a notification before the answer to any read that shows its change. The
//! watcher numbers the events it tells, on the client's I/O thread, as the
//! connection brings them; a read's answer, taken on that thread too, is
//! placed among them by the number told when it came (its *position*). So
//! a read at position `J` shows exactly the changes announced at positions
//! up to `J`, and none after.
//!
//! The notes (announced changes) wait in a queue, in order. Each round reads
//! every path with a note no read has covered yet, then settles the queue
//! from its front: a note is settled by the first read of its path that
//! came after it; when that read also shows the path's next note, the note
//! is folded into that one (one event for changes no read saw apart),
//! otherwise the path's event (the difference between the view and the
//! read) is applied there. The walk stops at the first note no read has
//! covered. So every event takes the place of one note, events come in the
//! notes' (zxid) order, the view is always the server's subtree as of one
//! note (a path written without pause is told at the state an earlier
//! round read, never held back), and nothing a round limit leaves is
//! dropped: the queue is the one record of what is unread. The view is
//! `Current` only while the queue is empty and every event the watcher told
//! has been taken ([`Freshness::Updating`] otherwise).
//!
//! A re-synchronisation reads the subtree level by level into a view of its
//! own, settles on it the notes that came while it read (so that it is the
//! server's subtree as of one note), and replaces the view by it, telling
//! the difference ordered by zxid, then `Initialized`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::{CuratorFramework, EventType, SessionHealth};

use super::freshness::{judge, Link};
use super::options::Options;
use super::state::Shared;
use super::view::CacheEvent;
use super::view::{self, ChildData, View};
use crate::core::Backoff;
use crate::error::Error;
use crate::watch::event::WatcherEvent;

/// At most this many reads in flight at once.
const WINDOW: usize = 256;

/// Why a re-synchronisation or a round stopped.
enum Stop {
    /// Try again (after a pause if still connected).
    Retry(zk_framework::Error),
    /// The watcher told a suspension, a reset or its failure meanwhile: the
    /// main loop takes it from there (no pause).
    Interrupted,
    /// The cache cannot go on (too large, root unreadable).
    Fatal(Error),
}

impl From<zk_framework::Error> for Stop {
    fn from(e: zk_framework::Error) -> Stop {
        Stop::Retry(e)
    }
}

/// A read's answer: the node's stat and data (unless not loaded), `None`
/// when it does not exist, or the error.
type Answer = zk_framework::Result<Option<(zk_framework::Stat, Option<Vec<u8>>)>>;

/// One read of a path, not yet applied: what it found, and where its answer
/// came among the watcher's events (`lo..=hi`: one position when the
/// answer was taken on the client's I/O thread, as a rule; a range when it
/// had come before its callback was set, and was handed over on this
/// thread).
#[derive(Debug, Clone)]
struct Read {
    lo: u64,
    hi: u64,
    node: Option<ChildData>,
}

/// What is announced and not yet applied.
#[derive(Debug, Default)]
struct Pending {
    /// The notes, in the order told: (position, path).
    notes: VecDeque<(u64, String)>,
    /// Each noted path's positions, in order.
    by_path: HashMap<String, VecDeque<u64>>,
    /// Reads not yet applied, per path, in the order sent.
    reads: HashMap<String, VecDeque<Read>>,
}

impl Pending {
    fn clear(&mut self) {
        self.notes.clear();
        self.by_path.clear();
        self.reads.clear();
    }

    fn is_empty(&self) -> bool {
        self.notes.is_empty()
    }

    fn note(&mut self, pos: u64, path: String) {
        self.by_path.entry(path.clone()).or_default().push_back(pos);
        self.notes.push_back((pos, path));
    }

    /// The paths with a note that no read sent after it covers, in the
    /// order of their first note.
    fn to_read(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (_, p) in &self.notes {
            if !seen.insert(p.as_str()) {
                continue;
            }
            let last = self.by_path.get(p).and_then(|v| v.back()).copied().unwrap_or(0);
            let covered = self.reads.get(p).and_then(|v| v.back()).is_some_and(|r| r.lo >= last);
            if !covered {
                out.push(p.clone());
            }
        }
        out
    }

    /// The position of the first note not applied (`None`: all are).
    fn first(&self) -> Option<u64> {
        self.notes.front().map(|(n, _)| *n)
    }

    /// Settles the notes from the front (see the module doc) on `v`: the
    /// events, in order, and the newest zxid the applied nodes show.
    fn apply(&mut self, v: &mut View, opts: &Options) -> (Vec<CacheEvent>, i64) {
        let mut out = Vec::new();
        let mut newest = i64::MIN;
        while let Some((n, p)) = self.notes.front().cloned() {
            let next = self.by_path.get(&p).and_then(|v| v.get(1)).copied();
            let reads = self.reads.entry(p.clone()).or_default();
            // A read sent before the change was announced cannot show it.
            while reads.front().is_some_and(|r| r.lo < n) {
                reads.pop_front();
            }
            let Some(r) = reads.front() else { break };
            match next {
                // The read shows the next change too: one event, there.
                Some(m) if m <= r.lo => {}
                // It may show it or not (an answer placed by a range): of no
                // use; the path is read again.
                Some(m) if m <= r.hi => {
                    reads.pop_front();
                    continue;
                }
                _ => {
                    let r = reads.pop_front().expect("front checked");
                    if let Some(d) = &r.node {
                        newest = newest.max(d.stat().mzxid).max(d.stat().pzxid);
                    }
                    apply_one(v, &p, r.node, opts, &mut out);
                }
            }
            self.notes.pop_front();
            let left = self.by_path.get_mut(&p).map(|v| {
                v.pop_front();
                v.len()
            });
            if left == Some(0) {
                // No note of the path waits: a read left over was sent before
                // any later note can come, and can show none.
                self.by_path.remove(&p);
                self.reads.remove(&p);
            }
        }
        (out, newest)
    }
}

/// Applies what a read of `path` found to `v`: the events that take the view
/// from what it showed to that. A node gone takes the descendants the view
/// still shows with it (deepest first); a node the filter does not keep is
/// not shown, its descendants are left as they are.
fn apply_one(v: &mut View, path: &str, node: Option<ChildData>, opts: &Options, out: &mut Vec<CacheEvent>) {
    let node = match node {
        Some(d) if !opts.keeps(path) => {
            let _ = d;
            None
        }
        Some(d) => Some(d),
        None => {
            for d in view::descendants(v, path) {
                if let Some(old) = v.remove(d.as_str()) {
                    out.push(CacheEvent::Deleted(old));
                }
            }
            None
        }
    };
    let old = v.get(path).cloned();
    view::diff_node(old.as_ref(), node.as_ref(), out);
    match node {
        // The newer stat is kept even when nothing is told (child counts).
        Some(n) => view::put(v, n),
        None => {
            v.remove(path);
        }
    }
}

/// What the cache's thread takes from its watcher.
pub(crate) struct Feed {
    /// The watcher's events, numbered.
    pub events: Receiver<(u64, WatcherEvent)>,
    /// The number of the watcher's last event told.
    pub told: Arc<AtomicU64>,
}

struct Sync<'a> {
    client: &'a CuratorFramework,
    opts: &'a Options,
    shared: &'a Shared,
    feed: Feed,
    link: Link,
    /// The number of the last event taken from the feed.
    handled: u64,
    pending: Pending,
    /// The newest zxid the view's nodes show (for `Stale`).
    last_zxid: i64,
    /// Why the cache stops, once the watcher told its failure.
    failed: Option<Error>,
}

/// The cache's thread, until `cancel`, the client's close, or the end of
/// its watcher.
pub(crate) fn run(client: &CuratorFramework, opts: &Options, shared: &Shared, feed: Feed, cancel: &Receiver<()>) {
    let (health_tx, health) = crossbeam_channel::unbounded::<SessionHealth>();
    let _health = client.add_health_listener(move |h| {
        let _ = health_tx.try_send(h);
    });
    let closed = client.recipe().close_signal();
    let mut s = Sync {
        client,
        opts,
        shared,
        feed,
        link: Link {
            connected: false,
            answered: client.session_health() == SessionHealth::Confirmed,
            synced: false,
            applied: true,
        },
        handled: 0,
        pending: Pending::default(),
        last_zxid: 0,
        failed: None,
    };
    let mut backoff = Backoff::new();
    // When a failed re-synchronisation is tried again (`None`: at once).
    let mut retry_at: Option<Instant> = None;
    let ended = |r: &Receiver<()>| !matches!(r.try_recv(), Err(crossbeam_channel::TryRecvError::Empty));
    loop {
        // Asked here too: under writes that never pause, rounds follow one
        // another without a wait.
        if ended(cancel) || ended(&closed) {
            break;
        }
        let open = s.take_queued();
        if let Some(e) = s.failed.take() {
            s.stop(e);
            break;
        }
        if !open {
            break;
        }
        let result = if s.link.connected && !s.link.synced {
            if retry_at.is_some_and(|t| Instant::now() < t) {
                Ok(())
            } else {
                s.resync()
            }
        } else if s.link.synced && !s.pending.is_empty() {
            s.judge();
            match s.round() {
                Err(Stop::Retry(e)) => {
                    log::debug!("the cache of {} reads its subtree again: {e}", shared.root);
                    s.link.synced = false;
                    s.pending.clear();
                    Ok(())
                }
                r => r,
            }
        } else {
            Ok(())
        };
        match result {
            Ok(()) => {
                if s.link.synced {
                    backoff.reset();
                    retry_at = None;
                }
            }
            Err(Stop::Interrupted) => {
                retry_at = None;
                continue;
            }
            Err(Stop::Fatal(e)) => {
                s.stop(e);
                break;
            }
            Err(Stop::Retry(e)) => {
                let pause = backoff.next();
                log::debug!("the cache of {} will read again in {pause:?}: {e}", shared.root);
                retry_at = Some(Instant::now() + pause);
            }
        }
        s.judge();
        // More to do at once: unread notes, or a re-read due now.
        let resync_due = s.link.connected && !s.link.synced && retry_at.is_none();
        if (s.link.synced && !s.pending.is_empty()) || resync_due {
            continue;
        }
        let timer = retry_at.map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        crossbeam_channel::select! {
            recv(cancel) -> _ => break,
            recv(closed) -> _ => break,
            recv(s.feed.events) -> ev => match ev {
                Ok((n, ev)) => s.take(n, ev),
                Err(_) => break,
            },
            recv(health) -> h => {
                if let Ok(h) = h {
                    s.link.answered = h == SessionHealth::Confirmed;
                }
            }
            recv(timer) -> _ => retry_at = None,
        }
    }
}

impl Sync<'_> {
    /// Judges the freshness from the link and the queue, and publishes, with
    /// it, how far the view has taken the watcher's events.
    fn judge(&mut self) {
        if self.handled == 0 {
            // Nothing heard from the watcher yet: starting (the stored
            // `Resyncing`), not stale.
            return;
        }
        self.link.applied = self.pending.is_empty();
        let f = judge(
            self.shared.freshness_stored(),
            self.link,
            Instant::now(),
            self.last_zxid,
        );
        self.shared.settle(f, self.applied_through());
    }

    /// The number of the last watcher event whose change the view holds
    /// (every one before it too).
    fn applied_through(&self) -> u64 {
        self.pending.first().map_or(self.handled, |n| n - 1)
    }

    /// The cache stops for good: tells why.
    fn stop(&mut self, e: Error) {
        log::warn!("the cache of {} stops: {e}", self.shared.root);
        self.link.connected = false;
        self.judge();
        self.shared.fail(e);
    }

    /// Takes one event from the watcher: a note of a change while
    /// connected (a re-synchronisation clears what it covers), the link's
    /// state otherwise.
    fn take(&mut self, n: u64, ev: WatcherEvent) {
        self.handled = n;
        match ev {
            WatcherEvent::Node { event_type, path } => {
                if self.link.connected {
                    if let Some(p) = self.relevant(event_type, path) {
                        self.pending.note(n, p);
                    }
                }
            }
            WatcherEvent::Suspended => {
                self.link.connected = false;
                self.link.synced = false;
                self.pending.clear();
            }
            WatcherEvent::Reset { .. } => {
                self.link.connected = true;
                self.link.answered = self.client.session_health() == SessionHealth::Confirmed;
                self.link.synced = false;
                self.pending.clear();
            }
            WatcherEvent::Failed(e) => {
                self.link.connected = false;
                self.link.synced = false;
                self.pending.clear();
                self.failed = Some(e);
            }
        }
    }

    /// Takes every event queued now; `false` once the watcher's channel
    /// ended.
    fn take_queued(&mut self) -> bool {
        loop {
            match self.feed.events.try_recv() {
                Ok((n, ev)) => self.take(n, ev),
                Err(crossbeam_channel::TryRecvError::Empty) => return true,
                Err(crossbeam_channel::TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// As [`Sync::take_queued`] in the middle of a round or a
    /// re-synchronisation: a suspension, a reset or the watcher's end among
    /// the events interrupts it.
    fn take_queued_in(&mut self) -> Result<(), Stop> {
        loop {
            match self.feed.events.try_recv() {
                Ok((n, ev)) => {
                    let note = matches!(ev, WatcherEvent::Node { .. });
                    self.take(n, ev);
                    if !note {
                        return Err(Stop::Interrupted);
                    }
                }
                Err(crossbeam_channel::TryRecvError::Empty) => return Ok(()),
                Err(crossbeam_channel::TryRecvError::Disconnected) => return Err(Stop::Interrupted),
            }
        }
    }

    /// The path a node event is about, when the cache follows it.
    fn relevant(&self, event_type: EventType, path: String) -> Option<String> {
        match event_type {
            EventType::NodeCreated | EventType::NodeDeleted | EventType::NodeDataChanged => {}
            _ => return None,
        }
        self.opts.follows(&self.shared.root, &path).then_some(path)
    }

    /// The bound of one read: the read timeout, at least a second.
    fn bounded(&self) -> CuratorFramework {
        let read = self
            .client
            .negotiated_session_timeout()
            .map_or(self.client.connection_timeout(), |t| t * 2 / 3)
            .max(Duration::from_secs(1));
        self.client.with_deadline(Some(Instant::now() + read))
    }

    /// Sends one request per path without waiting (`send(client, path,
    /// reply)`), at most [`WINDOW`] in flight at once, and gives the answers
    /// in the paths' order, each with its position among the watcher's
    /// events (`lo..=hi`, see [`Read`]).
    #[allow(clippy::type_complexity)]
    fn pipelined<R: Send + 'static>(
        &self,
        paths: &[String],
        send: impl Fn(&CuratorFramework, &str, Box<dyn FnOnce(R) + Send>) -> zk_framework::Result<()>,
    ) -> Result<Vec<(R, u64, u64)>, Stop> {
        let me = std::thread::current().id();
        let mut out = Vec::with_capacity(paths.len());
        for chunk in paths.chunks(WINDOW) {
            let client = self.bounded();
            let deadline = client.deadline();
            let (tx, rx) = crossbeam_channel::unbounded();
            let mut lows = Vec::with_capacity(chunk.len());
            for (i, p) in chunk.iter().enumerate() {
                let tx = tx.clone();
                let told = self.feed.told.clone();
                // Every event told by now came before the answer.
                lows.push(told.load(Ordering::Acquire));
                self.shared.read_sent();
                send(
                    &client,
                    p,
                    Box::new(move |r| {
                        // On the client's I/O thread, as a rule: the events
                        // told by now are exactly those its connection
                        // brought before this answer. On this thread (the
                        // answer came before the callback was set): somewhere
                        // between the send and now.
                        let at = told.load(Ordering::Acquire);
                        let exact = std::thread::current().id() != me;
                        let _ = tx.send((i, r, at, exact));
                    }),
                )?;
            }
            drop(tx);
            let mut got: Vec<Option<(R, u64, u64)>> = (0..chunk.len()).map(|_| None).collect();
            for _ in 0..chunk.len() {
                let (i, r, at, exact) = match deadline {
                    Some(d) => rx.recv_deadline(d).map_err(|_| zk_framework::Error::DeadlineExceeded)?,
                    None => rx.recv().map_err(|_| zk_framework::Error::ConnectionLoss)?,
                };
                let lo = if exact { at } else { lows[i] };
                got[i] = Some((r, lo, at));
            }
            // Every slot was answered (one reply per request sent).
            out.extend(got.into_iter().flatten());
        }
        Ok(out)
    }

    /// Reads `paths`, pipelined: each path's node (`None` when it does not
    /// exist or may not be read, below the root) and position.
    fn read_many(&self, paths: &[String]) -> Result<Vec<Read>, Stop> {
        let load_data = self.opts.load_data;
        let answers = self.pipelined(paths, |c, p, reply: Box<dyn FnOnce(Answer) + Send>| {
            if load_data {
                c.recipe()
                    .get_data_detached(p, move |r| reply(r.map(|o| o.map(|(d, st)| (st, Some(d))))))
            } else {
                c.recipe()
                    .exists_detached(p, move |r| reply(r.map(|o| o.map(|st| (st, None)))))
            }
        })?;
        paths
            .iter()
            .zip(answers)
            .map(|(p, (a, lo, hi))| {
                Ok(Read {
                    lo,
                    hi,
                    node: self.node(p, a)?,
                })
            })
            .collect()
    }

    /// One read's answer as a node (see [`Sync::read_many`]).
    fn node(&self, path: &str, got: Answer) -> Result<Option<ChildData>, Stop> {
        match got {
            Ok(Some((stat, data))) => {
                let data = match data {
                    Some(d) if self.opts.compressed && !d.is_empty() => Some(gunzip(path, d)),
                    d => d,
                };
                Ok(Some(ChildData::new(path, stat, data)))
            }
            Ok(None) => Ok(None),
            Err(zk_framework::Error::NoAuth { .. }) if path != self.shared.root => {
                log::warn!("the cache of {} may not read {path}; it is left out", self.shared.root);
                Ok(None)
            }
            Err(e @ zk_framework::Error::NoAuth { .. }) => Err(Stop::Fatal(Error::ZooKeeper(e))),
            Err(e) => Err(Stop::Retry(e)),
        }
    }

    /// Lists each of `paths`, pipelined: its children (none when it is gone
    /// or may not be listed, below the root).
    fn list_many(&self, paths: &[String]) -> Result<Vec<Vec<String>>, Stop> {
        let answers = self.pipelined(paths, |c, p, reply| c.recipe().get_children_detached(p, reply))?;
        paths
            .iter()
            .zip(answers)
            .map(|(p, (a, _, _))| match a {
                Ok(c) => Ok(c.unwrap_or_default()),
                Err(zk_framework::Error::NoAuth { .. }) if *p != self.shared.root => Ok(Vec::new()),
                Err(e) => Err(e.into()),
            })
            .collect()
    }

    /// Reads every path with an unread note, then takes the events told
    /// meanwhile: every event told before the last answer is queued by
    /// then, and is taken before anything is settled, so that no read is
    /// applied at a note when it shows a later one.
    fn read_pending(&mut self) -> Result<(), Stop> {
        let paths = self.pending.to_read();
        if !paths.is_empty() {
            let reads = self.read_many(&paths)?;
            for (p, r) in paths.into_iter().zip(reads) {
                self.pending.reads.entry(p).or_default().push_back(r);
            }
        }
        self.take_queued_in()
    }

    /// One live round: reads, then settles on the view, the events told
    /// under the lock that orders them.
    fn round(&mut self) -> Result<(), Stop> {
        self.read_pending()?;
        let max = self.opts.max_nodes;
        let opts = self.opts;
        let pending = &mut self.pending;
        let (mut too_large, mut newest) = (false, i64::MIN);
        self.shared.change(|v| {
            let (evs, n) = pending.apply(v, opts);
            newest = n;
            too_large = v.len() > max;
            evs
        });
        self.last_zxid = self.last_zxid.max(newest);
        if too_large {
            return Err(Stop::Fatal(self.too_large()));
        }
        Ok(())
    }

    fn too_large(&self) -> Error {
        Error::CacheTooLarge {
            path: self.shared.root.clone(),
            limit: self.opts.max_nodes,
        }
    }

    /// Reads the whole subtree again into a view of its own, settles on it
    /// the notes told while it read, then replaces the view by it, telling
    /// the difference, `Initialized` and the freshness under one lock.
    fn resync(&mut self) -> Result<(), Stop> {
        // Every change announced so far is covered by the reads sent from
        // now on.
        self.pending.clear();
        self.judge();
        let root = self.shared.root.clone();
        // Level by level, each level's reads pipelined; a node is listed
        // only when its stat says it has children.
        let mut fresh = View::new();
        let mut level = vec![root.clone()];
        while !level.is_empty() {
            let nodes = self.read_many(&level)?;
            let mut parents = Vec::new();
            for (p, r) in level.iter().zip(nodes) {
                let Some(node) = r.node else { continue };
                if self.opts.lists(&root, p) && node.stat().num_children > 0 {
                    parents.push(p.clone());
                }
                if self.opts.keeps(p) {
                    view::put(&mut fresh, node);
                    if fresh.len() > self.opts.max_nodes {
                        return Err(Stop::Fatal(self.too_large()));
                    }
                }
            }
            let mut next = Vec::new();
            for (p, mut children) in parents.iter().zip(self.list_many(&parents)?) {
                children.sort();
                next.extend(
                    children
                        .into_iter()
                        .map(|c| if p == "/" { format!("/{c}") } else { format!("{p}/{c}") }),
                );
            }
            level = next;
            // A suspension or a reset meanwhile: start over.
            self.take_queued_in()?;
        }
        // Each node was read at its own moment: the notes told up to the
        // last answer, settled on the new view, make it the server's
        // subtree as of one note.
        let end = self.feed.told.load(Ordering::Acquire);
        while self.pending.first().is_some_and(|n| n <= end) {
            self.read_pending()?;
            let (_, _) = self.pending.apply(&mut fresh, self.opts);
        }
        if fresh.len() > self.opts.max_nodes {
            return Err(Stop::Fatal(self.too_large()));
        }
        let newest = fresh
            .values()
            .map(|d| d.stat().mzxid.max(d.stat().pzxid))
            .max()
            .unwrap_or(i64::MIN);
        self.last_zxid = self.last_zxid.max(newest);
        self.link.synced = true;
        self.link.applied = self.pending.is_empty();
        let f = judge(
            self.shared.freshness_stored(),
            self.link,
            Instant::now(),
            self.last_zxid,
        );
        self.shared.resynced(fresh, f, self.applied_through());
        Ok(())
    }
}

/// Inflates gzip data (Curator's `GzipCompressionProvider`); data that is
/// not gzip is kept as read, with a warning.
fn gunzip(path: &str, data: Vec<u8>) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    match flate2::read::GzDecoder::new(&data[..]).read_to_end(&mut out) {
        Ok(_) => out,
        Err(e) => {
            log::warn!("the data of {path} is not gzip ({e}); kept as read");
            data
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            max_depth: None,
            load_data: true,
            compressed: false,
            clear_on_close: true,
            max_nodes: 100,
            filter: None,
        }
    }

    fn node(path: &str, czxid: i64, mzxid: i64, version: i32) -> ChildData {
        ChildData::new(
            path,
            zk_framework::Stat {
                czxid,
                mzxid,
                pzxid: czxid,
                version,
                ..Default::default()
            },
            Some(format!("v{version}").into_bytes()),
        )
    }

    fn read(lo: u64, hi: u64, node: Option<ChildData>) -> Read {
        Read { lo, hi, node }
    }

    fn add(p: &mut Pending, path: &str, r: Read) {
        p.reads.entry(path.to_string()).or_default().push_back(r);
    }

    /// `+p`, `~p`, `-p`.
    fn short(evs: &[CacheEvent]) -> Vec<String> {
        evs.iter()
            .map(|e| match e {
                CacheEvent::Created(d) => format!("+{}", d.path()),
                CacheEvent::Changed { new, .. } => format!("~{}", new.path()),
                CacheEvent::Deleted(d) => format!("-{}", d.path()),
                other => format!("{other:?}"),
            })
            .collect()
    }

    fn paths(v: &View) -> Vec<String> {
        v.keys().map(|k| k.to_string()).collect()
    }

    /// Created (1), deleted (2), changed (3): the read of /r/a, answered
    /// after note 3, shows both of its changes: one event, in the place of
    /// its last note.
    #[test]
    fn each_path_is_told_in_the_place_of_the_last_note_its_read_shows() {
        let mut v: View = View::new();
        view::put(&mut v, node("/r/b", 3, 3, 0));
        let mut p = Pending::default();
        p.note(1, "/r/a".into());
        p.note(2, "/r/b".into());
        p.note(3, "/r/a".into());
        assert_eq!(p.to_read(), ["/r/a", "/r/b"]);
        add(&mut p, "/r/a", read(3, 3, Some(node("/r/a", 5, 7, 1))));
        add(&mut p, "/r/b", read(3, 3, None));
        assert!(p.to_read().is_empty());
        let (evs, newest) = p.apply(&mut v, &opts());
        assert_eq!(short(&evs), ["-/r/b", "+/r/a"]);
        assert_eq!(newest, 7);
        assert!(p.is_empty());
        assert_eq!(paths(&v), ["/r/a"]);
        assert_eq!(v.get("/r/a").unwrap().data(), Some(&b"v1"[..]));
    }

    /// A path written without pause (/h) is told at the state an earlier
    /// round read, in its place; the notes after it wait for their reads,
    /// nothing is dropped, and every note before the first unread one is
    /// applied.
    #[test]
    fn a_hot_path_is_told_at_an_earlier_read_and_nothing_is_dropped() {
        let mut v: View = View::new();
        view::put(&mut v, node("/h", 1, 1, 0));
        view::put(&mut v, node("/c", 1, 1, 0));
        let mut p = Pending::default();
        // Round 1: /h changed (note 1); its read is answered after notes 2
        // (/c) and 3 (/h) came.
        p.note(1, "/h".into());
        assert_eq!(p.to_read(), ["/h"]);
        add(&mut p, "/h", read(3, 3, Some(node("/h", 1, 30, 3))));
        p.note(2, "/c".into());
        p.note(3, "/h".into());
        let (evs, _) = p.apply(&mut v, &opts());
        assert!(evs.is_empty(), "/c (note 2) is unread: nothing after it is told");
        assert_eq!(p.first(), Some(2));
        // Round 2: /c is read; /h's read covers its notes so far. Answered
        // after notes 4 and 5 (/h again).
        assert_eq!(p.to_read(), ["/c"]);
        add(&mut p, "/c", read(5, 5, Some(node("/c", 1, 20, 1))));
        p.note(4, "/h".into());
        p.note(5, "/h".into());
        let (evs, _) = p.apply(&mut v, &opts());
        assert_eq!(short(&evs), ["~/c", "~/h"]);
        assert_eq!(v.get("/h").unwrap().stat().mzxid, 30, "told at round 1's read");
        assert_eq!(p.first(), Some(4));
        assert_eq!(p.to_read(), ["/h"]);
        // Round 3: /h read after its last note: told there.
        add(&mut p, "/h", read(5, 6, Some(node("/h", 1, 50, 5))));
        let (evs, newest) = p.apply(&mut v, &opts());
        assert_eq!(short(&evs), ["~/h"]);
        assert_eq!(newest, 50);
        assert!(p.is_empty());
    }

    /// An answer placed by a range (it came before its callback was set)
    /// that may or may not show the path's next note is not used; nor is a
    /// read sent before the note it would settle.
    #[test]
    fn a_read_that_may_show_a_later_note_or_came_before_its_note_is_read_again() {
        let mut v: View = View::new();
        let mut p = Pending::default();
        p.note(4, "/a".into());
        add(&mut p, "/a", read(2, 3, Some(node("/a", 1, 1, 0))));
        p.note(5, "/a".into());
        assert_eq!(p.to_read(), ["/a"]);
        add(&mut p, "/a", read(4, 6, Some(node("/a", 1, 9, 1))));
        let (evs, _) = p.apply(&mut v, &opts());
        assert!(evs.is_empty());
        assert_eq!(p.first(), Some(4));
        assert_eq!(p.to_read(), ["/a"], "read again");
        add(&mut p, "/a", read(6, 6, Some(node("/a", 1, 9, 1))));
        let (evs, _) = p.apply(&mut v, &opts());
        assert_eq!(short(&evs), ["+/a"]);
        assert!(p.is_empty());
        assert!(p.reads.is_empty());
        // A read left over when the path's last note is applied goes with it.
        p.note(7, "/b".into());
        add(&mut p, "/b", read(7, 7, None));
        add(&mut p, "/b", read(8, 8, None));
        let _ = p.apply(&mut v, &opts());
        assert!(p.is_empty() && p.reads.is_empty() && p.by_path.is_empty());
    }

    /// A node gone takes the descendants the view shows with it, deepest
    /// first; a node the filter leaves out is not shown, and its
    /// descendants stay.
    #[test]
    fn a_deleted_node_takes_its_descendants_and_a_filtered_one_does_not() {
        let mut v: View = View::new();
        for n in [
            node("/r/a", 2, 2, 0),
            node("/r/a/x", 3, 3, 0),
            node("/r/a/x/y", 4, 4, 0),
            node("/r/t/k", 6, 6, 0),
        ] {
            view::put(&mut v, n);
        }
        let mut o = opts();
        o.filter = Some(Arc::new(|p: &str| !p.ends_with("/t")));
        let mut p = Pending::default();
        p.note(1, "/r/a".into());
        p.note(2, "/r/t".into());
        add(&mut p, "/r/a", read(2, 2, None));
        add(&mut p, "/r/t", read(2, 2, Some(node("/r/t", 5, 7, 1))));
        let (evs, _) = p.apply(&mut v, &o);
        assert_eq!(short(&evs), ["-/r/a/x/y", "-/r/a/x", "-/r/a"]);
        assert_eq!(paths(&v), ["/r/t/k"]);
    }

    #[test]
    fn gunzip_inflates_gzip_and_keeps_anything_else() {
        use std::io::Write;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(b"hello, cache").unwrap();
        let zipped = z.finish().unwrap();
        assert_eq!(&zipped[..3], &[0x1f, 0x8b, 0x08]);
        assert_eq!(super::gunzip("/a", zipped), b"hello, cache");
        assert_eq!(super::gunzip("/a", b"plain".to_vec()), b"plain");
    }
}
