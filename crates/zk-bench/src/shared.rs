//! The "registration and shared state" scenarios (issue 33 item 9), run only
//! when named (`--only counter,registration,barrier`), ours and then each
//! peer asked for (Curator 5.4 and kazoo 2.8 through their bench programs,
//! the same protocol as the other process peers):
//!
//! * **`counter`**: [`COUNTER_SESSIONS`] sessions (8, then 32; each its own
//!   client, a thread each) increment one counter as fast as they can for
//!   `--seconds` after `--warmup`; increments/s that succeeded, those that
//!   the retry policy gave up on, optimistic tries per success, and the
//!   server's requests per success (embedded: also its `getData` and
//!   `setData` per success; Apache: `mntr`'s packets, pings included). Ours
//!   is [`DistributedAtomicLong`] and also reports how many successes were
//!   proven by a read-back and how many ended `Unknown` (both 0 without
//!   faults); Curator's is its `DistributedAtomicLong`; both with each retry
//!   policy of [`RETRIES`] (Curator's counter has no default: its
//!   constructor takes one). kazoo's is `kazoo.recipe.counter.Counter`,
//!   which has no policy of its own: it retries a `BadVersion` through the
//!   client's command retry (kazoo's default: unlimited tries, 0.1 s first
//!   delay doubling, ±40 % jitter). After each run the counter's value is
//!   compared with the successes counted (`final_equals_applied`).
//! * **`registration`**: an ephemeral `PersistentNode` (ours; Curator's
//!   `PersistentNode` with `CreateMode.EPHEMERAL`) whose session the server
//!   expires (the harness's `expire_session`, as the failover tests do):
//!   the time from just before the expiry to an observer session (a client
//!   of this process, the same for every peer) seeing the node again, owned
//!   by another session (and from the observer's notification of the
//!   node's deletion to that); p50/p99/max over `--expiries` (after 2 unmeasured),
//!   each session [`SETTLE`] old when it is expired.
//!   Ours also reports the time to its own `Registered` event. kazoo has no
//!   recipe that re-creates a node after an expiry: one skip line.
//! * **`barrier`**: a double barrier of `--barrier-members` members (each
//!   its own client, a thread each): all enter, all leave; the round time
//!   from the release of every member (an in-process barrier) to the last
//!   `leave` returning; p50/p99 over `--barrier-rounds` rounds after a tenth
//!   as many unmeasured, and the server's requests per round.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use zk_framework::proto::OpCode;
use zk_framework::{CreateMode, CuratorFramework, EventType, ExponentialBackoffRetry, RetryNTimes};
use zk_recipes::PersistentNode;
use zk_recipes::{DistributedAtomicLong, DistributedDoubleBarrier, Outcome, Proof};
use zk_testing::TestingServer;

use crate::measure::{packets_received, percentile, us};
use crate::ours::client;
use crate::Ctx;

/// The contending sessions of the counter scenario.
pub const COUNTER_SESSIONS: [usize; 2] = [8, 32];

/// A retry policy given to ours and Curator's counter alike.
#[derive(Debug, Clone, Copy)]
pub enum Retry {
    /// `ExponentialBackoffRetry(100 ms, 3)`: the policy every client of this
    /// bench (and Curator's examples) uses.
    Exp100ms3,
    /// `RetryNTimes(1000, 0 ms)`: retry at once (what the recipe and the
    /// server cost, without sleeps).
    N1000Sleep0,
}

/// The policies, in the order run.
pub const RETRIES: [Retry; 2] = [Retry::Exp100ms3, Retry::N1000Sleep0];

impl Retry {
    /// Its name in the output keys and on the peers' command lines.
    pub fn key(self) -> &'static str {
        match self {
            Retry::Exp100ms3 => "exp_100ms_3",
            Retry::N1000Sleep0 => "n_1000_0ms",
        }
    }
}

/// The server's request counts: all (Apache: `mntr` packets, pings
/// included), and on the embedded server `getData` and `setData` alone.
#[derive(Debug, Clone, Copy)]
pub struct Ops {
    total: u64,
    reads: Option<u64>,
    writes: Option<u64>,
}

impl Ops {
    /// The counts now (`None`: not countable, e.g. `--connect`ed elsewhere
    /// without `mntr`).
    pub fn now(server: Option<&TestingServer>, cs: &str) -> Option<Ops> {
        let e = server.and_then(|s| s.embedded());
        let st = e.map(|e| e.stats());
        Some(Ops {
            total: packets_received(server, cs)?,
            reads: st.as_ref().map(|s| s.requests(OpCode::GetData)),
            writes: st.as_ref().map(|s| s.requests(OpCode::SetData)),
        })
    }

