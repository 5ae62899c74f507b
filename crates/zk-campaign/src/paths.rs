//! The lock tree the campaign works on: its root, the three locks and the
//! leader election.

pub(crate) const ROOT: &str = "/campaign";
pub(crate) const MUTEX_PATH: &str = "/campaign/mutex";
pub(crate) const RW_PATH: &str = "/campaign/rw";
pub(crate) const SEM_PATH: &str = "/campaign/sem";
pub(crate) const ELECTION_PATH: &str = "/campaign/election";
