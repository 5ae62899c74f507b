//! Curator-style create and delete builders: container parents, protected
//! ephemeral-sequential creates, guaranteed deletes.

use std::sync::Arc;
use std::time::Duration;

use super::acl::{acl_of, AclProvider};
use super::handle::CuratorFramework;
use super::inner::KnownParents;
use super::retry_loop::missing_chroot;
use crate::client::{Client, ReadOp, ReadResult};
use crate::error::{Error, Result};
use crate::paths::{ancestors, new_protected_id, protected_name, PROTECTED_PREFIX};
use zk_proto::path::{basename, join, parent, validate_path};
use zk_proto::{Acl, CreateMode, Stat};

/// Parent creation mode of a create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parents {
    None,
    Persistent,
    Containers,
}

/// A create in progress; finish it with [`CreateBuilder::for_path`].
#[must_use = "a create does nothing until for_path is called"]
#[derive(Debug)]
pub struct CreateBuilder<'a> {
    fw: &'a CuratorFramework,
    mode: CreateMode,
    data: Option<Vec<u8>>,
    acl: Option<Vec<Acl>>,
    parents: Parents,
    protected: bool,
    ttl: Option<Duration>,
}

/// The result of a create that also listed its parent
/// ([`CreateBuilder::for_path_listing_parent`]): a queue recipe decides from
/// it whether its new node is first (see [`crate::recipe`]).
///
/// # Examples
///
/// ```no_run
/// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let created: zk_framework::CreatedWithListing = c
///     .create()
///     .with_mode(zk_framework::CreateMode::EphemeralSequential)
///     .for_path_listing_parent("/q/n-")?;
/// assert!(created.siblings.map_or(true, |s| !s.is_empty()));
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedWithListing {
    /// The created path (namespace removed).
    pub path: String,
    /// The new node's Stat.
    pub stat: Stat,
    /// The parent's children, read in the same round trip as the create (or,
    /// for a sequential node that is the first child of a parent this create
    /// made, known without a read: the node alone); `None` when the create had
    /// to take a slower path (a retry).
    pub siblings: Option<Vec<String>>,
}

impl<'a> CreateBuilder<'a> {
    pub(super) fn new(fw: &'a CuratorFramework) -> Self {
        CreateBuilder {
            fw,
            mode: CreateMode::Persistent,
            data: None,
            acl: None,
            parents: Parents::None,
            protected: false,
            ttl: None,
        }
    }

