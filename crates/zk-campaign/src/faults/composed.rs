//! The composed faults: two or three faults whose windows overlap, as
//! Jepsen's composed nemeses do. Each one picks a holder that holds a lock
//! now (a section under way for 300 ms at least, as its worker logged it:
//! a mutex, a write lock, a semaphore, a multi-lock or a leadership) and
//! does its steps in an order that makes them overlap, checking each step
//! on the server or in the workers' logs (a rival is a worker that logged a
//! grant of the same lock after the break); a
//! composition whose steps did not all happen (the holder let go before the
//! break, no rival was granted, the session did not survive the heal) is
//! logged as not injected (`N`) and tried again later, so that every `F`
//! line of a composed kind is a composition that really happened.
//!
//! | kind | steps |
//! |---|---|
//! | `composed-partition-break-heal` | the holder's worker cut off (its proxies cut and refusing); once the server has dropped its connection (it is told `Suspended`), an operator deletes every node of its session under the campaign's root; another holder is granted the lock; the partition heals before the session expires, the worker's re-registered watches (`SetWatches`) held back 300-600 ms |
//! | `composed-partition-restart` | the holder's worker cut off; the server (ensemble: the holder's node, or the leader) stopped and restarted while it is away, half the time with the break as above meanwhile; the heal before the session expires, with the watches held back |
//! | `composed-pause-expire-resume` | the holder's worker stopped (SIGSTOP) until the server has expired its session (its node gone) and another holder is granted; resumed (its proxies frozen half the time): it must not be told it holds |
//! | `composed-ensemble-partition-failover` | (ensemble) the holder on a follower; that follower cut off from the others, the holder's connections cut; the break on the majority, a rival granted there when one waits there; the holder fails over to a majority node (watches held back) before its session expires; the follower healed after its sync limit |
//! | `composed-break-during-handoff` | an operator break in a leader hand-off: at the moment the leader's node goes (its turn ends), the next leader's node is deleted; or the leader's node is deleted while it leads, and the next one at the hand-off that follows |
//! | `composed-random` | two or three of the plain kinds at once, each on its own thread and its own clock, the longest first and the others started inside its window; made only when every part was |
//! | `composed-rolling` | (reconfigurable ensemble) `rolling-replace` with one or two other plain kinds of the backend, each on its own thread and clock, started anywhere inside the replacement's window; made only when every part was |

use std::io;
use std::time::{Duration, Instant};

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;

use super::{ms_since, sleep_until, Faults};
use crate::paths::{ELECTION_PATH, ROOT, SEM_PATH};
use crate::prng::Rng;
use crate::record::now_ns;
use crate::server::Server;

/// A holder picked for a composition: a section under way for at least
/// 300 ms, as its worker logged it.
#[derive(Debug, Clone)]
struct Target {
    slot: usize,
    session: i64,
    /// The lock path (a multi-lock's: one member's).
    lock: String,
    mode: String,
    /// Its lock node's name.
    node: String,
}

impl Target {
    fn describe(&self) -> String {
        format!(
            "{} holder on {}: worker {} (session 0x{:x}, node {})",
            self.mode, self.lock, self.slot, self.session, self.node
        )
    }

    /// Its lock node's path (a semaphore's: its lease).
    fn node_path(&self) -> String {
        if self.lock == SEM_PATH {
            format!("{SEM_PATH}/leases/{}", self.node)
        } else {
            format!("{}/{}", self.lock, self.node)
        }
    }
}

/// Every ephemeral node under `ROOT` owned by `session` (a tree of depth 3 at most).
fn session_nodes(c: &CuratorFramework, session: i64) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![ROOT.to_string()];
    while let Some(p) = stack.pop() {
        let Ok(kids) = c.get_children(&p) else { continue };
        for k in kids {
            let child = format!("{p}/{k}");
            match c.check_exists(&child) {
                Ok(Some(st)) if st.ephemeral_owner == session => out.push(child),
                Ok(Some(st)) if st.ephemeral_owner == 0 && st.num_children > 0 => stack.push(child),
                _ => {}
            }
        }
    }
    out
}

impl<'a> Faults<'a> {
    /// An operator deletes `node`, owned by `session`; logged (`B`, the time
    /// taken before the delete is sent) when it succeeded.
    fn delete_node(&self, c: &CuratorFramework, session: i64, node: &str) -> bool {
        let t = now_ns();
        let ok = c.delete().for_path(node).is_ok();
        if ok {
            self.log.line(&format!("B {session:x} {t} {node}"));
        }
        ok
    }

    /// An operator's break: deletes every node of `session` under the
    /// campaign's root (a semaphore holder's lease and internal-mutex node, a
    /// multi-lock's every member, its worker's waiting nodes). Returns the
    /// nodes deleted.
    fn break_session(&self, c: &CuratorFramework, session: i64) -> Vec<String> {
        session_nodes(c, session)
            .into_iter()
            .filter(|p| self.delete_node(c, session, p))
            .collect()
    }

