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

/// The registration of a connection-state listener (from
/// [`CuratorFramework::add_listener`](super::CuratorFramework::add_listener)). Dropping it unsubscribes the listener at
/// once, so keep it as long as the listener should run, or call
/// [`ListenerHandle::detach`] to keep the listener for the client's lifetime.
///
/// `let _ = client.add_listener(..)` drops the handle on the spot: the listener
/// never runs. Bind it to a named variable (`let _states = ...`) or detach it.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let handle = client.add_listener(|s| println!("state {s}"));
/// // ... the listener runs while `handle` lives ...
/// drop(handle); // unsubscribed
/// client.add_listener(|s| println!("for good: {s}")).detach();
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[must_use = "dropping a ListenerHandle unsubscribes its listener at once (`let _ = ...` drops it); \
              keep the handle, or call `.detach()` to keep the listener for the client's lifetime"]
pub struct ListenerHandle {
    id: u64,
    inner: Weak<Inner>,
}

impl ListenerHandle {
    pub(super) fn new(id: u64, inner: Weak<Inner>) -> ListenerHandle {
        ListenerHandle { id, inner }
    }

    /// Keeps the listener registered for the client's lifetime: it runs until
    /// the client (every clone of it) is gone, and can no longer be removed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// client.add_listener(|s| log::info!("connection state: {s}")).detach();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn detach(mut self) {
        // With no client to upgrade to, the drop below removes nothing.
        self.inner = Weak::new();
    }
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
