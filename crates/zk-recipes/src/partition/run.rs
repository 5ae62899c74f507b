//! The member's thread: join the party, wait for it to settle, partition,
//! acquire the share's locks, hold them (back from a blip on the server's
//! proof), release, and again; until the close or a failure. Every wait is
//! on channels with a deadline (the settle time's, the stuck bound's), never
//! a sleep; the signals of the holdings, the party and the connection set
//! the state at once on their own threads and wake this one.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};
use zk_framework::{ReadOp, ReadResult};

use crate::core::{Backoff, Stage};
use crate::error::Result;
use crate::freshness::Freshness;
use crate::locks::holding::{Holding, LockStatus};
use crate::locks::internals::{Attempt, LockInternals};
use crate::locks::mutex::InterProcessMutex;
use crate::locks::participants::{participants, LockLayout};
use crate::nodes::registration::{AbsentReason, Registration};
use crate::partition::function::assign;
use crate::partition::shared::Shared;
use crate::partition::state::{Allocation, FailureReason, LockHolder, PartitionState, ReleaseReason};

/// How long one read of the party may take.
const READ_BOUND: Duration = Duration::from_secs(10);

/// How a phase ended when it did not go on to the next.
enum Flow {
    /// Start over: join, settle, partition.
    Again,
    /// Stop the thread (closed, failed, cancelled).
    Stop,
}

enum Woke {
    Signal,
    Deadline,
    Stop,
}

struct Runner<'a> {
    sh: &'a Arc<Shared>,
    cancel: &'a Receiver<()>,
    node_events: Receiver<Registration>,
    /// The locks held, in item order.
    held: Vec<(String, Holding)>,
    backoff: Backoff,
    /// The session generation the member first joined on.
    generation: Option<u64>,
}

/// The thread's body.
pub(crate) fn run(sh: &Arc<Shared>, cancel: &Receiver<()>) {
    let mut r = Runner {
        sh,
        cancel,
        node_events: sh.node.events(),
        held: Vec::new(),
        backoff: Backoff::new(),
        generation: None,
    };
    while let Err(Flow::Again) = r.cycle() {}
    r.release_all();
    // A member that failed leaves the party at once (a closed one is left
    // by its close).
    let failed = {
        let core = sh.core.lock();
        core.stage == Stage::Started && core.state.is_failure()
    };
    if failed {
        let _ = sh.node.close();
        sh.party.close();
    }
}

