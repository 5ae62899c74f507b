//! A recipe's background thread: named, cancelled by a channel, and stopped
//! within a bound. The latch's participant, the selector's, the observer and
//! a client's timer each run on one.
//!
//! The body gets the cancel channel: it becomes ready (disconnected) when the
//! worker is cancelled, so the body selects on it beside whatever it waits
//! for (never a poll). [`Worker::stop`] cancels and waits for the body to
//! return, no longer than its bound: a body stuck in user code is left to
//! finish on its own, and the caller goes on.

use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

/// A running (or finished) background thread of a recipe.
pub(crate) struct Worker {
    /// Dropped to cancel: the body's cancel channel disconnects.
    cancel: Mutex<Option<Sender<()>>>,
    /// Disconnected when the body has returned.
    done: Receiver<()>,
    thread: std::thread::Thread,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("thread", &self.thread.name())
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl Worker {
    /// Starts `body` on a thread named `name`, with its cancel channel.
    ///
    /// # Errors
    ///
    /// The system refused a thread.
    pub(crate) fn spawn(name: &str, body: impl FnOnce(Receiver<()>) + Send + 'static) -> std::io::Result<Worker> {
        let (cancel_tx, cancel_rx) = crossbeam_channel::bounded::<()>(0);
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
        let handle = std::thread::Builder::new().name(name.to_string()).spawn(move || {
            // Dropped however the body ends, a panic included.
            let _done = done_tx;
            body(cancel_rx);
        })?;
        Ok(Worker {
            cancel: Mutex::new(Some(cancel_tx)),
            done: done_rx,
            thread: handle.thread().clone(),
        })
    }

    /// Cancels the body (its cancel channel disconnects); does not wait.
    pub(crate) fn cancel(&self) {
        self.cancel.lock().take();
    }

    /// Waits until the body has returned or `deadline` passes: whether it
    /// returned. At once when called from the worker's own thread (a body
    /// that stops itself).
    pub(crate) fn join_until(&self, deadline: Instant) -> bool {
        if std::thread::current().id() == self.thread.id() {
            return self.is_finished();
        }
        matches!(
            self.done.recv_deadline(deadline),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        )
    }

    /// Cancels the body and waits for it until `deadline`: whether it
    /// returned.
    pub(crate) fn stop(&self, deadline: Instant) -> bool {
        self.cancel();
        self.join_until(deadline)
    }

    /// Whether the body has returned.
    pub(crate) fn is_finished(&self) -> bool {
        matches!(self.done.try_recv(), Err(crossbeam_channel::TryRecvError::Disconnected))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_worker_runs_until_cancelled_and_stops_within_its_bound() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let w = Worker::spawn("test-worker", move |cancel| {
            tx.send(std::thread::current().name().map(String::from)).unwrap();
            let _ = cancel.recv();
        })
        .unwrap();
        assert_eq!(rx.recv().unwrap().as_deref(), Some("test-worker"));
        assert!(!w.is_finished());
        // Not cancelled: the bound passes and the body still runs.
        assert!(!w.join_until(Instant::now() + Duration::from_millis(20)));
        let start = Instant::now();
        assert!(w.stop(Instant::now() + Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(w.is_finished());
    }

    #[test]
    fn a_stuck_body_is_given_up_on_at_the_bound_and_a_panic_ends_it() {
        let (gate_tx, gate) = crossbeam_channel::bounded::<()>(0);
        let w = Worker::spawn("stuck", move |_cancel| {
            // Ignores its cancel until the gate opens.
            let _ = gate.recv();
        })
        .unwrap();
        let bound = Duration::from_millis(50);
        let start = Instant::now();
        assert!(!w.stop(Instant::now() + bound), "the body is still stuck");
        assert!(start.elapsed() >= bound);
        drop(gate_tx);
        assert!(w.join_until(Instant::now() + Duration::from_secs(10)));
        let p = Worker::spawn("panics", |_| panic!("a body that panics")).unwrap();
        assert!(
            p.join_until(Instant::now() + Duration::from_secs(10)),
            "done even after a panic"
        );
    }

    #[test]
    fn a_body_that_stops_itself_does_not_wait_on_itself() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let slot: std::sync::Arc<Mutex<Option<Worker>>> = std::sync::Arc::default();
        let s = slot.clone();
        let w = Worker::spawn("self-stop", move |_cancel| {
            // The body waits for its handle, then stops itself: it must not
            // wait for its own end.
            let w = loop {
                if let Some(w) = s.lock().take() {
                    break w;
                }
                std::thread::yield_now();
            };
            let start = Instant::now();
            let stopped = w.stop(Instant::now() + Duration::from_secs(10));
            tx.send((stopped, start.elapsed())).unwrap();
        })
        .unwrap();
        *slot.lock() = Some(w);
        let (stopped, took) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(!stopped, "not finished while it runs");
        assert!(took < Duration::from_secs(1));
    }
}
