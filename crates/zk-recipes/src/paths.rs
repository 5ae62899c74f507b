//! The paths of the earlier layout whose rooms moved (the lock rules, the
//! holder identity, the lock figures, the shared values), as modules of
//! deprecated aliases of the crate root's items (one path per item).

/// The lock rules' earlier path: deprecated aliases of the crate root's.
pub mod driver {
    /// The earlier path of [`crate::Driver`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Driver`")]
    pub type Driver = crate::locks::driver::Driver;
    /// The earlier path of [`crate::Decision`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Decision`")]
    pub type Decision = crate::locks::driver::Decision;
    /// The earlier path of [`crate::Deletion`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Deletion`")]
    pub type Deletion = crate::locks::driver::Deletion;
    /// The earlier path of [`crate::NodeMissing`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::NodeMissing`")]
    pub type NodeMissing = crate::locks::driver::NodeMissing;
    /// The earlier path of [`crate::MUTEX_LOCK_NAME`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::MUTEX_LOCK_NAME`"
    )]
    pub const MUTEX_LOCK_NAME: &str = crate::locks::driver::MUTEX_LOCK_NAME;
    /// The earlier path of [`crate::LATCH_LOCK_NAME`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::LATCH_LOCK_NAME`"
    )]
    pub const LATCH_LOCK_NAME: &str = crate::locks::driver::LATCH_LOCK_NAME;
    /// The earlier path of [`crate::READ_LOCK_NAME`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::READ_LOCK_NAME`"
    )]
    pub const READ_LOCK_NAME: &str = crate::locks::driver::READ_LOCK_NAME;
    /// The earlier path of [`crate::WRITE_LOCK_NAME`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::WRITE_LOCK_NAME`"
    )]
    pub const WRITE_LOCK_NAME: &str = crate::locks::driver::WRITE_LOCK_NAME;
    /// The earlier path of [`crate::LEASE_NAME`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::LEASE_NAME`")]
    pub const LEASE_NAME: &str = crate::locks::driver::LEASE_NAME;
    /// The earlier path of [`crate::lease_granted`].
    ///
    /// # Errors
    ///
    /// As [`crate::lease_granted`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::lease_granted`")]
    pub fn lease_granted(
        children: &[String],
        ours: &str,
        max_leases: usize,
    ) -> Result<bool, crate::locks::driver::NodeMissing> {
        crate::locks::driver::lease_granted(children, ours, max_leases)
    }
    /// The earlier path of [`crate::downgrade_sequence`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::downgrade_sequence`"
    )]
    pub fn downgrade_sequence(write_node: &str) -> Option<&str> {
        crate::locks::driver::downgrade_sequence(write_node)
    }
    /// The earlier path of [`crate::rw_sort_key`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::rw_sort_key`")]
    pub fn rw_sort_key(name: &str) -> &str {
        crate::locks::driver::rw_sort_key(name)
    }
}

/// The holder identity's earlier path: deprecated aliases of the crate root's.
pub mod identity {
    /// The earlier path of [`crate::ProcessIdentity`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::ProcessIdentity`"
    )]
    pub type ProcessIdentity = crate::locks::identity::ProcessIdentity;
    /// The earlier path of [`crate::HolderIdentity`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::HolderIdentity`"
    )]
    pub type HolderIdentity = crate::locks::identity::HolderIdentity;
    /// The earlier path of [`crate::IDENTITY_VERSION`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::IDENTITY_VERSION`"
    )]
    pub const IDENTITY_VERSION: u32 = crate::locks::identity::IDENTITY_VERSION;
    /// The earlier path of [`crate::set_process_name`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::set_process_name`"
    )]
    pub fn set_process_name(client: &zk_framework::CuratorFramework, name: impl Into<String>) {
        crate::locks::identity::set_process_name(client, name)
    }
    /// The earlier path of [`crate::process_name`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::process_name`")]
    pub fn process_name(client: &zk_framework::CuratorFramework) -> String {
        crate::locks::identity::process_name(client)
    }
}

