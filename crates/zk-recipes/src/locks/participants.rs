//! Who holds a lock and who waits, for any lock path: typed participants read
//! from the server, judged by the same pure rules the locks use
//! ([`crate::Driver`]), so that "holds" here is never a second copy of the
//! lock rule. The locks' `participant_nodes()` methods, the election's
//! queries and the inspection tool ([`crate::inspect_lock`]) read them here.

use std::time::Duration;

use zk_framework::proto::path::join;
use zk_framework::CuratorFramework;

use crate::core::queue::{self, QueueNode};
use crate::error::{Error, Result};
use crate::locks::driver::{Decision, Driver, LATCH_LOCK_NAME, LEASE_NAME, READ_LOCK_NAME, WRITE_LOCK_NAME};
use crate::locks::identity::HolderIdentity;

/// The node layout of a lock path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LockLayout {
    /// `InterProcessMutex`: `<path>/_c_<uuid>-lock-<seq>`.
    Mutex,
    /// `InterProcessReadWriteLock`: `<path>/…__READ__<seq>`, `…__WRIT__<seq>`.
    ReadWrite,
    /// `InterProcessSemaphoreV2` / `InterProcessSemaphoreMutex`: lease nodes
    /// under `<path>/leases`, the internal mutex's queue under `<path>/locks`.
    /// The number of leases is not stored in ZooKeeper: with `None`, every
    /// lease node counts as holding.
    Semaphore {
        /// The semaphore's number of leases, if known.
        max_leases: Option<u32>,
    },
    /// A leader election of `LeaderLatch`es (ours or Curator's):
    /// `<path>/_c_<uuid>-latch-<seq>`; the first node leads. (A
    /// `LeaderSelector`'s election is a mutex of `lock-` nodes and reads as
    /// [`LockLayout::Mutex`]: its holder is the leader.)
    LeaderLatch,
}

impl LockLayout {
    /// A short name: `mutex`, `read/write`, `semaphore`, `leader latch`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::LockLayout::ReadWrite.name(), "read/write");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            LockLayout::Mutex => "mutex",
            LockLayout::ReadWrite => "read/write",
            LockLayout::Semaphore { .. } => "semaphore",
            LockLayout::LeaderLatch => "leader latch",
        }
    }
}

/// What a participant's node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParticipantKind {
    /// A mutex node.
    Mutex,
    /// A read node of a read/write lock.
    Read,
    /// A write node of a read/write lock.
    Write,
    /// A semaphore lease node.
    Lease,
    /// A node in a semaphore's internal mutex queue (`<path>/locks`): a
    /// contender on its way to a lease (our one-lease holders keep theirs
    /// while they hold the lease; Curator's only while they get it). It never
    /// counts as holding the semaphore.
    LeaseQueue,
    /// A leader latch's node (it "holds" when it leads).
    Latch,
}

impl ParticipantKind {
    /// `mutex`, `read`, `write`, `lease`, `lease-queue`, `latch`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ParticipantKind::Write.name(), "write");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            ParticipantKind::Mutex => "mutex",
            ParticipantKind::Read => "read",
            ParticipantKind::Write => "write",
            ParticipantKind::Lease => "lease",
            ParticipantKind::LeaseQueue => "lease-queue",
            ParticipantKind::Latch => "latch",
        }
    }
}

/// One node queued on (or holding) a lock, or taking part in an election:
/// the one participant type of every recipe (a lock's `participant_nodes()`,
/// [`crate::inspect_lock`], an election's `participants()` and `leader()`, the leader
/// observer).
///
/// For an election, `holds` is whether the node leads (the first by the
/// election's order: Curator's `Participant.isLeader`), `fencing_token` is
/// the term its leadership has (or will have), and `id` is the participant
/// id (the node's data).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let latch = zk_recipes::LeaderLatch::builder(&client, "/election").id("node-1").build()?;
/// for p in latch.participants()? {
///     println!("{} leads={} term={}", p.id, p.holds, p.fencing_token);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// The node's full path (relative to the client's namespace).
    pub node: String,
    /// What the node is.
    pub kind: ParticipantKind,
    /// The session that owns it (the node's ephemeral owner).
    pub session_id: i64,
    /// Who created it, from its data.
    pub identity: HolderIdentity,
    /// The node's data as text (invalid UTF-8 replaced, as Curator reads
    /// it): an election participant's id.
    pub id: String,
    /// Its place in its queue, from 0 (lock order; leases and the lease queue
    /// are numbered separately).
    pub position: usize,
    /// Whether it holds the lock (a lease), by the lock's own rule; in an
    /// election, whether it leads.
    pub holds: bool,
    /// Its fencing token: the node's czxid, as the holder's
    /// `fencing_token()` (an election's term).
    pub fencing_token: i64,
    /// When the node was created (queued), in milliseconds since the Unix
    /// epoch, by the server's clock.
    pub created_ms: i64,
}

