//! The node's thread: it looks at the node (with a watch) whenever the
//! connection moved on or a watch fired, creates it when it is missing,
//! writes new data, and tells every change of the registration; and the
//! close, which leaves nothing behind (see the module doc's "What a close
//! leaves"): every write is begun under the node's lock while started, and a
//! create in flight at the close is cleaned up by the thread that gets its
//! reply.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Receiver;
use zk_framework::proto::ErrorCode;
use zk_framework::{ConnectionState, CreateMode, CuratorFramework, SessionHealth};

use crate::core::{Backoff, Stage, STOP_BOUND};
use crate::error::{Error, Result};
use crate::nodes::registration::MemberEvent;
use crate::nodes::registration::{AbsentReason, Registration, UncertainReason};
use crate::nodes::state::{Fact, Inner, State, REQUEST_BOUND};

/// A close begun ([`Inner::close_begin`]): the node to delete and the thread
/// to wait for.
pub(crate) struct Closing {
    delete: Option<String>,
    worker: Option<crate::core::Worker>,
}

impl Closing {
    /// Leaves the node in place (a service discovery's static instance at
    /// its close): nothing is deleted by this close. A create in flight is
    /// still undone by the thread that gets its reply.
    pub(crate) fn keep_node(mut self) -> Closing {
        self.delete = None;
        self
    }
}

/// What the node's thread does after a step.
enum Next {
    /// Wait for a wake (a watch, a state change, new data, the close).
    Wait,
    /// Take another step at once.
    Again,
    /// Try again after a pause (or a wake).
    Retry,
    /// The node is closed: the thread ends.
    Stop,
}

