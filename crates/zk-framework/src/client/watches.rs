//! The client-side watch registry (server paths, chroot included): one-shot
//! watches by kind, and persistent (addWatch) registrations by mode.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::types::{WatchedEvent, Watcher};
use super::watch_types::{AddWatchMode, PersistentWatcher, WatchId, WatcherType};
use zk_proto::{EventType, OpCode, SetWatches, SetWatches2};

/// How a watch was asked for; decides where (and whether) it is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchMode {
    /// exists: a data watch on success, an exist watch on NoNode.
    Exists,
    /// getData: a data watch on success only.
    Data,
    /// getChildren / getChildren2: a child watch on success only.
    Child,
}

/// A watch waiting for the reply of the request that sets it.
pub(crate) struct WatchReg {
    pub mode: WatchMode,
    pub server_path: String,
    pub watcher: Box<dyn Watcher>,
}

/// A persistent watch waiting for the reply of its addWatch.
pub(crate) struct PersistentReg {
    pub mode: AddWatchMode,
    pub server_path: String,
    pub id: WatchId,
    pub watcher: Arc<dyn PersistentWatcher>,
}

/// What a request registers when its reply says the server set it.
pub(crate) enum Registration {
    /// A one-shot watch (exists, getData, getChildren).
    Once(WatchReg),
    /// A persistent registration (addWatch).
    Many(PersistentReg),
}

impl From<WatchReg> for Registration {
    fn from(r: WatchReg) -> Registration {
        Registration::Once(r)
    }
}

impl Registration {
    /// The callback, to be dropped on the event thread.
    pub fn into_watcher(self) -> Box<dyn Watcher> {
        match self {
            Registration::Once(r) => r.watcher,
            Registration::Many(r) => Box::new(Shot(r.watcher)),
        }
    }
}

/// One delivery of an event to a persistent watcher, as a one-shot
/// [`Watcher`] (what the event thread runs).
pub(crate) struct Shot(pub Arc<dyn PersistentWatcher>);

/// The watchers an event is due to: `watchers` run in the order of
/// everything handed to the event thread; `in_order` are persistent
/// watchers that only signal, run on the I/O thread at once, so that each
/// one's events (node events and session states alike) reach it in the
/// order the connection brought them, and before the reply to any later
/// request reaches its caller.
#[derive(Default)]
pub(crate) struct Due {
    pub watchers: Vec<Box<dyn Watcher>>,
    pub in_order: Vec<Box<dyn Watcher>>,
}

impl Due {
    fn add_shots(&mut self, v: &[(WatchId, Arc<dyn PersistentWatcher>)]) {
        for (_, w) in v {
            let shot = Box::new(Shot(w.clone())) as Box<dyn Watcher>;
            if w.only_signals() {
                self.in_order.push(shot);
            } else {
                self.watchers.push(shot);
            }
        }
    }

