//! Curator's cooperative revocation: a holder made revocable is told when another
//! process writes `__REVOKE__` into its lock node.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use zk_framework::CuratorFramework;

use crate::error::Result;
use crate::internals::LockInternals;

/// The bytes Curator writes to ask a holder to release.
pub const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

pub(crate) type RevocationListener = Arc<dyn Fn() + Send + Sync>;

/// Per-lock revocation state: armed before an acquire, watching while held.
#[derive(Default)]
pub(crate) struct Revocations {
    armed: Mutex<Option<RevocationListener>>,
    /// Increases on every release, so that a late watch event of an earlier hold
    /// is ignored.
    epoch: Arc<AtomicU64>,
}

impl Revocations {
    pub(crate) fn arm(&self, listener: RevocationListener) {
        *self.armed.lock() = Some(listener);
    }

    pub(crate) fn is_armed(&self) -> bool {
        self.armed.lock().is_some()
    }

    pub(crate) fn on_acquired(&self, internals: &LockInternals, node: &str) {
        let Some(listener) = self.armed.lock().clone() else {
            return;
        };
        let epoch = self.epoch.load(Ordering::SeqCst);
        watch(
            internals.client().clone(),
            node.to_string(),
            listener,
            self.epoch.clone(),
            epoch,
        );
    }

    pub(crate) fn on_released(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        *self.armed.lock() = None;
    }
}

/// Watches `node`'s data; on a change, re-reads it off the event thread and
/// calls the listener if it reads `__REVOKE__`, then watches again.
fn watch(client: CuratorFramework, node: String, listener: RevocationListener, epoch: Arc<AtomicU64>, mine: u64) {
    let (c, n, l, e) = (client.clone(), node.clone(), listener.clone(), epoch.clone());
    let watcher = move |ev: zk_framework::WatchedEvent| {
        if ev.event_type != zk_framework::proto::EventType::NodeDataChanged {
            return;
        }
        // Watchers only signal: the read happens on a helper thread.
        let _ = std::thread::Builder::new()
            .name("zk-lock-revoke".into())
            .spawn(move || {
                if e.load(Ordering::SeqCst) == mine {
                    watch(c, n, l, e, mine);
                }
            });
    };
    match client.get_data_w(&node, watcher) {
        Ok((data, _)) if data == REVOKE_MESSAGE && epoch.load(Ordering::SeqCst) == mine => {
            log::info!("revocation requested for {node}");
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener())).is_err() {
                log::error!("a revocation listener panicked");
            }
        }
        Ok(_) => {}
        Err(e) => log::debug!("revocation watch on {node} ended: {e}"),
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
