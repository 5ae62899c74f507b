//! The `failover` scenario (only when named: `--only failover`): leader
//! election, ours ([`zk_recipes::LeaderLatch`]) and then, right
//! after on the same server, each peer asked for with `--peers`:
//!
//! - `curator`: Curator 5.4's `LeaderLatch` (`scripts/bench/CuratorLeaderBench.java`,
//!   driven over its stdin/stdout); keys `curator.failover.`.
//! - `zookeeper`: the `zookeeper` 0.8 crate's own
//!   `zookeeper::recipes::leader::LeaderLatch`, in this process; it has no
//!   leadership events, so the next leader is found by polling
//!   `has_leadership()` with a 50 µs sleep between polls (its figures include
//!   that granularity; see `zookeeper08`); keys `zookeeper08.failover.`.
//! - `kazoo`: kazoo 2.8's `Election` (its `Lock` underneath;
//!   `scripts/bench/kazoo_bench.py failover`, the protocol of
//!   `CuratorLeaderBench`); a leader steps down by returning from its leader
//!   function and rejoins by calling `run()` again; keys `kazoo.failover.`
//!   (`kazoo.failover.skipped=` without python3 and its kazoo module).
//! - `zookeeper-client`: one `zkclient.failover.skipped=` line: the 0.11
//!   crate has no election recipe (only `Client::lock`).
//!
//! Every implementation gets the same three measurements (a peer's event is
//! its own kind of "now leader": ours `LeaderEvent::Leader` on `events()`,
//! Curator's `LeaderLatchListener.isLeader`, zookeeper 0.8's
//! `has_leadership()` turning true, kazoo's leader function starting; a
//! peer's "close" is its own way of leaving: `close()`, `stop()`, returning
//! from the leader function):
//!
//! - close failover: `--failover-n` participants (8), each on its own client (session); the
//!   leader calls `close()`; the time from that call to the next leader's
//!   "is leader" event, p50/p99 over `--failovers` failovers
//!   (after a tenth as many unmeasured); the closed participant rejoins with a
//!   new latch on its client, and the next failover starts once every node is
//!   back. The server's watch notifications per failover (the embedded
//!   server's count, or Apache's `mntr` counters): one is the goal (only the
//!   next participant woken). On the embedded server, its requests per
//!   failover too (the rejoin included).
//! - kill failover: every participant connects through a fault proxy of its
//!   own; the leader's proxy is frozen (a dead host: no reset, the session
//!   expires on the server's clock), and the time from the freeze to the next
//!   leader's event is measured, with the session timeout ([`KILL_SESSION`]).
//! - idle cost: [`IDLE_N`] participants on [`IDLE_N`] clients (session
//!   timeout [`SESSION`]) left alone for `--idle-seconds`: the frames the
//!   server received per minute (pings included; the embedded server's
//!   `packets_received`, or Apache's `mntr` `zk_packets_received`).
//!
//! Output keys: `failover.` (ours), `curator.failover.`,
//! `zookeeper08.failover.`, `kazoo.failover.`, each with
//! `close_nN.{p50,p99,max}_us` and `.failovers`, `close_nN.close_call.*` (ours,
//! Curator: the `close()` call alone; `close_nN.stop_call.*` for zookeeper
//! 0.8's `stop()`; kazoo has no call, its leader function returns),
//! `close_nN.notifications_per_failover`, `close_nN.requests_with_rejoin_per_failover`,
//! `close_nN.ops_per_failover[_with_rejoin]`, `close_nN.leader_node_watchers[_other_sessions]`,
//! `kill_nN_session_4000ms.*` and `idle_n100_session_10000ms.*`. The
//! `zookeeper08.failover.` times include the polling granularity of
//! `has_leadership()` (a 50 µs sleep between polls, about 0.1 ms with the
//! timer slack), and its kill has `abandoned_sessions` (frozen sessions whose
//! close did not finish within 5 s). `zkclient.failover.skipped=` and, without
//! python3 or its kazoo module, `kazoo.failover.skipped=` say why a peer has
//! no rows.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use zk_framework::proto::OpCode;
use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{LeaderEvent, LeaderLatch};
use zk_testing::proxy::FaultProxy;

