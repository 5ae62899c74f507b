//! What a service registry and a set partitioner's party hold, read from the
//! server with no recipe running: a service's instances, each with its node's
//! owner and age ([`crate::inspect_service`], [`crate::service_names`]), and
//! a partition's members and who holds each item's lock
//! ([`crate::inspect_partition`]). `zk-lock services` and `zk-lock partition`
//! are built on them.

use std::collections::BTreeMap;

use zk_framework::CuratorFramework;

use crate::core::queue;
use crate::discovery::instance::{check_identity, ServiceInstance};
use crate::error::{Error, Result};
use crate::inspect::tool::Member;
use crate::locks::participants::{participants, read_all, LockLayout, Participant};
use crate::partition::state::LockHolder;

/// One child of a service's node: its instance as it parses, and the node's
/// owner and creation time.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// for n in zk_recipes::inspect_service(&client, "/services", "api")?.instances {
///     match &n.instance {
///         Ok(i) => println!("{} {:?} session 0x{:x}", i.id(), i.endpoint(), n.session_id),
///         Err(e) => println!("{}: {e}", n.node),
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InstanceNode {
    /// The child's node name (the instance id, except for a
    /// [`DynamicSequential`](crate::ServiceType::DynamicSequential) instance).
    pub node: String,
    /// The child's full path (relative to the client's namespace).
    pub path: String,
    /// The instance, or [`Error::InstanceJson`] naming the node and where
    /// its JSON is wrong (one bad child does not fail the others).
    pub instance: Result<ServiceInstance>,
    /// The session that owns the node (a dynamic instance's ephemeral
    /// node); 0 for a persistent node (a static or permanent instance).
    pub session_id: i64,
    /// When the node was created (ms since the epoch, the server's clock).
    pub created_ms: i64,
    /// The node's czxid: it changes each time the node is created again
    /// (a registration that came back after an expiry or a delete).
    pub czxid: i64,
}

/// A service's instances as the server holds them: [`inspect_service`].
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let r = zk_recipes::inspect_service(&client, "/services", "api")?;
/// println!("{}: {} instance(s), {} unreadable", r.path, r.instances.len(), r.unreadable().count());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServiceReport {
    /// The service's name, as given.
    pub name: String,
    /// The service's node, `<base>/<name>`.
    pub path: String,
    /// Its children, sorted by node name.
    pub instances: Vec<InstanceNode>,
}

impl ServiceReport {
    /// The instances that parse.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// for i in zk_recipes::inspect_service(&client, "/services", "api")?.readable() {
    ///     println!("{}", i.id());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn readable(&self) -> impl Iterator<Item = &ServiceInstance> {
        self.instances.iter().filter_map(|n| n.instance.as_ref().ok())
    }

    /// The children whose JSON does not parse.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// for n in zk_recipes::inspect_service(&client, "/services", "api")?.unreadable() {
    ///     eprintln!("{}: {:?}", n.path, n.instance);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unreadable(&self) -> impl Iterator<Item = &InstanceNode> {
        self.instances.iter().filter(|n| n.instance.is_err())
    }
}

/// `base` checked as [`crate::ServiceDiscoveryBuilder::build`] checks it
/// (no trailing `/`), without the root's `/` (`""`).
fn base_of(base: &str) -> Result<String> {
    zk_framework::proto::path::validate_path(base, false).map_err(zk_framework::Error::from)?;
    Ok(base.trim_end_matches('/').to_string())
}

