//! ACL providers (Curator's `ACLProvider`): which ACL every node the managed
//! client creates gets, its parents, containers, namespace node and the lock
//! recipes' nodes included.

use std::fmt;

use zk_proto::Acl;

/// Chooses the ACL of every node a [`CuratorFramework`](super::CuratorFramework)
/// creates (Curator's `ACLProvider`): the nodes of `create()`, the parents and
/// containers it makes, the namespace node, and so every lock, lease and
/// semaphore node of `zk-recipes`. A create's own
/// [`with_acl`](super::CreateBuilder::with_acl) overrides it for that node
/// only (its parents still come from the provider), as Curator's
/// `withACL(acl)` does.
///
/// `path` is the server path (the namespace included, the chroot not), before
/// any sequence suffix or protection prefix is added to its last segment. An
/// empty answer from [`AclProvider::acl_for_path`] means "use
/// [`AclProvider::default_acl`]".
///
/// ACLs naming the `auth` scheme ([`Acl::creator_all`]) need credentials on
/// the session ([`CuratorFrameworkBuilder::authorization`](super::CuratorFrameworkBuilder::authorization)):
/// without them the server refuses the create with
/// [`Error::InvalidAcl`](crate::Error::InvalidAcl).
///
/// # Examples
///
/// ```
/// use zk_framework::{perms, Acl, AclProvider};
///
/// /// Locks are private to the creator; everything else is readable by all.
/// #[derive(Debug)]
/// struct PrivateLocks;
/// impl AclProvider for PrivateLocks {
///     fn default_acl(&self) -> Vec<Acl> {
///         Acl::creator_all_read_others()
///     }
///     fn acl_for_path(&self, path: &str) -> Vec<Acl> {
///         if path.starts_with("/locks") { Acl::creator_all() } else { Vec::new() }
///     }
/// }
/// assert_eq!(PrivateLocks.acl_for_path("/locks/a"), Acl::creator_all());
/// assert_eq!(PrivateLocks.acl_for_path("/etc").len(), 0);
/// # let _ = perms::ALL;
/// ```
pub trait AclProvider: Send + Sync + fmt::Debug {
    /// The ACL of nodes for which [`AclProvider::acl_for_path`] has no answer.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{AclProvider, OpenAclProvider};
    /// assert_eq!(OpenAclProvider.default_acl(), zk_framework::Acl::open_unsafe());
    /// ```
    fn default_acl(&self) -> Vec<Acl>;

    /// The ACL for the node at the server path `path`; empty (the default)
    /// means [`AclProvider::default_acl`].
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{AclProvider, OpenAclProvider};
    /// assert!(OpenAclProvider.acl_for_path("/any").is_empty());
    /// ```
    fn acl_for_path(&self, path: &str) -> Vec<Acl> {
        let _ = path;
        Vec::new()
    }
}

/// The ACL `provider` gives the node at server path `path`.
pub(crate) fn acl_of(provider: &dyn AclProvider, path: &str) -> Vec<Acl> {
    let acl = provider.acl_for_path(path);
    if acl.is_empty() {
        provider.default_acl()
    } else {
        acl
    }
}

/// Curator's `DefaultACLProvider`: `OPEN_ACL_UNSAFE` (`world:anyone`, all
/// permissions) everywhere. The managed client's default.
///
/// # Examples
///
/// ```
/// use zk_framework::{AclProvider, OpenAclProvider};
/// assert_eq!(OpenAclProvider.default_acl()[0].id.scheme, "world");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAclProvider;

impl AclProvider for OpenAclProvider {
    fn default_acl(&self) -> Vec<Acl> {
        Acl::open_unsafe()
    }
}

/// One fixed ACL for every node, e.g. [`FixedAclProvider::creator_all`]
/// (only sessions holding the creator's credentials may touch the nodes) or
/// [`FixedAclProvider::creator_all_read_others`] (others may read them).
///
/// # Examples
///
/// ```
/// use zk_framework::{perms, Acl, AclProvider, FixedAclProvider};
/// let p = FixedAclProvider::new(vec![Acl::digest("ops", "pw", perms::ALL)]);
/// assert_eq!(p.default_acl()[0].id.scheme, "digest");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedAclProvider {
    acl: Vec<Acl>,
}

impl FixedAclProvider {
    /// Every node gets `acl` (an empty ACL is refused by the server with
    /// [`Error::InvalidAcl`](crate::Error::InvalidAcl) when a node is created).
    ///
    /// # Examples
    ///
    /// ```
    /// let p = zk_framework::FixedAclProvider::new(zk_framework::Acl::read_unsafe());
    /// # let _ = p;
    /// ```
    pub fn new(acl: Vec<Acl>) -> Self {
        FixedAclProvider { acl }
    }

    /// `CREATOR_ALL_ACL`: every permission for the identities the creating
    /// session authenticated with, none for anyone else. The client needs
    /// credentials ([`authorization`](super::CuratorFrameworkBuilder::authorization)).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{AclProvider, FixedAclProvider};
    /// assert_eq!(FixedAclProvider::creator_all().default_acl()[0].id.scheme, "auth");
    /// ```
    pub fn creator_all() -> Self {
        FixedAclProvider::new(Acl::creator_all())
    }

