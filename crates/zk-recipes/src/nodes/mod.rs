//! Nodes that come back: [`PersistentNode`] (Curator's layout and modes), a
//! node kept in place by a thread of its own, re-created after a session
//! loss, after someone deletes it and when its parent vanishes, with an
//! honest [`Registration`]; [`PersistentTtlNode`] (a TTL node kept alive by
//! a touch child); [`GroupMember`] (a member of a group, with the group read
//! from a cache).
//!
//! # What `Registered` means
//!
//! A node is [`Registration::Registered`] only while the server has shown
//! it, in the client's current connection epoch
//! ([`CuratorFramework::connection_epoch`]), to exist (and, for an ephemeral
//! node, to be owned by the client's current session), with a watch on it
//! set by that same request, and the connection is up and answering. The
//! same proof the locks ask after a reconnect: a reconnect alone proves
//! nothing (a node deleted while the client was away is told one round trip
//! later), so after one the registration is
//! [`Uncertain`](Registration::Uncertain) until an `exists` sent on the new
//! connection has answered. A session that expired takes an ephemeral node
//! with it: [`Absent`](Registration::Absent) at once, until the node is
//! created again on the new session. What remains is one notification's
//! flight: a node deleted on the server is `Registered` here until the
//! deletion's notification arrives (or the connection is seen to fail).
//!
//! # What a close leaves
//!
//! Nothing. `close()` deletes the node (a [`PersistentTtlNode`] excepted: it
//! is left to expire), and no create is begun once `close()` has begun: the
//! node's thread decides to create under the node's lock, and a closed node
//! decides nothing. A create already in flight when `close()` begins (its
//! reply not yet in) is the thread's to clean up: the thread that gets the
//! reply deletes the node it made (a guaranteed delete, which goes on in the
//! background until the client closes), whether `close()` is still waiting
//! for it or has returned. A create whose outcome stays unknown is cleaned
//! up by its protected name (the default for the sequential modes), or,
//! for a node of fixed name, by a look at that name (deleted when ours: an
//! ephemeral node owned by our session, a persistent one at our path). An
//! unprotected sequential node whose create's reply is lost for good cannot
//! be found: that is what protection is for. `close()` itself waits at most
//! the stop bound (2 s) for the thread; an ephemeral node goes with its
//! session in any case, a persistent one needs the client open until its
//! delete is through.
//!
//! # Compared with Curator's `PersistentNode`
//!
//! * The same node names and modes; a sequential node keeps its first name
//!   across re-creations (Curator's "name stability"), a protected one its
//!   `_c_<uuid>-` prefix.
//! * `set_data` before the first create is kept and used for it (Curator
//!   throws, CURATOR-310); it is kept across re-creations.
//! * An ephemeral node at our path owned by another session is not taken
//!   over (Curator overwrites its data and later deletes it): the
//!   registration says [`AbsentReason::OwnedByAnotherSession`] and the node
//!   is created as ours once that one goes (its deletion is watched).
//! * A server that refuses a TTL node (`zookeeper.extendedTypesEnabled` off)
//!   is told once ([`AbsentReason::TtlNotEnabled`], and
//!   [`Error::TtlNotEnabled`] from the initial
//!   wait) instead of Curator's ~1,100 creates per second; a missing parent
//!   (without parent creation) is watched and the node created when it
//!   appears (Curator waits for a reconnect).
//!
//! [`CuratorFramework::connection_epoch`]: zk_framework::CuratorFramework::connection_epoch

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use zk_framework::{CreateMode, CuratorFramework};

use crate::core::{Stage, Subscribers, Worker};
use crate::error::{Error, Result};

mod builder;
mod group;
mod keeper;
mod metrics;
mod registration;
mod ttl;

pub use builder::PersistentNodeBuilder;
pub use group::{GroupMember, MemberEvent};
pub use registration::{AbsentReason, Registration, UncertainReason};
pub use ttl::PersistentTtlNode;

/// How long a node's thread waits for each request (then tries again).
const REQUEST_BOUND: Duration = Duration::from_secs(10);

/// What the node's thread last learnt from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fact {
    /// Nothing yet (or a failure that says nothing about the node).
    Unknown,
    /// Shown present (and ours) by a request sent and answered in `epoch`.
    Proven { epoch: u64, generation: u64 },
    /// Shown absent, or refused, for a reason.
    Absent(AbsentReason),
}

