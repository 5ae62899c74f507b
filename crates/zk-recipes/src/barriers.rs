//! Barriers with Curator's layouts: [`DistributedBarrier`] (up while its node
//! exists) and [`DistributedDoubleBarrier`] (members enter together and leave
//! together).
//!
//! Every wait is the crate's one wait: a one-shot watch, a connection-state
//! change, the client's close and the deadline, selected together (no
//! polling); watchers only signal. A wakeup is never taken as a verdict: the
//! waiter asks the server again (Curator's GH-1290, a double barrier entered
//! with too few members after a spurious wakeup, cannot happen here).

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use zk_framework::proto::path::join;
use zk_framework::proto::CreateMode;
use zk_framework::{CuratorFramework, WatchedEvent};

use crate::core::wait::{wait_or_cancel, Woken};
use crate::error::{Error, Result};
use crate::locks::internals::state_changes;

/// The name of a double barrier's `ready` node (Curator's).
pub const READY_NODE: &str = "ready";

/// Whether `name` is a double barrier member's node: a hyphenated UUID, as
/// Curator's members and ours name theirs. `ready` and any other child are
/// not members.
fn is_member(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn check_path(path: &str, what: &str) -> Result<()> {
    zk_framework::proto::path::validate_path(path, false).map_err(zk_framework::Error::from)?;
    if path == "/" {
        return Err(Error::InvalidArgument(format!("a {what} cannot live at the root path")));
    }
    Ok(())
}

/// `deadline` after `d`, or none when it does not fit in an `Instant`.
fn after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// What one wait for a watch ended with.
enum Waited {
    /// Ask the server again (the watch fired, the connection changed).
    Again,
    /// The deadline came.
    Deadline,
}

/// Waits for `watch`, a state change, the close or the deadline.
fn wait(
    client: &CuratorFramework,
    watch: &Receiver<WatchedEvent>,
    states: &Receiver<()>,
    deadline: Option<Instant>,
) -> Result<Waited> {
    match wait_or_cancel(client, watch, states, deadline, &crossbeam_channel::never()) {
        Woken::Watch(_) | Woken::StateChanged => Ok(Waited::Again),
        Woken::Deadline => Ok(Waited::Deadline),
        Woken::Closed | Woken::Cancelled => Err(Error::ZooKeeper(zk_framework::Error::Closed)),
    }
}

/// A barrier that holds waiters back while its node exists (Curator's
/// `DistributedBarrier`, on the same node: a Java process and this one share
/// a barrier). [`set_barrier`](Self::set_barrier) creates the node,
/// [`remove_barrier`](Self::remove_barrier) deletes it and so releases every
/// waiter. Cheap to clone.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use std::time::Duration;
/// let barrier = zk_recipes::DistributedBarrier::new(&client, "/barriers/deploy")?;
/// barrier.set_barrier()?;
/// // elsewhere: barrier.remove_barrier()?;
/// if !barrier.wait_on_barrier_for(Duration::from_secs(30))? {
///     println!("still up after 30 s");
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct DistributedBarrier {
    client: CuratorFramework,
    path: String,
}

impl DistributedBarrier {
    /// A barrier at `path` (nothing is sent).
    ///
    /// # Errors
    ///
    /// An invalid path (or the root), as [`Error::ZooKeeper`] or
    /// [`Error::InvalidArgument`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(zk_recipes::DistributedBarrier::new(&client, "no-slash").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str) -> Result<Self> {
        check_path(path, "barrier")?;
        Ok(DistributedBarrier {
            client: client.clone(),
            path: path.to_string(),
        })
    }

    /// The barrier's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedBarrier::new(&client, "/b")?;
    /// assert_eq!(b.path(), "/b");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Raises the barrier: creates its node (PERSISTENT, the client's default
    /// data, missing parents as containers), as Curator does. Raising a
    /// barrier that is up changes nothing.
    ///
    /// # Errors
    ///
    /// The client's errors ([`Error::ZooKeeper`]; `Closed` after the client's
    /// close) once its retry policy gives up.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedBarrier::new(&client, "/b")?;
    /// b.set_barrier()?;
    /// b.set_barrier()?; // still up, no error
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_barrier(&self) -> Result<()> {
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Persistent)
            .for_path(&self.path)
        {
            Ok(_) | Err(zk_framework::Error::NodeExists { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the barrier (deletes its node), which releases every waiter.
    /// Removing a barrier that is down changes nothing.
    ///
    /// # Errors
    ///
    /// As [`set_barrier`](Self::set_barrier); `NotEmpty` when someone put
    /// children under the barrier's node.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedBarrier::new(&client, "/b")?;
    /// b.remove_barrier()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_barrier(&self) -> Result<()> {
        match self.client.delete().for_path(&self.path) {
            Ok(()) | Err(zk_framework::Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the barrier is up now (one `exists`).
    ///
    /// # Errors
    ///
    /// As [`set_barrier`](Self::set_barrier).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedBarrier::new(&client, "/b")?;
    /// b.set_barrier()?;
    /// assert!(b.is_set()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_set(&self) -> Result<bool> {
        Ok(self.client.check_exists(&self.path)?.is_some())
    }

    /// Waits until the barrier is down (at once when it is), with no
    /// deadline: the wait ends at the removal or at the client's close.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`]: `Closed` when the client closes during the wait
    /// (or before it), the client's errors when its retry policy gives up.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedBarrier::new(&client, "/b")?;
    /// b.wait_on_barrier()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_on_barrier(&self) -> Result<()> {
        self.wait_inner(None).map(|_| ())
    }

    /// Waits up to `timeout` for the barrier to be down: `Ok(true)` when it
    /// is, `Ok(false)` when the time ran out with the barrier up (a value,
    /// not an error). A zero timeout asks once.
    ///
    /// # Errors
    ///
    /// As [`wait_on_barrier`](Self::wait_on_barrier).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedBarrier::new(&client, "/b")?;
    /// let down = b.wait_on_barrier_for(std::time::Duration::from_millis(100))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_on_barrier_for(&self, timeout: Duration) -> Result<bool> {
        self.wait_inner(after(timeout))
    }

    /// As [`wait_on_barrier_for`](Self::wait_on_barrier_for), until
    /// `deadline`.
    ///
    /// # Errors
    ///
    /// As [`wait_on_barrier`](Self::wait_on_barrier).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedBarrier::new(&client, "/b")?;
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    /// let down = b.wait_on_barrier_until(deadline)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_on_barrier_until(&self, deadline: Instant) -> Result<bool> {
        self.wait_inner(Some(deadline))
    }

    /// The one slow path: exists with a fresh watch; down → pass; up → wait
    /// for that watch, a state change, the close or the deadline, and ask
    /// again.
    fn wait_inner(&self, deadline: Option<Instant>) -> Result<bool> {
        if self.client.is_closed() {
            return Err(Error::ZooKeeper(zk_framework::Error::Closed));
        }
        let (_listener, states) = state_changes(&self.client);
        loop {
            let (tx, rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
            if self.client.check_exists_w(&self.path, tx)?.is_none() {
                return Ok(true);
            }
            match wait(&self.client, &rx, &states, deadline)? {
                Waited::Again => {}
                Waited::Deadline => return Ok(false),
            }
        }
    }
}

/// A double barrier (Curator's `DistributedDoubleBarrier`, same layout: a
/// Java process and this one share a barrier): members
/// [`enter`](Self::enter) and wait until `member_qty` of them are in, do their
/// work, then [`leave`](Self::leave) and wait until all have left.
///
/// Layout: each member is an EPHEMERAL node `<path>/<uuid>` (a 36-character
/// UUID with dashes, the client's default data; a new UUID for each `enter`);
/// the member that sees enough members creates `<path>/ready` (PERSISTENT),
/// whose creation releases the others. `member_qty` is a threshold, not a
/// limit. The last member out deletes `ready`.
///
/// Only children named like members (UUIDs) are counted, on entering and on
/// leaving: a stray node under the path (`ready`, an operator's, another
/// recipe's) is never a member, so it never lets a round open with too few
/// members and never holds a leave back. (Curator counts every child but
/// `ready`; with only members under the path the two agree.)
///
/// Unlike Curator 5.9 and earlier (GH-1290), `enter` never returns `true`
/// because of a wakeup alone: after every wakeup it asks the server again,
/// and passes only when `ready` exists or it counts `member_qty` members.
///
/// **A `ready` left from an earlier round** (a member that died in `leave`
/// before the last one out deleted it) lets new members straight through,
/// whatever their number: this is Curator's rule, kept so that Java and Rust
/// members sharing a barrier agree on when it opens (a member cannot tell a
/// stale `ready` from a round it joined late). Delete a stale `ready` (for
/// example with [`remove_stale_ready`](Self::remove_stale_ready) while no
/// round is running) before reusing the path.
///
/// An `enter` that times out or fails leaves no member node behind (its node
/// is deleted before it returns, or in the background when the server cannot
/// be reached).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use std::time::Duration;
/// let barrier = zk_recipes::DistributedDoubleBarrier::new(&client, "/barriers/round", 3)?;
/// if barrier.enter_for(Duration::from_secs(30))? {
///     // all three are here: work
///     barrier.leave()?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DistributedDoubleBarrier {
    client: CuratorFramework,
    path: String,
    ready_path: String,
    member_qty: usize,
    /// Our membership, from a successful enter to the end of a leave.
    member: Mutex<Option<Member>>,
}

/// Our member node.
#[derive(Debug, Clone)]
struct Member {
    /// Its name (a UUID).
    name: String,
    /// The session generation it was created in.
    generation: u64,
    /// Deleted by our leave already (we were not the lowest).
    deleted: bool,
}

/// Deletes a member node unless disarmed: an enter that fails or times out
/// leaves nothing behind.
struct MemberGuard<'a> {
    client: &'a CuratorFramework,
    path: Option<String>,
}

