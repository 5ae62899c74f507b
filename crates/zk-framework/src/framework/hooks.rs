//! The close hooks of a client ([`CloseHook`]): signals run by the thread
//! that closes it.

use std::fmt;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::error::Result;

/// A close hook's signal.
pub(super) type Signal = Box<dyn FnOnce() + Send>;

/// The close hooks of one client, by id.
#[derive(Default)]
pub(super) struct CloseHooks {
    next: u64,
    /// `None` once the client closed: a hook added then runs at once.
    hooks: Option<Vec<(u64, Signal)>>,
}

impl CloseHooks {
    pub(super) fn new() -> Arc<Mutex<CloseHooks>> {
        Arc::new(Mutex::new(CloseHooks {
            next: 0,
            hooks: Some(Vec::new()),
        }))
    }

    /// Adds `f`; `Err(f)` when the client has closed (the caller runs it).
    pub(super) fn add(this: &Arc<Mutex<CloseHooks>>, f: Signal) -> Result<CloseHook, Signal> {
        let mut h = this.lock();
        h.next += 1;
        let id = h.next;
        match h.hooks.as_mut() {
            Some(list) => {
                list.push((id, f));
                Ok(CloseHook {
                    hooks: Arc::downgrade(this),
                    id,
                })
            }
            None => Err(f),
        }
    }

    /// Takes every hook, for the closing thread to run outside the lock;
    /// later ones run at once.
    pub(super) fn take(this: &Mutex<CloseHooks>) -> Vec<Signal> {
        this.lock()
            .hooks
            .take()
            .unwrap_or_default()
            .into_iter()
            .map(|(_, f)| f)
            .collect()
    }
}

/// A signal registered with [`Recipe::on_close`]: dropping it removes the
/// signal unrun (so a recipe registers per piece of work and leaves nothing
/// behind).
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").build()?;
/// let ran = Arc::new(AtomicBool::new(false));
/// let flag = ran.clone();
/// let removed = c.recipe().on_close(move || flag.store(true, Ordering::SeqCst));
/// drop(removed);
/// let (tx, rx) = crossbeam_channel::bounded::<()>(0);
/// let hook = c.recipe().on_close(move || drop(tx));
/// c.close();
/// assert!(rx.recv().is_err()); // the kept hook ran: the sender is gone
/// assert!(!ran.load(Ordering::SeqCst)); // the dropped one was removed unrun
/// drop(hook);
/// # Ok::<(), zk_framework::Error>(())
/// ```
///
/// [`Recipe::on_close`]: crate::recipe::Recipe::on_close
#[must_use = "dropping the hook removes it"]
pub struct CloseHook {
    hooks: Weak<Mutex<CloseHooks>>,
    id: u64,
}

impl CloseHook {
    /// A hook that was never registered (or already ran).
    pub(super) fn inert() -> CloseHook {
        CloseHook {
            hooks: Weak::new(),
            id: 0,
        }
    }
}

impl fmt::Debug for CloseHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloseHook").field("id", &self.id).finish()
    }
}

impl Drop for CloseHook {
    fn drop(&mut self) {
        if let Some(hooks) = self.hooks.upgrade() {
            let removed = {
                let mut h = hooks.lock();
                let id = self.id;
                h.hooks.as_mut().and_then(|list| {
                    let i = list.iter().position(|(x, _)| *x == id)?;
                    Some(list.swap_remove(i))
                })
            };
            // Dropped outside the lock (the closure may own anything).
            drop(removed);
        }
    }
}
