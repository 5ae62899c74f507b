//! A cache's settings ([`Options`]): which paths it follows and keeps, and
//! its bounds; what [`CuratorCacheBuilder`](crate::CuratorCacheBuilder) describes.

use std::sync::Arc;

use super::view;

/// Which paths a cache keeps.
type Filter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// A cache's settings.
#[derive(Clone)]
pub(crate) struct Options {
    /// How deep below the root the cache follows (`Some(0)`: the root only,
    /// on a non-recursive watch); `None`: the whole subtree.
    pub max_depth: Option<usize>,
    pub load_data: bool,
    /// Data is gzip (Curator's `COMPRESSED_DATA`): inflated when read.
    pub compressed: bool,
    pub clear_on_close: bool,
    pub max_nodes: usize,
    pub filter: Option<Filter>,
}

impl Options {
    /// Whether `path` (under the root at `root_depth`) is followed at all.
    pub(crate) fn follows(&self, root: &str, path: &str) -> bool {
        let under = path == root
            || (root == "/" && path.starts_with('/'))
            || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'));
        under
            && self
                .max_depth
                .map_or(true, |d| view::depth(path) - view::depth(root) <= d)
    }

    /// Whether `path`'s children are followed.
    pub(crate) fn lists(&self, root: &str, path: &str) -> bool {
        self.max_depth
            .map_or(true, |d| view::depth(path) - view::depth(root) < d)
    }

    /// Whether `path` is kept (the filter).
    pub(crate) fn keeps(&self, path: &str) -> bool {
        self.filter.as_ref().map_or(true, |f| f(path))
    }
}
