//! The one error type of `zk-recipes`.

use std::fmt;

/// Everything a recipe can fail with. A timeout is not an error: the timed
/// acquires return `Ok(None)`.
///
/// # Examples
///
/// ```
/// use zk_recipes::Error;
/// let e = Error::NotOwner { path: "/locks/a".into() };
/// assert_eq!(e.to_string(), "this thread does not hold the lock at /locks/a");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A ZooKeeper or client error.
    ZooKeeper(zk_framework::Error),
    /// A release by a thread that does not hold the lock (never acquired, already
    /// fully released, or another thread).
    NotOwner {
        /// The lock path.
        path: String,
    },
    /// A thread holding only the read lock asked for the write lock; that would
    /// wait on itself forever.
    UpgradeRefused {
        /// The lock path.
        path: String,
    },
    /// The lock was lost while it was held (session expired or node deleted).
    LockLost {
        /// The lock path.
        path: String,
    },
    /// The lock may be lost: the connection is suspended or read-only, or no
    /// request answered by the server was sent within the read timeout. Stop
    /// work that needs exclusion until it is held again.
    LockUncertain {
        /// The lock path.
        path: String,
    },
    /// Our lock node vanished while waiting and the retry policy gave up.
    NodeVanished {
        /// The lock path.
        path: String,
    },
    /// One of the caller's ops in a guarded transaction failed (the lock was
    /// still held): nothing was written.
    TransactionFailed {
        /// The failing op's index among the caller's ops.
        index: usize,
        /// Its error.
        error: zk_framework::Error,
    },
    /// An argument is out of range (for example zero leases).
    InvalidArgument(String),
    /// The deadline came while a request of the acquire was unanswered (a
    /// frozen connection, a partition the client has not noticed yet, a
    /// server too slow for the time given): whether the lock was free is
    /// unknown. Nothing of the acquire is left behind (a node it may have
    /// created is deleted in the background). Unlike `Ok(None)`, which
    /// means the lock was held by someone else, this is not a verdict about
    /// the lock. Retryable.
    NoAnswer {
        /// The lock's path.
        path: String,
    },
    /// Several errors, in order (for example every failed release of a
    /// multi-lock).
    Multiple(Vec<Error>),
    /// Not the leader of the election at `path` (never elected, or the
    /// leadership ended: lost, resigned, given up at a suspension, closed).
    NotLeader {
        /// The election path.
        path: String,
    },
    /// The leadership at `path` may be lost: the connection is suspended or
    /// read-only, or no request answered by the server was sent within the
    /// read timeout. Stop work that needs a single leader until it is
    /// certain again.
    LeadershipUncertain {
        /// The election path.
        path: String,
    },
    /// `start()` on a recipe instance that was started already (a latch, a
    /// selector, an observer, a cache, a watcher, a node, a shared value).
    AlreadyStarted {
        /// The recipe's type (`"LeaderLatch"`, `"CuratorCache"`, ...).
        recipe: &'static str,
        /// Its path.
        path: String,
    },
    /// A recipe instance used before its `start()`.
    NotStarted {
        /// The recipe's type.
        recipe: &'static str,
        /// Its path.
        path: String,
    },
    /// The recipe instance is closed (`close()` was called, or a wait was
    /// ended by it); a closed instance is not started again.
    Closed {
        /// The recipe's type.
        recipe: &'static str,
        /// Its path.
        path: String,
    },
    /// The system refused a thread the recipe needs (its background
    /// thread): nothing was started.
    SpawnFailed {
        /// The recipe's type.
        recipe: &'static str,
        /// Its path.
        path: String,
        /// What the system said.
        reason: String,
    },
    /// A cache's subtree holds more nodes than its limit
    /// ([`crate::cache::CuratorCacheBuilder::max_nodes`]): the cache stopped
    /// following the server rather than grow without bound.
    CacheTooLarge {
        /// The cache's root.
        path: String,
        /// The limit it was built with.
        limit: usize,
    },
    /// A cache was asked for a current value while its view is not current.
    CacheNotCurrent {
        /// The path asked for.
        path: String,
        /// How fresh the view is.
        freshness: crate::freshness::Freshness,
    },
    /// The server does not allow TTL nodes: start it with
    /// `zookeeper.extendedTypesEnabled=true`.
    TtlNotEnabled {
        /// The TTL node's path.
        path: String,
    },
    /// A counter or shared count node holds bytes of the wrong length
    /// (shorter than the number's width, or for a shared count anything
    /// but 4 bytes): someone else wrote it. The bytes are shown.
    CorruptValue {
        /// The node's path.
        path: String,
        /// How many bytes the value should have.
        expected: usize,
        /// What the node holds.
        bytes: Vec<u8>,
    },
    /// An update would overflow the counter's type; nothing was written.
    Overflow {
        /// The counter's path.
        path: String,
        /// The value read.
        value: i64,
        /// `"+"` or `"-"`.
        operation: &'static str,
        /// The operand that did not fit.
        operand: i64,
    },
    /// `leave` on a double barrier this instance is not a member of: it never
    /// entered, it already left, or its member node was deleted by someone
    /// else while its session lived.
    NotBarrierMember {
        /// The barrier's path.
        path: String,
    },
    /// A queue item too large for ZooKeeper (its request, or the reply that
    /// reads it back, would exceed the 1 MiB frame limit, the server's default
    /// `jute.maxbuffer`): nothing was sent.
    ItemTooLarge {
        /// The queue's path.
        path: String,
        /// The item's length in bytes.
        len: usize,
        /// The largest item this queue accepts.
        max: usize,
    },
    /// An offer's reply was lost and no proof could be made (its session
    /// ended before it, or no answer came in time): the item may or may not
    /// be in the queue. It was not sent again (that could queue it twice).
    OfferUnknown {
        /// The queue's path.
        path: String,
        /// The item's bytes (what the caller offered).
        item: Vec<u8>,
    },
    /// A take's delete reply was lost and no proof could be made (its
    /// session ended before it, or no answer came in time): the item (read
    /// before the delete) may have been taken by this call or by another
    /// consumer, or may still be queued.
    TakeUnknown {
        /// The queue's path.
        path: String,
        /// The item's node name (`qn-<seq>`).
        node: String,
        /// The item's bytes.
        item: Vec<u8>,
    },
    /// `element()` on an empty queue.
    QueueEmpty {
        /// The queue's path.
        path: String,
    },
    /// A set partitioner has failed for good (its session expired, its
    /// partition function misbehaved, ...): it owns nothing and does
    /// nothing more; build a new one. The typed reason is its state's
    /// (`PartitionState::Failure`).
    PartitionFailed {
        /// The partitioner's path.
        path: String,
        /// Why, as its state says it.
        reason: String,
    },
    /// A set partitioner asked to `check()` its share while it does not
    /// own it (allocating, told to release, suspended, stuck).
    PartitionNotAcquired {
        /// The partitioner's path.
        path: String,
        /// Its state, as it displays.
        state: String,
    },
    /// A second set partitioner with one identifier in one party (on one
    /// client): two members with one identifier would get one index and
    /// one share.
    DuplicateMember {
        /// The partitioner's path.
        path: String,
        /// The identifier already in the party.
        identifier: String,
    },
    /// An instance of service discovery that cannot be registered or
    /// written as it is (an empty name, an empty id or one with a `/`, no
    /// service type, a name that makes no valid path): nothing was sent.
    InvalidInstance {
        /// The instance's service name.
        name: String,
        /// The instance's id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// A service instance's JSON that cannot be read (Curator's
    /// `JsonInstanceSerializer` rejects it too): not an object, bad JSON, an
    /// unknown `serviceType`, a field of the wrong type.
    InstanceJson {
        /// The node it was read from (empty when the JSON was given).
        node: String,
        /// Where in the JSON (`$`, `$.port`, `$.uriSpec.parts[1].value`).
        at: String,
        /// What is wrong there.
        reason: String,
    },
    /// A service instance's payload that does not serialize to JSON (its
    /// `Serialize` failed, or made JSON that cannot carry a class tag):
    /// nothing was written.
    PayloadNotSerializable {
        /// The class tag asked for.
        class: String,
        /// What the serializer said.
        reason: String,
    },
    /// A payload read as a type it does not hold: another class tag (as
    /// Jackson's `ClassCastException`), or JSON that does not fit the type.
    PayloadMismatch {
        /// The class tag asked for.
        expected: String,
        /// The payload's class tag, if it has one.
        found: Option<String>,
        /// What did not fit.
        reason: String,
    },
    /// A service discovery asked about an instance id it has not
    /// registered (an update, a wait).
    NotRegistered {
        /// The instance id.
        id: String,
    },
    /// A service discovery asked to register an instance id it has
    /// registered already (update it instead): nothing was changed.
    AlreadyRegistered {
        /// The instance id.
        id: String,
    },
    /// A URI template (Curator's `UriSpec`) that does not parse: a `{`
    /// inside a variable, a `}` without its `{`, a `{` never closed.
    InvalidUriSpec {
        /// The template.
        spec: String,
        /// What is wrong.
        reason: String,
    },
}

