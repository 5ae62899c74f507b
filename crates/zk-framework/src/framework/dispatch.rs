//! The dispatch thread: connection states reach listeners and subscribers on
//! one thread, in order, never on the I/O or event thread.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::inner::Inner;
use crate::state::ConnectionState;

/// A listener for connection-state changes. It runs on the client's dispatch
/// thread, in order, never on the I/O or event thread, and may call the client.
pub type StateListener = dyn Fn(ConnectionState) + Send + Sync + 'static;

/// Unsubscribes its listener when dropped.
#[must_use = "the listener is removed when this handle is dropped"]
pub struct ListenerHandle {
    pub(super) id: u64,
    pub(super) inner: Weak<Inner>,
}

impl fmt::Debug for ListenerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerHandle").field("id", &self.id).finish()
    }
}

impl Drop for ListenerHandle {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.listeners.lock().retain(|(id, _)| *id != self.id);
        }
    }
}

pub(super) fn dispatch_loop(weak: Weak<Inner>, rx: Receiver<ConnectionState>) {
    loop {
        let state = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(s) => s,
            Err(RecvTimeoutError::Timeout) => match weak.upgrade() {
                Some(inner) if !inner.closed.load(Ordering::SeqCst) => continue,
                _ => return,
            },
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let Some(inner) = weak.upgrade() else { return };
        let listeners: Vec<Arc<StateListener>> = inner.listeners.lock().iter().map(|(_, l)| l.clone()).collect();
        inner.subscribers.lock().retain(|tx| tx.send(state).is_ok());
        drop(inner);
        for l in listeners {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(state))).is_err() {
                log::error!("a connection-state listener panicked on {state}");
            }
        }
    }
}