/// Reads service `name`'s instances under `base` (Curator's layout,
/// `<base>/<name>/<id>`): each child with its parsed instance or why it
/// does not parse, the session that owns its node and when it was created.
/// A child that vanishes while it is read is left out; a missing service
/// node has no instances. No watch, no recipe: any path can be read.
///
/// # Errors
///
/// [`Error::ZooKeeper`] when a listing or a read fails, or for a base that
/// is not a valid path (as a discovery's builder refuses it: relative, or
/// ending with `/`); [`Error::InvalidInstance`] for a name that makes no
/// valid path (empty, an empty, `.` or `..` segment).
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use zk_recipes::{ServiceDiscovery, ServiceInstance};
/// let d = ServiceDiscovery::builder(&client, "/services").build()?;
/// d.start()?;
/// d.register(&ServiceInstance::builder("api").id("a1").port(8080).build()?)?;
/// assert!(d.wait_registered_for("a1", std::time::Duration::from_secs(10))?);
///
/// let report = zk_recipes::inspect_service(&client, "/services", "api")?;
/// let a1 = &report.instances[0];
/// assert_eq!(a1.instance.as_ref().unwrap().port(), Some(8080));
/// assert_eq!(a1.session_id, client.session_id());
/// # d.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn inspect_service(client: &CuratorFramework, base: &str, name: &str) -> Result<ServiceReport> {
    let base = base_of(base)?;
    check_identity(name, "-").map_err(|e| match e {
        Error::InvalidInstance { name, reason, .. } => Error::InvalidInstance {
            name,
            id: String::new(),
            reason,
        },
        e => e,
    })?;
    let path = format!("{base}/{}", name.strip_prefix('/').unwrap_or(name));
    zk_framework::proto::path::validate_path(&path, false).map_err(|e| Error::InvalidInstance {
        name: name.to_string(),
        id: String::new(),
        reason: format!("{path} is not a valid path: {e}"),
    })?;
    let mut kids = queue::children(client, &path)?.unwrap_or_default();
    kids.sort();
    let instances = read_all(client, &path, kids)?
        .into_iter()
        .map(|n| InstanceNode {
            instance: ServiceInstance::from_json(&n.data).map_err(|e| match e {
                Error::InstanceJson { at, reason, .. } => Error::InstanceJson {
                    node: n.path.clone(),
                    at,
                    reason,
                },
                e => e,
            }),
            node: n.name,
            path: n.path,
            session_id: n.stat.ephemeral_owner,
            created_ms: n.stat.ctime,
            czxid: n.stat.czxid,
        })
        .collect();
    Ok(ServiceReport {
        name: name.to_string(),
        path,
        instances,
    })
}

/// The service names under `base` (its children, sorted; Curator's
/// `queryForNames`). A missing base has none (Curator's throws NoNode once
/// the container was reaped).
///
/// # Errors
///
/// [`Error::ZooKeeper`] when the listing fails, or for a base that is not a
/// valid path.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// assert!(zk_recipes::service_names(&client, "/no-services-here")?.is_empty());
/// client.create().creating_parents_if_needed().for_path("/reg/api/x")?;
/// assert_eq!(zk_recipes::service_names(&client, "/reg")?, ["api"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn service_names(client: &CuratorFramework, base: &str) -> Result<Vec<String>> {
    let base = base_of(base)?;
    let list = if base.is_empty() { "/" } else { &base };
    let mut names = queue::children(client, list)?.unwrap_or_default();
    names.sort();
    Ok(names)
}

/// One item of a partition, as its lock stands: who holds it and who waits.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// for item in zk_recipes::inspect_partition(&client, "/work/shards")?.items {
///     match &item.holder {
///         Some(h) => println!("{}: {h}, {} waiting", item.item, item.waiters.len()),
///         None => println!("{}: free", item.item),
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ItemOwner {
    /// The item (its lock's node name under `<path>/locks`).
    pub item: String,
    /// The item's lock path, `<path>/locks/<item>`.
    pub lock_path: String,
    /// Who holds the lock: [`LockHolder::Member`] when a party node has the
    /// lock node's session (with the member's identifier),
    /// [`LockHolder::NotAMember`] otherwise; `None` when the lock is free.
    pub holder: Option<LockHolder>,
    /// Who waits for it, in lock order (as `holder`).
    pub waiters: Vec<LockHolder>,
    /// The lock's participants as [`crate::inspect_lock`] reads them
    /// (holder first), with their nodes, fencing tokens and ages.
    pub participants: Vec<Participant>,
}

impl ItemOwner {
    /// The identifier of the member that holds the item, if a member does.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let r = zk_recipes::inspect_partition(&client, "/work/shards")?;
    /// let owners: Vec<Option<&str>> = r.items.iter().map(|i| i.owner()).collect();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn owner(&self) -> Option<&str> {
        match &self.holder {
            Some(LockHolder::Member { identifier, .. }) => Some(identifier),
            _ => None,
        }
    }

    /// The holder's fencing token (its lock node's czxid), if held.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// for i in zk_recipes::inspect_partition(&client, "/work/shards")?.items {
    ///     println!("{} {:?}", i.item, i.fencing_token());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_token(&self) -> Option<i64> {
        self.participants.iter().find(|p| p.holds).map(|p| p.fencing_token)
    }
}

