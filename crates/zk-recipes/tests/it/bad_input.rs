//! Every public entry point, fed bad input, gives a typed error: no panic, no
//! hang, no orphan node.
//!
//! The cases form one table of `(name, closure)`. Each closure runs on its own
//! thread with a deadline (a hang is reported, not waited for) and under
//! `catch_unwind`; it returns `Ok(what happened)` when the behaviour is the
//! documented one and `Err(why not)` otherwise. The outcome of every case is
//! printed (`cargo test --test bad_input -- --nocapture`). At the end the
//! embedded server's tree must be back to its initial nodes.
//!
//! Covered: invalid paths (empty, relative, trailing slash, `.`/`..` segments,
//! `//`, NUL, control characters, DEL, private-use and non-BMP characters) on
//! every path-taking API of `Client`, `CuratorFramework` and the recipe
//! constructors; release without acquire, from another thread, and twice, for
//! every lock kind; zero and huge timeouts on every timed acquire and on the
//! connection waits; garbage connect strings; an unreachable server; data over
//! 1 MiB; a namespace with slashes; zero leases; an empty `MultiLock`.

use std::fmt::Debug;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{closed_port, timing, zero_timeout_acquires_free, zero_try};
use zk_framework::proto::{Acl, CreateMode};
use zk_framework::CuratorFramework;
use zk_framework::Error as ZkError;
use zk_framework::{Client, ClientConfig, Op, WatchedEvent};
use zk_framework::{ExponentialBackoffRetry, RetryNTimes};
use zk_recipes::{
    Error as LockError, InterProcessLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, MultiLock,
};
use zk_testing::{wait_until, Backend, TestingServer};

type Outcome = Result<String, String>;
type CaseFn = Box<dyn FnOnce() -> Outcome + Send + 'static>;

/// 1 MiB + 1: over the default `jute.maxbuffer` of both server and client.
const BIG: usize = (1 << 20) + 1;

fn framework(cs: &str, connection: Duration) -> CuratorFramework {
    CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(timing().session())
        .connection_timeout(connection)
        .retry_policy(RetryNTimes::new(1, Duration::from_millis(50)))
        .build()
        .expect("build")
}

// ---------------------------------------------------------------------------
// Expectations.

fn want_err<T: Debug, E: Debug>(r: Result<T, E>, ok: impl Fn(&E) -> bool) -> Outcome {
    match r {
        Err(e) if ok(&e) => Ok(short(&format!("{e:?}"))),
        Err(e) => Err(format!("unexpected error {e:?}")),
        Ok(v) => Err(format!("accepted: {}", short(&format!("{v:?}")))),
    }
}

fn short(s: &str) -> String {
    let s = s.replace('\n', " ");
    if s.chars().count() > 90 {
        format!("{}…", s.chars().take(90).collect::<String>())
    } else {
        s
    }
}

fn is_invalid_path(e: &ZkError) -> bool {
    matches!(e, ZkError::InvalidPath(_))
}

fn lock_invalid_path(e: &LockError) -> bool {
    matches!(e, LockError::ZooKeeper(ZkError::InvalidPath(_)))
}

fn lock_invalid_argument(e: &LockError) -> bool {
    matches!(e, LockError::InvalidArgument(_))
}

fn not_owner(e: &LockError) -> bool {
    matches!(e, LockError::NotOwner { .. })
}

fn ensure(cond: bool, what: impl Into<String>) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what.into())
    }
}

// ---------------------------------------------------------------------------
// The runner.

#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Ok,
    Fail,
    Panic,
    Hang,
}

fn run_case(name: &str, f: CaseFn, limit: Duration) -> (Verdict, String, Duration) {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let start = Instant::now();
    std::thread::Builder::new()
        .name(format!("case {name}"))
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(f));
            let _ = tx.send(r);
        })
        .expect("spawn a case thread");
    let r = rx.recv_timeout(limit);
    let took = start.elapsed();
    match r {
        Ok(Ok(Ok(s))) => (Verdict::Ok, s, took),
        Ok(Ok(Err(s))) => (Verdict::Fail, s, took),
        Ok(Err(p)) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            (Verdict::Panic, short(&msg), took)
        }
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
            (Verdict::Hang, format!("no answer within {limit:?}"), took)
        }
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => (Verdict::Panic, "thread died".into(), took),
    }
}

// ---------------------------------------------------------------------------
// The table.

const INVALID_PATHS: &[(&str, &str)] = &[
    ("empty", ""),
    ("relative", "relative/path"),
    ("trailing slash", "/a/"),
    ("dot segment", "/a/./b"),
    ("dotdot segment", "/a/../b"),
    ("lone dot", "/."),
    ("double slash", "/a//b"),
    ("NUL", "/a\u{0}b"),
    ("control char", "/a\u{1}b"),
    ("DEL", "/a\u{7f}b"),
    ("private use", "/a\u{e000}"),
    ("non-BMP", "/a\u{1F600}"),
];

type PathApi = Arc<dyn Fn(&str) -> Outcome + Send + Sync>;

