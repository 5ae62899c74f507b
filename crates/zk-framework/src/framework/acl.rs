//! ACL providers (Curator's `ACLProvider`): which ACL every node the managed
//! client creates gets, its parents, containers, namespace node and the lock
//! recipes' nodes included.

use std::fmt;

use crate::proto::Acl;

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
