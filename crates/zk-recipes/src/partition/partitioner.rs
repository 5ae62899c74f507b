//! [`SetPartitioner`]: the handle (start, state, events, waits, release,
//! close) and the state it shares with its thread and its signals.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use crate::core::{Stage, Worker};
use crate::error::{Error, Result};
use crate::locks::holding::Holding;
use crate::partition::shared::{Shared, RECIPE};
use crate::partition::state::{Allocation, FailureReason, PartitionEvent, PartitionState};

/// Kazoo's `SetPartitioner`, on this crate's locks: the members of a party
/// split a set of items among themselves, each item held by one member's
/// lock, and move them when members come and go.
///
/// Each member is an ephemeral node `<path>/party/<identifier>` (kept in
/// place by a [`PersistentNode`](crate::PersistentNode)); the party is read
/// from a [`PathChildrenCache`](crate::PathChildrenCache). Once the party
/// has been quiet for the settle time
/// ([`time_boundary`](crate::SetPartitionerBuilder::time_boundary), kazoo's), every
/// member computes the split with the partition function (kazoo's
/// [`default_partition`](crate::default_partition) or the caller's) and
/// takes its share's locks, one [`InterProcessMutex`](crate::InterProcessMutex)
/// per item at `<path>/locks/<item>` (Curator's lock layout). See the
/// [module page](crate::SetPartitioner#the-state-machine) for the states,
/// what a member may do in each, and how this differs from kazoo.
///
/// Clones share this member (one thread, one party node, one set of
/// locks); it closes at [`close`](Self::close) or when the last clone is
/// dropped.
///
/// # The state machine
///
/// ```text
///            start
///              |
///              v
///   +---> Allocating(Joining -> Settling -> Acquiring) ---> Stuck (lock held too long;
///   |          |                    ^   (a change restarts    |   still trying)
///   |          | all locks held     |    the settling)        |
///   |          v                    |                         v
///   |      Acquired <---------> Suspended         (back to Acquiring when granted)
///   |          |   blip    proven     |
///   |          | party changed /      | party changed / lock lost
///   |          | lock lost            v
///   |          +--------------> Release
///   |                               |
///   +---- release_set() / auto -----+
///
///   any state --(session lost, bad partition function, close)--> Failure (final)
/// ```
///
/// * [`Allocating`](PartitionState::Allocating): joining, waiting for the
///   party to be quiet for the settle time (the deadline is in the state:
///   [`Allocation::Settling`]), releasing, or acquiring. The share is
///   empty; nothing may be used. A party change while allocating starts the
///   settling again (locks taken so far are given back: the caller never
///   saw them).
/// * [`Acquired`](PartitionState::Acquired): every lock of the share is held
///   and proven: work on the share, asking [`check`](Self::check) before
///   each side effect (it also answers by the clock, so a paused process
///   learns its locks may be gone before any of its threads has noticed;
///   [`fencing_tokens`](Self::fencing_tokens) gives each item's token for
///   a store that fences). This is the only state in which the share is
///   not empty.
/// * [`Suspended`](PartitionState::Suspended): the connection is down or
///   silent. Stop working; the locks may still be ours. When the connection
///   comes back on the same session and the server shows every lock node
///   and the party node still ours, and the party unchanged, the member
///   returns to `Acquired` with the same share, without a reallocation.
/// * [`Release`](PartitionState::Release): the party changed, or a lock was
///   lost (its node deleted while the session lives). Stop working and call
///   [`release_set`](Self::release_set) (or build with
///   [`auto_release`](crate::SetPartitionerBuilder::auto_release)): the locks are
///   held until then, and the other members wait for them.
/// * [`Stuck`](PartitionState::Stuck): a lock of the share has been held by
///   someone else for longer than
///   [`stuck_after`](crate::SetPartitionerBuilder::stuck_after): who holds it is
///   said (a member that has not released yet, or a session outside the
///   party), and the member goes on trying.
/// * [`Failure`](PartitionState::Failure): final. The session was lost, the
///   partition function panicked or returned an item not in the set or one
///   item for two members, or the member was closed. It owns nothing.
///
/// Never an item owned by two members at once: an item is owned only while
/// its lock is held, and a member leaves `Acquired` the moment one of its
/// holdings says it may be lost (the connection suspended or silent, the
/// node deleted, the session gone), from the holding's own signal, not
/// from this member's thread: before the server can expire the session
/// by its timeout and grant the lock to another. A session killed before
/// its timeout (an operator's `expire_session`) is the exception, as for
/// every lock: the member learns of it when the server
/// tells it, at the earliest when the new owner is granted, so for that
/// window only the [fencing tokens](Self::fencing_tokens) keep the item's
/// store safe (the fault campaign's partitioner kind saw a member cut off
/// with a minority server, its session killed at once, keep `check()`'s
/// `Ok` for 2 s, its token the smaller; see the guide's chapter on losing a
/// lock).
///
/// # Metrics
///
/// With the crate's `metrics` feature, each member reports through the
/// `metrics` facade, labelled by the partition's path and its identifier:
/// `zk_partition_share{path, member}` (a gauge: the share's size while
/// `Acquired`, else 0), `zk_partition_state{path, member, state}` (1 for
/// the member's state: `allocating`, `acquired`, `suspended`, `release`,
/// `stuck`, `failure`; 0 for the others) and
/// `zk_partition_rebalances_total{path, member, reason}` (a counter of its
/// moves to `Release`: `membership_changed`, `lock_lost`).
///
/// # Compared with kazoo's `SetPartitioner`
///
/// * A connection blip that keeps the session is `Suspended`, then
///   `Acquired` again once the server proves the locks and the party node
///   still ours: no reallocation (kazoo goes to `RELEASE` at every blip,
///   costing a full settle time each).
/// * A lock held by someone outside the party (or by a member that does not
///   release) is reported as `Stuck` with its holder, at every
///   `stuck_after` (kazoo #392: it spins in `ALLOCATING` forever, silently).
/// * A lock lost while the session lives (an operator deleted its node) is
///   told at once as `Release`; kazoo does not watch its held locks.
/// * Identifiers are checked: one node name; a second member with one
///   identifier is refused on one client ([`Error::DuplicateMember`]) and
///   waits, reported as [`Allocation::IdentifierTaken`], on another session
///   (kazoo gives two members one index).
/// * The partition function is checked: a panic, an item not in the set, or
///   one item given to two members is a typed [`FailureReason`], never a
///   panic out of the member's thread.
/// * The settle time is a visible deadline ([`Allocation::Settling`]); the
///   first allocation of a party waits for it as kazoo's does.
/// * Party nodes are `<path>/party/<identifier>` (kazoo: `<uuid>-<identifier>`)
///   and lock nodes are Curator's mutex nodes (kazoo's are its own): the two
///   do not share a set.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_recipes::{PartitionState, SetPartitioner};
///
/// let p = SetPartitioner::builder(&client, "/work/shards", ["a", "b", "c"])
///     .identifier("worker-1")
///     .time_boundary(Duration::from_millis(200))
///     .build()?;
/// p.start()?;
/// let share = p.wait_for_acquire_for(Duration::from_secs(10))?.expect("acquired");
/// assert_eq!(share, ["a", "b", "c"]); // a party of one owns everything
/// for ev in p.events().try_iter() {
///     if !ev.state.is_acquired() {
///         break; // stop working on the share
///     }
/// }
/// p.close()?;
/// assert!(matches!(p.state(), PartitionState::Failure { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct SetPartitioner {
    pub(crate) shared: Arc<Shared>,
    /// Shared by the clones only (the thread and the signals hold `shared`
    /// or a weak reference): the last one dropped closes the member.
    _owner: Arc<Owner>,
}

struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        let _ = self.0.close();
    }
}

impl std::fmt::Debug for SetPartitioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetPartitioner")
            .field("path", &self.shared.path)
            .field("identifier", &self.shared.identifier)
            .field("state", &self.state())
            .finish()
    }
}

impl SetPartitioner {
    pub(crate) fn from_shared(shared: Arc<Shared>) -> SetPartitioner {
        SetPartitioner {
            _owner: Arc::new(Owner(shared.clone())),
            shared,
        }
    }

    /// Joins the party: starts this member's thread, which creates its
    /// party node, waits for the party to settle and acquires its share.
    /// Returns at once.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] when started before; [`Error::Closed`]
    /// after `close()`; [`Error::DuplicateMember`] when a member with this
    /// identifier is started on this client in this party;
    /// [`Error::SpawnFailed`] when the system refuses a thread.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// # client.block_until_connected(std::time::Duration::from_secs(10))?;
    /// use zk_recipes::{Error, SetPartitioner};
    /// let p = SetPartitioner::builder(&client, "/p", ["a"]).identifier("w1").build()?;
    /// p.start()?;
    /// assert!(matches!(p.start(), Err(Error::AlreadyStarted { .. })));
    /// let twin = SetPartitioner::builder(&client, "/p", ["a"]).identifier("w1").build()?;
    /// assert!(matches!(twin.start(), Err(Error::DuplicateMember { .. })));
    /// p.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        start(&self.shared)
    }

    /// Leaves, for every clone: `Failure(Closed)` is told and every event
    /// channel ends; the locks held are given back, a lock wait in progress
    /// is ended (its node deleted), and the party node is deleted. Returns
    /// within the stop bound (2 s; a delete not answered by then goes on in
    /// the background). Idempotent.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::close`](crate::PersistentNode::close) (the party node's).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).build()?;
    /// p.start()?;
    /// p.close()?;
    /// p.close()?; // again: nothing to do
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        self.shared.close()
    }

    /// The current state (answered locally, at once).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).build()?;
    /// assert!(p.state().is_allocating());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self) -> PartitionState {
        self.shared.core.lock().state.clone()
    }

    /// The items this member may use now: its share while
    /// [`Acquired`](PartitionState::Acquired) and every lock of it
    /// certainly held now ([`check`](Self::check)), nothing otherwise.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).build()?;
    /// assert!(p.share().is_empty()); // not started
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn share(&self) -> Vec<String> {
        self.check().unwrap_or_default()
    }

    /// The share, `Ok` only while the member is
    /// [`Acquired`](PartitionState::Acquired) and each lock of the share is
    /// certainly held now, by the clock too (each holding's
    /// [`check`](crate::Holding::check): a process that was paused past its
    /// read timeout gets an error here before any thread of it has noticed).
    /// Call it before each side effect on the share. Answered locally, at
    /// once.
    ///
    /// # Errors
    ///
    /// [`Error::PartitionNotAcquired`] in any state but `Acquired` (but
    /// `Failure`: [`Error::PartitionFailed`]); a lock's
    /// [`Error::LockUncertain`] or [`Error::LockLost`] (naming its path)
    /// when a holding has not yet told the member.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// # client.block_until_connected(std::time::Duration::from_secs(10))?;
    /// use std::time::Duration;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/work/check", ["a", "b"])
    ///     .time_boundary(Duration::from_millis(100))
    ///     .build()?;
    /// assert!(matches!(p.check(), Err(zk_recipes::Error::PartitionNotAcquired { .. })));
    /// p.start()?;
    /// p.wait_for_acquire_for(Duration::from_secs(10))?.expect("acquired");
    /// for item in p.check()? {
    ///     // work on `item`
    /// }
    /// p.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self) -> Result<Vec<String>> {
        Ok(self.fencing_tokens()?.into_iter().map(|(item, _)| item).collect())
    }

    /// As [`check`](Self::check), each item with its lock's fencing token
    /// (the lock node's czxid, see [`Holding::fencing_token`](crate::Holding::fencing_token)):
    /// it grows with every grant of an item's lock, whichever member, so a
    /// store that remembers the largest token it saw per item refuses a
    /// write from an owner that has been replaced, and a checker orders
    /// the owners of an item without a shared clock.
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// # client.block_until_connected(std::time::Duration::from_secs(10))?;
    /// use std::time::Duration;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/work/tokens", ["a", "b"])
    ///     .time_boundary(Duration::from_millis(100))
    ///     .build()?;
    /// p.start()?;
    /// p.wait_for_acquire_for(Duration::from_secs(10))?.expect("acquired");
    /// for (item, token) in p.fencing_tokens()? {
    ///     assert!(token > 0, "{item}");
    /// }
    /// p.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_tokens(&self) -> Result<Vec<(String, i64)>> {
        let (state, holdings) = {
            let core = self.shared.core.lock();
            let holdings: Vec<(String, Holding)> = core.holdings.iter().map(|(i, h)| (i.clone(), h.share())).collect();
            (core.state.clone(), holdings)
        };
        match state {
            PartitionState::Acquired { items } => {
                // Asked outside the state lock (a holding may tell its
                // signals, which take it).
                let mut owned = Vec::with_capacity(items.len());
                for (item, h) in &holdings {
                    h.check()?;
                    owned.push((item.clone(), h.fencing_token()));
                }
                // The holdings are the share's, in item order.
                debug_assert!(owned.iter().map(|(i, _)| i).eq(items.iter()));
                Ok(owned)
            }
            PartitionState::Failure { reason } => Err(self.failed(&reason)),
            other => Err(Error::PartitionNotAcquired {
                path: self.shared.path.clone(),
                state: other.to_string(),
            }),
        }
    }

    /// Every change of state from now on, each stamped with the instant it
    /// took effect, the first event saying where the member stands; the
    /// channel ends at the close (after `Failure(Closed)`). Dropping the
    /// receiver unsubscribes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).build()?;
    /// let events = p.events();
    /// assert!(events.recv()?.state.is_allocating());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<PartitionEvent> {
        let mut core = self.shared.core.lock();
        let now = PartitionEvent {
            state: core.state.clone(),
            at: Instant::now(),
        };
        core.subscribers.subscribe_with(now)
    }

    /// Waits until the member is [`Acquired`](PartitionState::Acquired):
    /// its share, or `Ok(None)` when `timeout` passes first.
    ///
    /// # Errors
    ///
    /// [`Error::PartitionFailed`] when the member fails (or has failed);
    /// [`Error::NotStarted`], [`Error::Closed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).build()?;
    /// p.start()?;
    /// if let Some(share) = p.wait_for_acquire_for(std::time::Duration::from_secs(40))? {
    ///     println!("mine: {share:?}");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_acquire_for(&self, timeout: Duration) -> Result<Option<Vec<String>>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.wait_for_acquire_until(deadline),
            None => self.wait_for_acquire_until_opt(None),
        }
    }

    /// As [`wait_for_acquire_for`](Self::wait_for_acquire_for), until
    /// `deadline`.
    ///
    /// # Errors
    ///
    /// As [`wait_for_acquire_for`](Self::wait_for_acquire_for).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).build()?;
    /// p.start()?;
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    /// let share = p.wait_for_acquire_until(deadline)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_acquire_until(&self, deadline: Instant) -> Result<Option<Vec<String>>> {
        self.wait_for_acquire_until_opt(Some(deadline))
    }

    fn wait_for_acquire_until_opt(&self, deadline: Option<Instant>) -> Result<Option<Vec<String>>> {
        self.shared.check_usable()?;
        let events = self.events();
        let timer = deadline.map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        let closed = || Error::Closed {
            recipe: RECIPE,
            path: self.shared.path.clone(),
        };
        loop {
            // What is queued first (where it stands is the first event): a
            // deadline that has passed does not hide it.
            let ev = match events.try_recv() {
                Ok(ev) => ev,
                Err(crossbeam_channel::TryRecvError::Disconnected) => return Err(closed()),
                Err(crossbeam_channel::TryRecvError::Empty) => crossbeam_channel::select! {
                    recv(events) -> ev => ev.map_err(|_| closed())?,
                    recv(timer) -> _ => return Ok(None),
                },
            };
            match ev.state {
                PartitionState::Acquired { items } => return Ok(Some(items)),
                PartitionState::Failure {
                    reason: FailureReason::Closed,
                } => return Err(closed()),
                PartitionState::Failure { reason } => return Err(self.failed(&reason)),
                _ => {}
            }
        }
    }

    fn failed(&self, reason: &FailureReason) -> Error {
        Error::PartitionFailed {
            path: self.shared.path.clone(),
            reason: reason.to_string(),
        }
    }

    /// Gives the share back and allocates again (kazoo's `release_set()`):
    /// the member goes to [`Allocation::Releasing`] at once (its share is
    /// empty from this call on), its thread releases every lock it holds,
    /// waits for the party to settle and acquires its new share. Call it in
    /// [`Release`](PartitionState::Release); in any other state but
    /// `Failure` it forces a reallocation of this member alone.
    ///
    /// # Errors
    ///
    /// [`Error::PartitionFailed`] when the member has failed;
    /// [`Error::NotStarted`], [`Error::Closed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).build()?;
    /// p.start()?;
    /// for ev in p.events() {
    ///     if ev.state.is_release() {
    ///         // stop working on the share, then:
    ///         p.release_set()?;
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release_set(&self) -> Result<()> {
        self.shared.check_usable()?;
        {
            let mut core = self.shared.core.lock();
            if let PartitionState::Failure { reason } = &core.state {
                let reason = reason.clone();
                drop(core);
                return Err(self.failed(&reason));
            }
            core.release_requested = true;
            core.signals += 1;
            core.set(PartitionState::Allocating(Allocation::Releasing));
        }
        self.shared.wake();
        Ok(())
    }

    /// This member's identifier (its party node's name).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).identifier("w1").build()?;
    /// assert_eq!(p.identifier(), "w1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn identifier(&self) -> &str {
        &self.shared.identifier
    }

    /// The partitioner's path (the party is `<path>/party`, the locks
    /// `<path>/locks/<item>`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p/", ["a"]).build()?;
    /// assert_eq!(p.path(), "/p");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The set, sorted, each item once.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["b", "a", "b"]).build()?;
    /// assert_eq!(p.items(), ["a", "b"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn items(&self) -> &[String] {
        &self.shared.items
    }

    /// The party this member's current (or last) share was computed from,
    /// sorted: empty while it settles.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).build()?;
    /// assert!(p.members().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn members(&self) -> Vec<String> {
        self.shared
            .core
            .lock()
            .members
            .as_ref()
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Starts a member: its registry entry, its connection listener, its
/// party node and cache, its thread.
pub(crate) fn start(sh: &Arc<Shared>) -> Result<()> {
    {
        let mut core = sh.core.lock();
        if core.stage == Stage::New {
            if !sh.registry().0.lock().insert(sh.registry_key()) {
                return Err(Error::DuplicateMember {
                    path: sh.path.clone(),
                    identifier: sh.identifier.clone(),
                });
            }
            *sh.registered.lock() = true;
        }
        core.stage.start(RECIPE, &sh.path)?;
    }
    let weak = Arc::downgrade(sh);
    *sh.listener.lock() = Some(sh.client.add_listener(move |s| {
        if let Some(sh) = weak.upgrade() {
            sh.on_connection(s);
        }
    }));
    let started = sh.node.start().and_then(|()| sh.party.start()).and_then(|()| {
        let worker_sh = sh.clone();
        Worker::spawn(RECIPE, &sh.path, "zk-partitioner", move |cancel| {
            crate::partition::run::run(&worker_sh, &cancel)
        })
    });
    match started {
        Ok(w) => {
            *sh.worker.lock() = Some(w);
            Ok(())
        }
        Err(e) => {
            let _ = sh.close();
            Err(e)
        }
    }
}
