//! The cache's thread: keeps the watch, reads what it announces, reads the
//! whole subtree again when the connection comes back, and judges the
//! freshness.
//!
//! Order. ZooKeeper sends a connection its notifications in zxid order, and
//! a notification before the answer to any read that shows its change. So
//! once a read's answer is in, every notification of a change that read can
//! show has arrived: the thread takes the notifications queued, reads their
//! paths, takes those that came meanwhile and reads again, until a round
//! brings none; then every path's final state is known, and its event takes
//! the place of its last notification ([`view::apply_batch`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use zk_framework::{AddWatchMode, WatchId};
use zk_framework::{ConnectionState, CuratorFramework, EventType, SessionHealth, WatchedEvent};

use super::freshness::{judge, Link};
use super::view::{self, ChildData, View};
use super::{Options, Shared};
use crate::Error;

/// The first and the longest pause before a failed re-synchronisation is
/// tried again (while connected).
const RETRY_PAUSE: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(2));

/// At most this many reads in flight at once.
const WINDOW: usize = 256;

/// At most this many rounds of reads make one batch (a subtree written
/// faster than it can be read still gets its events out).
const MAX_ROUNDS: usize = 64;

/// Why a re-synchronisation or a batch stopped.
enum Stop {
    /// Try again (after a pause if still connected).
    Retry(zk_framework::Error),
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

/// A batch: the notes in order, and each noted path's final state.
type Batch = (Vec<String>, HashMap<String, Option<ChildData>>);

struct Sync<'a> {
    client: &'a CuratorFramework,
    opts: &'a Options,
    shared: &'a Shared,
    notes: Receiver<WatchedEvent>,
    note_tx: Sender<WatchedEvent>,
    /// The watch and the session generation it was added in.
    watch: Option<(WatchId, u64)>,
    link: Link,
    last_zxid: i64,
}

/// The cache's thread, until `cancel` or the client's close.
pub(crate) fn run(client: &CuratorFramework, opts: &Options, shared: &Shared, cancel: &Receiver<()>) {
    let (note_tx, notes) = crossbeam_channel::unbounded::<WatchedEvent>();
    let states = client.state_receiver();
    let (health_tx, health) = crossbeam_channel::unbounded::<SessionHealth>();
    let _health = client.add_health_listener(move |h| {
        let _ = health_tx.try_send(h);
    });
    let closed = client.close_signal();
    let mut s = Sync {
        client,
        opts,
        shared,
        notes,
        note_tx,
        watch: None,
        link: Link {
            connected: client.is_connected(),
            answered: client.session_health() == SessionHealth::Confirmed,
            synced: false,
        },
        last_zxid: 0,
    };
    let mut pause = RETRY_PAUSE.0;
    let never = crossbeam_channel::never::<Instant>();
    loop {
        s.judge();
        let mut retry = never.clone();
        if !s.link.synced && s.link.connected {
            match s.resync() {
                Ok(()) => {
                    pause = RETRY_PAUSE.0;
                    continue;
                }
                Err(Stop::Fatal(e)) => {
                    log::warn!("the cache of {} stops: {e}", shared.root);
                    s.judge();
                    shared.fail(e);
                    break;
                }
                Err(Stop::Retry(e)) => {
                    log::debug!("the cache of {} will read again in {pause:?}: {e}", shared.root);
                    retry = crossbeam_channel::after(pause);
                    pause = (pause * 2).min(RETRY_PAUSE.1);
                }
            }
        }
        crossbeam_channel::select! {
            recv(cancel) -> _ => break,
            recv(closed) -> _ => break,
            recv(states) -> st => match st {
                Ok(st) => s.state(st),
                Err(_) => break,
            },
            recv(health) -> h => {
                if let Ok(h) = h {
                    s.link.answered = h == SessionHealth::Confirmed;
                }
            }
            recv(s.notes) -> n => {
                if let Ok(n) = n {
                    if s.link.synced {
                        if let Err(e) = s.live(n) {
                            log::debug!("the cache of {} re-reads: {}", shared.root, match e {
                                Stop::Retry(e) => e.to_string(),
                                Stop::Fatal(e) => e.to_string(),
                            });
                            s.link.synced = false;
                        }
                    }
                }
            }
            recv(retry) -> _ => {}
        }
    }
    s.judge();
    if let Some((id, _)) = s.watch.take() {
        let bounded = client.with_deadline(Some(Instant::now() + Duration::from_secs(1)));
        if let Err(e) = bounded.remove_watch(id) {
            log::debug!("the cache of {} could not remove its watch: {e}", shared.root);
        }
    }
}

