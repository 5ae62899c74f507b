//! The cache's view and the pure rules that turn what the server answered
//! into events: [`diff_node`] for one node (the changes a watch announced
//! are settled one node at a time, in `sync`), [`resync`] for a whole
//! subtree read again. Both describe exactly the
//! difference between what the cache showed and what the server has, and
//! judge a node's identity by its `czxid` (a node deleted and created again
//! is a deletion and a creation, whatever its version), its data by its
//! `mzxid`.

use std::collections::BTreeMap;
use std::sync::Arc;

use zk_framework::Stat;

use crate::freshness::Freshness;

/// One cached node (Curator's `ChildData`): its path (as the cache's client
/// names it, namespace excluded), its stat, and its data unless the cache
/// does not load data.
///
/// # Examples
///
/// ```
/// use zk_recipes::ChildData;
/// let d = ChildData::new("/config/a", zk_framework::Stat::default(), Some(b"v1".to_vec()));
/// assert_eq!(d.path(), "/config/a");
/// assert_eq!(d.data(), Some(&b"v1"[..]));
/// assert_eq!(d.stat().version, 0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildData {
    /// Shared with the view's key: a cached node keeps its path once.
    path: Arc<str>,
    stat: Stat,
    data: Option<Arc<[u8]>>,
}

impl ChildData {
    /// A node's record.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = zk_recipes::ChildData::new("/a", zk_framework::Stat::default(), None);
    /// assert!(d.data().is_none());
    /// ```
    pub fn new(path: impl Into<String>, stat: Stat, data: Option<Vec<u8>>) -> ChildData {
        ChildData {
            path: Arc::from(path.into()),
            stat,
            data: data.map(Arc::from),
        }
    }

    /// The node's path, relative to the client's namespace.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = zk_recipes::ChildData::new("/a", zk_framework::Stat::default(), None);
    /// assert_eq!(d.path(), "/a");
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The node's stat as last read.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = zk_recipes::ChildData::new("/a", zk_framework::Stat::default(), None);
    /// assert_eq!(d.stat().czxid, 0);
    /// ```
    pub fn stat(&self) -> &Stat {
        &self.stat
    }

    /// The node's data as last read; `None` when the cache does not load
    /// data.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = zk_recipes::ChildData::new("/a", zk_framework::Stat::default(), Some(vec![1]));
    /// assert_eq!(d.data(), Some(&[1u8][..]));
    /// ```
    pub fn data(&self) -> Option<&[u8]> {
        self.data.as_deref()
    }
}

/// What a cache tells its listeners and channels, in the order of the
/// server's zxids.
///
/// # Examples
///
/// ```
/// use zk_recipes::{CacheEvent, ChildData};
/// let ev = CacheEvent::Created(ChildData::new("/a", zk_framework::Stat::default(), None));
/// assert_eq!(ev.path(), Some("/a"));
/// assert_eq!(CacheEvent::Initialized.path(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheEvent {
    /// A node the cache did not show exists (Curator's `NODE_CREATED`).
    Created(ChildData),
    /// A node's data changed (Curator's `NODE_CHANGED`): what the cache
    /// showed and what it shows now (the same node: the same `czxid`).
    Changed {
        /// What the cache showed.
        old: ChildData,
        /// What it shows now.
        new: ChildData,
    },
    /// A node the cache showed is gone (Curator's `NODE_DELETED`), with what
    /// it showed last.
    Deleted(ChildData),
    /// The cache has read the whole subtree and shows the server's view: at
    /// start and again after every re-synchronisation (a reconnect, a new
    /// session), after the difference it found; the freshness it leaves
    /// (`Current` when nothing waits) follows at once, told under the same
    /// lock.
    Initialized,
    /// The cache's freshness changed (see [`Freshness`]).
    Freshness(Freshness),
    /// The cache stopped following the server for good (for example the
    /// subtree grew past its limit, or its root may not be read): the error
    /// says why. Its view stays as it was, and stale.
    Failed(crate::error::Error),
}

impl CacheEvent {
    /// The path of the node the event is about, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::CacheEvent;
    /// assert_eq!(CacheEvent::Initialized.path(), None);
    /// ```
    pub fn path(&self) -> Option<&str> {
        match self {
            CacheEvent::Created(d) | CacheEvent::Deleted(d) | CacheEvent::Changed { new: d, .. } => Some(d.path()),
            _ => None,
        }
    }
}

/// The cache's nodes by path (sorted: a node's descendants follow it); the
/// key is the node's own path, not a copy.
pub(crate) type View = BTreeMap<Arc<str>, ChildData>;

