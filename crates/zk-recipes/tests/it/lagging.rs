//! A lost reply proven across servers, on a real 3-node Apache ZooKeeper ensemble with a
//! follower that lags its leader (`zk_testing::apache::LaggingFollower`): the write is applied
//! by the leader, its reply is lost, and the client reconnects to a follower that has received
//! the write behind a backlog of others and has not applied it yet. A proof read there without
//! a `sync` says "not applied"; these tests assert the truth, whatever the proof read: they
//! fail on code that proves without a `sync` (issue 40) and pass on code that syncs first.
//!
//! Each round prints one line: what the call reported, what the server holds (read on the
//! leader), whether the proof read stale state, and the round's figures (the backlog, how long
//! the follower was held, how far behind the lost write it was when the client reached it).
//! Each test asserts that the fault happened in some rounds (the client's first request after
//! the loss reached the follower before it had applied the lost write: a round that lacks it
//! proves nothing, and up to twice the rounds run until one has it), then that every round
//! told the truth.
//!
//! They need Java and Debian's ZooKeeper jars: without them they print a line and pass, unless
//! `ZK_TEST_REQUIRE_APACHE=1` is set (CI sets it). Each test starts its own ensemble whatever
//! `ZK_TEST_SERVER` says (CI runs them in its step on the embedded server, and skips them in
//! the one on Apache); a file-wide lock runs one ensemble at a time. About 8 s each.
//! `ZK_TEST_LAG_BACKLOG=<writes>,<bytes>` replaces the default backlog (to measure the window).

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use zk_framework::proto::OpCode;
use zk_framework::{CuratorFramework, ExponentialBackoffRetry, RetryNTimes};
use zk_recipes::{DistributedAtomicLong, Error, Outcome, SharedCount, SimpleDistributedQueue, TrySet};
use zk_testing::apache::{AfterLoss, Backlog, LagReport, LaggingFollower};

use crate::support::{init_log, timing, wait_until};

/// Only one ensemble at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Rounds per test; up to twice as many while the fault has not happened yet.
const ROUNDS: usize = 8;

/// The backlog: `Backlog::default()`, or `ZK_TEST_LAG_BACKLOG=<writes>,<bytes>` (to measure
/// the window with others).
fn backlog() -> Backlog {
    match std::env::var("ZK_TEST_LAG_BACKLOG") {
        Ok(v) => {
            let parsed = v
                .split_once(',')
                .and_then(|(w, l)| Some((w.trim().parse().ok()?, l.trim().parse().ok()?)));
            let (writes, data_len) =
                parsed.unwrap_or_else(|| panic!("ZK_TEST_LAG_BACKLOG={v:?}: expected <writes>,<bytes>"));
            Backlog { writes, data_len }
        }
        Err(_) => Backlog::default(),
    }
}

fn ensemble() -> LaggingFollower {
    init_log();
    let t0 = Instant::now();
    let backlog = backlog();
    let lag = LaggingFollower::start(backlog).expect("start a partitionable 3-node ensemble");
    println!(
        "ensemble up in {:?}, leader {:?}, backlog {backlog:?}",
        t0.elapsed(),
        lag.cluster().leader()
    );
    lag
}

/// Waits until every node has applied what the leader has (the admin client reads on the
/// leader; should the leader change, any node is then current).
fn settled(lag: &LaggingFollower) {
    lag.cluster()
        .wait_caught_up(timing().wait())
        .expect("the ensemble catches up after the round");
}

/// A client through the router (the client under test), riding out the lost connections:
/// its retries wait for the reconnect (the managed client's retry loop does, up to 1 s) and
/// then go at once, so that its proof reads on the follower as soon as it is connected there.
fn client(lag: &LaggingFollower) -> CuratorFramework {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(lag.connect_string())
        .session_timeout(t.scale(Duration::from_secs(10)))
        .connection_timeout(t.connection())
        .retry_policy(RetryNTimes::new(30, Duration::from_millis(1)))
        .build()
        .expect("build the client under test");
    c.block_until_connected(t.wait())
        .expect("the client under test connects");
    c
}

