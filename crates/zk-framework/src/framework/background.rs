//! Background cleanup: guaranteed deletes and the find-and-delete of protected
//! nodes whose create failed. Tasks are retried with backoff until they succeed
//! or the client is closed; NoNode counts as success.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::Inner;
use crate::Error;

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

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<Item>>,
    cv: Condvar,
    stopped: AtomicBool,
    pending: AtomicUsize,
}

pub(super) struct Background {
    shared: Arc<Shared>,
}

impl Background {
    pub(super) fn new() -> Self {
        Background {
            shared: Arc::new(Shared::default()),
        }
    }

    pub(super) fn start(&self, inner: Weak<Inner>) {
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("zk-framework-background".into())
            .spawn(move || worker(shared, inner));
        if let Err(e) = spawned {
            log::error!("cannot start the background cleanup thread: {e}");
        }
    }

    fn push(&self, task: Task) {
        if self.shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        self.shared.pending.fetch_add(1, Ordering::SeqCst);
        self.shared.queue.lock().push_back(Item {
            task,
            due: Instant::now(),
            attempts: 0,
        });
        self.shared.cv.notify_all();
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
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.cv.notify_all();
    }
}

fn backoff(attempts: u32) -> Duration {
    Duration::from_millis(100u64.saturating_mul(1 << attempts.min(6))).min(Duration::from_secs(5))
}

fn worker(shared: Arc<Shared>, inner: Weak<Inner>) {
    loop {
        let item = {
            let mut q = shared.queue.lock();
            loop {
                if shared.stopped.load(Ordering::SeqCst) {
                    return;
                }
                let now = Instant::now();
                if let Some(i) = q.iter().position(|it| it.due <= now) {
                    break q.remove(i).expect("index is in range");
                }
                let next = q.iter().map(|it| it.due).min();
                let wait = next.map_or(Duration::from_millis(200), |d| d.saturating_duration_since(now));
                shared.cv.wait_for(&mut q, wait.min(Duration::from_millis(200)));
            }
        };
        let Some(inner) = inner.upgrade() else { return };
        let (client, _) = inner.current();
        let result = if !client.state().is_connected() {
            Err(Error::ConnectionLoss)
        } else {
            match &item.task {
                Task::Delete { path, version } => match client.delete(path, *version) {
                    Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
                    Err(e) => Err(e),
                },
                Task::FindAndDelete { parent, prefix } => match client.get_children(parent) {
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
        drop(inner);
        match result {
            Ok(()) => {
                shared.pending.fetch_sub(1, Ordering::SeqCst);
            }
            Err(e) if e.is_retryable() || matches!(e, Error::Closed) => {
                let attempts = item.attempts + 1;
                log::debug!("background task {:?} failed ({e}); retry {attempts}", item.task);
                shared.queue.lock().push_back(Item {
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
    }
}
