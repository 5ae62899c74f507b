//! Background cleanup: guaranteed deletes and the find-and-delete of protected
//! nodes whose create failed, as jobs on the client's executor
//! ([`super::executor`]). Each attempt sends its requests without waiting
//! (a detached delete; a detached listing after a `sync`), and its reply
//! queues what comes next: done, the deletes a listing found, or the same
//! attempt again after a backoff (100 ms doubling to 5 s) when it failed in a
//! way a retry may mend (not connected, a lost reply). They go on until they
//! succeed, fail for good, or the client closes; NoNode counts as success.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::executor::Executor;
use crate::client::{Client, ReadOp, ReadResult};
use crate::error::Error;

/// What the cleanup needs of the client it works for (the managed client's
/// shared state): held weakly, so that queued work does not keep it alive.
pub(super) trait Owner: Send + Sync {
    /// The client's current handle.
    fn client(&self) -> Arc<Client>;
}

#[derive(Debug, Clone)]
enum Task {
    /// Delete a server path.
    Delete { path: String, version: Option<i32> },
    /// List `parent` (after a sync) and delete the children whose names
    /// start with `_c_<id>-` (a protected create that may have succeeded
    /// unseen).
    FindAndDelete { parent: String, prefix: String },
}

struct Shared {
    executor: Executor,
    owner: Mutex<Option<Weak<dyn Owner>>>,
    /// Tasks not finished yet.
    pending: AtomicUsize,
}

pub(super) struct Background {
    shared: Arc<Shared>,
}

impl Background {
    pub(super) fn new(executor: Executor) -> Self {
        Background {
            shared: Arc::new(Shared {
                executor,
                owner: Mutex::new(None),
                pending: AtomicUsize::new(0),
            }),
        }
    }

    /// Tells the cleanup which client it works for.
    pub(super) fn attach(&self, owner: Weak<impl Owner + 'static>) {
        *self.shared.owner.lock() = Some(owner);
    }

    pub(super) fn delete(&self, path: String, version: Option<i32>) {
        log::debug!("background delete of {path} queued");
        self.shared.pending.fetch_add(1, Ordering::SeqCst);
        attempt(&self.shared, Task::Delete { path, version }, 0, Instant::now());
    }

    pub(super) fn find_and_delete(&self, parent: String, prefix: String) {
        log::debug!("background find-and-delete of {parent}/{prefix}* queued");
        self.shared.pending.fetch_add(1, Ordering::SeqCst);
        attempt(&self.shared, Task::FindAndDelete { parent, prefix }, 0, Instant::now());
    }

    pub(super) fn pending(&self) -> usize {
        self.shared.pending.load(Ordering::SeqCst)
    }
}

/// The pause before the `attempts`-th retry.
fn backoff(attempts: u32) -> Duration {
    Duration::from_millis(100u64.saturating_mul(1 << attempts.min(6))).min(Duration::from_secs(5))
}

/// Whether a task that failed with `e` is tried again.
fn retried(e: &Error) -> bool {
    e.is_retryable() || e.may_have_applied()
}

/// Queues one attempt of `task` at `at`; a task the executor refuses (the
/// client closed) is over.
fn attempt(shared: &Arc<Shared>, task: Task, attempts: u32, at: Instant) {
    let weak = Arc::downgrade(shared);
    let job = Box::new(move || {
        if let Some(shared) = weak.upgrade() {
            run(&shared, task, attempts);
        }
    });
    if shared.executor.schedule(at, job).is_err() {
        // Closed: nothing more is done.
        shared.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The attempt after a failure: again after a backoff, or over.
fn failed(shared: &Arc<Shared>, task: Task, attempts: u32, e: &Error) {
    if retried(e) {
        let attempts = attempts + 1;
        log::debug!("background task {task:?} failed ({e}); retry {attempts}");
        attempt(shared, task, attempts, Instant::now() + backoff(attempts));
    } else {
        log::warn!("background task {task:?} failed for good: {e}");
        shared.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

fn done(shared: &Shared) {
    shared.pending.fetch_sub(1, Ordering::SeqCst);
}

/// One attempt, on the executor's thread: sends without waiting; the reply
/// (on the client's I/O thread) queues what follows.
fn run(shared: &Arc<Shared>, task: Task, attempts: u32) {
    let owner = shared.owner.lock().clone().and_then(|o| o.upgrade());
    let Some(owner) = owner else {
        // The client is gone.
        done(shared);
        return;
    };
    let client = owner.client();
    drop(owner);
    let sent = match &task {
        Task::Delete { path, version } => {
            let (sh, t) = (shared.clone(), task.clone());
            client.delete_detached(path, *version, move |r| match r {
                Ok(()) | Err(Error::NoNode { .. }) => {
                    if let Task::Delete { path, .. } = &t {
                        log::debug!("background cleanup deleted {path}");
                    }
                    done(&sh);
                }
                Err(e) => failed(&sh, t, attempts, &e),
            })
        }
        // Listed after a sync: a server that lags the create (a follower
        // the client reconnected to) would hide the node.
        Task::FindAndDelete { parent, prefix } => {
            let (sh, t) = (shared.clone(), task.clone());
            let list = [ReadOp::get_children(parent.clone())];
            let (sync, parent, prefix) = (parent.clone(), parent.clone(), prefix.clone());
            client.sync_then_read_detached(&sync, &list, move |r| {
                let kids = match r.map(|mut a| a.pop()) {
                    Ok(Some(ReadResult::Children(Some((kids, _))))) => kids,
                    Ok(Some(ReadResult::Error(e))) | Err(e) => return failed(&sh, t, attempts, &e),
                    // The parent is gone, and our node with it.
                    Ok(_) => Vec::new(),
                };
                for k in kids.iter().filter(|k| k.starts_with(prefix.as_str())) {
                    let path = zk_proto::path::join(&parent, k);
                    sh.pending.fetch_add(1, Ordering::SeqCst);
                    attempt(&sh, Task::Delete { path, version: None }, 0, Instant::now());
                }
                done(&sh);
            })
        }
    };
    if let Err(e) = sent {
        failed(shared, task, attempts, &e);
    }
}
