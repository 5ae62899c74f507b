//! [`PersistentTtlNode`]: Curator's TTL node kept alive by a touch child.

use std::time::{Duration, Instant};

use zk_framework::{CreateMode, CuratorFramework};

use super::{PersistentNode, Registration, Spec};
use crate::core::Worker;
use crate::error::Result;

/// The touch child's name (Curator's `DEFAULT_CHILD_NODE_NAME`).
pub const TOUCH_NODE_NAME: &str = "touch";

/// A node that lives while this process touches it and expires after its
/// TTL once nobody does (Curator's `PersistentTtlNode`, in the layout of
/// Curator 5.9: the node itself is `PERSISTENT_WITH_TTL`, not a container
/// that could be left behind forever when the process dies before its first
/// touch, CURATOR-545). A child `touch` (`PERSISTENT_WITH_TTL`, the same
/// TTL) is written every half TTL, so the node has a child, and the server
/// never reaps it, while someone touches. [`close`](Self::close) deletes
/// nothing: it stops the touches, the child expires after the TTL and the
/// node after it (the server's container and TTL check interval on top).
/// The node is kept in place by a [`PersistentNode`] (its registration, its
/// re-creation, its data).
///
/// A server without TTL nodes (`zookeeper.extendedTypesEnabled` off) is
/// told as [`Error::TtlNotEnabled`] by
/// [`wait_for_initial_create_for`](Self::wait_for_initial_create_for) and as
/// [`AbsentReason::TtlNotEnabled`](super::AbsentReason::TtlNotEnabled) by
/// the registration, and nothing is sent again until a reconnect.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use std::time::Duration;
/// let node = zk_recipes::nodes::PersistentTtlNode::new(&client, "/jobs/worker-1", Duration::from_secs(30), b"busy".to_vec())?;
/// node.start()?;
/// node.wait_for_initial_create_for(Duration::from_secs(10))?;
/// node.close()?; // gone about 30 s after the last touch
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PersistentTtlNode {
    node: PersistentNode,
    ttl: Duration,
    client: CuratorFramework,
    toucher: parking_lot::Mutex<Option<Worker>>,
}

impl std::fmt::Debug for PersistentTtlNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentTtlNode")
            .field("node", &self.node)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl PersistentTtlNode {
    /// A TTL node at `path` with `data` (not started).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] with [`zk_framework::Error::InvalidPath`] for a
    /// bad path; [`Error::InvalidArgument`] for a TTL of zero or over
    /// 2^40 - 1 ms.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let zero = std::time::Duration::ZERO;
    /// assert!(zk_recipes::nodes::PersistentTtlNode::new(&client, "/a", zero, vec![]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, ttl: Duration, data: Vec<u8>) -> Result<PersistentTtlNode> {
        let spec = Spec {
            recipe: "PersistentTtlNode",
            path: path.to_string(),
            mode: CreateMode::PersistentWithTtl,
            protected: false,
            ttl: Some(ttl),
            parents: true,
            delete_on_close: false,
        };
        Ok(PersistentTtlNode {
            node: PersistentNode::from_spec(client, spec, data)?,
            ttl,
            client: client.clone(),
            toucher: parking_lot::Mutex::new(None),
        })
    }

    /// Starts keeping the node in place and touching it every half TTL.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::start`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// n.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        self.node.start()?;
        let inner = self.node.inner.clone();
        let client = self.client.clone();
        let period = (self.ttl / 2).max(Duration::from_millis(1));
        let ttl = self.ttl;
        let w = Worker::spawn(
            "PersistentTtlNode",
            &self.node.inner.spec.path,
            "ttl-node-touch",
            move |cancel| {
                let closed = client.close_signal();
                loop {
                    crossbeam_channel::select! {
                        recv(cancel) -> _ => return,
                        recv(closed) -> _ => return,
                        recv(crossbeam_channel::after(period)) -> _ => {}
                    }
                    // The node's current name (it is not sequential: its path).
                    let path = inner.spec.path.clone();
                    touch(&client, &path, ttl);
                }
            },
        );
        match w {
            Ok(w) => {
                *self.toucher.lock() = Some(w);
                Ok(())
            }
            Err(e) => {
                let _ = self.node.close();
                Err(e)
            }
        }
    }

    /// Stops the touches and the node's thread; deletes nothing (the node
    /// expires after its TTL).
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::close`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// n.start()?;
    /// n.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        let r = self.node.close();
        if let Some(w) = self.toucher.lock().take() {
            w.stop();
        }
        r
    }

    /// As [`PersistentNode::wait_for_initial_create_for`].
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::wait_for_initial_create_for`]:
    /// [`Error::TtlNotEnabled`] when the server refuses TTL nodes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// n.start()?;
    /// match n.wait_for_initial_create_for(std::time::Duration::from_secs(5)) {
    ///     Err(zk_recipes::Error::TtlNotEnabled { .. }) => eprintln!("enable zookeeper.extendedTypesEnabled"),
    ///     r => println!("{r:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_initial_create_for(&self, timeout: Duration) -> Result<bool> {
        self.node.wait_for_initial_create_for(timeout)
    }

    /// The node's registration (see [`PersistentNode::registration`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// println!("{:?}", n.registration());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registration(&self) -> Registration {
        self.node.registration()
    }

    /// The node kept in place (its data, events, path).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// n.node().set_data(b"v2".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn node(&self) -> &PersistentNode {
        &self.node
    }
}

impl Drop for PersistentTtlNode {
    fn drop(&mut self) {
        if let Some(w) = self.toucher.lock().take() {
            w.stop();
        }
    }
}

/// One touch: write the child, or create it (a missing node is the node's
/// thread's to re-create: ignored here).
fn touch(client: &CuratorFramework, path: &str, ttl: Duration) {
    let child = format!("{}/{TOUCH_NODE_NAME}", path.trim_end_matches('/'));
    let bounded = client.with_deadline(Instant::now().checked_add(ttl.min(Duration::from_secs(10))));
    let data = client.default_data().to_vec();
    match bounded.set_data(&child, data.clone(), None) {
        Ok(_) => {}
        Err(zk_framework::Error::NoNode { .. }) => {
            match bounded
                .create()
                .with_mode(CreateMode::PersistentWithTtl)
                .with_ttl(ttl)
                .with_data(data)
                .for_path(&child)
            {
                Ok(_) | Err(zk_framework::Error::NodeExists { .. }) | Err(zk_framework::Error::NoNode { .. }) => {}
                Err(e) => log::debug!("touching {child}: {e}"),
            }
        }
        Err(e) => log::debug!("touching {child}: {e}"),
    }
}