    /// How many watchers in all.
    pub fn len(&self) -> usize {
        self.watchers.len() + self.in_order.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Watcher for Shot {
    fn process(self: Box<Self>, event: WatchedEvent) {
        self.0.process(event)
    }

    fn only_signals(&self) -> bool {
        self.0.only_signals()
    }
}

type Table = HashMap<String, Vec<Box<dyn Watcher>>>;
type PTable = HashMap<String, Vec<(WatchId, Arc<dyn PersistentWatcher>)>>;

/// Registered watches: one-shot ones by kind and server path, persistent
/// ones by mode and server path.
#[derive(Default)]
pub(crate) struct WatchRegistry {
    data: Table,
    exist: Table,
    child: Table,
    persistent: PTable,
    recursive: PTable,
    /// addWatch calls whose caller gave up before the reply (its deadline):
    /// their registration, if the reply still comes, is dropped. Cleared when
    /// the connection goes (no reply can come after that).
    cancelled: HashSet<WatchId>,
}

/// A watch the registry gave up locally, with the event its callback gets.
pub(crate) type Removed = (Box<dyn Watcher>, EventType);

/// Largest amount of path text put in one SetWatches frame (as the Java client).
const SET_WATCHES_CHUNK: usize = 128 * 1024;

/// The opcode and record of one re-registration batch: SetWatches2 (105) when
/// it carries a persistent path, else SetWatches (101), as the Java client
/// (so that a server before 3.6 is never sent 105).
pub(crate) fn batch_request(b: &SetWatches2) -> (OpCode, Box<dyn zk_proto::frame::EncodeDyn>) {
    if b.persistent_watches.is_empty() && b.persistent_recursive_watches.is_empty() {
        (
            OpCode::SetWatches,
            Box::new(SetWatches {
                relative_zxid: b.relative_zxid,
                data_watches: b.data_watches.clone(),
                exist_watches: b.exist_watches.clone(),
                child_watches: b.child_watches.clone(),
            }),
        )
    } else {
        (OpCode::SetWatches2, Box::new(b.clone()))
    }
}

impl WatchRegistry {
    /// Registers `reg` after its request got `err`; gives the watcher back when it
    /// must not be registered (the server did not set a watch).
    pub fn register(&mut self, reg: Registration, err: i32) -> Option<Box<dyn Watcher>> {
        const NO_NODE: i32 = zk_proto::ErrorCode::NoNode.code();
        let reg = match reg {
            Registration::Once(reg) => reg,
            Registration::Many(p) => {
                if err != 0 || self.cancelled.remove(&p.id) {
                    return Some(Box::new(Shot(p.watcher)));
                }
                let table = match p.mode {
                    AddWatchMode::Persistent => &mut self.persistent,
                    AddWatchMode::PersistentRecursive => &mut self.recursive,
                };
                table.entry(p.server_path).or_default().push((p.id, p.watcher));
                return None;
            }
        };
        let table = match (reg.mode, err) {
            (WatchMode::Exists, 0) | (WatchMode::Data, 0) => &mut self.data,
            (WatchMode::Exists, NO_NODE) => &mut self.exist,
            (WatchMode::Child, 0) => &mut self.child,
            _ => return Some(reg.watcher),
        };
        table.entry(reg.server_path).or_default().push(reg.watcher);
        None
    }

    /// Removes and returns the one-shot watchers an event triggers, and adds a
    /// delivery for each persistent registration it matches (as ZooKeeper's
    /// `ZKWatchManager.materialize`): persistent ones on the path for every
    /// event type, recursive ones on the path or an ancestor for every type
    /// but NodeChildrenChanged. Each registration is called once per event.
    pub fn materialize(&mut self, event_type: EventType, server_path: &str) -> Due {
        let mut out = Due::default();
        let mut take = |t: &mut Table| {
            if let Some(v) = t.remove(server_path) {
                out.watchers.extend(v);
            }
        };
        match event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => {
                take(&mut self.data);
                take(&mut self.exist);
            }
            EventType::NodeDeleted => {
                take(&mut self.data);
                take(&mut self.exist);
                take(&mut self.child);
            }
            EventType::NodeChildrenChanged => take(&mut self.child),
            _ => return out,
        }
        if let Some(v) = self.persistent.get(server_path) {
            out.add_shots(v);
        }
        if event_type != EventType::NodeChildrenChanged && !self.recursive.is_empty() {
            for p in ancestors_and_self(server_path) {
                if let Some(v) = self.recursive.get(p) {
                    out.add_shots(v);
                }
            }
        }
        out
    }

    /// Deliveries of a session event to every persistent registration (they
    /// stay registered).
    pub fn persistent_due(&self) -> Due {
        let mut out = Due::default();
        for v in self.persistent.values().chain(self.recursive.values()) {
            out.add_shots(v);
        }
        out
    }

    /// Removes one persistent registration: its mode, server path, watcher,
    /// and whether another registration of that mode remains on that path.
    pub fn remove_persistent(
        &mut self,
        id: WatchId,
    ) -> Option<(AddWatchMode, String, Arc<dyn PersistentWatcher>, bool)> {
        for (mode, table) in [
            (AddWatchMode::Persistent, &mut self.persistent),
            (AddWatchMode::PersistentRecursive, &mut self.recursive),
        ] {
            let found = table
                .iter()
                .find_map(|(p, v)| v.iter().position(|(i, _)| *i == id).map(|at| (p.clone(), at)));
            if let Some((path, at)) = found {
                let v = table.get_mut(&path).expect("found above");
                let (_, w) = v.remove(at);
                let others = !v.is_empty();
                if !others {
                    table.remove(&path);
                }
                return Some((mode, path, w, others));
            }
        }
        None
    }

    /// An addWatch whose caller gave up: drops its registration now, or when
    /// its reply comes.
    pub fn cancel(&mut self, id: WatchId) -> Option<Arc<dyn PersistentWatcher>> {
        match self.remove_persistent(id) {
            Some((_, _, w, _)) => Some(w),
            None => {
                self.cancelled.insert(id);
                None
            }
        }
    }

    /// The connection is gone: no addWatch reply can come any more.
    pub fn connection_gone(&mut self) {
        self.cancelled.clear();
    }

    /// Removes the local watches of `kind` on `server_path` (Java's
    /// `removeAllWatches`), each with the event its callback gets:
    /// DataWatchRemoved for data and exist watches, ChildWatchRemoved for
    /// child watches, PersistentWatchRemoved for persistent registrations.
    /// `Any` removes every kind.
    pub fn remove_kind(&mut self, server_path: &str, kind: WatcherType) -> Vec<Removed> {
        let (data, child, persistent, recursive) = match kind {
            WatcherType::Children => (false, true, false, false),
            WatcherType::Data => (true, false, false, false),
            WatcherType::Persistent => (false, false, true, false),
            WatcherType::PersistentRecursive => (false, false, false, true),
            WatcherType::Any => (true, true, true, true),
        };
        let mut out: Vec<Removed> = Vec::new();
        let mut once = |t: &mut Table, ev: EventType| {
            if let Some(v) = t.remove(server_path) {
                out.extend(v.into_iter().map(|w| (w, ev)));
            }
        };
        if data {
            once(&mut self.data, EventType::DataWatchRemoved);
            once(&mut self.exist, EventType::DataWatchRemoved);
        }
        if child {
            once(&mut self.child, EventType::ChildWatchRemoved);
        }
        for (on, t) in [(persistent, &mut self.persistent), (recursive, &mut self.recursive)] {
            if on {
                if let Some(v) = t.remove(server_path) {
                    out.extend(
                        v.into_iter()
                            .map(|(_, w)| (Box::new(Shot(w)) as Box<dyn Watcher>, EventType::PersistentWatchRemoved)),
                    );
                }
            }
        }
        out
    }

    /// The re-registration batches after a reconnect, in the Java order
    /// (data, exist, child, persistent, persistent recursive), each carrying
    /// at most about 128 KiB of paths. [`batch_request`] picks each one's
    /// opcode.
    pub fn set_watches(&self, relative_zxid: i64) -> Vec<SetWatches2> {
        let mut out = Vec::new();
        let fresh = || SetWatches2 {
            relative_zxid,
            ..Default::default()
        };
        let mut cur = fresh();
        let mut size = 0;
        fn sorted<V>(t: &HashMap<String, V>) -> Vec<&String> {
            let mut v: Vec<&String> = t.keys().collect();
            v.sort();
            v
        }
        let lists = [
            sorted(&self.data),
            sorted(&self.exist),
            sorted(&self.child),
            sorted(&self.persistent),
            sorted(&self.recursive),
        ];
        for (which, paths) in lists.into_iter().enumerate() {
            for path in paths {
                if size > 0 && size + path.len() > SET_WATCHES_CHUNK {
                    out.push(std::mem::replace(&mut cur, fresh()));
                    size = 0;
                }
                size += path.len() + 4;
                let list = match which {
                    0 => &mut cur.data_watches,
                    1 => &mut cur.exist_watches,
                    2 => &mut cur.child_watches,
                    3 => &mut cur.persistent_watches,
                    _ => &mut cur.persistent_recursive_watches,
                };
                list.push(path.clone());
            }
        }
        if size > 0 {
            out.push(cur);
        }
        out
    }

    /// The re-registration of every watch registered on `server_path` (one
    /// batch: the lists of one path), relative to `relative_zxid`; `None`
    /// when there is none. For the watches a removeWatches of type `Any`
    /// took from the server that the client still keeps.
    pub fn set_watches_for(&self, server_path: &str, relative_zxid: i64) -> Option<SetWatches2> {
        let has = |t: &Table| t.get(server_path).is_some_and(|v| !v.is_empty());
        let has_p = |t: &PTable| t.get(server_path).is_some_and(|v| !v.is_empty());
        let one = |on: bool| if on { vec![server_path.to_string()] } else { Vec::new() };
        let b = SetWatches2 {
            relative_zxid,
            data_watches: one(has(&self.data)),
            exist_watches: one(has(&self.exist)),
            child_watches: one(has(&self.child)),
            persistent_watches: one(has_p(&self.persistent)),
            persistent_recursive_watches: one(has_p(&self.recursive)),
        };
        let any = !(b.data_watches.is_empty()
            && b.exist_watches.is_empty()
            && b.child_watches.is_empty()
            && b.persistent_watches.is_empty()
            && b.persistent_recursive_watches.is_empty());
        any.then_some(b)
    }

    /// Removes every one-shot watch (on expiry and close).
    pub fn take_all(&mut self) -> Vec<Box<dyn Watcher>> {
        let mut out = Vec::new();
        for t in [&mut self.data, &mut self.exist, &mut self.child] {
            for (_, v) in t.drain() {
                out.extend(v);
            }
        }
        out
    }

    /// Removes every persistent registration (on expiry and close), as
    /// deliveries of the final event.
    pub fn take_persistent(&mut self) -> Due {
        let mut out = Due::default();
        for t in [&mut self.persistent, &mut self.recursive] {
            for (_, v) in t.drain() {
                out.add_shots(&v);
            }
        }
        out
    }

    /// The registered server paths per kind, and the number of callbacks.
    pub fn snapshot(&self) -> Snapshot {
        fn keys<V>(t: &HashMap<String, V>) -> Vec<String> {
            let mut v: Vec<String> = t.keys().cloned().collect();
            v.sort();
            v
        }
        let n = [&self.data, &self.exist, &self.child]
            .iter()
            .map(|t| t.values().map(Vec::len).sum::<usize>())
            .sum::<usize>()
            + [&self.persistent, &self.recursive]
                .iter()
                .map(|t| t.values().map(Vec::len).sum::<usize>())
                .sum::<usize>();
        Snapshot {
            data: keys(&self.data),
            exist: keys(&self.exist),
            child: keys(&self.child),
            persistent: keys(&self.persistent),
            recursive: keys(&self.recursive),
            callbacks: n,
        }
    }
}

/// The registered server paths per kind, and the number of callbacks.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub data: Vec<String>,
    pub exist: Vec<String>,
    pub child: Vec<String>,
    pub persistent: Vec<String>,
    pub recursive: Vec<String>,
    pub callbacks: usize,
}