struct State {
    lifecycle: Stage,
    /// The data to keep on the node.
    data: Vec<u8>,
    /// Whether `data` must still be written to the present node.
    data_dirty: bool,
    /// The node's path once created (a sequential node's full name).
    path: Option<String>,
    fact: Fact,
    /// Whether a create (or a take-over of our own node) succeeded once.
    created_once: bool,
    /// Our node is at `path`, created or shown ours on the session of this
    /// generation, and not shown gone or another session's since: what the
    /// close deletes.
    owned: Option<u64>,
    /// Creates that succeeded (re-creates included).
    creates: u64,
    /// Whether a create is in flight: decided (under this lock, while
    /// started) and not yet answered. A close that finds one leaves the node
    /// it makes to the thread that gets its reply.
    creating: bool,
    /// What the channels were last told.
    told: Option<Registration>,
    /// The receivers of [`PersistentNode::events`].
    subscribers: Subscribers<Registration>,
    /// The receivers of [`GroupMember::events`] (a member's node tells its
    /// registration there too, under this lock, and its group's cache its
    /// changes).
    members: Subscribers<MemberEvent>,
}

/// The settings of a node.
#[derive(Clone)]
pub(crate) struct Spec {
    /// The recipe's type, for its errors (`"PersistentNode"`,
    /// `"PersistentTtlNode"`, `"GroupMember"`).
    pub(crate) recipe: &'static str,
    pub(crate) path: String,
    pub(crate) mode: CreateMode,
    pub(crate) protected: bool,
    pub(crate) ttl: Option<Duration>,
    pub(crate) parents: bool,
    /// Whether `close()` deletes the node (a TTL node's is left to expire).
    pub(crate) delete_on_close: bool,
}

pub(crate) struct Inner {
    client: CuratorFramework,
    spec: Spec,
    state: Mutex<State>,
    changed: Condvar,
    /// Wakes the node's thread (a state changed, new data).
    wake: (Sender<()>, Receiver<()>),
    /// A watch on the node (or its parent) fired: look again.
    fired: (Sender<()>, Receiver<()>),
    worker: Mutex<Option<Worker>>,
    metrics: metrics::Handles,
}

/// A node kept in place (Curator's `PersistentNode`): created at
/// [`start`](Self::start), re-created after a session loss, after someone
/// deletes it and when its parent vanishes, with its data kept across
/// re-creations; its [`registration`](Self::registration) says honestly
/// whether it is in place (see the [module doc](self)), and every change is
/// told on [`events`](Self::events). A close leaves nothing behind, not even
/// what a create in flight at `close()` makes (see the
/// [module doc](self#what-a-close-leaves)). Clones share this node; it
/// closes at `close()` or when the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_framework::CreateMode;
/// use zk_recipes::nodes::PersistentNode;
///
/// let node = PersistentNode::builder(&client, "/services/api/host-1", CreateMode::Ephemeral)
///     .data(b"10.0.0.1:8080".to_vec())
///     .build()?;
/// node.start()?;
/// assert!(node.wait_for_initial_create_for(Duration::from_secs(10))?);
/// assert!(node.registration().is_registered());
/// node.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PersistentNode {
    inner: Arc<Inner>,
    /// Shared by the clones only (the node's thread holds `inner`): the last
    /// one dropped closes the node.
    _owner: Arc<Owner>,
}

/// Closes the node when the last clone goes.
struct Owner(Arc<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        if self.0.state.lock().lifecycle == Stage::Started {
            let _ = self.0.close();
        }
    }
}

impl std::fmt::Debug for PersistentNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentNode")
            .field("path", &self.inner.spec.path)
            .field("mode", &self.inner.spec.mode)
            .field("registration", &self.registration())
            .finish()
    }
}