use crate::measure::{notifications, percentile, us};
use crate::opts::Peer;
use crate::Ctx;

mod zookeeper08;

/// Participants left idle.
pub const IDLE_N: usize = 100;
/// The session timeout of the close failover's and the idle participants.
pub const SESSION: Duration = Duration::from_secs(10);
/// The session timeout of the kill failover's participants.
pub const KILL_SESSION: Duration = Duration::from_secs(4);

/// Ours, then every peer asked for, in the order asked (Curator first).
pub fn run(x: &Ctx) {
    ours(x);
    for &peer in &x.o.peers {
        let done = match peer {
            Peer::Curator => curator(x),
            Peer::Zookeeper => zookeeper08::run(x),
            Peer::Kazoo => kazoo(x),
            Peer::ZookeeperClient => {
                println!("{}.failover.skipped={ZKCLIENT_SKIPPED}", peer.prefix());
                Ok(())
            }
        };
        if let Err(e) = done {
            println!("{}.error=failover: {e}", peer.prefix());
        }
    }
}

/// Why `--peers zookeeper-client` has no failover rows.
const ZKCLIENT_SKIPPED: &str = "no election recipe in zookeeper-client 0.11 (no latch or election type, no \
                                leadership events; only Client::lock, its Curator-compatible lock)";

fn client(cs: &str, session: Duration) -> CuratorFramework {
    let c = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(session)
        .connection_timeout(session.min(Duration::from_secs(10)))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
        .expect("client");
    c.block_until_connected(Duration::from_secs(30)).expect("connected");
    c
}

/// A started latch whose `Leader` events go to `tx` as (its index, when).
fn participant(c: &CuratorFramework, path: &str, i: usize, tx: &Sender<(usize, Instant)>) -> LeaderLatch {
    let latch = LeaderLatch::builder(c, path)
        .id(format!("p{i}"))
        .build()
        .expect("latch");
    let events = latch.events();
    let tx = tx.clone();
    std::thread::spawn(move || {
        for ev in events {
            if let LeaderEvent::Leader { .. } = ev {
                let _ = tx.send((i, Instant::now()));
            }
        }
    });
    latch.start().expect("start");
    latch
}

