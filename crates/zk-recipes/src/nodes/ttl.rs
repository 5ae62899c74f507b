//! [`PersistentTtlNode`]: Curator's TTL node kept alive by a touch child.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_framework::{CreateMode, CuratorFramework};

use crate::core::{Stage, Worker, STOP_BOUND};
use crate::error::Result;
use crate::nodes::node::PersistentNode;
use crate::nodes::registration::Registration;
use crate::nodes::state::{Inner, Spec, REQUEST_BOUND};

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
/// What "left behind" means for a node its close leaves to expire: a node
/// that outlives its TTL. No write (a create, a data write, a touch) is
/// begun once `close()` has begun; one already in flight may complete after
/// it (the close does not delete what it makes: a create in flight makes a
/// node that is never touched). The node is then gone at most one TTL after
/// that last write, plus two of the server's TTL check intervals (the touch
/// child's, then the node's), and that write comes within the node's
/// request bound (10 s) of the close or never.
///
/// Clones share this node; it closes at `close()` or when the last clone is
/// dropped.
///
/// A server without TTL nodes (`zookeeper.extendedTypesEnabled` off) is
/// told as [`Error::TtlNotEnabled`](crate::Error::TtlNotEnabled) by
/// [`wait_for_initial_create_for`](Self::wait_for_initial_create_for) and as
/// [`AbsentReason::TtlNotEnabled`](crate::AbsentReason::TtlNotEnabled) by
/// the registration, and nothing is sent again until a reconnect.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use std::time::Duration;
/// let node = zk_recipes::PersistentTtlNode::new(&client, "/jobs/worker-1", Duration::from_secs(30), b"busy".to_vec())?;
/// node.start()?;
/// node.wait_for_initial_create_for(Duration::from_secs(10))?;
/// node.close()?; // gone about 30 s after the last touch
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PersistentTtlNode {
    shared: Arc<Ttl>,
}

/// One TTL node, shared by its clones.
struct Ttl {
    node: PersistentNode,
    ttl: Duration,
    client: CuratorFramework,
    toucher: parking_lot::Mutex<Option<Worker>>,
}

impl Ttl {
    /// Closes the node and stops the touches, under one deadline: nothing is
    /// begun from the close on (the node's lock decides every write, the
    /// touches' included).
    fn close(&self) -> Result<()> {
        let end = Instant::now() + STOP_BOUND;
        let closing = self.node.inner.close_begin()?;
        let toucher = self.toucher.lock().take();
        if let Some(w) = &toucher {
            w.cancel();
        }
        self.node.inner.close_finish(closing, end);
        if let Some(w) = toucher {
            let _ = w.join_until(end);
        }
        Ok(())
    }
}

impl Drop for Ttl {
    fn drop(&mut self) {
        if self.node.inner.state.lock().lifecycle == Stage::Started {
            let _ = self.close();
        }
    }
}

impl std::fmt::Debug for PersistentTtlNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentTtlNode")
            .field("node", &self.shared.node)
            .field("ttl", &self.shared.ttl)
            .finish()
    }
}

impl PersistentTtlNode {
    /// A TTL node at `path` with `data` (not started).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`](crate::Error::ZooKeeper) with [`zk_framework::Error::InvalidPath`] for a
    /// bad path; [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a TTL of zero or over
    /// 2^40 - 1 ms.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let zero = std::time::Duration::ZERO;
    /// assert!(zk_recipes::PersistentTtlNode::new(&client, "/a", zero, vec![]).is_err());
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
            shared: Arc::new(Ttl {
                node: PersistentNode::from_spec(client, spec, data)?,
                ttl,
                client: client.clone(),
                toucher: parking_lot::Mutex::new(None),
            }),
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
    /// let n = zk_recipes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// n.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        let me = &self.shared;
        me.node.start()?;
        let inner = me.node.inner.clone();
        let client = me.client.clone();
        let period = (me.ttl / 2).max(Duration::from_millis(1));
        let ttl = me.ttl;
        let w = Worker::spawn(
            "PersistentTtlNode",
            &me.node.inner.spec.path,
            "ttl-node-touch",
            move |cancel| {
                let closed = client.recipe().close_signal();
                loop {
                    crossbeam_channel::select! {
                        recv(cancel) -> _ => return,
                        recv(closed) -> _ => return,
                        recv(crossbeam_channel::after(period)) -> _ => {}
                    }
                    // The node's current name (it is not sequential: its path).
                    if !touch(&client, &inner, ttl) {
                        return;
                    }
                }
            },
        );
        match w {
            Ok(w) => {
                *me.toucher.lock() = Some(w);
                Ok(())
            }
            Err(e) => {
                let _ = me.node.close();
                Err(e)
            }
        }
    }

    /// Stops the touches and the node's thread, for every clone; deletes
    /// nothing (the node expires after its TTL; see the type's doc for what
    /// a write in flight at the close may add). Returns within the stop
    /// bound (2 s).
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::close`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// n.start()?;
    /// n.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        self.shared.close()
    }

    /// As [`PersistentNode::wait_for_initial_create_for`].
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::wait_for_initial_create_for`]:
    /// [`Error::TtlNotEnabled`](crate::Error::TtlNotEnabled) when the server refuses TTL nodes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// n.start()?;
    /// match n.wait_for_initial_create_for(std::time::Duration::from_secs(5)) {
    ///     Err(zk_recipes::Error::TtlNotEnabled { .. }) => eprintln!("enable zookeeper.extendedTypesEnabled"),
    ///     r => println!("{r:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_initial_create_for(&self, timeout: Duration) -> Result<bool> {
        self.shared.node.wait_for_initial_create_for(timeout)
    }

    /// As [`PersistentNode::wait_registered_for`]: until the node is
    /// registered now.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::wait_registered_for`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// n.start()?;
    /// let now = n.wait_registered_for(std::time::Duration::from_secs(5))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_registered_for(&self, timeout: Duration) -> Result<bool> {
        self.shared.node.wait_registered_for(timeout)
    }

    /// Every change of the node's registration (see
    /// [`PersistentNode::events`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// let events = n.events();
    /// n.start()?;
    /// println!("{:?}", events.recv()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> crossbeam_channel::Receiver<Registration> {
        self.shared.node.events()
    }

    /// The node's registration (see [`PersistentNode::registration`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// println!("{:?}", n.registration());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registration(&self) -> Registration {
        self.shared.node.registration()
    }

    /// The node kept in place (its data, events, path).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentTtlNode::new(&client, "/a", std::time::Duration::from_secs(10), vec![])?;
    /// n.node().set_data(b"v2".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn node(&self) -> &PersistentNode {
        &self.shared.node
    }
}

/// Whether the node is started (every write is begun only then).
fn started(inner: &Inner) -> bool {
    inner.state.lock().lifecycle == Stage::Started
}

/// One touch: write the child, or create it (a missing node is the node's
/// thread's to re-create: ignored here). Each write is begun only while the
/// node is started: `false` once it is closed.
fn touch(client: &CuratorFramework, inner: &Inner, ttl: Duration) -> bool {
    let child = format!("{}/{TOUCH_NODE_NAME}", inner.spec.path.trim_end_matches('/'));
    let bounded = client.with_deadline(Instant::now().checked_add(ttl.min(REQUEST_BOUND)));
    let data = client.default_data().to_vec();
    if !started(inner) {
        return false;
    }
    match bounded.set_data(&child, data.clone(), None) {
        Ok(_) => {}
        Err(zk_framework::Error::NoNode { .. }) => {
            if !started(inner) {
                return false;
            }
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
    true
}