/// Every path-taking API, as `(name, is-sequential, call)`.
fn path_apis(fw: &CuratorFramework, zk: &Client) -> Vec<(&'static str, bool, PathApi)> {
    let mut v: Vec<(&'static str, bool, PathApi)> = Vec::new();
    macro_rules! zk_api {
        ($name:expr, $seq:expr, |$z:ident, $p:ident| $body:expr) => {{
            let $z = zk.clone();
            v.push(($name, $seq, Arc::new(move |$p: &str| want_err($body, is_invalid_path))));
        }};
    }
    macro_rules! fw_api {
        ($name:expr, $seq:expr, |$c:ident, $p:ident| $body:expr) => {{
            let $c = fw.clone();
            v.push(($name, $seq, Arc::new(move |$p: &str| want_err($body, is_invalid_path))));
        }};
    }
    macro_rules! lock_api {
        ($name:expr, |$c:ident, $p:ident| $body:expr) => {{
            let $c = fw.clone();
            v.push((
                $name,
                false,
                Arc::new(move |$p: &str| want_err($body, lock_invalid_path)),
            ));
        }};
    }
    zk_api!("Client::create", false, |z, p| z.create(
        p,
        b"",
        &Acl::open_unsafe(),
        CreateMode::Persistent
    ));
    zk_api!("Client::create (sequential)", true, |z, p| z.create(
        p,
        b"",
        &Acl::open_unsafe(),
        CreateMode::EphemeralSequential
    ));
    zk_api!("Client::create2", false, |z, p| z.create2(
        p,
        b"",
        &Acl::open_unsafe(),
        CreateMode::Ephemeral
    ));
    zk_api!("Client::create_ttl", false, |z, p| z.create_ttl(
        p,
        b"",
        &Acl::open_unsafe(),
        CreateMode::PersistentWithTtl,
        Duration::from_secs(10)
    ));
    zk_api!("Client::delete", false, |z, p| z.delete(p, None));
    zk_api!("Client::exists", false, |z, p| z.exists(p));
    zk_api!("Client::exists_w", false, |z, p| z.exists_w(p, |_e: WatchedEvent| {}));
    zk_api!("Client::get_data", false, |z, p| z.get_data(p));
    zk_api!("Client::get_data_w", false, |z, p| z
        .get_data_w(p, |_e: WatchedEvent| {}));
    zk_api!("Client::set_data", false, |z, p| z.set_data(p, b"x", None));
    zk_api!("Client::get_children", false, |z, p| z.get_children(p));
    zk_api!("Client::get_children_w", false, |z, p| z
        .get_children_w(p, |_e: WatchedEvent| {}));
    zk_api!("Client::get_children2", false, |z, p| z.get_children2(p));
    zk_api!("Client::get_children2_w", false, |z, p| z
        .get_children2_w(p, |_e: WatchedEvent| {}));
    zk_api!("Client::sync", false, |z, p| z.sync(p));
    zk_api!("Client::check", false, |z, p| z.check(p, 0));
    zk_api!("Client::get_acl", false, |z, p| z.get_acl(p));
    zk_api!("Client::set_acl", false, |z, p| z.set_acl(p, &Acl::open_unsafe(), None));
    zk_api!("Client::multi(create)", false, |z, p| z.multi(vec![Op::create(
        p,
        Vec::new(),
        Acl::open_unsafe(),
        CreateMode::Persistent
    )]));
    zk_api!("Client::multi(delete)", false, |z, p| z
        .multi(vec![Op::delete(p, None)]));
    zk_api!("Client::multi(set_data)", false, |z, p| z.multi(vec![Op::set_data(
        p,
        Vec::new(),
        None
    )]));
    zk_api!("Client::multi(check)", false, |z, p| z.multi(vec![Op::check(p, 0)]));
    zk_api!("Client::multi_results", false, |z, p| z
        .multi_results(vec![Op::delete(p, None)]));

    fw_api!("Framework create", false, |c, p| c.create().for_path(p));
    fw_api!("Framework create with parents", false, |c, p| c
        .create()
        .creating_parents_if_needed()
        .for_path(p));
    fw_api!("Framework create with containers", false, |c, p| c
        .create()
        .creating_parent_containers_if_needed()
        .for_path_with_stat(p));
    fw_api!("Framework protected sequential create", true, |c, p| c
        .create()
        .with_protection()
        .with_mode(CreateMode::EphemeralSequential)
        .for_path(p));
    fw_api!("Framework delete", false, |c, p| c.delete().for_path(p));
    fw_api!("Framework guaranteed delete", false, |c, p| c
        .delete()
        .guaranteed()
        .for_path(p));
    fw_api!("Framework delete with children", false, |c, p| c
        .delete()
        .deleting_children_if_needed()
        .for_path(p));
    fw_api!("Framework delete_in_background", false, |c, p| c
        .recipe()
        .delete_in_background(p));
    fw_api!("Framework get_data", false, |c, p| c.get_data(p));
    fw_api!("Framework get_data_w", false, |c, p| c
        .get_data_w(p, |_e: WatchedEvent| {}));
    fw_api!("Framework set_data", false, |c, p| c.set_data(p, b"x".to_vec(), None));
    fw_api!("Framework get_children", false, |c, p| c.get_children(p));
    fw_api!("Framework get_children_w", false, |c, p| c
        .get_children_w(p, |_e: WatchedEvent| {}));
    fw_api!("Framework check_exists", false, |c, p| c.check_exists(p));
    fw_api!("Framework check_exists_w", false, |c, p| c
        .check_exists_w(p, |_e: WatchedEvent| {}));

    lock_api!("InterProcessMutex::new", |c, p| InterProcessMutex::new(&c, p));
    lock_api!("InterProcessMutex::with_data", |c, p| InterProcessMutex::with_data(
        &c,
        p,
        b"d".to_vec()
    ));
    lock_api!("InterProcessSemaphoreV2::new", |c, p| InterProcessSemaphoreV2::new(
        &c, p, 2
    ));
    lock_api!("InterProcessSemaphoreMutex::new", |c, p| {
        InterProcessSemaphoreMutex::new(&c, p)
    });
    lock_api!("InterProcessReadWriteLock::new", |c, p| InterProcessReadWriteLock::new(
        &c, p
    ));
    lock_api!("InterProcessReadWriteLock::with_data", |c, p| {
        InterProcessReadWriteLock::with_data(&c, p, b"d")
    });
    lock_api!("MultiLock::from_paths", |c, p| MultiLock::from_paths(&c, &["/ok", p]));
    v
}

fn push(cases: &mut Vec<(String, CaseFn)>, name: impl Into<String>, f: impl FnOnce() -> Outcome + Send + 'static) {
    cases.push((name.into(), Box::new(f)));
}

/// Acquire-and-release cases for one lock kind, given raw acquire/release.
fn release_cases<L: InterProcessLock + 'static>(
    cases: &mut Vec<(String, CaseFn)>,
    kind: &str,
    make: impl Fn() -> L + Send + Sync + 'static,
    other_thread_may_release: bool,
) {
    let make = Arc::new(make);
    let m = make.clone();
    push(cases, format!("{kind}: release without acquire"), move || {
        want_err(m().release(), not_owner)
    });
    let m = make.clone();
    push(cases, format!("{kind}: double release"), move || {
        let l = m();
        ensure(
            l.acquire_holding(None).map_err(|e| e.to_string())?.is_some(),
            "not acquired",
        )?;
        l.release().map_err(|e| format!("first release: {e:?}"))?;
        want_err(l.release(), not_owner)
    });
    let m = make;
    push(cases, format!("{kind}: release from another thread"), move || {
        let l = m();
        ensure(
            l.acquire_holding(None).map_err(|e| e.to_string())?.is_some(),
            "not acquired",
        )?;
        let other = std::thread::scope(|s| s.spawn(|| l.release()).join().expect("release thread"));
        if other_thread_may_release {
            // Documented: its guard is Send and any thread may release it.
            other.map_err(|e| format!("another thread could not release: {e:?}"))?;
            want_err(l.release(), not_owner).map(|e| format!("allowed; then {e}"))
        } else {
            let r = want_err(other, not_owner);
            l.release().map_err(|e| format!("owner release after: {e:?}"))?;
            r
        }
    });
}