impl PersistentNode {
    /// A builder for a node at `path` in `mode` (for a sequential mode,
    /// `path` is the prefix of the name).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(client: &CuratorFramework, path: &str, mode: CreateMode) -> PersistentNodeBuilder {
        PersistentNodeBuilder {
            client: client.clone(),
            spec: Spec {
                recipe: "PersistentNode",
                path: path.to_string(),
                mode,
                protected: mode.is_sequential(),
                ttl: None,
                parents: true,
                delete_on_close: true,
            },
            data: client.default_data().to_vec(),
        }
    }

    pub(crate) fn from_spec(client: &CuratorFramework, spec: Spec, data: Vec<u8>) -> Result<PersistentNode> {
        PersistentNodeBuilder {
            client: client.clone(),
            spec,
            data,
        }
        .build()
    }

    pub(crate) fn from_inner(inner: Arc<Inner>) -> PersistentNode {
        PersistentNode {
            _owner: Arc::new(Owner(inner.clone())),
            inner,
        }
    }

    /// Starts the node's thread, which creates the node (waiting for a
    /// connection) and keeps it in place. Returns at once.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] when started before;
    /// [`Error::Closed`] after `close()`; [`Error::SpawnFailed`] when the
    /// system refuses a thread (the node is closed then).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// assert!(n.start().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        {
            let mut st = self.inner.state.lock();
            let spec = &self.inner.spec;
            st.lifecycle.start(spec.recipe, &spec.path)?;
        }
        let inner = self.inner.clone();
        let spec = &self.inner.spec;
        match Worker::spawn(spec.recipe, &spec.path, "persistent-node", move |cancel| {
            inner.run(&cancel)
        }) {
            Ok(w) => {
                *self.inner.worker.lock() = Some(w);
                self.inner.publish();
                Ok(())
            }
            Err(e) => {
                let mut st = self.inner.state.lock();
                st.lifecycle = Stage::Closed;
                self.inner.publish_locked(&mut st);
                st.subscribers.close();
                st.members.close();
                Err(e)
            }
        }
    }

    /// Leaves, for every clone: stops the node's thread and deletes the
    /// node (only a node this client created or showed ours: an ephemeral
    /// node of another session is never deleted; a delete that fails goes on
    /// in the background as a guaranteed delete). No create is begun once
    /// the close has begun, and a create in flight is deleted by the thread
    /// that gets its reply (see the [module doc](self#what-a-close-leaves)).
    /// Every event channel ends, after `Absent { Closed }`. Returns within
    /// the stop bound (2 s); a delete not through by then goes on in the
    /// background.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`] when never started; [`Error::Closed`] when
    /// closed before.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// n.close()?;
    /// assert!(n.close().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }

    /// Waits until the node was created (or our node found in place) once
    /// ever: `Ok(true)` from then on, even while the node is gone again (a
    /// session expiry, a delete); `Ok(false)` when `timeout` passes first.
    /// To wait until the node is in place now, use
    /// [`wait_registered_for`](Self::wait_registered_for).
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`]; [`Error::Closed`] (also when closed while
    /// waiting); [`Error::TtlNotEnabled`] when the server refuses TTL nodes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// if !n.wait_for_initial_create_for(std::time::Duration::from_secs(5))? { eprintln!("not yet") }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_initial_create_for(&self, timeout: Duration) -> Result<bool> {
        self.wait_for_initial_create_until_opt(Instant::now().checked_add(timeout))
    }

    /// As [`wait_for_initial_create_for`](Self::wait_for_initial_create_for),
    /// until `deadline`.
    ///
    /// # Errors
    ///
    /// As [`wait_for_initial_create_for`](Self::wait_for_initial_create_for).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// let done = n.wait_for_initial_create_until(std::time::Instant::now() + std::time::Duration::from_secs(5))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_initial_create_until(&self, deadline: Instant) -> Result<bool> {
        self.wait_for_initial_create_until_opt(Some(deadline))
    }

    fn wait_for_initial_create_until_opt(&self, deadline: Option<Instant>) -> Result<bool> {
        let inner = &self.inner;
        let mut st = inner.state.lock();
        loop {
            st.lifecycle.check(inner.spec.recipe, &inner.spec.path)?;
            if st.created_once {
                return Ok(true);
            }
            if st.fact == Fact::Absent(AbsentReason::TtlNotEnabled) {
                return Err(Error::TtlNotEnabled {
                    path: inner.spec.path.clone(),
                });
            }
            match deadline {
                Some(d) if d <= Instant::now() => return Ok(false),
                Some(d) => {
                    let _ = inner.changed.wait_until(&mut st, d);
                }
                None => inner.changed.wait(&mut st),
            }
        }
    }

    /// Waits until the node is registered now (its
    /// [`registration`](Self::registration) says
    /// [`Registered`](Registration::Registered)): `Ok(true)` then,
    /// `Ok(false)` when `timeout` passes first. Unlike
    /// [`wait_for_initial_create_for`](Self::wait_for_initial_create_for),
    /// a node created once and gone since (deleted, its session expired, the
    /// connection down or not yet proven) is waited for again.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`]; [`Error::Closed`] (also when closed while
    /// waiting); [`Error::TtlNotEnabled`] when the server refuses TTL nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// # client.block_until_connected(std::time::Duration::from_secs(10))?;
    /// use std::time::Duration;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// assert!(n.wait_registered_for(Duration::from_secs(10))?);
    /// client.delete().for_path("/a")?; // gone: waited for again until it is back
    /// assert!(n.wait_registered_for(Duration::from_secs(10))?);
    /// assert!(n.registration().is_registered());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_registered_for(&self, timeout: Duration) -> Result<bool> {
        self.wait_registered_until_opt(Instant::now().checked_add(timeout))
    }

    /// As [`wait_registered_for`](Self::wait_registered_for), until
    /// `deadline`.
    ///
    /// # Errors
    ///
    /// As [`wait_registered_for`](Self::wait_registered_for).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// let now = n.wait_registered_until(std::time::Instant::now() + std::time::Duration::from_secs(5))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_registered_until(&self, deadline: Instant) -> Result<bool> {
        self.wait_registered_until_opt(Some(deadline))
    }

    fn wait_registered_until_opt(&self, deadline: Option<Instant>) -> Result<bool> {
        let inner = &self.inner;
        let mut st = inner.state.lock();
        loop {
            st.lifecycle.check(inner.spec.recipe, &inner.spec.path)?;
            // Drawn from the client's state now: a change of it (a
            // reconnect, the health) publishes and wakes this wait.
            if inner.registration(&st).is_registered() {
                return Ok(true);
            }
            if st.fact == Fact::Absent(AbsentReason::TtlNotEnabled) {
                return Err(Error::TtlNotEnabled {
                    path: inner.spec.path.clone(),
                });
            }
            match deadline {
                Some(d) if d <= Instant::now() => return Ok(false),
                Some(d) => {
                    let _ = inner.changed.wait_until(&mut st, d);
                }
                None => inner.changed.wait(&mut st),
            }
        }
    }

    /// Whether the node is in place now (see the [module doc](self)),
    /// answered locally.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// println!("{:?}", n.registration());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registration(&self) -> Registration {
        self.inner.registration(&self.inner.state.lock())
    }

    /// Every change of [`registration`](Self::registration) from now on, in
    /// order, starting with where it stands; the channel ends at close (after
    /// `Absent { Closed }`; one asked for after the close is ended at once).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// let events = n.events();
    /// n.start()?;
    /// println!("{:?}", events.recv()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<Registration> {
        let mut st = self.inner.state.lock();
        let now = self.inner.registration(&st);
        st.subscribers.subscribe_with(now)
    }

    /// Sets the node's data: kept for every re-creation, and written to the
    /// node in place by the node's thread at once (an unversioned write,
    /// as Curator's). Before the first create, it is the data created with.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] after `close()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.set_data(b"v2".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_data(&self, data: Vec<u8>) -> Result<()> {
        let mut st = self.inner.state.lock();
        if st.lifecycle == Stage::Closed {
            return Err(self.inner.closed_error());
        }
        st.data = data;
        st.data_dirty = true;
        drop(st);
        let _ = self.inner.wake.0.try_send(());
        Ok(())
    }

    /// The data kept for the node.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral)
    ///     .data(b"x".to_vec())
    ///     .build()?;
    /// assert_eq!(n.data(), b"x");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data(&self) -> Vec<u8> {
        self.inner.state.lock().data.clone()
    }

    /// The node's actual path once created (a sequential or protected
    /// node's full name); `None` before.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// assert_eq!(n.actual_path(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn actual_path(&self) -> Option<String> {
        self.inner.state.lock().path.clone()
    }

    /// How many creates succeeded so far (the first and every re-creation).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// assert_eq!(n.creates(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn creates(&self) -> u64 {
        self.inner.state.lock().creates
    }
}
