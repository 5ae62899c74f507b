//! Injecting faults: choosing a kind, doing it to the server, a worker or a
//! lock queue, and logging it.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;

use crate::fleet::Fleet;
use crate::paths::{MUTEX_PATH, SEM_PATH};
use crate::prng::Rng;
use crate::record::{now_ns, LineLog};
use crate::server::Server;

/// Latest session (id, password) reported by each worker slot.
pub(crate) type Sessions = Mutex<HashMap<usize, (i64, Vec<u8>)>>;

pub(crate) struct Faults<'a> {
    pub(crate) server: &'a Server,
    pub(crate) fleet: &'a Fleet,
    pub(crate) log: &'a LineLog,
    pub(crate) session: Duration,
    pub(crate) sessions: &'a Sessions,
    pub(crate) rng: Rng,
    /// A client of the coordinator's own (for `break-waiter`), made when needed.
    pub(crate) admin: Option<CuratorFramework>,
}

impl Faults<'_> {
    fn record(&self, kind: &str, start: u64, detail: &str) {
        self.log.line(&format!("F {kind} {start} {} {detail}", now_ns()));
        println!("fault {kind}: {detail}");
    }

    fn random_slot(&mut self) -> usize {
        self.rng.below(self.fleet.slots.len() as u64) as usize
    }

    /// An ensemble node index: the leader, or a running follower.
    fn node(&mut self, leader: bool) -> Option<usize> {
        let c = self.server.cluster();
        let l = c.leader()?;
        if leader {
            return Some(l);
        }
        let f: Vec<usize> = (0..c.len()).filter(|&i| i != l && c.is_running(i)).collect();
        drop(c);
        if f.is_empty() {
            None
        } else {
            Some(f[self.rng.below(f.len() as u64) as usize])
        }
    }

    fn pause_server(&mut self, d: Duration) -> io::Result<String> {
        match self.server {
            Server::Embedded(s) | Server::Apache(s) => {
                s.pause()?;
                std::thread::sleep(d);
                s.resume()?;
                Ok(format!("server paused {} ms", d.as_millis()))
            }
            Server::Ensemble(..) => {
                let i = self.node(true).ok_or_else(|| io::Error::other("no leader to pause"))?;
                self.server.cluster().pause(i)?;
                std::thread::sleep(d);
                self.server.cluster().resume(i)?;
                Ok(format!("leader {i} paused {} ms", d.as_millis()))
            }
        }
    }

    /// Stops (or kills) an ensemble node, waits a moment, restarts it.
    fn bounce_node(&mut self, leader: bool, kill: bool) -> io::Result<String> {
        let i = self
            .node(leader)
            .ok_or_else(|| io::Error::other("no such node (no quorum?)"))?;
        {
            let mut c = self.server.cluster();
            if kill {
                c.kill(i)?;
            } else {
                c.stop(i)?;
            }
        }
        let down = self.rng.ms(500, 3000);
        std::thread::sleep(down);
        let mut c = self.server.cluster();
        c.restart(i)?;
        c.wait_for_quorum(Duration::from_secs(60))?;
        Ok(format!(
            "node {i} ({}) {} for {} ms, restarted",
            if leader { "leader" } else { "follower" },
            if kill { "killed" } else { "stopped" },
            down.as_millis()
        ))
    }

    /// Deletes a waiting node (any but the first in its queue) of the mutex or
    /// of the semaphore's internal mutex, in one transaction with a check
    /// that the first node still exists: while it does, nothing behind it is
    /// granted, so the deleted node was a waiter's. Tries for a few seconds
    /// to find a queue with a waiter.
    fn break_waiter(&mut self) -> io::Result<String> {
        if self.admin.is_none() {
            let c = CuratorFramework::builder()
                .connect_string(self.server.connect_string())
                .session_timeout(Duration::from_secs(20))
                .connection_timeout(Duration::from_secs(5))
                .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
                .build()
                .map_err(io::Error::other)?;
            self.admin = Some(c);
        }
        let c = self.admin.as_ref().expect("just set");
        c.block_until_connected(Duration::from_secs(10))
            .map_err(io::Error::other)?;
        let mut queues = [MUTEX_PATH.to_string(), format!("{SEM_PATH}/locks")];
        if self.rng.below(2) == 1 {
            queues.swap(0, 1);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            for base in &queues {
                let Ok(mut kids) = c.get_children(base) else { continue };
                if kids.len() < 2 {
                    continue;
                }
                zk_framework::paths::sort_by_sequence(&mut kids, "lock-");
                let i = 1 + self.rng.below(kids.len() as u64 - 1) as usize;
                let (head, node) = (format!("{base}/{}", kids[0]), format!("{base}/{}", kids[i]));
                let ops = vec![zk_framework::Op::check(head, -1), zk_framework::Op::delete(&node, None)];
                if c.zookeeper_client().multi(ops).is_ok() {
                    return Ok(format!("waiting node {node} deleted (place {i} of {})", kids.len()));
                }
            }
            if Instant::now() >= deadline {
                return Err(io::Error::other("no waiter to break"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn inject(&mut self, kind: &str) -> io::Result<String> {
        let t = self.session;
        match kind {
            "partition-expire" => {
                let slot = self.random_slot();
                let margin = match self.server {
                    Server::Embedded(_) => Duration::from_millis(300),
                    _ => Duration::from_millis(1500), // Apache expires on 1 s ticks
                };
                let d = t * 3 / 2 + margin;
                let before = self
                    .sessions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&slot)
                    .cloned();
                for p in &self.fleet.slots[slot].proxies {
                    p.freeze(true);
                }
                std::thread::sleep(d);
                for p in &self.fleet.slots[slot].proxies {
                    p.freeze(false);
                }
                let expired = match (self.server, before) {
                    (Server::Embedded(s), Some((sid, _))) => {
                        let live = s.embedded().expect("embedded").sessions().iter().any(|x| x.id == sid);
                        if live {
                            " (session still live!)"
                        } else {
                            " (session expired)"
                        }
                    }
                    _ => "",
                };
                Ok(format!(
                    "worker {slot} (pid {:?}) partitioned {} ms{expired}",
                    self.fleet.pid(slot),
                    d.as_millis()
                ))
            }
            "instant-expire" => {
                let target = match self.server {
                    Server::Embedded(s) => {
                        // Prefer a session that holds or waits for a lock.
                        let all = s.embedded().expect("embedded").sessions();
                        let busy: Vec<_> = all.iter().filter(|x| !x.ephemerals.is_empty()).collect();
                        let pool: Vec<_> = if busy.is_empty() { all.iter().collect() } else { busy };
                        if pool.is_empty() {
                            return Err(io::Error::other("no session to expire"));
                        }
                        let x = pool[self.rng.below(pool.len() as u64) as usize];
                        (x.id, x.password.clone())
                    }
                    _ => {
                        let slot = self.random_slot();
                        self.sessions
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get(&slot)
                            .cloned()
                            .ok_or_else(|| io::Error::other("no session reported yet"))?
                    }
                };
                self.log.line(&format!("I {:x} {}", target.0, now_ns()));
                match self.server {
                    Server::Embedded(s) | Server::Apache(s) => s.expire_session(target.0, &target.1)?,
                    Server::Ensemble(_, addrs) => {
                        let mut last = None;
                        for a in addrs {
                            match zk_testing::raw::RawConnection::connect(a, 30_000, Some((target.0, &target.1))) {
                                Ok((mut c, resp)) => {
                                    if resp.timeout > 0 {
                                        c.close_session()?;
                                    }
                                    last = None;
                                    break;
                                }
                                Err(e) => last = Some(e),
                            }
                        }
                        if let Some(e) = last {
                            return Err(e);
                        }
                    }
                }
                Ok(format!("session 0x{:x} expired by the server", target.0))
            }
            "cut" => {
                let slot = self.random_slot();
                for p in &self.fleet.slots[slot].proxies {
                    p.cut();
                }
                Ok(format!(
                    "worker {slot} (pid {:?}) connections cut",
                    self.fleet.pid(slot)
                ))
            }
            "drop-all" => match self.server {
                Server::Embedded(s) => {
                    let n = s.embedded().expect("embedded").drop_connections();
                    Ok(format!("{n} connections dropped by the server"))
                }
                _ => {
                    for s in &self.fleet.slots {
                        for p in &s.proxies {
                            p.cut();
                        }
                    }
                    Ok("every proxy cut".into())
                }
            },
            "pause-short" => {
                let d = self.rng.scale(t, 0.3, 0.7);
                self.pause_server(d)
            }
            "pause-long" => {
                let d = t * 3 / 2 + Duration::from_millis(300);
                self.pause_server(d)
            }
            "restart" => {
                let (Server::Embedded(s) | Server::Apache(s)) = self.server else {
                    return Err(io::Error::other("restart is for a standalone server"));
                };
                let down = self.rng.ms(200, 1000);
                s.stop()?;
                std::thread::sleep(down);
                s.restart()?;
                Ok(format!("server down {} ms", down.as_millis()))
            }
            "stop-leader" => self.bounce_node(true, false),
            "kill-leader" => self.bounce_node(true, true),
            "stop-follower" => self.bounce_node(false, false),
            "kill-follower" => self.bounce_node(false, true),
            "kill-worker" => {
                let slot = self.random_slot();
                let old = self.fleet.kill(slot);
                let new = self.fleet.spawn(slot)?;
                Ok(format!("worker {slot} pid {old:?} killed -9, replaced by pid {new}"))
            }
            "break-waiter" => self.break_waiter(),
            other => Err(io::Error::other(format!("unknown fault {other}"))),
        }
    }

    /// Injects faults until `stop`: a shuffled round of every kind, then random
    /// ones, with quiet gaps between them.
    pub(crate) fn run(&mut self, stop: &AtomicBool) {
        let kinds = self.server.kinds();
        let mut order: Vec<&str> = kinds.to_vec();
        for i in (1..order.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }
        let mut n = 0usize;
        let sleep_checked = |d: Duration| {
            let until = Instant::now() + d;
            while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
            }
        };
        sleep_checked(Duration::from_millis(1500)); // let the workers start
        while !stop.load(Ordering::SeqCst) {
            let kind = if n < order.len() {
                order[n]
            } else {
                kinds[self.rng.below(kinds.len() as u64) as usize]
            };
            n += 1;
            let start = now_ns();
            match self.inject(kind) {
                Ok(detail) => self.record(kind, start, &detail),
                Err(e) => {
                    eprintln!("fault {kind} failed: {e}");
                    self.log.line(&format!("N {kind} {start} {e}"));
                    if let Err(e) = self.server.heal() {
                        eprintln!("healing after {kind} failed: {e}");
                    }
                }
            }
            let gap = self.rng.ms(300, 1500);
            sleep_checked(gap);
        }
        if let Some(c) = self.admin.take() {
            c.close();
        }
    }
}