    /// What was counted from `a` to `b`.
    pub fn between(a: Option<Ops>, b: Option<Ops>) -> Option<Ops> {
        let (a, b) = (a?, b?);
        let d = |x: Option<u64>, y: Option<u64>| x.zip(y).map(|(x, y)| y - x);
        Some(Ops {
            total: b.total - a.total,
            reads: d(a.reads, b.reads),
            writes: d(a.writes, b.writes),
        })
    }

    /// Prints the counts per `per` under `key` (`…requests_per_increment`).
    pub fn report(d: Option<Ops>, key: &str, per_what: &str, per: u64) {
        let Some(d) = d else { return };
        let per = per.max(1) as f64;
        println!("{key}.requests_per_{per_what}={:.2}", d.total as f64 / per);
        if per_what != "increment" {
            return;
        }
        if let Some(r) = d.reads {
            println!("{key}.get_data_per_{per_what}={:.2}", r as f64 / per);
        }
        if let Some(w) = d.writes {
            println!("{key}.set_data_per_{per_what}={:.2}", w as f64 / per);
        }
    }
}

/// The counter's path for `who` (ours, curator, kazoo: each its own, as
/// kazoo's counter writes decimal text, not Curator's 8 bytes).
pub fn counter_path(who: &str, sessions: usize) -> String {
    format!("/bench/counter/{who}-{sessions}")
}

/// The tallies of the measured window.
#[derive(Default)]
struct Tally {
    applied: AtomicU64,
    read_back: AtomicU64,
    unknown: AtomicU64,
    not_applied: AtomicU64,
    tries: AtomicU64,
    errors: AtomicU64,
    /// Successes over the whole run (warm-up included), for the final check.
    all_applied: AtomicU64,
}

/// Ours: the counter scenario.
pub fn counter(x: &Ctx) {
    for sessions in COUNTER_SESSIONS {
        for retry in RETRIES {
            counter_once(x, sessions, retry);
        }
    }
}