    /// A copy of this injector for one part of a composition: the same
    /// server, fleet and log, its own PRNG (seeded from this one's) and its
    /// own admin client.
    fn fork(&mut self) -> Faults<'a> {
        Faults {
            server: self.server,
            fleet: self.fleet,
            log: self.log,
            session: self.session,
            sessions: self.sessions,
            holders: self.holders,
            switches: self.switches,
            rng: Rng::new(self.rng.below(u64::MAX)),
            admin: None,
            kinds: self.kinds.clone(),
            partitions_done: self.partitions_done,
            round_done: self.round_done,
            min_each: self.min_each,
        }
    }

    /// Holders that hold now: sections under way for 300 ms at least (their
    /// worker logged the grant, not the end of its work), but reads, whose
    /// session is a running worker's. Tries for up to `patience`.
    fn holders_now(&mut self, patience: Duration) -> io::Result<Vec<Target>> {
        let deadline = Instant::now() + patience;
        loop {
            let since = now_ns().saturating_sub(300_000_000);
            let open: Vec<super::Open> = {
                let book = self.holders.lock().unwrap_or_else(|e| e.into_inner());
                let mut v: Vec<super::Open> = book
                    .open
                    .values()
                    .filter(|o| o.start <= since && o.mode != "read")
                    .cloned()
                    .collect();
                v.sort_by(|a, b| (a.start, &a.lock).cmp(&(b.start, &b.lock)));
                v
            };
            let found: Vec<Target> = {
                let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
                open.into_iter()
                    .filter_map(|o| {
                        let (&slot, _) = sessions.iter().find(|(_, (sid, _))| *sid == o.session)?;
                        Some(Target {
                            slot,
                            session: o.session,
                            lock: o.lock,
                            mode: o.mode,
                            node: o.node,
                        })
                    })
                    .collect()
            };
            if !found.is_empty() {
                return Ok(found);
            }
            if Instant::now() >= deadline {
                return Err(io::Error::other("no holder held its lock for 300 ms"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A holder that holds now, at random among [`Faults::holders_now`];
    /// one time in three a leader when one has led for 300 ms within 3 s
    /// (leaders are a tenth of the workers' turns: they would seldom be
    /// picked otherwise).
    fn pick_holder(&mut self) -> io::Result<Target> {
        if self.rng.below(3) == 0 {
            let mut leaders: Vec<Target> = Vec::new();
            if zk_testing::wait_until(Duration::from_secs(3), || {
                leaders = self
                    .holders_now(Duration::ZERO)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| t.mode == "leader")
                    .collect();
                !leaders.is_empty()
            }) {
                let i = self.rng.below(leaders.len() as u64) as usize;
                return Ok(leaders.swap_remove(i));
            }
        }
        let mut all = self.holders_now(Duration::from_secs(8))?;
        let i = self.rng.below(all.len() as u64) as usize;
        Ok(all.swap_remove(i))
    }

    /// Cuts off a worker: its proxies cut, new connections refused.
    fn isolate_slot(&self, slot: usize) {
        for p in &self.fleet.slots[slot].proxies {
            p.refuse(true);
            p.cut();
        }
    }

    /// The sum of `SetWatches` frames the slot's proxies held back so far.
    fn set_watches_held(&self, slot: usize) -> usize {
        self.fleet.slots[slot]
            .proxies
            .iter()
            .map(zk_testing::proxy::FaultProxy::set_watches_delayed)
            .sum()
    }

    /// Whether `session` has a connection on the server, as the server sees
    /// it (`None`: the server cannot say).
    fn session_connected(&self, session: i64) -> Option<bool> {
        match self.server {
            Server::Embedded(s) => {
                let e = s.embedded()?;
                Some(e.sessions().iter().any(|x| x.id == session && x.connected))
            }
            _ => {
                let mut any = false;
                for a in self.server.addrs() {
                    let cons = zk_testing::fourlw::four_letter_word(&a, "cons", Duration::from_secs(2)).ok()?;
                    any |= cons.contains(&format!("sid=0x{session:x}"));
                }
                Some(any)
            }
        }
    }

    /// Waits (bounded) until the server has dropped `session`'s connection:
    /// its client has then seen its connection close, and is told
    /// `Suspended`. Returns the milliseconds it took, or an error.
    fn wait_dropped(&self, session: i64, t0: Instant) -> io::Result<u128> {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match self.session_connected(session) {
                Some(false) => return Ok(ms_since(t0)),
                None => return Ok(ms_since(t0)),
                Some(true) if Instant::now() >= deadline => {
                    return Err(io::Error::other(
                        "the server still had the holder's connection after 3 s",
                    ))
                }
                Some(true) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }

    /// Waits (bounded) until a worker logs a grant of the target's lock to
    /// another session at or after `since` (wall-clock ns): a rival was told
    /// it holds the lock. Returns its session and when.
    fn wait_rival(&self, t: &Target, since: u64, bound: Duration) -> Option<(i64, u64)> {
        let deadline = Instant::now() + bound;
        loop {
            let found = {
                let book = self.holders.lock().unwrap_or_else(|e| e.into_inner());
                book.grants
                    .get(&t.lock)
                    .and_then(|g| g.iter().find(|(at, sid)| *at >= since && *sid != t.session).copied())
            };
            if let Some((at, sid)) = found {
                return Some((sid, at));
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Heals a worker cut off by [`Faults::isolate_slot`] (only the proxies
    /// `open` says), its re-registered watches held back `delay`; waits
    /// (bounded by a session timeout) until a `SetWatches` was held back, then
    /// for the delay, and turns the delay off. Returns the frames held back.
    fn heal_slot_slowly(&self, slot: usize, delay: Duration, open: impl Fn(usize) -> bool) -> usize {
        let before = self.set_watches_held(slot);
        for (i, p) in self.fleet.slots[slot].proxies.iter().enumerate() {
            if open(i) {
                p.delay_set_watches(delay);
                p.refuse(false);
            }
        }
        let deadline = Instant::now() + self.session;
        while self.set_watches_held(slot) == before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let held = self.set_watches_held(slot) - before;
        if held > 0 {
            std::thread::sleep(delay + Duration::from_millis(100));
        }
        for p in &self.fleet.slots[slot].proxies {
            p.delay_set_watches(Duration::ZERO);
        }
        held
    }

    /// [`Faults::heal_slot_slowly`] on every proxy of the holder's worker;
    /// fails unless a `SetWatches` was held back (its session expired?).
    fn heal_holder_slowly(&self, slot: usize, delay: Duration) -> io::Result<usize> {
        match self.heal_slot_slowly(slot, delay, |_| true) {
            0 => Err(io::Error::other(
                "the holder did not re-register its watches after the heal (its session expired?)",
            )),
            held => Ok(held),
        }
    }

    /// Undoes what a composition may have left on a worker: proxies open,
    /// no delay, the process running.
    fn release_slot(&self, slot: usize) {
        for p in &self.fleet.slots[slot].proxies {
            p.delay_set_watches(Duration::ZERO);
            p.freeze(false);
            p.refuse(false);
        }
        let _ = self.fleet.signal(slot, "CONT");
    }

    /// The injector of every composed kind.
    pub(super) fn composed(&mut self, kind: &str) -> io::Result<String> {
        let r = match kind {
            "composed-partition-break-heal" => self.partition_break_heal(),
            "composed-partition-restart" => self.partition_restart(),
            "composed-pause-expire-resume" => self.pause_expire_resume(),
            "composed-ensemble-partition-failover" => self.ensemble_partition_failover(),
            "composed-break-during-handoff" => self.break_during_handoff(),
            "composed-random" => self.random_composition(),
            "composed-rolling" => self.rolling_composition(),
            other => Err(io::Error::other(format!("unknown composed fault {other}"))),
        };
        for slot in 0..self.fleet.slots.len() {
            for p in &self.fleet.slots[slot].proxies {
                p.delay_set_watches(Duration::ZERO);
            }
        }
        r
    }

    /// The holder cut off, told `Suspended`; its nodes broken; a rival
    /// granted; healed before its session expires, with its watches held
    /// back.
    fn partition_break_heal(&mut self) -> io::Result<String> {
        let t = self.pick_holder()?;
        let delay = self.rng.ms(300, 600);
        let t0 = Instant::now();
        self.isolate_slot(t.slot);
        let r = self.break_and_heal(&t, t0, delay);
        self.release_slot(t.slot);
        r
    }

    /// The steps after the cut, shared by the compositions with a break:
    /// wait for the drop, break, wait for a rival, heal slowly.
    fn break_and_heal(&mut self, t: &Target, t0: Instant, delay: Duration) -> io::Result<String> {
        let dropped = self.wait_dropped(t.session, t0)?;
        let (broken, at_break, break_ns) = self.break_holder(t, t0)?;
        let (rival, rival_ms) = self.rival_step(t, break_ns, t0)?;
        // A little more time away, well before the session expires.
        std::thread::sleep(self.rng.ms(0, 300));
        let healed_ms = ms_since(t0);
        let held = self.heal_holder_slowly(t.slot, delay)?;
        Ok(format!(
            "{}: cut off at +0 ms, its connection dropped at +{dropped} ms; {broken} at +{at_break} ms; rival {rival} \
             seen at +{rival_ms} ms; healed at +{healed_ms} ms (session {} ms) with SetWatches held back {} ms \
             ({held} held back)",
            t.describe(),
            self.session.as_millis(),
            delay.as_millis()
        ))
    }

    /// Deletes every node of the holder's session (through `c`, or the
    /// admin client); fails unless its held node was among them. Returns
    /// what was deleted, when (ms since `t0`), and the wall-clock time
    /// before the break.
    fn break_holder_with(
        &mut self,
        c: Option<&CuratorFramework>,
        t: &Target,
        t0: Instant,
    ) -> io::Result<(String, u128, u64)> {
        let c = match c {
            Some(c) => c.clone(),
            None => self.admin()?.clone(),
        };
        let before = now_ns();
        let deleted = self.break_session(&c, t.session);
        let at = ms_since(t0);
        if !deleted.contains(&t.node_path()) {
            return Err(io::Error::other(format!(
                "the holder let go of {} before the break ({} other nodes of its session deleted)",
                t.node_path(),
                deleted.len()
            )));
        }
        Ok((format!("{} nodes of its session deleted", deleted.len()), at, before))
    }

    fn break_holder(&mut self, t: &Target, t0: Instant) -> io::Result<(String, u128, u64)> {
        self.break_holder_with(None, t, t0)
    }

    /// Waits (up to half a session timeout) for a rival told it holds the
    /// target's lock after `since`; its description and when it was seen.
    fn rival_step(&self, t: &Target, since: u64, t0: Instant) -> io::Result<(String, u128)> {
        match self.wait_rival(t, since, self.session / 2) {
            Some((sid, at)) => Ok((
                format!(
                    "0x{sid:x} (told it holds {:.1} ms after the break)",
                    at.saturating_sub(since) as f64 / 1e6
                ),
                ms_since(t0),
            )),
            None => Err(io::Error::other("no rival was granted the broken lock")),
        }
    }

    /// The holder cut off; the server restarted while it is away (half the
    /// time with a break meanwhile); healed before its session expires, with
    /// its watches held back.
    fn partition_restart(&mut self) -> io::Result<String> {
        let t = self.pick_holder()?;
        let with_break = self.rng.below(2) == 0;
        let delay = self.rng.ms(300, 600);
        let t0 = Instant::now();
        self.isolate_slot(t.slot);
        let r = self.restart_while_away(&t, t0, with_break, delay);
        self.release_slot(t.slot);
        if r.is_err() {
            let _ = self.server.heal();
        }
        r
    }

    fn restart_while_away(&mut self, t: &Target, t0: Instant, with_break: bool, delay: Duration) -> io::Result<String> {
        let dropped = self.wait_dropped(t.session, t0)?;
        let down = self.rng.ms(200, 800);
        let restarted = match self.server {
            Server::Embedded(s) | Server::Apache(s) => {
                s.stop()?;
                std::thread::sleep(down);
                s.restart()?;
                format!(
                    "server stopped at +{dropped} ms, restarted after {} ms",
                    down.as_millis()
                )
            }
            Server::Ensemble(..) => {
                // The node the holder was on is gone from `cons`; the leader.
                let i = self
                    .node(true)
                    .ok_or_else(|| io::Error::other("no leader (no quorum?)"))?;
                self.server.stop_node(i)?;
                std::thread::sleep(down);
                self.server.restart_node(i, Duration::from_secs(60))?;
                format!(
                    "leader {i} stopped at +{dropped} ms, restarted after {} ms",
                    down.as_millis()
                )
            }
            Server::Reconfigurable(_) => {
                return Err(io::Error::other(
                    "composed-partition-restart cuts a worker off through its proxies: not on --reconfigurable",
                ))
            }
        };
        if matches!(self.server, Server::Ensemble(..)) {
            self.server.wait_quorum(Duration::from_secs(60))?;
        }
        let quorum_ms = ms_since(t0);
        let broke = if with_break {
            let (broken, at, break_ns) = self.break_holder(t, t0)?;
            let (rival, rival_ms) = self.rival_step(t, break_ns, t0)?;
            format!("; {broken} at +{at} ms, rival {rival} seen at +{rival_ms} ms")
        } else {
            String::new()
        };
        let healed_ms = ms_since(t0);
        let held = self.heal_holder_slowly(t.slot, delay)?;
        Ok(format!(
            "{}: cut off at +0 ms; {restarted}, serving at +{quorum_ms} ms{broke}; healed at +{healed_ms} ms \
             (session {} ms) with SetWatches held back {} ms ({held} held back)",
            t.describe(),
            self.session.as_millis(),
            delay.as_millis()
        ))
    }

    /// The holder's worker stopped until the server expired its session and
    /// a rival was granted; resumed (half the time into frozen proxies).
    fn pause_expire_resume(&mut self) -> io::Result<String> {
        let t = self.pick_holder()?;
        let t0 = Instant::now();
        let pid = self.fleet.signal(t.slot, "STOP")?;
        // Taken once every thread has stopped.
        let stopped_at = now_ns();
        let r = self.expire_while_stopped(&t, t0);
        // (A worker straight on the servers, the reconfigurable ensemble's,
        // has no proxy to freeze.)
        let frozen = self.rng.below(2) == 0 && !self.fleet.slots[t.slot].proxies.is_empty();
        if frozen {
            for p in &self.fleet.slots[t.slot].proxies {
                p.freeze(true);
            }
        }
        let cont = self.fleet.signal(t.slot, "CONT");
        let resumed_at = now_ns();
        self.log.line(&format!("Q {pid} {stopped_at} {resumed_at}"));
        let resumed_ms = ms_since(t0);
        if frozen {
            std::thread::sleep(self.rng.ms(300, 800));
        }
        self.release_slot(t.slot);
        let (expired_ms, rival) = r?;
        cont?;
        Ok(format!(
            "{} (pid {pid}): stopped at +0 ms; its session expired at +{expired_ms} ms (timeout {} ms); rival {rival}; \
             resumed at +{resumed_ms} ms{}",
            t.describe(),
            self.session.as_millis(),
            if frozen { ", its proxies frozen for a while" } else { "" }
        ))
    }

    /// Waits (bounded) until the stopped holder's session expired (embedded:
    /// the server's sessions; otherwise: its node gone) and a rival holds.
    fn expire_while_stopped(&mut self, t: &Target, t0: Instant) -> io::Result<(u128, String)> {
        let deadline = Instant::now() + self.session * 3 + Duration::from_secs(5);
        loop {
            let gone = match self.server {
                Server::Embedded(s) => s
                    .embedded()
                    .is_some_and(|e| !e.sessions().iter().any(|x| x.id == t.session)),
                _ => {
                    let path = t.node_path();
                    let c = self.admin()?;
                    matches!(c.check_exists(&path), Ok(None))
                }
            };
            if gone {
                break;
            }
            if Instant::now() >= deadline {
                return Err(io::Error::other("the stopped holder's session did not expire"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let expired_ms = ms_since(t0);
        let since = now_ns().saturating_sub((expired_ms as u64 + 1) * 1_000_000);
        // A waiter is granted at the expiry; otherwise the next worker to
        // try the lock. The holder stays stopped meanwhile (up to three
        // sessions), so that the composition is made rather than given up.
        let bound = self.session * 3;
        match self.wait_rival(t, since, bound) {
            Some((sid, _)) => Ok((
                expired_ms,
                format!("0x{sid:x} told it holds, seen at +{} ms", ms_since(t0)),
            )),
            None => Err(io::Error::other(format!(
                "no rival was granted the {} lock {} within {} ms after the expiry (seen at +{expired_ms} ms)",
                t.mode,
                t.lock,
                bound.as_millis()
            ))),
        }
    }

    /// (Ensemble) the holder on a follower; the follower cut off from the
    /// others and the holder's connections cut; break and rival on the
    /// majority; the holder fails over to the majority with its watches held
    /// back; the follower healed after its sync limit.
    fn ensemble_partition_failover(&mut self) -> io::Result<String> {
        if !matches!(self.server, Server::Ensemble(..)) {
            return Err(io::Error::other(
                "composed-ensemble-partition-failover needs --ensemble",
            ));
        }
        let t = self.pick_holder()?;
        let leader = self
            .server
            .leader()
            .ok_or_else(|| io::Error::other("no leader (no quorum?)"))?;
        let (sync, n) = (self.server.cluster().sync_limit(), self.server.addrs().len());
        // The follower the holder is on, or one it is moved to.
        let on = (0..n).find(|&i| self.slots_on(i).contains(&t.slot));
        let (f, moved) = match on {
            Some(i) if i != leader => (i, false),
            _ => {
                let f = (0..n)
                    .find(|&i| i != leader)
                    .ok_or_else(|| io::Error::other("no follower"))?;
                self.steer_slot_onto(t.slot, f)?;
                (f, true)
            }
        };
        // An admin on the majority.
        let addrs = self.server.addrs();
        let majority: Vec<String> = (0..n).filter(|&i| i != f).map(|i| addrs[i].clone()).collect();
        let admin = CuratorFramework::builder()
            .connect_string(majority.join(","))
            .session_timeout(Duration::from_secs(20))
            .connection_timeout(Duration::from_secs(5))
            .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
            .build()
            .map_err(io::Error::other)?;
        admin
            .block_until_connected(Duration::from_secs(10))
            .map_err(io::Error::other)?;
        let delay = self.rng.ms(300, 600);
        let t0 = Instant::now();
        let cut = self.server.isolate(f);
        let r = match &cut {
            Ok(_) => self.failover_steps(&t, f, &admin, t0, delay),
            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
        };
        admin.close();
        // The follower stays cut off past its sync limit (it leaves its
        // leader and drops its clients), then heals.
        sleep_until(t0 + sync + Duration::from_millis(500));
        drop(cut);
        let healed = self.server.wait_quorum(Duration::from_secs(60));
        self.release_slot(t.slot);
        let steps = r?;
        healed?;
        Ok(format!(
            "{}{}: follower {f} cut off from the others and the holder's connections cut at +0 ms; {steps}; \
             follower healed at +{} ms (sync limit {} ms)",
            t.describe(),
            if moved { " (moved onto the follower first)" } else { "" },
            ms_since(t0),
            sync.as_millis()
        ))
    }

    fn failover_steps(
        &mut self,
        t: &Target,
        f: usize,
        admin: &CuratorFramework,
        t0: Instant,
        delay: Duration,
    ) -> io::Result<String> {
        self.isolate_slot(t.slot);
        let dropped = self.wait_dropped(t.session, t0)?;
        let (broken, at_break, break_ns) = self.break_holder_with(Some(admin), t, t0)?;
        // A rival needs a waiter on the majority (the isolated follower's
        // clients are stuck until its sync limit): without one within half
        // a session the holder fails over all the same (its lock broken, no
        // one else holding it).
        let (rival, rival_ms) = self
            .rival_step(t, break_ns, t0)
            .unwrap_or_else(|_| ("none (no waiter on the majority)".into(), ms_since(t0)));
        let failover_ms = ms_since(t0);
        let held = self.heal_slot_slowly(t.slot, delay, |i| i != f);
        if held == 0 {
            return Err(io::Error::other(
                "the holder did not fail over on its session (no SetWatches re-registered)",
            ));
        }
        // (The cluster's lock is not held across slots_on, which takes it.)
        let n = self.server.addrs().len();
        let now_on: Vec<usize> = (0..n).filter(|&i| self.slots_on(i).contains(&t.slot)).collect();
        Ok(format!(
            "connection dropped at +{dropped} ms; {broken} on the majority at +{at_break} ms; rival {rival} seen at \
             +{rival_ms} ms; failover allowed at +{failover_ms} ms with SetWatches held back {} ms ({held} held \
             back), now on {now_on:?}",
            delay.as_millis()
        ))
    }

    /// Moves a worker's session onto node `i` (its other proxies refuse and
    /// are cut until it is there, at most 5 s), then lets it settle.
    fn steer_slot_onto(&mut self, slot: usize, i: usize) -> io::Result<()> {
        for (j, p) in self.fleet.slots[slot].proxies.iter().enumerate() {
            if j != i {
                p.refuse(true);
                p.cut();
            }
        }
        let moved = zk_testing::wait_until(Duration::from_secs(5), || self.slots_on(i).contains(&slot));
        for p in &self.fleet.slots[slot].proxies {
            p.refuse(false);
        }
        if !moved && !self.slots_on(i).contains(&slot) {
            return Err(io::Error::other(format!("worker {slot} did not move onto node {i}")));
        }
        // Its holdings prove themselves again on the new connection.
        std::thread::sleep(Duration::from_millis(300));
        Ok(())
    }

    /// An operator break in a leader hand-off. "next": at the moment the
    /// leader's node goes (its turn ends), the next leader's node is deleted;
    /// "old": the leader's node (at the head with someone behind it on two
    /// polls 2 ms apart) is deleted while it leads, and the next one at the
    /// hand-off that follows (the next alone when no such leader came in 7 s).
    /// A leadership watches its own node from its grant, so a break right
    /// after an election is heard of at once (`docs/campaign.md`).
    fn break_during_handoff(&mut self) -> io::Result<String> {
        let old_first = self.rng.below(2) == 0;
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs(15);
        let c = self.admin()?.clone();
        let old = if old_first { self.break_leading(&c, t0) } else { None };
        let mut steps: Vec<String> = old.iter().map(|(step, _)| step.clone()).collect();
        let before = match &old {
            Some((_, node)) => Some(node.clone()),
            None => queue(&c).first().cloned(),
        };
        steps.push(self.break_next_leader(&c, t0, deadline, before, &steps)?);
        let after = queue(&c).first().cloned().unwrap_or_else(|| "(none)".into());
        Ok(format!(
            "{}: {}; leader after: {after}",
            match (old_first, &old) {
                (_, Some(_)) => "old then next",
                (true, None) => "next (no leader with a successor to break in 7 s)",
                (false, None) => "next",
            },
            steps.join("; ")
        ))
    }

    /// Deletes `node` through `c`, as its owner's (0 when unknown).
    fn delete_owned(&self, c: &CuratorFramework, node: &str) -> bool {
        let owner = c.check_exists(node).ok().flatten().map_or(0, |st| st.ephemeral_owner);
        self.delete_node(c, owner, node)
    }

    /// The head of the election with someone behind it, seen on two polls,
    /// its node deleted; when its owner closed it first, the next one. No
    /// wait after the grant: a leadership's own-node watch is sent with its
    /// grant (seed 105 of composed-ci broke a leader 4.8 ms after its grant
    /// when it was sent 10 ms later). None for 7 s (leaders with a successor
    /// are rare when holds are short): `None`, the next hand-off alone.
    /// Returns the step and the node deleted.
    fn break_leading(&self, c: &CuratorFramework, t0: Instant) -> Option<(String, String)> {
        let settled = Duration::ZERO;
        let mut seen: Option<(String, Instant)> = None;
        loop {
            let kids = queue(c);
            match (kids.first(), kids.len() >= 2) {
                (Some(h), true) if seen.as_ref().is_some_and(|(s, at)| s == h && at.elapsed() >= settled) => {
                    if self.delete_owned(c, h) {
                        let step = format!("the leader's node {h} deleted while it led at +{} ms", ms_since(t0));
                        return Some((step, h.clone()));
                    }
                    seen = None;
                }
                (Some(h), true) if seen.as_ref().is_some_and(|(s, _)| s == h) => {}
                (Some(h), true) => seen = Some((h.clone(), Instant::now())),
                _ => seen = None,
            }
            if t0.elapsed() >= Duration::from_secs(7) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The next hand-off after `before` (the head then): the head goes and
    /// another takes its place; the new head deleted at once, a waiter that
    /// was behind the old head or a newcomer granted in an empty election
    /// alike. Fails at `deadline` (saying the `steps` so far).
    fn break_next_leader(
        &self,
        c: &CuratorFramework,
        t0: Instant,
        deadline: Instant,
        mut before: Option<String>,
        steps: &[String],
    ) -> io::Result<String> {
        loop {
            let kids = queue(c);
            match (&before, kids.first()) {
                (Some(b), Some(new)) if new != b && !kids.contains(b) => {
                    let (b, new) = (b.clone(), new.clone());
                    let seen_ms = ms_since(t0);
                    if self.delete_owned(c, &new) {
                        return Ok(format!(
                            "hand-off from {b} seen at +{seen_ms} ms; the next leader's node {new} deleted at +{} ms",
                            ms_since(t0)
                        ));
                    }
                    // Its owner closed it first: wait for the next hand-off.
                    before = Some(new);
                }
                (_, Some(new)) => before = Some(new.clone()),
                (_, None) => {}
            }
            if Instant::now() >= deadline {
                return Err(io::Error::other(format!(
                    "no hand-off to break within 15 s ({})",
                    steps.join("; ")
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Two or three plain kinds at once, each on its own thread: the longest
    /// first, the others started inside its window.
    fn random_composition(&mut self) -> io::Result<String> {
        let (picked, offsets) = self.pick_parts();
        self.compose("composed-random", &picked, &offsets)
    }

    /// (Reconfigurable) `rolling-replace` with one or two other plain kinds
    /// of the backend at once, each on its own thread and clock, started
    /// anywhere inside the replacement's window (between its steps, or
    /// during one: a node fault then waits for the step to end).
    fn rolling_composition(&mut self) -> io::Result<String> {
        if self.server.reconf().is_none() {
            return Err(io::Error::other("composed-rolling needs --reconfigurable"));
        }
        let others: Vec<&'static str> = self
            .server
            .kinds()
            .into_iter()
            .filter(|k| *k != "rolling-replace")
            .collect();
        let k = 1 + self.rng.below(2) as usize;
        let mut picked: Vec<&'static str> = vec!["rolling-replace"];
        while picked.len() < 1 + k.min(others.len()) {
            let kind = others[self.rng.below(others.len() as u64) as usize];
            if !picked.contains(&kind) {
                picked.push(kind);
            }
        }
        let hi = self
            .expected_window("rolling-replace")
            .saturating_sub(Duration::from_millis(100))
            .as_millis() as u64;
        let mut offsets = vec![Duration::ZERO];
        for _ in 1..picked.len() {
            offsets.push(self.rng.ms(100, hi.max(200)));
        }
        self.compose("composed-rolling", &picked, &offsets)
    }

    /// Runs the parts `picked` of the composition `kind` from their
    /// offsets; made only when every part was (each part not made logged
    /// `N kind:PART`).
    fn compose(&mut self, kind: &str, picked: &[&'static str], offsets: &[Duration]) -> io::Result<String> {
        let (results, start_ns) = self.run_parts(picked, offsets);
        let parts: Vec<String> = results
            .iter()
            .map(|p| match &p.r {
                Ok(d) => format!("[{} at +{} ms, done at +{} ms: {d}]", p.kind, p.at, p.done),
                Err(e) => format!("[{} at +{} ms failed at +{} ms: {e}]", p.kind, p.at, p.done),
            })
            .collect();
        // Made only when every part was: each part not made is logged by
        // its kind (`N composed-random:PART`, `N composed-rolling:PART`),
        // and the composition is tried again.
        let failed: Vec<&Part> = results.iter().filter(|p| p.r.is_err()).collect();
        if !failed.is_empty() {
            for p in &failed {
                if let Err(e) = &p.r {
                    self.log.line(&format!(
                        "N {kind}:{} {start_ns} {} {}",
                        p.kind,
                        now_ns(),
                        super::one_line(&e.to_string())
                    ));
                }
            }
            return Err(io::Error::other(format!(
                "{} of {} parts not made ({}): {}",
                failed.len(),
                results.len(),
                failed.iter().map(|p| p.kind).collect::<Vec<_>>().join(", "),
                parts.join(" ")
            )));
        }
        Ok(format!("{}: {}", picked.join("+"), parts.join(" ")))
    }

    /// The parts of a random composition: two or three plain kinds, the one
    /// with the longest window first, and when each starts: the first at
    /// once, the others inside its window (near-simultaneous when it is an
    /// instant).
    fn pick_parts(&mut self) -> (Vec<&'static str>, Vec<Duration>) {
        let base: Vec<&'static str> = self.server.kinds();
        let k = 2 + self.rng.below(2) as usize;
        let mut picked: Vec<&'static str> = Vec::new();
        while picked.len() < k.min(base.len()) {
            let kind = base[self.rng.below(base.len() as u64) as usize];
            if !picked.contains(&kind) {
                picked.push(kind);
            }
        }
        picked.sort_by_key(|kind| std::cmp::Reverse(self.expected_window(kind)));
        let window = self.expected_window(picked[0]);
        let mut offsets = vec![Duration::ZERO];
        for _ in 1..picked.len() {
            let hi = window.saturating_sub(Duration::from_millis(100)).as_millis() as u64;
            offsets.push(if hi >= 100 {
                self.rng.ms(100, hi.min(1500))
            } else {
                self.rng.ms(0, 50)
            });
        }
        (picked, offsets)
    }

    /// Each part on its own thread, on its own clock, from its offset: what
    /// one part waits for (a quorum, the ensemble's handle) never holds back
    /// another's steps (see `server.rs`). Returns how each went, and when
    /// they began (wall clock).
    fn run_parts(&mut self, picked: &[&'static str], offsets: &[Duration]) -> (Vec<Part>, u64) {
        let mut forks: Vec<Faults<'_>> = (0..picked.len()).map(|_| self.fork()).collect();
        let (t0, start_ns) = (Instant::now(), now_ns());
        let parts = std::thread::scope(|s| {
            let handles: Vec<_> = forks
                .iter_mut()
                .zip(picked.iter().zip(offsets))
                .map(|(f, (kind, off))| {
                    s.spawn(move || {
                        sleep_until(t0 + *off);
                        let at = ms_since(t0);
                        let r = f.inject(kind);
                        if let Some(c) = f.admin.take() {
                            c.close();
                        }
                        Part {
                            kind,
                            at,
                            done: ms_since(t0),
                            r,
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .zip(picked)
                .map(|(h, kind)| {
                    h.join().unwrap_or_else(|_| Part {
                        kind,
                        at: 0,
                        done: ms_since(t0),
                        r: Err(io::Error::other("panicked")),
                    })
                })
                .collect()
        });
        (parts, start_ns)
    }

    /// How long a plain kind's window lasts, roughly (zero for an instant).
    fn expected_window(&self, kind: &str) -> Duration {
        let t = self.session;
        match kind {
            "partition-expire" | "pause-long" => t * 3 / 2,
            "pause-short" => t / 2,
            "restart" => Duration::from_millis(600),
            "stop-leader" | "kill-leader" | "stop-follower" | "kill-follower" => Duration::from_millis(1500),
            "isolate-leader" | "isolate-follower" | "oneway-from-leader" | "oneway-to-leader" | "pause-leader-sync" => {
                Duration::from_secs(5)
            }
            "flap-leader" => t,
            "minority-client" | "pause-holder-minority" => t + Duration::from_secs(5),
            // About 3 s a step (a JVM started, two reconfigs) and the gaps.
            "rolling-replace" => Duration::from_secs(3) * self.server.addrs().len() as u32,
            _ => Duration::ZERO,
        }
    }
}

/// One part of a random composition: its kind, when it began and ended (ms
/// after the composition began), and what it did.
struct Part {
    kind: &'static str,
    at: u128,
    done: u128,
    r: io::Result<String>,
}

/// The election's nodes, sorted by sequence (full paths).
fn queue(c: &CuratorFramework) -> Vec<String> {
    let Ok(mut kids) = c.get_children(ELECTION_PATH) else {
        return Vec::new();
    };
    kids.retain(|k| k.contains("latch-"));
    zk_framework::paths::sort_by_sequence(&mut kids, "latch-");
    kids.into_iter().map(|k| format!("{ELECTION_PATH}/{k}")).collect()
}
