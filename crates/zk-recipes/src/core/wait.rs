//! The one wait every recipe's slow path uses: for a watch to fire, the
//! connection state to change, the client to close, or the deadline to come,
//! whichever is first. Each is a channel (the deadline a
//! `crossbeam_channel::at`, or `never` without one), selected on together:
//! nothing polls.

use std::time::Instant;

use crossbeam_channel::Receiver;
use zk_framework::CuratorFramework;

/// What ended a wait.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Woken<T> {
    /// The watch fired (`None`: its sender went, which tells nothing).
    Watch(Option<T>),
    /// The connection state changed.
    StateChanged,
    /// The deadline came first.
    Deadline,
    /// The client was closed.
    Closed,
    /// The waiter's owner cancelled the wait (a leader latch closing).
    Cancelled,
}

/// Waits for `watch`, a state change on `states`, the close of `client`,
/// `deadline` (`None`: no deadline), or `cancel` (a message, or its senders
/// gone; `never()` for the locks), whichever comes first. A deadline that
/// has passed returns at once, unless something else is ready too.
pub(crate) fn wait_or_cancel<T>(
    client: &CuratorFramework,
    watch: &Receiver<T>,
    states: &Receiver<()>,
    deadline: Option<Instant>,
    cancel: &Receiver<()>,
) -> Woken<T> {
    let timer = deadline.map_or_else(crossbeam_channel::never, crossbeam_channel::at);
    let closed = client.recipe().close_signal();
    crossbeam_channel::select! {
        recv(cancel) -> _ => Woken::Cancelled,
        recv(watch) -> e => Woken::Watch(e.ok()),
        recv(states) -> s => match s {
            Ok(()) => Woken::StateChanged,
            // The listener went with the client.
            Err(_) => Woken::Closed,
        },
        recv(closed) -> _ => Woken::Closed,
        recv(timer) -> _ => Woken::Deadline,
    }
}
