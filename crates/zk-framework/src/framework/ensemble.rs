//! Following the ensemble (opt-in, [`CuratorFrameworkBuilder::ensemble_tracker`]):
//! the client reads `/zookeeper/config` after every connection and whenever
//! it changes, and hands the servers it lists to
//! [`Client::update_server_list`], the way ZooKeeper's own procedure asks
//! (and Curator's `EnsembleTracker` skips):
//!
//! 1. `sync`, then read the config with a watch, on one connection (a
//!    follower that lags would hand out an older config; a read on another
//!    connection than its `sync` is read again);
//! 2. apply only a version newer than the last one applied (a stale server's
//!    older config is ignored, with a log line);
//! 3. take the members' client addresses: a wildcard (`0.0.0.0`, `::`)
//!    becomes the member's quorum host; an address that does not resolve is
//!    skipped with a logged reason; no usable address at all keeps the list
//!    (never an empty one);
//! 4. a read that fails (a timeout, a lost connection) is tried again after
//!    a pause (100 ms doubling to 5 s): the watch that woke the tracker is
//!    spent, so no change would be told otherwise;
//!    and the config is read every 10 s at the latest whatever the watch
//!    says (one `sync` and one read), so a change whose event was missed is
//!    applied within that;
//! 5. wait a random delay (up to [`CuratorFrameworkBuilder::ensemble_tracker_delay`],
//!    so that a config change does not move every client at the same
//!    moment), read again if the config changed meanwhile, then update: only
//!    as many clients move as balance the new list, and they keep their
//!    session. The chroot is kept.
//!
//! [`CuratorFrameworkBuilder::ensemble_tracker`]: super::CuratorFrameworkBuilder::ensemble_tracker
//! [`CuratorFrameworkBuilder::ensemble_tracker_delay`]: super::CuratorFrameworkBuilder::ensemble_tracker_delay
//! [`Client::update_server_list`]: crate::Client::update_server_list

use std::net::ToSocketAddrs;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use zk_proto::config::{EnsembleConfig, CONFIG_NODE};

use super::inner::Inner;
use crate::error::{Error, Result};
use crate::state::ConnectionState;

/// The connect-string hosts of `config`'s members, with the reasons the
/// unusable ones were skipped.
pub(crate) fn hosts_of(config: &EnsembleConfig) -> (Vec<String>, Vec<String>) {
    let mut hosts = Vec::new();
    let mut skipped = Vec::new();
    for m in config.members() {
        let Some(client) = &m.client else {
            skipped.push(format!("server.{} publishes no client address", m.id));
            continue;
        };
        let host = if client.is_wildcard() {
            match m.addresses.first() {
                Some(q) if !is_wildcard(&q.host) => q.host.clone(),
                _ => {
                    skipped.push(format!(
                        "server.{} listens on a wildcard address and names no quorum host",
                        m.id
                    ));
                    continue;
                }
            }
        } else {
            client.host.clone()
        };
        if client.port == 0 {
            skipped.push(format!("server.{} has client port 0", m.id));
            continue;
        }
        match (host.as_str(), client.port).to_socket_addrs().map(|a| a.count()) {
            Ok(n) if n > 0 => {}
            Ok(_) => {
                skipped.push(format!("server.{}: {host} has no address", m.id));
                continue;
            }
            Err(e) => {
                skipped.push(format!("server.{}: {host} does not resolve ({e})", m.id));
                continue;
            }
        }
        let entry = if host.contains(':') {
            format!("[{host}]:{}", client.port)
        } else {
            format!("{host}:{}", client.port)
        };
        if !hosts.contains(&entry) {
            hosts.push(entry);
        }
    }
    (hosts, skipped)
}

fn is_wildcard(host: &str) -> bool {
    matches!(host, "0.0.0.0" | "::" | "[::]" | "0:0:0:0:0:0:0:0")
}

/// The longest time between two reads of the config, watch or not.
const RECHECK: Duration = Duration::from_secs(10);
/// The first pause before a failed read is tried again.
const RETRY_FIRST: Duration = Duration::from_millis(100);
/// The longest pause between failed reads.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// A random delay in `[0, max)`.
fn jitter(max: Duration) -> Duration {
    use std::hash::BuildHasher;
    if max.is_zero() {
        return Duration::ZERO;
    }
    let r = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
    Duration::from_nanos(r % (max.as_nanos().min(u128::from(u64::MAX)) as u64))
}

