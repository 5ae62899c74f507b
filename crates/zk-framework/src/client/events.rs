//! The event thread: runs watcher callbacks, one at a time, with no lock held,
//! catching panics.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crossbeam_channel::Receiver;

use super::inner::EventMsg;

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// The event thread's body: runs until `Stop` or until every sender is gone.
pub(super) fn event_main(rx: Receiver<EventMsg>) {
    while let Ok(msg) = rx.recv() {
        match msg {
            EventMsg::Fire(watchers, event) => {
                for w in watchers {
                    let ev = event.clone();
                    if let Err(p) = catch_unwind(AssertUnwindSafe(move || w.process(ev))) {
                        log::error!("a watcher panicked on {event:?}: {}", panic_message(&*p));
                    }
                }
            }
            EventMsg::Discard(watchers) => {
                if let Err(p) = catch_unwind(AssertUnwindSafe(move || drop(watchers))) {
                    log::error!("dropping a watcher panicked: {}", panic_message(&*p));
                }
            }
            EventMsg::Stop => break,
        }
    }
    log::debug!("zk event thread exits");
}
