//! One client's executor: delayed and background work that only signals or
//! sends without waiting (a lock holding's own-node watch sent a little
//! after its grant, a proof due after a reconnect, the background deletes'
//! attempts and retries), run at its time in deadline order on one thread.
//!
//! The thread lives while there is work: the first job starts it, it ends
//! [`LINGER`] after the last one, and at once when the client closes (the
//! jobs still queued are dropped then). A client at rest runs none. It waits
//! on a condition variable until the earliest job is due or an earlier one
//! is queued, never polls. Jobs due together run in the order of their
//! times, and jobs of one time in the order they were queued. Under load it
//! wakes at most every [`TICK`]: a job may run up to that much after its
//! time, together with the others due by then (a busy lock's own-node
//! watches go out in batches, not one wake-up each).
//!
//! The state listeners' dispatch stays apart, on its own thread: a listener
//! is user code that may block and call the client, and a job behind it
//! would wait as long (a holding's loss would be told late).

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A job: it must only signal or send without waiting.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// How long the thread waits for more work after the queue ran empty.
pub(crate) const LINGER: Duration = Duration::from_secs(1);

/// The thread runs at most this often, however many jobs come due.
pub(crate) const TICK: Duration = Duration::from_millis(5);

struct Queued {
    at: Instant,
    seq: u64,
    job: Job,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Queued {}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Queued {
    /// The earliest first out of the (max-)heap: reversed.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
struct Queue {
    jobs: BinaryHeap<Queued>,
    next_seq: u64,
    /// Whether a thread serves the queue (it clears this under the lock as
    /// it ends, so that a job queued later starts a new one).
    running: bool,
    stopped: bool,
    /// Threads started so far (tests).
    started: u64,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    cv: Condvar,
}

/// One client's executor (see the module doc). Cheap to clone: clones share
/// the queue.
#[derive(Clone, Default)]
pub(crate) struct Executor {
    shared: Arc<Shared>,
}

impl Executor {
    pub(crate) fn new() -> Executor {
        Executor::default()
    }

    /// Runs `job` at `at` (at once when due). `Err(job)` when the executor
    /// is stopped (the client closed) or no thread could be had: nothing was
    /// queued, and the caller has its job back.
    pub(crate) fn schedule(&self, at: Instant, job: Job) -> Result<(), Job> {
        let mut q = self.shared.queue.lock();
        if q.stopped {
            return Err(job);
        }
        let seq = q.next_seq;
        q.next_seq += 1;
        q.jobs.push(Queued { at, seq, job });
        if q.running {
            // Woken only when it is the new earliest: otherwise the thread's
            // wait already ends no later than this job's time.
            if q.jobs.peek().is_some_and(|j| j.seq == seq) {
                self.shared.cv.notify_one();
            }
            return Ok(());
        }
        let shared = self.shared.clone();
        match std::thread::Builder::new()
            .name("zk-executor".into())
            .spawn(move || run(&shared))
        {
            Ok(_) => {
                q.running = true;
                q.started += 1;
                Ok(())
            }
            Err(e) => {
                log::warn!("no executor thread ({e}): the job is given back");
                let mut kept: Vec<Queued> = std::mem::take(&mut q.jobs).into_vec();
                let i = kept.iter().position(|j| j.seq == seq).expect("just queued");
                let mine = kept.swap_remove(i);
                q.jobs = kept.into();
                Err(mine.job)
            }
        }
    }

    /// Drops every queued job and ends the thread; later jobs are refused.
    pub(crate) fn stop(&self) {
        let dropped = {
            let mut q = self.shared.queue.lock();
            q.stopped = true;
            self.shared.cv.notify_all();
            std::mem::take(&mut q.jobs)
        };
        // Outside the lock: a job may own anything.
        drop(dropped);
    }

    /// Jobs queued and not run yet.
    #[cfg(test)]
    fn queued(&self) -> usize {
        self.shared.queue.lock().jobs.len()
    }

    /// Whether a thread serves the queue now, and how many were started.
    #[cfg(test)]
    fn thread(&self) -> (bool, u64) {
        let q = self.shared.queue.lock();
        (q.running, q.started)
    }
}

fn run(shared: &Shared) {
    let mut idle_since = Instant::now();
    let mut last_run: Option<Instant> = None;
    loop {
        let ready = {
            let mut q = shared.queue.lock();
            loop {
                if q.stopped {
                    q.running = false;
                    return;
                }
                let now = Instant::now();
                let ticked = last_run.map_or(true, |l| now >= l + TICK);
                if ticked && q.jobs.peek().is_some_and(|j| j.at <= now) {
                    let mut ready = Vec::new();
                    while q.jobs.peek().is_some_and(|j| j.at <= now) {
                        ready.push(q.jobs.pop().expect("peeked").job);
                    }
                    break ready;
                }
                let until = match q.jobs.peek() {
                    Some(j) => last_run.map_or(j.at, |l| j.at.max(l + TICK)),
                    None if now >= idle_since + LINGER => {
                        q.running = false;
                        return;
                    }
                    None => idle_since + LINGER,
                };
                shared.cv.wait_until(&mut q, until);
            }
        };
        last_run = Some(Instant::now());
        for job in ready {
            job();
        }
        idle_since = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder() -> (Arc<Mutex<Vec<u32>>>, impl Fn(u32) -> Job) {
        let seen: Arc<Mutex<Vec<u32>>> = Arc::default();
        let s = seen.clone();
        (seen, move |n| {
            let s = s.clone();
            Box::new(move || s.lock().push(n)) as Job
        })
    }

    fn wait_for(what: impl Fn() -> bool) -> bool {
        zk_testing::wait_until(Duration::from_secs(10), what)
    }

    /// The timer this replaces was a FIFO: a job queued after a later one
    /// waited behind it. Mixed delays run in deadline order; jobs of one
    /// time in the order queued.
    #[test]
    fn mixed_delays_run_in_deadline_order_and_ties_in_queue_order() {
        let ex = Executor::new();
        let (seen, job) = recorder();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        ex.schedule(at(100), job(100)).ok().unwrap();
        ex.schedule(at(10), job(10)).ok().unwrap();
        ex.schedule(at(0), job(0)).ok().unwrap();
        ex.schedule(at(60), job(61)).ok().unwrap();
        ex.schedule(at(60), job(62)).ok().unwrap();
        ex.schedule(at(30), job(30)).ok().unwrap();
        assert!(wait_for(|| seen.lock().len() == 6));
        assert_eq!(*seen.lock(), [0, 10, 30, 61, 62, 100]);
        // Each ran no earlier than its time: the last one at 100 ms.
        assert!(t0.elapsed() >= Duration::from_millis(100));
    }

    /// An early job queued while the thread waits for a later one runs at
    /// its own time, not the later one's.
    #[test]
    fn an_earlier_job_wakes_a_thread_waiting_for_a_later_one() {
        let ex = Executor::new();
        let (seen, job) = recorder();
        let t0 = Instant::now();
        ex.schedule(t0 + Duration::from_secs(3600), job(1)).ok().unwrap();
        ex.schedule(t0 + Duration::from_millis(20), job(2)).ok().unwrap();
        assert!(wait_for(|| seen.lock().len() == 1));
        assert!(t0.elapsed() < Duration::from_secs(3600));
        assert_eq!(*seen.lock(), [2]);
        assert_eq!(ex.queued(), 1);
        ex.stop();
        assert_eq!(ex.queued(), 0, "dropped at the stop");
    }

    #[test]
    fn the_thread_lingers_then_ends_and_a_new_job_starts_another() {
        let ex = Executor::new();
        let (seen, job) = recorder();
        ex.schedule(Instant::now(), job(1)).ok().unwrap();
        assert!(wait_for(|| seen.lock().len() == 1));
        assert!(wait_for(|| !ex.thread().0), "idle past the linger: no thread");
        ex.schedule(Instant::now(), job(2)).ok().unwrap();
        assert!(wait_for(|| seen.lock().len() == 2));
        assert_eq!(ex.thread().1, 2, "a second thread for the new work");
    }

    #[test]
    fn a_stopped_executor_gives_the_job_back() {
        let ex = Executor::new();
        ex.stop();
        let (seen, job) = recorder();
        let back = ex.schedule(Instant::now(), job(7)).expect_err("refused");
        back();
        assert_eq!(*seen.lock(), [7]);
        assert!(wait_for(|| !ex.thread().0));
    }
}