    /// Every permission for the creator, read (data and children) for
    /// everyone else.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{AclProvider, FixedAclProvider};
    /// assert_eq!(FixedAclProvider::creator_all_read_others().default_acl().len(), 2);
    /// ```
    pub fn creator_all_read_others() -> Self {
        FixedAclProvider::new(Acl::creator_all_read_others())
    }
}

impl AclProvider for FixedAclProvider {
    fn default_acl(&self) -> Vec<Acl> {
        self.acl.clone()
    }
}

/// One ACL for the nodes at `root` and below (a lock's path, its lock,
/// lease and queue nodes), another for every other node the client creates:
/// the parents made on the way to `root` and the namespace node.
///
/// [`FixedAclProvider::creator_all`] makes the missing parents of a lock
/// creator-only too, as Curator does: after one user takes a lock at
/// `/team/deploy`, `/team` admits nobody else, and another user cannot even
/// create `/team/other`. [`ScopedAclProvider::creator_nodes`] keeps the lock's
/// own nodes creator-only and lets others read the parents and create under
/// them (not delete their children), so that a sibling lock stays possible.
///
/// `root` is a server path, as [`AclProvider::acl_for_path`] sees paths: with
/// a namespace `ns`, pass `/ns/team/deploy` for the client path `/team/deploy`.
///
/// # Examples
///
/// ```
/// use zk_framework::{perms, Acl, AclProvider, ScopedAclProvider};
/// let p = ScopedAclProvider::creator_nodes("/team/deploy")?;
/// assert_eq!(p.acl_for_path("/team/deploy"), Acl::creator_all());
/// assert_eq!(p.acl_for_path("/team/deploy/_c_1-lock-"), Acl::creator_all());
/// // A parent: the creator may do anything, others may read and create children.
/// let parent = p.acl_for_path("/team");
/// assert!(parent.iter().any(|a| a.id.scheme == "world" && a.perms == perms::READ | perms::CREATE));
/// assert_eq!(p.acl_for_path("/team/deployment"), parent);
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedAclProvider {
    root: String,
    nodes: Vec<Acl>,
    others: Vec<Acl>,
}

impl ScopedAclProvider {
    /// Nodes at `root` and below get `nodes`; every other node gets `others`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) when `root` is not a
    /// valid absolute path; [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// for `/` (every node would be below it) or an empty ACL (the server
    /// refuses it with `InvalidACL`).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{Acl, AclProvider, ScopedAclProvider};
    /// let p = ScopedAclProvider::new("/locks", Acl::creator_all(), Acl::read_unsafe())?;
    /// assert_eq!(p.acl_for_path("/locks/a"), Acl::creator_all());
    /// assert_eq!(p.default_acl(), Acl::read_unsafe());
    /// assert!(ScopedAclProvider::new("locks", Acl::creator_all(), Acl::open_unsafe()).is_err());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn new(root: &str, nodes: Vec<Acl>, others: Vec<Acl>) -> crate::error::Result<Self> {
        zk_proto::path::validate_path(root, false)?;
        if root == "/" {
            return Err(crate::error::Error::InvalidArgument(
                "a scoped ACL's root must be below / (every node is below /)".into(),
            ));
        }
        if nodes.is_empty() || others.is_empty() {
            return Err(crate::error::Error::InvalidArgument(
                "a scoped ACL provider needs a non-empty ACL for both the nodes and the others".into(),
            ));
        }
        Ok(ScopedAclProvider {
            root: root.to_string(),
            nodes,
            others,
        })
    }

    /// Creator-only nodes at `root` and below ([`Acl::creator_all`]); the
    /// parents made on the way (and the namespace node) give the creator every
    /// permission and everyone else READ and CREATE: others can list them and
    /// create their own nodes under them (a sibling lock), but not delete
    /// their children. Needs credentials on the session, like every `auth`
    /// ACL.
    ///
    /// # Errors
    ///
    /// As [`ScopedAclProvider::new`], for a bad `root`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{CuratorFramework, ScopedAclProvider};
    /// let b = CuratorFramework::builder()
    ///     .authorization("digest", b"deployer:s3cret")
    ///     .acl_provider(ScopedAclProvider::creator_nodes("/team/deploy")?);
    /// # let _ = b;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn creator_nodes(root: &str) -> crate::error::Result<Self> {
        let mut parents = Acl::creator_all();
        parents.push(Acl::world(zk_proto::perms::READ | zk_proto::perms::CREATE));
        ScopedAclProvider::new(root, Acl::creator_all(), parents)
    }

    /// The root: nodes at it and below get the nodes' ACL.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = zk_framework::ScopedAclProvider::creator_nodes("/a/b")?;
    /// assert_eq!(p.root(), "/a/b");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn root(&self) -> &str {
        &self.root
    }
}

impl AclProvider for ScopedAclProvider {
    fn default_acl(&self) -> Vec<Acl> {
        self.others.clone()
    }

    fn acl_for_path(&self, path: &str) -> Vec<Acl> {
        let below = path
            .strip_prefix(self.root.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if below {
            self.nodes.clone()
        } else {
            self.others.clone()
        }
    }
}
