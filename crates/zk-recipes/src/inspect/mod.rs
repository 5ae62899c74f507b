//! Who holds a lock and who waits, who is in a group, what a counter reads,
//! a service's instances and who owns a partition's items: the inspection
//! tool ([`crate::inspect_lock`], [`crate::lock_participants`],
//! [`crate::group_members`], [`crate::read_counter`],
//! [`crate::inspect_service`], [`crate::service_names`],
//! [`crate::inspect_partition`]; `zk-lock status`, `services` and
//! `partition` are built on it). It needs no recipe instance and reads any path; nothing in the
//! recipes imports it.

pub(crate) mod services;
pub(crate) mod tool;

// The earlier paths of this family's items, as deprecated aliases of the
// crate root's (one path per item).

/// The earlier path of [`crate::LockLayout`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::LockLayout`")]
pub type LockLayout = crate::locks::participants::LockLayout;
/// The earlier path of [`crate::ParticipantKind`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::ParticipantKind`"
)]
pub type ParticipantKind = crate::locks::participants::ParticipantKind;
/// The earlier path of [`crate::Participant`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Participant`")]
pub type Participant = crate::locks::participants::Participant;
/// The earlier path of [`crate::LockReport`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::LockReport`")]
pub type LockReport = crate::inspect::tool::LockReport;
/// The earlier path of [`crate::Member`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Member`")]
pub type Member = crate::inspect::tool::Member;
/// The earlier path of [`crate::CounterReading`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::CounterReading`"
)]
pub type CounterReading = crate::inspect::tool::CounterReading;
/// The earlier path of [`crate::detect_lock_layout`].
///
/// # Errors
///
/// As [`crate::detect_lock_layout`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::detect_lock_layout`"
)]
pub fn detect_layout(
    client: &zk_framework::CuratorFramework,
    path: &str,
) -> crate::error::Result<crate::locks::participants::LockLayout> {
    crate::inspect::tool::detect_layout(client, path)
}
/// The earlier path of [`crate::inspect_lock`].
///
/// # Errors
///
/// As [`crate::inspect_lock`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::inspect_lock`")]
pub fn inspect(
    client: &zk_framework::CuratorFramework,
    path: &str,
) -> crate::error::Result<crate::inspect::tool::LockReport> {
    crate::inspect::tool::inspect(client, path)
}
/// The earlier path of [`crate::inspect_lock_as`].
///
/// # Errors
///
/// As [`crate::inspect_lock_as`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::inspect_lock_as`"
)]
pub fn inspect_as(
    client: &zk_framework::CuratorFramework,
    path: &str,
    layout: crate::locks::participants::LockLayout,
) -> crate::error::Result<crate::inspect::tool::LockReport> {
    crate::inspect::tool::inspect_as(client, path, layout)
}
/// The earlier path of [`crate::lock_participants`].
///
/// # Errors
///
/// As [`crate::lock_participants`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::lock_participants`"
)]
pub fn participants(
    client: &zk_framework::CuratorFramework,
    path: &str,
    layout: crate::locks::participants::LockLayout,
) -> crate::error::Result<Vec<crate::locks::participants::Participant>> {
    crate::locks::participants::participants(client, path, layout)
}
/// The earlier path of [`crate::group_members`].
///
/// # Errors
///
/// As [`crate::group_members`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::group_members`")]
pub fn group_members(
    client: &zk_framework::CuratorFramework,
    path: &str,
) -> crate::error::Result<Vec<crate::inspect::tool::Member>> {
    crate::inspect::tool::group_members(client, path)
}
/// The earlier path of [`crate::read_counter`].
///
/// # Errors
///
/// As [`crate::read_counter`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::read_counter`")]
pub fn counter(
    client: &zk_framework::CuratorFramework,
    path: &str,
) -> crate::error::Result<crate::inspect::tool::CounterReading> {
    crate::inspect::tool::counter(client, path)
}
