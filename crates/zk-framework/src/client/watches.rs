//! The client-side watch registry (server paths, chroot included).

use std::collections::HashMap;

use super::types::Watcher;
use crate::proto::{EventType, SetWatches};

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

type Table = HashMap<String, Vec<Box<dyn Watcher>>>;

/// Registered one-shot watches, by kind and server path.
#[derive(Default)]
pub(crate) struct WatchRegistry {
    data: Table,
    exist: Table,
    child: Table,
}

/// Largest amount of path text put in one SetWatches frame (as the Java client).
const SET_WATCHES_CHUNK: usize = 128 * 1024;

impl WatchRegistry {
    /// Registers `reg` after its request got `err`; gives the watcher back when it
    /// must not be registered (the server did not set a watch).
    pub fn register(&mut self, reg: WatchReg, err: i32) -> Option<Box<dyn Watcher>> {
        const NO_NODE: i32 = crate::proto::ErrorCode::NoNode.code();
        let table = match (reg.mode, err) {
            (WatchMode::Exists, 0) | (WatchMode::Data, 0) => &mut self.data,
            (WatchMode::Exists, NO_NODE) => &mut self.exist,
            (WatchMode::Child, 0) => &mut self.child,
            _ => return Some(reg.watcher),
        };
        table.entry(reg.server_path).or_default().push(reg.watcher);
        None
    }

    /// Removes and returns the watchers an event triggers (as ZooKeeper's
    /// `ZKWatchManager.materialize`).
    pub fn materialize(&mut self, event_type: EventType, server_path: &str) -> Vec<Box<dyn Watcher>> {
        let mut out = Vec::new();
        let mut take = |t: &mut Table| {
            if let Some(v) = t.remove(server_path) {
                out.extend(v);
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
            _ => {}
        }
        out
    }

    /// The SetWatches records that re-register everything, split so that each
    /// carries at most about 128 KiB of paths.
    pub fn set_watches(&self, relative_zxid: i64) -> Vec<SetWatches> {
        let mut out = Vec::new();
        let mut cur = SetWatches {
            relative_zxid,
            ..Default::default()
        };
        let mut size = 0;
        let lists: [(&Table, u8); 3] = [(&self.data, 0), (&self.exist, 1), (&self.child, 2)];
        for (table, which) in lists {
            for path in table.keys() {
                if size > 0 && size + path.len() > SET_WATCHES_CHUNK {
                    out.push(std::mem::replace(
                        &mut cur,
                        SetWatches {
                            relative_zxid,
                            ..Default::default()
                        },
                    ));
                    size = 0;
                }
                size += path.len() + 4;
                match which {
                    0 => cur.data_watches.push(path.clone()),
                    1 => cur.exist_watches.push(path.clone()),
                    _ => cur.child_watches.push(path.clone()),
                }
            }
        }
        if size > 0 {
            out.push(cur);
        }
        out
    }

    /// Removes every watch (on expiry and close).
    pub fn take_all(&mut self) -> Vec<Box<dyn Watcher>> {
        let mut out = Vec::new();
        for t in [&mut self.data, &mut self.exist, &mut self.child] {
            for (_, v) in t.drain() {
                out.extend(v);
            }
        }
        out
    }

    /// The registered server paths per kind, and the number of callbacks.
    pub fn snapshot(&self) -> (Vec<String>, Vec<String>, Vec<String>, usize) {
        let keys = |t: &Table| {
            let mut v: Vec<String> = t.keys().cloned().collect();
            v.sort();
            v
        };
        let n = [&self.data, &self.exist, &self.child]
            .iter()
            .map(|t| t.values().map(Vec::len).sum::<usize>())
            .sum();
        (keys(&self.data), keys(&self.exist), keys(&self.child), n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::WatchedEvent;

    fn reg(mode: WatchMode, p: &str) -> WatchReg {
        WatchReg {
            mode,
            server_path: p.into(),
            watcher: Box::new(|_: WatchedEvent| {}),
        }
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
        let (d, e, c, n) = r.snapshot();
        assert_eq!(
            (d, e, c, n),
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
}
