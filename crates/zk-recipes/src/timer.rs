//! A client's timer: things due a little later (a holding's own-node watch,
//! sent shortly after its grant), run on a thread of that client that lives
//! while there is work: it starts at the first item, ends [`LINGER`] after
//! the last one, and at once when the client closes. A client at rest runs no
//! timer thread.
//!
//! The timer waits on channels, never polls: a wake-up when the queue was
//! empty, the client's close signal, and a `crossbeam_channel::at` for the
//! next item's time.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zk_framework::CuratorFramework;

use crate::worker::Worker;

/// Something the timer runs when its time comes, unless it is gone by then
/// (only a weak reference waits in the queue).
pub(crate) trait Due: Send + Sync {
    /// Runs on the timer thread: must not block (send without waiting).
    fn run(self: Arc<Self>);
}

/// The timer runs at most this often, however many items come due: items of
/// a busy lock are handled in batches, not one wake-up each.
const TICK: Duration = Duration::from_millis(5);

/// How long the thread waits for more work after the queue ran empty before
/// it ends (a busy client keeps one thread; an idle one none).
const LINGER: Duration = Duration::from_secs(1);

/// The queue, in due order (callers use one fixed delay, so pushing at the
/// back keeps the order), and whether a thread serves it.
#[derive(Default)]
struct Queue {
    due: VecDeque<(Instant, Weak<dyn Due>)>,
    served: bool,
}

/// One client's timer (kept by the client: [`Timer::of`]).
pub(crate) struct Timer {
    queue: Arc<Mutex<Queue>>,
    /// Wakes the thread when the queue was empty.
    wake: Sender<()>,
    wake_rx: Receiver<()>,
    closed: Receiver<()>,
    /// The latest thread started.
    thread: Mutex<Option<Worker>>,
}

impl Timer {
    /// The timer of `client` (shared by its clones).
    pub(crate) fn of(client: &CuratorFramework) -> Arc<Timer> {
        client.extension(|| Timer::new(client.close_signal()))
    }

    fn new(closed: Receiver<()>) -> Timer {
        let (wake, wake_rx) = crossbeam_channel::bounded(1);
        Timer {
            queue: Arc::default(),
            wake,
            wake_rx,
            closed,
            thread: Mutex::new(None),
        }
    }

    /// Runs `what` at `at` (at most [`TICK`] later). Returns `false` when no
    /// timer thread can run (the client is closed, or the system refused a
    /// thread): the caller then does it at once.
    pub(crate) fn schedule(&self, at: Instant, what: Weak<dyn Due>) -> bool {
        if self.closed.try_recv() == Err(crossbeam_channel::TryRecvError::Disconnected) {
            return false;
        }
        let mut q = self.queue.lock();
        let was_empty = q.due.is_empty();
        q.due.push_back((at, what));
        if q.served {
            drop(q);
            // A queue that was not empty has its front's time on the timer
            // already, no later than this one's.
            if was_empty {
                let _ = self.wake.try_send(());
            }
            return true;
        }
        q.served = true;
        drop(q);
        let (queue, wake, closed) = (self.queue.clone(), self.wake_rx.clone(), self.closed.clone());
        match Worker::spawn("zk-lock-watches", move |cancel| run(&queue, &wake, &closed, &cancel)) {
            Ok(t) => {
                // The previous thread, if any, has ended (it handed the queue
                // back before this one was started).
                *self.thread.lock() = Some(t);
                true
            }
            Err(e) => {
                log::warn!("no timer thread ({e}): the own-node watch goes out at once");
                let mut q = self.queue.lock();
                q.due.pop_back();
                q.served = false;
                false
            }
        }
    }

    /// Whether this timer's thread is running (tests).
    #[cfg(test)]
    fn thread_alive(&self) -> bool {
        matches!(&*self.thread.lock(), Some(w) if !w.is_finished())
    }
}

impl Drop for Timer {
    /// Stops the thread and waits for it (its items only send, so at most
    /// [`STOP_WAIT`]), unless this is the thread itself (the last reference
    /// to the client went with an item it ran).
    fn drop(&mut self) {
        if let Some(w) = self.thread.lock().take() {
            w.stop(Instant::now() + STOP_WAIT);
        }
    }
}

/// How long dropping a timer waits for its thread.
const STOP_WAIT: Duration = Duration::from_secs(1);

