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
use zk_framework::proto::ErrorCode;
use zk_framework::{ConnectionState, CreateMode, CuratorFramework, SessionHealth};

use crate::error::{Error, Result};
use crate::worker::Worker;

mod group;
mod ttl;

pub use group::GroupMember;
pub use ttl::PersistentTtlNode;

/// How long a node's thread waits for each request (then tries again).
const REQUEST_BOUND: Duration = Duration::from_secs(10);
/// The first and the longest pause before a failed request is repeated.
const RETRY_PAUSE: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(2));
/// How long `close()` waits for the node's thread.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Whether a node is in place, as far as this process can know.
///
/// # Examples
///
/// ```
/// use zk_recipes::nodes::{AbsentReason, Registration};
/// let r = Registration::Absent { why: AbsentReason::NotStarted };
/// assert!(!r.is_registered());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Registration {
    /// The server has shown the node in the current connection epoch (owned
    /// by the current session, for an ephemeral node) and the connection is
    /// up and answering.
    Registered {
        /// The node's path (the client's, without its namespace).
        path: String,
    },
    /// The node may or may not be there: the connection is down, silent or
    /// read-only, or it came back and the server has not yet shown the node
    /// again, or the node has not been created yet.
    Uncertain {
        /// Why it is not known.
        why: UncertainReason,
    },
    /// The node is not in place, and why.
    Absent {
        /// Why.
        why: AbsentReason,
    },
}

impl Registration {
    /// Whether this is `Registered`.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = zk_recipes::nodes::Registration::Registered { path: "/services/a".into() };
    /// assert!(r.is_registered());
    /// ```
    pub fn is_registered(&self) -> bool {
        matches!(self, Registration::Registered { .. })
    }
}

/// Why a registration is [`Registration::Uncertain`].
///
/// # Examples
///
/// ```
/// let why = zk_recipes::nodes::UncertainReason::Disconnected;
/// assert_ne!(why, zk_recipes::nodes::UncertainReason::Unproven);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UncertainReason {
    /// The connection is down or read-only.
    Disconnected,
    /// No request has been answered for a read timeout (the process may
    /// have been paused, or the connection died unseen).
    Silent,
    /// The connection moved on (a reconnect, a stale spell) and the server
    /// has not yet shown the node on it; or the first look is under way.
    Unproven,
}

/// Why a registration is [`Registration::Absent`].
///
/// # Examples
///
/// ```
/// let why = zk_recipes::nodes::AbsentReason::Deleted;
/// assert_eq!(format!("{why:?}"), "Deleted");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AbsentReason {
    /// `start()` has not been called.
    NotStarted,
    /// The node was closed (and deleted, unless it is a TTL node).
    Closed,
    /// The session that owned the ephemeral node expired; it is created
    /// again on the new session.
    SessionExpired,
    /// The server showed the node gone (someone deleted it, or its parent);
    /// it is being created again.
    Deleted,
    /// An ephemeral node at the path belongs to another session; ours is
    /// created when that one goes.
    OwnedByAnotherSession {
        /// The other session's id.
        owner: i64,
    },
    /// The parent is missing and parent creation is off; the node is
    /// created when the parent appears.
    ParentMissing,
    /// The ACL forbids the create; tried again after a reconnect or a
    /// `set_data`.
    NoAuth,
    /// The server does not allow TTL nodes (its
    /// `zookeeper.extendedTypesEnabled` is off).
    TtlNotEnabled,
    /// The server refused the create for another reason (tried again with
    /// a growing pause).
    Refused(zk_framework::Error),
}

/// Where a node is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Latent,
    Started,
    Closed,
}

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
    lifecycle: Lifecycle,
    /// The data to keep on the node.
    data: Vec<u8>,
    /// Whether `data` must still be written to the present node.
    data_dirty: bool,
    /// The node's path once created (a sequential node's full name).
    path: Option<String>,
    fact: Fact,
    /// Whether a create (or a take-over of our own node) succeeded once.
    created_once: bool,
    /// Creates that succeeded (re-creates included).
    creates: u64,
    /// What the channels were last told.
    told: Option<Registration>,
    subscribers: Vec<Sender<Registration>>,
}