fn counter_once(x: &Ctx, sessions: usize, retry: Retry) {
    let path = counter_path("ours", sessions);
    let key = format!("counter.sessions_{sessions}.retry_{}", retry.key());
    let clients: Vec<CuratorFramework> = (0..sessions).map(|_| client(&x.cs)).collect();
    let make = |c: &CuratorFramework| {
        match retry {
            Retry::Exp100ms3 => {
                DistributedAtomicLong::new(c, &path, ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
            }
            Retry::N1000Sleep0 => DistributedAtomicLong::new(c, &path, RetryNTimes::new(1000, Duration::ZERO)),
        }
        .expect("counter")
    };
    make(&clients[0]).force_set(0).expect("reset the counter");
    // 0: warm-up, 1: measured, 2: stop.
    let phase = AtomicU8::new(0);
    let t = Tally::default();
    let (t0, t1, ops) = std::thread::scope(|s| {
        for c in &clients {
            let (phase, t, make) = (&phase, &t, &make);
            s.spawn(move || {
                let n = make(c);
                while phase.load(Ordering::Relaxed) < 2 {
                    let r = n.increment();
                    let measured = phase.load(Ordering::Relaxed) == 1;
                    let add = |a: &AtomicU64| {
                        if measured {
                            a.fetch_add(1, Ordering::Relaxed);
                        }
                    };
                    match r {
                        Ok(v) => {
                            if measured {
                                t.tries.fetch_add(v.stats().optimistic_tries.into(), Ordering::Relaxed);
                            }
                            match v.outcome() {
                                Outcome::Applied { proof } => {
                                    t.all_applied.fetch_add(1, Ordering::Relaxed);
                                    add(&t.applied);
                                    if *proof == Proof::ReadBack {
                                        add(&t.read_back);
                                    }
                                }
                                Outcome::NotApplied => add(&t.not_applied),
                                // Unknown, and any outcome this bench does not know.
                                _ => add(&t.unknown),
                            }
                        }
                        Err(_) => add(&t.errors),
                    }
                }
            });
        }
        std::thread::sleep(x.warmup);
        let o0 = Ops::now(x.server(), &x.cs);
        phase.store(1, Ordering::Relaxed);
        let t0 = Instant::now();
        std::thread::sleep(x.run);
        phase.store(2, Ordering::Relaxed);
        let t1 = Instant::now();
        let o1 = Ops::now(x.server(), &x.cs);
        (t0, t1, Ops::between(o0, o1))
    });
    let secs = (t1 - t0).as_secs_f64();
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let applied = get(&t.applied);
    println!("{key}.increments_per_s={:.0}", applied as f64 / secs);
    println!("{key}.applied={applied}");
    println!("{key}.not_applied={}", get(&t.not_applied));
    println!("{key}.errors={}", get(&t.errors));
    println!("{key}.read_back={}", get(&t.read_back));
    println!("{key}.unknown={}", get(&t.unknown));
    println!(
        "{key}.tries_per_increment={:.2}",
        get(&t.tries) as f64 / applied.max(1) as f64
    );
    Ops::report(ops, &key, "increment", applied);
    let fin = make(&clients[0]).get().expect("read the counter");
    println!(
        "{key}.final_equals_applied={}",
        u64::try_from(fin).ok() == Some(get(&t.all_applied))
    );
    for c in clients {
        c.close();
    }
}

/// The registration's path for `who`.
pub fn registration_path(who: &str) -> String {
    format!("/bench/registration/{who}")
}

/// Unmeasured expiries before the measured ones.
pub const WARM_EXPIRIES: usize = 2;

/// How long a session lives before it is expired (every peer alike). Our
/// client reconnects at once after a connection that lived at least 1 s
/// (zk-framework's `STABLE`), after 100 ms (±20 %) otherwise: expiries back
/// to back would measure that pause, which a service whose session had been
/// up does not see.
pub const SETTLE: Duration = Duration::from_millis(1500);

/// Why kazoo has no registration rows.
pub const KAZOO_NO_REGISTRATION: &str = "kazoo 2.8 has no recipe that re-creates a node after a session expiry \
                                         (Party/ShallowParty join once; a KazooState.LOST listener would be \
                                         user code, not kazoo's)";

/// Waits until `path` exists and is owned by `session`.
pub fn await_owned(obs: &CuratorFramework, path: &str, session: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(st)) = obs.check_exists(path) {
            if st.ephemeral_owner == session {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{path} not owned by 0x{session:x} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Expires `session` and returns the times from just before the expiry, and
/// from the observer's notification of the node's deletion, to the observer
/// seeing `path` again, owned by another session: the time of the
/// `NodeCreated` notification when the node was seen missing first, else of
/// the `exists` reply that showed it. On Apache the harness expires a
/// session by attaching to it from a second connection and closing it, and
/// a client that reconnects at once takes the session back first (the
/// harness attaches again): the time from the deletion leaves that out.
pub fn expire_and_observe(
    server: &TestingServer,
    obs: &CuratorFramework,
    path: &str,
    session: i64,
    password: &[u8],
) -> (Duration, Duration) {
    let watch = |obs: &CuratorFramework| {
        let (tx, rx) = mpsc::channel();
        let st = obs
            .check_exists_w(path, move |ev: zk_framework::WatchedEvent| {
                let _ = tx.send((ev.event_type, Instant::now()));
            })
            .expect("exists");
        (st, rx)
    };
    // The watch that hears the deletion, set while the node is ours.
    let (st, mut rx) = watch(obs);
    assert_eq!(
        st.map(|s| s.ephemeral_owner),
        Some(session),
        "{path} is not the session's"
    );
    let t0 = Instant::now();
    server.expire_session(session, password).expect("expire the session");
    let deadline = t0 + Duration::from_secs(120);
    let mut deleted_at = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (ev, at) = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("{path} not back within 120 s of the expiry"));
        if ev == EventType::NodeDeleted && deleted_at.is_none() {
            deleted_at = Some(at);
        }
        let created_at = (ev == EventType::NodeCreated).then_some(at);
        let (st, next) = watch(obs);
        let seen = Instant::now();
        if let Some(st) = st {
            if st.ephemeral_owner != session {
                let back = created_at.unwrap_or(seen);
                let deleted = deleted_at.unwrap_or(t0);
                return (back - t0, back.saturating_duration_since(deleted));
            }
        }
        rx = next;
    }
}

/// Prints the p50/p99/max of `v` (sorted here) under `key`.
pub fn report_times(key: &str, v: &mut [Duration]) {
    v.sort();
    println!("{key}.p50_us={}", us(percentile(v, 0.5)));
    println!("{key}.p99_us={}", us(percentile(v, 0.99)));
    println!("{key}.max_us={}", us(v.last().copied().unwrap_or_default()));
    println!("{key}.n={}", v.len());
}

/// The server whose sessions this process can expire, or a skip line.
pub fn expiring_server<'a>(x: &'a Ctx, prefix: &str) -> Option<&'a TestingServer> {
    let s = x.server();
    if s.is_none() {
        println!("{prefix}registration.skipped=needs the server this process starts (--connect/--ensemble: no expire)");
    }
    s
}

