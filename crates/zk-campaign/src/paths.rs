//! The lock tree the campaign works on: its root and the three locks.

pub(crate) const ROOT: &str = "/campaign";
pub(crate) const MUTEX_PATH: &str = "/campaign/mutex";
pub(crate) const RW_PATH: &str = "/campaign/rw";
pub(crate) const SEM_PATH: &str = "/campaign/sem";

/// Where holders write, guarded by their lock (`RESOURCE/mutex`, `/rw`, `/sem`):
/// the resource whose order of fencing tokens the checker reads back.
pub(crate) const RESOURCE: &str = "/campaign-resource";

/// The resource node of a lock (`/campaign/mutex` -> `/campaign-resource/mutex`).
pub(crate) fn resource_path(lock: &str) -> String {
    format!("{RESOURCE}/{}", lock.rsplit('/').next().unwrap_or(lock))
}
