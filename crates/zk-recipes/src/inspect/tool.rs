//! Who holds a lock and who waits, who is in a group, what a counter reads:
//! the inspection tool (`zk-lock status` is built on it). It needs no recipe
//! instance and reads any path; nothing in the recipes imports it.

use zk_framework::CuratorFramework;

use crate::error::Result;
use crate::locks::participants::{
    check_path, children, layout_of, participants, read, read_all, LockLayout, Participant,
};

/// A lock path's layout and participants.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockReport {
    /// The path inspected.
    pub path: String,
    /// Its layout (detected, or given).
    pub layout: LockLayout,
    /// Every participant: holders and waiters in lock order (for a semaphore,
    /// the leases, then the internal mutex's queue).
    pub participants: Vec<Participant>,
}

impl LockReport {
    /// The participants that hold the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let report = zk_recipes::inspect_lock(&client, "/locks/a")?;
    /// for h in report.holders() {
    ///     println!("held by {} since {} ms", h.identity, h.created_ms);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn holders(&self) -> impl Iterator<Item = &Participant> {
        self.participants.iter().filter(|p| p.holds)
    }

    /// Whether anyone holds the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// if !zk_recipes::inspect_lock(&client, "/locks/a")?.is_held() {
    ///     println!("free");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_held(&self) -> bool {
        self.participants.iter().any(|p| p.holds)
    }
}

/// Detects the layout of `path` from its children: `leases`/`locks` make a
/// semaphore, `__READ__`/`__WRIT__` nodes a read/write lock; anything else
/// (including no node at all) is read as a mutex.
///
/// # Errors
///
/// [`Error::ZooKeeper`](crate::Error::ZooKeeper) when the listing fails (a missing path is not an
/// error: it is a free mutex); [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad path.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let layout = zk_recipes::detect_lock_layout(&client, "/locks/a")?;
/// println!("{}", layout.name());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn detect_layout(client: &CuratorFramework, path: &str) -> Result<LockLayout> {
    let kids = children(client, path)?;
    Ok(layout_of(&kids))
}

/// Inspects `path`: detects its layout and reads its participants.
///
/// # Errors
///
/// As [`participants`].
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// let lock = zk_recipes::InterProcessMutex::new(&client, "/locks/inspected")?;
/// let _guard = lock.acquire()?;
/// let report = zk_recipes::inspect_lock(&client, "/locks/inspected")?;
/// assert!(report.is_held());
/// assert_eq!(report.participants[0].session_id, client.session_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn inspect(client: &CuratorFramework, path: &str) -> Result<LockReport> {
    let kids = children(client, path)?;
    let layout = layout_of(&kids);
    let participants = read(client, path, layout, Some(kids))?;
    Ok(LockReport {
        path: path.to_string(),
        layout,
        participants,
    })
}

/// As [`inspect`], with the layout given instead of detected (a semaphore's
/// number of leases is known only to its users).
///
/// # Errors
///
/// As [`participants`].
///
/// # Examples
///
/// ```no_run
/// use zk_recipes::{inspect_lock_as as inspect_as, LockLayout};
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let report = inspect_as(&client, "/pools/db", LockLayout::Semaphore { max_leases: Some(3) })?;
/// assert!(report.holders().count() <= 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn inspect_as(client: &CuratorFramework, path: &str, layout: LockLayout) -> Result<LockReport> {
    Ok(LockReport {
        path: path.to_string(),
        layout,
        participants: participants(client, path, layout)?,
    })
}

/// A member of a group (a [`crate::nodes::GroupMember`], or Curator's
/// `GroupMember`): a child of the group's path.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// for m in zk_recipes::group_members(&client, "/groups/workers")? {
///     println!("{} {} 0x{:x}", m.id, String::from_utf8_lossy(&m.data), m.session_id);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Member {
    /// The member's id (its node's name).
    pub id: String,
    /// The member's data.
    pub data: Vec<u8>,
    /// The session that owns its (ephemeral) node; 0 for a persistent node.
    pub session_id: i64,
    /// When the node was created (ms since the epoch, the server's clock).
    pub created_ms: i64,
}

/// The members of the group at `path`, by id (a missing path has none).
///
/// # Errors
///
/// [`Error::ZooKeeper`](crate::Error::ZooKeeper) when the listing or a read fails (a member that
/// leaves meanwhile is skipped), or for a bad path.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let members = zk_recipes::group_members(&client, "/groups/workers")?;
/// println!("{} members", members.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn group_members(client: &CuratorFramework, path: &str) -> Result<Vec<Member>> {
    let mut names = children(client, path)?;
    names.sort();
    Ok(read_all(client, path, names)?
        .into_iter()
        .map(|n| Member {
            id: n.name,
            data: n.data,
            session_id: n.stat.ephemeral_owner,
            created_ms: n.stat.ctime,
        })
        .collect())
}

/// A counter's node as its readers see it: a
/// [`DistributedAtomicLong`](crate::DistributedAtomicLong) reads 8 bytes, a
/// [`DistributedAtomicInteger`](crate::DistributedAtomicInteger) or a
/// [`SharedCount`](crate::SharedCount) 4.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let c = zk_recipes::read_counter(&client, "/counters/jobs")?;
/// println!("{:?} (version {:?})", c.long, c.version);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CounterReading {
    /// The node's bytes (empty when the node is missing).
    pub bytes: Vec<u8>,
    /// The value as a long (8 bytes big-endian; a missing node or empty
    /// data is 0, as Curator reads it); `None` when shorter than 8 bytes.
    pub long: Option<i64>,
    /// The value as an int or a shared count (4 bytes big-endian); `None`
    /// when shorter than 4 bytes.
    pub int: Option<i32>,
    /// The node's version (`None`: no node).
    pub version: Option<i32>,
    /// When the node was last written (ms since the epoch; `None`: no node).
    pub modified_ms: Option<i64>,
}

/// Reads the counter at `path` (no lock, no watch).
///
/// # Errors
///
/// [`Error::ZooKeeper`](crate::Error::ZooKeeper) when the read fails, or for a bad path.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// if let Some(n) = zk_recipes::read_counter(&client, "/counters/jobs")?.long {
///     println!("{n} jobs");
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn counter(client: &CuratorFramework, path: &str) -> Result<CounterReading> {
    check_path(path)?;
    let (bytes, stat) = match client.get_data(path) {
        Ok((d, s)) => (d, Some(s)),
        Err(zk_framework::Error::NoNode { .. }) => (Vec::new(), None),
        Err(e) => return Err(e.into()),
    };
    let long = match bytes.get(..8) {
        _ if bytes.is_empty() => Some(0),
        Some(b) => <[u8; 8]>::try_from(b).ok().map(i64::from_be_bytes),
        None => None,
    };
    let int = match bytes.get(..4) {
        _ if bytes.is_empty() => Some(0),
        Some(b) => <[u8; 4]>::try_from(b).ok().map(i32::from_be_bytes),
        None => None,
    };
    Ok(CounterReading {
        long,
        int,
        version: stat.as_ref().map(|s| s.version),
        modified_ms: stat.map(|s| s.mtime),
        bytes,
    })
}