impl Sync<'_> {
    /// Judges the freshness from the link.
    fn judge(&self) {
        let f = judge(self.shared.freshness(), self.link, Instant::now(), self.last_zxid);
        self.shared.set_freshness(f);
    }

    fn state(&mut self, st: ConnectionState) {
        match st {
            ConnectionState::Suspended | ConnectionState::Lost => {
                self.link.connected = false;
                self.link.synced = false;
            }
            ConnectionState::Connected | ConnectionState::Reconnected | ConnectionState::ReadOnly => {
                self.link.connected = true;
                self.link.answered = self.client.session_health() == SessionHealth::Confirmed;
            }
        }
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
    /// in the paths' order (the server answers a connection's requests in
    /// the order sent, each after every notification it sent before it).
    #[allow(clippy::type_complexity)]
    fn pipelined<R: Send + 'static>(
        &self,
        paths: &[String],
        send: impl Fn(&CuratorFramework, &str, Box<dyn FnOnce(R) + Send>) -> zk_framework::Result<()>,
    ) -> Result<Vec<R>, Stop> {
        let mut out = Vec::with_capacity(paths.len());
        for chunk in paths.chunks(WINDOW) {
            let client = self.bounded();
            let deadline = client.deadline();
            let (tx, rx) = crossbeam_channel::unbounded();
            for (i, p) in chunk.iter().enumerate() {
                let tx = tx.clone();
                self.shared.read_sent();
                send(
                    &client,
                    p,
                    Box::new(move |r| {
                        let _ = tx.send((i, r));
                    }),
                )?;
            }
            drop(tx);
            let mut got: Vec<Option<R>> = (0..chunk.len()).map(|_| None).collect();
            for _ in 0..chunk.len() {
                let (i, r) = match deadline {
                    Some(d) => rx.recv_deadline(d).map_err(|_| zk_framework::Error::DeadlineExceeded)?,
                    None => rx.recv().map_err(|_| zk_framework::Error::ConnectionLoss)?,
                };
                got[i] = Some(r);
            }
            // Every slot was answered (one reply per request sent).
            out.extend(got.into_iter().flatten());
        }
        Ok(out)
    }

    /// Reads `paths`, pipelined: each path's node, `None` when it does not
    /// exist or may not be read (below the root).
    fn read_many(&self, paths: &[String]) -> Result<Vec<Option<ChildData>>, Stop> {
        let load_data = self.opts.load_data;
        let answers: Vec<Answer> = self.pipelined(paths, |c, p, reply| {
            if load_data {
                c.get_data_detached(p, move |r| reply(r.map(|o| o.map(|(d, st)| (st, Some(d))))))
            } else {
                c.exists_detached(p, move |r| reply(r.map(|o| o.map(|st| (st, None)))))
            }
        })?;
        paths.iter().zip(answers).map(|(p, a)| self.node(p, a)).collect()
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
        let answers = self.pipelined(paths, |c, p, reply| c.get_children_detached(p, reply))?;
        paths
            .iter()
            .zip(answers)
            .map(|(p, a)| match a {
                Ok(c) => Ok(c.unwrap_or_default()),
                Err(zk_framework::Error::NoAuth { .. }) if *p != self.shared.root => Ok(Vec::new()),
                Err(e) => Err(e.into()),
            })
            .collect()
    }

    /// The path a notification is about, when the cache follows it.
    fn relevant(&self, ev: &WatchedEvent) -> Option<String> {
        match ev.event_type {
            EventType::NodeCreated | EventType::NodeDeleted | EventType::NodeDataChanged => {}
            _ => return None,
        }
        let p = ev.path.as_deref()?;
        self.opts.follows(&self.shared.root, p).then(|| p.to_string())
    }

    /// The paths of the notifications queued now.
    fn drain(&self) -> Vec<String> {
        self.notes.try_iter().filter_map(|ev| self.relevant(&ev)).collect()
    }

    /// Reads announced paths round by round until a round brings no new
    /// notification: every note, in order, and each path's final state.
    fn rounds(&self, mut pending: Vec<String>) -> Result<Batch, Stop> {
        let mut notes = Vec::new();
        let mut reads = HashMap::new();
        let mut round = 0;
        while !pending.is_empty() && round < MAX_ROUNDS {
            let mut seen = std::collections::HashSet::new();
            let distinct: Vec<String> = pending.iter().filter(|p| seen.insert(p.as_str())).cloned().collect();
            for (p, got) in distinct.iter().zip(self.read_many(&distinct)?) {
                let kept = got.filter(|_| self.opts.keeps(p));
                reads.insert(p.clone(), kept);
            }
            notes.append(&mut pending);
            pending = self.drain();
            round += 1;
        }
        // Rounds ran out: the rest is the next batch's.
        notes.extend(pending.iter().filter(|p| reads.contains_key(*p)).cloned());
        Ok((notes, reads))
    }

    /// A batch of live changes, starting from `first`.
    fn live(&mut self, first: WatchedEvent) -> Result<(), Stop> {
        let mut pending: Vec<String> = self.relevant(&first).into_iter().collect();
        pending.extend(self.drain());
        if pending.is_empty() {
            return Ok(());
        }
        let (notes, reads) = self.rounds(pending)?;
        let max = self.opts.max_nodes;
        let mut too_large = false;
        self.shared.change(|v| {
            let evs = view::apply_batch(v, &notes, &reads);
            too_large = v.len() > max;
            evs
        });
        self.last_zxid = self.client.zookeeper_client().last_zxid();
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

    /// Reads the whole subtree again (adding the watch first on a new
    /// session), then tells the difference and `Initialized`.
    fn resync(&mut self) -> Result<(), Stop> {
        let generation = self.client.session_generation();
        if self.watch.map(|(_, g)| g) != Some(generation) {
            if let Some((old, _)) = self.watch.take() {
                let _ = self.bounded().remove_watch(old);
            }
            let mode = if self.opts.max_depth == Some(0) {
                AddWatchMode::Persistent
            } else {
                AddWatchMode::PersistentRecursive
            };
            let id = match self.bounded().add_watch(&self.shared.root, mode, self.note_tx.clone()) {
                Ok(id) => id,
                // A server before 3.6 answers the same however often asked.
                Err(e @ zk_framework::Error::ServerTooOld { .. }) => return Err(Stop::Fatal(Error::ZooKeeper(e))),
                Err(e) => return Err(e.into()),
            };
            self.watch = Some((id, generation));
        }
        // Notifications queued before the read are covered by it.
        while self.notes.try_recv().is_ok() {}
        self.link.synced = false;
        self.judge();
        let root = self.shared.root.clone();
        // Level by level, each level's reads pipelined; a node is listed
        // only when its stat says it has children.
        let mut fresh = View::new();
        let mut level = vec![root.clone()];
        while !level.is_empty() {
            let nodes = self.read_many(&level)?;
            let mut parents = Vec::new();
            for (p, node) in level.iter().zip(nodes) {
                let Some(node) = node else { continue };
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
        }
        // Changes announced while the subtree was read.
        let pending = self.drain();
        let (notes, reads) = self.rounds(pending)?;
        let _ = view::apply_batch(&mut fresh, &notes, &reads);
        if fresh.len() > self.opts.max_nodes {
            return Err(Stop::Fatal(self.too_large()));
        }
        self.shared.change(|v| view::resync(v, fresh));
        self.last_zxid = self.client.zookeeper_client().last_zxid();
        self.link.synced = true;
        // Current (when it is) before `Initialized`, so that whoever waits
        // for it may ask `get_current` at once.
        self.judge();
        self.shared.initialized();
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