    /// The create mode (default persistent).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.create().with_mode(zk_framework::CreateMode::Ephemeral).for_path("/e")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_mode(mut self, mode: CreateMode) -> Self {
        self.mode = mode;
        self
    }

    /// The node data (default: the client's default data).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.create().with_data(b"v".to_vec()).for_path("/d")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_data(mut self, data: Vec<u8>) -> Self {
        self.data = Some(data);
        self
    }

    /// The node's ACL (default: the one the client's
    /// [`AclProvider`](super::AclProvider) gives its path). Parents created
    /// for it still get the provider's ACLs, as with Curator's `withACL(acl)`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.create().with_acl(zk_framework::Acl::open_unsafe()).for_path("/a")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Create missing parents as containers (persistent if the client was built
    /// with `dont_use_container_parents`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.create().creating_parent_containers_if_needed().for_path("/x/y/z")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn creating_parent_containers_if_needed(mut self) -> Self {
        self.parents = Parents::Containers;
        self
    }

    /// Create missing parents as persistent nodes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.create().creating_parents_if_needed().for_path("/x/y/z")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn creating_parents_if_needed(mut self) -> Self {
        self.parents = Parents::Persistent;
        self
    }

    /// Curator's protection: the node is named `_c_<uuid>-<name>`, so that after
    /// a ConnectionLoss the create can find its node instead of leaving an orphan;
    /// if the create fails for good, the orphan is deleted in the background.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = c.create().with_protection().with_mode(zk_framework::CreateMode::EphemeralSequential).for_path("/l/lock-")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_protection(mut self) -> Self {
        self.protected = true;
        self
    }

    /// A TTL, for the TTL create modes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.create().with_mode(zk_framework::CreateMode::PersistentWithTtl).with_ttl(std::time::Duration::from_secs(5)).for_path("/t")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Runs the create and returns the created path (namespace removed).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] before anything is sent; [`Error::NodeExists`],
    /// [`Error::NoNode`] (parent missing and no parent creation), and the last
    /// retryable error when retries run out.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = c.create().for_path("/plain")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn for_path(self, path: &str) -> Result<String> {
        self.for_path_with_stat(path).map(|(p, _)| p)
    }

    /// Runs the create and also returns the new node's Stat (create2).
    ///
    /// # Errors
    ///
    /// As [`CreateBuilder::for_path`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (p, stat) = c.create().for_path_with_stat("/s")?;
    /// assert_eq!(stat.version, 0);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn for_path_with_stat(self, path: &str) -> Result<(String, Stat)> {
        self.run(path, false).map(|c| (c.path, c.stat))
    }

    /// Runs the create and, in the same round trip, lists the new node's parent
    /// (the two requests are pipelined; ZooKeeper answers them in order, so the
    /// listing shows the new node). Lock recipes use it so that an uncontended
    /// acquire needs no separate listing. Not for containers or TTL nodes.
    ///
    /// With parent creation, a parent this client has not seen a create under
    /// lately (it remembers up to 8,192) is created in the same round trip,
    /// just ahead of the node (a `NodeExists` for it is ignored); a parent that
    /// has gone since (an empty container reaped) is made again after the
    /// create's `NoNode`. The listing then waits for the two replies: if this
    /// create made the parent and a sequential node got suffix `0000000000`,
    /// the node is the first child the parent has had (the suffix is the
    /// parent's creation counter), and the listing is the node alone, with no
    /// read; otherwise (the parent was there, or another session's create came
    /// first) it is read in a second round trip. So a lock on a fresh path
    /// costs one round trip and two writes; one on a path that exists but is
    /// new to this client, two round trips, once.
    ///
    /// # Errors
    ///
    /// As [`CreateBuilder::for_path`]. A failed listing is not an error: the
    /// siblings are then `None`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::CreateMode;
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let created = c
    ///     .create()
    ///     .creating_parent_containers_if_needed()
    ///     .with_mode(CreateMode::EphemeralSequential)
    ///     .for_path_listing_parent("/q/n-")?;
    /// println!("{} among {:?}", created.path, created.siblings);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn for_path_listing_parent(self, path: &str) -> Result<CreatedWithListing> {
        self.run(path, true)
    }

    /// Creates several nodes in one transaction (all or none), each with its
    /// own data, in the builder's mode, ACL and parent handling, and lists each
    /// node's parent in the same round trip. With [`CreateBuilder::with_protection`]
    /// every node gets the same protected `_c_<uuid>-` name, and the protected
    /// create's recovery applies to the group: after a failed attempt the nodes
    /// are looked for by prefix before creating again (an old session's are
    /// deleted first, CURATOR-498), and a create whose outcome stays unknown
    /// (connection loss, deadline) is cleaned up in the background by prefix.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty list; otherwise as
    /// [`CreateBuilder::for_path`], for the transaction as a whole.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::CreateMode;
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let both = c
    ///     .create()
    ///     .creating_parent_containers_if_needed()
    ///     .with_protection()
    ///     .with_mode(CreateMode::EphemeralSequential)
    ///     .for_paths_together(&[("/sem/locks/lock-", vec![]), ("/sem/leases/lease-", b"me".to_vec())])?;
    /// assert_eq!(both.paths.len(), 2);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn for_paths_together(self, nodes: &[(&str, Vec<u8>)]) -> Result<CreatedTogether> {
        if nodes.is_empty() {
            return Err(Error::InvalidArgument("a transaction needs at least one node".into()));
        }
        let fw = self.fw;
        for (p, d) in nodes {
            validate_path(p, self.mode.is_sequential())?;
            if d.len() > zk_proto::frame::DEFAULT_MAX_FRAME {
                return Err(Error::DataTooLarge {
                    len: d.len(),
                    max: zk_proto::frame::DEFAULT_MAX_FRAME,
                });
            }
        }
        let provider = fw.inner().acl_provider.clone();
        let parents_mode = match self.parents {
            Parents::None => None,
            Parents::Containers if fw.inner().container_parents => Some(CreateMode::Container),
            _ => Some(CreateMode::Persistent),
        };
        let id = new_protected_id();
        let prefix = format!("{PROTECTED_PREFIX}{id}-");
        // (parent, full server path to create) per node.
        let targets: Vec<(String, String)> = nodes
            .iter()
            .map(|(p, _)| {
                let sp = fw.server_path(p);
                let parent_sp = parent(&sp).unwrap_or("/").to_string();
                let target = if self.protected {
                    join(&parent_sp, &protected_name(&id, basename(&sp)))
                } else {
                    sp
                };
                (parent_sp, target)
            })
            .collect();
        // Each node's ACL: the builder's, else the provider's for its path.
        let acls: Vec<Vec<Acl>> = nodes
            .iter()
            .map(|(p, _)| match &self.acl {
                Some(a) => a.clone(),
                None => acl_of(&*provider, &fw.server_path(p)),
            })
            .collect();
        let parent_refs: Vec<&str> = targets.iter().map(|(p, _)| p.as_str()).collect();
        let mode = self.mode;
        let mut first = true;
        let result = fw.retry(|zk| {
            if self.protected && !first {
                if let Some(found) = find_group(zk, &parent_refs, &prefix, mode)? {
                    return Ok(found);
                }
            }
            first = false;
            let mut attempts = 0;
            loop {
                let ops = targets
                    .iter()
                    .zip(nodes)
                    .zip(&acls)
                    .map(|(((_, t), (_, d)), acl)| crate::client::Op::create(t.clone(), d.clone(), acl.clone(), mode))
                    .collect();
                let (txn, lists) = zk.multi_then_get_children(ops, &parent_refs)?;
                match txn {
                    Ok((results, zxid)) => {
                        let paths = results
                            .iter()
                            .map(|r| match r {
                                crate::client::OpResult::Create { path, .. } => Some(path.clone()),
                                _ => None,
                            })
                            .collect::<Option<Vec<_>>>()
                            .ok_or(Error::ConnectionLoss)?;
                        return Ok(CreatedTogether {
                            paths,
                            czxid: zxid,
                            session_id: zk.session_id(),
                            siblings: lists.into_iter().map(Result::ok).collect(),
                        });
                    }
                    Err(Error::NoNode { .. }) if attempts < PARENT_ATTEMPTS => {
                        let Some(pm) = parents_mode else {
                            return Err(Error::NoNode {
                                path: targets[0].0.clone(),
                            });
                        };
                        attempts += 1;
                        for (_, t) in &targets {
                            make_parents(zk, t, &*provider, pm)?;
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        });
        match result {
            Ok(mut c) => {
                for p in &mut c.paths {
                    *p = fw.user_path(p);
                }
                Ok(c)
            }
            Err(e) => {
                if self.protected && e.may_have_applied() {
                    for (parent_sp, _) in &targets {
                        fw.inner().background.find_and_delete(parent_sp.clone(), prefix.clone());
                    }
                }
                Err(e)
            }
        }
    }

    fn run(self, path: &str, list_parent: bool) -> Result<CreatedWithListing> {
        validate_path(path, self.mode.is_sequential())?;
        let fw = self.fw;
        let server_path = fw.server_path(path);
        let data = self.data.clone().unwrap_or_else(|| fw.default_data().to_vec());
        if data.len() > zk_proto::frame::DEFAULT_MAX_FRAME {
            return Err(Error::DataTooLarge {
                len: data.len(),
                max: zk_proto::frame::DEFAULT_MAX_FRAME,
            });
        }
        let provider = fw.inner().acl_provider.clone();
        let acl = self.acl.clone().unwrap_or_else(|| acl_of(&*provider, &server_path));
        let parents = match self.parents {
            Parents::Containers if !fw.inner().container_parents => Parents::Persistent,
            p => p,
        };
        let spec = CreateSpec {
            mode: self.mode,
            data,
            acl,
            provider,
            parents,
            ttl: self.ttl,
            list_parent: list_parent && self.ttl.is_none() && !self.mode.is_container(),
            known_parents: fw.inner().known_parents.clone(),
        };
        let result = if self.protected {
            protected_create(fw, &server_path, &spec)
        } else {
            fw.retry(|c| spec.create(c, &server_path))
        };
        result.map(|(p, stat, siblings)| CreatedWithListing {
            path: fw.user_path(&p),
            stat,
            siblings,
        })
    }
}

/// The result of [`CreateBuilder::for_paths_together`]: the nodes one
/// transaction created, their czxid and owner, and each parent's listing (a
/// semaphore's internal-mutex node and lease, created and listed in one
/// round trip; see [`crate::recipe`]).
///
/// # Examples
///
/// ```no_run
/// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let both: zk_framework::CreatedTogether = c
///     .create()
///     .with_mode(zk_framework::CreateMode::EphemeralSequential)
///     .for_paths_together(&[("/a/n-", vec![]), ("/b/n-", vec![])])?;
/// assert_eq!(both.session_id, c.session_id());
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTogether {
    /// The created paths (namespace removed), in the order given.
    pub paths: Vec<String>,
    /// The transaction's zxid: the czxid of every node it created.
    pub czxid: i64,
    /// The session the nodes were created on (their owner, if ephemeral).
    pub session_id: i64,
    /// Each node's parent's children (server names), listed in the same round
    /// trip; `None` when the nodes were found after a failed attempt.
    pub siblings: Vec<Option<Vec<String>>>,
}

/// After a failed attempt of a protected group: our nodes, if the transaction
/// happened on this session. Nodes of an old session are deleted (they may
/// still be alive on the server) so that the caller creates the group again.
fn find_group(zk: &Client, parents: &[&str], prefix: &str, mode: CreateMode) -> Result<Option<CreatedTogether>> {
    let found = find_protected_in(zk, parents, prefix)?;
    let Some(Some(first)) = found.first() else {
        return Ok(None);
    };
    if let Some(stat) = synced_exists(zk, first)? {
        let ours = !mode.is_ephemeral() || stat.ephemeral_owner == zk.session_id();
        if ours && found.iter().all(Option::is_some) {
            log::debug!("protected transaction found its nodes after a failed attempt");
            return Ok(Some(CreatedTogether {
                paths: found.into_iter().flatten().collect(),
                czxid: stat.czxid,
                session_id: zk.session_id(),
                siblings: vec![None; parents.len()],
            }));
        }
    }
    for f in found.iter().flatten() {
        match zk.delete(f, None) {
            Ok(()) | Err(Error::NoNode { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

struct CreateSpec {
    mode: CreateMode,
    data: Vec<u8>,
    acl: Vec<Acl>,
    /// The parents' ACLs.
    provider: Arc<dyn AclProvider>,
    parents: Parents,
    ttl: Option<Duration>,
    list_parent: bool,
    /// Parents a create found lately (see [`KnownParents`]).
    known_parents: Arc<KnownParents>,
}

type Created = (String, Stat, Option<Vec<String>>);

impl CreateSpec {
    /// One attempt: create; on NoNode with parent creation, make the parents and
    /// create once more. With `list_parent`, every try lists the parent too
    /// (pipelined, or, under a parent it makes, only if the node is not the
    /// parent's first child).
    fn create(&self, c: &Client, path: &str) -> Result<Created> {
        let parent_path = parent(path).unwrap_or("/");
        let mode = if self.parents == Parents::Containers {
            CreateMode::Container
        } else {
            CreateMode::Persistent
        };
        // A listing create under a parent not known to exist makes the parent
        // in the same round trip.
        let mut make_parent = self.list_parent
            && self.parents != Parents::None
            && parent_path != "/"
            && !self.known_parents.contains(parent_path);
        let parent_acl = if make_parent {
            acl_of(&*self.provider, parent_path)
        } else {
            Vec::new()
        };
        let once = |make_parent: bool| {
            if self.list_parent {
                let made = make_parent.then_some((parent_path, parent_acl.as_slice(), mode));
                return c
                    .pipelined_create(made, path, &self.data, &self.acl, self.mode, parent_path)
                    .map(|((p, stat), kids)| (p, stat, kids.ok()));
            }
            match self.ttl {
                Some(ttl) => c.create_ttl(path, &self.data, &self.acl, self.mode, ttl),
                None => c.create2(path, &self.data, &self.acl, self.mode),
            }
            .map(|(p, st)| (p, st, None))
        };
        // An empty container parent may be reaped by the server between our
        // creating it and creating under it; that race shows up as NoNode and is
        // retried a bounded number of times.
        let mut attempts = 0;
        loop {
            match once(make_parent) {
                Err(Error::NoNode { .. }) if self.parents != Parents::None && attempts < PARENT_ATTEMPTS => {
                    attempts += 1;
                    self.known_parents.remove(parent_path);
                    make_parents(c, path, &*self.provider, mode)?;
                    make_parent = false;
                }
                Ok(created) => {
                    // Remember the parent unless it was known all along (the
                    // usual acquire: no second lock on the hot path).
                    if self.list_parent && (make_parent || attempts > 0) {
                        self.known_parents.insert(parent_path);
                    }
                    return Ok(created);
                }
                Err(e @ Error::NoNode { .. }) if self.parents != Parents::None => {
                    return Err(missing_chroot(c).unwrap_or(e));
                }
                r => return r,
            }
        }
    }
}

/// How often a create makes its parents again after NoNode (an empty
/// container parent may be reaped between our creating it and using it).
const PARENT_ATTEMPTS: u32 = 5;

/// Creates every missing ancestor of `path` in `mode` (existing ones are
/// fine), each with the ACL `provider` gives its path. The deepest first:
/// usually only the parent is missing, and that is one request; on NoNode it
/// goes up until a create succeeds (or finds the node there), then back down.
fn make_parents(c: &Client, path: &str, provider: &dyn AclProvider, mode: CreateMode) -> Result<()> {
    let all = ancestors(path);
    let mut made = all.len();
    while made > 0 {
        let p = all[made - 1];
        match c.create(p, &[], &acl_of(provider, p), mode) {
            Ok(_) | Err(Error::NodeExists { .. }) => break,
            Err(Error::NoNode { .. }) => made -= 1,
            Err(e) => return Err(e),
        }
    }
    if made == 0 && !all.is_empty() {
        // Even the topmost ancestor could not be made: its parent, the
        // client's root, is missing. Without a chroot `/` always exists.
        if let Some(e) = missing_chroot(c) {
            return Err(e);
        }
    }
    for p in &all[made..] {
        match c.create(p, &[], &acl_of(provider, p), mode) {
            Ok(_) | Err(Error::NodeExists { .. }) | Err(Error::NoNode { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Curator's protected create: a fixed `_c_<uuid>-` name; after a failed attempt
/// look for our node by prefix before creating again; if the create fails for
/// good with ConnectionLoss, delete any orphan in the background.
///
/// CURATOR-498: an ephemeral node found after the session changed belongs to
/// the old session and is never adopted. Ownership is read from the node's
/// `ephemeralOwner` (not from a session id remembered at the first attempt,
/// which is 0 when that attempt ran before the first connection). The old node
/// is deleted before the create, in this attempt: the old session may still be
/// alive on the server (a restarted server gives its sessions a fresh timeout),
/// and a non-sequential create of the same name would then fail with
/// NodeExists.
fn protected_create(fw: &CuratorFramework, server_path: &str, spec: &CreateSpec) -> Result<Created> {
    let parent_path = parent(server_path).unwrap_or("/").to_string();
    let id = new_protected_id();
    let name = protected_name(&id, basename(server_path));
    let prefix = format!("{PROTECTED_PREFIX}{id}-");
    let adjusted = join(&parent_path, &name);
    let mut first = true;
    let result = fw.retry(|c| {
        if !first {
            if let Some(found) = find_protected(c, &parent_path, &prefix)? {
                if let Some(stat) = synced_exists(c, &found)? {
                    if !spec.mode.is_ephemeral() || stat.ephemeral_owner == c.session_id() {
                        log::debug!("protected create found its node {found} after a failed attempt");
                        return Ok((found, stat, None));
                    }
                    log::info!(
                        "protected create found {found} of the old session 0x{:x}; deleting it",
                        stat.ephemeral_owner
                    );
                    match c.delete(&found, Some(stat.version)) {
                        Ok(()) | Err(Error::NoNode { .. }) => {}
                        Err(e) => {
                            if !e.is_retryable() {
                                fw.background_delete(found, None);
                            }
                            return Err(e);
                        }
                    }
                }
            }
        }
        first = false;
        spec.create(c, &adjusted)
    });
    if let Err(e) = &result {
        if e.may_have_applied() {
            fw.inner().background.find_and_delete(parent_path, prefix);
        }
    }
    result
}

/// Our protected node under `parent_path`, if the create that may have made
/// it was applied: listed after a `sync`, so that a server lagging the create
/// (a follower the client reconnected to) cannot hide it.
fn find_protected(c: &Client, parent_path: &str, prefix: &str) -> Result<Option<String>> {
    Ok(find_protected_in(c, &[parent_path], prefix)?.pop().flatten())
}

/// [`find_protected`] under each of `parents`, after one `sync`.
fn find_protected_in(c: &Client, parents: &[&str], prefix: &str) -> Result<Vec<Option<String>>> {
    let Some(first) = parents.first() else {
        return Ok(Vec::new());
    };
    let reads: Vec<ReadOp> = parents.iter().map(|p| ReadOp::get_children(*p)).collect();
    c.sync_then_read(first, &reads)?
        .into_iter()
        .zip(parents)
        .map(|(listing, parent)| match listing {
            ReadResult::Children(Some((kids, _))) => Ok(kids
                .into_iter()
                .find(|k| k.starts_with(prefix))
                .map(|k| join(parent, &k))),
            ReadResult::Error(e) => Err(e),
            _ => Ok(None),
        })
        .collect()
}

/// The Stat of `path`, read after a `sync` (see [`find_protected`]).
fn synced_exists(c: &Client, path: &str) -> Result<Option<Stat>> {
    match c.sync_then_read(path, &[ReadOp::exists(path)])?.pop() {
        Some(ReadResult::Exists(stat)) => Ok(stat),
        Some(ReadResult::Error(e)) => Err(e),
        _ => Ok(None),
    }
}

/// A delete in progress; finish it with [`DeleteBuilder::for_path`].
#[must_use = "a delete does nothing until for_path is called"]
#[derive(Debug)]
pub struct DeleteBuilder<'a> {
    fw: &'a CuratorFramework,
    version: Option<i32>,
    guaranteed: bool,
    children: bool,
}

impl<'a> DeleteBuilder<'a> {
    pub(super) fn new(fw: &'a CuratorFramework) -> Self {
        DeleteBuilder {
            fw,
            version: None,
            guaranteed: false,
            children: false,
        }
    }

    /// Delete only this version.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete().with_version(3).for_path("/a")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_version(mut self, version: i32) -> Self {
        self.version = Some(version);
        self
    }

    /// A guaranteed delete: NoNode counts as success; if the delete fails with a
    /// retryable error after the retries, it goes on in the background until it
    /// succeeds or the client closes (and the error is still returned).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete().guaranteed().for_path("/maybe-gone")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn guaranteed(mut self) -> Self {
        self.guaranteed = true;
        self
    }

    /// Delete the children first (recursively).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete().deleting_children_if_needed().for_path("/tree")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn deleting_children_if_needed(mut self) -> Self {
        self.children = true;
        self
    }

    /// Runs the delete.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`]; [`Error::NoNode`] (not for guaranteed deletes);
    /// [`Error::BadVersion`]; [`Error::NotEmpty`]; the last retryable error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete().for_path("/a")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn for_path(self, path: &str) -> Result<()> {
        validate_path(path, false)?;
        let fw = self.fw;
        let server_path = fw.server_path(path);
        let result = fw.retry(|c| {
            if self.children {
                delete_children(c, &server_path)?;
            }
            match c.delete(&server_path, self.version) {
                Err(Error::NoNode { .. }) if self.guaranteed => Ok(()),
                r => r,
            }
        });
        if let Err(e) = &result {
            if self.guaranteed && (e.is_retryable() || matches!(e, Error::Closed | Error::DeadlineExceeded)) {
                fw.background_delete(server_path, self.version);
            }
        }
        result
    }
}

fn delete_children(c: &Client, path: &str) -> Result<()> {
    let kids = match c.get_children(path) {
        Ok(k) => k,
        Err(Error::NoNode { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    for k in kids {
        let p = join(path, &k);
        delete_children(c, &p)?;
        match c.delete(&p, None) {
            Ok(()) | Err(Error::NoNode { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