/// A client on the leader alone (it has applied every committed write): what the ensemble
/// holds.
fn admin(lag: &LaggingFollower) -> CuratorFramework {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(lag.leader_connect_string().expect("a leader"))
        .session_timeout(t.scale(Duration::from_secs(10)))
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 5))
        .build()
        .expect("build the admin client");
    c.block_until_connected(t.wait()).expect("the admin client connects");
    c
}

fn patient() -> RetryNTimes {
    RetryNTimes::new(1000, Duration::from_millis(1))
}

fn long_at(admin: &CuratorFramework, path: &str) -> i64 {
    let (data, _) = admin.get_data(path).expect("read the counter");
    i64::from_be_bytes(data[..8].try_into().expect("8 bytes"))
}

/// The rounds of one test: how many had the fault, which told a lie.
#[derive(Default)]
struct Tally {
    rounds: usize,
    lagged: usize,
    wrong: Vec<String>,
}

impl Tally {
    /// Whether the test has run its rounds (and the fault happened in one at least).
    fn done(&self) -> bool {
        self.rounds >= 2 * ROUNDS || (self.rounds >= ROUNDS && self.lagged > 0)
    }

    fn round(&mut self, round: usize, report: &LagReport, proof: OpCode, told: &str, truth: Result<(), String>) {
        self.rounds += 1;
        let lagged = report.lag_present();
        self.lagged += usize::from(lagged);
        let verdict = match &truth {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("WRONG: {e}"),
        };
        println!(
            "round {round}: {told}; {verdict}; stale {proof:?} read: {}; {}",
            report.lag_present_for(proof),
            report.summary()
        );
        if let Err(e) = truth {
            self.wrong.push(format!("round {round}: {e}"));
        }
    }

    fn assert(&self, what: &str) {
        println!(
            "{what}: {} of {} rounds wrong, the fault happened in {} of {}",
            self.wrong.len(),
            self.rounds,
            self.lagged,
            self.rounds
        );
        assert!(
            self.lagged > 0,
            "{what}: the client never reached the follower while it lagged the lost write, in {} rounds: the test proves nothing",
            self.rounds
        );
        assert!(
            self.wrong.is_empty(),
            "{what}: {} of {} rounds told a lie ({} had the fault):\n{}",
            self.wrong.len(),
            self.rounds,
            self.lagged,
            self.wrong.join("\n")
        );
    }
}

/// One increment through the lagging follower, its outcome judged against the counter's
/// value before and after on the leader: `Ok` when the report is true.
fn judge_increment(
    result: &zk_recipes::Result<zk_recipes::AtomicValue<i64>>,
    before: i64,
    after: i64,
    exact: bool,
) -> (String, Result<(), String>) {
    let delta = after - before;
    match result {
        Ok(v) => {
            let told = format!("reported {:?} {} -> {}", v.outcome(), v.pre_value(), v.post_value());
            let truth = match v.outcome() {
                Outcome::Applied { .. } if delta != 1 => Err(format!(
                    "one increment reported applied, the counter went {before} -> {after}"
                )),
                Outcome::Applied { .. } if (v.pre_value(), v.post_value()) != (before, after) => Err(format!(
                    "reported {} -> {}, the counter went {before} -> {after}",
                    v.pre_value(),
                    v.post_value()
                )),
                Outcome::NotApplied if delta != 0 => Err(format!(
                    "reported not applied, the counter went {before} -> {after}"
                )),
                Outcome::Unknown { .. } if !(0..=1).contains(&delta) => Err(format!(
                    "reported unknown, the counter went {before} -> {after}"
                )),
                Outcome::Unknown { .. } if exact => Err(format!(
                    "reported unknown, though nobody else wrote (the counter went {before} -> {after}): the read-back can tell"
                )),
                _ => Ok(()),
            };
            (told, truth)
        }
        Err(e) => (
            format!("failed: {e}"),
            if delta == 0 {
                Ok(())
            } else {
                Err(format!("reported failed ({e}), the counter went {before} -> {after}"))
            },
        ),
    }
}