/// The tracker's thread: waits for a reason to read the config (a
/// connection, a change of the node), reads it and applies it.
pub(crate) fn run(weak: Weak<Inner>, wake: Receiver<()>, close: Receiver<()>, max_delay: Duration) {
    // After a failed read no watch may be left on the config node (the one
    // that woke us has fired): read again after a pause, doubling from
    // 100 ms to 5 s, rather than wait for a change nobody would tell.
    let mut pause = RETRY_FIRST;
    loop {
        // A watch event that never arrives (none was seen lost in a run, but
        // a burst of changes once left a tracker behind in CI) is caught by a
        // read every RECHECK at the latest: one sync and one read.
        let recheck = crossbeam_channel::after(RECHECK);
        crossbeam_channel::select! {
            recv(close) -> _ => return,
            recv(wake) -> m => if m.is_err() { return },
            recv(recheck) -> _ => {},
        }
        // Read until a config is applied or judged not newer.
        loop {
            let Some(inner) = weak.upgrade() else { return };
            if inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            match follow_once(&inner) {
                Ok(None) => {
                    pause = RETRY_FIRST;
                    break;
                }
                Ok(Some(config)) => {
                    pause = RETRY_FIRST;
                    drop(inner);
                    // Let the clients of one change move at different moments;
                    // a newer change meanwhile is read instead.
                    let delay = jitter(max_delay);
                    let timer = crossbeam_channel::after(delay);
                    let newer = crossbeam_channel::select! {
                        recv(close) -> _ => return,
                        recv(wake) -> m => { if m.is_err() { return } true },
                        recv(timer) -> _ => false,
                    };
                    if newer {
                        continue;
                    }
                    let Some(inner) = weak.upgrade() else { return };
                    apply(&inner, config);
                    break;
                }
                Err(e) => {
                    drop(inner);
                    log::debug!("ensemble tracker: reading {CONFIG_NODE} failed ({e}); again in {pause:?}");
                    let timer = crossbeam_channel::after(pause);
                    pause = (pause * 2).min(RETRY_MAX);
                    crossbeam_channel::select! {
                        recv(close) -> _ => return,
                        recv(wake) -> m => if m.is_err() { return },
                        recv(timer) -> _ => {},
                    }
                }
            }
        }
    }
}

/// A config read, against the last one applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    /// Newer (or the first): to apply.
    Newer,
    /// The one applied.
    Same,
    /// Older: a server behind the others; ignored.
    Older,
}

/// Versions are zxids: only a greater one is newer.
fn judge(applied: Option<u64>, read: u64) -> Judged {
    match applied {
        None => Judged::Newer,
        Some(v) if read > v => Judged::Newer,
        Some(v) if read == v => Judged::Same,
        Some(_) => Judged::Older,
    }
}

/// Syncs and reads the config (setting the watch): `Some(config)` when it is
/// newer than the last one applied.
fn follow_once(inner: &Arc<Inner>) -> Result<Option<EnsembleConfig>> {
    let (client, _) = inner.current();
    let wake = inner.ensemble_wake.clone();
    // Up to three tries when the connection changes between the sync and the
    // read (the read must come from the server that synced).
    for _ in 0..3 {
        let epoch = client.connection_epoch();
        client.sync("/")?;
        let session = client.session_id();
        let watched = inner.ensemble.lock().watching == Some(session);
        let (config, _) = if watched {
            client.get_config()?
        } else {
            let w = wake.clone();
            let weak = Arc::downgrade(inner);
            // Noted before the read: the watch may fire as soon as it is set
            // (a change right after the read's reply), and its firing must
            // undo the note, never come before it (a stale note would have
            // the tracker read without a watch from then on, following only
            // at reconnections).
            inner.ensemble.lock().watching = Some(session);
            let read = client.get_config_w(move |_| {
                // Fired (a change, or the session's end): the next read sets
                // another watch.
                if let Some(inner) = weak.upgrade() {
                    inner.ensemble.lock().watching = None;
                }
                let _ = w.try_send(());
            });
            match read {
                Ok(read) => read,
                Err(e) => {
                    // No watch was set: the note goes (unless a firing
                    // already took it).
                    let mut tracked = inner.ensemble.lock();
                    if tracked.watching == Some(session) {
                        tracked.watching = None;
                    }
                    return Err(e);
                }
            }
        };
        if client.connection_epoch() != epoch {
            continue;
        }
        let last = inner.ensemble.lock().applied.as_ref().map(EnsembleConfig::version);
        return Ok(match judge(last, config.version()) {
            Judged::Newer => Some(config),
            Judged::Same => None,
            Judged::Older => {
                log::warn!(
                    "ensemble tracker: ignoring config version {:#x}, older than the one applied ({:#x}): a server behind the others?",
                    config.version(),
                    last.unwrap_or_default()
                );
                None
            }
        });
    }
    Err(Error::ConnectionLoss)
}

