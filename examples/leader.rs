//! Leader election: three services elect one leader with `LeaderLatch`; an
//! observer that does not take part follows who leads.
//!
//! 1. Three latches (one ZooKeeper session each) start; exactly one leads.
//! 2. The leader hands leadership to the next participant; the term grows.
//! 3. An operator deletes the leader's node: that latch is told `NodeDeleted`
//!    and rejoins at the back; the next one leads.
//! 4. The leader closes; the next one leads; then the last one.
//!
//! At every step the example checks that at most one latch's `check()` is
//! `Ok`, that terms only grow, and that the observer saw each change of leader
//! once.
//!
//! ```text
//! cargo run --example leader                        # on an embedded ZooKeeper
//! ZK_CONNECT=127.0.0.1:2181 cargo run --example leader
//! ```
//!
//! Exits 0 when every check held.

use std::time::{Duration, Instant};

use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{ElectionKind, LeaderEvent, LeaderLatch, LeaderObserver, NotLeaderReason};
use zk_testing::{Backend, TestingServer};

type BoxError = Box<dyn std::error::Error>;

const ELECTION: &str = "/examples/leader/election";

fn connect(cs: &str) -> Result<CuratorFramework, BoxError> {
    let c = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(10))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    c.block_until_connected(Duration::from_secs(10))?;
    Ok(c)
}

/// Waits (with a deadline) until exactly one latch is certainly leader, and
/// returns its index.
fn the_leader(latches: &[Option<LeaderLatch>]) -> Result<usize, BoxError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let leading: Vec<usize> = (0..latches.len())
            .filter(|&i| latches[i].as_ref().is_some_and(|l| l.check().is_ok()))
            .collect();
        if leading.len() > 1 {
            return Err(format!("two leaders at once: {leading:?}").into());
        }
        if let [one] = leading[..] {
            return Ok(one);
        }
        if Instant::now() > deadline {
            return Err("no leader within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn main() -> Result<(), BoxError> {
    let external = std::env::var("ZK_CONNECT").ok();
    let server = match &external {
        Some(_) => None,
        None => Some(TestingServer::start_backend(Backend::Embedded)?),
    };
    let cs = external.unwrap_or_else(|| server.as_ref().map(TestingServer::connect_string).unwrap_or_default());
    let names = ["billing-a", "billing-b", "billing-c"];
    let clients: Vec<CuratorFramework> = names.iter().map(|_| connect(&cs)).collect::<Result<_, _>>()?;
    let watcher = connect(&cs)?;
    let observer = LeaderObserver::new(&watcher, ELECTION, ElectionKind::Latch)?;
    let seen = observer.events();

    let mut latches: Vec<Option<LeaderLatch>> = Vec::new();
    let mut events = Vec::new();
    for (c, name) in clients.iter().zip(names) {
        let l = LeaderLatch::builder(c, ELECTION).id(name).build()?;
        events.push(l.events());
        l.start()?;
        latches.push(Some(l));
    }
    let mut term = 0;
    let mut step = |what: &str, latches: &[Option<LeaderLatch>]| -> Result<usize, BoxError> {
        let i = the_leader(latches)?;
        let l = latches[i].as_ref().ok_or("a leader that was closed")?;
        let t = l.term().ok_or("a leader without a term")?;
        if t <= term {
            return Err(format!("term {t} after {term}").into());
        }
        term = t;
        // The observer follows (it may first report a leader that has not
        // noticed yet; wait for this one).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match seen.recv_timeout(left)? {
                Some(p) if p.id == l.id() => break,
                _ => continue,
            }
        }
        println!("{what:<42} leader {} (term {t}); the observer agrees", l.id());
        Ok(i)
    };

    let i = step("three latches started:", &latches)?;
    let next = latches[i]
        .as_ref()
        .ok_or("leader")?
        .hand_off()?
        .ok_or("nobody to hand to")?;
    let j = step(&format!("{} handed off to {next}:", names[i]), &latches)?;
    if latches[j].as_ref().map(LeaderLatch::id) != Some(next.as_str()) {
        return Err("the hand-off went to someone else".into());
    }

    let node = latches[j]
        .as_ref()
        .ok_or("leader")?
        .leader()?
        .ok_or("no leader node")?
        .node;
    watcher.delete().for_path(&node)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if events[j].recv_timeout(left)?
            == (LeaderEvent::NotLeader {
                reason: NotLeaderReason::NodeDeleted,
            })
        {
            break;
        }
    }
    println!("an operator deleted {}'s node: it was told NodeDeleted", names[j]);
    let k = step("and the next one leads:", &latches)?;

    latches[k].take().ok_or("leader")?.close()?;
    let m = step(&format!("{} closed:", names[k]), &latches)?;
    latches[m].take().ok_or("leader")?.close()?;
    step(&format!("{} closed:", names[m]), &latches)?;
    for l in latches.into_iter().flatten() {
        l.close()?;
    }
    let left = watcher.get_children(ELECTION).unwrap_or_default();
    if !left.is_empty() {
        return Err(format!("nodes left behind: {left:?}").into());
    }
    println!("every latch closed, no node left: one leader at a time, terms only grew");
    Ok(())
}