fn build_cases(server: &TestingServer) -> Vec<(String, CaseFn)> {
    let t = timing();
    let cs = server.connect_string();
    let fw = framework(&cs, t.connection());
    fw.block_until_connected(t.wait()).expect("connected");
    let zk = Client::connect(&cs, ClientConfig::default().with_session_timeout(t.session())).expect("client");
    zk.wait_connected_timeout(t.wait()).expect("client connected");
    let offline_cs = format!("127.0.0.1:{}", closed_port());
    let mut cases: Vec<(String, CaseFn)> = Vec::new();

    // Invalid paths, on every path-taking API.
    for (api, sequential, call) in path_apis(&fw, &zk) {
        for (what, p) in INVALID_PATHS {
            if sequential && *what == "trailing slash" {
                continue; // a sequential prefix may end with '/'
            }
            let call = call.clone();
            let p = p.to_string();
            push(&mut cases, format!("{api} {what:?} path"), move || call(&p));
        }
    }
    // The root is a valid path but no place for a lock.
    {
        let c = fw.clone();
        push(&mut cases, "InterProcessMutex at /", move || {
            want_err(InterProcessMutex::new(&c, "/"), lock_invalid_argument)
        });
        let c = fw.clone();
        push(&mut cases, "InterProcessReadWriteLock at /", move || {
            want_err(InterProcessReadWriteLock::new(&c, "/"), lock_invalid_argument)
        });
        let c = fw.clone();
        push(
            &mut cases,
            "InterProcessSemaphoreMutex at / (its locks under /locks)",
            move || {
                // Curator puts the semaphore's nodes under /locks and /leases: the
                // root itself is never a lock node, so this one is allowed.
                match InterProcessSemaphoreMutex::new(&c, "/") {
                    Ok(_) => Ok("accepted (nodes go under /locks and /leases)".into()),
                    Err(e) if lock_invalid_argument(&e) || lock_invalid_path(&e) => Ok(format!("{e:?}")),
                    Err(e) => Err(format!("unexpected {e:?}")),
                }
            },
        );
    }

    // Release misuse, every lock kind.
    {
        let c = fw.clone();
        release_cases(
            &mut cases,
            "InterProcessMutex",
            move || InterProcessMutex::new(&c, "/bi/release/mutex").unwrap(),
            false,
        );
        let c = fw.clone();
        release_cases(
            &mut cases,
            "ReadLock",
            move || {
                InterProcessReadWriteLock::new(&c, "/bi/release/rw")
                    .unwrap()
                    .read_lock()
                    .clone()
            },
            false,
        );
        let c = fw.clone();
        release_cases(
            &mut cases,
            "WriteLock",
            move || {
                InterProcessReadWriteLock::new(&c, "/bi/release/rw")
                    .unwrap()
                    .write_lock()
                    .clone()
            },
            false,
        );
        let c = fw.clone();
        release_cases(
            &mut cases,
            "InterProcessSemaphoreMutex",
            move || InterProcessSemaphoreMutex::new(&c, "/bi/release/sem").unwrap(),
            true,
        );
        let c = fw.clone();
        release_cases(
            &mut cases,
            "MultiLock",
            move || MultiLock::from_paths(&c, &["/bi/release/m1", "/bi/release/m2"]).unwrap(),
            false,
        );
        let c = fw.clone();
        push(
            &mut cases,
            "Lease: returned twice is impossible; release after the semaphore is dropped",
            move || {
                let s = InterProcessSemaphoreV2::new(&c, "/bi/release/lease", 1).map_err(|e| e.to_string())?;
                let lease = s.acquire().map_err(|e| e.to_string())?;
                drop(s);
                lease.release().map_err(|e| format!("{e:?}"))?;
                Ok("released".into())
            },
        );
    }

    // Zero and huge timeouts on every timed acquire: free and contended.
    {
        // A contended zero-timeout try is repeated while it says `NoAnswer`
        // (`zero_try`: honest on a loaded machine, no verdict).
        fn timed<G: Debug>(name: &str, r: Result<Option<G>, LockError>, want_some: bool) -> Result<String, String> {
            match r {
                Ok(Some(g)) if want_some => {
                    drop(g);
                    Ok(format!("{name}: acquired"))
                }
                Ok(None) if !want_some => Ok(format!("{name}: timed out")),
                other => Err(format!("{name}: {}", short(&format!("{other:?}")))),
            }
        }
        // A zero (or already passed) deadline on a free lock: one attempt,
        // whose replies get the deadline's grace (20 ms in all,
        // `zk_framework::deadline::GRACE`). A loaded machine can answer later;
        // the try is then a clean `Ok(None)` that leaves nothing behind (the
        // orphan check below), so try again, with a deadline: it must acquire,
        // and anything but `Ok` fails at once (seen under load: the embedded
        // server starved by an Apache suite running alongside).
        fn timed_free<G: Debug>(
            name: &str,
            attempt: impl FnMut() -> Result<Option<G>, LockError>,
        ) -> Result<String, String> {
            match zero_timeout_acquires_free(timing().scale(Duration::from_secs(5)), attempt) {
                Ok((_, 1)) => Ok(format!("{name}: acquired")),
                Ok((_, tries)) => Ok(format!("{name}: acquired (try {tries})")),
                Err(e) => Err(format!("{name}: {}", short(&e))),
            }
        }
        let c = fw.clone();
        push(
            &mut cases,
            "InterProcessMutex try_acquire_for/until with ZERO, MAX, now",
            move || {
                let a = InterProcessMutex::new(&c, "/bi/timeouts/mutex").unwrap();
                let b = InterProcessMutex::new(&c, "/bi/timeouts/mutex").unwrap();
                let mut out = vec![
                    timed_free("ZERO", || a.try_acquire_for(Duration::ZERO))?,
                    timed("MAX", a.try_acquire_for(Duration::MAX), true)?,
                    timed_free("until now", || a.try_acquire_until(Instant::now()))?,
                    timed_free("raw ZERO", || {
                        a.acquire_raw_for(Duration::ZERO).map(|h| h.then_some(()))
                    })?,
                ];
                a.release().map_err(|e| e.to_string())?;
                let held = a.acquire().map_err(|e| e.to_string())?;
                out.push(timed(
                    "contended ZERO",
                    zero_try(|| b.try_acquire_for(Duration::ZERO)),
                    false,
                )?);
                out.push(timed(
                    "contended until now",
                    b.try_acquire_until(Instant::now()),
                    false,
                )?);
                drop(held);
                Ok(out.join(", "))
            },
        );
        let c = fw.clone();
        push(
            &mut cases,
            "ReadLock/WriteLock try_acquire_for/until with ZERO, MAX, now",
            move || {
                let rw = InterProcessReadWriteLock::new(&c, "/bi/timeouts/rw").unwrap();
                let other = InterProcessReadWriteLock::new(&c, "/bi/timeouts/rw").unwrap();
                let mut out = vec![
                    timed_free("read ZERO", || rw.read_lock().try_acquire_for(Duration::ZERO))?,
                    timed("read MAX", rw.read_lock().try_acquire_for(Duration::MAX), true)?,
                    timed_free("read until now", || rw.read_lock().try_acquire_until(Instant::now()))?,
                    timed_free("write ZERO", || rw.write_lock().try_acquire_for(Duration::ZERO))?,
                    timed("write MAX", rw.write_lock().try_acquire_for(Duration::MAX), true)?,
                    timed_free("write until now", || rw.write_lock().try_acquire_until(Instant::now()))?,
                ];
                let held = rw.write_lock().acquire().map_err(|e| e.to_string())?;
                out.push(timed(
                    "contended read ZERO",
                    zero_try(|| other.read_lock().try_acquire_for(Duration::ZERO)),
                    false,
                )?);
                out.push(timed(
                    "contended write ZERO",
                    zero_try(|| other.write_lock().try_acquire_for(Duration::ZERO)),
                    false,
                )?);
                drop(held);
                Ok(out.join(", "))
            },
        );
        let c = fw.clone();
        push(
            &mut cases,
            "InterProcessSemaphoreMutex try_acquire_for/until with ZERO, MAX, now",
            move || {
                let a = InterProcessSemaphoreMutex::new(&c, "/bi/timeouts/semm").unwrap();
                let b = InterProcessSemaphoreMutex::new(&c, "/bi/timeouts/semm").unwrap();
                let mut out = vec![
                    timed_free("ZERO", || a.try_acquire_for(Duration::ZERO))?,
                    timed("MAX", a.try_acquire_for(Duration::MAX), true)?,
                    timed_free("until now", || a.try_acquire_until(Instant::now()))?,
                ];
                let held = a.acquire().map_err(|e| e.to_string())?;
                out.push(timed(
                    "contended ZERO",
                    zero_try(|| b.try_acquire_for(Duration::ZERO)),
                    false,
                )?);
                drop(held);
                Ok(out.join(", "))
            },
        );
        let c = fw.clone();
        push(
            &mut cases,
            "InterProcessSemaphoreV2 try_acquire_for/until/try_acquire_many_until with ZERO, MAX, now",
            move || {
                let s = InterProcessSemaphoreV2::new(&c, "/bi/timeouts/sem2", 2).unwrap();
                let mut out = vec![
                    timed_free("ZERO", || s.try_acquire_for(Duration::ZERO))?,
                    timed("MAX", s.try_acquire_for(Duration::MAX), true)?,
                    timed_free("until now", || s.try_acquire_until(Instant::now()))?,
                    timed_free("many(2, now)", || s.try_acquire_many_until(2, Instant::now()))?,
                ];
                out.push(want_err(s.acquire_many(0), lock_invalid_argument)?);
                out.push(want_err(s.acquire_many(3), lock_invalid_argument)?);
                let held = s.acquire_many(2).map_err(|e| e.to_string())?;
                out.push(timed(
                    "contended ZERO",
                    zero_try(|| s.try_acquire_for(Duration::ZERO)),
                    false,
                )?);
                drop(held);
                Ok(out.join(", "))
            },
        );
        let c = fw.clone();
        push(
            &mut cases,
            "MultiLock try_acquire_for/until with ZERO, MAX, now",
            move || {
                let m = MultiLock::from_paths(&c, &["/bi/timeouts/ma", "/bi/timeouts/mb"]).unwrap();
                let other = InterProcessMutex::new(&c, "/bi/timeouts/mb").unwrap();
                let mut out = vec![
                    timed_free("ZERO", || m.try_acquire_for(Duration::ZERO))?,
                    timed("MAX", m.try_acquire_for(Duration::MAX), true)?,
                    timed_free("until now", || m.try_acquire_until(Instant::now()))?,
                ];
                let held = other.acquire().map_err(|e| e.to_string())?;
                out.push(timed(
                    "contended ZERO",
                    zero_try(|| m.try_acquire_for(Duration::ZERO)),
                    false,
                )?);
                drop(held);
                ensure(!m.is_acquired_in_this_process(), "a contended multi-lock kept a member")?;
                Ok(out.join(", "))
            },
        );
        let c = fw.clone();
        push(
            &mut cases,
            "block_until_connected(ZERO / MAX) while connected",
            move || {
                c.block_until_connected(Duration::ZERO)
                    .map_err(|e| format!("ZERO: {e:?}"))?;
                c.block_until_connected(Duration::MAX)
                    .map_err(|e| format!("MAX: {e:?}"))?;
                Ok("Ok, Ok".into())
            },
        );
        let z = zk.clone();
        push(
            &mut cases,
            "wait_connected_timeout(ZERO / MAX) while connected",
            move || {
                z.wait_connected_timeout(Duration::ZERO)
                    .map_err(|e| format!("ZERO: {e:?}"))?;
                z.wait_connected_timeout(Duration::MAX)
                    .map_err(|e| format!("MAX: {e:?}"))?;
                z.wait_connected(Instant::now()).map_err(|e| format!("now: {e:?}"))?;
                Ok("Ok, Ok, Ok".into())
            },
        );
        let ocs = offline_cs.clone();
        push(&mut cases, "block_until_connected(ZERO) unreachable", move || {
            let c = framework(&ocs, Duration::from_millis(300));
            let r = want_err(c.block_until_connected(Duration::ZERO), |e| {
                *e == ZkError::ConnectTimeout { waited: Duration::ZERO }
            });
            c.close();
            r
        });
        let ocs = offline_cs.clone();
        push(
            &mut cases,
            "block_until_connected(MAX) unreachable, closed meanwhile",
            move || {
                let c = framework(&ocs, Duration::from_millis(300));
                let r = std::thread::scope(|s| {
                    let h = s.spawn(|| c.block_until_connected(Duration::MAX));
                    std::thread::yield_now();
                    c.close();
                    h.join().expect("waiter")
                });
                want_err(r, |e| *e == ZkError::Closed)
            },
        );
        let ocs = offline_cs.clone();
        push(&mut cases, "wait_connected_timeout(ZERO) unreachable", move || {
            let z = Client::connect(&ocs, ClientConfig::default()).map_err(|e| e.to_string())?;
            let r = want_err(z.wait_connected_timeout(Duration::ZERO), |e| {
                matches!(e, ZkError::ConnectionLoss | ZkError::OperationTimeout)
            });
            z.close();
            r
        });
        let ocs = offline_cs.clone();
        push(
            &mut cases,
            "wait_connected_timeout(MAX) unreachable, closed meanwhile",
            move || {
                let z = Client::connect(&ocs, ClientConfig::default()).map_err(|e| e.to_string())?;
                let r = std::thread::scope(|s| {
                    let h = s.spawn(|| z.wait_connected_timeout(Duration::MAX));
                    std::thread::yield_now();
                    z.close();
                    h.join().expect("waiter")
                });
                want_err(r, |e| *e == ZkError::Closed)
            },
        );
    }

    // Garbage connect strings.
    for bad in [
        "",
        "   ",
        ",",
        "::::",
        "host:",
        "host:notaport",
        "host:0",
        "host:65536",
        "host:-1",
        "[::1",
        "bad host:1",
        "127.0.0.1:2181/bad/",
        "127.0.0.1:2181//x",
        "\u{0}",
        "\u{1F4A5}:1",
    ] {
        push(
            &mut cases,
            format!("CuratorFramework connect string {bad:?}"),
            move || {
                let r = CuratorFramework::builder().connect_string(bad).build();
                if let Ok(c) = &r {
                    c.close();
                }
                want_err(r, |e| matches!(e, ZkError::InvalidConnectString { .. }))
            },
        );
        push(&mut cases, format!("Client connect string {bad:?}"), move || {
            let r = Client::connect(bad, ClientConfig::default());
            if let Ok(c) = &r {
                c.close();
            }
            want_err(r, |e| matches!(e, ZkError::InvalidConnectString { .. }))
        });
    }
    push(&mut cases, "CuratorFramework without a connect string", || {
        want_err(CuratorFramework::builder().build(), |e| {
            matches!(e, ZkError::InvalidConnectString { .. })
        })
    });

    // An unreachable server: building works, operations fail after the
    // connection timeout with a typed error.
    {
        let ocs = offline_cs.clone();
        push(&mut cases, "unreachable server: framework get_data", move || {
            let connection = Duration::from_millis(300);
            let c = framework(&ocs, connection);
            let start = Instant::now();
            // The cause: the server refuses connections.
            let r = want_err(
                c.get_data("/a"),
                |e| matches!(e, ZkError::ConnectFailed { reason } if reason.contains("refused")),
            );
            let took = start.elapsed();
            c.close();
            ensure(took >= connection, format!("gave up after {took:?}"))?;
            r.map(|s| format!("{s} after {took:?}"))
        });
        let ocs = offline_cs.clone();
        push(
            &mut cases,
            "unreachable server: every lock kind's try_acquire",
            move || {
                let c = framework(&ocs, Duration::from_millis(300));
                // Not `Ok(None)` ("held by someone else"): the cause.
                let conn_loss = |e: &LockError| matches!(e, LockError::ZooKeeper(ZkError::ConnectFailed { reason }) if reason.contains("refused"));
                let d = Duration::from_secs(5);
                let out = [
                    want_err(
                        InterProcessMutex::new(&c, "/u/m").unwrap().try_acquire_for(d),
                        conn_loss,
                    )?,
                    want_err(
                        InterProcessReadWriteLock::new(&c, "/u/rw")
                            .unwrap()
                            .read_lock()
                            .try_acquire_for(d),
                        conn_loss,
                    )?,
                    want_err(
                        InterProcessReadWriteLock::new(&c, "/u/rw")
                            .unwrap()
                            .write_lock()
                            .try_acquire_for(d),
                        conn_loss,
                    )?,
                    want_err(
                        InterProcessSemaphoreMutex::new(&c, "/u/s").unwrap().try_acquire_for(d),
                        conn_loss,
                    )?,
                    want_err(
                        InterProcessSemaphoreV2::new(&c, "/u/s2", 3).unwrap().try_acquire_for(d),
                        conn_loss,
                    )?,
                    want_err(
                        MultiLock::from_paths(&c, &["/u/a", "/u/b"]).unwrap().try_acquire_for(d),
                        conn_loss,
                    )?,
                ];
                c.close();
                Ok(out.join(", "))
            },
        );
        let ocs = offline_cs.clone();
        push(&mut cases, "unreachable server: Client calls fail fast", move || {
            let z = Client::connect(&ocs, ClientConfig::default()).map_err(|e| e.to_string())?;
            let r = want_err(z.get_data("/a"), |e| *e == ZkError::ConnectionLoss);
            z.close();
            r
        });
        let ocs = offline_cs.clone();
        push(&mut cases, "a closed client: typed Closed everywhere", move || {
            let closed = framework(&ocs, Duration::from_millis(300));
            closed.close();
            let out = [
                want_err(closed.get_data("/a"), |e| *e == ZkError::Closed)?,
                want_err(closed.block_until_connected(Duration::MAX), |e| *e == ZkError::Closed)?,
                want_err(
                    InterProcessMutex::new(&closed, "/c/m")
                        .unwrap()
                        .try_acquire_for(Duration::MAX),
                    |e| matches!(e, LockError::ZooKeeper(ZkError::Closed)),
                )?,
            ];
            Ok(out.join(", "))
        });
    }

    // Data over 1 MiB.
    {
        let c = fw.clone();
        push(&mut cases, "framework create with 1 MiB + 1 of data", move || {
            want_err(c.create().with_data(vec![0; BIG]).for_path("/bi/big"), |e| {
                matches!(e, ZkError::DataTooLarge { .. })
            })
        });
        let c = fw.clone();
        push(&mut cases, "framework set_data with 1 MiB + 1 of data", move || {
            want_err(c.set_data("/bi/big", vec![0; BIG], None), |e| {
                matches!(e, ZkError::DataTooLarge { .. })
            })
        });
        let z = zk.clone();
        push(
            &mut cases,
            "Client create / set_data / multi with 1 MiB + 1 of data",
            move || {
                let big = vec![0u8; BIG];
                let too_large = |e: &ZkError| matches!(e, ZkError::DataTooLarge { .. });
                Ok([
                    want_err(
                        z.create("/bi/big", &big, &Acl::open_unsafe(), CreateMode::Persistent),
                        too_large,
                    )?,
                    want_err(z.set_data("/bi/big", &big, None), too_large)?,
                    want_err(
                        z.multi(vec![Op::create(
                            "/bi/big",
                            big.clone(),
                            Acl::open_unsafe(),
                            CreateMode::Persistent,
                        )]),
                        |e| {
                            matches!(
                                e,
                                ZkError::DataTooLarge { .. } | ZkError::Keeper { .. } | ZkError::BadArguments { .. }
                            )
                        },
                    )?,
                ]
                .join(", "))
            },
        );
        let c = fw.clone();
        push(&mut cases, "lock nodes carrying 1 MiB + 1 of data", move || {
            let too_large = |e: &LockError| matches!(e, LockError::ZooKeeper(ZkError::DataTooLarge { .. }));
            let d = Duration::from_secs(5);
            Ok([
                want_err(
                    InterProcessMutex::with_data(&c, "/bi/bigdata/m", vec![1; BIG])
                        .unwrap()
                        .try_acquire_for(d),
                    too_large,
                )?,
                want_err(
                    InterProcessReadWriteLock::with_data(&c, "/bi/bigdata/rw", vec![1; BIG])
                        .unwrap()
                        .write_lock()
                        .try_acquire_for(d),
                    too_large,
                )?,
                want_err(
                    InterProcessSemaphoreV2::with_data(&c, "/bi/bigdata/s", 2, vec![1; BIG])
                        .unwrap()
                        .try_acquire_for(d),
                    too_large,
                )?,
            ]
            .join(", "))
        });
        let c = fw.clone();
        push(&mut cases, "data of exactly the frame limit (1 MiB - 1)", move || {
            // Fits the client's data check but not a frame with its headers:
            // whatever happens must be typed and bounded, and the client must
            // still work afterwards.
            let r = c.create().with_data(vec![0; 0xfffff]).for_path("/bi/limit");
            let first = match &r {
                Ok(_) => {
                    c.delete()
                        .for_path("/bi/limit")
                        .map_err(|e| format!("cleanup: {e:?}"))?;
                    "created".to_string()
                }
                Err(e) => format!("{e:?}"),
            };
            c.block_until_connected(timing().wait())
                .map_err(|e| format!("reconnect: {e:?}"))?;
            c.check_exists("/").map_err(|e| format!("after: {e:?}"))?;
            Ok(format!("{first}; the client still works"))
        });
    }

    // Builder arguments.
    for ns in ["a/b", "/a", "a/", "", ".", ".."] {
        push(&mut cases, format!("namespace {ns:?}"), move || {
            let r = CuratorFramework::builder()
                .connect_string("127.0.0.1:2181")
                .namespace(ns)
                .build();
            if let Ok(c) = &r {
                c.close();
            }
            want_err(r, |e| {
                matches!(e, ZkError::InvalidArgument(_) | ZkError::InvalidPath(_))
            })
        });
    }
    for (what, d) in [("ZERO", Duration::ZERO), ("MAX", Duration::MAX)] {
        push(&mut cases, format!("session timeout {what}"), move || {
            want_err(
                CuratorFramework::builder()
                    .connect_string("127.0.0.1:2181")
                    .session_timeout(d)
                    .build(),
                |e| matches!(e, ZkError::InvalidArgument(_)),
            )
        });
        push(&mut cases, format!("connection timeout {what}"), move || {
            want_err(
                CuratorFramework::builder()
                    .connect_string("127.0.0.1:2181")
                    .connection_timeout(d)
                    .build(),
                |e| matches!(e, ZkError::InvalidArgument(_)),
            )
        });
        push(&mut cases, format!("Client session timeout {what}"), move || {
            want_err(
                Client::connect("127.0.0.1:2181", ClientConfig::default().with_session_timeout(d)),
                |e| matches!(e, ZkError::InvalidArgument(_)),
            )
        });
    }
    push(&mut cases, "retry policy with huge sleeps does not overflow", || {
        let r = ExponentialBackoffRetry::with_max_sleep(Duration::MAX, 29, Duration::MAX);
        let d = r.sleep_for(29, u64::MAX);
        let r2 = ExponentialBackoffRetry::new(Duration::from_secs(u64::MAX / 4), u32::MAX);
        Ok(format!("sleep_for(29, MAX) = {d:?}; {}", short(&format!("{r2:?}"))))
    });

    // Recipe arguments.
    {
        let c = fw.clone();
        push(&mut cases, "InterProcessSemaphoreV2 with zero leases", move || {
            want_err(InterProcessSemaphoreV2::new(&c, "/bi/zero", 0), lock_invalid_argument)
        });
        push(&mut cases, "empty MultiLock::new", || {
            want_err(MultiLock::new(Vec::new()), lock_invalid_argument)
        });
        let c = fw.clone();
        push(&mut cases, "empty MultiLock::from_paths", move || {
            want_err(MultiLock::from_paths(&c, &[]), lock_invalid_argument)
        });
        let c = fw.clone();
        push(&mut cases, "MultiLock with two distinct locks on one path", move || {
            want_err(
                MultiLock::from_paths(&c, &["/bi/dup", "/bi/dup"]),
                lock_invalid_argument,
            )
        });
        let c = fw.clone();
        push(&mut cases, "read lock holder asks for the write lock", move || {
            let rw = InterProcessReadWriteLock::new(&c, "/bi/upgrade").unwrap();
            let _r = rw.read_lock().acquire().map_err(|e| e.to_string())?;
            want_err(rw.write_lock().try_acquire_for(Duration::MAX), |e| {
                matches!(e, LockError::UpgradeRefused { .. })
            })
        });
    }
    cases
}