impl Runner<'_> {
    /// One allocation: join, settle, partition, acquire, hold until a
    /// release. Never `Ok`: it ends with what comes next.
    fn cycle(&mut self) -> Result<(), Flow> {
        self.join()?;
        let members = self.settle()?;
        let mut shares = match assign(&self.sh.function, &members, &self.sh.items) {
            Ok(s) => s,
            Err(reason) => return Err(self.fail(reason)),
        };
        let share = shares.remove(&self.sh.identifier).unwrap_or_default();
        self.acquire(&share)?;
        self.hold(&share)
    }

    fn set(&self, state: PartitionState) {
        self.sh.core.lock().set(state);
    }

    fn fail(&self, reason: FailureReason) -> Flow {
        self.set(PartitionState::Failure { reason });
        Flow::Stop
    }

    /// Whether the thread must stop: cancelled, closed, failed, the client
    /// closed, or the session it joined on gone.
    fn stopping(&self) -> bool {
        if matches!(self.cancel.try_recv(), Err(TryRecvError::Disconnected)) {
            return true;
        }
        if self.sh.client.is_closed() {
            self.set(PartitionState::Failure {
                reason: FailureReason::ClientClosed,
            });
            return true;
        }
        if self
            .generation
            .is_some_and(|g| g != self.sh.client.recipe().session_generation())
        {
            self.set(PartitionState::Failure {
                reason: FailureReason::SessionLost,
            });
            return true;
        }
        let core = self.sh.core.lock();
        core.stage != Stage::Started || core.state.is_failure()
    }

    /// Waits for a signal, a registration change, the cancel or `until`.
    fn wait(&mut self, until: Option<Instant>) -> Woke {
        let timer = until.map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        crossbeam_channel::select! {
            recv(self.cancel) -> _ => Woke::Stop,
            recv(self.sh.wake.1) -> _ => Woke::Signal,
            recv(self.node_events) -> ev => {
                if ev.is_err() {
                    self.node_events = crossbeam_channel::never();
                }
                Woke::Signal
            }
            recv(timer) -> _ => Woke::Deadline,
        }
    }

    /// The backoff's pause, ended early by the cancel.
    fn pause(&mut self) -> Result<(), Flow> {
        let until = Instant::now() + self.backoff.next();
        loop {
            match self.wait(Some(until)) {
                Woke::Stop => return Err(Flow::Stop),
                Woke::Deadline => return Ok(()),
                Woke::Signal if self.stopping() => return Err(Flow::Stop),
                Woke::Signal => {}
            }
        }
    }

    /// Until the party node is proven ours (its registration).
    fn join(&mut self) -> Result<(), Flow> {
        loop {
            if self.stopping() {
                return Err(Flow::Stop);
            }
            match self.sh.node.registration() {
                Registration::Registered { .. } => {
                    let now = self.sh.client.recipe().session_generation();
                    self.generation.get_or_insert(now);
                    return Ok(());
                }
                Registration::Absent {
                    why: AbsentReason::OwnedByAnotherSession { owner },
                } => self.set(PartitionState::Allocating(Allocation::IdentifierTaken { owner })),
                _ => self.set(PartitionState::Allocating(Allocation::Joining)),
            }
            if let Woke::Stop = self.wait(None) {
                return Err(Flow::Stop);
            }
        }
    }

    /// Waits until the party has been quiet for the settle time, then reads
    /// it from the server (after a sync): the members, sorted, this one
    /// among them.
    fn settle(&mut self) -> Result<Vec<String>, Flow> {
        {
            let mut core = self.sh.core.lock();
            core.members = None;
            core.party_changed = false;
            core.lost.clear();
            core.release_requested = false;
        }
        let mut until = Instant::now() + self.sh.time_boundary;
        self.set(PartitionState::Allocating(Allocation::Settling { until }));
        loop {
            if self.stopping() {
                return Err(Flow::Stop);
            }
            match self.wait(Some(until)) {
                Woke::Stop => return Err(Flow::Stop),
                Woke::Deadline => break,
                Woke::Signal => {}
            }
            // A party change, or a `release_set` (a reallocation asked
            // for), starts the wait again.
            let changed = {
                let mut core = self.sh.core.lock();
                core.lost.clear();
                std::mem::take(&mut core.release_requested) | std::mem::take(&mut core.party_changed)
            };
            if changed {
                until = Instant::now() + self.sh.time_boundary;
                self.set(PartitionState::Allocating(Allocation::Settling { until }));
            }
        }
        if self.stopping() {
            return Err(Flow::Stop);
        }
        if !self.sh.node.registration().is_registered() {
            return Err(Flow::Again);
        }
        let members = match self.read_party() {
            Ok(m) => m,
            Err(e) => {
                log::debug!("set partitioner at {}: reading the party failed: {e}", self.sh.path);
                self.pause()?;
                return Err(Flow::Again);
            }
        };
        if !members.contains(&self.sh.identifier) {
            // Our node is not there yet as the server sees it: join again.
            return Err(Flow::Again);
        }
        let mut core = self.sh.core.lock();
        if core.party_changed {
            return Err(Flow::Again);
        }
        core.members = Some(members.iter().cloned().collect::<BTreeSet<_>>());
        Ok(members)
    }

    /// The party's members as the server has them, after a sync, sorted.
    fn read_party(&self) -> Result<Vec<String>> {
        let zk = self.sh.client.with_deadline(Some(Instant::now() + READ_BOUND));
        let read = zk
            .recipe()
            .sync_then_read(&[ReadOp::GetChildren(self.sh.party_path.clone())])?;
        let mut kids = match read.into_iter().next() {
            Some(ReadResult::Children(Some((kids, _)))) => kids,
            _ => Vec::new(),
        };
        kids.sort();
        Ok(kids)
    }

    /// Whether a change since the share was computed ends this allocation.
    fn must_start_over(&self) -> bool {
        let core = self.sh.core.lock();
        core.party_changed || core.release_requested || !core.lost.is_empty()
    }

    /// Takes the share's locks, in item order.
    fn acquire(&mut self, share: &[String]) -> Result<(), Flow> {
        let wanted = share.len();
        for item in share {
            let lock_path = format!("{}/{item}", self.sh.locks_path);
            let internals = match InterProcessMutex::new(&self.sh.client, &lock_path) {
                Ok(m) => m.internals().clone().with_cancel(self.sh.wake.1.clone()),
                Err(e) => {
                    log::warn!("set partitioner at {}: the lock {lock_path}: {e}", self.sh.path);
                    self.release_all();
                    self.pause()?;
                    return Err(Flow::Again);
                }
            };
            self.set(PartitionState::Allocating(Allocation::Acquiring {
                held: self.held.len(),
                wanted,
            }));
            let since = Instant::now();
            // When to say it is stuck (again): the attempt's deadline, kept
            // across attempts ended by a signal.
            let mut report_at = since + self.sh.stuck_after;
            loop {
                if self.stopping() {
                    return Err(Flow::Stop);
                }
                // A signal sent before this point is in the flags; one sent
                // after it ends the wait below.
                while self.sh.wake.1.try_recv().is_ok() {}
                if self.must_start_over() {
                    self.set(PartitionState::Allocating(Allocation::Releasing));
                    self.release_all();
                    return Err(Flow::Again);
                }
                if Instant::now() >= report_at {
                    report_at = Instant::now() + self.sh.stuck_after;
                    let holder = self.holder_of(&internals);
                    if holder != LockHolder::Unknown {
                        self.set(PartitionState::Stuck {
                            item: item.clone(),
                            holder,
                            since,
                        });
                    }
                }
                let zk = self.sh.client.with_deadline(Some(report_at));
                match internals.attempt_once(&zk, None, None) {
                    Ok(Attempt::Won(node)) => {
                        let holding = internals.hold(node);
                        self.follow(item, &holding);
                        self.sh.core.lock().holdings.push((item.clone(), holding.share()));
                        self.held.push((item.clone(), holding));
                        self.backoff.reset();
                        break;
                    }
                    // A signal: the flags say what.
                    Ok(Attempt::Cancelled) => {}
                    // The stuck bound came: said at the top of the loop.
                    Ok(Attempt::TimedOut) => {}
                    Ok(Attempt::Missing) => self.pause()?,
                    Err(e) => {
                        log::debug!("set partitioner at {}: acquiring {lock_path}: {e}", self.sh.path);
                        self.pause()?;
                    }
                }
            }
        }
        self.set(PartitionState::Allocating(Allocation::Acquiring {
            held: self.held.len(),
            wanted,
        }));
        Ok(())
    }

    /// Tells the member every change of `holding` at once, on the holding's
    /// own thread.
    fn follow(&self, item: &str, holding: &Holding) {
        let weak = Arc::downgrade(self.sh);
        let item = item.to_string();
        holding.subscribe_signal(Arc::new(move |ev| match weak.upgrade() {
            Some(sh) => {
                sh.on_lock_event(&item, ev);
                true
            }
            None => false,
        }));
    }

    /// Who holds the lock of `internals` (the holder's session, looked up
    /// in the party).
    fn holder_of(&self, internals: &LockInternals) -> LockHolder {
        let zk = self.sh.client.with_deadline(Some(Instant::now() + READ_BOUND));
        let Ok(ps) = participants(&zk, internals.base_path(), LockLayout::Mutex) else {
            return LockHolder::Unknown;
        };
        let Some(holder) = ps.iter().find(|p| p.holds) else {
            return LockHolder::Unknown;
        };
        let session = holder.session_id;
        let kids = zk.get_children(&self.sh.party_path).unwrap_or_default();
        let mut found = None;
        for k in kids {
            let owner = zk
                .check_exists(&format!("{}/{k}", self.sh.party_path))
                .ok()
                .flatten()
                .map(|st| st.ephemeral_owner);
            if owner == Some(session) {
                let mine = k == self.sh.identifier;
                found = Some(k);
                if !mine {
                    break;
                }
            }
        }
        match found {
            Some(identifier) => LockHolder::Member { identifier, session },
            None => LockHolder::NotAMember { session },
        }
    }

    /// Holds the share: `Acquired` while every lock and the party node are
    /// proven ours and the party is unchanged; `Suspended` while not known;
    /// `Release` when the party changed or a lock was lost; back to the
    /// start at `release_set` (or at once in the automatic mode).
    fn hold(&mut self, share: &[String]) -> Result<(), Flow> {
        loop {
            if self.stopping() {
                return Err(Flow::Stop);
            }
            // What the holdings, the party node and the party say now, asked
            // outside the state lock (a holding tells its signals under its
            // own lock, and they take the state lock).
            let seen = self.sh.core.lock().signals;
            let mut lost = None;
            let mut all_held = true;
            for (item, h) in &self.held {
                match h.status() {
                    LockStatus::Held => {}
                    LockStatus::Uncertain => all_held = false,
                    LockStatus::Lost => {
                        all_held = false;
                        lost.get_or_insert_with(|| item.clone());
                    }
                }
            }
            let registered = self.sh.node.registration().is_registered();
            let party = self.sh.party.freshness();
            let proven = all_held && registered && party.is_current();
            // A party cache that is reading a change it was told of
            // (`Updating`) says nothing about the connection: the change
            // itself comes as the party's event (a `Release`), so the state
            // stays until then. Only a holding, the party node or a party
            // cache in doubt about the connection makes `Suspended`.
            let in_doubt = !all_held || !registered || !matches!(party, Freshness::Current | Freshness::Updating);
            let release = {
                let mut core = self.sh.core.lock();
                if core.signals != seen {
                    // Something was told meanwhile: look again.
                    false
                } else {
                    let lost = lost.or_else(|| core.lost.first().cloned());
                    let reason = if core.party_changed {
                        Some(ReleaseReason::MembershipChanged)
                    } else {
                        lost.map(|item| ReleaseReason::LockLost { item })
                    };
                    let releasing = matches!(core.state, PartitionState::Allocating(Allocation::Releasing));
                    let allocating = core.state.is_allocating();
                    let in_release = core.state.is_release();
                    let acquired = core.state.is_acquired();
                    if releasing || (in_release && self.sh.auto_release) {
                        true
                    } else if in_release {
                        false
                    } else if let Some(reason) = reason {
                        if allocating {
                            // Never told acquired: start over without the
                            // caller.
                            true
                        } else {
                            core.set(PartitionState::Release { reason });
                            self.sh.auto_release
                        }
                    } else if proven {
                        core.set(PartitionState::Acquired { items: share.to_vec() });
                        false
                    } else {
                        if acquired && in_doubt {
                            core.set(PartitionState::Suspended);
                        }
                        false
                    }
                }
            };
            if release {
                self.set(PartitionState::Allocating(Allocation::Releasing));
                self.release_all();
                return Err(Flow::Again);
            }
            if self.sh.core.lock().signals != seen {
                continue;
            }
            if let Woke::Stop = self.wait(None) {
                return Err(Flow::Stop);
            }
        }
    }

    /// Gives every held lock back (a lost one's node, if any, is deleted
    /// in the background).
    fn release_all(&mut self) {
        self.sh.core.lock().holdings.clear();
        for (item, h) in self.held.drain(..) {
            if let Err(e) = h.release_node() {
                log::debug!("set partitioner: releasing {item}: {e}");
            }
        }
    }
}