fn leader_of(ls: &[LeaderLatch]) -> usize {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if let Some(i) = ls.iter().position(LeaderLatch::has_leadership) {
            return i;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("no leader within 60 s");
}

fn await_participants(l: &LeaderLatch, n: usize) {
    let end = Instant::now() + Duration::from_secs(60);
    while l.participants().map_or(0, |p| p.len()) != n {
        assert!(
            Instant::now() < end,
            "the election did not get back to {n} participants"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The next `Leader` event of a participant other than `old`, after `t0`.
fn next_leader(rx: &Receiver<(usize, Instant)>, old: usize, t0: Instant) -> Duration {
    loop {
        let (i, t) = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("a new leader within 120 s");
        if i != old && t >= t0 {
            return t - t0;
        }
    }
}

fn report(prefix: &str, key: &str, mut v: Vec<Duration>) {
    v.sort();
    let k = format!("{prefix}failover.{key}");
    println!("{k}.p50_us={}", us(percentile(&v, 0.5)));
    println!("{k}.p99_us={}", us(percentile(&v, 0.99)));
    println!("{k}.max_us={}", us(v.last().copied().unwrap_or_default()));
    println!("{k}.failovers={}", v.len());
}

/// Frames the server received so far (pings, connects and four-letter words
/// included) and, on the embedded server, the pings among them.
fn packets(x: &Ctx) -> Option<(u64, Option<u64>)> {
    if let Some(e) = x.server().and_then(|s| s.embedded()) {
        let st = e.stats();
        return Some((st.packets_received, Some(st.requests(OpCode::Ping))));
    }
    let mut sum = 0;
    for addr in x.cs.split('/').next()?.split(',') {
        let text = zk_testing::fourlw::four_letter_word(addr, "mntr", Duration::from_secs(5)).ok()?;
        sum += text
            .lines()
            .find_map(|l| l.strip_prefix("zk_packets_received\t"))?
            .trim()
            .parse::<u64>()
            .ok()?;
    }
    Some((sum, None))
}

/// Requests (pings excluded) the embedded server has served so far.
fn requests(x: &Ctx) -> Option<u64> {
    crate::measure::requests(x.server())
}

/// The sessions watching the leader's node of the election at `path` now
/// (the ones its deletion notifies), from `wchp`: (all of them, those other
/// than the leader's own session).
fn leader_node_watchers(x: &Ctx, path: &str) -> Option<(usize, usize)> {
    let c = crate::ours::client(&x.cs);
    let mut kids = c.get_children(path).ok()?;
    // (The sequence: the last ten digits, whatever the naming scheme.)
    kids.sort_by_key(|k| k.get(k.len().saturating_sub(10)..).and_then(|s| s.parse::<u64>().ok()));
    let node = format!("{path}/{}", kids.first()?);
    let owner = c.check_exists(&node).ok()??.ephemeral_owner;
    c.close();
    let mut sessions = Vec::new();
    for addr in x.cs.split('/').next()?.split(',') {
        let text = zk_testing::fourlw::four_letter_word(addr, "wchp", Duration::from_secs(5)).ok()?;
        let mut current = "";
        for l in text.lines() {
            match l.strip_prefix('\t') {
                None => current = l.trim(),
                Some(sid) if current == node => {
                    sessions.push(i64::from_str_radix(sid.trim().trim_start_matches("0x"), 16).ok()?);
                }
                Some(_) => {}
            }
        }
    }
    let others = sessions.iter().filter(|&&s| s != owner).count();
    Some((sessions.len(), others))
}

fn watchers_report(prefix: &str, n: usize, w: Option<(usize, usize)>) {
    if let Some((all, others)) = w {
        println!("{prefix}failover.close_n{n}.leader_node_watchers={all}");
        println!("{prefix}failover.close_n{n}.leader_node_watchers_other_sessions={others}");
    }
}

/// The embedded server's requests so far, per opcode (pings included).
fn ops(x: &Ctx) -> Option<std::collections::HashMap<OpCode, u64>> {
    Some(x.server()?.embedded()?.stats().requests)
}

type Ops = std::collections::HashMap<OpCode, u64>;

/// Adds `b - a` to `sum` (per opcode).
fn ops_add(sum: &mut Ops, a: Option<Ops>, b: Option<Ops>) {
    if let (Some(a), Some(b)) = (a, b) {
        for (op, v) in b {
            *sum.entry(op).or_default() += v - a.get(&op).copied().unwrap_or(0);
        }
    }
}

/// Requests per failover (and its rejoin) by opcode, e.g. `GetChildren2:1.00,Delete:1.00`.
fn ops_report(
    prefix: &str,
    key: &str,
    a: Option<std::collections::HashMap<OpCode, u64>>,
    b: Option<std::collections::HashMap<OpCode, u64>>,
    reps: usize,
) {
    let (Some(a), Some(b)) = (a, b) else {
        return;
    };
    let mut v: Vec<_> = b
        .iter()
        .filter(|(op, _)| **op != OpCode::Ping)
        .map(|(op, n)| {
            (
                format!("{op:?}"),
                (n - a.get(op).copied().unwrap_or(0)) as f64 / reps as f64,
            )
        })
        .filter(|(_, n)| *n > 0.0)
        .collect();
    v.sort_by(|x, y| x.0.cmp(&y.0));
    let list: Vec<_> = v.iter().map(|(op, n)| format!("{op}:{n:.2}")).collect();
    println!("{prefix}failover.{key}={}", list.join(","));
}

/// The floor of a close failover: a delete's round trip (an ephemeral node
/// created and deleted by one of our clients, 50 times), p50 and p99.
fn delete_floor(x: &Ctx) {
    let c = client(&x.cs, SESSION);
    let mut v = Vec::new();
    for i in 0..60 {
        let path = format!("/bench/failover/floor-{i}");
        c.create()
            .creating_parent_containers_if_needed()
            .with_mode(zk_framework::CreateMode::Ephemeral)
            .for_path(&path)
            .expect("create");
        let t = Instant::now();
        c.delete().for_path(&path).expect("delete");
        if i >= 10 {
            v.push(t.elapsed());
        }
    }
    v.sort();
    println!("failover.delete_round_trip.p50_us={}", us(percentile(&v, 0.5)));
    println!("failover.delete_round_trip.p99_us={}", us(percentile(&v, 0.99)));
    c.close();
}

/// A server's counts before or after a run of close failovers:
/// notifications, requests, requests per opcode (each `None` where the
/// server does not count it).
type Counts = (Option<u64>, Option<u64>, Option<Ops>);

/// The server's counts now.
fn counts(x: &Ctx) -> Counts {
    (notifications(x.server(), &x.cs), requests(x), ops(x))
}

/// Reports a close-failover run's counts per failover: notifications and
/// requests with the rejoins (from `before` to `after`), and the requests of
/// the failovers alone (`alone`, summed over the failovers, where the server
/// counts per opcode).
fn close_counts(prefix: &str, n: usize, reps: usize, before: Counts, after: Counts, alone: Option<Ops>) {
    per_failover(prefix, n, "notifications", before.0, after.0, reps);
    per_failover(prefix, n, "requests_with_rejoin", before.1, after.1, reps);
    let key = format!("close_n{n}.ops_per_failover");
    ops_report(prefix, &format!("{key}_with_rejoin"), before.2, after.2, reps);
    let counted = alone.is_some();
    ops_report(prefix, &key, counted.then(Ops::new), alone, reps);
}

fn per_failover(prefix: &str, n: usize, what: &str, a: Option<u64>, b: Option<u64>, reps: usize) {
    if let (Some(a), Some(b)) = (a, b) {
        println!(
            "{prefix}failover.close_n{n}.{what}_per_failover={:.2}",
            (b - a) as f64 / reps as f64
        );
    }
}

fn idle_report(prefix: &str, x: &Ctx, p0: Option<(u64, Option<u64>)>, p1: Option<(u64, Option<u64>)>, secs: f64) {
    let k = format!("{prefix}failover.idle_n{IDLE_N}_session_{}ms", SESSION.as_millis());
    if let (Some((a, pa)), Some((b, pb))) = (p0, p1) {
        // (The two mntr calls of an Apache server count themselves: 1 frame each.)
        let own = if x.server().and_then(|s| s.embedded()).is_some() {
            0
        } else {
            1
        };
        println!("{k}.server_frames_per_min={:.0}", (b - a - own) as f64 * 60.0 / secs);
        if let (Some(pa), Some(pb)) = (pa, pb) {
            println!("{k}.pings_per_min={:.0}", (pb - pa) as f64 * 60.0 / secs);
        }
    }
    println!("{k}.seconds={secs:.1}");
}

/// One election in rotation, as the close failover drives it: whoever leads
/// leaves, another one leads, the one who left joins again.
pub(crate) trait Rotation {
    /// The participant that leads now.
    fn leader(&self) -> Result<usize, String>;
    /// Participant `i` leaves the election (the call timed as the "leaving
    /// call").
    fn leave(&mut self, i: usize) -> Result<(), String>;
    /// The time from `t0` until a participant other than `old` leads.
    fn next_leader(&self, old: usize, t0: Instant) -> Result<Duration, String>;
    /// Participant `i` joins again; returns once every participant's node is
    /// there.
    fn rejoin(&mut self, i: usize) -> Result<(), String>;
}

/// The close failovers of one election (`--failovers`, after a tenth as many
/// unmeasured) and their figures under `prefix`: the failover times, the
/// leaving call's (`close_n{n}.{call_key}`), the notifications and requests
/// per failover, with and without the rejoin, and who watches the leader's
/// node at `path`.
pub(crate) fn close_rounds(
    x: &Ctx,
    prefix: &str,
    path: &str,
    call_key: &str,
    r: &mut impl Rotation,
) -> Result<(), String> {
    let n = usize::from(x.o.failover_n);
    let reps = x.o.failovers;
    let warm = (reps / 10).max(2);
    let (mut v, mut calls) = (Vec::new(), Vec::new());
    let mut before: Counts = (None, None, None);
    // Requests from the leaving call to the next leader only.
    let mut alone = Ops::new();
    for round in 0..warm + reps {
        if round == warm {
            v.clear();
            calls.clear();
            // (After a moment: the leader's own-node watch goes out shortly after its grant.)
            std::thread::sleep(Duration::from_millis(100));
            watchers_report(prefix, n, leader_node_watchers(x, path));
            before = counts(x);
        }
        let i = r.leader()?;
        let before = if round >= warm { ops(x) } else { None };
        let t0 = Instant::now();
        r.leave(i)?;
        calls.push(t0.elapsed());
        v.push(r.next_leader(i, t0)?);
        ops_add(&mut alone, before, ops(x));
        r.rejoin(i)?;
    }
    let after = counts(x);
    report(prefix, &format!("close_n{n}"), v);
    report(prefix, &format!("close_n{n}.{call_key}"), calls);
    close_counts(prefix, n, reps, before, after, ops(x).map(|_| alone));
    Ok(())
}

/// Our latches in rotation, one client each; `Leader` events come on `rx`.
struct Ours<'a> {
    ls: Vec<LeaderLatch>,
    clients: &'a [CuratorFramework],
    path: &'a str,
    rx: Receiver<(usize, Instant)>,
    tx: Sender<(usize, Instant)>,
}

impl Rotation for Ours<'_> {
    fn leader(&self) -> Result<usize, String> {
        let i = leader_of(&self.ls);
        // Events of earlier failovers are not this one's.
        while self.rx.try_recv().is_ok() {}
        Ok(i)
    }

    fn leave(&mut self, i: usize) -> Result<(), String> {
        self.ls[i].close().map_err(|e| format!("close: {e}"))
    }

    fn next_leader(&self, old: usize, t0: Instant) -> Result<Duration, String> {
        Ok(next_leader(&self.rx, old, t0))
    }

    fn rejoin(&mut self, i: usize) -> Result<(), String> {
        self.ls[i] = participant(&self.clients[i], self.path, i, &self.tx);
        await_participants(&self.ls[i], self.ls.len());
        Ok(())
    }
}

fn ours(x: &Ctx) {
    let n = usize::from(x.o.failover_n);
    delete_floor(x);
    // close failover
    {
        let path = "/bench/failover/close";
        let (tx, rx) = mpsc::channel();
        let clients: Vec<_> = (0..n).map(|_| client(&x.cs, SESSION)).collect();
        let mut ls = Vec::new();
        for (i, c) in clients.iter().enumerate() {
            ls.push(participant(c, path, i, &tx));
            await_participants(&ls[0], i + 1);
        }
        let mut ours = Ours {
            ls,
            clients: &clients,
            path,
            rx,
            tx,
        };
        close_rounds(x, "", path, "close_call", &mut ours).expect("close failover");
        let ls = ours.ls;
        for l in &ls {
            let _ = l.close();
        }
        for c in clients {
            c.close();
        }
    }
    // kill failover
    if x.o.failover_kills > 0 {
        let path = "/bench/failover/kill";
        let (tx, rx) = mpsc::channel();
        let proxies: Vec<_> = (0..n)
            .map(|_| FaultProxy::start(x.cs.split(',').next().unwrap_or(&x.cs)).expect("proxy"))
            .collect();
        let mut clients: Vec<_> = proxies
            .iter()
            .map(|p| client(&p.connect_string(), KILL_SESSION))
            .collect();
        let mut ls = Vec::new();
        for (i, c) in clients.iter().enumerate() {
            ls.push(participant(c, path, i, &tx));
            await_participants(&ls[0], i + 1);
        }
        let mut v = Vec::new();
        for _ in 0..x.o.failover_kills {
            let i = leader_of(&ls);
            while rx.try_recv().is_ok() {}
            proxies[i].freeze(true);
            let t0 = Instant::now();
            v.push(next_leader(&rx, i, t0));
            proxies[i].freeze(false);
            let _ = ls[i].close();
            clients[i].close();
            clients[i] = client(&proxies[i].connect_string(), KILL_SESSION);
            ls[i] = participant(&clients[i], path, i, &tx);
            await_participants(&ls[i], n);
        }
        report("", &format!("kill_n{n}_session_{}ms", KILL_SESSION.as_millis()), v);
        for l in &ls {
            let _ = l.close();
        }
        for c in clients {
            c.close();
        }
    }
    // idle cost
    if x.o.idle_seconds > 0.0 {
        let path = "/bench/failover/idle";
        let (tx, _rx) = mpsc::channel();
        let clients: Vec<_> = (0..IDLE_N).map(|_| client(&x.cs, SESSION)).collect();
        let ls: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(i, c)| participant(c, path, i, &tx))
            .collect();
        await_participants(&ls[0], IDLE_N);
        std::thread::sleep(Duration::from_secs(2));
        let secs = x.o.idle_seconds;
        let p0 = packets(x);
        std::thread::sleep(Duration::from_secs_f64(secs));
        let p1 = packets(x);
        idle_report("", x, p0, p1, secs);
        for l in &ls {
            let _ = l.close();
        }
        for c in clients {
            c.close();
        }
    }
}

/// The jars of Curator 5.4 and what it needs (Debian's).
fn jars() -> Vec<String> {
    [
        "curator-recipes",
        "curator-framework",
        "curator-client",
        "zookeeper",
        "zookeeper-jute",
        "guava",
        "slf4j-api",
        "slf4j-nop",
    ]
    .iter()
    .map(|n| format!("/usr/share/java/{n}.jar"))
    .collect()
}

/// Compiles `CuratorLeaderBench.java`; the class path to run it.
fn compile() -> Result<String, String> {
    let jars = jars();
    if !std::path::Path::new(&jars[0]).exists() {
        return Err("Curator jars missing (apt-get install libcurator-recipes-java)".into());
    }
    crate::peers::javac(
        &crate::peers::java_dir().join("leader"),
        &jars,
        "CuratorLeaderBench.java",
    )
}

/// Runs one mode of a driver (`CuratorLeaderBench` or `kazoo_bench.py
/// failover`): `base` is the program up to and including the connect string;
/// prints its `key=value` lines, answers its cues with `on` (a cue, e.g.
/// `ready` or `freeze 3`: do what it asks, then the driver is told to go on).
fn drive(base: &[String], args: &[String], mut on: impl FnMut(&str)) -> Result<(), String> {
    let mut child = Command::new(&base[0])
        .args(&base[1..])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("{}: {e}", base[0]))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    for l in lines {
        let l = l.map_err(|e| format!("the driver's stdout: {e}"))?;
        if l.contains('=') {
            println!("{l}");
            continue;
        }
        on(&l);
        if l != "done" || args[0] == "close" {
            writeln!(stdin).map_err(|e| format!("the driver's stdin: {e}"))?;
        }
    }
    drop(stdin);
    let status = child.wait().map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the driver's {} exited with {status}", args[0]))
    }
}

