//! The `partition` scenario (issue 42 item 5), run only when named
//! (`--only partition`), ours and then kazoo 2.8's `SetPartitioner` if asked
//! for (`scripts/bench/kazoo_bench.py partition`, all its members in that
//! one process; Curator 5.4 has no partitioner: one skip line).
//!
//! `--partition-members` members (4), each its own client (session), share
//! [`ITEMS`] items (`i00`…`i31`) with kazoo's default partition function,
//! a settle time of [`SETTLE`] (ours: `time_boundary`; kazoo:
//! `time_boundary=0.2`); ours releases by itself
//! (`auto_release(true)`), kazoo's members call `release_set()` as soon as
//! they see `RELEASE`. A member's view is its last state as its user sees
//! it (ours: the event received from `events()`; kazoo: the state read
//! after its `state_change_event` is set). The split is **settled** when
//! every live member is `Acquired` with exactly the share the default
//! function gives it for the live members (so disjoint shares covering the
//! set, by the new split); the time to it is measured from:
//!
//! * **join**: just before a new member's start (ours `start()`, kazoo's
//!   constructor, which joins the party), its client already connected;
//! * **expire**: just before the harness expires a member's session
//!   (`expire_session`, as the registration scenario does);
//! * **close**: just before a member's client is closed (its session
//!   ends, its party and lock nodes go with it).
//!
//! Each round: an expiry, a join, a close, a join (the party back to its
//! size); 1 round unmeasured, then `--partition-rounds`; p50/p99/max of
//! each.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use zk_framework::CuratorFramework;
use zk_recipes::{default_partition, PartitionState, SetPartitioner};
use zk_testing::TestingServer;

use crate::ours::client;
use crate::shared;
use crate::Ctx;

/// Items of the set.
pub const ITEMS: usize = 32;

/// The settle time, ours and kazoo's alike.
pub const SETTLE: Duration = Duration::from_millis(200);

/// Unmeasured rounds before the measured ones.
pub const WARM_ROUNDS: usize = 1;

/// Why Curator has no partition rows.
pub const CURATOR_NO_PARTITION: &str = "Curator 5.4 has no set partitioner (CURATOR-321 asked for one)";

/// How long a rebalance may take before the scenario gives up.
const GIVE_UP: Duration = Duration::from_secs(120);

/// The set's items.
pub fn items() -> Vec<String> {
    (0..ITEMS).map(|i| format!("i{i:02}")).collect()
}

/// The partitioner's path for `who`.
pub fn path(who: &str) -> String {
    format!("/bench/partition/{who}")
}

/// One member of ours: its client and partitioner.
struct Member {
    c: CuratorFramework,
    p: SetPartitioner,
}

/// What a member's forwarding thread tells: (member, its state, when received).
type Seen = (String, PartitionState, Instant);

/// The live members and what each last said.
struct Party {
    path: String,
    items: Vec<String>,
    members: BTreeMap<String, Member>,
    last: BTreeMap<String, (PartitionState, Instant)>,
    tx: mpsc::Sender<Seen>,
    rx: mpsc::Receiver<Seen>,
    next: usize,
}

impl Party {
    /// Starts a member on a connected client; returns its id and the
    /// instant just before its start.
    fn join(&mut self, cs: &str) -> (String, Instant) {
        let id = format!("m{:03}", self.next);
        self.next += 1;
        let c = client(cs);
        let p = SetPartitioner::builder(&c, &self.path, self.items.clone())
            .identifier(id.clone())
            .time_boundary(SETTLE)
            .auto_release(true)
            .build()
            .expect("partitioner");
        let events = p.events();
        let (tx, who) = (self.tx.clone(), id.clone());
        std::thread::spawn(move || {
            for ev in events {
                if tx.send((who.clone(), ev.state, Instant::now())).is_err() {
                    return;
                }
            }
        });
        let t0 = Instant::now();
        p.start().expect("start the member");
        self.members.insert(id.clone(), Member { c, p });
        (id, t0)
    }

    /// Takes `id` out of the party: its partitioner and client closed
    /// (after `kill` has ended its session).
    fn remove(&mut self, id: &str) -> Member {
        self.last.remove(id);
        self.members.remove(id).expect("a live member")
    }

    /// Waits until every live member is Acquired with its share by the
    /// default function: the instant the last of them was seen so.
    fn settled(&mut self) -> Instant {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        let deadline = Instant::now() + GIVE_UP;
        loop {
            let all = ids.iter().all(|id| {
                matches!(self.last.get(id), Some((PartitionState::Acquired { items }, _))
                    if *items == default_partition(id, &ids, &self.items))
            });
            if all {
                return ids.iter().map(|id| self.last[id].1).max().expect("members");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let (who, state, at) = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("the party of {} did not settle within {GIVE_UP:?}", ids.len()));
            if self.members.contains_key(&who) {
                assert!(!state.is_failure(), "live member {who} failed: {state}");
                self.last.insert(who, (state, at));
            }
        }
    }
}

/// Ours: the partition scenario.
pub fn ours(x: &Ctx) {
    let Some(server) = x.server() else {
        println!("partition.skipped=needs the server this process starts (--connect/--ensemble: no expire)");
        return;
    };
    let k = usize::from(x.o.partition_members);
    let (tx, rx) = mpsc::channel();
    let mut party = Party {
        path: path("ours"),
        items: items(),
        members: BTreeMap::new(),
        last: BTreeMap::new(),
        tx,
        rx,
        next: 0,
    };
    for _ in 0..k {
        party.join(&x.cs);
    }
    party.settled();
    let (mut joins, mut expires, mut closes) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..WARM_ROUNDS + x.o.partition_rounds {
        let measured = r >= WARM_ROUNDS;
        // An expiry of the first member (the oldest).
        let id = party.members.keys().next().cloned().expect("members");
        let m = party.remove(&id);
        let (session, pw) = (m.c.session_id(), m.c.zookeeper_client().session_password());
        let t0 = Instant::now();
        expire(server, session, &pw);
        let d = party.settled() - t0;
        if measured {
            expires.push(d);
        }
        let _ = m.p.close();
        m.c.close();
        let (_, t0) = party.join(&x.cs);
        let d = party.settled() - t0;
        if measured {
            joins.push(d);
        }
        // A close of the first member.
        let id = party.members.keys().next().cloned().expect("members");
        let m = party.remove(&id);
        let t0 = Instant::now();
        m.c.close();
        let d = party.settled() - t0;
        if measured {
            closes.push(d);
        }
        let _ = m.p.close();
        let (_, t0) = party.join(&x.cs);
        let d = party.settled() - t0;
        if measured {
            joins.push(d);
        }
    }
    report(x, "", &mut joins, &mut expires, &mut closes);
    for (_, m) in std::mem::take(&mut party.members) {
        let _ = m.p.close();
        m.c.close();
    }
}

/// Expires `session` with the harness.
pub fn expire(server: &TestingServer, session: i64, password: &[u8]) {
    server.expire_session(session, password).expect("expire the session");
}

/// Prints the three kinds of rebalance under `{prefix}partition.members_K.items_N.`.
pub fn report(x: &Ctx, prefix: &str, joins: &mut [Duration], expires: &mut [Duration], closes: &mut [Duration]) {
    let key = format!("{prefix}partition.members_{}.items_{ITEMS}", x.o.partition_members);
    shared::report_times(&format!("{key}.join_to_settled"), joins);
    shared::report_times(&format!("{key}.expiry_to_settled"), expires);
    shared::report_times(&format!("{key}.close_to_settled"), closes);
}