impl Participant {
    /// A participant as its node reads.
    pub(crate) fn read(
        node: String,
        kind: ParticipantKind,
        data: &[u8],
        stat: &zk_framework::proto::Stat,
        position: usize,
        holds: bool,
    ) -> Participant {
        Participant {
            node,
            kind,
            session_id: stat.ephemeral_owner,
            identity: HolderIdentity::parse(data),
            id: String::from_utf8_lossy(data).into_owned(),
            position,
            holds,
            fencing_token: stat.czxid,
            created_ms: stat.ctime,
        }
    }

    /// How long ago the node was created (queued), by this host's clock
    /// against the server's; zero if the clocks disagree the other way.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// for p in zk_recipes::inspect_lock(&client, "/locks/a")?.participants {
    ///     println!("{} queued {:?} ago", p.node, p.age());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn age(&self) -> Duration {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Duration::from_millis(now.saturating_sub(self.created_ms).max(0) as u64)
    }
}

/// The node path, so that a participant reads as the path Curator's
/// `getParticipantNodes` gives (`println!("{p}")`, `format!`).
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// let m = zk_recipes::InterProcessMutex::new(&client, "/locks/shown")?;
/// let g = m.acquire()?;
/// let p = &m.participant_nodes()?[0];
/// assert_eq!(p.to_string(), g.lock_path());
/// // Compared with, and borrowed as, its node path.
/// assert_eq!(*p, g.lock_path());
/// assert_eq!(*p, g.lock_path().as_str());
/// assert!(*p != *"/locks/other");
/// assert_eq!(g.lock_path(), *p);
/// assert_eq!(g.lock_path().as_str(), *p);
/// let path: &str = p.as_ref();
/// assert!(path.starts_with("/locks/shown/"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl std::fmt::Display for Participant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.node)
    }
}

/// The node path (see the [`Display`](#impl-Display-for-Participant) example).
impl AsRef<str> for Participant {
    fn as_ref(&self) -> &str {
        &self.node
    }
}

/// Equal when the node path is (see the
/// [`Display`](#impl-Display-for-Participant) example).
impl PartialEq<str> for Participant {
    fn eq(&self, other: &str) -> bool {
        self.node == other
    }
}

/// Equal when the node path is (see the
/// [`Display`](#impl-Display-for-Participant) example).
impl PartialEq<&str> for Participant {
    fn eq(&self, other: &&str) -> bool {
        self.node == *other
    }
}

/// Equal when the node path is (see the
/// [`Display`](#impl-Display-for-Participant) example).
impl PartialEq<String> for Participant {
    fn eq(&self, other: &String) -> bool {
        self.node == *other
    }
}

/// Equal when the node path is (the same comparison the other way round).
impl PartialEq<Participant> for str {
    fn eq(&self, other: &Participant) -> bool {
        *self == other.node
    }
}

/// Equal when the node path is (the same comparison the other way round).
impl PartialEq<Participant> for &str {
    fn eq(&self, other: &Participant) -> bool {
        **self == other.node
    }
}

/// Equal when the node path is (the same comparison the other way round).
impl PartialEq<Participant> for String {
    fn eq(&self, other: &Participant) -> bool {
        *self == other.node
    }
}

pub(crate) fn layout_of(kids: &[String]) -> LockLayout {
    if kids.iter().any(|k| k == "leases" || k == "locks") {
        LockLayout::Semaphore { max_leases: None }
    } else if kids
        .iter()
        .any(|k| k.contains(READ_LOCK_NAME) || k.contains(WRITE_LOCK_NAME))
    {
        LockLayout::ReadWrite
    } else if kids.iter().any(|k| k.contains(LATCH_LOCK_NAME)) {
        LockLayout::LeaderLatch
    } else {
        LockLayout::Mutex
    }
}

/// The participants of the lock at `path` with the given layout, in lock
/// order, each judged by the lock's own rule ([`crate::Driver`]). Nodes that
/// vanish while they are read are left out, and the rule is applied to those
/// that remain. One listing and one read per node.
///
/// # Errors
///
/// [`Error::ZooKeeper`] when a listing or read fails (a missing path has no
/// participants); [`Error::InvalidArgument`] for a bad path.
///
/// # Examples
///
/// ```no_run
/// use zk_recipes::{lock_participants as participants, LockLayout};
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// for p in participants(&client, "/pools/db", LockLayout::Semaphore { max_leases: Some(3) })? {
///     println!("{} {} holds={} {}", p.position, p.kind.name(), p.holds, p.identity);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn participants(client: &CuratorFramework, path: &str, layout: LockLayout) -> Result<Vec<Participant>> {
    read(client, path, layout, None)
}