impl MemberGuard<'_> {
    fn disarm(mut self) {
        self.path = None;
    }
}

impl Drop for MemberGuard<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            match self.client.delete().for_path(&p) {
                Ok(()) | Err(zk_framework::Error::NoNode { .. } | zk_framework::Error::Closed) => {}
                Err(e) => {
                    log::debug!("deleting member node {p} failed ({e}); deleting it in the background");
                    let _ = self.client.recipe().delete_in_background(&p);
                }
            }
        }
    }
}

impl DistributedDoubleBarrier {
    /// A double barrier at `path` for `member_qty` members (nothing is sent).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `member_qty` of zero or the root
    /// path; an invalid path as [`Error::ZooKeeper`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_recipes::{DistributedDoubleBarrier, Error};
    /// assert!(matches!(
    ///     DistributedDoubleBarrier::new(&client, "/b", 0),
    ///     Err(Error::InvalidArgument(_))
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, member_qty: usize) -> Result<Self> {
        if member_qty == 0 {
            return Err(Error::InvalidArgument(
                "a double barrier needs a member count of at least one".into(),
            ));
        }
        check_path(path, "double barrier")?;
        Ok(DistributedDoubleBarrier {
            client: client.clone(),
            path: path.to_string(),
            ready_path: join(path, READY_NODE),
            member_qty,
            member: Mutex::new(None),
        })
    }

    /// The barrier's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedDoubleBarrier::new(&client, "/b", 2)?;
    /// assert_eq!(b.path(), "/b");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Our member node's path while we are a member (entered, not yet left).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedDoubleBarrier::new(&client, "/b", 1)?;
    /// assert!(b.member_path().is_none());
    /// b.enter()?;
    /// assert!(b.member_path().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn member_path(&self) -> Option<String> {
        self.member.lock().as_ref().map(|m| join(&self.path, &m.name))
    }

    /// Enters and waits, with no deadline, until `member_qty` members are in
    /// (or `ready` exists); ends early only at the client's close.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`]: `Closed` at the client's close, the client's
    /// errors when its retry policy gives up. Our member node is gone then.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedDoubleBarrier::new(&client, "/b", 2)?;
    /// b.enter()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enter(&self) -> Result<()> {
        self.enter_inner(None).map(|_| ())
    }

    /// Enters and waits up to `timeout`: `Ok(true)` when the barrier opened,
    /// `Ok(false)` when the time ran out (our member node is deleted then:
    /// we are not a member).
    ///
    /// # Errors
    ///
    /// As [`enter`](Self::enter).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedDoubleBarrier::new(&client, "/b", 2)?;
    /// if !b.enter_for(std::time::Duration::from_secs(5))? {
    ///     println!("the others did not come");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enter_for(&self, timeout: Duration) -> Result<bool> {
        self.enter_inner(after(timeout))
    }

    /// As [`enter_for`](Self::enter_for), until `deadline`.
    ///
    /// # Errors
    ///
    /// As [`enter`](Self::enter).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedDoubleBarrier::new(&client, "/b", 2)?;
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    /// let opened = b.enter_until(deadline)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enter_until(&self, deadline: Instant) -> Result<bool> {
        self.enter_inner(Some(deadline))
    }

    /// Leaves and waits, with no deadline, until every member has left
    /// (Curator's algorithm: the lowest member waits for the highest, the
    /// others delete their node and wait for the lowest).
    ///
    /// # Errors
    ///
    /// [`Error::NotBarrierMember`] when this instance is not a member (never
    /// entered, left already, or its node was deleted while its session
    /// lived; a node that went with an expired session counts as left);
    /// [`Error::ZooKeeper`] as for [`enter`](Self::enter).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedDoubleBarrier::new(&client, "/b", 1)?;
    /// b.enter()?;
    /// b.leave()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn leave(&self) -> Result<()> {
        self.leave_inner(None).map(|_| ())
    }

    /// Leaves and waits up to `timeout`: `Ok(true)` when every member has
    /// left, `Ok(false)` when the time ran out (our node may be deleted
    /// already; call `leave` again to go on waiting).
    ///
    /// # Errors
    ///
    /// As [`leave`](Self::leave).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedDoubleBarrier::new(&client, "/b", 1)?;
    /// b.enter()?;
    /// assert!(b.leave_for(std::time::Duration::from_secs(5))?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn leave_for(&self, timeout: Duration) -> Result<bool> {
        self.leave_inner(after(timeout))
    }

    /// As [`leave_for`](Self::leave_for), until `deadline`.
    ///
    /// # Errors
    ///
    /// As [`leave`](Self::leave).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedDoubleBarrier::new(&client, "/b", 1)?;
    /// b.enter()?;
    /// let left = b.leave_until(std::time::Instant::now() + std::time::Duration::from_secs(5))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn leave_until(&self, deadline: Instant) -> Result<bool> {
        self.leave_inner(Some(deadline))
    }

    /// Deletes `<path>/ready` when no member node is left under the path (a
    /// `ready` left by a round whose last member died in `leave`); returns
    /// whether it deleted one. Call it between rounds only: while members
    /// are in, `ready` is the round's own.
    ///
    /// # Errors
    ///
    /// The client's errors ([`Error::ZooKeeper`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::DistributedDoubleBarrier::new(&client, "/b", 2)?;
    /// b.remove_stale_ready()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_stale_ready(&self) -> Result<bool> {
        let kids = match self.client.get_children(&self.path) {
            Ok(k) => k,
            Err(zk_framework::Error::NoNode { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        if !kids.iter().any(|k| k == READY_NODE) || kids.iter().any(|k| k != READY_NODE) {
            return Ok(false);
        }
        // Versioned by the parent's child count is not possible: a member
        // entering now sees `ready` and passes, as Curator's would.
        match self.client.delete().for_path(&self.ready_path) {
            Ok(()) => Ok(true),
            Err(zk_framework::Error::NoNode { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn enter_inner(&self, deadline: Option<Instant>) -> Result<bool> {
        if self.client.is_closed() {
            return Err(Error::ZooKeeper(zk_framework::Error::Closed));
        }
        let (_listener, states) = state_changes(&self.client);
        // Curator's order: watch `ready` first, then create our node.
        let (mut tx, mut rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
        let ready_before = self.client.check_exists_w(&self.ready_path, tx)?.is_some();
        let name = zk_framework::paths::new_protected_id();
        let ours = join(&self.path, &name);
        let mut generation = self.client.recipe().session_generation();
        let guard = MemberGuard {
            client: &self.client,
            path: Some(ours.clone()),
        };
        self.create_member(&ours)?;
        let mut ready = ready_before;
        loop {
            if !ready {
                let kids = match self.client.get_children(&self.path) {
                    Ok(k) => k,
                    Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
                    Err(e) => return Err(e.into()),
                };
                let members = kids.iter().filter(|k| is_member(k)).count();
                if members >= self.member_qty && kids.contains(&name) {
                    match self
                        .client
                        .create()
                        .with_mode(CreateMode::Persistent)
                        .for_path(&self.ready_path)
                    {
                        Ok(_) | Err(zk_framework::Error::NodeExists { .. }) => ready = true,
                        Err(e) => return Err(e.into()),
                    }
                } else if kids.iter().any(|k| k == READY_NODE) {
                    // Someone counted enough since our watch was set.
                    ready = true;
                }
            }
            if ready {
                guard.disarm();
                *self.member.lock() = Some(Member {
                    name,
                    generation,
                    deleted: false,
                });
                return Ok(true);
            }
            match wait(&self.client, &rx, &states, deadline)? {
                Waited::Deadline => return Ok(false),
                Waited::Again => {
                    // A new session lost our ephemeral node: make it again.
                    if self.client.recipe().session_generation() != generation {
                        generation = self.client.recipe().session_generation();
                        self.create_member(&ours)?;
                    }
                    (tx, rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
                    ready = self.client.check_exists_w(&self.ready_path, tx)?.is_some();
                }
            }
        }
    }

    fn create_member(&self, ours: &str) -> Result<()> {
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Ephemeral)
            .for_path(ours)
        {
            Ok(_) | Err(zk_framework::Error::NodeExists { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn leave_inner(&self, deadline: Option<Instant>) -> Result<bool> {
        if self.client.is_closed() {
            return Err(Error::ZooKeeper(zk_framework::Error::Closed));
        }
        let Some(mut me) = self.member.lock().clone() else {
            return Err(Error::NotBarrierMember {
                path: self.path.clone(),
            });
        };
        let ours = join(&self.path, &me.name);
        let (_listener, states) = state_changes(&self.client);
        let mut left = true;
        loop {
            let mut kids: Vec<String> = match self.client.get_children(&self.path) {
                Ok(k) => k,
                Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
                Err(e) => return Err(e.into()),
            };
            kids.retain(|k| is_member(k));
            kids.sort();
            if kids.is_empty() {
                break;
            }
            let index = kids.iter().position(|k| *k == me.name);
            if index.is_none() && !me.deleted {
                if self.client.recipe().session_generation() != me.generation {
                    // Our node went with our session: nobody waits for us.
                    break;
                }
                *self.member.lock() = None;
                return Err(Error::NotBarrierMember {
                    path: self.path.clone(),
                });
            }
            if kids.len() == 1 {
                if !me.deleted {
                    self.delete_ours(&ours)?;
                }
                break;
            }
            let (tx, rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
            let watched = if index == Some(0) {
                // The lowest waits for the highest.
                join(&self.path, &kids[kids.len() - 1])
            } else {
                join(&self.path, &kids[0])
            };
            let present = self.client.check_exists_w(&watched, tx)?.is_some();
            if index != Some(0) && !me.deleted {
                self.delete_ours(&ours)?;
                me.deleted = true;
                if let Some(m) = self.member.lock().as_mut() {
                    m.deleted = true;
                }
            }
            if present {
                match wait(&self.client, &rx, &states, deadline)? {
                    Waited::Again => {}
                    Waited::Deadline => {
                        left = false;
                        break;
                    }
                }
            }
        }
        if left {
            *self.member.lock() = None;
        }
        // Curator deletes `ready` at the end of every leave.
        match self.client.delete().for_path(&self.ready_path) {
            Ok(()) | Err(zk_framework::Error::NoNode { .. } | zk_framework::Error::NotEmpty { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(left)
    }

    fn delete_ours(&self, ours: &str) -> Result<()> {
        match self.client.delete().for_path(ours) {
            Ok(()) | Err(zk_framework::Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_member;

    #[test]
    fn only_uuid_names_are_members() {
        let uuid = zk_framework::paths::new_protected_id();
        assert!(is_member(&uuid));
        assert!(is_member("9518667B-083A-4C97-BEB4-C8EC4F480C2D"));
        for not in [
            "ready",
            "not-ready",
            "",
            "9518667b083a4c97beb4c8ec4f480c2d",
            "9518667b-083a-4c97-beb4-c8ec4f480c2",
            "9518667b-083a-4c97-beb4-c8ec4f480c2dd",
            "9518667b-083a-4c97-beb4+c8ec4f480c2d",
            "9518667g-083a-4c97-beb4-c8ec4f480c2d",
            "_c_9518667b-083a-4c97-beb4-c8ec4f480c2d-lock-0000000000",
        ] {
            assert!(!is_member(not), "{not:?}");
        }
    }
}