/// The settings of a node.
#[derive(Clone)]
pub(crate) struct Spec {
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
}

/// A node kept in place (Curator's `PersistentNode`): created at
/// [`start`](Self::start), re-created after a session loss, after someone
/// deletes it and when its parent vanishes, with its data kept across
/// re-creations; its [`registration`](Self::registration) says honestly
/// whether it is in place (see the [module doc](self)), and every change is
/// told on [`events`](Self::events). Dropping a started node closes it.
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
pub struct PersistentNode {
    inner: Arc<Inner>,
}

/// Builds a [`PersistentNode`]: [`PersistentNode::builder`].
#[must_use = "a builder does nothing until build()"]
pub struct PersistentNodeBuilder {
    client: CuratorFramework,
    spec: Spec,
    data: Vec<u8>,
}

impl std::fmt::Debug for PersistentNodeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentNodeBuilder")
            .field("path", &self.spec.path)
            .field("mode", &self.spec.mode)
            .field("protected", &self.spec.protected)
            .finish()
    }
}

impl PersistentNodeBuilder {
    /// The node's data (default: the client's default data).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral)
    ///     .data(b"x".to_vec())
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data(mut self, data: Vec<u8>) -> Self {
        self.data = data;
        self
    }

    /// Protected names (`_c_<uuid>-` before the name; Curator's
    /// `useProtection`): a create whose reply was lost is found again
    /// instead of leaving a second node. On by default for the sequential
    /// modes (where a lost reply would otherwise leave an orphan node), off
    /// for the others (a fixed name is found by its path).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a/n-", zk_framework::CreateMode::EphemeralSequential)
    ///     .protected(true)
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn protected(mut self, on: bool) -> Self {
        self.spec.protected = on;
        self
    }

    /// The TTL of a TTL mode (required for them, refused for the others).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::PersistentWithTtl)
    ///     .ttl(std::time::Duration::from_secs(30))
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.spec.ttl = Some(ttl);
        self
    }

    /// Whether missing parents are created (as containers; default on).
    /// Off: a missing parent is watched and the node created when it appears.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::nodes::PersistentNode::builder(&client, "/a/b", zk_framework::CreateMode::Ephemeral)
    ///     .parent_creation(false)
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parent_creation(mut self, on: bool) -> Self {
        self.spec.parents = on;
        self
    }

    /// The node (not started).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] with [`zk_framework::Error::InvalidPath`] for a
    /// path that breaks ZooKeeper's rules; [`Error::InvalidArgument`] for the
    /// container mode (a container is the server's to delete), a TTL mode
    /// without a TTL or with one of zero or over 2^40 - 1 ms, or a TTL on a
    /// mode without one.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::CreateMode;
    /// assert!(zk_recipes::nodes::PersistentNode::builder(&client, "/a", CreateMode::PersistentWithTtl).build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<PersistentNode> {
        check_spec(&self.spec)?;
        Ok(PersistentNode {
            inner: Arc::new(Inner {
                client: self.client,
                spec: self.spec,
                state: Mutex::new(State {
                    lifecycle: Lifecycle::Latent,
                    data: self.data,
                    data_dirty: false,
                    path: None,
                    fact: Fact::Unknown,
                    created_once: false,
                    creates: 0,
                    told: None,
                    subscribers: Vec::new(),
                }),
                changed: Condvar::new(),
                wake: crossbeam_channel::bounded(1),
                fired: crossbeam_channel::bounded(1),
                worker: Mutex::new(None),
            }),
        })
    }
}

/// The largest TTL a server accepts (2^40 - 1 ms).
pub(crate) const MAX_TTL: Duration = Duration::from_millis((1 << 40) - 1);

