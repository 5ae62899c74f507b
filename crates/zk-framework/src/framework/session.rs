//! The session monitor thread: it follows the current handle's session events,
//! feeds the connection-state machine, injects Curator's simulated expiry while
//! suspended, and builds a new handle (a new session) after expiry.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;

use super::inner::Inner;
use crate::client::{Client, ClientState, SessionEvent};
use crate::state::{ConnectionState, SessionSignal};

impl Inner {
    /// Replaces the handle with a new one (a new session). Returns the new
    /// generation, or `None` when closed.
    pub(super) fn reset_handle(&self, old_generation: u64) -> Option<u64> {
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let mut h = self.handle.lock();
        if h.generation != old_generation {
            return Some(h.generation);
        }
        let connect_string = self.connect_string.lock().clone();
        match Client::connect(&connect_string, self.client_config.clone()) {
            Ok(c) => {
                let old = std::mem::replace(&mut h.client, Arc::new(c));
                h.generation += 1;
                let g = h.generation;
                drop(h);
                // Whoever waits for a connection waits on the new handle now.
                {
                    let _c = self.conn.lock();
                    self.conn_cv.notify_all();
                }
                // Closing the old handle is bounded; do it off this thread.
                let _ = std::thread::Builder::new()
                    .name("zk-framework-close".into())
                    .spawn(move || old.close());
                Some(g)
            }
            Err(e) => {
                log::error!("cannot build a new ZooKeeper handle: {e}");
                None
            }
        }
    }

    pub(super) fn post(&self, signal: SessionSignal) {
        let states = {
            let mut c = self.conn.lock();
            let states = c.machine.apply(signal);
            if let Some(last) = states.last() {
                if *last == ConnectionState::Suspended {
                    c.suspended_since = Some(Instant::now());
                } else if last.is_connected() || *last == ConnectionState::Lost {
                    c.suspended_since = None;
                }
            }
            self.conn_cv.notify_all();
            states
        };
        for s in &states {
            log::info!("state change: {s}");
        }
        self.dispatch.post(&states, &self.subscribers, &self.listeners);
    }
}

pub(super) fn session_monitor(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if inner.closed.load(Ordering::SeqCst) {
            return;
        }
        let (client, generation) = inner.current();
        let rx = client.state_receiver();
        match client.state() {
            // The handle may have connected before we subscribed (a duplicate
            // SyncConnected on the channel is ignored by the state machine).
            ClientState::Connected => on_connected(&inner, &client, generation, false),
            ClientState::ConnectedReadOnly => on_connected(&inner, &client, generation, true),
            // It died before we subscribed (a replacement that could not be
            // built, or an expiry in between): lose it and build another.
            ClientState::Expired | ClientState::Closed => {
                lose_and_reset(&inner, generation);
                continue;
            }
            ClientState::Connecting => {}
            // Refused before we subscribed: no event will come, so tell the
            // state and wake whoever waits for a connection (it reads the
            // refusal).
            ClientState::AuthFailed => {
                inner.post(SessionSignal::AuthFailed);
                wake_waiters(&inner);
            }
        }
        drop(inner);
        loop {
            let Some(inner) = weak.upgrade() else { return };
            if inner.closed.load(Ordering::SeqCst) {
                return;
            }
            if inner.current().1 != generation {
                break; // someone replaced the handle; follow the new one
            }
            // Checked on every turn, not only when the channel is quiet.
            if simulated_expiry_due(&inner) {
                log::warn!(
                    "session timeout has elapsed while SUSPENDED; injecting a session expiration (session 0x{:x})",
                    client.session_id()
                );
                lose_and_reset(&inner, generation);
                break;
            }
            // Wake when the session's health may change by the clock alone
            // (the read timeout, the horizon), so that its listeners hear it
            // at that moment.
            let wait = simulated_expiry_wait(&inner);
            let wait = inner
                .follow_health()
                .map_or(wait, |h| wait.min(h.max(Duration::from_millis(1))));
            match rx.recv_timeout(wait) {
                Ok(SessionEvent::SyncConnected) => on_connected(&inner, &client, generation, false),
                Ok(SessionEvent::ConnectedReadOnly) => on_connected(&inner, &client, generation, true),
                Ok(SessionEvent::Disconnected) => inner.post(SessionSignal::Disconnected),
                Ok(SessionEvent::Expired) => {
                    log::warn!("session 0x{:x} expired; building a new session", client.session_id());
                    lose_and_reset(&inner, generation);
                    break;
                }
                Ok(SessionEvent::AuthFailed) => {
                    log::error!("authentication failed for session 0x{:x}", client.session_id());
                    inner.post(SessionSignal::AuthFailed);
                    wake_waiters(&inner);
                }
                Ok(SessionEvent::Closed) | Err(RecvTimeoutError::Disconnected) => {
                    if inner.closed.load(Ordering::SeqCst) {
                        return;
                    }
                    if inner.current().1 == generation {
                        // The handle died under us: treat it as a lost session.
                        lose_and_reset(&inner, generation);
                    }
                    break;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// Reports the session lost and replaces the handle. When no new handle can be
/// built (a host name that does not resolve for a while), waits up to a second
/// (less if the client is closed) so that the caller's next try does not spin.
fn lose_and_reset(inner: &Inner, generation: u64) {
    inner.post(SessionSignal::Expired);
    if inner.reset_handle(generation).is_some() {
        return;
    }
    let end = Instant::now() + Duration::from_secs(1);
    let mut c = inner.conn.lock();
    while !inner.closed.load(Ordering::SeqCst) && Instant::now() < end {
        inner.conn_cv.wait_until(&mut c, end);
    }
}

/// Wakes `block_until_connected`'s wait on the state machine: the handle
/// ended in a way the machine does not hear of (the server refused the
/// session's credentials), and the waiter reads it from the handle. Under
/// the lock the waiter checks before it waits, so the wake is not lost.
fn wake_waiters(inner: &Inner) {
    let _c = inner.conn.lock();
    inner.conn_cv.notify_all();
}

fn on_connected(inner: &Inner, client: &Client, generation: u64, read_only: bool) {
    let new_handle = {
        let mut c = inner.conn.lock();
        c.negotiated_timeout = client.negotiated_timeout().filter(|d| !d.is_zero());
        let new = c.last_connected_generation != 0 && c.last_connected_generation != generation;
        c.last_connected_generation = generation;
        new
    };
    inner.post(if read_only {
        SessionSignal::ConnectedReadOnly { new_handle }
    } else {
        SessionSignal::Connected { new_handle }
    });
}

fn expiry_budget(inner: &Inner) -> Duration {
    let c = inner.conn.lock();
    let t = c.negotiated_timeout.unwrap_or(inner.client_config.session_timeout);
    t * inner.simulated_expiration_percent / 100
}

fn simulated_expiry_wait(inner: &Inner) -> Duration {
    let since = inner.conn.lock().suspended_since;
    match since {
        None => Duration::from_millis(250),
        Some(s) => expiry_budget(inner)
            .saturating_sub(s.elapsed())
            .clamp(Duration::from_millis(1), Duration::from_millis(250)),
    }
}

fn simulated_expiry_due(inner: &Inner) -> bool {
    let since = inner.conn.lock().suspended_since;
    matches!(since, Some(s) if s.elapsed() >= expiry_budget(inner))
}
