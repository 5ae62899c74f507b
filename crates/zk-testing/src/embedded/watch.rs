//! Watch tables (`WatchManager`): `path → connection → mode`, one-shot unless persistent.
//! Imports only the connection id from `conn`.

use std::collections::{BTreeSet, HashMap};

use zk_proto::EventType;

use super::conn::ConnId;

/// How a watch was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One-shot (exists / getData / getChildren / SetWatches).
    Standard,
    /// addWatch mode 0.
    Persistent,
    /// addWatch mode 1: this node and all descendants, never NodeChildrenChanged.
    Recursive,
}

/// One table (data or child).
#[derive(Debug, Default)]
pub(crate) struct WatchTable {
    map: HashMap<String, HashMap<ConnId, Mode>>,
    recursive: usize,
}

impl WatchTable {
    /// Sets (or re-sets, replacing the mode) the watch of `conn` on `path`.
    pub fn add(&mut self, path: &str, conn: ConnId, mode: Mode) {
        let old = match self.map.get_mut(path) {
            Some(m) => m.insert(conn, mode),
            None => {
                self.map.insert(path.to_string(), HashMap::from([(conn, mode)]));
                None
            }
        };
        if old == Some(Mode::Recursive) {
            self.recursive -= 1;
        }
        if mode == Mode::Recursive {
            self.recursive += 1;
        }
    }

    /// Whether any connection watches `path` in this table: what 3.6–3.8
    /// answer to checkWatches (`WatchManager.containsWatcher` returns true at
    /// the path for any watcher there, not only the asking connection's).
    pub fn watched(&self, path: &str) -> bool {
        self.map.contains_key(path)
    }

    /// Removes the watch of `conn` on `path`, whatever its mode.
    pub fn remove(&mut self, path: &str, conn: ConnId) -> bool {
        let Some(m) = self.map.get_mut(path) else { return false };
        let old = m.remove(&conn);
        if m.is_empty() {
            self.map.remove(path);
        }
        if old == Some(Mode::Recursive) {
            self.recursive -= 1;
        }
        old.is_some()
    }

    /// Forgets every watch of a closed connection.
    pub fn remove_conn(&mut self, conn: ConnId) {
        let mut removed_recursive = 0;
        self.map.retain(|_, m| {
            if m.remove(&conn) == Some(Mode::Recursive) {
                removed_recursive += 1;
            }
            !m.is_empty()
        });
        self.recursive -= removed_recursive;
    }

    /// Fires `ty` on `path`: one-shot watches at the path are consumed, persistent ones
    /// stay, recursive ones at the path or an ancestor match (never NodeChildrenChanged).
    /// Returns the connections to notify, `suppress` excluded.
    pub fn trigger(&mut self, path: &str, ty: EventType, suppress: &BTreeSet<ConnId>) -> BTreeSet<ConnId> {
        let mut out = BTreeSet::new();
        if let Some(m) = self.map.get_mut(path) {
            m.retain(|&c, &mut mode| {
                match mode {
                    Mode::Recursive => {
                        if ty != EventType::NodeChildrenChanged {
                            out.insert(c);
                        }
                    }
                    Mode::Persistent => {
                        out.insert(c);
                    }
                    Mode::Standard => {
                        out.insert(c);
                        return false;
                    }
                }
                true
            });
            if m.is_empty() {
                self.map.remove(path);
            }
        }
        if self.recursive > 0 && ty != EventType::NodeChildrenChanged {
            let mut p = path;
            while let Some(i) = p.rfind('/') {
                p = if i == 0 { "/" } else { &p[..i] };
                if let Some(m) = self.map.get(p) {
                    out.extend(m.iter().filter(|(_, &mode)| mode == Mode::Recursive).map(|(&c, _)| c));
                }
                if p == "/" {
                    break;
                }
            }
        }
        out.retain(|c| !suppress.contains(c));
        out
    }

    /// Number of watched paths.
    pub fn paths(&self) -> usize {
        self.map.len()
    }

    /// Number of (path, connection) pairs.
    pub fn count(&self) -> usize {
        self.map.values().map(HashMap::len).sum()
    }

    /// Connections with at least one watch.
    pub fn conns(&self) -> BTreeSet<ConnId> {
        self.map.values().flat_map(|m| m.keys().copied()).collect()
    }

    /// Sorted `(path, sorted connections)`.
    pub fn by_path(&self) -> Vec<(String, Vec<ConnId>)> {
        let mut v: Vec<(String, Vec<ConnId>)> = self
            .map
            .iter()
            .map(|(p, m)| {
                let mut c: Vec<ConnId> = m.keys().copied().collect();
                c.sort_unstable();
                (p.clone(), c)
            })
            .collect();
        v.sort();
        v
    }
}

/// The data and child tables of a server.
#[derive(Debug, Default)]
pub(crate) struct Watches {
    pub data: WatchTable,
    pub child: WatchTable,
}

impl Watches {
    /// Forgets every watch of a connection.
    pub fn remove_conn(&mut self, conn: ConnId) {
        self.data.remove_conn(conn);
        self.child.remove_conn(conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shot_persistent_and_recursive() {
        let mut t = WatchTable::default();
        let none = BTreeSet::new();
        t.add("/a", 1, Mode::Standard);
        t.add("/a", 2, Mode::Persistent);
        t.add("/", 3, Mode::Recursive);
        let got = t.trigger("/a", EventType::NodeDataChanged, &none);
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![1, 2, 3]);
        let got = t.trigger("/a", EventType::NodeDataChanged, &none);
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![2, 3]);
        let got = t.trigger("/a", EventType::NodeChildrenChanged, &none);
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![2]);
        t.remove_conn(3);
        assert_eq!(t.recursive, 0);
        assert!(t.remove("/a", 2));
        assert_eq!(t.count(), 0);
    }
}