fn check_spec(spec: &Spec) -> Result<()> {
    zk_framework::proto::path::validate_path(&spec.path, spec.mode.is_sequential())
        .map_err(zk_framework::Error::from)?;
    if spec.path == "/" {
        return Err(Error::InvalidArgument("a persistent node cannot be the root".into()));
    }
    if spec.mode.is_container() {
        return Err(Error::InvalidArgument(
            "a persistent node cannot be a container (the server deletes an empty container)".into(),
        ));
    }
    match (spec.mode.is_ttl(), spec.ttl) {
        (true, None) => Err(Error::InvalidArgument(format!("{:?} needs a TTL", spec.mode))),
        (true, Some(t)) if t.is_zero() || t > MAX_TTL => Err(Error::InvalidArgument(format!(
            "a TTL must be between 1 ms and 2^40 - 1 ms, not {t:?}"
        ))),
        (false, Some(_)) => Err(Error::InvalidArgument(format!("{:?} takes no TTL", spec.mode))),
        _ => Ok(()),
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

    /// Starts the node's thread, which creates the node (waiting for a
    /// connection) and keeps it in place. Returns at once.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] when started before;
    /// [`Error::NodeClosed`] after `close()`; [`Error::InvalidArgument`]
    /// when the system refuses a thread.
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
            match st.lifecycle {
                Lifecycle::Latent => st.lifecycle = Lifecycle::Started,
                Lifecycle::Started => {
                    return Err(Error::AlreadyStarted {
                        path: self.inner.spec.path.clone(),
                    })
                }
                Lifecycle::Closed => return Err(self.inner.closed_error()),
            }
        }
        let inner = self.inner.clone();
        match Worker::spawn("persistent-node", move |cancel| inner.run(&cancel)) {
            Ok(w) => {
                *self.inner.worker.lock() = Some(w);
                self.inner.publish();
                Ok(())
            }
            Err(e) => {
                self.inner.state.lock().lifecycle = Lifecycle::Closed;
                Err(Error::InvalidArgument(format!("cannot start the node's thread: {e}")))
            }
        }
    }

    /// Leaves: stops the node's thread and deletes the node (only a node
    /// this client created or showed ours: an ephemeral node of another
    /// session is never deleted; a delete that fails goes on in the
    /// background as a guaranteed delete). Every event channel ends.
    /// Returns within about 2 s plus one request's bound.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`] when never started; [`Error::NodeClosed`] when
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

    /// Waits until the node was created (or our node found in place) once:
    /// `Ok(true)`; `Ok(false)` when `timeout` passes first.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`]; [`Error::NodeClosed`] (also when closed while
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
            match st.lifecycle {
                Lifecycle::Latent => {
                    return Err(Error::NotStarted {
                        path: inner.spec.path.clone(),
                    })
                }
                Lifecycle::Closed => return Err(inner.closed_error()),
                Lifecycle::Started => {}
            }
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
    /// `Absent { Closed }`).
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
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut st = self.inner.state.lock();
        let now = self.inner.registration(&st);
        let _ = tx.send(now);
        if st.lifecycle != Lifecycle::Closed {
            st.subscribers.push(tx);
        }
        rx
    }

    /// Sets the node's data: kept for every re-creation, and written to the
    /// node in place by the node's thread at once (an unversioned write,
    /// as Curator's). Before the first create, it is the data created with.
    ///
    /// # Errors
    ///
    /// [`Error::NodeClosed`] after `close()`.
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
        if st.lifecycle == Lifecycle::Closed {
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

impl Drop for PersistentNode {
    fn drop(&mut self) {
        if self.inner.state.lock().lifecycle == Lifecycle::Started {
            let _ = self.inner.close();
        }
    }
}

/// What the node's thread does after a step.
enum Next {
    /// Wait for a wake (a watch, a state change, new data, the close).
    Wait,
    /// Take another step at once.
    Again,
    /// Try again after a pause (or a wake).
    Retry,
}

impl Inner {
    /// A watch that only wakes the node's thread (to look again).
    fn watcher(&self) -> impl FnOnce(zk_framework::WatchedEvent) + Send + 'static {
        let wake = self.fired.0.clone();
        move |_| {
            let _ = wake.try_send(());
        }
    }

    fn closed_error(&self) -> Error {
        Error::NodeClosed {
            path: self.spec.path.clone(),
        }
    }

    /// The registration, drawn from the last fact and the client's state now.
    fn registration(&self, st: &State) -> Registration {
        match st.lifecycle {
            Lifecycle::Latent => {
                return Registration::Absent {
                    why: AbsentReason::NotStarted,
                }
            }
            Lifecycle::Closed => {
                return Registration::Absent {
                    why: AbsentReason::Closed,
                }
            }
            Lifecycle::Started => {}
        }
        let c = &self.client;
        match &st.fact {
            Fact::Absent(why) => Registration::Absent { why: why.clone() },
            Fact::Unknown => Registration::Uncertain {
                why: self.uncertain_now().unwrap_or(UncertainReason::Unproven),
            },
            Fact::Proven { epoch, generation } => {
                if self.spec.mode.is_ephemeral() && c.session_generation() != *generation {
                    return Registration::Absent {
                        why: AbsentReason::SessionExpired,
                    };
                }
                if let Some(why) = self.uncertain_now() {
                    return Registration::Uncertain { why };
                }
                if c.connection_epoch() != *epoch {
                    return Registration::Uncertain {
                        why: UncertainReason::Unproven,
                    };
                }
                Registration::Registered {
                    path: st.path.clone().unwrap_or_else(|| self.spec.path.clone()),
                }
            }
        }
    }

    /// Why the connection cannot vouch for anything now, if it cannot.
    fn uncertain_now(&self) -> Option<UncertainReason> {
        let c = &self.client;
        if c.is_closed()
            || !matches!(
                c.state(),
                Some(ConnectionState::Connected | ConnectionState::Reconnected)
            )
        {
            return Some(UncertainReason::Disconnected);
        }
        if c.session_health() != SessionHealth::Confirmed {
            return Some(UncertainReason::Silent);
        }
        None
    }

    /// Tells the channels a change of the registration.
    fn publish(&self) {
        let mut st = self.state.lock();
        self.publish_locked(&mut st);
    }

    fn publish_locked(&self, st: &mut State) {
        let now = self.registration(st);
        if st.told.as_ref() != Some(&now) {
            st.subscribers.retain(|s| s.send(now.clone()).is_ok());
            st.told = Some(now);
        }
        self.changed.notify_all();
    }

    fn set_fact(&self, fact: Fact) {
        let mut st = self.state.lock();
        st.fact = fact;
        self.publish_locked(&mut st);
    }

    /// The node's thread: a step, then a wait for what may change things.
    fn run(self: &Arc<Self>, cancel: &Receiver<()>) {
        // A change of the connection or its health is told at once (even
        // while this thread waits for a reply), then handled here.
        let (wake, me) = (self.wake.0.clone(), Arc::downgrade(self));
        let _states = self.client.add_listener(move |_| {
            if let Some(me) = me.upgrade() {
                me.publish();
            }
            let _ = wake.try_send(());
        });
        let (wake, me) = (self.wake.0.clone(), Arc::downgrade(self));
        let _health = self.client.add_health_listener(move |_| {
            if let Some(me) = me.upgrade() {
                me.publish();
            }
            let _ = wake.try_send(());
        });
        let closed = self.client.close_signal();
        // The epoch in which the node was last looked at (with a watch set).
        let mut looked: Option<u64> = None;
        let mut pause = RETRY_PAUSE.0;
        loop {
            if self.state.lock().lifecycle != Lifecycle::Started {
                return;
            }
            let next = self.step(&mut looked);
            self.publish();
            let timer = match next {
                Next::Again => {
                    pause = RETRY_PAUSE.0;
                    continue;
                }
                Next::Wait => {
                    pause = RETRY_PAUSE.0;
                    crossbeam_channel::never()
                }
                Next::Retry => {
                    let t = crossbeam_channel::after(pause);
                    pause = (pause * 2).min(RETRY_PAUSE.1);
                    t
                }
            };
            crossbeam_channel::select! {
                recv(self.wake.1) -> _ => {}
                recv(self.fired.1) -> _ => looked = None,
                recv(timer) -> _ => looked = None,
                recv(closed) -> _ => {
                    self.publish();
                    return;
                }
                recv(cancel) -> _ => return,
            }
        }
    }

    /// One step: look at the node (setting a watch) when the last look is
    /// not of this epoch or a watch fired, create it when it is missing,
    /// write new data when there is some.
    fn step(&self, looked: &mut Option<u64>) -> Next {
        let base = &self.client;
        if base.is_closed() {
            return Next::Wait;
        }
        if !base.is_connected() {
            *looked = None;
            return Next::Wait;
        }
        let client = base.with_deadline(Instant::now().checked_add(REQUEST_BOUND));
        let epoch = base.connection_epoch();
        let generation = base.session_generation();
        let session = base.session_id();
        let (path, data, dirty) = {
            let st = self.state.lock();
            (st.path.clone(), st.data.clone(), st.data_dirty)
        };
        let target = path.clone().unwrap_or_else(|| self.spec.path.clone());
        let fresh = *looked == Some(epoch);
        if fresh && !dirty && matches!(self.state.lock().fact, Fact::Proven { .. }) {
            return Next::Wait;
        }
        // A look, with a watch that wakes this thread on any change.
        let known = path.is_some() || !self.spec.mode.is_sequential();
        let seen = if known {
            match client.check_exists_w(&target, self.watcher()) {
                Ok(s) => s,
                Err(e) => return self.failed(e),
            }
        } else {
            None
        };
        if base.connection_epoch() != epoch {
            // The connection moved while we looked: look again.
            *looked = None;
            return Next::Again;
        }
        *looked = Some(epoch);
        match seen {
            Some(stat) => {
                if self.spec.mode.is_ephemeral() && stat.ephemeral_owner != session {
                    self.set_fact(Fact::Absent(AbsentReason::OwnedByAnotherSession {
                        owner: stat.ephemeral_owner,
                    }));
                    // Its deletion fires the watch.
                    return Next::Wait;
                }
                let taken_over = {
                    let st = self.state.lock();
                    !st.created_once && st.creates == 0
                };
                if dirty || (taken_over && stat.ephemeral_owner == 0) {
                    // Our data on our node (a node found in place at the
                    // start is taken over with our data, as Curator does).
                    match client.set_data(&target, data.clone(), None) {
                        Ok(_) => {
                            let mut st = self.state.lock();
                            if st.data == data {
                                st.data_dirty = false;
                            }
                        }
                        Err(e) => return self.failed(e),
                    }
                }
                let mut st = self.state.lock();
                if st.path.is_none() {
                    st.path = Some(target);
                }
                st.created_once = true;
                st.fact = Fact::Proven { epoch, generation };
                self.publish_locked(&mut st);
                Next::Wait
            }
            None => {
                if matches!(self.state.lock().fact, Fact::Proven { .. }) {
                    self.set_fact(Fact::Absent(
                        if self.spec.mode.is_ephemeral() && base.session_generation() != generation {
                            AbsentReason::SessionExpired
                        } else {
                            AbsentReason::Deleted
                        },
                    ));
                }
                self.create(&client, path, data)
            }
        }
    }

    /// Creates the node (its first name, or the name it kept).
    fn create(&self, client: &CuratorFramework, path: Option<String>, data: Vec<u8>) -> Next {
        let s = &self.spec;
        // A name once known is kept: re-created with the mode's
        // non-sequential form (the protection is in the name already).
        let (target, mode, protect) = match &path {
            Some(p) => (p.clone(), non_sequential(s.mode), false),
            None => (s.path.clone(), s.mode, s.protected),
        };
        let mut b = client.create().with_mode(mode).with_data(data.clone());
        if s.parents {
            b = b.creating_parent_containers_if_needed();
        }
        if protect {
            b = b.with_protection();
        }
        if let Some(ttl) = s.ttl {
            b = b.with_ttl(ttl);
        }
        match b.for_path(&target) {
            Ok(created) => {
                let mut st = self.state.lock();
                st.path = Some(created);
                st.creates += 1;
                if st.data == data {
                    st.data_dirty = false;
                }
                // Proven by the look that follows (which sets the watch).
                Next::Again
            }
            // Made meanwhile (by us: a retried create; or by someone): look.
            Err(zk_framework::Error::NodeExists { .. }) => Next::Again,
            Err(zk_framework::Error::NoNode { .. }) if !s.parents => {
                // Watch the parent; its creation wakes us.
                let parent = match target.rfind('/') {
                    Some(0) | None => "/".to_string(),
                    Some(i) => target[..i].to_string(),
                };
                self.set_fact(Fact::Absent(AbsentReason::ParentMissing));
                match client.check_exists_w(&parent, self.watcher()) {
                    Ok(None) => Next::Wait,
                    Ok(Some(_)) => Next::Again,
                    Err(e) => self.failed(e),
                }
            }
            Err(zk_framework::Error::NoAuth { .. }) => {
                self.set_fact(Fact::Absent(AbsentReason::NoAuth));
                Next::Wait
            }
            Err(zk_framework::Error::Keeper {
                code: ErrorCode::Unimplemented,
                ..
            }) if s.ttl.is_some() => {
                self.set_fact(Fact::Absent(AbsentReason::TtlNotEnabled));
                Next::Wait
            }
            Err(e) => self.failed(e),
        }
    }

    /// A request failed: a refusal is told; a connection problem says
    /// nothing about the node. Either way, try again after a pause.
    fn failed(&self, e: zk_framework::Error) -> Next {
        log::debug!("persistent node {}: {e}", self.spec.path);
        // The node (or a parent) went or came meanwhile (a write to a node
        // deleted after our look, a parent reaped under a create): the next
        // look tells.
        let raced = matches!(
            e,
            zk_framework::Error::NoNode { .. }
                | zk_framework::Error::NodeExists { .. }
                | zk_framework::Error::BadVersion { .. }
        );
        if !raced && !e.is_retryable() && e != zk_framework::Error::DeadlineExceeded && e != zk_framework::Error::Closed
        {
            self.set_fact(Fact::Absent(AbsentReason::Refused(e)));
        }
        Next::Retry
    }

    fn close(&self) -> Result<()> {
        let (path, delete) = {
            let mut st = self.state.lock();
            match st.lifecycle {
                Lifecycle::Latent => {
                    return Err(Error::NotStarted {
                        path: self.spec.path.clone(),
                    })
                }
                Lifecycle::Closed => return Err(self.closed_error()),
                Lifecycle::Started => {}
            }
            st.lifecycle = Lifecycle::Closed;
            let ours = match st.fact {
                // An ephemeral node is ours only on the session that made it.
                Fact::Proven { generation, .. } => {
                    !self.spec.mode.is_ephemeral() || generation == self.client.session_generation()
                }
                _ => st.created_once,
            };
            (st.path.clone(), ours && self.spec.delete_on_close)
        };
        let end = Instant::now() + CLOSE_WAIT;
        if let Some(w) = self.worker.lock().take() {
            w.stop(end);
        }
        if let (Some(path), true) = (path, delete) {
            if !self.client.is_closed() {
                let bounded = self.client.with_deadline(Some(end));
                match bounded.delete().guaranteed().for_path(&path) {
                    Ok(()) | Err(zk_framework::Error::NoNode { .. }) => {}
                    Err(e) => {
                        log::debug!("closing the persistent node {path}: {e} (the delete goes on in the background)")
                    }
                }
            }
        }
        let mut st = self.state.lock();
        self.publish_locked(&mut st);
        st.subscribers.clear();
        Ok(())
    }
}

/// The mode a node keeps once its name is known.
fn non_sequential(mode: CreateMode) -> CreateMode {
    match mode {
        CreateMode::EphemeralSequential => CreateMode::Ephemeral,
        CreateMode::PersistentSequential => CreateMode::Persistent,
        CreateMode::PersistentSequentialWithTtl => CreateMode::PersistentWithTtl,
        m => m,
    }
}