/// `path` and each of its ancestors up to `/`.
fn ancestors_and_self(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let cur = next?;
        next = match cur.rfind('/') {
            _ if cur == "/" => None,
            Some(0) => Some("/"),
            Some(i) => Some(&cur[..i]),
            None => None,
        };
        Some(cur)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::WatchedEvent;

    fn reg(mode: WatchMode, p: &str) -> Registration {
        Registration::Once(WatchReg {
            mode,
            server_path: p.into(),
            watcher: Box::new(|_: WatchedEvent| {}),
        })
    }

    fn preg(mode: AddWatchMode, p: &str, id: u64) -> Registration {
        Registration::Many(PersistentReg {
            mode,
            server_path: p.into(),
            id: WatchId::from_raw(id),
            watcher: Arc::new(|_: WatchedEvent| {}),
        })
    }

    #[test]
    fn registration_rules() {
        let mut r = WatchRegistry::default();
        assert!(r.register(reg(WatchMode::Data, "/a"), 0).is_none());
        assert!(r.register(reg(WatchMode::Data, "/b"), -101).is_some());
        assert!(r.register(reg(WatchMode::Exists, "/c"), -101).is_none());
        assert!(r.register(reg(WatchMode::Exists, "/d"), 0).is_none());
        assert!(r.register(reg(WatchMode::Exists, "/e"), -102).is_some());
        assert!(r.register(reg(WatchMode::Child, "/f"), 0).is_none());
        assert!(r.register(reg(WatchMode::Child, "/g"), -4).is_some());
        let snap = r.snapshot();
        assert_eq!(
            (snap.data, snap.exist, snap.child, snap.callbacks),
            (vec!["/a".into(), "/d".into()], vec!["/c".into()], vec!["/f".into()], 4)
        );
        let sw = r.set_watches(9);
        assert_eq!(sw.len(), 1);
        assert_eq!(sw[0].relative_zxid, 9);
        assert_eq!(sw[0].exist_watches, vec!["/c".to_string()]);
        assert_eq!(r.materialize(EventType::NodeChildrenChanged, "/a").len(), 0);
        assert_eq!(r.materialize(EventType::NodeCreated, "/c").len(), 1);
        assert_eq!(r.materialize(EventType::NodeDeleted, "/f").len(), 1);
        assert_eq!(r.materialize(EventType::NodeDataChanged, "/a").len(), 1);
        assert_eq!(r.materialize(EventType::NodeDataChanged, "/a").len(), 0);
        assert_eq!(r.take_all().len(), 1);
        assert!(r.set_watches(0).is_empty());
    }

    #[test]
    fn set_watches_is_chunked() {
        let mut r = WatchRegistry::default();
        let long = "x".repeat(1000);
        for i in 0..400 {
            r.register(reg(WatchMode::Child, &format!("/{long}{i}")), 0);
        }
        let sw = r.set_watches(1);
        assert!(sw.len() >= 3, "{}", sw.len());
        assert_eq!(sw.iter().map(|s| s.child_watches.len()).sum::<usize>(), 400);
    }

    #[test]
    fn persistent_registrations_stay_and_match_as_the_server_sends() {
        let mut r = WatchRegistry::default();
        assert!(r.register(preg(AddWatchMode::Persistent, "/p", 1), 0).is_none());
        assert!(r
            .register(preg(AddWatchMode::PersistentRecursive, "/r", 2), 0)
            .is_none());
        assert!(r.register(preg(AddWatchMode::PersistentRecursive, "/", 3), 0).is_none());
        // A failed addWatch registers nothing.
        assert!(r.register(preg(AddWatchMode::Persistent, "/x", 4), -6).is_some());
        assert!(r.register(reg(WatchMode::Data, "/p"), 0).is_none());
        // (event, path) -> number of callbacks called
        let table = [
            (EventType::NodeDataChanged, "/p", 3), // one-shot + persistent + recursive on /
            (EventType::NodeDataChanged, "/p", 2), // the one-shot is gone
            (EventType::NodeChildrenChanged, "/p", 1),
            (EventType::NodeCreated, "/r/a/b", 2),
            (EventType::NodeChildrenChanged, "/r", 0),
            (EventType::NodeDeleted, "/r", 2),
            (EventType::NodeCreated, "/q", 1),
            (EventType::None, "/p", 0),
        ];
        for (ev, p, n) in table {
            assert_eq!(r.materialize(ev, p).len(), n, "{ev:?} {p}");
        }
        assert_eq!(r.persistent_due().len(), 3);
        let snap = r.snapshot();
        assert_eq!(snap.persistent, vec!["/p".to_string()]);
        assert_eq!(snap.recursive, vec!["/".to_string(), "/r".to_string()]);
        assert_eq!(snap.callbacks, 3);
        let (mode, path, _, others) = r.remove_persistent(WatchId::from_raw(2)).unwrap();
        assert_eq!(
            (mode, path.as_str(), others),
            (AddWatchMode::PersistentRecursive, "/r", false)
        );
        assert!(r.remove_persistent(WatchId::from_raw(2)).is_none());
        assert_eq!(r.take_persistent().len(), 2);
        assert!(r.persistent_due().is_empty());
    }

    #[test]
    fn a_cancelled_add_watch_is_not_registered_when_its_reply_comes() {
        let mut r = WatchRegistry::default();
        assert!(r.cancel(WatchId::from_raw(7)).is_none());
        assert!(r.register(preg(AddWatchMode::Persistent, "/p", 7), 0).is_some());
        assert!(r.snapshot().persistent.is_empty());
        // Registered first, cancelled after: removed at once.
        r.register(preg(AddWatchMode::Persistent, "/p", 8), 0);
        assert!(r.cancel(WatchId::from_raw(8)).is_some());
        assert!(r.snapshot().persistent.is_empty());
    }

    #[test]
    fn remove_kind_says_what_each_watcher_hears() {
        let mut r = WatchRegistry::default();
        r.register(reg(WatchMode::Data, "/a"), 0);
        r.register(reg(WatchMode::Exists, "/a"), -101);
        r.register(reg(WatchMode::Child, "/a"), 0);
        r.register(preg(AddWatchMode::Persistent, "/a", 11), 0);
        r.register(preg(AddWatchMode::PersistentRecursive, "/a", 12), 0);
        let kinds = |v: Vec<Removed>| v.into_iter().map(|(_, e)| e).collect::<Vec<_>>();
        assert_eq!(
            kinds(r.remove_kind("/a", WatcherType::Data)),
            vec![EventType::DataWatchRemoved, EventType::DataWatchRemoved]
        );
        assert_eq!(
            kinds(r.remove_kind("/a", WatcherType::Persistent)),
            vec![EventType::PersistentWatchRemoved]
        );
        assert_eq!(
            kinds(r.remove_kind("/a", WatcherType::Any)),
            vec![EventType::ChildWatchRemoved, EventType::PersistentWatchRemoved]
        );
        assert!(r.remove_kind("/a", WatcherType::Any).is_empty());
    }

    /// What a removeWatches of type `Any` took from the server: every watch
    /// the client keeps on that one path, in one batch at the given zxid.
    #[test]
    fn the_watches_of_one_path_are_one_batch() {
        let mut r = WatchRegistry::default();
        assert!(r.set_watches_for("/a", 7).is_none());
        r.register(reg(WatchMode::Data, "/a"), 0);
        r.register(reg(WatchMode::Exists, "/b"), -101);
        r.register(reg(WatchMode::Child, "/a"), 0);
        r.register(preg(AddWatchMode::PersistentRecursive, "/a", 31), 0);
        r.register(reg(WatchMode::Data, "/a/x"), 0);
        let b = r.set_watches_for("/a", 7).unwrap();
        assert_eq!(b.relative_zxid, 7);
        assert_eq!(b.data_watches, vec!["/a".to_string()]);
        assert!(b.exist_watches.is_empty());
        assert_eq!(b.child_watches, vec!["/a".to_string()]);
        assert!(b.persistent_watches.is_empty());
        assert_eq!(b.persistent_recursive_watches, vec!["/a".to_string()]);
        assert_eq!(batch_request(&b).0, OpCode::SetWatches2);
        let b = r.set_watches_for("/b", 9).unwrap();
        assert_eq!(b.exist_watches, vec!["/b".to_string()]);
        assert_eq!(batch_request(&b).0, OpCode::SetWatches);
    }

    /// The reconnect batches: Java's order, and SetWatches2 (105) only for a
    /// batch that carries a persistent path.
    #[test]
    fn a_batch_with_a_persistent_path_is_set_watches2() {
        let mut r = WatchRegistry::default();
        r.register(reg(WatchMode::Data, "/d"), 0);
        let b = r.set_watches(5);
        assert_eq!(b.len(), 1);
        assert_eq!(batch_request(&b[0]).0, OpCode::SetWatches);
        r.register(preg(AddWatchMode::PersistentRecursive, "/r", 21), 0);
        r.register(preg(AddWatchMode::Persistent, "/p", 22), 0);
        let b = r.set_watches(5);
        assert_eq!(b.len(), 1);
        assert_eq!(batch_request(&b[0]).0, OpCode::SetWatches2);
        assert_eq!(b[0].data_watches, vec!["/d".to_string()]);
        assert_eq!(b[0].persistent_watches, vec!["/p".to_string()]);
        assert_eq!(b[0].persistent_recursive_watches, vec!["/r".to_string()]);
        // Many one-shot paths first: the early batches have no persistent
        // path and go as SetWatches, the last one as SetWatches2.
        let long = "y".repeat(1000);
        for i in 0..300 {
            r.register(reg(WatchMode::Child, &format!("/{long}{i}")), 0);
        }
        let b = r.set_watches(5);
        assert!(b.len() >= 3, "{}", b.len());
        let ops: Vec<OpCode> = b.iter().map(|x| batch_request(x).0).collect();
        assert_eq!(ops.last(), Some(&OpCode::SetWatches2));
        assert!(ops[..ops.len() - 1].iter().all(|&o| o == OpCode::SetWatches), "{ops:?}");
    }

    #[test]
    fn ancestors() {
        assert_eq!(
            ancestors_and_self("/a/b/c").collect::<Vec<_>>(),
            vec!["/a/b/c", "/a/b", "/a", "/"]
        );
        assert_eq!(ancestors_and_self("/").collect::<Vec<_>>(), vec!["/"]);
        assert_eq!(ancestors_and_self("/a").collect::<Vec<_>>(), vec!["/a", "/"]);
    }
}