fn run(queue: &Mutex<Queue>, wake: &Receiver<()>, closed: &Receiver<()>, cancel: &Receiver<()>) {
    let mut last_run: Option<Instant> = None;
    loop {
        let next = queue
            .lock()
            .due
            .front()
            .map(|(t, _)| last_run.map_or(*t, |l| (*t).max(l + TICK)));
        let timer = crossbeam_channel::at(next.unwrap_or_else(|| Instant::now() + LINGER));
        crossbeam_channel::select! {
            recv(wake) -> r => {
                if r.is_err() {
                    return;
                }
            }
            recv(closed) -> _ => return,
            recv(cancel) -> _ => return,
            recv(timer) -> _ => {
                let now = Instant::now();
                let mut ready = Vec::new();
                {
                    let mut q = queue.lock();
                    if next.is_none() && q.due.is_empty() {
                        // Idle for the linger time: hand the queue back.
                        q.served = false;
                        return;
                    }
                    while q.due.front().is_some_and(|(t, _)| *t <= now) {
                        if let Some((_, w)) = q.due.pop_front() {
                            ready.push(w);
                        }
                    }
                }
                if !ready.is_empty() {
                    last_run = Some(now);
                }
                for what in ready.iter().filter_map(Weak::upgrade) {
                    what.run();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    struct Count(AtomicU32, Sender<()>);
    impl Due for Count {
        fn run(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
            let _ = self.1.try_send(());
        }
    }

    fn timer() -> (Timer, Sender<()>) {
        let (close_tx, closed) = crossbeam_channel::bounded(0);
        (Timer::new(closed), close_tx)
    }

    fn wait_for(what: impl Fn() -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while !what() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
        what()
    }

    #[test]
    fn runs_what_is_due_in_order_and_skips_what_is_gone() {
        let (t, _close) = timer();
        let (tx, rx) = crossbeam_channel::unbounded();
        let a = Arc::new(Count(AtomicU32::new(0), tx.clone()));
        let gone = Arc::new(Count(AtomicU32::new(0), tx));
        let now = Instant::now();
        let weak_gone = Arc::downgrade(&gone);
        drop(gone);
        assert!(t.schedule(now, weak_gone));
        assert!(t.schedule(now + Duration::from_millis(20), Arc::downgrade(&a) as Weak<dyn Due>));
        rx.recv_timeout(Duration::from_secs(10)).expect("ran");
        assert!(now.elapsed() >= Duration::from_millis(20));
        assert_eq!(a.0.load(Ordering::SeqCst), 1);
        assert!(rx.try_recv().is_err(), "the dropped item never ran");
    }

    #[test]
    fn the_thread_ends_when_the_client_closes_and_then_nothing_is_queued() {
        let (t, close) = timer();
        let (tx, _rx) = crossbeam_channel::unbounded();
        let a = Arc::new(Count(AtomicU32::new(0), tx));
        assert!(t.schedule(Instant::now(), Arc::downgrade(&a) as Weak<dyn Due>));
        assert!(t.thread_alive());
        drop(close);
        wait_for(|| !t.thread_alive());
        assert!(!t.thread_alive(), "the timer thread stopped at close");
    }

    #[test]
    fn an_idle_timer_ends_its_thread_and_starts_another_for_new_work() {
        let (t, _close) = timer();
        let (tx, rx) = crossbeam_channel::unbounded();
        let a = Arc::new(Count(AtomicU32::new(0), tx));
        assert!(t.schedule(Instant::now(), Arc::downgrade(&a) as Weak<dyn Due>));
        rx.recv_timeout(Duration::from_secs(10)).expect("ran");
        assert!(wait_for(|| !t.thread_alive()), "idle past the linger time: no thread");
        assert!(t.schedule(Instant::now(), Arc::downgrade(&a) as Weak<dyn Due>));
        rx.recv_timeout(Duration::from_secs(10)).expect("ran again");
        assert_eq!(a.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_timer_that_never_started_refuses_after_close() {
        let (t, close) = timer();
        drop(close);
        let (tx, _rx) = crossbeam_channel::unbounded();
        let a = Arc::new(Count(AtomicU32::new(0), tx));
        assert!(!t.schedule(Instant::now(), Arc::downgrade(&a) as Weak<dyn Due>));
    }

    #[test]
    fn dropping_the_timer_stops_its_thread() {
        let (t, _close) = timer();
        let (tx, _rx) = crossbeam_channel::unbounded();
        let a = Arc::new(Count(AtomicU32::new(0), tx));
        assert!(t.schedule(
            Instant::now() + Duration::from_secs(3600),
            Arc::downgrade(&a) as Weak<dyn Due>
        ));
        let start = Instant::now();
        drop(t); // joins the thread: returns only once it ended
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
