//! The lock tree the campaign works on: its root and the three locks.

pub(crate) const ROOT: &str = "/campaign";
pub(crate) const MUTEX_PATH: &str = "/campaign/mutex";
pub(crate) const RW_PATH: &str = "/campaign/rw";
pub(crate) const SEM_PATH: &str = "/campaign/sem";
