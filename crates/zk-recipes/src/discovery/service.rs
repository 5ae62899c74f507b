//! [`ServiceDiscovery`]: instances registered as kept nodes
//! ([`PersistentNode`]) in Curator's layout, and the queries.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use zk_framework::proto::frame::DEFAULT_MAX_FRAME;
use zk_framework::CuratorFramework;

use crate::cache::curator::CuratorCache;
use crate::cache::view::CacheEvent;
use crate::core::{Stage, STOP_BOUND};
use crate::discovery::cache::ServiceCache;
use crate::discovery::instance::{check_identity, InstanceRead, JsonMode, ServiceInstance, ServiceType};
use crate::discovery::provider::ServiceProviderBuilder;
use crate::error::{Error, Result};
use crate::nodes::node::PersistentNode;
use crate::nodes::registration::Registration;
use crate::nodes::state::Spec;

const RECIPE: &str = "ServiceDiscovery";

/// What a frame keeps for the request around a node's data (as the queue's).
const RESERVED: usize = 4096;

/// Curator's service discovery (`ServiceDiscovery`), wire-compatible with
/// Curator 5's: instance `<id>` of service `<name>` is the node
/// `<base>/<name>/<id>` (its parents containers) holding the instance's
/// JSON ([`ServiceInstance::to_json`]); a [`Dynamic`](ServiceType::Dynamic)
/// instance is an ephemeral node, a
/// [`DynamicSequential`](ServiceType::DynamicSequential) one an ephemeral
/// sequential node (protected: `_c_<uuid>-<id><seq>`), a
/// [`Static`](ServiceType::Static) or [`Permanent`](ServiceType::Permanent)
/// one a persistent node.
///
/// Each registration is a [`PersistentNode`]: created, re-created after a
/// session loss or a delete, never duplicated, with an honest
/// [`registration`](Self::registration); see the
/// [family page](crate::discovery) for what that means and how it differs
/// from Curator's. Clones share this discovery; it closes at `close()` or
/// when the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_recipes::{ServiceDiscovery, ServiceInstance};
///
/// let me = ServiceInstance::builder("api").id("host-1").address("10.0.0.1").port(8080).build()?;
/// let discovery = ServiceDiscovery::builder(&client, "/services").this_instance(me).build()?;
/// discovery.start()?;
/// assert!(discovery.wait_registered_for("host-1", Duration::from_secs(10))?);
/// let found = discovery.query_for_instance("api", "host-1")?.unwrap();
/// assert_eq!(found.port(), Some(8080));
/// assert_eq!(discovery.query_for_names()?, vec!["api".to_string()]);
/// discovery.close()?;
/// assert!(discovery.query_for_instance("api", "host-1")?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ServiceDiscovery {
    shared: Arc<Shared>,
}

struct Shared {
    client: CuratorFramework,
    /// The base path without a trailing `/` (empty for the root).
    base: String,
    mode: JsonMode,
    watch: bool,
    state: Mutex<State>,
    /// Its figures (the `metrics` feature).
    metrics: crate::discovery::metrics::Handles,
}

struct State {
    stage: Stage,
    this: Option<ServiceInstance>,
    entries: BTreeMap<String, Entry>,
}

/// One registered instance: what was last given, the node keeping it, and
/// the watch on it (`watch_instances`).
struct Entry {
    instance: ServiceInstance,
    node: PersistentNode,
    watch: Option<CuratorCache>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if self.state.lock().stage == Stage::Started {
            let _ = self.close();
        }
    }
}

impl std::fmt::Debug for ServiceDiscovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.shared.state.lock();
        f.debug_struct("ServiceDiscovery")
            .field("base", &self.shared.base_path())
            .field("stage", &st.stage)
            .field("registered", &st.entries.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Builds a [`ServiceDiscovery`]: [`ServiceDiscovery::builder`].
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services")
///     .json_mode(zk_recipes::JsonMode::Full)
///     .build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a builder does nothing until build()"]
pub struct ServiceDiscoveryBuilder {
    client: CuratorFramework,
    base: String,
    this: Option<ServiceInstance>,
    mode: JsonMode,
    watch: bool,
}

impl std::fmt::Debug for ServiceDiscoveryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceDiscoveryBuilder")
            .field("base", &self.base)
            .field("this", &self.this)
            .field("mode", &self.mode)
            .field("watch", &self.watch)
            .finish()
    }
}