impl Inner {
    /// A watch that only wakes the node's thread (to look again).
    pub(super) fn watcher(&self) -> impl FnOnce(zk_framework::WatchedEvent) + Send + 'static {
        let wake = self.fired.0.clone();
        move |_| {
            let _ = wake.try_send(());
        }
    }

    pub(super) fn closed_error(&self) -> Error {
        Stage::Closed.error(self.spec.recipe, &self.spec.path)
    }

    /// The registration, drawn from the last fact and the client's state now.
    pub(super) fn registration(&self, st: &State) -> Registration {
        match st.lifecycle {
            Stage::New => {
                return Registration::Absent {
                    why: AbsentReason::NotStarted,
                }
            }
            Stage::Closed => {
                return Registration::Absent {
                    why: AbsentReason::Closed,
                }
            }
            Stage::Started => {}
        }
        let c = &self.client;
        match &st.fact {
            Fact::Absent(why) => Registration::Absent { why: why.clone() },
            Fact::Unknown => Registration::Uncertain {
                why: self.uncertain_now().unwrap_or(UncertainReason::Unproven),
            },
            Fact::Proven { epoch, generation } => {
                if self.spec.mode.is_ephemeral() && c.recipe().session_generation() != *generation {
                    return Registration::Absent {
                        why: AbsentReason::SessionExpired,
                    };
                }
                if let Some(why) = self.uncertain_now() {
                    return Registration::Uncertain { why };
                }
                if c.recipe().connection_epoch() != *epoch {
                    return Registration::Uncertain {
                        why: UncertainReason::Unproven,
                    };
                }
                Registration::Registered {
                    path: st.path.clone().unwrap_or_else(|| self.spec.path.clone()),
                }
            }
        }
    }

    /// Why the connection cannot vouch for anything now, if it cannot.
    pub(super) fn uncertain_now(&self) -> Option<UncertainReason> {
        let c = &self.client;
        if c.is_closed()
            || !matches!(
                c.state(),
                Some(ConnectionState::Connected | ConnectionState::Reconnected)
            )
        {
            return Some(UncertainReason::Disconnected);
        }
        if c.session_health() != SessionHealth::Confirmed {
            return Some(UncertainReason::Silent);
        }
        None
    }

    /// Tells the channels a change of the registration.
    pub(super) fn publish(&self) {
        let mut st = self.state.lock();
        self.publish_locked(&mut st);
    }

    pub(super) fn publish_locked(&self, st: &mut State) {
        let now = self.registration(st);
        if st.told.as_ref() != Some(&now) {
            self.metrics.told(&now);
            st.subscribers.tell(&now);
            st.members.tell(&MemberEvent::Registration(now.clone()));
            st.told = Some(now);
        }
        self.changed.notify_all();
    }

    pub(super) fn set_fact(&self, fact: Fact) {
        let mut st = self.state.lock();
        st.fact = fact;
        self.publish_locked(&mut st);
    }

    /// The node's thread: a step, then a wait for what may change things.
    pub(super) fn run(self: &Arc<Self>, cancel: &Receiver<()>) {
        // A change of the connection or its health is told at once (even
        // while this thread waits for a reply), then handled here.
        let (wake, me) = (self.wake.0.clone(), Arc::downgrade(self));
        let _states = self.client.add_listener(move |_| {
            if let Some(me) = me.upgrade() {
                me.publish();
            }
            let _ = wake.try_send(());
        });
        let (wake, me) = (self.wake.0.clone(), Arc::downgrade(self));
        let _health = self.client.add_health_listener(move |_| {
            if let Some(me) = me.upgrade() {
                me.publish();
            }
            let _ = wake.try_send(());
        });
        let closed = self.client.recipe().close_signal();
        // The epoch in which the node was last looked at (with a watch set).
        let mut looked: Option<u64> = None;
        let mut backoff = Backoff::new();
        loop {
            if self.state.lock().lifecycle != Stage::Started {
                return;
            }
            let next = self.step(&mut looked);
            self.publish();
            let timer = match next {
                Next::Stop => return,
                Next::Again => {
                    backoff.reset();
                    continue;
                }
                Next::Wait => {
                    backoff.reset();
                    crossbeam_channel::never()
                }
                Next::Retry => crossbeam_channel::after(backoff.next()),
            };
            crossbeam_channel::select! {
                recv(self.wake.1) -> _ => {}
                recv(self.fired.1) -> _ => looked = None,
                recv(timer) -> _ => looked = None,
                recv(closed) -> _ => {
                    self.publish();
                    return;
                }
                recv(cancel) -> _ => return,
            }
        }
    }

    /// One step: look at the node (setting a watch) when the last look is
    /// not of this epoch or a watch fired, create it when it is missing,
    /// write new data when there is some.
    fn step(&self, looked: &mut Option<u64>) -> Next {
        let base = &self.client;
        if base.is_closed() {
            return Next::Wait;
        }
        if !base.is_connected() {
            *looked = None;
            return Next::Wait;
        }
        let client = base.with_deadline(Instant::now().checked_add(REQUEST_BOUND));
        let epoch = base.recipe().connection_epoch();
        let generation = base.recipe().session_generation();
        let session = base.session_id();
        let (path, data, dirty) = {
            let st = self.state.lock();
            (st.path.clone(), st.data.clone(), st.data_dirty)
        };
        let target = path.clone().unwrap_or_else(|| self.spec.path.clone());
        let fresh = *looked == Some(epoch);
        if fresh && !dirty && matches!(self.state.lock().fact, Fact::Proven { .. }) {
            return Next::Wait;
        }
        // A look, with a watch that wakes this thread on any change.
        let known = path.is_some() || !self.spec.mode.is_sequential();
        let seen = if known {
            match client.check_exists_w(&target, self.watcher()) {
                Ok(s) => s,
                Err(e) => return self.failed(e),
            }
        } else {
            None
        };
        if base.recipe().connection_epoch() != epoch {
            // The connection moved while we looked: look again.
            *looked = None;
            return Next::Again;
        }
        *looked = Some(epoch);
        match seen {
            Some(stat) => {
                if self.spec.mode.is_ephemeral() && stat.ephemeral_owner != session {
                    self.state.lock().owned = None;
                    self.set_fact(Fact::Absent(AbsentReason::OwnedByAnotherSession {
                        owner: stat.ephemeral_owner,
                    }));
                    // Its deletion fires the watch.
                    return Next::Wait;
                }
                let taken_over = {
                    let st = self.state.lock();
                    !st.created_once && st.creates == 0
                };
                if dirty || (taken_over && stat.ephemeral_owner == 0) {
                    // Our data on our node (a node found in place at the
                    // start is taken over with our data, as Curator does).
                    // No write is begun once the close has begun.
                    if self.state.lock().lifecycle != Stage::Started {
                        return Next::Stop;
                    }
                    match client.set_data(&target, data.clone(), None) {
                        Ok(_) => {
                            let mut st = self.state.lock();
                            if st.data == data {
                                st.data_dirty = false;
                            }
                        }
                        Err(e) => return self.failed(e),
                    }
                }
                let mut st = self.state.lock();
                if st.lifecycle != Stage::Started {
                    // Closed while we looked: the close decided on what it
                    // knew then.
                    return Next::Stop;
                }
                if st.path.is_none() {
                    st.path = Some(target);
                }
                st.created_once = true;
                st.owned = Some(generation);
                st.fact = Fact::Proven { epoch, generation };
                self.publish_locked(&mut st);
                Next::Wait
            }
            None => {
                self.state.lock().owned = None;
                if matches!(self.state.lock().fact, Fact::Proven { .. }) {
                    self.set_fact(Fact::Absent(
                        if self.spec.mode.is_ephemeral() && base.recipe().session_generation() != generation {
                            AbsentReason::SessionExpired
                        } else {
                            AbsentReason::Deleted
                        },
                    ));
                }
                self.create(&client, path, data)
            }
        }
    }

    /// Creates the node (its first name, or the name it kept).
    fn create(&self, client: &CuratorFramework, path: Option<String>, data: Vec<u8>) -> Next {
        let s = &self.spec;
        // A name once known is kept: re-created with the mode's
        // non-sequential form (the protection is in the name already).
        let (target, mode, protect) = match &path {
            Some(p) => (p.clone(), non_sequential(s.mode), false),
            None => (s.path.clone(), s.mode, s.protected),
        };
        let mut b = client.create().with_mode(mode).with_data(data.clone());
        if s.parents {
            b = b.creating_parent_containers_if_needed();
        }
        if protect {
            b = b.with_protection();
        }
        if let Some(ttl) = s.ttl {
            b = b.with_ttl(ttl);
        }
        // Decided under the lock: once the close has begun, no create.
        {
            let mut st = self.state.lock();
            if st.lifecycle != Stage::Started {
                return Next::Stop;
            }
            st.creating = true;
        }
        let outcome = b.for_path(&target);
        // The outcome is recorded under the same guard that sees whether the
        // close began meanwhile: a close either finds the node recorded (and
        // deletes it) or finds it in flight (and leaves it to us).
        let closed = {
            let mut st = self.state.lock();
            st.creating = false;
            if let Ok(created) = &outcome {
                st.creates += 1;
                self.metrics.created();
                if st.lifecycle == Stage::Started {
                    st.path = Some(created.clone());
                    // Ours from now on (an ephemeral one on the session the
                    // client has: a create retried after an expiry made it
                    // there).
                    st.owned = Some(self.client.recipe().session_generation());
                    if st.data == data {
                        st.data_dirty = false;
                    }
                }
            }
            st.lifecycle != Stage::Started
        };
        if closed {
            // The close left this create to us.
            self.after_close(&target, path.is_some(), protect, outcome);
            return Next::Stop;
        }
        match outcome {
            // Proven by the look that follows (which sets the watch).
            Ok(_) => Next::Again,
            // Made meanwhile (by us: a retried create; or by someone): look.
            Err(zk_framework::Error::NodeExists { .. }) => Next::Again,
            Err(zk_framework::Error::NoNode { .. }) if !s.parents => {
                // Watch the parent; its creation wakes us.
                let parent = match target.rfind('/') {
                    Some(0) | None => "/".to_string(),
                    Some(i) => target[..i].to_string(),
                };
                self.set_fact(Fact::Absent(AbsentReason::ParentMissing));
                match client.check_exists_w(&parent, self.watcher()) {
                    Ok(None) => Next::Wait,
                    Ok(Some(_)) => Next::Again,
                    Err(e) => self.failed(e),
                }
            }
            Err(zk_framework::Error::NoAuth { .. }) => {
                self.set_fact(Fact::Absent(AbsentReason::NoAuth));
                Next::Wait
            }
            Err(zk_framework::Error::Keeper {
                code: ErrorCode::Unimplemented,
                ..
            }) if s.ttl.is_some() => {
                self.set_fact(Fact::Absent(AbsentReason::TtlNotEnabled));
                Next::Wait
            }
            Err(e) => self.failed(e),
        }
    }

    /// A request failed: a refusal is told; a connection problem says
    /// nothing about the node. Either way, try again after a pause.
    fn failed(&self, e: zk_framework::Error) -> Next {
        log::debug!("persistent node {}: {e}", self.spec.path);
        // The node (or a parent) went or came meanwhile (a write to a node
        // deleted after our look, a parent reaped under a create): the next
        // look tells.
        let raced = matches!(
            e,
            zk_framework::Error::NoNode { .. }
                | zk_framework::Error::NodeExists { .. }
                | zk_framework::Error::BadVersion { .. }
        );
        if !raced && !e.is_retryable() && e != zk_framework::Error::DeadlineExceeded && e != zk_framework::Error::Closed
        {
            self.set_fact(Fact::Absent(AbsentReason::Refused(e)));
        }
        Next::Retry
    }

    /// Closes the node (see the module doc's "What a close leaves"): from
    /// now on nothing is begun; the node is deleted here when its name is
    /// known and no create is in flight, else by the thread that gets the
    /// create's reply. Waits for the thread until the stop bound.
    pub(super) fn close(&self) -> Result<()> {
        let end = Instant::now() + STOP_BOUND;
        let closing = self.close_begin()?;
        self.close_finish(closing, end);
        Ok(())
    }

    /// The close's first half, which never waits: closed (told, every
    /// channel ended), the thread cancelled, and what is left to delete.
    pub(crate) fn close_begin(&self) -> Result<Closing> {
        let delete = {
            let mut st = self.state.lock();
            st.lifecycle.check(self.spec.recipe, &self.spec.path)?;
            st.lifecycle = Stage::Closed;
            // Our node is in place (created, or shown ours, and not shown
            // gone or another session's since); an ephemeral one only on the
            // session that made it.
            let ours = st
                .owned
                .is_some_and(|g| !self.spec.mode.is_ephemeral() || g == self.client.recipe().session_generation());
            self.publish_locked(&mut st);
            st.subscribers.close();
            st.members.close();
            // A create in flight: its node (the same name, re-created) is the
            // thread's to delete.
            st.path
                .clone()
                .filter(|_| ours && self.spec.delete_on_close && !st.creating)
        };
        let worker = self.worker.lock().take();
        if let Some(w) = &worker {
            w.cancel();
        }
        Ok(Closing { delete, worker })
    }

    /// The close's second half: the delete and the wait for the thread, both
    /// until `end`.
    pub(crate) fn close_finish(&self, closing: Closing, end: Instant) {
        if let Some(path) = closing.delete {
            self.delete_ours(&path, end);
        }
        if let Some(w) = closing.worker {
            if !w.join_until(end) {
                log::debug!(
                    "closing the persistent node {}: its thread is still in a request; it cleans up when answered",
                    self.spec.path
                );
            }
        }
    }

    /// A guaranteed delete of our node at `path`: tried until `deadline`,
    /// then in the background until the client closes.
    fn delete_ours(&self, path: &str, deadline: Instant) {
        if self.client.is_closed() {
            return;
        }
        let bounded = self.client.with_deadline(Some(deadline));
        match bounded.delete().guaranteed().for_path(path) {
            Ok(()) | Err(zk_framework::Error::NoNode { .. }) => {}
            Err(e) => log::debug!("closing the persistent node {path}: {e} (the delete goes on in the background)"),
        }
    }

    /// A create whose reply came after the close began: what it made is
    /// deleted (unless the node is left to expire, a TTL node's close), so
    /// that the close leaves nothing.
    fn after_close(&self, target: &str, known: bool, protected: bool, outcome: zk_framework::Result<String>) {
        if !self.spec.delete_on_close {
            // A TTL node: left to expire, as its close leaves every node. It
            // is never touched again.
            return;
        }
        // A name known before the create (kept from an earlier create, or a
        // plain non-sequential one) can be looked at; a protected or
        // sequential first create's cannot.
        let fixed_name = known || (!protected && !self.spec.mode.is_sequential());
        log::debug!("persistent node {target}: a create answered after the close began: {outcome:?}");
        match outcome {
            Ok(created) => {
                log::debug!("persistent node {created}: created after the close began; deleting it");
                self.delete_ours(&created, Instant::now() + REQUEST_BOUND);
            }
            // A node of our name made meanwhile (by our own create retried
            // after a lost reply, or by someone): deleted when ours.
            Err(zk_framework::Error::NodeExists { .. }) if fixed_name => self.delete_if_ours(target),
            Err(e) if e.may_have_applied() => {
                if fixed_name {
                    self.delete_if_ours(target);
                } else if protected {
                    // The client deletes a protected node whose create's
                    // outcome is unknown, in the background, by its prefix.
                } else {
                    log::warn!(
                        "persistent node {}: an unprotected sequential create's outcome is unknown after the close \
                         ({e}); a node it may have made cannot be found (protection is what finds it)",
                        self.spec.path
                    );
                }
            }
            // Refused: nothing was made.
            Err(_) => {}
        }
    }

    /// Looks at `path` (a node of fixed name) until the server answers, and
    /// deletes it when it is ours: an ephemeral node of our session, a
    /// persistent node at our path (taken over, as a node found in place at
    /// the start). Gives up when the client closes, or when the session
    /// changes for an ephemeral node (it went with its session).
    fn delete_if_ours(&self, path: &str) {
        let generation = self.client.recipe().session_generation();
        let mut backoff = Backoff::new();
        let closed = self.client.recipe().close_signal();
        loop {
            if self.client.is_closed()
                || (self.spec.mode.is_ephemeral() && self.client.recipe().session_generation() != generation)
            {
                return;
            }
            let bounded = self.client.with_deadline(Instant::now().checked_add(REQUEST_BOUND));
            match bounded.check_exists(path) {
                Ok(None) => return,
                Ok(Some(stat)) => {
                    let ours = !self.spec.mode.is_ephemeral() || stat.ephemeral_owner == self.client.session_id();
                    if ours {
                        self.delete_ours(path, Instant::now() + REQUEST_BOUND);
                    }
                    return;
                }
                Err(e) => {
                    log::debug!("persistent node {path}: looking after the close: {e}");
                    crossbeam_channel::select! {
                        recv(closed) -> _ => return,
                        recv(crossbeam_channel::after(backoff.next())) -> _ => {}
                    }
                }
            }
        }
    }
}

/// The mode a node keeps once its name is known.
fn non_sequential(mode: CreateMode) -> CreateMode {
    match mode {
        CreateMode::EphemeralSequential => CreateMode::Ephemeral,
        CreateMode::PersistentSequential => CreateMode::Persistent,
        CreateMode::PersistentSequentialWithTtl => CreateMode::PersistentWithTtl,
        m => m,
    }
}