/// `DistributedAtomicLong::increment` whose multi's reply is lost, on the same session: the
/// counter moves by exactly the increments reported applied, and a reported pre/post value is
/// the server's. Before the fix, the marker's `exists` on the lagging follower said "not
/// applied", the increment was sent again and counted twice (1 -> 3, reported 2 -> 3).
#[test]
fn an_increment_whose_reply_is_lost_counts_once_on_a_lagging_follower() {
    let name = "lagging::an_increment_whose_reply_is_lost_counts_once_on_a_lagging_follower";
    if !zk_testing::apache::available_or_skip(name) {
        return;
    }
    let _serial = serial();
    let lag = ensemble();
    let admin = admin(&lag);
    let c = client(&lag);
    let path = "/lagging/counter";
    let counter = DistributedAtomicLong::new(&c, path, patient()).unwrap();
    assert!(counter.initialize(0).unwrap().succeeded());
    let mut tally = Tally::default();
    for round in 0.. {
        if tally.done() {
            break;
        }
        let before = long_at(&admin, path);
        let lagging = lag.begin(OpCode::Multi, AfterLoss::SameSession).expect("begin a round");
        let result = counter.increment();
        let report = lagging.report(timing().wait());
        drop(lagging);
        settled(&lag);
        let after = long_at(&admin, path);
        let (told, truth) = judge_increment(&result, before, after, false);
        tally.round(
            round,
            &report,
            OpCode::Exists,
            &format!("{told}, server {before} -> {after}"),
            truth,
        );
    }
    tally.assert("increment");
}

/// The same increment, but its session ends right after the lost reply: the client's new
/// session, made on the leader, resumes on the lagging follower before its first request, and
/// the outcome rests on reading the counter back there. Nobody else writes the counter, so the
/// read-back can tell: the outcome must be exact (applied once, reported applied). Before the
/// fix, the read-back on the lagging follower found the counter as it was read before the
/// write, called it not applied, and the increment counted twice.
#[test]
fn an_increment_read_back_after_a_new_session_on_a_lagging_follower_is_exact() {
    let name = "lagging::an_increment_read_back_after_a_new_session_on_a_lagging_follower_is_exact";
    if !zk_testing::apache::available_or_skip(name) {
        return;
    }
    let _serial = serial();
    let lag = ensemble();
    let admin = admin(&lag);
    let c = client(&lag);
    let path = "/lagging/expired";
    let counter = DistributedAtomicLong::new(&c, path, patient()).unwrap();
    assert!(counter.initialize(0).unwrap().succeeded());
    let mut tally = Tally::default();
    for round in 0.. {
        if tally.done() {
            break;
        }
        let before = long_at(&admin, path);
        let zk = c.zookeeper_client();
        let (session_id, password) = (zk.session_id(), zk.session_password());
        let lagging = lag
            .begin(OpCode::Multi, AfterLoss::NewSession { session_id, password })
            .expect("begin a round");
        let result = counter.increment();
        let report = lagging.report(timing().wait());
        drop(lagging);
        settled(&lag);
        let after = long_at(&admin, path);
        let (told, mut truth) = judge_increment(&result, before, after, true);
        if truth.is_ok() && c.session_id() == session_id {
            truth = Err(format!("the session {session_id:#x} did not end"));
        }
        tally.round(
            round,
            &report,
            OpCode::GetData,
            &format!("{told}, server {before} -> {after}"),
            truth,
        );
    }
    tally.assert("increment read back after a new session");
}

