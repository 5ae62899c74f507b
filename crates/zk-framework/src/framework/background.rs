//! Background cleanup: guaranteed deletes and the find-and-delete of protected
//! nodes whose create failed. Tasks are retried with backoff until they succeed
//! or the client is closed; NoNode counts as success.
//!
//! The worker thread exists only while there is work: the first task starts
//! it, and it ends once the queue has been empty for [`IDLE`] (a client that
//! never needs a cleanup never runs one).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::client::{Client, ReadOp, ReadResult};
use crate::Error;

/// What the worker needs of the client it works for (the managed client's
/// shared state): held weakly, so that the worker does not keep it alive.
pub(super) trait Owner: Send + Sync {
    /// The client's current handle.
    fn client(&self) -> Arc<Client>;
}

#[derive(Debug, Clone)]
enum Task {
    /// Delete a server path.
    Delete { path: String, version: Option<i32> },
    /// List `parent` and delete the child whose name starts with
    /// `_c_<id>-` (a protected create that may have succeeded unseen).
    FindAndDelete { parent: String, prefix: String },
}

struct Item {
    task: Task,
    due: Instant,
    attempts: u32,
}

/// How long the worker thread waits for more work before it ends.
const IDLE: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    /// Whether a worker thread is running (it clears this under the lock as
    /// it ends, so a task pushed later starts a new one).
    running: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    cv: Condvar,
    stopped: AtomicBool,
    pending: AtomicUsize,
}

pub(super) struct Background {
    shared: Arc<Shared>,
    /// The client it works for (set once built).
    owner: Mutex<Option<Weak<dyn Owner>>>,
}

impl Background {
    pub(super) fn new() -> Self {
        Background {
            shared: Arc::new(Shared::default()),
            owner: Mutex::new(None),
        }
    }

    /// Tells the queue which client it works for; no thread starts yet.
    pub(super) fn attach(&self, owner: Weak<impl Owner + 'static>) {
        *self.owner.lock() = Some(owner);
    }

    fn push(&self, task: Task) {
        if self.shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        self.shared.pending.fetch_add(1, Ordering::SeqCst);
        let mut q = self.shared.queue.lock();
        q.items.push_back(Item {
            task,
            due: Instant::now(),
            attempts: 0,
        });
        if q.running {
            self.shared.cv.notify_all();
            return;
        }
        let shared = self.shared.clone();
        let owner = self.owner.lock().clone();
        let spawned = std::thread::Builder::new()
            .name("zk-framework-background".into())
            .spawn(move || worker(shared, owner));
        match spawned {
            Ok(_) => q.running = true,
            // The next task tries again.
            Err(e) => log::error!("cannot start the background cleanup thread: {e}"),
        }
    }

    pub(super) fn delete(&self, path: String, version: Option<i32>) {
        log::debug!("background delete of {path} queued");
        self.push(Task::Delete { path, version });
    }

    pub(super) fn find_and_delete(&self, parent: String, prefix: String) {
        log::debug!("background find-and-delete of {parent}/{prefix}* queued");
        self.push(Task::FindAndDelete { parent, prefix });
    }

    pub(super) fn pending(&self) -> usize {
        self.shared.pending.load(Ordering::SeqCst)
    }

    pub(super) fn stop(&self) {
        // Under the queue's lock, so that the worker cannot miss it between
        // its look at the flag and its wait.
        let _q = self.shared.queue.lock();
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.cv.notify_all();
    }
}

/// `parent`'s children, listed after a `sync` on the same connection.
fn synced_children(client: &Client, parent: &str) -> Result<Vec<String>, Error> {
    match client.sync_then_read(parent, &[ReadOp::get_children(parent)])?.pop() {
        Some(ReadResult::Children(Some((kids, _)))) => Ok(kids),
        Some(ReadResult::Error(e)) => Err(e),
        _ => Err(Error::NoNode { path: parent.into() }),
    }
}

fn backoff(attempts: u32) -> Duration {
    Duration::from_millis(100u64.saturating_mul(1 << attempts.min(6))).min(Duration::from_secs(5))
}

fn worker(shared: Arc<Shared>, owner: Option<Weak<dyn Owner>>) {
    let mut idle_since = Instant::now();
    loop {
        let item = {
            let mut q = shared.queue.lock();
            loop {
                let now = Instant::now();
                if shared.stopped.load(Ordering::SeqCst)
                    || (q.items.is_empty() && now >= idle_since + IDLE)
                    || owner.as_ref().map_or(true, |o| o.strong_count() == 0)
                {
                    q.running = false;
                    return;
                }
                if let Some(i) = q.items.iter().position(|it| it.due <= now) {
                    break q.items.remove(i).expect("index is in range");
                }
                // Until the next task is due (or the idle time ends); a new
                // task, a stop and the owner's end wake it sooner.
                let next = q.items.iter().map(|it| it.due).min().unwrap_or(idle_since + IDLE);
                shared.cv.wait_until(&mut q, next);
            }
        };
        let Some(owner) = owner.as_ref().and_then(Weak::upgrade) else {
            shared.queue.lock().running = false;
            return;
        };
        let client = owner.client();
        let result = if !client.state().is_connected() {
            Err(Error::ConnectionLoss)
        } else {
            match &item.task {
                Task::Delete { path, version } => match client.delete(path, *version) {
                    Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
                    Err(e) => Err(e),
                },
                // Listed after a sync: a server that lags the create (a
                // follower the client reconnected to) would hide the node.
                Task::FindAndDelete { parent, prefix } => match synced_children(&client, parent) {
                    Ok(kids) => {
                        let mut res = Ok(());
                        for k in kids.iter().filter(|k| k.starts_with(prefix.as_str())) {
                            let p = crate::proto::path::join(parent, k);
                            match client.delete(&p, None) {
                                Ok(()) | Err(Error::NoNode { .. }) => log::debug!("background cleanup deleted {p}"),
                                Err(e) => res = Err(e),
                            }
                        }
                        res
                    }
                    Err(Error::NoNode { .. }) => Ok(()),
                    Err(e) => Err(e),
                },
            }
        };
        drop(owner);
        match result {
            Ok(()) => {
                shared.pending.fetch_sub(1, Ordering::SeqCst);
            }
            Err(e) if e.is_retryable() || matches!(e, Error::Closed) => {
                let attempts = item.attempts + 1;
                log::debug!("background task {:?} failed ({e}); retry {attempts}", item.task);
                shared.queue.lock().items.push_back(Item {
                    task: item.task,
                    due: Instant::now() + backoff(attempts),
                    attempts,
                });
            }
            Err(e) => {
                log::warn!("background task {:?} failed for good: {e}", item.task);
                shared.pending.fetch_sub(1, Ordering::SeqCst);
            }
        }
        idle_since = Instant::now();
    }
}
