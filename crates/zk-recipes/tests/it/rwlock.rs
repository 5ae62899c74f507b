//! `InterProcessReadWriteLock`: Curator's `TestInterProcessReadWriteLock` ported by
//! name, plus what our version adds (herd-free readers, refused upgrades, safe
//! downgrades) and a readers/writers invariant across OS processes.
//!
//! Every test runs on the backend chosen by `ZK_TEST_SERVER` (embedded by
//! default, `apache` for real ZooKeeper), except the ones that read the embedded
//! server's counters.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::{connect, connect_one_time, lock_children, server};
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use zk_framework::CuratorFramework;
use zk_recipes::{Error, InterProcessReadWriteLock, LockEvent};
use zk_recipes::{READ_LOCK_NAME, WRITE_LOCK_NAME};
use zk_testing::{wait_until, Backend, TestingServer, Timing};

// ---- helpers -------------------------------------------------------------------------------

fn count_kind(c: &CuratorFramework, path: &str, tag: &str) -> usize {
    lock_children(c, path).iter().filter(|k| k.contains(tag)).count()
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos()
}

/// Receives `n` messages or fails at the deadline.
fn recv_n<T>(rx: &Receiver<T>, n: usize, timeout: Duration, what: &str) -> Vec<T> {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        match rx.recv_deadline(deadline) {
            Ok(v) => out.push(v),
            Err(e) => panic!("{what}: got {} of {n} within {timeout:?} ({e})", out.len()),
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Read,
    Write,
}

/// A contender thread with its own client: acquires (must succeed within the wait
/// time), reports `(id, "acquired")`, holds until `stop` is signalled or closed,
/// releases and reports `(id, "released")`.
fn spawn_holder(
    connect_string: String,
    path: &'static str,
    role: Role,
    id: usize,
    events: Sender<(usize, &'static str)>,
    stop: Receiver<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let t = Timing::from_env();
        let client = connect(&connect_string);
        let rw = InterProcessReadWriteLock::new(&client, path).unwrap();
        let guard = match role {
            Role::Read => boxed(rw.read_lock().try_acquire_for(t.wait() * 2)),
            Role::Write => boxed(rw.write_lock().try_acquire_for(t.wait() * 2)),
        }
        .unwrap_or_else(|e| panic!("{role:?} {id}: {e}"))
        .unwrap_or_else(|| panic!("{role:?} {id}: not acquired in time"));
        events.send((id, "acquired")).unwrap();
        let _ = stop.recv_timeout(t.wait() * 4);
        guard().unwrap();
        events.send((id, "released")).unwrap();
    })
}

// ---- Curator's TestInterProcessReadWriteLock -------------------------------------------------

