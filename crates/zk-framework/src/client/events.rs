//! The event thread: runs watcher callbacks, one at a time, with no lock held,
//! catching panics.

use std::panic::{catch_unwind, AssertUnwindSafe};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_channel::Receiver;

use super::types::{WatchedEvent, Watcher};

/// Messages for the event thread.
pub(super) enum EventMsg {
    /// Run these watchers with the event.
    Fire(Vec<Box<dyn Watcher>>, WatchedEvent),
    /// Drop these watchers (their `Drop` is user code: never on the I/O thread).
    Discard(Vec<Box<dyn Watcher>>),
    /// Finish the queued work and exit.
    Stop,
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Runs `watchers` with `event`, catching and logging a panic of each (the
/// event thread, or the I/O thread for watchers that only signal).
pub(super) fn fire(watchers: Vec<Box<dyn Watcher>>, event: &WatchedEvent) {
    for w in watchers {
        let ev = event.clone();
        if let Err(p) = catch_unwind(AssertUnwindSafe(move || w.process(ev))) {
            log::error!("a watcher panicked on {event:?}: {}", panic_message(&*p));
        }
    }
}

/// The event thread's body: runs until `Stop` or until every sender is gone.
/// Counts each handled `Fire` and `Discard` down in `queued`.
pub(super) fn event_main(rx: Receiver<EventMsg>, queued: Arc<AtomicUsize>) {
    while let Ok(msg) = rx.recv() {
        match msg {
            EventMsg::Fire(watchers, event) => fire(watchers, &event),
            EventMsg::Discard(watchers) => {
                if let Err(p) = catch_unwind(AssertUnwindSafe(move || drop(watchers))) {
                    log::error!("dropping a watcher panicked: {}", panic_message(&*p));
                }
            }
            EventMsg::Stop => break,
        }
        queued.fetch_sub(1, Ordering::AcqRel);
    }
    log::debug!("zk event thread exits");
}