/// Puts `node` in `view` under its own path.
pub(crate) fn put(view: &mut View, node: ChildData) {
    view.insert(node.path.clone(), node);
}

/// The prefix every descendant of `path` starts with.
fn child_prefix(path: &str) -> String {
    if path == "/" {
        "/".to_string()
    } else {
        format!("{path}/")
    }
}

/// The paths of `path`'s descendants in `view`, deepest first.
pub(crate) fn descendants(view: &View, path: &str) -> Vec<String> {
    let prefix = child_prefix(path);
    let mut out: Vec<String> = view
        .range::<str, _>((std::ops::Bound::Included(prefix.as_str()), std::ops::Bound::Unbounded))
        .take_while(|(p, _)| p.starts_with(&prefix))
        .filter(|(p, _)| &***p != path)
        .map(|(p, _)| p.to_string())
        .collect();
    out.sort_by(|a, b| depth(b).cmp(&depth(a)).then_with(|| a.cmp(b)));
    out
}

/// The number of components of `path` (`/` is 0).
pub(crate) fn depth(path: &str) -> usize {
    path.split('/').filter(|s| !s.is_empty()).count()
}

/// The events that take one path from `old` to `new`.
pub(crate) fn diff_node(old: Option<&ChildData>, new: Option<&ChildData>, out: &mut Vec<CacheEvent>) {
    match (old, new) {
        (None, None) => {}
        (None, Some(n)) => out.push(CacheEvent::Created(n.clone())),
        (Some(o), None) => out.push(CacheEvent::Deleted(o.clone())),
        (Some(o), Some(n)) if o.stat.czxid != n.stat.czxid => {
            out.push(CacheEvent::Deleted(o.clone()));
            out.push(CacheEvent::Created(n.clone()));
        }
        (Some(o), Some(n)) if o.stat.mzxid != n.stat.mzxid || o.stat.version != n.stat.version => {
            out.push(CacheEvent::Changed {
                old: o.clone(),
                new: n.clone(),
            });
        }
        // The same node with the same data (its children may have changed:
        // those are events of their own).
        _ => {}
    }
}

/// The order key of a re-synchronisation's event: the zxid of the change
/// (a deletion, whose zxid the server does not keep, at the latest it can
/// have happened), deletions first (deepest first), then creations
/// (shallowest first) and changes.
type Key = (i64, u8, isize, String);