#[test]
fn test_get_participant_nodes() {
    let t = Timing::from_env();
    let server = server();
    let client = connect_one_time(&server.connect_string());
    const READERS: usize = 20;
    const WRITERS: usize = 8;
    let (ev_tx, ev_rx) = unbounded::<(Role, &'static str)>();
    let (stop_tx, stop_rx) = unbounded::<()>();
    let (writers_go_tx, writers_go_rx) = unbounded::<()>();
    std::thread::scope(|s| {
        for _ in 0..READERS {
            let (client, ev, stop) = (&client, ev_tx.clone(), stop_rx.clone());
            s.spawn(move || {
                let rw = InterProcessReadWriteLock::new(client, "/lock").unwrap();
                let g = rw.read_lock().acquire().unwrap();
                ev.send((Role::Read, "acquired")).unwrap();
                let _ = stop.recv_timeout(t.wait() * 2);
                g.release().unwrap();
            });
        }
        for _ in 0..WRITERS {
            let (client, ev, go) = (&client, ev_tx.clone(), writers_go_rx.clone());
            s.spawn(move || {
                // Writers queue only once every reader holds.
                let _ = go.recv_timeout(t.wait());
                let rw = InterProcessReadWriteLock::new(client, "/lock").unwrap();
                let g = rw
                    .write_lock()
                    .try_acquire_for(t.wait() * 2)
                    .unwrap()
                    .expect("writer acquires");
                ev.send((Role::Write, "acquired")).unwrap();
                g.release().unwrap();
            });
        }
        recv_n(&ev_rx, READERS, t.wait(), "readers holding");
        drop(writers_go_tx);
        let rw = InterProcessReadWriteLock::new(&client, "/lock").unwrap();
        assert!(
            wait_until(t.wait(), || rw.write_lock().participant_nodes().unwrap().len()
                == WRITERS),
            "all writers queue"
        );
        assert_eq!(rw.read_lock().participant_nodes().unwrap().len(), READERS);
        assert_eq!(rw.write_lock().participant_nodes().unwrap().len(), WRITERS);
        for p in rw.read_lock().participant_nodes().unwrap() {
            assert!(
                p.node.starts_with("/lock/_c_") && p.node.contains(READ_LOCK_NAME),
                "{p}"
            );
        }
        for p in rw.write_lock().participant_nodes().unwrap() {
            assert!(
                p.node.starts_with("/lock/_c_") && p.node.contains(WRITE_LOCK_NAME),
                "{p}"
            );
        }
        // No writer gets in while the readers hold.
        assert!(ev_rx.try_recv().is_err());
        drop(stop_tx);
        let got = recv_n(&ev_rx, WRITERS, t.wait(), "writers acquire after the readers release");
        assert!(got.iter().all(|(r, _)| *r == Role::Write));
    });
    assert!(lock_children(&client, "/lock").is_empty());
}

/// Curator returns `false` after the timeout (the writer waits on its own read
/// node); ours refuses at once.
#[test]
fn test_that_upgrading_is_disallowed() {
    let t = Timing::from_env();
    let server = server();
    let client = connect_one_time(&server.connect_string());
    let rw = InterProcessReadWriteLock::new(&client, "/lock").unwrap();
    let r = rw.read_lock().acquire().unwrap();
    let start = Instant::now();
    let res = rw.write_lock().try_acquire_for(t.scale(Duration::from_secs(5)));
    let took = start.elapsed();
    match res {
        Err(Error::UpgradeRefused { path }) => assert_eq!(path, "/lock"),
        other => panic!("expected UpgradeRefused, got {:?}", other.map(|g| g.is_some())),
    }
    assert!(took < t.scale(Duration::from_secs(2)), "refused at once, took {took:?}");
    // No write node was queued behind our read node.
    assert_eq!(count_kind(&client, "/lock", WRITE_LOCK_NAME), 0);
    assert!(!rw.write_lock().is_owned_by_current_thread());
    r.release().unwrap();
    assert!(lock_children(&client, "/lock").is_empty());
}

/// The untimed `acquire()` on a read-holding thread returns
/// `Err(UpgradeRefused)` without waiting for anything.
#[test]
fn upgrade_refused_at_once_without_timeout() {
    let t = Timing::from_env();
    let server = server();
    let client = connect(&server.connect_string());
    let rw = Arc::new(InterProcessReadWriteLock::new(&client, "/lock").unwrap());
    let (tx, rx) = unbounded();
    let rw2 = rw.clone();
    // A detached thread, so that a hang fails the test instead of blocking it.
    std::thread::spawn(move || {
        let r = rw2.read_lock().acquire().unwrap();
        let start = Instant::now();
        let res = rw2.write_lock().acquire().map(|_| ());
        let took = start.elapsed();
        let writers = rw2.write_lock().participant_nodes().map(|v| v.len());
        r.release().unwrap();
        let _ = tx.send((res, took, writers));
    });
    let (res, took, writers) = rx
        .recv_timeout(t.scale(Duration::from_secs(10)))
        .expect("write_lock().acquire() on a read holder returned (no self-deadlock)");
    assert!(matches!(res, Err(Error::UpgradeRefused { .. })), "{res:?}");
    println!("upgrade refused after {took:?}");
    assert!(took < t.scale(Duration::from_secs(1)), "took {took:?}");
    assert_eq!(writers.unwrap(), 0);
    // Another thread can still take the write lock afterwards.
    let w = rw
        .write_lock()
        .try_acquire_for(t.wait())
        .unwrap()
        .expect("write after the reader left");
    w.release().unwrap();
}

#[test]
fn test_that_downgrading_respects_threads() {
    let t = Timing::from_env();
    let server = server();
    let client = connect_one_time(&server.connect_string());
    let rw = InterProcessReadWriteLock::new(&client, "/lock").unwrap();
    let w = rw.write_lock().acquire().unwrap();
    let other_thread_read = std::thread::scope(|s| {
        s.spawn(|| {
            rw.read_lock()
                .try_acquire_for(t.scale(Duration::from_secs(1)))
                .unwrap()
                .map(|g| g.release().unwrap())
                .is_some()
        })
        .join()
        .unwrap()
    });
    assert!(!other_thread_read, "the write holder's privilege to read is per thread");
    // The timed-out reader removed its node.
    assert_eq!(count_kind(&client, "/lock", READ_LOCK_NAME), 0);
    w.release().unwrap();
}

#[test]
fn test_downgrading() {
    let t = Timing::from_env();
    let server = server();
    let client = connect_one_time(&server.connect_string());
    let rw = InterProcessReadWriteLock::new(&client, "/lock").unwrap();
    let w = rw.write_lock().acquire().unwrap();
    let write_path = rw.write_lock().held_lock_path().unwrap();
    let r = rw
        .read_lock()
        .try_acquire_for(t.scale(Duration::from_secs(5)))
        .unwrap()
        .expect("downgrade");
    let read_path = rw.read_lock().held_lock_path().unwrap();
    // Curator 5.5+: the read node carries the write node's sequence and is a plain
    // ephemeral.
    let seq = |p: &str| p[p.len() - 10..].to_string();
    assert_eq!(seq(&read_path), seq(&write_path), "{read_path} vs {write_path}");
    assert!(read_path.contains(READ_LOCK_NAME) && read_path.starts_with("/lock/_c_"));
    let (_, stat) = client.get_data(&read_path).unwrap();
    assert_eq!(stat.ephemeral_owner, client.session_id());
    w.release().unwrap();
    assert!(rw.read_lock().is_owned_by_current_thread());
    r.release().unwrap();
    assert!(lock_children(&client, "/lock").is_empty());
}

/// CURATOR-621 (fixed in 5.5): a writer queued behind the write holder must not
/// get in while the holder's downgraded read lock is still held.
#[test]
fn test_contending_downgrading() {
    let t = Timing::from_env();
    let server = server();
    let client = connect_one_time(&server.connect_string());
    let client2 = connect_one_time(&server.connect_string());
    let lock1 = InterProcessReadWriteLock::new(&client, "/lock").unwrap();
    let w = lock1.write_lock().acquire().unwrap();
    let (tx, rx) = unbounded::<&'static str>();
    let (stop_tx, stop_rx) = unbounded::<()>();
    std::thread::scope(|s| {
        s.spawn(|| {
            let lock2 = InterProcessReadWriteLock::new(&client2, "/lock").unwrap();
            let g = lock2.write_lock().try_acquire_for(t.wait()).unwrap();
            tx.send(if g.is_some() { "acquired" } else { "timed out" }).unwrap();
            let _ = stop_rx.recv_timeout(t.wait());
            drop(g);
        });
        assert!(
            wait_until(t.wait(), || count_kind(&client, "/lock", WRITE_LOCK_NAME) == 2),
            "lock2's writer queues"
        );
        let r = lock1
            .read_lock()
            .try_acquire_for(t.scale(Duration::from_secs(5)))
            .unwrap()
            .expect("downgrade");
        w.release().unwrap();
        // lock2 must stay out while the downgraded read lock is held.
        match rx.recv_timeout(t.scale(Duration::from_millis(500))) {
            Err(RecvTimeoutError::Timeout) => {}
            other => panic!("lock2 got the write lock while lock1 reads: {other:?}"),
        }
        assert_eq!(count_kind(&client, "/lock", WRITE_LOCK_NAME), 1);
        r.release().unwrap();
        assert_eq!(rx.recv_timeout(t.wait()).unwrap(), "acquired");
        drop(stop_tx);
    });
}

#[test]
fn test_basic() {
    const CLIENTS: usize = 8;
    const ITERATIONS: usize = 100;
    let t = Timing::from_env();
    let server = server();
    let readers = AtomicUsize::new(0);
    let writers = AtomicUsize::new(0);
    let max_readers = AtomicUsize::new(0);
    let read_count = AtomicUsize::new(0);
    let write_count = AtomicUsize::new(0);
    let violation = AtomicBool::new(false);
    let cs = server.connect_string();
    std::thread::scope(|s| {
        for i in 0..CLIENTS {
            let (readers, writers, max_readers, read_count, write_count, violation, cs) = (
                &readers,
                &writers,
                &max_readers,
                &read_count,
                &write_count,
                &violation,
                &cs,
            );
            s.spawn(move || {
                let client = connect_one_time(cs);
                let rw = InterProcessReadWriteLock::new(&client, "/lock").unwrap();
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
                let mut next = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                for _ in 0..ITERATIONS {
                    let write = next() % 10 == 0;
                    let hold = Duration::from_millis(1 + next() % 9);
                    if write {
                        let g = rw
                            .write_lock()
                            .try_acquire_for(t.scale(Duration::from_secs(10)))
                            .unwrap();
                        let g = g.expect("write acquired within 10 s");
                        if writers.fetch_add(1, Ordering::SeqCst) != 0 || readers.load(Ordering::SeqCst) != 0 {
                            violation.store(true, Ordering::SeqCst);
                        }
                        std::thread::sleep(hold);
                        if readers.load(Ordering::SeqCst) != 0 {
                            violation.store(true, Ordering::SeqCst);
                        }
                        writers.fetch_sub(1, Ordering::SeqCst);
                        write_count.fetch_add(1, Ordering::SeqCst);
                        g.release().unwrap();
                    } else {
                        let g = rw
                            .read_lock()
                            .try_acquire_for(t.scale(Duration::from_secs(10)))
                            .unwrap();
                        let g = g.expect("read acquired within 10 s");
                        let now = readers.fetch_add(1, Ordering::SeqCst) + 1;
                        max_readers.fetch_max(now, Ordering::SeqCst);
                        if writers.load(Ordering::SeqCst) != 0 {
                            violation.store(true, Ordering::SeqCst);
                        }
                        std::thread::sleep(hold);
                        readers.fetch_sub(1, Ordering::SeqCst);
                        read_count.fetch_add(1, Ordering::SeqCst);
                        g.release().unwrap();
                    }
                }
            });
        }
    });
    let (r, w, m) = (
        read_count.load(Ordering::SeqCst),
        write_count.load(Ordering::SeqCst),
        max_readers.load(Ordering::SeqCst),
    );
    println!("reads={r} writes={w} max concurrent readers={m}");
    assert!(!violation.load(Ordering::SeqCst), "a writer overlapped another holder");
    assert_eq!(r + w, CLIENTS * ITERATIONS);
    assert!(w > 0 && r > 0);
    assert!(m > 1, "readers never overlapped");
}

#[test]
fn test_set_node_data() {
    let server = server();
    let client = connect_one_time(&server.connect_string());
    let mut data = vec![1u8, 2, 3, 4];
    let rw = InterProcessReadWriteLock::with_data(&client, "/lock", data.clone()).unwrap();
    data[0] = 5;
    let w = rw.write_lock().acquire().unwrap();
    let kids = lock_children(&client, "/lock");
    assert_eq!(kids.len(), 1);
    let (got, _) = client.get_data(&format!("/lock/{}", kids[0])).unwrap();
    assert_eq!(got, vec![1, 2, 3, 4]);
    drop(w);
    // The read half carries the same data.
    let r = rw.read_lock().acquire().unwrap();
    let (got, _) = client.get_data(&rw.read_lock().held_lock_path().unwrap()).unwrap();
    assert_eq!(got, vec![1, 2, 3, 4]);
    drop(r);
}

/// The write holder's session is killed: another client's read lock then
/// succeeds, the holder hears `Lost`, its node is gone, and releasing the lost
/// lock is not an error (the node is already gone).
#[test]
fn test_lock_path() {
    let t = Timing::from_env();
    let server = server();
    let client1 = connect_one_time(&server.connect_string());
    let client2 = connect_one_time(&server.connect_string());
    let lock1 = InterProcessReadWriteLock::new(&client1, "/lock").unwrap();
    let lock2 = InterProcessReadWriteLock::new(&client2, "/lock").unwrap();
    let w = lock1.write_lock().acquire().unwrap();
    let lost = w.events();
    let path = lock1.write_lock().held_lock_path().unwrap();
    assert!(path.starts_with("/lock/_c_") && path.contains(WRITE_LOCK_NAME));

    let zk = client1.zookeeper_client();
    server
        .expire_session(zk.session_id(), &zk.session_password())
        .expect("kill client1's session");

    let r = lock2
        .read_lock()
        .try_acquire_for(t.wait())
        .unwrap()
        .expect("read after the writer's session died");
    // The holder learns it lost the lock.
    let deadline = Instant::now() + t.wait();
    loop {
        match lost.recv_deadline(deadline) {
            Ok(LockEvent::Lost) => break,
            Ok(_) => continue,
            Err(e) => panic!("no Lost event: {e}"),
        }
    }
    assert!(!w.is_held());
    // client1 is back on a new session; its old node is gone.
    assert!(
        wait_until(t.wait(), || matches!(
            client1.get_data(&path),
            Err(zk_framework::Error::NoNode { .. })
        )),
        "{:?}",
        client1.get_data(&path)
    );
    r.release().unwrap();
    // A lost lock is never reported as released.
    let released = w.release();
    assert!(
        matches!(released, Err(Error::LockLost { .. })),
        "releasing a lost write lock: {released:?}"
    );
    assert!(!lock1.write_lock().is_acquired_in_this_process());
    assert!(lock_children(&client2, "/lock").is_empty());
}

// ---- herd-free readers -----------------------------------------------------------------------

/// One writer holds, 20 readers queue behind it, then a second writer and 10
/// more readers. The first writer's release must wake exactly the 20 readers it
/// blocked (one watch notification each), not the 10 behind the second writer.
/// Curator's rule (every blocked reader watches the *first* writer) would send 30.
#[test]
fn herd_free_readers_wake_only_the_unblocked() {
    const FIRST: usize = 20;
    const SECOND: usize = 10;
    let t = Timing::from_env();
    let server = TestingServer::start_backend(Backend::Embedded).unwrap();
    let emb = server.embedded().unwrap();
    let cs = server.connect_string();
    let observer = connect(&cs);
    let rw = InterProcessReadWriteLock::new(&observer, "/herd").unwrap();
    let (ev_tx, ev_rx) = unbounded::<(usize, &'static str)>();
    let (stop_tx, stop_rx) = unbounded::<()>();
    let (w1_stop_tx, w1_stop_rx) = unbounded::<()>();
    let mut threads = Vec::new();

    // Writer 1 holds (id 0).
    threads.push(spawn_holder(
        cs.clone(),
        "/herd",
        Role::Write,
        0,
        ev_tx.clone(),
        w1_stop_rx,
    ));
    assert_eq!(recv_n(&ev_rx, 1, t.wait(), "writer 1")[0], (0, "acquired"));
    // 20 readers (ids 1..=20) queue behind it.
    for id in 1..=FIRST {
        threads.push(spawn_holder(
            cs.clone(),
            "/herd",
            Role::Read,
            id,
            ev_tx.clone(),
            stop_rx.clone(),
        ));
    }
    assert!(wait_until(t.wait(), || rw
        .read_lock()
        .participant_nodes()
        .unwrap()
        .len()
        == FIRST));
    // Writer 2 (id 100), then 10 readers (ids 101..=110).
    threads.push(spawn_holder(
        cs.clone(),
        "/herd",
        Role::Write,
        100,
        ev_tx.clone(),
        stop_rx.clone(),
    ));
    assert!(wait_until(t.wait(), || rw
        .write_lock()
        .participant_nodes()
        .unwrap()
        .len()
        == 2));
    for id in 101..=100 + SECOND {
        threads.push(spawn_holder(
            cs.clone(),
            "/herd",
            Role::Read,
            id,
            ev_tx.clone(),
            stop_rx.clone(),
        ));
    }
    assert!(wait_until(t.wait(), || rw
        .read_lock()
        .participant_nodes()
        .unwrap()
        .len()
        == FIRST + SECOND));
    // Every waiter has set its watch: 20 readers on W1, W2 on the last of them, 10
    // readers on W2 (one watch per connection and path).
    let want_watches = FIRST + 1 + SECOND;
    assert!(
        wait_until(t.wait(), || emb.stats().watches >= want_watches),
        "waiters watch: {} of {want_watches}",
        emb.stats().watches
    );
    assert!(ev_rx.try_recv().is_err(), "nobody else holds yet");

    // What Curator's rule would send: every blocked reader watches the first
    // writer in the queue.
    let mut queue: Vec<String> = lock_children(&observer, "/herd");
    zk_recipes::Driver::Read.sort(&mut queue);
    let first_writer = queue.iter().position(|n| n.contains(WRITE_LOCK_NAME)).unwrap();
    let curator_rule = queue[first_writer + 1..]
        .iter()
        .filter(|n| n.contains(READ_LOCK_NAME))
        .count();

    let before = emb.stats();
    drop(w1_stop_tx);
    let woke = recv_n(&ev_rx, 1 + FIRST, t.wait(), "W1 releases, the first 20 readers acquire");
    let after = emb.stats();
    assert!(woke.contains(&(0, "released")));
    let mut readers: Vec<usize> = woke
        .iter()
        .filter(|(_, e)| *e == "acquired")
        .map(|(id, _)| *id)
        .collect();
    readers.sort_unstable();
    assert_eq!(readers, (1..=FIRST).collect::<Vec<_>>());
    let ours = after.watch_notifications - before.watch_notifications;
    let lists = after.requests(zk_framework::proto::OpCode::GetChildren)
        - before.requests(zk_framework::proto::OpCode::GetChildren);
    println!(
        "writer 1's release: {ours} watch notifications, {lists} getChildren (ours: nearest writer); \
         Curator's rule (all readers watch the first writer) would send {curator_rule} notifications \
         and {curator_rule} getChildren"
    );
    // The unblocked readers, plus the writer's own-node watch (its loss signal).
    assert!(
        (FIRST as u64..=FIRST as u64 + 1).contains(&ours),
        "exactly the unblocked readers are notified (and the writer's own watch): {ours}"
    );
    assert_eq!(curator_rule, FIRST + SECOND);
    // Nobody behind writer 2 moved.
    assert!(ev_rx.try_recv().is_err());
    assert_eq!(emb.stats().watch_notifications, after.watch_notifications);

    drop(stop_tx);
    // The first readers release, writer 2 acquires and releases, the last readers
    // acquire and release.
    recv_n(&ev_rx, FIRST + 2 + 2 * SECOND, t.wait(), "everyone finishes");
    for th in threads {
        th.join().unwrap();
    }
    assert!(lock_children(&observer, "/herd").is_empty());
}

// ---- readers/writers across OS processes ----------------------------------------------------

const CHILD_ENV: &str = "ZK_RWLOCK_CHILD";

struct ChildSpec {
    role: Role,
    connect: String,
    path: String,
    name: String,
    iterations: usize,
    hold: Duration,
    log: PathBuf,
    ready_dir: PathBuf,
    go_file: PathBuf,
}

impl ChildSpec {
    fn encode(&self) -> String {
        [
            if self.role == Role::Read { "read" } else { "write" }.to_string(),
            self.connect.clone(),
            self.path.clone(),
            self.name.clone(),
            self.iterations.to_string(),
            self.hold.as_millis().to_string(),
            self.log.display().to_string(),
            self.ready_dir.display().to_string(),
            self.go_file.display().to_string(),
        ]
        .join("\n")
    }

    fn decode(s: &str) -> ChildSpec {
        let f: Vec<&str> = s.split('\n').collect();
        assert_eq!(f.len(), 9, "bad {CHILD_ENV}");
        ChildSpec {
            role: if f[0] == "read" { Role::Read } else { Role::Write },
            connect: f[1].into(),
            path: f[2].into(),
            name: f[3].into(),
            iterations: f[4].parse().unwrap(),
            hold: Duration::from_millis(f[5].parse().unwrap()),
            log: f[6].into(),
            ready_dir: f[7].into(),
            go_file: f[8].into(),
        }
    }
}

/// The child side of [`rw_invariant_across_processes`]: does nothing unless the
/// parent set `ZK_RWLOCK_CHILD`.
#[test]
fn rw_process_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let spec = ChildSpec::decode(&spec);
    let t = Timing::from_env();
    let client = connect(&spec.connect);
    let rw = InterProcessReadWriteLock::new(&client, &spec.path).unwrap();
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log)
        .unwrap();
    std::fs::write(spec.ready_dir.join(&spec.name), b"").unwrap();
    assert!(
        wait_until(t.wait(), || spec.go_file.exists()),
        "{}: no go signal",
        spec.name
    );
    for i in 0..spec.iterations {
        let g = match spec.role {
            Role::Read => boxed(rw.read_lock().try_acquire_for(t.wait())),
            Role::Write => boxed(rw.write_lock().try_acquire_for(t.wait())),
        }
        .unwrap()
        .unwrap_or_else(|| panic!("{}: iteration {i} not acquired in time", spec.name));
        // One write(2) per line on an O_APPEND descriptor.
        log.write_all(format!("{} START {}\n", spec.name, now_nanos()).as_bytes())
            .unwrap();
        std::thread::sleep(spec.hold);
        log.write_all(format!("{} END {}\n", spec.name, now_nanos()).as_bytes())
            .unwrap();
        g().unwrap();
    }
}