impl ServiceDiscoveryBuilder {
    /// Whether each registered instance's node is watched (Curator's
    /// `watchInstances`, default off): when someone else edits it (an
    /// operator sets `enabled: false`, a new port), the edit, when it reads
    /// as an instance of the same name and id, is what this discovery keeps
    /// from then on: [`registered`](ServiceDiscovery::registered) shows it
    /// and a re-creation (after an expiry, a delete) writes it, instead of
    /// putting the old data back. Only an edit of OUR node counts (another
    /// session's node at the path is not ours), and an
    /// [`update`](ServiceDiscovery::update) not yet written wins. Not for
    /// `DynamicSequential` instances (whose node name is not known in
    /// advance; as in Curator, whose watch is on `<name>/<id>`). One cache
    /// (a persistent watch) per instance.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").watch_instances(true).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn watch_instances(mut self, on: bool) -> Self {
        self.watch = on;
        self
    }

    /// This process's instance, registered at [`start`](ServiceDiscovery::start)
    /// (Curator's `thisInstance`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let me = zk_recipes::ServiceInstance::builder("api").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").this_instance(me).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn this_instance(mut self, instance: ServiceInstance) -> Self {
        self.this = Some(instance);
        self
    }

    /// Which JSON the instances are written as (default
    /// [`JsonMode::Compatible`], Curator's default: no `enabled`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/s").json_mode(zk_recipes::JsonMode::Full).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn json_mode(mut self, mode: JsonMode) -> Self {
        self.mode = mode;
        self
    }

    /// The discovery (not started).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] with [`zk_framework::Error::InvalidPath`] for a
    /// base path that breaks ZooKeeper's rules; as
    /// [`ServiceDiscovery::register`] checks it, for a `this_instance` that
    /// cannot be registered.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(zk_recipes::ServiceDiscovery::builder(&client, "services").build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<ServiceDiscovery> {
        zk_framework::proto::path::validate_path(&self.base, false).map_err(zk_framework::Error::from)?;
        let shared = Shared {
            client: self.client,
            metrics: crate::discovery::metrics::Handles::new(&self.base),
            base: self.base.trim_end_matches('/').to_string(),
            mode: self.mode,
            watch: self.watch,
            state: Mutex::new(State {
                stage: Stage::New,
                this: None,
                entries: BTreeMap::new(),
            }),
        };
        if let Some(i) = &self.this {
            shared.checked_path(i)?;
        }
        shared.state.lock().this = self.this;
        Ok(ServiceDiscovery {
            shared: Arc::new(shared),
        })
    }
}

impl Shared {
    fn base_path(&self) -> &str {
        if self.base.is_empty() {
            "/"
        } else {
            &self.base
        }
    }

    /// `<base>/<name>` (one leading `/` of the name dropped, as Curator's
    /// `ZKPaths.makePath`).
    fn service_path(&self, name: &str) -> Result<String> {
        check_identity(name, "-").map_err(|e| match e {
            Error::InvalidInstance { name, reason, .. } => Error::InvalidInstance {
                name,
                id: String::new(),
                reason,
            },
            e => e,
        })?;
        let rel = name.strip_prefix('/').unwrap_or(name);
        let path = format!("{}/{rel}", self.base);
        zk_framework::proto::path::validate_path(&path, false).map_err(|e| Error::InvalidInstance {
            name: name.to_string(),
            id: String::new(),
            reason: format!("{path} is not a valid path: {e}"),
        })?;
        Ok(path)
    }

    /// The instance's node path, after every check a registration makes.
    fn checked_path(&self, i: &ServiceInstance) -> Result<(String, ServiceType)> {
        check_identity(i.name(), i.id())?;
        let t = i.service_type().ok_or_else(|| Error::InvalidInstance {
            name: i.name().to_string(),
            id: i.id().to_string(),
            reason: "no service type (its JSON said \"serviceType\":null)".into(),
        })?;
        let path = format!("{}/{}", self.service_path(i.name())?, i.id());
        zk_framework::proto::path::validate_path(&path, t == ServiceType::DynamicSequential).map_err(|e| {
            Error::InvalidInstance {
                name: i.name().to_string(),
                id: i.id().to_string(),
                reason: format!("{path} is not a valid path: {e}"),
            }
        })?;
        Ok((path, t))
    }

