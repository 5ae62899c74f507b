//! Curator's cooperative revocation: a holder made revocable is told when another
//! process writes `__REVOKE__` into its lock node.

use std::sync::Arc;

use parking_lot::Mutex;
use zk_framework::CuratorFramework;

use crate::core::{Backoff, Worker};
use crate::error::Result;
use crate::locks::internals::LockInternals;

/// The bytes Curator writes to ask a holder to release.
pub const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

pub(crate) type RevocationListener = Arc<dyn Fn() + Send + Sync>;

/// Per-lock revocation state: armed before an acquire, watching while held.
#[derive(Default)]
pub(crate) struct Revocations {
    armed: Mutex<Option<RevocationListener>>,
    /// The thread that watches the held node (one per revocable hold).
    watching: Mutex<Option<Worker>>,
}

impl Revocations {
    pub(crate) fn arm(&self, listener: RevocationListener) {
        *self.armed.lock() = Some(listener);
    }

    pub(crate) fn is_armed(&self) -> bool {
        self.armed.lock().is_some()
    }

    /// Watches the held `node` on a thread of the hold's (the listener is
    /// user code, and a watcher only signals), until the release.
    pub(crate) fn on_acquired(&self, internals: &LockInternals, node: &str) {
        let Some(listener) = self.armed.lock().clone() else {
            return;
        };
        let client = internals.client().clone();
        let n = node.to_string();
        match Worker::spawn("InterProcessMutex", node, "zk-lock-revoke", move |cancel| {
            watch(&client, &n, &listener, &cancel)
        }) {
            Ok(w) => {
                if let Some(old) = self.watching.lock().replace(w) {
                    old.cancel();
                }
            }
            Err(e) => log::warn!("the revocation of {node} is not watched: {e}"),
        }
    }

    /// The hold ended: its watching thread ends (without waiting for it: a
    /// release does not wait on a listener).
    pub(crate) fn on_released(&self) {
        *self.armed.lock() = None;
        if let Some(w) = self.watching.lock().take() {
            w.cancel();
        }
    }
}

/// Reads `node` with a data watch; calls the listener when it reads
/// `__REVOKE__`; waits for the watch (or the cancel, or the client's close)
/// and reads again.
fn watch(
    client: &CuratorFramework,
    node: &str,
    listener: &RevocationListener,
    cancel: &crossbeam_channel::Receiver<()>,
) {
    let closed = client.recipe().close_signal();
    let mut backoff = Backoff::new();
    loop {
        let (tx, fired) = crossbeam_channel::bounded::<zk_framework::WatchedEvent>(1);
        let pause = match client.get_data_w(node, tx) {
            Ok((data, _)) => {
                backoff.reset();
                if data == REVOKE_MESSAGE {
                    log::info!("revocation requested for {node}");
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener())).is_err() {
                        log::error!("a revocation listener panicked");
                    }
                }
                None
            }
            Err(zk_framework::Error::NoNode { .. }) => return,
            Err(e) => {
                log::debug!("revocation watch on {node}: {e}; again shortly");
                Some(backoff.next())
            }
        };
        let timer = pause.map_or_else(crossbeam_channel::never, crossbeam_channel::after);
        crossbeam_channel::select! {
            recv(cancel) -> _ => return,
            recv(closed) -> _ => return,
            recv(fired) -> _ => {}
            recv(timer) -> _ => {}
        }
    }
}

/// Asks the holder of a lock node to release it (Curator's
/// `Revoker.attemptRevoke`): writes `__REVOKE__` into the node. A missing node is
/// not an error.
#[derive(Debug, Clone, Copy)]
pub struct Revoker;

impl Revoker {
    /// Writes the revoke message to `node_path`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::ZooKeeper`] for failures other than NoNode.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// for p in m.participant_nodes()? {
    ///     zk_recipes::Revoker::attempt_revoke(&client, &p.node)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn attempt_revoke(client: &CuratorFramework, node_path: &str) -> Result<()> {
        match client.set_data(node_path, REVOKE_MESSAGE.to_vec(), None) {
            Ok(_) | Err(zk_framework::Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
