//! The receivers of a recipe's events (`events()`), kept inside the lock
//! that orders those events: the owner changes its state and tells, under
//! one guard, so that two threads telling at once cannot be heard in the
//! other order (a receiver never hears an older value after a newer one).

use crossbeam_channel::{Receiver, Sender};

/// The subscribers of one recipe's events. Not a lock of its own: it lives
/// in the owner's state, behind the owner's lock.
#[derive(Debug)]
pub(crate) struct Subscribers<T> {
    senders: Vec<Sender<T>>,
    closed: bool,
}

impl<T> Default for Subscribers<T> {
    fn default() -> Self {
        Subscribers {
            senders: Vec::new(),
            closed: false,
        }
    }
}

impl<T: Clone> Subscribers<T> {
    pub(crate) fn new() -> Subscribers<T> {
        Subscribers::default()
    }

    /// A new receiver of every event told from now on (unbounded; dropping
    /// it unsubscribes). After [`Subscribers::close`], a receiver that is
    /// disconnected at once.
    pub(crate) fn subscribe(&mut self) -> Receiver<T> {
        let (tx, rx) = crossbeam_channel::unbounded();
        if !self.closed {
            self.senders.push(tx);
        }
        rx
    }

    /// As [`Subscribers::subscribe`], with `first` (where things stand now)
    /// queued ahead of every later event.
    pub(crate) fn subscribe_with(&mut self, first: T) -> Receiver<T> {
        let (tx, rx) = crossbeam_channel::unbounded();
        if !self.closed {
            let _ = tx.send(first);
            self.senders.push(tx);
        }
        rx
    }

    /// Tells `event` to every receiver still there (those dropped are
    /// forgotten). Never blocks.
    pub(crate) fn tell(&mut self, event: &T) {
        self.senders.retain(|s| s.send(event.clone()).is_ok());
    }

    /// Ends every channel (their receivers see them disconnect once
    /// drained); later subscriptions are disconnected at once.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.senders.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscribers_hear_what_is_told_after_they_came_until_the_close() {
        let mut s = Subscribers::new();
        let early = s.subscribe();
        s.tell(&1);
        let late = s.subscribe_with(10);
        s.tell(&2);
        drop(s.subscribe()); // a dropped receiver is forgotten at the next tell
        s.tell(&3);
        assert_eq!(s.senders.len(), 2);
        assert_eq!(early.try_iter().collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(late.try_iter().collect::<Vec<_>>(), [10, 2, 3]);
        s.close();
        assert!(s.senders.is_empty());
        assert!(early.recv().is_err(), "disconnected at the close");
        let after = s.subscribe_with(99);
        assert!(after.recv().is_err(), "a subscription after the close ends at once");
    }
}
