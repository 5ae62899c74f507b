//! What a watcher (and a cache) promise around their close and under
//! reconnects (issue 40), on the backend `ZK_TEST_SERVER` names:
//!
//! * closing a cache or a watcher leaves another recipe's one-shot watch
//!   of the same client on the same path in place (on ZooKeeper 3.6-3.8 the
//!   persistent watch is removed with `removeWatches` type `Any`, which
//!   takes the one-shot watches with it);
//! * a watcher tells node events and connection states in the one order
//!   the client delivered them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use zk_framework::{AddWatchMode, CuratorFramework, EventType, ExponentialBackoffRetry, KeeperState, WatchedEvent};
use zk_recipes::cache::CuratorCache;
use zk_recipes::watch::{PersistentWatcher, WatcherEvent};
use zk_testing::proxy::FaultProxy;

use crate::support::{client, init_log, server, timing, wait_until};

fn mk(c: &CuratorFramework, path: &str, data: &[u8]) {
    c.create()
        .creating_parents_if_needed()
        .with_data(data.to_vec())
        .for_path(path)
        .unwrap();
}

fn proxied(proxy: &FaultProxy) -> CuratorFramework {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(proxy.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

// ---- (b) a close keeps the same client's one-shot watches -----------------------------------

/// Which one-shot watch waits on the path.
#[derive(Debug, Clone, Copy)]
enum OneShot {
    Exists,
    ExistsMissing,
    Data,
    Children,
}

fn set_one_shot(c: &CuratorFramework, path: &str, kind: OneShot, tx: Sender<WatchedEvent>) {
    match kind {
        OneShot::Exists => assert!(c.check_exists_w(path, tx).unwrap().is_some()),
        OneShot::ExistsMissing => assert!(c.check_exists_w(path, tx).unwrap().is_none()),
        OneShot::Data => {
            c.get_data_w(path, tx).unwrap();
        }
        OneShot::Children => {
            c.get_children_w(path, tx).unwrap();
        }
    }
}

/// The change that fires `kind`'s watch, and the event it fires.
fn fire(writer: &CuratorFramework, path: &str, kind: OneShot) -> EventType {
    match kind {
        OneShot::Exists | OneShot::Data => {
            writer.set_data(path, b"changed".to_vec(), None).unwrap();
            EventType::NodeDataChanged
        }
        OneShot::ExistsMissing => {
            mk(writer, path, b"made");
            EventType::NodeCreated
        }
        OneShot::Children => {
            mk(writer, &format!("{path}/kid"), b"");
            EventType::NodeChildrenChanged
        }
    }
}

#[track_caller]
fn fires(rx: &Receiver<WatchedEvent>, want: EventType, what: &str) {
    match rx.recv_timeout(timing().wait()) {
        Ok(ev) => assert_eq!(ev.event_type, want, "{what}: {ev:?}"),
        Err(e) => panic!("{what}: the one-shot watch of the same client never fired ({e})"),
    }
}

#[test]
fn closing_a_cache_leaves_a_one_shot_watch_of_its_client_on_its_path() {
    init_log();
    let s = server();
    let c = client(&s);
    let writer = client(&s);
    for (i, kind) in [
        OneShot::Exists,
        OneShot::ExistsMissing,
        OneShot::Data,
        OneShot::Children,
    ]
    .into_iter()
    .enumerate()
    {
        let path = format!("/ct-close-cache/p{i}");
        if !matches!(kind, OneShot::ExistsMissing) {
            mk(&writer, &path, b"v");
        }
        let cache = CuratorCache::builder(&c, &path).build().unwrap();
        cache.start().unwrap();
        assert!(cache.wait_current_for(timing().wait()));
        let (tx, rx) = crossbeam_channel::unbounded();
        set_one_shot(&c, &path, kind, tx);
        cache.close();
        let want = fire(&writer, &path, kind);
        fires(&rx, want, &format!("{kind:?} after the cache's close"));
    }
}

#[test]
fn closing_a_watcher_leaves_a_one_shot_watch_of_its_client_on_its_path() {
    init_log();
    let s = server();
    let c = client(&s);
    let writer = client(&s);
    for recursive in [false, true] {
        for (i, kind) in [
            OneShot::Exists,
            OneShot::ExistsMissing,
            OneShot::Data,
            OneShot::Children,
        ]
        .into_iter()
        .enumerate()
        {
            let path = format!("/ct-close-watcher/{recursive}/p{i}");
            if !matches!(kind, OneShot::ExistsMissing) {
                mk(&writer, &path, b"v");
            }
            let w = PersistentWatcher::new(&c, &path, recursive).unwrap();
            let events = w.events();
            w.start().unwrap();
            assert!(events.recv_timeout(timing().wait()).unwrap().is_reset());
            let (tx, rx) = crossbeam_channel::unbounded();
            set_one_shot(&c, &path, kind, tx);
            w.close();
            let want = fire(&writer, &path, kind);
            fires(
                &rx,
                want,
                &format!("{kind:?} after the close of a watcher (recursive {recursive})"),
            );
        }
    }
}

// ---- (c) the client's order -----------------------------------------------------------------

/// A watcher event in words the raw client's events map to one for one.
fn word_of_watcher(ev: &WatcherEvent) -> Option<String> {
    match ev {
        WatcherEvent::Node { event_type, path } => Some(format!("{event_type:?} {path}")),
        WatcherEvent::Suspended => Some("suspended".into()),
        WatcherEvent::Reset { new_session: false } => Some("reset".into()),
        other => Some(format!("{other:?}")),
    }
}

fn word_of_raw(ev: &WatchedEvent) -> Option<String> {
    match (ev.event_type, ev.state, &ev.path) {
        (EventType::None, KeeperState::Disconnected, _) => Some("suspended".into()),
        (EventType::None, KeeperState::SyncConnected, _) => Some("reset".into()),
        (t, _, Some(p)) => Some(format!("{t:?} {p}")),
        _ => Some(format!("{ev:?}")),
    }
}

/// The words from the one naming `first` to the one naming `last`.
fn between(words: &[String], first: &str, last: &str) -> Vec<String> {
    let a = words
        .iter()
        .position(|w| w.ends_with(first))
        .unwrap_or_else(|| panic!("no {first} in {words:?}"));
    let b = words
        .iter()
        .position(|w| w.ends_with(last))
        .unwrap_or_else(|| panic!("no {last} in {words:?}"));
    words[a..=b].to_vec()
}

/// A watcher and a raw persistent watch of the same mode on the same path
/// and client hear one connection; under writes and several cuts, the
/// watcher tells exactly the raw sequence (`(None, Disconnected)` as
/// `Suspended`, `(None, SyncConnected)` as `Reset`): a `Suspended` is never
/// told after node events that came later, and a `Reset` comes before the
/// node events of the connection it announces.
#[test]
fn a_watcher_tells_events_and_states_in_the_clients_order() {
    init_log();
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let writer = client(&s);
    let root = "/ct-order";
    mk(&writer, root, b"");
    let (raw_tx, raw_rx) = crossbeam_channel::unbounded::<WatchedEvent>();
    let id = c.add_watch(root, AddWatchMode::PersistentRecursive, raw_tx).unwrap();
    let w = PersistentWatcher::new(&c, root, true).unwrap();
    let events = w.events();
    w.start().unwrap();
    assert!(events.recv_timeout(timing().wait()).unwrap().is_reset());
    mk(&writer, &format!("{root}/first"), b"");
    let mut heard: Vec<String> = Vec::new();
    let mut raw: Vec<String> = Vec::new();
    let stop = Arc::new(AtomicBool::new(false));
    let (wr, st) = (writer.clone(), stop.clone());
    let writing = std::thread::spawn(move || {
        let mut n = 0u64;
        while !st.load(Ordering::Relaxed) {
            n += 1;
            let _ = wr.set_data(&format!("{root}/first"), n.to_string().into_bytes(), None);
        }
    });
    mk(&writer, &format!("{root}/from"), b"");
    // The marker heard before the first cut (a cut can lose what is in
    // flight, on both registrations alike).
    let end = Instant::now() + timing().wait();
    while !raw.iter().any(|w| w.ends_with("/from")) {
        let ev = raw_rx.recv_deadline(end).expect("the first marker");
        raw.extend(word_of_raw(&ev));
    }
    for cut in 1..=10 {
        proxy.cut();
        let end = Instant::now() + timing().wait();
        // Back on the same session (the client said so), and changes heard
        // on the new connection, before the next cut.
        while raw.iter().filter(|w| *w == "reset").count() < cut || raw.last().is_some_and(|w| w == "reset") {
            match raw_rx.recv_deadline(end) {
                Ok(ev) => raw.extend(word_of_raw(&ev)),
                Err(_) => panic!(
                    "no reconnect after cut {cut}: {:?}",
                    &raw[raw.len().saturating_sub(5)..]
                ),
            }
        }
    }
    mk(&writer, &format!("{root}/to"), b"");
    stop.store(true, Ordering::Relaxed);
    writing.join().unwrap();
    let end = Instant::now() + timing().wait();
    while !heard.iter().any(|w| w.ends_with("/to")) || !raw.iter().any(|w| w.ends_with("/to")) {
        if let Ok(ev) = events.recv_deadline(end.min(Instant::now() + Duration::from_millis(10))) {
            heard.extend(word_of_watcher(&ev));
        }
        raw.extend(raw_rx.try_iter().filter_map(|e| word_of_raw(&e)));
        assert!(
            Instant::now() < end,
            "the markers were not heard: {} events from the watcher, {} from the client",
            heard.len(),
            raw.len()
        );
    }
    let heard = between(&heard, "/from", "/to");
    let raw = between(&raw, "/from", "/to");
    let first_difference = heard.iter().zip(&raw).position(|(a, b)| a != b);
    assert!(
        heard == raw,
        "the watcher's order is not the client's: first difference at {first_difference:?} ({} vs {} events)\nwatcher {:?}\nclient  {:?}",
        heard.len(),
        raw.len(),
        first_difference.map(|i| &heard[i.saturating_sub(3)..(i + 3).min(heard.len())]),
        first_difference.map(|i| &raw[i.saturating_sub(3)..(i + 3).min(raw.len())]),
    );
    assert!(heard.iter().filter(|w| *w == "suspended").count() >= 10, "{heard:?}");
    w.close();
    c.remove_watch(id).unwrap();
}

/// A `Reset` after a reconnect waits for its proof (an answer on the new
/// connection, which comes after the re-registered watch): while the
/// re-registration is held back by the proxy, none is told; a connection
/// lost before the proof tells none; the next one does, and a change after
/// it is announced.
#[test]
fn a_reset_waits_for_its_proof_and_a_connection_lost_before_it_tells_none() {
    init_log();
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let writer = client(&s);
    let root = "/ct-proof";
    mk(&writer, root, b"");
    let w = PersistentWatcher::new(&c, root, true).unwrap();
    let events = w.events();
    w.start().unwrap();
    assert_eq!(
        events.recv_timeout(timing().wait()).unwrap(),
        WatcherEvent::Reset { new_session: true }
    );
    let states = c.state_receiver();
    proxy.delay_set_watches(Duration::from_secs(2));
    proxy.cut();
    assert_eq!(events.recv_timeout(timing().wait()).unwrap(), WatcherEvent::Suspended);
    // Connected again, the re-registration held back: no proof, no Reset.
    let end = Instant::now() + timing().wait();
    loop {
        match states.recv_deadline(end) {
            Ok(zk_framework::ConnectionState::Reconnected) => break,
            Ok(_) => {}
            Err(e) => panic!("no reconnect: {e}"),
        }
    }
    assert!(wait_until(timing().wait(), || proxy.set_watches_delayed() >= 1));
    assert!(events.try_recv().is_err(), "told before the watch was proven in place");
    // Lost before the proof came: no Reset for that connection.
    proxy.delay_set_watches(Duration::ZERO);
    proxy.cut();
    assert_eq!(
        events.recv_timeout(timing().wait()).unwrap(),
        WatcherEvent::Reset { new_session: false }
    );
    mk(&writer, &format!("{root}/after"), b"");
    assert_eq!(
        events.recv_timeout(timing().wait()).unwrap(),
        WatcherEvent::Node {
            event_type: EventType::NodeCreated,
            path: format!("{root}/after")
        }
    );
    w.close();
}
