//! The node's thread: it looks at the node (with a watch) whenever the
//! connection moved on or a watch fired, creates it when it is missing,
//! writes new data, and tells every change of the registration.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Receiver;
use zk_framework::proto::ErrorCode;
use zk_framework::{ConnectionState, CreateMode, CuratorFramework, SessionHealth};

use super::{AbsentReason, Fact, Inner, Lifecycle, Registration, State, UncertainReason, REQUEST_BOUND, RETRY_PAUSE};
use crate::core::STOP_BOUND;
use crate::error::{Error, Result};

/// What the node's thread does after a step.
enum Next {
    /// Wait for a wake (a watch, a state change, new data, the close).
    Wait,
    /// Take another step at once.
    Again,
    /// Try again after a pause (or a wake).
    Retry,
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
        Lifecycle::Closed.error(self.spec.recipe, &self.spec.path)
    }

    /// The registration, drawn from the last fact and the client's state now.
    pub(super) fn registration(&self, st: &State) -> Registration {
        match st.lifecycle {
            Lifecycle::New => {
                return Registration::Absent {
                    why: AbsentReason::NotStarted,
                }
            }
            Lifecycle::Closed => {
                return Registration::Absent {
                    why: AbsentReason::Closed,
                }
            }
            Lifecycle::Started => {}
        }
        let c = &self.client;
        match &st.fact {
            Fact::Absent(why) => Registration::Absent { why: why.clone() },
            Fact::Unknown => Registration::Uncertain {
                why: self.uncertain_now().unwrap_or(UncertainReason::Unproven),
            },
            Fact::Proven { epoch, generation } => {
                if self.spec.mode.is_ephemeral() && c.session_generation() != *generation {
                    return Registration::Absent {
                        why: AbsentReason::SessionExpired,
                    };
                }
                if let Some(why) = self.uncertain_now() {
                    return Registration::Uncertain { why };
                }
                if c.connection_epoch() != *epoch {
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
            st.subscribers.retain(|s| s.send(now.clone()).is_ok());
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
        let closed = self.client.close_signal();
        // The epoch in which the node was last looked at (with a watch set).
        let mut looked: Option<u64> = None;
        let mut pause = RETRY_PAUSE.0;
        loop {
            if self.state.lock().lifecycle != Lifecycle::Started {
                return;
            }
            let next = self.step(&mut looked);
            self.publish();
            let timer = match next {
                Next::Again => {
                    pause = RETRY_PAUSE.0;
                    continue;
                }
                Next::Wait => {
                    pause = RETRY_PAUSE.0;
                    crossbeam_channel::never()
                }
                Next::Retry => {
                    let t = crossbeam_channel::after(pause);
                    pause = (pause * 2).min(RETRY_PAUSE.1);
                    t
                }
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
        let epoch = base.connection_epoch();
        let generation = base.session_generation();
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
        if base.connection_epoch() != epoch {
            // The connection moved while we looked: look again.
            *looked = None;
            return Next::Again;
        }
        *looked = Some(epoch);
        match seen {
            Some(stat) => {
                if self.spec.mode.is_ephemeral() && stat.ephemeral_owner != session {
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
                if st.path.is_none() {
                    st.path = Some(target);
                }
                st.created_once = true;
                st.fact = Fact::Proven { epoch, generation };
                self.publish_locked(&mut st);
                Next::Wait
            }
            None => {
                if matches!(self.state.lock().fact, Fact::Proven { .. }) {
                    self.set_fact(Fact::Absent(
                        if self.spec.mode.is_ephemeral() && base.session_generation() != generation {
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
        match b.for_path(&target) {
            Ok(created) => {
                let mut st = self.state.lock();
                st.path = Some(created);
                st.creates += 1;
                self.metrics.created();
                if st.data == data {
                    st.data_dirty = false;
                }
                // Proven by the look that follows (which sets the watch).
                Next::Again
            }
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

    pub(super) fn close(&self) -> Result<()> {
        let (path, delete) = {
            let mut st = self.state.lock();
            st.lifecycle.check(self.spec.recipe, &self.spec.path)?;
            st.lifecycle = Lifecycle::Closed;
            let ours = match st.fact {
                // An ephemeral node is ours only on the session that made it.
                Fact::Proven { generation, .. } => {
                    !self.spec.mode.is_ephemeral() || generation == self.client.session_generation()
                }
                _ => st.created_once,
            };
            (st.path.clone(), ours && self.spec.delete_on_close)
        };
        let end = Instant::now() + STOP_BOUND;
        if let Some(w) = self.worker.lock().take() {
            w.stop_until(end);
        }
        if let (Some(path), true) = (path, delete) {
            if !self.client.is_closed() {
                let bounded = self.client.with_deadline(Some(end));
                match bounded.delete().guaranteed().for_path(&path) {
                    Ok(()) | Err(zk_framework::Error::NoNode { .. }) => {}
                    Err(e) => {
                        log::debug!("closing the persistent node {path}: {e} (the delete goes on in the background)")
                    }
                }
            }
        }
        let mut st = self.state.lock();
        self.publish_locked(&mut st);
        st.subscribers.clear();
        Ok(())
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