    /// The instance's JSON, when a node may hold it: a request larger than
    /// a frame (1 MiB, the server's default `jute.maxbuffer`) would make the
    /// server drop the connection, again at every try.
    fn json_of(&self, path: &str, instance: &ServiceInstance) -> Result<Vec<u8>> {
        let data = instance.to_json(self.mode).into_bytes();
        let key = self.client.recipe().node_key(path);
        let max = DEFAULT_MAX_FRAME.saturating_sub(RESERVED + 2 * key.as_str().len());
        if data.len() > max {
            return Err(Error::InvalidInstance {
                name: instance.name().to_string(),
                id: instance.id().to_string(),
                reason: format!(
                    "its JSON is {} bytes, more than the {max} a node's request may carry (1 MiB frames)",
                    data.len()
                ),
            });
        }
        Ok(data)
    }

    fn register(&self, st: &mut State, instance: &ServiceInstance) -> Result<()> {
        let (path, t) = self.checked_path(instance)?;
        let data = self.json_of(&path, instance)?;
        if st.entries.contains_key(instance.id()) {
            return Err(Error::AlreadyRegistered {
                id: instance.id().to_string(),
            });
        }
        let spec = Spec {
            recipe: RECIPE,
            path,
            mode: t.create_mode(),
            // A sequential create whose reply is lost is found again by its
            // protected name (else: an orphan instance for the session).
            protected: t == ServiceType::DynamicSequential,
            ttl: None,
            parents: true,
            delete_on_close: true,
        };
        let watched = spec.path.clone();
        let node = PersistentNode::from_spec(&self.client, spec, data)?;
        let watch = if self.watch && t != ServiceType::DynamicSequential {
            Some(self.watch_node(&node, &watched, instance)?)
        } else {
            None
        };
        self.metrics.registered(&node, instance);
        if let Err(e) = node.start() {
            self.metrics.removed(1);
            return Err(e);
        }
        if let Some(w) = &watch {
            if let Err(e) = w.start() {
                let _ = node.close();
                self.metrics.removed(1);
                return Err(e);
            }
        }
        st.entries.insert(
            instance.id().to_string(),
            Entry {
                instance: instance.clone(),
                node,
                watch,
            },
        );
        Ok(())
    }

    /// A single-node cache of the instance's node whose changes, when the
    /// node is ours and the data reads as this instance, become the data
    /// the node keeps (no write: the server has it already).
    fn watch_node(&self, node: &PersistentNode, path: &str, instance: &ServiceInstance) -> Result<CuratorCache> {
        let cache = CuratorCache::builder(&self.client, path).single_node().build()?;
        let me = Arc::downgrade(&node.inner);
        let client = self.client.clone();
        let (id, name) = (instance.id().to_string(), instance.name().to_string());
        cache.subscribe(move |_| {
            Box::new(move |ev| {
                let Some(inner) = me.upgrade() else {
                    return false;
                };
                // The first look (an edit made before it) and every change,
                // in the server's order: what is kept converges to the
                // server's data of our node.
                let (CacheEvent::Created(new) | CacheEvent::Changed { new, .. }) = ev else {
                    return true;
                };
                let owner = new.stat().ephemeral_owner;
                if owner != 0 && owner != client.session_id() {
                    return true;
                }
                let Some(bytes) = new.data() else {
                    return true;
                };
                let mut st = inner.state.lock();
                if st.owned.is_none() || st.data_dirty || st.data == bytes {
                    return true;
                }
                match ServiceInstance::from_json(bytes) {
                    Ok(i) if i.id() == id && i.name() == name => st.data = bytes.to_vec(),
                    other => log::debug!("{}: an edit not kept (not this instance): {other:?}", new.path()),
                }
                true
            })
        });
        Ok(cache)
    }

    fn close(&self) -> Result<()> {
        let entries = {
            let mut st = self.state.lock();
            st.stage.check(RECIPE, self.base_path())?;
            st.stage = Stage::Closed;
            std::mem::take(&mut st.entries)
        };
        self.metrics.removed(entries.len());
        // Every node's close begun at once (nothing more is sent for any),
        // then finished under one deadline.
        let end = Instant::now() + STOP_BOUND;
        for w in entries.values().filter_map(|e| e.watch.as_ref()) {
            w.close_until(end);
        }
        let mut closing = Vec::new();
        for e in entries.values() {
            let keep = !e.instance.service_type().is_some_and(ServiceType::is_dynamic);
            if let Ok(c) = e.node.inner.close_begin() {
                closing.push((&e.node, if keep { c.keep_node() } else { c }));
            }
        }
        for (node, c) in closing {
            node.inner.close_finish(c, end);
        }
        Ok(())
    }