/// Replaces `view` by `fresh` (the subtree read again) and returns the
/// events between them, in the order of their zxids: a creation at its
/// `czxid`, a change at its `mzxid`, a deletion just before its path's new
/// node when it was created again, else at its nearest remaining
/// ancestor's `pzxid` (the last change among that ancestor's children,
/// which is no earlier than the deletion), or after everything when no
/// ancestor remains.
pub(crate) fn resync(view: &mut View, fresh: View) -> Vec<CacheEvent> {
    let mut keyed: Vec<(Key, CacheEvent)> = Vec::new();
    let mut evs = Vec::new();
    for (p, o) in view.iter() {
        let p: &str = p;
        let n = fresh.get(p);
        evs.clear();
        diff_node(Some(o), n, &mut evs);
        for ev in evs.drain(..) {
            let key = match (&ev, n) {
                (CacheEvent::Deleted(_), Some(n)) => (n.stat.czxid, 0, -(depth(p) as isize), p.to_string()),
                (CacheEvent::Deleted(_), None) => (deletion_bound(&fresh, p), 0, -(depth(p) as isize), p.to_string()),
                (CacheEvent::Created(n), _) => (n.stat.czxid, 1, depth(p) as isize, p.to_string()),
                (CacheEvent::Changed { new, .. }, _) => (new.stat.mzxid, 1, depth(p) as isize, p.to_string()),
                _ => continue,
            };
            keyed.push((key, ev));
        }
    }
    for (p, n) in fresh.iter() {
        if !view.contains_key(p) {
            keyed.push((
                (n.stat.czxid, 1, depth(p) as isize, p.to_string()),
                CacheEvent::Created(n.clone()),
            ));
        }
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    *view = fresh;
    keyed.into_iter().map(|(_, ev)| ev).collect()
}

/// The latest zxid at which `path`, absent from `fresh`, can have been
/// deleted: its nearest ancestor's `pzxid` in `fresh`, else `i64::MAX`.
fn deletion_bound(fresh: &View, path: &str) -> i64 {
    let mut p = path;
    while let Some(i) = p.rfind('/') {
        p = if i == 0 { "/" } else { &p[..i] };
        if let Some(a) = fresh.get(p) {
            return a.stat.pzxid;
        }
        if p == "/" {
            break;
        }
    }
    i64::MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, czxid: i64, mzxid: i64, version: i32, data: &str) -> ChildData {
        ChildData::new(
            path,
            Stat {
                czxid,
                mzxid,
                pzxid: czxid,
                version,
                ..Default::default()
            },
            Some(data.as_bytes().to_vec()),
        )
    }

    fn with_pzxid(mut d: ChildData, pzxid: i64) -> ChildData {
        d.stat.pzxid = pzxid;
        d
    }

    fn view(nodes: &[ChildData]) -> View {
        nodes.iter().map(|n| (n.path.clone(), n.clone())).collect()
    }

    /// A short form of an event: `+p`, `~p`, `-p`.
    fn short(evs: &[CacheEvent]) -> Vec<String> {
        evs.iter()
            .map(|e| match e {
                CacheEvent::Created(d) => format!("+{}", d.path),
                CacheEvent::Changed { new, .. } => format!("~{}", new.path),
                CacheEvent::Deleted(d) => format!("-{}", d.path),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn diff_node_table() {
        let a1 = node("/a", 5, 5, 0, "x");
        let a1v = node("/a", 5, 9, 1, "y");
        let a2 = node("/a", 12, 12, 0, "y");
        let cases: Vec<(Option<&ChildData>, Option<&ChildData>, Vec<&str>)> = vec![
            (None, None, vec![]),
            (None, Some(&a1), vec!["+/a"]),
            (Some(&a1), None, vec!["-/a"]),
            (Some(&a1), Some(&a1), vec![]),
            (Some(&a1), Some(&a1v), vec!["~/a"]),
            // Deleted and created again, version 0 both times: judged by czxid.
            (Some(&a1), Some(&a2), vec!["-/a", "+/a"]),
        ];
        for (old, new, want) in cases {
            let mut out = Vec::new();
            diff_node(old, new, &mut out);
            assert_eq!(short(&out), want, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn a_resync_orders_the_difference_by_zxid() {
        let mut v = view(&[
            node("/r", 1, 1, 0, ""),
            node("/r/a", 2, 2, 0, "a"),
            node("/r/b", 3, 3, 0, "b"),
            node("/r/c", 4, 4, 0, "c"),
        ]);
        // While away: /r/c changed (zxid 10), /r/a deleted and created again
        // (12), /r/d created (13) with /r/d/e (14), /r/b deleted (15).
        let fresh = view(&[
            with_pzxid(node("/r", 1, 1, 0, ""), 15),
            node("/r/a", 12, 12, 0, "a2"),
            node("/r/c", 4, 10, 1, "c2"),
            node("/r/d", 13, 13, 0, ""),
            node("/r/d/e", 14, 14, 0, ""),
        ]);
        let evs = resync(&mut v, fresh.clone());
        assert_eq!(
            short(&evs),
            vec!["~/r/c", "-/r/a", "+/r/a", "+/r/d", "+/r/d/e", "-/r/b"]
        );
        assert_eq!(v, fresh);
        // Nothing changed: nothing to tell.
        assert!(resync(&mut v, fresh).is_empty());
    }

    #[test]
    fn a_resync_after_the_root_went() {
        let mut v = view(&[
            node("/r", 1, 1, 0, ""),
            node("/r/a", 2, 2, 0, ""),
            node("/r/a/b", 3, 3, 0, ""),
        ]);
        let evs = resync(&mut v, View::new());
        assert_eq!(short(&evs), vec!["-/r/a/b", "-/r/a", "-/r"]);
        assert!(v.is_empty());
        // The first load: every node, parents first.
        let fresh = view(&[
            node("/r", 1, 1, 0, ""),
            node("/r/a", 2, 2, 0, ""),
            node("/r/a/b", 3, 3, 0, ""),
        ]);
        assert_eq!(short(&resync(&mut v, fresh)), vec!["+/r", "+/r/a", "+/r/a/b"]);
    }

    #[test]
    fn descendants_are_deepest_first_and_exclude_look_alikes() {
        let v = view(&[
            node("/a", 1, 1, 0, ""),
            node("/a/b", 2, 2, 0, ""),
            node("/a/b/c", 3, 3, 0, ""),
            node("/a-x", 4, 4, 0, ""),
            node("/ab", 5, 5, 0, ""),
        ]);
        assert_eq!(descendants(&v, "/a"), vec!["/a/b/c", "/a/b"]);
        assert_eq!(descendants(&v, "/").len(), 5);
        assert_eq!(depth("/"), 0);
        assert_eq!(depth("/a/b"), 2);
    }
}