/// The lock figures' earlier path: deprecated aliases of the crate root's.
pub mod stats {
    /// The earlier path of [`crate::LockStats`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::LockStats`")]
    pub type LockStats = crate::locks::stats::LockStats;
    /// The earlier path of [`crate::LossCause`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::LossCause`")]
    pub type LossCause = crate::locks::stats::LossCause;
    /// The earlier path of [`crate::HistogramSnapshot`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::HistogramSnapshot`"
    )]
    pub type HistogramSnapshot = crate::locks::stats::HistogramSnapshot;
    /// The earlier path of [`crate::LOCK_STATS_BUCKETS`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::LOCK_STATS_BUCKETS`"
    )]
    pub const BUCKETS: [std::time::Duration; 16] = crate::locks::stats::BUCKETS;
    /// The earlier path of [`crate::LOCK_STATS_KEPT_PATHS`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::LOCK_STATS_KEPT_PATHS`"
    )]
    pub const KEPT_PATHS: usize = crate::locks::stats::KEPT_PATHS;
    /// The earlier path of [`crate::set_lock_stats_enabled`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::set_lock_stats_enabled`"
    )]
    pub fn set_enabled(client: &zk_framework::CuratorFramework, on: bool) {
        crate::locks::stats::set_enabled(client, on)
    }
    /// The earlier path of [`crate::lock_stats_enabled`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::lock_stats_enabled`"
    )]
    pub fn is_enabled(client: &zk_framework::CuratorFramework) -> bool {
        crate::locks::stats::is_enabled(client)
    }
    /// The earlier path of [`crate::lock_stats`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::lock_stats`")]
    pub fn snapshot(client: &zk_framework::CuratorFramework) -> Vec<crate::locks::stats::LockStats> {
        crate::locks::stats::snapshot(client)
    }
    /// The earlier path of [`crate::lock_stats_of`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::lock_stats_of`")]
    pub fn snapshot_of(
        client: &zk_framework::CuratorFramework,
        server_path: &str,
    ) -> Option<crate::locks::stats::LockStats> {
        crate::locks::stats::snapshot_of(client, server_path)
    }
    /// The earlier path of [`crate::lock_stats_bookkeeping_cost`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::lock_stats_bookkeeping_cost`"
    )]
    pub fn bookkeeping_cost(cycles: u32) -> std::time::Duration {
        crate::locks::stats::bookkeeping_cost(cycles)
    }
    /// The earlier path of [`crate::forget_lock_stats`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::forget_lock_stats`"
    )]
    pub fn forget(
        client: &zk_framework::CuratorFramework,
        server_path: &str,
    ) -> Option<crate::locks::stats::LockStats> {
        crate::locks::stats::forget(client, server_path)
    }
}

/// The shared values' earlier path: deprecated aliases of the crate root's.
pub mod shared_value {
    /// The earlier path of [`crate::SharedValue`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::SharedValue`")]
    pub type SharedValue = crate::shared::value::SharedValue;
    /// The earlier path of [`crate::SharedCount`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::SharedCount`")]
    pub type SharedCount = crate::shared::count::SharedCount;
    /// The earlier path of [`crate::VersionedValue`].
    #[deprecated(
        since = "0.1.0",
        note = "import it from the crate root: `zk_recipes::VersionedValue`"
    )]
    pub type VersionedValue<T> = crate::shared::value::VersionedValue<T>;
    /// The earlier path of [`crate::Proof`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Proof`")]
    pub type Proof = crate::shared::value::Proof;
    /// The earlier path of [`crate::TrySet`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::TrySet`")]
    pub type TrySet<T> = crate::shared::value::TrySet<T>;
    /// The earlier path of [`crate::ValueEvent`].
    #[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::ValueEvent`")]
    pub type ValueEvent<T> = crate::shared::value::ValueEvent<T>;
}