/// `SharedCount::try_set_count` whose multi's reply is lost: reported set if and only if the
/// count was set. Before the fix, the marker read on the lagging follower said "not applied",
/// the write was sent again, met `BadVersion` (its own), and was reported stale.
#[test]
fn a_try_set_count_whose_reply_is_lost_reports_set_iff_set_on_a_lagging_follower() {
    let name = "lagging::a_try_set_count_whose_reply_is_lost_reports_set_iff_set_on_a_lagging_follower";
    if !zk_testing::apache::available_or_skip(name) {
        return;
    }
    let _serial = serial();
    let lag = ensemble();
    let admin = admin(&lag);
    let c = client(&lag);
    let path = "/lagging/count";
    let count = SharedCount::new(&c, path, 0).unwrap();
    count.start().unwrap();
    let mut tally = Tally::default();
    for round in 0.. {
        if tally.done() {
            break;
        }
        let read = |admin: &CuratorFramework| {
            let (data, stat) = admin.get_data(path).expect("read the count");
            (i32::from_be_bytes(data[..4].try_into().unwrap()), stat.version)
        };
        let before = read(&admin);
        // The count's own view is the server's (its watch told it of the last round's write).
        assert!(
            wait_until(timing().wait(), || count.get_versioned_count().is_ok_and(|v| (
                *v.value(),
                v.version()
            )
                == before)),
            "the shared count did not catch up with {before:?}"
        );
        let seen = count.get_versioned_count().unwrap();
        let new = before.0 + 1;
        let lagging = lag.begin(OpCode::Multi, AfterLoss::SameSession).expect("begin a round");
        let result = count.try_set_count(new, &seen);
        let report = lagging.report(timing().wait());
        drop(lagging);
        settled(&lag);
        let after = read(&admin);
        let applied = after == (new, before.1 + 1);
        let unchanged = after == before;
        let (told, truth) = match &result {
            Ok(TrySet::Set { version, proof }) => (
                format!("reported set to {new} (version {version}, by {proof:?})"),
                if applied && *version == after.1 {
                    Ok(())
                } else {
                    Err(format!(
                        "reported set to {new} at version {version}, the server holds {after:?}"
                    ))
                },
            ),
            Ok(TrySet::Stale { current }) => (
                format!(
                    "reported stale (current {} at version {})",
                    current.value(),
                    current.version()
                ),
                if unchanged {
                    Ok(())
                } else {
                    Err(format!(
                        "reported stale, the write was applied: {before:?} -> {after:?}"
                    ))
                },
            ),
            Ok(other) => (
                format!("reported {other:?}"),
                if applied || unchanged {
                    Ok(())
                } else {
                    Err(format!("the server went {before:?} -> {after:?}"))
                },
            ),
            Err(e) => (
                format!("failed: {e}"),
                if unchanged {
                    Ok(())
                } else {
                    Err(format!(
                        "reported failed ({e}), the write was applied: {before:?} -> {after:?}"
                    ))
                },
            ),
        };
        tally.round(
            round,
            &report,
            OpCode::Exists,
            &format!("{told}; server {before:?} -> {after:?}"),
            truth,
        );
    }
    count.close();
    tally.assert("try_set_count");
}

/// The items of a queue on the server (read on the leader): each `qn-` node's name and bytes.
fn queued(admin: &CuratorFramework, path: &str) -> Vec<(String, Vec<u8>)> {
    let mut names = match admin.get_children(path) {
        Ok(k) => k,
        Err(zk_framework::Error::NoNode { .. }) => return Vec::new(),
        Err(e) => panic!("list the queue: {e}"),
    };
    names.retain(|n| n.starts_with(zk_recipes::ITEM_PREFIX));
    names.sort();
    names
        .into_iter()
        .filter_map(|n| {
            let full = format!("{path}/{n}");
            admin.get_data(&full).ok().map(|(d, _)| (n, d))
        })
        .collect()
}

/// `SimpleDistributedQueue::offer` whose multi's reply is lost: the item is in the queue
/// exactly once if the offer reported `Ok`, at most once if it reported `OfferUnknown`, never
/// if it reported another error. Before the fix, the marker read on the lagging follower said
/// "not applied", the offer was sent again and failed with `NodeExists` on its own marker,
/// while the item was queued.
#[test]
fn an_offer_whose_reply_is_lost_is_queued_once_iff_reported_on_a_lagging_follower() {
    let name = "lagging::an_offer_whose_reply_is_lost_is_queued_once_iff_reported_on_a_lagging_follower";
    if !zk_testing::apache::available_or_skip(name) {
        return;
    }
    let _serial = serial();
    let lag = ensemble();
    let admin = admin(&lag);
    let c = client(&lag);
    let path = "/lagging/offers";
    let queue = SimpleDistributedQueue::new(&c, path).unwrap();
    // The container first: an offer's lost multi is the item's, not a retry after NoNode.
    queue.offer(b"first").unwrap();
    let mut tally = Tally::default();
    for round in 0.. {
        if tally.done() {
            break;
        }
        let item = format!("offer {round}").into_bytes();
        let lagging = lag.begin(OpCode::Multi, AfterLoss::SameSession).expect("begin a round");
        let result = queue.offer(&item);
        let report = lagging.report(timing().wait());
        drop(lagging);
        settled(&lag);
        let copies = queued(&admin, path).iter().filter(|(_, d)| *d == item).count();
        let (told, truth) = match &result {
            Ok(()) => (
                "reported Ok".to_string(),
                if copies == 1 {
                    Ok(())
                } else {
                    Err(format!("reported Ok, {copies} copies queued"))
                },
            ),
            Err(Error::OfferUnknown { .. }) => (
                "reported OfferUnknown".to_string(),
                if copies <= 1 {
                    Ok(())
                } else {
                    Err(format!("{copies} copies queued"))
                },
            ),
            Err(e) => (
                format!("failed: {e}"),
                if copies == 0 {
                    Ok(())
                } else {
                    Err(format!("reported failed ({e}), {copies} copies queued"))
                },
            ),
        };
        tally.round(
            round,
            &report,
            OpCode::Exists,
            &format!("{told}; {copies} queued"),
            truth,
        );
    }
    tally.assert("offer");
}