pub(crate) fn check_path(path: &str) -> Result<()> {
    zk_framework::proto::path::validate_path(path, false).map_err(zk_framework::Error::from)?;
    if path == "/" {
        return Err(Error::InvalidArgument("a lock cannot live at the root path".into()));
    }
    Ok(())
}

pub(crate) fn children(client: &CuratorFramework, path: &str) -> Result<Vec<String>> {
    check_path(path)?;
    Ok(queue::children(client, path)?.unwrap_or_default())
}

pub(crate) fn read_all(client: &CuratorFramework, base: &str, names: Vec<String>) -> Result<Vec<QueueNode>> {
    queue::read(client, base, names, None, None::<&queue::NoWatch>)
}

pub(crate) fn read(
    client: &CuratorFramework,
    path: &str,
    layout: LockLayout,
    listing: Option<Vec<String>>,
) -> Result<Vec<Participant>> {
    let kids = match listing {
        Some(k) => k,
        None => children(client, path)?,
    };
    match layout {
        LockLayout::Mutex => judge(client, path, kids, |_| (Driver::MUTEX, ParticipantKind::Mutex)),
        LockLayout::ReadWrite => judge(client, path, kids, |name| {
            if name.contains(WRITE_LOCK_NAME) {
                (Driver::Write, ParticipantKind::Write)
            } else {
                (Driver::Read, ParticipantKind::Read)
            }
        }),
        LockLayout::LeaderLatch => judge(client, path, kids, |_| (Driver::LATCH, ParticipantKind::Latch)),
        LockLayout::Semaphore { max_leases } => {
            let mut out = semaphore_leases(client, path, max_leases)?;
            out.append(&mut semaphore_queue(client, path)?);
            Ok(out)
        }
    }
}

/// A semaphore's lease nodes (`<path>/leases`) in sequence order, judged with
/// `max_leases` (`None`: every lease holds).
pub(crate) fn semaphore_leases(
    client: &CuratorFramework,
    path: &str,
    max_leases: Option<u32>,
) -> Result<Vec<Participant>> {
    let leases_path = join(path, "leases");
    let lease_driver = Driver::Standard {
        lock_name: LEASE_NAME,
        max_leases: max_leases.map_or(usize::MAX, |n| n as usize),
    };
    judge(client, &leases_path, children(client, &leases_path)?, |_| {
        (lease_driver, ParticipantKind::Lease)
    })
}

/// A semaphore's internal mutex queue (`<path>/locks`), in lock order; none
/// of it holds the semaphore.
pub(crate) fn semaphore_queue(client: &CuratorFramework, path: &str) -> Result<Vec<Participant>> {
    let locks_path = join(path, "locks");
    let mut queue = judge(client, &locks_path, children(client, &locks_path)?, |_| {
        (Driver::MUTEX, ParticipantKind::LeaseQueue)
    })?;
    for p in &mut queue {
        p.holds = false;
    }
    Ok(queue)
}

/// Reads the nodes, sorts the survivors the lock's way and asks the driver
/// whether each holds.
fn judge(
    client: &CuratorFramework,
    base: &str,
    kids: Vec<String>,
    rule: impl Fn(&str) -> (Driver, ParticipantKind),
) -> Result<Vec<Participant>> {
    let reads = read_all(client, base, kids)?;
    let mut names: Vec<String> = reads.iter().map(|r| r.name.clone()).collect();
    // Every node of one path sorts the same way (the mutex's, the read/write
    // lock's or the lease's rule): sort with the first node's driver.
    let sorter = names.first().map_or(Driver::MUTEX, |n| rule(n).0);
    sorter.sort(&mut names);
    let mut out = Vec::with_capacity(names.len());
    for (position, name) in names.iter().enumerate() {
        let Some(r) = reads.iter().find(|r| &r.name == name) else {
            continue;
        };
        let (driver, kind) = rule(name);
        let holds = matches!(driver.decide(&names, name), Ok(Decision::Acquired));
        out.push(Participant::read(
            join(base, name),
            kind,
            &r.data,
            &r.stat,
            position,
            holds,
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_detected_from_names() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(layout_of(&v(&[])), LockLayout::Mutex);
        assert_eq!(layout_of(&v(&["_c_a-lock-0000000001"])), LockLayout::Mutex);
        assert_eq!(layout_of(&v(&["_c_a-__READ__0000000001"])), LockLayout::ReadWrite);
        assert_eq!(layout_of(&v(&["x-__WRIT__0000000001"])), LockLayout::ReadWrite);
        assert_eq!(layout_of(&v(&["leases"])), LockLayout::Semaphore { max_leases: None });
        assert_eq!(layout_of(&v(&["_c_a-latch-0000000001"])), LockLayout::LeaderLatch);
        assert_eq!(
            layout_of(&v(&["locks", "leases"])),
            LockLayout::Semaphore { max_leases: None }
        );
    }
}