/// A read or a write guard as one type: its release.
type Release<'a> = Box<dyn FnOnce() -> zk_recipes::Result<()> + 'a>;

fn boxed<'a, L: zk_recipes::RawLock + 'a>(
    r: zk_recipes::Result<Option<zk_recipes::LockGuard<'a, L>>>,
) -> zk_recipes::Result<Option<Release<'a>>> {
    r.map(|g| g.map(|g| Box::new(move || g.release()) as Release<'a>))
}

/// Reads "NAME START|END nanos" lines into per-name sections.
fn parse_sections(path: &Path) -> HashMap<String, Vec<(u128, u128)>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut open: HashMap<String, u128> = HashMap::new();
    let mut out: HashMap<String, Vec<(u128, u128)>> = HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 3, "malformed line {line:?}");
        let ts: u128 = f[2].parse().unwrap();
        match f[1] {
            "START" => assert!(open.insert(f[0].to_string(), ts).is_none(), "{line}: START twice"),
            "END" => {
                let start = open.remove(f[0]).unwrap_or_else(|| panic!("{line}: END without START"));
                out.entry(f[0].to_string()).or_default().push((start, ts));
            }
            other => panic!("bad kind {other}"),
        }
    }
    assert!(open.is_empty(), "unfinished sections: {open:?}");
    out
}