    fn node_of(&self, id: &str) -> Option<PersistentNode> {
        self.state.lock().entries.get(id).map(|e| e.node.clone())
    }
}

impl ServiceDiscovery {
    /// A builder for a discovery under `base_path` (Spring's and Dubbo's
    /// default is `/services`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(client: &CuratorFramework, base_path: &str) -> ServiceDiscoveryBuilder {
        ServiceDiscoveryBuilder {
            client: client.clone(),
            base: base_path.to_string(),
            this: None,
            mode: JsonMode::Compatible,
            watch: false,
        }
    }

    /// Starts: registers this instance, if the builder had one. Returns at
    /// once (the node is created by its own thread: wait with
    /// [`wait_registered_for`](Self::wait_registered_for)).
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`]; [`Error::Closed`]; as
    /// [`register`](Self::register).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.start()?;
    /// assert!(d.start().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        let sh = &self.shared;
        let mut st = sh.state.lock();
        st.stage.start(RECIPE, sh.base_path())?;
        if let Some(i) = st.this.clone() {
            sh.register(&mut st, &i)?;
        }
        Ok(())
    }

    /// Closes, for every clone: every DYNAMIC instance's node is deleted
    /// (also one a create in flight makes: see [`PersistentNode::close`]);
    /// a STATIC or PERMANENT instance's node in place is LEFT in place (it
    /// is meant to outlive this process; Curator deletes it, CURATOR-94;
    /// use [`unregister`](Self::unregister) to delete it), though one whose
    /// create is in flight at the close is undone. Returns within the stop
    /// bound (2 s for all the nodes together); a delete not through by then
    /// goes on in the background.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`]; [`Error::Closed`] when closed before.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.start()?;
    /// d.close()?;
    /// assert!(d.close().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        self.shared.close()
    }

    /// Registers `instance`: its node is created by a thread of its own
    /// (waiting for a connection) and kept in place from then on. Returns
    /// at once; [`registration`](Self::registration) and
    /// [`wait_registered_for`](Self::wait_registered_for) say when the
    /// server shows it.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`], [`Error::Closed`];
    /// [`Error::InvalidInstance`] for an instance that cannot be registered
    /// (see [`ServiceInstanceBuilder::build`](crate::ServiceInstanceBuilder::build); also no
    /// service type, a path ZooKeeper refuses, JSON larger than a node's
    /// request may carry, about 1 MiB);
    /// [`Error::AlreadyRegistered`] for an id registered here already (use
    /// [`update`](Self::update)); [`Error::SpawnFailed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.start()?;
    /// let i = zk_recipes::ServiceInstance::builder("api").id("a").build()?;
    /// d.register(&i)?;
    /// assert!(d.register(&i).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(&self, instance: &ServiceInstance) -> Result<()> {
        let sh = &self.shared;
        let mut st = sh.state.lock();
        st.stage.check(RECIPE, sh.base_path())?;
        sh.register(&mut st, instance)
    }

    /// Writes a registered instance's new data (same id, same name, same
    /// service type): kept by its node and written by its thread, at once
    /// when the node is in place, else when it is created again (Curator's
    /// `updateService` fails while the node is missing). Later
    /// re-creations write it too.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`], [`Error::Closed`];
    /// [`Error::NotRegistered`] for an id not registered here;
    /// [`Error::InvalidInstance`] when the name or the service type
    /// changed (unregister, then register), or the JSON is too large.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.start()?;
    /// let i = zk_recipes::ServiceInstance::builder("api").id("a").port(1).build()?;
    /// d.register(&i)?;
    /// d.update(&i.to_builder().port(2).build()?)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update(&self, instance: &ServiceInstance) -> Result<()> {
        let sh = &self.shared;
        let mut st = sh.state.lock();
        st.stage.check(RECIPE, sh.base_path())?;
        let e = st.entries.get_mut(instance.id()).ok_or_else(|| Error::NotRegistered {
            id: instance.id().to_string(),
        })?;
        if e.instance.name() != instance.name() || e.instance.service_type() != instance.service_type() {
            return Err(Error::InvalidInstance {
                name: instance.name().to_string(),
                id: instance.id().to_string(),
                reason: "an update keeps the name and the service type (unregister, then register)".into(),
            });
        }
        let data = sh.json_of(&sh.checked_path(instance)?.0, instance)?;
        e.node.set_data(data)?;
        e.instance = instance.clone();
        Ok(())
    }

    /// Unregisters the instance `id`: its node is deleted (a guaranteed
    /// delete: tried again in the background while the client is open),
    /// whatever its service type, and not created again; a create in flight
    /// is undone (see [`PersistentNode::close`]). `Ok(false)` when `id` was
    /// not registered here. Waits at most the stop bound (2 s).
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`], [`Error::Closed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.start()?;
    /// d.register(&zk_recipes::ServiceInstance::builder("api").id("a").build()?)?;
    /// assert!(d.unregister("a")?);
    /// assert!(!d.unregister("a")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unregister(&self, id: &str) -> Result<bool> {
        let sh = &self.shared;
        let entry = {
            let mut st = sh.state.lock();
            st.stage.check(RECIPE, sh.base_path())?;
            st.entries.remove(id)
        };
        let Some(e) = entry else {
            return Ok(false);
        };
        sh.metrics.removed(1);
        let persistent = !e.instance.service_type().is_some_and(ServiceType::is_dynamic);
        let path = e.node.actual_path();
        if let Some(w) = &e.watch {
            w.close();
        }
        e.node.close()?;
        if persistent {
            // A persistent node at our path is ours (taken over at the
            // start) even when this process never proved it: deleted too.
            if let (Some(p), false) = (
                path.or_else(|| sh.checked_path(&e.instance).ok().map(|x| x.0)),
                sh.client.is_closed(),
            ) {
                let bounded = sh.client.with_deadline(Some(Instant::now() + STOP_BOUND));
                match bounded.delete().guaranteed().for_path(&p) {
                    Ok(()) | Err(zk_framework::Error::NoNode { .. }) => {}
                    Err(e) => log::debug!("unregistering {p}: {e} (the delete goes on in the background)"),
                }
            }
        }
        Ok(true)
    }

    /// Whether the instance `id` is in place now, as its node's
    /// [`PersistentNode::registration`] says: `Registered` only while the
    /// server has shown it (owned by our session, for a dynamic one) on the
    /// current connection; `None` when `id` is not registered here.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(d.registration("a").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registration(&self, id: &str) -> Option<Registration> {
        self.shared.node_of(id).map(|n| n.registration())
    }

    /// Every change of the instance `id`'s registration, from where it
    /// stands now (see [`PersistentNode::events`]); `None` when `id` is not
    /// registered here. The channel ends when it is unregistered or the
    /// discovery closes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// # client.block_until_connected(std::time::Duration::from_secs(10))?;
    /// use std::time::Duration;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// d.start()?;
    /// d.register(&zk_recipes::ServiceInstance::builder("api").id("a").build()?)?;
    /// let events = d.events("a").unwrap();
    /// while !events.recv_timeout(Duration::from_secs(10))?.is_registered() {}
    /// d.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self, id: &str) -> Option<Receiver<Registration>> {
        self.shared.node_of(id).map(|n| n.events())
    }

    /// Waits until the instance `id` is registered now (see
    /// [`PersistentNode::wait_registered_for`]): `Ok(false)` when `timeout`
    /// passes first.
    ///
    /// # Errors
    ///
    /// [`Error::NotRegistered`] for an id not registered here;
    /// [`Error::Closed`] when it is unregistered or the discovery closes
    /// while waiting.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(d.wait_registered_for("a", std::time::Duration::from_secs(1)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_registered_for(&self, id: &str, timeout: Duration) -> Result<bool> {
        let node = self
            .shared
            .node_of(id)
            .ok_or_else(|| Error::NotRegistered { id: id.to_string() })?;
        node.wait_registered_for(timeout)
    }

    /// The path of the instance `id`'s node once known (a
    /// [`DynamicSequential`](ServiceType::DynamicSequential) one's full
    /// name), `None` before its first create or when not registered here.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(d.node_path("a").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn node_path(&self, id: &str) -> Option<String> {
        self.shared.node_of(id).and_then(|n| n.actual_path())
    }

    /// The instances registered here, as this discovery keeps them (not
    /// read from the server): as last given, or as last edited by someone
    /// else with [`watch_instances`](ServiceDiscoveryBuilder::watch_instances).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(d.registered().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registered(&self) -> Vec<ServiceInstance> {
        let st = self.shared.state.lock();
        st.entries
            .values()
            .map(|e| ServiceInstance::from_json(&e.node.data()).unwrap_or_else(|_| e.instance.clone()))
            .collect()
    }

    /// The services' names: the children of the base path, sorted (one
    /// level: a name with `/` shows as its first segment). Empty when the
    /// base path does not exist (Curator throws NoNode; the server deletes
    /// the base container once it is empty). Read from the server, no
    /// watch; needs no `start()`.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the read fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/nothing-here").build()?;
    /// assert!(d.query_for_names()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn query_for_names(&self) -> Result<Vec<String>> {
        match self.shared.client.get_children(self.shared.base_path()) {
            Ok(mut kids) => {
                kids.sort();
                Ok(kids)
            }
            Err(zk_framework::Error::NoNode { .. }) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// The instances of service `name`: each child of `<base>/<name>`
    /// (sorted by node name) with its instance or why it could not be read
    /// (one bad child does not fail the query; Curator's throws for all). A
    /// child that vanishes between the listing and its read is left out; no
    /// service node is no instance. Read from the server, no watch; needs no
    /// `start()`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInstance`] for a name that makes no valid path;
    /// [`Error::ZooKeeper`] when a read fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// for read in d.query_for_instances("api")? {
    ///     match read.instance {
    ///         Ok(i) => println!("{} at {:?}", i.id(), i.endpoint()),
    ///         Err(e) => eprintln!("{}: {e}", read.node),
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn query_for_instances(&self, name: &str) -> Result<Vec<InstanceRead>> {
        let c = &self.shared.client;
        let service = self.shared.service_path(name)?;
        let mut kids = match c.get_children(&service) {
            Ok(k) => k,
            Err(zk_framework::Error::NoNode { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        kids.sort();
        let mut out = Vec::with_capacity(kids.len());
        for kid in kids {
            let path = format!("{service}/{kid}");
            match c.get_data(&path) {
                Ok((data, _)) => out.push(InstanceRead {
                    instance: parse_at(&path, &data),
                    node: kid,
                }),
                Err(zk_framework::Error::NoNode { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(out)
    }

    /// The instance `id` of service `name` (the node `<base>/<name>/<id>`),
    /// `None` when there is none. A
    /// [`DynamicSequential`](ServiceType::DynamicSequential) instance's node
    /// name is not its id: find it with
    /// [`query_for_instances`](Self::query_for_instances) (as in Curator).
    ///
    /// # Errors
    ///
    /// [`Error::InstanceJson`] when the node's JSON cannot be read;
    /// [`Error::InvalidInstance`] for a name or id that makes no valid path;
    /// [`Error::ZooKeeper`] when the read fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// assert!(d.query_for_instance("api", "nobody")?.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn query_for_instance(&self, name: &str, id: &str) -> Result<Option<ServiceInstance>> {
        check_identity(name, id)?;
        let path = format!("{}/{id}", self.shared.service_path(name)?);
        match self.shared.client.get_data(&path) {
            Ok((data, _)) => parse_at(&path, &data).map(Some),
            Err(zk_framework::Error::NoNode { .. }) => Ok(None),
            Err(zk_framework::Error::InvalidPath(_)) => Err(Error::InvalidInstance {
                name: name.to_string(),
                id: id.to_string(),
                reason: format!("{path} is not a valid path"),
            }),
            Err(e) => Err(e.into()),
        }
    }
}

impl ServiceDiscovery {
    /// A cache of service `name`'s instances (not started; Curator's
    /// `serviceCacheBuilder().name(name).build()`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInstance`] for a name that makes no valid path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let cache = d.service_cache("api")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn service_cache(&self, name: &str) -> Result<ServiceCache> {
        ServiceCache::new(&self.shared.client, &self.shared.service_path(name)?)
    }

    /// A builder for a provider of service `name`'s instances (Curator's
    /// `serviceProviderBuilder().serviceName(name)`), on a cache of its own.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInstance`] for a name that makes no valid path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let d = zk_recipes::ServiceDiscovery::builder(&client, "/services").build()?;
    /// let provider = d.provider_builder("api")?.build();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn provider_builder(&self, name: &str) -> Result<ServiceProviderBuilder> {
        Ok(ServiceProviderBuilder::new(self.service_cache(name)?))
    }
}

/// An instance read from the node at `path`, its errors naming the node.
fn parse_at(path: &str, data: &[u8]) -> Result<ServiceInstance> {
    ServiceInstance::from_json(data).map_err(|e| match e {
        Error::InstanceJson { at, reason, .. } => Error::InstanceJson {
            node: path.to_string(),
            at,
            reason,
        },
        e => e,
    })
}
