//! [`NodeKey`]: a node as the server names it.

use std::fmt;
use std::sync::Arc;

/// A node as the server names it: the path a client was given with its
/// namespace applied (handed out by [`Recipe::node_key`]). Two
/// clients with different namespaces that name one node get equal keys;
/// the order is the server paths' order. Cheap to clone.
///
/// # Examples
///
/// ```
/// # let a = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").namespace("app").build()?;
/// # let root = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").build()?;
/// assert_eq!(a.recipe().node_key("/locks/x"), root.recipe().node_key("/app/locks/x"));
/// assert_eq!(a.recipe().node_key("/locks/x").as_str(), "/app/locks/x");
/// # Ok::<(), zk_framework::Error>(())
/// ```
///
/// [`Recipe::node_key`]: crate::recipe::Recipe::node_key
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeKey(Arc<str>);

impl NodeKey {
    pub(crate) fn new(server_path: String) -> NodeKey {
        NodeKey(server_path.into())
    }

    /// The server path.
    ///
    /// # Examples
    ///
    /// ```
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").namespace("app").build()?;
    /// assert_eq!(c.recipe().node_key("/a").as_str(), "/app/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use crate::framework::CuratorFramework;

    /// A client needs no server to hand out keys: it is built against a port
    /// nothing listens on, and closed.
    fn client(namespace: Option<&str>) -> CuratorFramework {
        let b = CuratorFramework::builder().connect_string("127.0.0.1:1");
        let b = match namespace {
            Some(ns) => b.namespace(ns),
            None => b,
        };
        b.build().expect("a client builds without a server")
    }

    #[test]
    fn one_node_has_one_key_whatever_the_namespace() {
        let app = client(Some("app"));
        let root = client(None);
        let other = client(Some("other"));
        assert_eq!(
            app.recipe().node_key("/locks/x"),
            root.recipe().node_key("/app/locks/x")
        );
        assert_eq!(app.recipe().node_key("/locks/x").as_str(), "/app/locks/x");
        assert_eq!(app.recipe().node_key("/locks/x").to_string(), "/app/locks/x");
        assert_ne!(app.recipe().node_key("/locks/x"), other.recipe().node_key("/locks/x"));
        assert!(
            root.recipe().node_key("/a") < root.recipe().node_key("/b"),
            "ordered as the server paths"
        );
        for c in [app, root, other] {
            c.close();
        }
    }
}
