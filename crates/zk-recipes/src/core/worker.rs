//! A recipe's background thread: named, cancelled by a channel, and stopped
//! within a bound; and the backoff between its failed attempts. Every
//! recipe thread runs on one (the latch's participant, the selector's, the
//! observer, a cache's, a watcher's, a node's, a shared value's).
//!
//! The body gets the cancel channel: it becomes ready (disconnected) when the
//! worker is cancelled, so the body selects on it beside whatever it waits
//! for (never a poll). [`Worker::stop`] cancels and waits for the body to
//! return, no longer than [`STOP_BOUND`]: a body stuck in a request finishes
//! within that request's own bound, a body stuck in user code on its own, and
//! the caller goes on.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::error::Error;

/// How long a recipe's `close()` waits for its thread: the one stop bound.
pub(crate) const STOP_BOUND: Duration = Duration::from_secs(2);

/// The pause between a background thread's failed attempts (a read that
/// failed, a watch not added, a create refused): 50 ms, doubling up to 2 s;
/// back to 50 ms after a success.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    /// The first pause.
    pub(crate) const FIRST: Duration = Duration::from_millis(50);
    /// The longest pause.
    pub(crate) const MAX: Duration = Duration::from_secs(2);

    pub(crate) fn new() -> Backoff {
        Backoff { next: Self::FIRST }
    }

    /// The pause to take now; the next one is twice as long (at most
    /// [`Backoff::MAX`]).
    pub(crate) fn next(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        now
    }

    /// After a success: the next pause is the first again.
    pub(crate) fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

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
    /// Starts `body` on a thread named `name` for the `recipe` at `path`,
    /// with its cancel channel.
    ///
    /// # Errors
    ///
    /// [`Error::SpawnFailed`] when the system refused a thread.
    pub(crate) fn spawn(
        recipe: &'static str,
        path: &str,
        name: &str,
        body: impl FnOnce(Receiver<()>) + Send + 'static,
    ) -> Result<Worker, Error> {
        let (cancel_tx, cancel_rx) = crossbeam_channel::bounded::<()>(0);
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
        let handle = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                // Dropped however the body ends, a panic included.
                let _done = done_tx;
                body(cancel_rx);
            })
            .map_err(|e| Error::SpawnFailed {
                recipe,
                path: path.to_string(),
                reason: e.to_string(),
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
    pub(crate) fn stop_until(&self, deadline: Instant) -> bool {
        self.cancel();
        self.join_until(deadline)
    }

    /// Cancels the body and waits for it, at most [`STOP_BOUND`]: whether
    /// it returned (logged when not, naming the thread).
    pub(crate) fn stop(&self) -> bool {
        let stopped = self.stop_until(Instant::now() + STOP_BOUND);
        if !stopped && std::thread::current().id() != self.thread.id() {
            log::warn!(
                "the thread {} did not stop within {STOP_BOUND:?}; it ends on its own",
                self.thread.name().unwrap_or("?")
            );
        }
        stopped
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
        let w = Worker::spawn("Test", "/t", "test-worker", move |cancel| {
            tx.send(std::thread::current().name().map(String::from)).unwrap();
            let _ = cancel.recv();
        })
        .unwrap();
        assert_eq!(rx.recv().unwrap().as_deref(), Some("test-worker"));
        assert!(!w.is_finished());
        // Not cancelled: the bound passes and the body still runs.
        assert!(!w.join_until(Instant::now() + Duration::from_millis(20)));
        let start = Instant::now();
        assert!(w.stop_until(Instant::now() + Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(w.is_finished());
    }

    #[test]
    fn a_stuck_body_is_given_up_on_at_the_bound_and_a_panic_ends_it() {
        let (gate_tx, gate) = crossbeam_channel::bounded::<()>(0);
        let w = Worker::spawn("Test", "/t", "stuck", move |_cancel| {
            // Ignores its cancel until the gate opens.
            let _ = gate.recv();
        })
        .unwrap();
        let bound = Duration::from_millis(50);
        let start = Instant::now();
        assert!(!w.stop_until(Instant::now() + bound), "the body is still stuck");
        assert!(start.elapsed() >= bound);
        drop(gate_tx);
        assert!(w.join_until(Instant::now() + Duration::from_secs(10)));
        let p = Worker::spawn("Test", "/t", "panics", |_| panic!("a body that panics")).unwrap();
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
        let w = Worker::spawn("Test", "/t", "self-stop", move |_cancel| {
            // The body waits for its handle, then stops itself: it must not
            // wait for its own end.
            let w = loop {
                if let Some(w) = s.lock().take() {
                    break w;
                }
                std::thread::yield_now();
            };
            let start = Instant::now();
            let stopped = w.stop_until(Instant::now() + Duration::from_secs(10));
            tx.send((stopped, start.elapsed())).unwrap();
        })
        .unwrap();
        *slot.lock() = Some(w);
        let (stopped, took) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(!stopped, "not finished while it runs");
        assert!(took < Duration::from_secs(1));
    }

    #[test]
    fn the_backoff_doubles_to_its_cap_and_starts_over_after_a_success() {
        let mut b = Backoff::new();
        let pauses: Vec<u64> = (0..8).map(|_| b.next().as_millis() as u64).collect();
        assert_eq!(pauses, [50, 100, 200, 400, 800, 1600, 2000, 2000]);
        b.reset();
        assert_eq!(b.next(), Backoff::FIRST);
    }
}