fn curator(x: &Ctx) -> Result<(), String> {
    let cp = compile()?;
    let base: Vec<String> = ["java", "-Xmx512m", "-cp", &cp, "CuratorLeaderBench", &x.cs]
        .map(String::from)
        .to_vec();
    process_peer(x, "curator", &base)
}

/// kazoo 2.8's `Election` (`scripts/bench/kazoo_bench.py failover`) with
/// Debian's `/usr/bin/python3` and `python3-kazoo`; a missing one is one
/// `kazoo.failover.skipped=` line.
fn kazoo(x: &Ctx) -> Result<(), String> {
    let python = "/usr/bin/python3";
    let probe = Command::new(python)
        .args(["-c", "import kazoo.version; print(kazoo.version.__version__)"])
        .stderr(Stdio::null())
        .output();
    let skipped = match probe {
        Ok(out) if out.status.success() => None,
        Ok(_) => Some("no python3 kazoo module (apt-get install python3-kazoo)".to_string()),
        Err(e) => Some(format!("no {python} ({e})")),
    };
    let script = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/bench/kazoo_bench.py"
    ));
    let skipped = skipped.or_else(|| (!script.exists()).then(|| format!("{} missing", script.display())));
    if let Some(why) = skipped {
        println!("kazoo.failover.skipped={why}");
        return Ok(());
    }
    let base = [python, "-u", &script.display().to_string(), &x.cs, "failover"].map(String::from);
    process_peer(x, "kazoo", &base)
}