#[test]
fn bad_input_table() {
    let _ = env_logger::builder().is_test(true).try_init();
    let t = timing();
    let server = TestingServer::start_backend(Backend::Embedded).unwrap();
    let embedded = server.embedded().unwrap();
    let base: Vec<String> = embedded.dump_tree().into_iter().map(|(p, _, _)| p).collect();
    let cases = build_cases(&server);
    let limit = t.scale(Duration::from_secs(20));
    let mut bad = Vec::new();
    let total = cases.len();
    println!("{:<6} {:>8}  case — outcome", "result", "time");
    for (name, f) in cases {
        let (verdict, detail, took) = run_case(&name, f, limit);
        let tag = match verdict {
            Verdict::Ok => "ok",
            Verdict::Fail => "FAIL",
            Verdict::Panic => "PANIC",
            Verdict::Hang => "HANG",
        };
        println!("{tag:<6} {:>6}ms  {name} — {detail}", took.as_millis());
        if tag != "ok" {
            bad.push(format!("{tag}: {name} — {detail}"));
        }
    }
    // No orphan: every node the cases created is gone (containers are swept
    // by the server once empty).
    let leftover = || -> Vec<String> {
        embedded
            .dump_tree()
            .into_iter()
            .map(|(p, _, _)| p)
            .filter(|p| !base.contains(p))
            .collect()
    };
    let clean = wait_until(t.wait(), || leftover().is_empty());
    println!(
        "{total} cases, {} not as documented; tree after: {:?}",
        bad.len(),
        leftover()
    );
    assert!(
        bad.is_empty(),
        "{} of {total} cases misbehaved:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(clean, "orphan nodes: {:?}", leftover());
}