/// A set partitioner's party and its items' owners: [`inspect_partition`].
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let r = zk_recipes::inspect_partition(&client, "/work/shards")?;
/// for (member, items) in r.shares() {
///     println!("{member}: {items:?}");
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionReport {
    /// The partition's path (without a trailing `/`).
    pub path: String,
    /// The party's members (`<path>/party/<identifier>`), by identifier:
    /// `id` is the identifier, `session_id` the member's session.
    pub members: Vec<Member>,
    /// Every item with a lock node under `<path>/locks`, by item (an item
    /// nobody has locked yet has no node and is not listed).
    pub items: Vec<ItemOwner>,
}

impl PartitionReport {
    /// The items each member holds, by identifier (every member listed,
    /// those holding nothing with no items).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let shares = zk_recipes::inspect_partition(&client, "/work/shards")?.shares();
    /// println!("{:?}", shares.get("worker-1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shares(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = self.members.iter().map(|m| (m.id.clone(), Vec::new())).collect();
        for i in &self.items {
            if let Some(owner) = i.owner() {
                out.entry(owner.to_string()).or_default().push(i.item.clone());
            }
        }
        out
    }

    /// The items whose lock is held by a session with no party node (a
    /// process outside the party, or a member that left: kazoo #392).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// for i in zk_recipes::inspect_partition(&client, "/work/shards")?.foreign() {
    ///     eprintln!("{} held outside the party: {:?}", i.item, i.holder);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn foreign(&self) -> impl Iterator<Item = &ItemOwner> {
        self.items
            .iter()
            .filter(|i| matches!(i.holder, Some(LockHolder::NotAMember { .. })))
    }
}

/// Reads the set partitioner at `path` ([`crate::SetPartitioner`]'s layout;
/// a trailing `/` is dropped, as the partitioner drops it):
/// its party's members (`<path>/party/<identifier>`), and for each item
/// under `<path>/locks/` who holds its lock and who waits, each named by the
/// party member whose node has the lock node's session (or as a session
/// outside the party). Nodes that vanish while they are read are left out; a
/// missing path has no members and no items. No watch, no recipe.
///
/// The party and the locks are read one after the other, not at one
/// instant: a member that joins or leaves between the reads can show as
/// [`LockHolder::NotAMember`] for a moment.
///
/// # Errors
///
/// [`Error::ZooKeeper`] when a listing or a read fails, or for a path that
/// is not valid; [`Error::InvalidArgument`] for the root path.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// let p = zk_recipes::SetPartitioner::builder(&client, "/work/shards", ["a", "b"])
///     .identifier("worker-1")
///     .time_boundary(Duration::from_millis(100))
///     .build()?;
/// p.start()?;
/// assert!(p.wait_for_acquire_for(Duration::from_secs(10))?.is_some());
///
/// let r = zk_recipes::inspect_partition(&client, "/work/shards")?;
/// assert_eq!(r.members[0].id, "worker-1");
/// assert_eq!(r.shares()["worker-1"], ["a", "b"]);
/// # p.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn inspect_partition(client: &CuratorFramework, path: &str) -> Result<PartitionReport> {
    let base = path.trim_end_matches('/');
    if !path.is_empty() && base.is_empty() {
        return Err(Error::InvalidArgument(
            "a set partitioner cannot live at the root path".into(),
        ));
    }
    zk_framework::proto::path::validate_path(base, false).map_err(zk_framework::Error::from)?;
    let party_path = format!("{base}/party");
    let mut names = queue::children(client, &party_path)?.unwrap_or_default();
    names.sort();
    let members: Vec<Member> = read_all(client, &party_path, names)?
        .into_iter()
        .map(|n| Member {
            id: n.name,
            data: n.data,
            session_id: n.stat.ephemeral_owner,
            created_ms: n.stat.ctime,
        })
        .collect();
    let who = |session: i64| match members.iter().find(|m| m.session_id == session && session != 0) {
        Some(m) => LockHolder::Member {
            identifier: m.id.clone(),
            session,
        },
        None => LockHolder::NotAMember { session },
    };
    let locks_path = format!("{base}/locks");
    let mut item_names = queue::children(client, &locks_path)?.unwrap_or_default();
    item_names.sort();
    let mut items = Vec::with_capacity(item_names.len());
    for item in item_names {
        let lock_path = format!("{locks_path}/{item}");
        let participants = participants(client, &lock_path, LockLayout::Mutex)?;
        let holder = participants.iter().find(|p| p.holds).map(|p| who(p.session_id));
        let waiters = participants
            .iter()
            .filter(|p| !p.holds)
            .map(|p| who(p.session_id))
            .collect();
        items.push(ItemOwner {
            item,
            lock_path,
            holder,
            waiters,
            participants,
        });
    }
    Ok(PartitionReport {
        path: base.to_string(),
        members,
        items,
    })
}
