//! Nodes that come back: [`PersistentNode`](crate::PersistentNode) (Curator's layout and modes), a
//! node kept in place by a thread of its own, re-created after a session
//! loss, after someone deletes it and when its parent vanishes, with an
//! honest [`Registration`](crate::Registration); [`PersistentTtlNode`] (a TTL node kept alive by
//! a touch child); [`GroupMember`](crate::GroupMember) (a member of a group, with the group read
//! from a cache).
//!
//! # What `Registered` means
//!
//! A node is [`Registration::Registered`](crate::Registration::Registered) only while the server has shown
//! it, in the client's current connection epoch
//! ([`Recipe::connection_epoch`]), to exist (and, for an ephemeral
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
//!   [`Error::TtlNotEnabled`](crate::Error::TtlNotEnabled) from the initial
//!   wait) instead of Curator's ~1,100 creates per second; a missing parent
//!   (without parent creation) is watched and the node created when it
//!   appears (Curator waits for a reconnect).
//!
//! [`Recipe::connection_epoch`]: zk_framework::recipe::Recipe::connection_epoch

pub(crate) mod builder;
pub(crate) mod group;
mod keeper;
pub(crate) mod metrics;
pub(crate) mod node;
pub(crate) mod registration;
pub(crate) mod state;
pub(crate) mod ttl;

// The earlier paths of this family's items, as deprecated aliases of the
// crate root's (one path per item).

/// The earlier path of [`PersistentNode`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::PersistentNode`"
)]
pub type PersistentNode = crate::nodes::node::PersistentNode;
/// The earlier path of [`PersistentNodeBuilder`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::PersistentNodeBuilder`"
)]
pub type PersistentNodeBuilder = crate::nodes::builder::PersistentNodeBuilder;
/// The earlier path of [`PersistentTtlNode`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::PersistentTtlNode`"
)]
pub type PersistentTtlNode = crate::nodes::ttl::PersistentTtlNode;
/// The earlier path of [`GroupMember`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::GroupMember`")]
pub type GroupMember = crate::nodes::group::GroupMember;
/// The earlier path of [`MemberEvent`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::MemberEvent`")]
pub type MemberEvent = crate::nodes::registration::MemberEvent;
/// The earlier path of [`Registration`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Registration`")]
pub type Registration = crate::nodes::registration::Registration;
/// The earlier path of [`AbsentReason`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::AbsentReason`")]
pub type AbsentReason = crate::nodes::registration::AbsentReason;
/// The earlier path of [`UncertainReason`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::UncertainReason`"
)]
pub type UncertainReason = crate::nodes::registration::UncertainReason;