/// Hands `config`'s servers to the client, unless none is usable.
fn apply(inner: &Arc<Inner>, config: EnsembleConfig) {
    let (hosts, skipped) = hosts_of(&config);
    for why in &skipped {
        log::warn!("ensemble tracker: config {:#x}: skipping {why}", config.version());
    }
    let mut tracked = inner.ensemble.lock();
    if tracked
        .applied
        .as_ref()
        .is_some_and(|a| a.version() >= config.version())
    {
        return;
    }
    if hosts.is_empty() {
        log::warn!(
            "ensemble tracker: config {:#x} has no usable client address: keeping the server list",
            config.version()
        );
        crate::metrics::ensemble_config_applied(config.version());
        tracked.applied = Some(config);
        return;
    }
    let list = hosts.join(",");
    let fw = super::CuratorFramework {
        inner: inner.clone(),
        deadline: None,
    };
    match fw.update_server_list(&list) {
        Ok(moved) => log::info!(
            "ensemble tracker: config {:#x}: servers {list}{}",
            config.version(),
            if moved { " (moving)" } else { "" }
        ),
        Err(e) => log::warn!(
            "ensemble tracker: config {:#x}: cannot use {list}: {e}",
            config.version()
        ),
    }
    crate::metrics::ensemble_config_applied(config.version());
    tracked.applied = Some(config);
}

/// Starts the tracker of `inner` (its wake channel and thread).
pub(crate) fn start(inner: &Arc<Inner>, wake: Receiver<()>, max_delay: Duration) -> Result<()> {
    // Every connection is a reason to read the config again.
    let tx: Sender<()> = inner.ensemble_wake.clone();
    let fw = super::CuratorFramework {
        inner: inner.clone(),
        deadline: None,
    };
    fw.add_listener(move |s| {
        if matches!(s, ConnectionState::Connected | ConnectionState::Reconnected) {
            let _ = tx.try_send(());
        }
    })
    .detach();
    let weak = Arc::downgrade(inner);
    let close = inner.close_signal();
    let t = std::thread::Builder::new()
        .name("zk-ensemble-tracker".into())
        .spawn(move || run(weak, wake, close, max_delay))
        .map_err(|e| Error::InvalidArgument(format!("cannot spawn thread: {e}")))?;
    inner.threads.lock().push(t);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> EnsembleConfig {
        EnsembleConfig::parse(text.as_bytes()).unwrap()
    }

    #[test]
    fn client_addresses_wildcards_and_unusable_members() {
        let c = config(
            "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
             server.2=127.0.0.2:2888:3888:participant;0.0.0.0:2182\n\
             server.3=127.0.0.3:2888:3888:participant\n\
             server.4=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.invalid:2888:3888:participant;xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.invalid:2184\n\
             server.5=[::1]:2888:3888:observer;[::1]:2185\n\
             version=100000003",
        );
        let (hosts, skipped) = hosts_of(&c);
        assert_eq!(hosts, vec!["127.0.0.1:2181", "127.0.0.2:2182", "[::1]:2185"]);
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(skipped[0].contains("server.3") && skipped[0].contains("no client address"));
        assert!(skipped[1].contains("server.4") && skipped[1].contains("resolve"));
    }

    #[test]
    fn a_config_without_client_addresses_gives_no_hosts() {
        let c = config("server.1=127.0.0.1:2888:3888:participant\nversion=1");
        let (hosts, skipped) = hosts_of(&c);
        assert!(hosts.is_empty());
        assert_eq!(skipped.len(), 1);
    }

    #[test]
    fn only_a_greater_version_is_applied() {
        let table = [
            (None, 0x1_0000_0000, Judged::Newer),
            (Some(0x1_0000_0003), 0x1_0000_0004, Judged::Newer),
            // A new epoch's first config beats every zxid of the last.
            (Some(0x1_ffff_ffff), 0x2_0000_0000, Judged::Newer),
            (Some(0x1_0000_0003), 0x1_0000_0003, Judged::Same),
            // A stale follower's older config.
            (Some(0x2_0000_0001), 0x1_0000_0009, Judged::Older),
        ];
        for (applied, read, want) in table {
            assert_eq!(judge(applied, read), want, "{applied:?} {read:#x}");
        }
    }

    #[test]
    fn jitter_stays_below_its_bound() {
        for _ in 0..100 {
            assert!(jitter(Duration::from_millis(50)) < Duration::from_millis(50));
        }
        assert_eq!(jitter(Duration::ZERO), Duration::ZERO);
    }
}