/// Several reader and writer processes (this test binary, re-executed) on one
/// server: a writer never overlaps anyone, and readers do overlap.
#[test]
fn rw_invariant_across_processes() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    const READERS: usize = 3;
    const WRITERS: usize = 2;
    let t = Timing::from_env();
    let server = server();
    let dir = std::env::temp_dir().join(format!("rwlock-procs-{}-{}", std::process::id(), now_nanos()));
    let ready = dir.join("ready");
    std::fs::create_dir_all(&ready).unwrap();
    let log = dir.join("sections.log");
    let go = dir.join("go");
    let exe = std::env::current_exe().unwrap();
    let mut kids: Vec<(String, Child)> = Vec::new();
    for i in 0..READERS + WRITERS {
        let role = if i < READERS { Role::Read } else { Role::Write };
        let spec = ChildSpec {
            role,
            connect: server.connect_string(),
            path: "/procs/rw".into(),
            name: format!("{}-{i}", if role == Role::Read { "reader" } else { "writer" }),
            iterations: if role == Role::Read { 12 } else { 6 },
            hold: Duration::from_millis(if role == Role::Read { 40 } else { 15 }),
            log: log.clone(),
            ready_dir: ready.clone(),
            go_file: go.clone(),
        };
        let child = Command::new(&exe)
            .args(["--exact", "rwlock::rw_process_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, spec.encode())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("re-execute the test binary");
        kids.push((spec.name, child));
    }
    let all_ready = wait_until(t.wait(), || {
        std::fs::read_dir(&ready).unwrap().count() == READERS + WRITERS
    });
    std::fs::write(&go, b"").unwrap();
    let finished = all_ready
        && wait_until(t.wait() * 2, || {
            kids.iter_mut().all(|(_, c)| c.try_wait().unwrap().is_some())
        });
    let mut failures = Vec::new();
    for (name, mut c) in kids {
        if !finished {
            let _ = c.kill();
        }
        let out = c.wait_with_output().unwrap();
        if !out.status.success() {
            failures.push(format!(
                "{name}: {}\n{}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(all_ready, "children did not all connect");
    assert!(finished, "children did not finish in time");
    assert!(failures.is_empty(), "child failures:\n{}", failures.join("\n"));

    let sections = parse_sections(&log);
    assert_eq!(sections.len(), READERS + WRITERS, "{:?}", sections.keys());
    let mut all: Vec<(u128, u128, &str)> = Vec::new();
    for (name, secs) in &sections {
        let want = if name.starts_with("reader") { 12 } else { 6 };
        assert_eq!(secs.len(), want, "{name}");
        all.extend(secs.iter().map(|(s, e)| (*s, *e, name.as_str())));
    }
    all.sort();
    let mut reader_overlaps = 0;
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            if b.0 >= a.1 {
                break; // sorted by start: no later section overlaps a
            }
            if a.2 == b.2 {
                panic!("{} overlaps itself", a.2);
            }
            let writer = a.2.starts_with("writer") || b.2.starts_with("writer");
            assert!(!writer, "writer overlap: {a:?} and {b:?}");
            reader_overlaps += 1;
        }
    }
    println!(
        "{} sections across {} processes; reader/reader overlaps: {reader_overlaps}",
        all.len(),
        READERS + WRITERS
    );
    assert!(reader_overlaps > 0, "readers never overlapped");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- downgrade safety and naming -------------------------------------------------------------

/// A thread whose write lock was lost (session expired) must not "downgrade":
/// the read node would be granted at once while another writer holds the lock.
#[test]
fn downgrade_after_losing_the_write_lock_is_refused() {
    let t = Timing::from_env();
    let server = server();
    let client1 = connect(&server.connect_string());
    let client2 = connect(&server.connect_string());
    let lock1 = InterProcessReadWriteLock::new(&client1, "/lock").unwrap();
    let lock2 = InterProcessReadWriteLock::new(&client2, "/lock").unwrap();
    let w = lock1.write_lock().acquire().unwrap();
    let zk = client1.zookeeper_client();
    server.expire_session(zk.session_id(), &zk.session_password()).unwrap();
    assert!(wait_until(t.wait(), || w.status() == zk_recipes::LockStatus::Lost));
    // Someone else now writes.
    std::thread::scope(|s| {
        let (held_tx, held_rx) = unbounded::<()>();
        let (done_tx, done_rx) = unbounded::<()>();
        s.spawn(move || {
            let g = lock2
                .write_lock()
                .try_acquire_for(t.wait())
                .unwrap()
                .expect("the other writer gets in");
            held_tx.send(()).unwrap();
            let _ = done_rx.recv_timeout(t.wait());
            g.release().unwrap();
        });
        held_rx.recv_timeout(t.wait()).unwrap();
        let res = lock1.read_lock().try_acquire_for(t.scale(Duration::from_millis(200)));
        let granted = matches!(res, Ok(Some(_)));
        assert!(
            !granted,
            "a lost write lock was 'downgraded' while another writer holds"
        );
        assert!(
            matches!(res, Err(Error::LockLost { .. })),
            "{:?}",
            res.map(|g| g.is_some())
        );
        assert!(!lock1.read_lock().is_owned_by_current_thread());
        drop(done_tx);
    });
    let _ = w.release();
    assert!(wait_until(t.wait(), || lock_children(&client2, "/lock").is_empty()));
}

/// Participant nodes are filtered on the node name, like Curator, even when the
/// base path contains a lock name.
#[test]
fn participant_nodes_filter_on_node_names() {
    let server = server();
    let client = connect(&server.connect_string());
    let rw = InterProcessReadWriteLock::new(&client, "/odd__WRIT__path").unwrap();
    let r = rw.read_lock().acquire().unwrap();
    assert_eq!(rw.read_lock().participant_nodes().unwrap().len(), 1);
    assert!(rw.write_lock().participant_nodes().unwrap().is_empty());
    assert_eq!(rw.read_lock().participant_paths().unwrap().len(), 1);
    assert_eq!(rw.write_lock().participant_paths().unwrap(), Vec::<String>::new());
    let p = &rw.read_lock().participant_nodes().unwrap()[0];
    assert_eq!(p.kind, zk_recipes::ParticipantKind::Read);
    assert!(p.holds);
    assert_eq!(rw.participant_nodes().unwrap(), std::slice::from_ref(p));
    r.release().unwrap();
}

/// A reader watches the nearest writer before it. When that writer gives up
/// (timeout), the reader must re-evaluate and wait for the next writer, not be
/// stranded.
#[test]
fn reader_behind_a_timed_out_writer_is_not_stranded() {
    let t = Timing::from_env();
    let server = server();
    let cs = server.connect_string();
    let observer = connect(&cs);
    let (ev_tx, ev_rx) = unbounded::<(usize, &'static str)>();
    let (w1_stop_tx, w1_stop_rx) = unbounded::<()>();
    let (stop_tx, stop_rx) = unbounded::<()>();
    let w1 = spawn_holder(cs.clone(), "/strand", Role::Write, 1, ev_tx.clone(), w1_stop_rx);
    assert_eq!(recv_n(&ev_rx, 1, t.wait(), "writer 1")[0], (1, "acquired"));
    std::thread::scope(|s| {
        // Writer 2 queues with a short timeout.
        let w2 = s.spawn(|| {
            let client = connect(&cs);
            let rw = InterProcessReadWriteLock::new(&client, "/strand").unwrap();
            let start = Instant::now();
            let got = rw
                .write_lock()
                .try_acquire_for(t.scale(Duration::from_millis(1500)))
                .unwrap();
            (got.is_some(), start.elapsed())
        });
        assert!(wait_until(t.wait(), || count_kind(
            &observer,
            "/strand",
            WRITE_LOCK_NAME
        ) == 2));
        // The reader queues behind writer 2 (its nearest writer).
        let reader = spawn_holder(cs.clone(), "/strand", Role::Read, 3, ev_tx.clone(), stop_rx.clone());
        assert!(wait_until(t.wait(), || count_kind(
            &observer,
            "/strand",
            READ_LOCK_NAME
        ) == 1));
        let (w2_got, _) = w2.join().unwrap();
        assert!(!w2_got, "writer 2 times out behind writer 1");
        assert_eq!(count_kind(&observer, "/strand", WRITE_LOCK_NAME), 1);
        assert!(ev_rx.try_recv().is_err(), "the reader still waits for writer 1");
        drop(w1_stop_tx);
        let got = recv_n(&ev_rx, 2, t.wait(), "writer 1 releases, the reader acquires");
        assert!(got.contains(&(3, "acquired")), "{got:?}");
        drop(stop_tx);
        reader.join().unwrap();
    });
    w1.join().unwrap();
}

/// FIFO: a reader that arrives after a queued writer waits for it, so readers
/// cannot starve writers.
#[test]
fn queued_writer_blocks_later_readers() {
    let t = Timing::from_env();
    let server = server();
    let cs = server.connect_string();
    let observer = connect(&cs);
    let (ev_tx, ev_rx) = unbounded::<(usize, &'static str)>();
    let (r1_stop_tx, r1_stop_rx) = unbounded::<()>();
    let (w_stop_tx, w_stop_rx) = unbounded::<()>();
    let (r2_stop_tx, r2_stop_rx) = unbounded::<()>();
    let r1 = spawn_holder(cs.clone(), "/fifo", Role::Read, 1, ev_tx.clone(), r1_stop_rx);
    assert_eq!(recv_n(&ev_rx, 1, t.wait(), "reader 1")[0], (1, "acquired"));
    let w = spawn_holder(cs.clone(), "/fifo", Role::Write, 2, ev_tx.clone(), w_stop_rx);
    assert!(wait_until(t.wait(), || count_kind(&observer, "/fifo", WRITE_LOCK_NAME) == 1));
    let r2 = spawn_holder(cs.clone(), "/fifo", Role::Read, 3, ev_tx.clone(), r2_stop_rx);
    assert!(wait_until(t.wait(), || count_kind(&observer, "/fifo", READ_LOCK_NAME) == 2));
    // Reader 2 does not join reader 1 while the writer is queued between them.
    let rw = InterProcessReadWriteLock::new(&observer, "/fifo").unwrap();
    assert!(rw
        .read_lock()
        .try_acquire_for(Duration::from_millis(200))
        .unwrap()
        .is_none());
    assert!(ev_rx.try_recv().is_err());
    drop(r1_stop_tx);
    let mut got = recv_n(&ev_rx, 2, t.wait(), "reader 1 releases, the writer acquires");
    got.sort_unstable();
    assert_eq!(got, vec![(1, "released"), (2, "acquired")]);
    assert!(ev_rx.try_recv().is_err(), "reader 2 waits for the writer");
    drop(w_stop_tx);
    let mut got = recv_n(&ev_rx, 2, t.wait(), "the writer releases, reader 2 acquires");
    got.sort_unstable();
    assert_eq!(got, vec![(2, "released"), (3, "acquired")]);
    drop(r2_stop_tx);
    for th in [r1, w, r2] {
        th.join().unwrap();
    }
}

/// A retry policy that always pauses `Duration::MAX` and says when asked.
#[derive(Debug)]
struct PauseForever(Sender<()>);

impl zk_framework::RetryPolicy for PauseForever {
    fn next_retry(&self, _retry_count: u32, _elapsed: Duration) -> zk_framework::RetryDecision {
        let _ = self.0.try_send(());
        zk_framework::RetryDecision::RetryAfter(Duration::MAX)
    }
}

/// A waiter whose node is deleted under it queues again after the retry
/// policy's pause (for every lock kind: the write lock here). A pause the clock
/// cannot represent (`Duration::MAX`) neither panics nor outlives the client:
/// `close()` ends the untimed `acquire()` with `Closed`, promptly, and no node
/// is left behind.
#[test]
fn a_requeue_pause_of_duration_max_ends_when_the_client_closes() {
    let s = server();
    let t = Timing::from_env();
    let path = "/rw/requeue-max";
    let admin = connect(&s.connect_string());
    let (asked_tx, asked) = crossbeam_channel::bounded(1);
    let waiting = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(PauseForever(asked_tx))
        .build()
        .unwrap();
    waiting.block_until_connected(t.wait()).unwrap();
    let holder = InterProcessReadWriteLock::new(&admin, path).unwrap();
    let waiter = InterProcessReadWriteLock::new(&waiting, path).unwrap();
    let g = holder.write_lock().acquire().unwrap();
    // Not a scoped thread: a pause that outlived the client would hang the
    // test instead of failing it.
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let w = std::thread::spawn(move || {
        let _ = done_tx.send(waiter.write_lock().acquire().map(drop));
    });
    assert!(wait_until(t.wait(), || lock_children(&admin, path).len() == 2));
    let mut nodes = lock_children(&admin, path);
    nodes.sort_by_key(|n| n[n.len() - 10..].to_string());
    admin.delete().for_path(&format!("{path}/{}", nodes[1])).unwrap();
    // The holder releases: the waiter lists, finds its node gone and asks the
    // policy, which pauses it for ever.
    drop(g);
    asked.recv_timeout(t.wait()).expect("the waiter asked its retry policy");
    assert!(done.is_empty(), "still pausing");
    assert!(lock_children(&admin, path).is_empty(), "no node while pausing");
    let closed_at = Instant::now();
    waiting.close();
    let r = done.recv_timeout(t.wait()).expect("close() ends the pause");
    assert!(
        matches!(r, Err(Error::ZooKeeper(zk_framework::Error::Closed))),
        "a closed client ends the pause: {r:?}"
    );
    assert!(
        closed_at.elapsed() <= t.scale(Duration::from_secs(2)),
        "ended {:?} after close",
        closed_at.elapsed()
    );
    w.join().unwrap();
    assert!(lock_children(&admin, path).is_empty(), "no node is left");
}
