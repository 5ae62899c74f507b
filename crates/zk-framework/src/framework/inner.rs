//! The state every part of a managed client shares: the current handle and
//! its generation, the connection-state machine, the listeners, and the
//! background threads. The handle ([`super::CuratorFramework`]), the session
//! monitor, the dispatch thread and the background deleter each hold it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use parking_lot::{Condvar, Mutex};
use zk_proto::config::EnsembleConfig;

use super::acl::AclProvider;
use super::background::{self, Background};
use super::dispatch::{self, snapshot, Dispatch, Listeners, StateListener};
use super::hooks::{CloseHook, CloseHooks};
use crate::client::{Client, ClientConfig};
use crate::error::{Error, Result};
use crate::retry::RetryPolicy;
use crate::state::{ConnectionState, StateMachine};

pub(super) struct Handle {
    pub(super) client: Arc<Client>,
    pub(super) generation: u64,
}

#[derive(Default)]
pub(super) struct ConnInner {
    pub(super) machine: StateMachine,
    pub(super) suspended_since: Option<Instant>,
    pub(super) last_connected_generation: u64,
    pub(super) negotiated_timeout: Option<Duration>,
}

pub(crate) struct Inner {
    /// The connect string new sessions use (its server list changes with
    /// `update_server_list`; its chroot never does).
    pub(super) connect_string: Mutex<String>,
    pub(super) client_config: ClientConfig,
    pub(super) connection_timeout: Duration,
    pub(super) retry_policy: Arc<dyn RetryPolicy>,
    pub(super) namespace: Option<String>,
    pub(super) default_data: Vec<u8>,
    pub(super) container_parents: bool,
    pub(super) acl_provider: Arc<dyn AclProvider>,
    pub(super) simulated_expiration_percent: u32,
    /// The safe horizon's margin (`None`: the default rule).
    pub(super) horizon_margin: Option<Duration>,
    /// The session health last told to the health listeners.
    pub(super) health: Mutex<crate::state::SessionHealth>,
    pub(super) health_listeners: Mutex<Vec<(u64, Arc<crate::state::HealthListener>)>>,
    pub(super) handle: Mutex<Handle>,
    pub(super) conn: Mutex<ConnInner>,
    pub(super) conn_cv: Condvar,
    pub(super) listeners: Listeners,
    pub(super) subscribers: Mutex<Vec<Sender<ConnectionState>>>,
    pub(super) next_listener_id: AtomicU64,
    pub(super) dispatch: Dispatch,
    pub(super) closed: AtomicBool,
    pub(super) namespace_ready: AtomicBool,
    pub(super) background: Background,
    /// The client's one executor (see [`super::executor`]).
    pub(crate) executor: super::executor::Executor,
    pub(super) threads: Mutex<Vec<JoinHandle<()>>>,
    pub(super) known_parents: Arc<KnownParents>,
    /// What layers above keep per client (see `Recipe::extension`), by
    /// type.
    pub(super) extensions: Mutex<Extensions>,
    /// Dropped at close, which disconnects every `close_signal()` receiver.
    pub(super) close_tx: Mutex<Option<Sender<()>>>,
    pub(super) close_rx: crossbeam_channel::Receiver<()>,
    /// Run by `close()` (see `Recipe::on_close`).
    pub(super) close_hooks: Arc<Mutex<CloseHooks>>,
    /// The ensemble tracker's state (see `framework::ensemble`); unused when it is off.
    pub(super) ensemble: Mutex<Tracked>,
    /// Wakes the ensemble tracker (a connection, a change of the config node).
    pub(super) ensemble_wake: Sender<()>,
}

/// What the tracker knows: the last config applied, and the session whose
/// watch on the config node is set (one watch per session, not one per
/// read).
#[derive(Debug, Default)]
pub(crate) struct Tracked {
    pub(crate) applied: Option<EnsembleConfig>,
    pub(crate) watching: Option<i64>,
}

/// Values kept for layers above, one per type.
pub(super) type Extensions = std::collections::HashMap<std::any::TypeId, Arc<dyn std::any::Any + Send + Sync>>;

