//! The lock tree the campaign works on: its root, the three locks and the
//! leader election.

pub(crate) const ROOT: &str = "/campaign";
pub(crate) const MUTEX_PATH: &str = "/campaign/mutex";
pub(crate) const RW_PATH: &str = "/campaign/rw";
pub(crate) const SEM_PATH: &str = "/campaign/sem";
pub(crate) const ELECTION_PATH: &str = "/campaign/election";

/// Where holders write, guarded by their lock (`RESOURCE/mutex`, `/rw`, `/sem`,
/// and `/election` for the leaders):
/// the resource whose order of fencing tokens the checker reads back.
pub(crate) const RESOURCE: &str = "/campaign-resource";

/// The resource node of a lock (`/campaign/mutex` -> `/campaign-resource/mutex`).
pub(crate) fn resource_path(lock: &str) -> String {
    format!("{RESOURCE}/{}", lock.rsplit('/').next().unwrap_or(lock))
}

/// The cache kind's subtree (`--cache`): the writers' nodes, which every
/// worker's `CuratorCache` follows. Outside [`ROOT`], so that the leak check
/// does not count its nodes.
pub(crate) const CACHE_ROOT: &str = "/campaign-cache";

/// The counter kind's `DistributedAtomicLong` (`--counter`): every worker
/// increments it. Outside [`ROOT`], as the cache's subtree.
pub(crate) const COUNTER_PATH: &str = "/campaign-counter/value";

/// The registration kind's parent (`--registration`): every worker keeps an
/// ephemeral `PersistentNode` there; the coordinator's observer caches it.
pub(crate) const REG_ROOT: &str = "/campaign-reg";

/// The partitioner kind's path (`--partition`): every worker's
/// `SetPartitioner` member (party `…/party/<member>`, locks
/// `…/locks/<item>`). Under [`ROOT`], so that the leak check counts its
/// lock nodes and the composed faults' breaks delete a broken session's
/// party node and locks with its other nodes.
pub(crate) const PARTITION_PATH: &str = "/campaign/partition";