/// Ours: the registration scenario.
pub fn registration(x: &Ctx) {
    let Some(server) = expiring_server(x, "") else { return };
    let path = registration_path("ours");
    let c = client(&x.cs);
    let obs = client(&x.cs);
    let node = PersistentNode::builder(&c, &path, CreateMode::Ephemeral)
        .data(b"svc".to_vec())
        .build()
        .expect("node");
    let events = node.events();
    node.start().expect("start the node");
    assert!(node
        .wait_for_initial_create_for(Duration::from_secs(30))
        .expect("initial create"));
    let mut back = Vec::new();
    let mut back_from_deleted = Vec::new();
    let mut registered = Vec::new();
    for i in 0..WARM_EXPIRIES + x.o.expiries {
        let session = c.session_id();
        await_owned(&obs, &path, session);
        std::thread::sleep(SETTLE);
        // What the node told before this round.
        while events.try_recv().is_ok() {}
        let password = c.zookeeper_client().session_password();
        let t0 = Instant::now();
        let (d, from_deleted) = expire_and_observe(server, &obs, &path, session, &password);
        // Its own word: the first Registered after it said otherwise.
        let mut was_down = false;
        let reg = loop {
            match events.recv_timeout(Duration::from_secs(60)) {
                Ok(r) if r.is_registered() && was_down => break Instant::now() - t0,
                Ok(r) => was_down |= !r.is_registered(),
                Err(_) => panic!("no Registered event within 60 s of the expiry"),
            }
        };
        if i >= WARM_EXPIRIES {
            back.push(d);
            back_from_deleted.push(from_deleted);
            registered.push(reg);
        }
    }
    report_times("registration.expiry_to_node_back", &mut back);
    report_times("registration.deleted_to_node_back", &mut back_from_deleted);
    report_times("registration.expiry_to_registered_event", &mut registered);
    println!("registration.creates={}", node.creates());
    node.close().expect("close");
    c.close();
    obs.close();
}

/// The barrier's path for `who`.
pub fn barrier_path(who: &str) -> String {
    format!("/bench/barrier/{who}")
}

/// Unmeasured rounds before the measured ones.
pub fn warm_rounds(x: &Ctx) -> usize {
    (x.o.barrier_rounds / 10).max(2)
}

/// Ours: the barrier scenario.
pub fn barrier(x: &Ctx) {
    let m = usize::from(x.o.barrier_members);
    let path = barrier_path("ours");
    let key = format!("barrier.members_{m}");
    let clients: Vec<CuratorFramework> = (0..m).map(|_| client(&x.cs)).collect();
    let warm = warm_rounds(x);
    let rounds = warm + x.o.barrier_rounds;
    let start = Arc::new(Barrier::new(m + 1));
    let end = Arc::new(Barrier::new(m + 1));
    let failed = AtomicU64::new(0);
    let mut v = Vec::with_capacity(x.o.barrier_rounds);
    let mut ops = None;
    std::thread::scope(|s| {
        for c in &clients {
            let (start, end, failed, path) = (&start, &end, &failed, &path);
            s.spawn(move || {
                let b = DistributedDoubleBarrier::new(c, path, m).expect("barrier");
                for _ in 0..rounds {
                    start.wait();
                    let ok = b.enter_for(Duration::from_secs(60)).unwrap_or(false)
                        && b.leave_for(Duration::from_secs(60)).unwrap_or(false);
                    if !ok {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    end.wait();
                }
            });
        }
        let mut o0 = None;
        for r in 0..rounds {
            if r == warm {
                o0 = Ops::now(x.server(), &x.cs);
            }
            start.wait();
            let t0 = Instant::now();
            end.wait();
            if r >= warm {
                v.push(t0.elapsed());
            }
        }
        ops = Ops::between(o0, Ops::now(x.server(), &x.cs));
    });
    report_times(&format!("{key}.round"), &mut v);
    println!("{key}.failed_member_rounds={}", failed.load(Ordering::Relaxed));
    Ops::report(ops, &key, "round", x.o.barrier_rounds as u64);
    for c in clients {
        c.close();
    }
}