impl Error {
    /// Whether the caller's deadline passed while a request was unanswered:
    /// [`Error::NoAnswer`], or the client's `DeadlineExceeded` on its way to
    /// becoming one.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::Error;
    /// assert!(Error::NoAnswer { path: "/a".into() }.is_deadline());
    /// assert!(!Error::ZooKeeper(zk_framework::Error::ConnectionLoss).is_deadline());
    /// ```
    pub fn is_deadline(&self) -> bool {
        matches!(
            self,
            Error::ZooKeeper(zk_framework::Error::DeadlineExceeded) | Error::NoAnswer { .. }
        )
    }

    /// Whether retrying the operation later could succeed.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::Error;
    /// assert!(Error::ZooKeeper(zk_framework::Error::ConnectionLoss).is_retryable());
    /// assert!(!Error::NotOwner { path: "/a".into() }.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::ZooKeeper(e) => e.is_retryable(),
            Error::NodeVanished { .. }
            | Error::LockLost { .. }
            | Error::LockUncertain { .. }
            | Error::LeadershipUncertain { .. }
            | Error::NoAnswer { .. }
            | Error::CacheNotCurrent { .. } => true,
            _ => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ZooKeeper(e) => write!(f, "{e}"),
            Error::NotOwner { path } => write!(f, "this thread does not hold the lock at {path}"),
            Error::UpgradeRefused { path } => write!(
                f,
                "upgrade refused at {path}: this thread holds the read lock and cannot take the write lock"
            ),
            Error::LockLost { path } => write!(f, "the lock at {path} was lost"),
            Error::LockUncertain { path } => write!(
                f,
                "the lock at {path} may be lost: the connection is suspended or silent"
            ),
            Error::NodeVanished { path } => {
                write!(
                    f,
                    "our lock node under {path} vanished (session lost?) and retries ran out"
                )
            }
            Error::TransactionFailed { index, error } => {
                write!(
                    f,
                    "guarded transaction: op {index} failed ({error}); nothing was written"
                )
            }
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::NoAnswer { path } => write!(
                f,
                "ZooKeeper did not answer before the deadline (is the connection frozen or partitioned?): \
                 whether the lock at {path} is free is unknown"
            ),
            Error::NotLeader { path } => write!(f, "not the leader of the election at {path}"),
            Error::LeadershipUncertain { path } => write!(
                f,
                "the leadership of the election at {path} may be lost: the connection is suspended or silent"
            ),
            Error::AlreadyStarted { recipe, path } => write!(f, "the {recipe} at {path} was started already"),
            Error::NotStarted { recipe, path } => write!(f, "the {recipe} at {path} is not started"),
            Error::Closed { recipe, path } => write!(f, "the {recipe} at {path} is closed"),
            Error::SpawnFailed { recipe, path, reason } => {
                write!(f, "the {recipe} at {path} could not start its thread: {reason}")
            }
            Error::CacheTooLarge { path, limit } => write!(
                f,
                "the subtree at {path} holds more than {limit} nodes, the cache's limit: the cache stopped"
            ),
            Error::CacheNotCurrent { path, freshness } => {
                write!(f, "the cache's view of {path} is not current: it is {freshness}")
            }
            Error::TtlNotEnabled { path } => write!(
                f,
                "the server does not allow the TTL node at {path} (zookeeper.extendedTypesEnabled is off)"
            ),
            Error::CorruptValue { path, expected, bytes } => write!(
                f,
                "the value at {path} is {} bytes long where {expected} are expected: {bytes:02x?}",
                bytes.len()
            ),
            Error::Overflow {
                path,
                value,
                operation,
                operand,
            } => write!(
                f,
                "{value} {operation} {operand} overflows the counter at {path}; nothing was written"
            ),
            Error::NotBarrierMember { path } => write!(
                f,
                "not a member of the double barrier at {path} (never entered, already left, or the member node was deleted)"
            ),
            Error::ItemTooLarge { path, len, max } => write!(
                f,
                "a queue item of {len} bytes is too large for the queue at {path} (at most {max} bytes): nothing was sent"
            ),
            Error::OfferUnknown { path, item } => write!(
                f,
                "the offer of {} bytes to the queue at {path} lost its reply and could not be proven: the item may or may not be queued",
                item.len()
            ),
            Error::TakeUnknown { path, node, item } => write!(
                f,
                "the take of {node} ({} bytes) from the queue at {path} lost its reply and could not be proven: \
                 it may have been taken by this call or by another consumer, or may still be queued",
                item.len()
            ),
            Error::QueueEmpty { path } => write!(f, "the queue at {path} is empty"),
            Error::PartitionFailed { path, reason } => {
                write!(f, "the set partitioner at {path} has failed: {reason}")
            }
            Error::PartitionNotAcquired { path, state } => {
                write!(f, "the set partitioner at {path} does not own its share: it is {state}")
            }
            Error::DuplicateMember { path, identifier } => write!(
                f,
                "the identifier {identifier:?} is already a member of the party at {path}"
            ),
            Error::InvalidInstance { name, id, reason } => {
                write!(f, "the service instance {name:?}/{id:?} is invalid: {reason}")
            }
            Error::InstanceJson { node, at, reason } => {
                if node.is_empty() {
                    write!(f, "service instance JSON at {at}: {reason}")
                } else {
                    write!(f, "service instance JSON of {node} at {at}: {reason}")
                }
            }
            Error::PayloadNotSerializable { class, reason } => {
                write!(f, "the payload of class {class} does not serialize: {reason}")
            }
            Error::PayloadMismatch { expected, found, reason } => match found {
                Some(c) => write!(f, "the payload (class {c}) is not a {expected}: {reason}"),
                None => write!(f, "the payload (no class tag) is not a {expected}: {reason}"),
            },
            Error::NotRegistered { id } => write!(f, "no service instance {id:?} is registered here"),
            Error::AlreadyRegistered { id } => write!(
                f,
                "the service instance {id:?} is registered already (update it instead)"
            ),
            Error::InvalidUriSpec { spec, reason } => write!(f, "the URI spec {spec:?} is invalid: {reason}"),
            Error::Multiple(errors) => {
                write!(f, "{} errors: ", errors.len())?;
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::ZooKeeper(e) | Error::TransactionFailed { error: e, .. } => Some(e),
            _ => None,
        }
    }
}

impl From<zk_framework::Error> for Error {
    fn from(e: zk_framework::Error) -> Self {
        Error::ZooKeeper(e)
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