/// The close, kill and idle failovers of a peer in a process of its own
/// (`base`: its program up to the connect string), keys and election paths
/// named after `name`.
fn process_peer(x: &Ctx, name: &str, base: &[String]) -> Result<(), String> {
    let n = usize::from(x.o.failover_n);
    let prefix = format!("{name}.");
    let prefix = prefix.as_str();
    let close_path = format!("/bench/failover/{name}-close");
    let s = |v: &dyn std::fmt::Display| v.to_string();
    let reps = x.o.failovers;
    let warm = (reps / 10).max(2);
    // close failover
    let (mut start, mut end): (Counts, Counts) = ((None, None, None), (None, None, None));
    // Requests from each failover's start to its next leader only.
    let (mut alone, mut before) = (Ops::new(), None);
    drive(
        base,
        &[
            s(&"close"),
            s(&n),
            s(&reps),
            s(&warm),
            s(&SESSION.as_millis()),
            close_path.clone(),
        ],
        |cue| match cue {
            "ready" => {
                std::thread::sleep(Duration::from_millis(100));
                watchers_report(prefix, n, leader_node_watchers(x, &close_path));
                start = counts(x);
            }
            "before" => before = ops(x),
            "after" => ops_add(&mut alone, before.take(), ops(x)),
            "done" => end = counts(x),
            _ => {}
        },
    )?;
    let embedded = x.server().and_then(|s| s.embedded()).is_some();
    close_counts(prefix, n, reps, start, end, embedded.then_some(alone));
    // kill failover
    if x.o.failover_kills > 0 {
        let proxies: Vec<_> = (0..n)
            .map(|_| FaultProxy::start(x.cs.split(',').next().unwrap_or(&x.cs)).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        let list: Vec<_> = proxies.iter().map(FaultProxy::connect_string).collect();
        drive(
            base,
            &[
                s(&"kill"),
                s(&n),
                s(&x.o.failover_kills),
                s(&KILL_SESSION.as_millis()),
                format!("/bench/failover/{name}-kill"),
                list.join(","),
            ],
            |cue| {
                if let Some((what, i)) = cue.split_once(' ') {
                    if let Ok(i) = i.parse::<usize>() {
                        proxies[i].freeze(what == "freeze");
                    }
                }
            },
        )?;
    }
    // idle cost
    let (mut p0, mut p1) = (None, None);
    let secs = x.o.idle_seconds;
    if secs <= 0.0 {
        return Ok(());
    }
    drive(
        base,
        &[
            s(&"idle"),
            s(&IDLE_N),
            s(&SESSION.as_millis()),
            format!("/bench/failover/{name}-idle"),
        ],
        |cue| {
            if cue == "ready" {
                p0 = packets(x);
                std::thread::sleep(Duration::from_secs_f64(secs));
                p1 = packets(x);
            }
        },
    )?;
    idle_report(prefix, x, p0, p1, secs);
    Ok(())
}