/// Parents (server paths) that a create under them found lately: a lock's
/// create under a parent not in it makes the parent in the same round trip
/// (one wasted `NodeExists` if it was there already) instead of failing with
/// `NoNode` and making it afterwards (two more round trips). Bounded: it
/// starts over when full. A stale entry (a container parent the server
/// reaped) costs what a miss cost before: `NoNode`, then the parents.
#[derive(Default)]
pub(crate) struct KnownParents {
    set: Mutex<std::collections::HashSet<String>>,
}

/// How many parents [`KnownParents`] remembers before it starts over.
const KNOWN_PARENTS_MAX: usize = 8192;

impl KnownParents {
    pub(crate) fn contains(&self, parent: &str) -> bool {
        self.set.lock().contains(parent)
    }

    pub(crate) fn insert(&self, parent: &str) {
        let mut set = self.set.lock();
        if set.contains(parent) {
            return;
        }
        if set.len() >= KNOWN_PARENTS_MAX {
            set.clear();
        }
        set.insert(parent.to_string());
    }

    pub(crate) fn remove(&self, parent: &str) {
        self.set.lock().remove(parent);
    }
}

impl Drop for Inner {
    /// The last handle went without `close()`: the executor's thread, whose
    /// jobs hold only weak references, is woken to end now.
    fn drop(&mut self) {
        self.executor.stop();
    }
}

impl Inner {
    pub(super) fn current(&self) -> (Arc<Client>, u64) {
        let h = self.handle.lock();
        (h.client.clone(), h.generation)
    }

    /// The session generation (see `Recipe::session_generation`).
    pub(crate) fn generation(&self) -> u64 {
        self.handle.lock().generation
    }

    /// The connection epoch (see `Recipe::connection_epoch`).
    pub(crate) fn connection_epoch(&self) -> u64 {
        // Read under the handle's lock, without taking a reference: a lock's
        // `check()` asks for it every time.
        let h = self.handle.lock();
        (h.generation << 40) | (h.client.connection_epoch() & ((1 << 40) - 1))
    }

    /// Sleeps `d`, ending at once with `Closed` when the client closes (see
    /// `Recipe::pause`).
    pub(crate) fn pause(&self, d: Duration) -> Result<()> {
        let timer = Instant::now()
            .checked_add(d)
            .map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        crossbeam_channel::select! {
            recv(self.close_rx) -> _ => Err(Error::Closed),
            recv(timer) -> _ => {
                if self.closed.load(Ordering::SeqCst) { Err(Error::Closed) } else { Ok(()) }
            }
        }
    }

    /// A receiver that disconnects at the close (see `Recipe::close_signal`).
    pub(crate) fn close_signal(&self) -> crossbeam_channel::Receiver<()> {
        self.close_rx.clone()
    }

    /// Runs `signal` at the close, or at once when closed (see
    /// `Recipe::on_close`).
    pub(crate) fn on_close(&self, signal: impl FnOnce() + Send + 'static) -> CloseHook {
        match CloseHooks::add(&self.close_hooks, Box::new(signal)) {
            Ok(hook) => hook,
            Err(run_now) => {
                run_now();
                CloseHook::inert()
            }
        }
    }

    /// The value of type `T` kept for this client (see `Recipe::extension`).
    pub(crate) fn extension<T: std::any::Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let key = std::any::TypeId::of::<T>();
        let found = |map: &Extensions| map.get(&key).cloned().and_then(|v| v.downcast::<T>().ok());
        if let Some(v) = found(&self.extensions.lock()) {
            return v;
        }
        let made = Arc::new(init());
        let mut map = self.extensions.lock();
        match found(&map) {
            Some(v) => v,
            None => {
                map.insert(key, made.clone());
                made
            }
        }
    }

    /// Paths whose deletion is still pending in the background.
    pub(crate) fn pending_background_deletes(&self) -> usize {
        self.background.pending()
    }
}

impl dispatch::Owner for Inner {
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn listeners(&self) -> Vec<Arc<StateListener>> {
        snapshot(&self.listeners)
    }

    fn remove_listener(&self, id: u64) {
        self.listeners.lock().retain(|(i, _)| *i != id);
        self.health_listeners.lock().retain(|(i, _)| *i != id);
    }
}

impl background::Owner for Inner {
    fn client(&self) -> Arc<Client> {
        self.current().0
    }
}