/// `SimpleDistributedQueue::take` and `poll` whose delete's multi reply is lost: an item gone
/// from the queue is the one returned, or reported `TakeUnknown` with its bytes; never gone and
/// unreported. Even rounds `take()` with two items queued, odd rounds `poll()` with one. Before
/// the fix, the marker read on the lagging follower said "not applied", the delete was sent
/// again and met `NoNode`, and the call moved on: `take` returned the second item, `poll`
/// nothing, while the first was gone.
#[test]
fn a_take_whose_reply_is_lost_returns_or_reports_the_item_on_a_lagging_follower() {
    let name = "lagging::a_take_whose_reply_is_lost_returns_or_reports_the_item_on_a_lagging_follower";
    if !zk_testing::apache::available_or_skip(name) {
        return;
    }
    let _serial = serial();
    let lag = ensemble();
    let admin = admin(&lag);
    let c = client(&lag);
    let path = "/lagging/takes";
    let producer = SimpleDistributedQueue::new(&admin, path).unwrap();
    let queue = SimpleDistributedQueue::new(&c, path).unwrap();
    let mut tally = Tally::default();
    for round in 0.. {
        if tally.done() {
            break;
        }
        let take = round % 2 == 0;
        let items: Vec<Vec<u8>> = (0..if take { 2 } else { 1 })
            .map(|i| format!("round {round} item {i}").into_bytes())
            .collect();
        for item in &items {
            producer.offer(item).unwrap();
        }
        let lagging = lag.begin(OpCode::Multi, AfterLoss::SameSession).expect("begin a round");
        let result = if take { queue.take().map(Some) } else { queue.poll() };
        let report = lagging.report(timing().wait());
        drop(lagging);
        settled(&lag);
        let left: Vec<Vec<u8>> = queued(&admin, path).into_iter().map(|(_, d)| d).collect();
        let gone: Vec<&Vec<u8>> = items.iter().filter(|i| !left.contains(i)).collect();
        let (told, accounted): (String, Vec<&Vec<u8>>) = match &result {
            Ok(Some(item)) => (format!("returned {:?}", String::from_utf8_lossy(item)), vec![item]),
            Ok(None) => ("returned nothing".to_string(), Vec::new()),
            Err(Error::TakeUnknown { item, .. }) => (
                format!("reported TakeUnknown {:?}", String::from_utf8_lossy(item)),
                vec![item],
            ),
            Err(e) => (format!("failed: {e}"), Vec::new()),
        };
        let lost: Vec<String> = gone
            .iter()
            .filter(|g| !accounted.contains(g))
            .map(|g| String::from_utf8_lossy(g).into_owned())
            .collect();
        let truth = if !lost.is_empty() {
            Err(format!("{told}, and {lost:?} is gone from the queue unreported"))
        } else if matches!(&result, Ok(Some(item)) if left.contains(item)) {
            Err(format!("{told}, and it is still queued"))
        } else {
            Ok(())
        };
        // The next round starts with an empty queue.
        for (node, _) in queued(&admin, path) {
            let _ = admin.delete().for_path(&format!("{path}/{node}"));
        }
        tally.round(
            round,
            &report,
            OpCode::Exists,
            &format!(
                "{} {told}; {} of {} gone",
                if take { "take" } else { "poll" },
                gone.len(),
                items.len()
            ),
            truth,
        );
    }
    tally.assert("take and poll");
}
