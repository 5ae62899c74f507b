//! Injecting faults: choosing a kind, doing it to the server, a worker or a
//! lock queue, and logging it.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;

use crate::fleet::resume_pid;
use crate::fleet::Fleet;
use crate::holds::{Hold, HoldBook};
use crate::paths::{MUTEX_PATH, SEM_PATH};
use crate::prng::Rng;
use crate::record::{now_ns, LineLog};
use crate::server::{LinkHold, Server, PARTITION_KINDS};

mod composed;
mod rolling;

/// Latest session (id, password) reported by each worker slot.
pub(crate) type Sessions = Mutex<HashMap<usize, (i64, Vec<u8>)>>;

/// A section under way, as its worker's log says (an `S` line, no `D` or
/// `E` yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Open {
    /// The lock path (a multi-lock: each member's).
    pub(crate) lock: String,
    /// `mutex`, `read`, `write`, `semaphore`, `multi` or `leader`.
    pub(crate) mode: String,
    /// Its holder's session.
    pub(crate) session: i64,
    /// When it was granted (wall-clock ns).
    pub(crate) start: u64,
    /// The lock node's name.
    pub(crate) node: String,
}

/// What the coordinator reads in the workers' logs while they run: the
/// sections under way (by pid, thread, attempt, lock), and the latest
/// grants on each lock (when, to which session).
#[derive(Debug, Default)]
pub(crate) struct Book {
    pub(crate) open: HashMap<(u32, u32, u64, String), Open>,
    pub(crate) grants: HashMap<String, std::collections::VecDeque<(u64, i64)>>,
}

impl Book {
    /// Reads one worker log line (`S`, `D`, `E`; others are ignored).
    pub(crate) fn line(&mut self, f: &[&str]) {
        let key = |f: &[&str]| -> Option<(u32, u32, u64)> {
            Some((
                f.get(1)?.parse().ok()?,
                f.get(2)?.parse().ok()?,
                f.get(3)?.parse().ok()?,
            ))
        };
        match f.first() {
            Some(&"S") if f.len() >= 10 => {
                let (Some(k), Ok(session), Ok(start)) = (key(f), u64::from_str_radix(f[7], 16), f[8].parse::<u64>())
                else {
                    return;
                };
                let session = session as i64;
                let grants = self.grants.entry(f[4].to_string()).or_default();
                grants.push_back((start, session));
                if grants.len() > 64 {
                    grants.pop_front();
                }
                self.open.insert(
                    (k.0, k.1, k.2, f[4].to_string()),
                    Open {
                        lock: f[4].to_string(),
                        mode: f[5].to_string(),
                        session,
                        start,
                        node: f[9].to_string(),
                    },
                );
            }
            Some(&"D") | Some(&"E") => {
                if let Some(k) = key(f) {
                    self.open.retain(|o, _| (o.0, o.1, o.2) != k);
                }
            }
            _ => {}
        }
    }
}

/// The coordinator's [`Book`], shared with the fault thread.
pub(crate) type Holders = Mutex<Book>;

/// The switches the parts of a composition share besides the ensemble's
/// links (those are the server's, [`crate::server::LinkBook`]): counted
/// ([`crate::holds`]), so that each part gives back only its own, at its
/// own time.
#[derive(Debug, Default)]
pub(crate) struct Switches {
    /// The server paused: `None` a standalone server, `Some(pid)` an
    /// ensemble node's process.
    pub(crate) paused: HoldBook<Option<u32>>,
    /// A worker's proxy frozen: (slot, proxy).
    pub(crate) frozen: HoldBook<(usize, usize)>,
}

pub(crate) struct Faults<'a> {
    pub(crate) server: &'a Server,
    pub(crate) fleet: &'a Fleet,
    pub(crate) log: &'a LineLog,
    pub(crate) session: Duration,
    pub(crate) sessions: &'a Sessions,
    /// The sections under way and the latest grants (the composed faults
    /// pick their holders there).
    pub(crate) holders: &'a Holders,
    /// The paused servers and frozen proxies, counted (shared by the parts
    /// of a composition).
    pub(crate) switches: &'a Switches,
    pub(crate) rng: Rng,
    /// A client of the coordinator's own (for `break-waiter`), made when needed.
    pub(crate) admin: Option<CuratorFramework>,
    /// The kinds to inject.
    pub(crate) kinds: Vec<&'static str>,
    /// Partition faults injected so far (the coordinator may wait for a number).
    pub(crate) partitions_done: &'a AtomicUsize,
    /// Set once every kind happened `min_each` times (once at least): the
    /// run lasts at least that long (within its cap); a kind not made is
    /// tried again meanwhile.
    pub(crate) round_done: &'a AtomicBool,
    /// How many times every kind must happen (0 counts as 1).
    pub(crate) min_each: usize,
}

impl<'a> Faults<'a> {
    fn record(&self, kind: &str, start: u64, detail: &str) {
        if PARTITION_KINDS.contains(&kind) {
            self.partitions_done.fetch_add(1, Ordering::SeqCst);
        }
        let detail = one_line(detail);
        self.log.line(&format!("F {kind} {start} {} {detail}", now_ns()));
        println!("fault {kind}: {detail}");
    }

    fn random_slot(&mut self) -> usize {
        self.rng.below(self.fleet.slots.len() as u64) as usize
    }

    /// An ensemble node index: the leader, or a running follower.
    fn node(&mut self, leader: bool) -> Option<usize> {
        let l = self.server.leader()?;
        if leader {
            return Some(l);
        }
        let running = self.server.running();
        let f: Vec<usize> = (0..running.len()).filter(|&i| i != l && running[i]).collect();
        if f.is_empty() {
            None
        } else {
            Some(f[self.rng.below(f.len() as u64) as usize])
        }
    }

    /// Pauses the server (an ensemble: its leader) for `d`, counted from
    /// the pause. Another part of a composition may hold it paused too: the
    /// last to give it back resumes it (see [`Switches`]).
    fn pause_server(&mut self, d: Duration) -> io::Result<String> {
        match self.server {
            Server::Embedded(s) | Server::Apache(s) => {
                self.switches.paused.take(&[None], |_| s.pause(), |_| {})?;
                sleep_until(Instant::now() + d);
                let (mut resumed, mut r) = (false, Ok(()));
                self.switches.paused.give(&[None], |_| {
                    resumed = true;
                    r = s.resume();
                });
                r?;
                Ok(format!(
                    "server paused {} ms{}",
                    d.as_millis(),
                    kept_by_another(resumed)
                ))
            }
            Server::Reconfigurable(_) => self.pause_member(d),
            Server::Ensemble(..) => {
                let i = self.node(true).ok_or_else(|| io::Error::other("no leader to pause"))?;
                let pid = self.pause_node(i)?;
                sleep_until(Instant::now() + d);
                let resumed = self.resume_node(pid)?;
                Ok(format!(
                    "leader {i} paused {} ms{}",
                    d.as_millis(),
                    kept_by_another(resumed)
                ))
            }
        }
    }

    /// Pauses ensemble node `i` (SIGSTOP, every thread stopped), counted
    /// by its pid ([`Switches::paused`]); returns the pid, by which
    /// [`Faults::resume_node`] lets it go on without the ensemble's handle.
    fn pause_node(&self, i: usize) -> io::Result<u32> {
        let pid = self
            .server
            .cluster()
            .pid(i)
            .ok_or_else(|| io::Error::other(format!("node {i} is not running")))?;
        self.switches.paused.take(
            &[Some(pid)],
            |_| {
                let mut c = self.server.cluster();
                if c.pid(i) != Some(pid) {
                    return Err(io::Error::other(format!("node {i} was restarted meanwhile")));
                }
                c.pause(i)
            },
            |_| {},
        )?;
        Ok(pid)
    }

    /// Gives back this part's pause of the node process `pid`: resumes it
    /// when no other part holds it paused (returns whether it did).
    fn resume_node(&self, pid: u32) -> io::Result<bool> {
        let (mut resumed, mut r) = (false, Ok(()));
        self.switches.paused.give(&[Some(pid)], |_| {
            resumed = true;
            r = resume_pid(pid);
        });
        r.map(|()| resumed)
    }

    /// Freezes the proxies of worker `slot` that `which` says, counted
    /// ([`Switches::frozen`]): each one thaws when no part holds it frozen.
    fn freeze(&self, slot: usize, which: impl Fn(usize) -> bool) -> io::Result<Hold<'a, (usize, usize)>> {
        let fleet = self.fleet;
        let keys: Vec<(usize, usize)> = (0..fleet.slots[slot].proxies.len())
            .filter(|&j| which(j))
            .map(|j| (slot, j))
            .collect();
        self.switches.frozen.hold(
            &keys,
            |(s, j)| {
                fleet.slots[s].proxies[j].freeze(true);
                Ok(())
            },
            move |(s, j)| fleet.slots[s].proxies[j].freeze(false),
        )
    }

    /// Undoes whatever a fault not made may have left: every worker let go
    /// on and its proxies thawed, the server healed; the counts of the
    /// switches forgotten.
    fn heal_everything(&self, kind: &str) {
        let _ = self.switches.frozen.reset(|| {
            self.fleet.thaw_all();
            Ok(())
        });
        if let Err(e) = self.switches.paused.reset(|| self.server.heal()) {
            eprintln!("healing after {kind} failed: {e}");
        }
    }

    /// Stops (or kills) an ensemble node, waits a moment, restarts it (once
    /// no link is cut: see [`Server::restart_node`]) and waits for a quorum.
    fn bounce_node(&mut self, leader: bool, kill: bool) -> io::Result<String> {
        let i = self
            .node(leader)
            .ok_or_else(|| io::Error::other("no such node (no quorum?)"))?;
        if kill {
            self.server.cluster().kill(i)?;
        } else {
            self.server.stop_node(i)?;
        }
        let t0 = Instant::now();
        let down = self.rng.ms(500, 3000);
        sleep_until(t0 + down);
        let waited = self.server.restart_node(i, Duration::from_secs(60))?;
        let serving = ms_since(t0);
        self.server.wait_quorum(Duration::from_secs(60))?;
        Ok(format!(
            "node {i} ({}) {} for {} ms, restarted{}: serving at +{serving} ms, a quorum at +{} ms",
            if leader { "leader" } else { "follower" },
            if kill { "killed" } else { "stopped" },
            down.as_millis(),
            if waited >= Duration::from_millis(100) {
                format!(" after {} ms more for the links another part cut", waited.as_millis())
            } else {
                String::new()
            },
            ms_since(t0)
        ))
    }

    /// Deletes a waiting node (any but the first in its queue) of the mutex or
    /// of the semaphore's internal mutex, in one transaction with a check
    /// that the first node still exists: while it does, nothing behind it is
    /// granted, so the deleted node was a waiter's. Tries for a few seconds
    /// to find a queue with a waiter.
    /// The coordinator's own client, connected (on the reconfigurable
    /// ensemble, one that follows its members).
    fn admin(&mut self) -> io::Result<&CuratorFramework> {
        if self.admin.is_none() {
            let c = CuratorFramework::builder()
                .connect_string(self.server.connect_string())
                .session_timeout(Duration::from_secs(20))
                .connection_timeout(Duration::from_secs(5))
                .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
                .ensemble_tracker(self.server.reconf().is_some())
                .ensemble_tracker_delay(Duration::from_millis(100))
                .build()
                .map_err(io::Error::other)?;
            self.admin = Some(c);
        }
        let c = self.admin.as_ref().expect("just set");
        c.block_until_connected(Duration::from_secs(10))
            .map_err(io::Error::other)?;
        Ok(c)
    }

    /// A worker slot that holds a lock and has held it for a while (the
    /// head of the mutex's queue or the semaphore's lease, the same node 300
    /// ms apart: most likely a long hold), if any.
    fn long_holder(&mut self) -> Option<usize> {
        // The mutex's holder heads its queue; the semaphore's holds its one lease.
        let queues = [
            (MUTEX_PATH.to_string(), "lock-"),
            (format!("{SEM_PATH}/leases"), "lease-"),
        ];
        let heads = |c: &CuratorFramework| -> Vec<String> {
            queues
                .iter()
                .filter_map(|(q, marker)| {
                    let mut kids = c.get_children(q).ok()?;
                    zk_framework::paths::sort_by_sequence(&mut kids, marker);
                    kids.first().map(|k| format!("{q}/{k}"))
                })
                .collect()
        };
        let c = self.admin().ok()?;
        let first = heads(c);
        std::thread::sleep(Duration::from_millis(300));
        let still: Vec<String> = heads(c).into_iter().filter(|h| first.contains(h)).collect();
        let owners: Vec<i64> = still
            .iter()
            .filter_map(|h| c.check_exists(h).ok().flatten().map(|st| st.ephemeral_owner))
            .collect();
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        owners
            .iter()
            .find_map(|o| sessions.iter().find(|(_, (sid, _))| sid == o).map(|(slot, _)| *slot))
    }

    fn break_waiter(&mut self) -> io::Result<String> {
        let _ = self.admin()?;
        let c = self.admin.as_ref().expect("just set");
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

    /// The worker slots whose session is on node `i` now (its `cons`).
    fn slots_on(&self, i: usize) -> Vec<usize> {
        let Some(addr) = self.server.addrs().get(i).cloned() else {
            return Vec::new();
        };
        let cons = zk_testing::fourlw::four_letter_word(&addr, "cons", Duration::from_secs(2)).unwrap_or_default();
        let sids: Vec<i64> = cons
            .split("sid=0x")
            .skip(1)
            .filter_map(|rest| {
                let hex: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
                u64::from_str_radix(&hex, 16).ok().map(|v| v as i64)
            })
            .collect();
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let mut slots: Vec<usize> = sessions
            .iter()
            .filter(|(_, (sid, _))| sids.contains(sid))
            .map(|(slot, _)| *slot)
            .collect();
        slots.sort_unstable();
        slots
    }

    /// Makes sure some worker's session is on node `i`: when none is, moves a
    /// random one there (its proxies to the other nodes refuse and are cut
    /// until it has reconnected to `i`, at most 5 s). Returns the slots on `i`.
    fn steer_onto(&mut self, i: usize) -> Vec<usize> {
        let on = self.slots_on(i);
        if !on.is_empty() {
            return on;
        }
        let slot = self.random_slot();
        let proxies = &self.fleet.slots[slot].proxies;
        for (j, p) in proxies.iter().enumerate() {
            if j != i {
                p.refuse(true);
                p.cut();
            }
        }
        let mut on = Vec::new();
        zk_testing::wait_until(Duration::from_secs(5), || {
            on = self.slots_on(i);
            on.contains(&slot)
        });
        for p in &self.fleet.slots[slot].proxies {
            p.refuse(false);
        }
        on
    }

    /// Gives back `hold` at `at` (the links it cut heal, unless another part
    /// holds them too), then waits for one whole ensemble again.
    fn heal_at(&self, hold: LinkHold<'_>, at: Instant) -> io::Result<()> {
        sleep_until(at);
        hold.release();
        self.server.wait_quorum(Duration::from_secs(60))
    }

    /// The partitions inside the ensemble (see `PARTITION_KINDS`). Each one
    /// holds its own links in the server's link book and keeps its own
    /// clock: its window counts from its cut (or its pause), and what it
    /// undoes it undoes at the end of that window, without waiting for any
    /// other part of a composition.
    fn partition(&mut self, kind: &str) -> io::Result<String> {
        let e = self.ensemble()?;
        // Long enough for the side that notices last (a sync limit), and then some.
        let d = e.sync + self.rng.ms(300, (self.session.as_millis() as u64 / 2).max(300));
        match kind {
            "isolate-leader" => {
                let on = self.isolate_for(e.leader, d)?;
                Ok(format!(
                    "leader {} cut off from both followers for {} ms (workers {on:?} on it)",
                    e.leader,
                    d.as_millis()
                ))
            }
            "isolate-follower" => {
                // The follower with the most worker sessions on it.
                let f = e
                    .followers
                    .iter()
                    .copied()
                    .max_by_key(|&f| (self.slots_on(f).len(), f))
                    .ok_or_else(|| io::Error::other("no follower"))?;
                let on = self.isolate_for(f, d)?;
                Ok(format!(
                    "follower {f} cut off from the others for {} ms (workers {on:?} on it)",
                    d.as_millis()
                ))
            }
            "oneway-from-leader" | "oneway-to-leader" => self.oneway(&e, kind == "oneway-from-leader", d),
            "flap-leader" => self.flap_leader(&e),
            "minority-client" | "pause-holder-minority" => self.minority_client(&e, kind == "pause-holder-minority"),
            "pause-leader-sync" => self.pause_leader_sync(&e),
            other => Err(io::Error::other(format!("unknown partition {other}"))),
        }
    }

    /// The ensemble as a partition finds it.
    fn ensemble(&self) -> io::Result<Ensemble> {
        let leader = self
            .server
            .leader()
            .ok_or_else(|| io::Error::other("no leader (no quorum?)"))?;
        let n = self.server.addrs().len();
        Ok(Ensemble {
            leader,
            followers: (0..n).filter(|&i| i != leader).collect(),
            sync: self.server.cluster().sync_limit(),
        })
    }

    /// Cuts node `i` off from the others for `d` (a worker steered onto it
    /// first, when none is there), then waits for the whole ensemble again.
    /// Returns the worker slots on it.
    fn isolate_for(&mut self, i: usize, d: Duration) -> io::Result<Vec<usize>> {
        let on = self.steer_onto(i);
        let cut = self.server.isolate(i)?;
        self.heal_at(cut, Instant::now() + d)?;
        Ok(on)
    }

    /// The bytes from the leader to one follower or both (`out`), or to the
    /// leader from them, held for `d`, the other direction flowing.
    fn oneway(&mut self, e: &Ensemble, out: bool, d: Duration) -> io::Result<String> {
        let targets = e.targets(&mut self.rng);
        let dirs: Vec<(usize, usize)> = targets
            .iter()
            .map(|&f| if out { (e.leader, f) } else { (f, e.leader) })
            .collect();
        let cut = self.server.hold_links(&dirs)?;
        self.heal_at(cut, Instant::now() + d)?;
        Ok(format!(
            "bytes {} leader {} {} {targets:?} held for {} ms",
            if out { "from" } else { "to" },
            e.leader,
            if out { "to" } else { "from" },
            d.as_millis()
        ))
    }

    /// The links between the leader and one follower or both down and up in
    /// turn for a session timeout and then some.
    fn flap_leader(&mut self, e: &Ensemble) -> io::Result<String> {
        let targets = e.targets(&mut self.rng);
        let down = self.rng.ms(300, 2500);
        let up = self.rng.ms(200, 1500);
        let total = self.session + self.rng.ms(0, 2000);
        let dirs: Vec<(usize, usize)> = targets.iter().flat_map(|&f| [(e.leader, f), (f, e.leader)]).collect();
        let downs = self.flap(&dirs, down, up, Instant::now() + total)?;
        self.server.wait_quorum(Duration::from_secs(60))?;
        Ok(format!(
            "links leader {} <-> {targets:?} flapping (down {} ms, up {} ms) for {} ms ({downs} times down)",
            e.leader,
            down.as_millis(),
            up.as_millis(),
            total.as_millis()
        ))
    }

    /// A worker that can reach only node `x`, cut off from the others: its
    /// session expires on the majority side (a follower's clients are
    /// dropped when it leaves its leader; a paused worker, `pause`, does not
    /// even try to move). Preferably a worker in the middle of a long hold.
    fn minority_client(&mut self, e: &Ensemble, pause: bool) -> io::Result<String> {
        let (slot, holder) = match self.long_holder() {
            Some(slot) => (slot, " (holding a lock)"),
            None => (self.random_slot(), ""),
        };
        let x = match self.rng.below(3) {
            0 => e.leader,
            _ => e.follower(&mut self.rng),
        };
        // A follower's clients are dropped at the sync limit and their
        // sessions expire a session timeout after the leader last heard
        // of them; a leader's, a session timeout after a new leader.
        let hold = self.session + e.sync + self.rng.ms(500, 1500);
        // The cut first: it may wait for the ensemble's handle (another
        // part's restart); the worker's clock starts after it.
        let frozen = self.freeze(slot, |i| i != x)?;
        let cut = self.server.isolate(x)?;
        let t0 = Instant::now();
        // (The cut and the freeze are given back on any error: they are
        // holds.)
        let (stopped, resumed) = if pause {
            let (pid, said) = self.stop_worker_for(slot, t0, hold)?;
            (format!(" (pid {pid}) paused and"), said)
        } else {
            sleep_until(t0 + hold);
            (String::new(), String::new())
        };
        frozen.release();
        let healed = ms_since(t0);
        cut.release();
        self.server.wait_quorum(Duration::from_secs(60))?;
        Ok(format!(
            "worker {slot}{holder}{stopped} cut off with node {x}{} for {} ms{resumed}; healed at +{healed} ms",
            if x == e.leader {
                " (the leader)"
            } else {
                " (a follower)"
            },
            hold.as_millis() + if pause { 1000 } else { 0 },
        ))
    }

    /// Stops the worker in `slot` (SIGSTOP) until `hold` after `t0`,
    /// resumes it (a `Q` line) and waits 1 s more: resumed 1 s before the
    /// heal, still cut off, its check() must not say `Ok`. Returns its pid
    /// and what to say of it.
    fn stop_worker_for(&self, slot: usize, t0: Instant, hold: Duration) -> io::Result<(u32, String)> {
        let paused_at = now_ns();
        let pid = self.fleet.signal(slot, "STOP")?;
        sleep_until(t0 + hold);
        let _ = self.fleet.signal(slot, "CONT");
        let resumed_at = now_ns();
        self.log.line(&format!("Q {pid} {paused_at} {resumed_at}"));
        let said = format!(
            ", stopped {} ms (planned {} ms), resumed 1000 ms before the heal",
            resumed_at.saturating_sub(paused_at) / 1_000_000,
            hold.as_millis()
        );
        sleep_until(t0 + hold + Duration::from_millis(1000));
        Ok((pid, said))
    }

    /// The leader paused (SIGSTOP) past its sync limit, short of the session
    /// timeout when it can.
    fn pause_leader_sync(&mut self, e: &Ensemble) -> io::Result<String> {
        let room = self.session.saturating_sub(e.sync);
        let p = e.sync
            + if room > Duration::from_millis(200) {
                self.rng.scale(room, 0.3, 0.9)
            } else {
                self.rng.ms(300, 1000)
            };
        let pid = self.pause_node(e.leader)?;
        let t0 = Instant::now();
        sleep_until(t0 + p);
        let resumed = self.resume_node(pid)?;
        let at = ms_since(t0);
        self.server.wait_quorum(Duration::from_secs(60))?;
        Ok(format!(
            "leader {} paused {} ms (sync limit {} ms), given back at +{at} ms{}",
            e.leader,
            p.as_millis(),
            e.sync.as_millis(),
            kept_by_another(resumed)
        ))
    }

    /// Makes the directions `dirs` flap until `until`: held for `down`, open
    /// for `up`, in turn, on a thread of its own, through the link book (so
    /// that it never opens a link another part holds). Returns how many
    /// times they went down.
    fn flap(&self, dirs: &[(usize, usize)], down: Duration, up: Duration, until: Instant) -> io::Result<usize> {
        let server = self.server;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            let flapper = s.spawn(move || -> io::Result<usize> {
                use std::sync::mpsc::RecvTimeoutError::Disconnected;
                let mut downs = 0;
                loop {
                    let hold = server.hold_links(dirs)?;
                    downs += 1;
                    let r = stopped.recv_timeout(down);
                    hold.release();
                    if matches!(r, Err(Disconnected)) || matches!(stopped.recv_timeout(up), Err(Disconnected)) {
                        return Ok(downs);
                    }
                }
            });
            sleep_until(until);
            drop(stop);
            flapper
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the flapping thread panicked")))
        })
    }

    /// Makes one fault of `kind`; says what it did, or why it could not.
    fn inject(&mut self, kind: &str) -> io::Result<String> {
        let t = self.session;
        match kind {
            "partition-expire" => self.partition_expire(),
            "instant-expire" => {
                let (sid, pwd) = self.expiry_target()?;
                self.log.line(&format!("I {sid:x} {}", now_ns()));
                self.expire(sid, &pwd)?;
                Ok(format!("session 0x{sid:x} expired by the server"))
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
            "drop-all" => Ok(self.drop_all()),
            "pause-short" => {
                let d = self.rng.scale(t, 0.3, 0.7);
                self.pause_server(d)
            }
            "pause-long" => {
                let d = t * 3 / 2 + Duration::from_millis(300);
                self.pause_server(d)
            }
            "restart" => self.restart_server(),
            "stop-leader" | "kill-leader" | "stop-follower" | "kill-follower" => {
                let (leader, kill) = (kind.ends_with("-leader"), kind.starts_with("kill-"));
                if self.server.reconf().is_some() {
                    self.bounce_member(leader, kill)
                } else {
                    self.bounce_node(leader, kill)
                }
            }
            "rolling-replace" => self.rolling_replace(),
            "kill-worker" => {
                let slot = self.random_slot();
                let old = self.fleet.kill(slot);
                let new = self.fleet.spawn(slot, &self.server.connect_string())?;
                Ok(format!("worker {slot} pid {old:?} killed -9, replaced by pid {new}"))
            }
            "break-waiter" => self.break_waiter(),
            "isolate-leader"
            | "isolate-follower"
            | "oneway-from-leader"
            | "oneway-to-leader"
            | "flap-leader"
            | "minority-client"
            | "pause-leader-sync"
            | "pause-holder-minority" => self.partition(kind),
            k if k.starts_with("composed-") => self.composed(k),
            other => Err(io::Error::other(format!("unknown fault {other}"))),
        }
    }

    /// One worker's proxies frozen for 1.5 session timeouts and a margin:
    /// its session expires the realistic way (the embedded server says
    /// whether it did).
    fn partition_expire(&mut self) -> io::Result<String> {
        let slot = self.random_slot();
        let margin = match self.server {
            Server::Embedded(_) => Duration::from_millis(300),
            _ => Duration::from_millis(1500), // Apache expires on 1 s ticks
        };
        let d = self.session * 3 / 2 + margin;
        let before = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&slot)
            .cloned();
        let frozen = self.freeze(slot, |_| true)?;
        sleep_until(Instant::now() + d);
        frozen.release();
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

    /// The session to expire at once: on the embedded server, preferably
    /// one that holds or waits for a lock; elsewhere a random worker's.
    fn expiry_target(&mut self) -> io::Result<(i64, Vec<u8>)> {
        match self.server {
            Server::Embedded(s) => {
                let all = s.embedded().expect("embedded").sessions();
                let busy: Vec<_> = all.iter().filter(|x| !x.ephemerals.is_empty()).collect();
                let pool: Vec<_> = if busy.is_empty() { all.iter().collect() } else { busy };
                if pool.is_empty() {
                    return Err(io::Error::other("no session to expire"));
                }
                let x = pool[self.rng.below(pool.len() as u64) as usize];
                Ok((x.id, x.password.clone()))
            }
            _ => {
                let slot = self.random_slot();
                self.sessions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&slot)
                    .cloned()
                    .ok_or_else(|| io::Error::other("no session reported yet"))
            }
        }
    }

    /// The server expires session `sid` at once (embedded `expire_session`;
    /// Apache: closeSession from a second connection, on the first node that
    /// takes it).
    fn expire(&self, sid: i64, pwd: &[u8]) -> io::Result<()> {
        match self.server {
            Server::Embedded(s) | Server::Apache(s) => s.expire_session(sid, pwd),
            Server::Ensemble(..) | Server::Reconfigurable(_) => {
                let mut last = None;
                for a in &self.server.addrs() {
                    match zk_testing::raw::RawConnection::connect(a, 30_000, Some((sid, pwd))) {
                        Ok((mut c, resp)) => {
                            if resp.timeout > 0 {
                                c.close_session()?;
                            }
                            return Ok(());
                        }
                        Err(e) => last = Some(e),
                    }
                }
                last.map_or(Ok(()), Err)
            }
        }
    }

    /// Every client connection dropped (embedded `drop_connections`;
    /// Apache: every proxy cut).
    fn drop_all(&self) -> String {
        match self.server {
            Server::Embedded(s) => {
                let n = s.embedded().expect("embedded").drop_connections();
                format!("{n} connections dropped by the server")
            }
            _ => {
                for s in &self.fleet.slots {
                    for p in &s.proxies {
                        p.cut();
                    }
                }
                "every proxy cut".into()
            }
        }
    }

    /// A standalone server stopped and restarted after 0.2-1 s.
    fn restart_server(&mut self) -> io::Result<String> {
        let (Server::Embedded(s) | Server::Apache(s)) = self.server else {
            return Err(io::Error::other("restart is for a standalone server"));
        };
        let down = self.rng.ms(200, 1000);
        s.stop()?;
        std::thread::sleep(down);
        s.restart()?;
        Ok(format!("server down {} ms", down.as_millis()))
    }

    /// Injects faults until `stop`: a shuffled round of every kind; then the
    /// kinds that have not happened `min_each` times (once at least: a
    /// fault not made, logged `N`, is tried again), the least happened
    /// first; then random ones; with quiet gaps between them.
    pub(crate) fn run(&mut self, stop: &AtomicBool) {
        let kinds = self.kinds.clone();
        let mut order: Vec<&str> = kinds.to_vec();
        for i in (1..order.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }
        let mut n = 0usize;
        let need = self.min_each.max(1);
        // Kinds injected so far (the least happened go first).
        let mut done: HashMap<&str, usize> = HashMap::new();
        let sleep_checked = |d: Duration| {
            let until = Instant::now() + d;
            while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
            }
        };
        sleep_checked(Duration::from_millis(1500)); // let the workers start
        while !stop.load(Ordering::SeqCst) {
            let kind = self.next_kind(n, &order, &done, need);
            n += 1;
            let start = now_ns();
            match self.inject(kind) {
                Ok(detail) => {
                    self.record(kind, start, &detail);
                    *done.entry(kind).or_default() += 1;
                }
                Err(e) => {
                    let e = one_line(&e.to_string());
                    eprintln!("fault {kind} not made: {e}");
                    self.log.line(&format!("N {kind} {start} {} {e}", now_ns()));
                    self.heal_everything(kind);
                }
            }
            let round = kinds.iter().all(|k| done.get(k).copied().unwrap_or(0) >= need);
            if round {
                self.round_done.store(true, Ordering::SeqCst);
            }
            let gap = self.rng.ms(300, 1500);
            sleep_checked(gap);
        }
        if let Some(c) = self.admin.take() {
            c.close();
        }
    }

    /// The `n`th fault's kind: the shuffled first round (`order`) first;
    /// then a kind that has not happened `need` times (`done`), the least
    /// happened first; then, when partitions are among the kinds, a
    /// partition three times in five (they are what that profile is for);
    /// else any kind.
    fn next_kind(
        &mut self,
        n: usize,
        order: &[&'static str],
        done: &HashMap<&str, usize>,
        need: usize,
    ) -> &'static str {
        let kinds = &self.kinds;
        let partitions: Vec<&'static str> = kinds.iter().copied().filter(|k| PARTITION_KINDS.contains(k)).collect();
        let least = kinds
            .iter()
            .map(|k| done.get(k).copied().unwrap_or(0))
            .min()
            .unwrap_or(0);
        let behind: Vec<&'static str> = kinds
            .iter()
            .copied()
            .filter(|k| least < need && done.get(k).copied().unwrap_or(0) == least)
            .collect();
        if n < order.len() {
            order[n]
        } else if !behind.is_empty() {
            behind[self.rng.below(behind.len() as u64) as usize]
        } else if !partitions.is_empty() && partitions.len() < kinds.len() && self.rng.below(5) < 3 {
            partitions[self.rng.below(partitions.len() as u64) as usize]
        } else {
            kinds[self.rng.below(kinds.len() as u64) as usize]
        }
    }
}

/// The ensemble as a partition finds it: its leader, its followers and its
/// sync limit.
struct Ensemble {
    leader: usize,
    followers: Vec<usize>,
    sync: Duration,
}

impl Ensemble {
    /// One follower or both (then the leader loses its quorum).
    fn targets(&self, rng: &mut Rng) -> Vec<usize> {
        if rng.below(2) == 0 {
            self.followers.clone()
        } else {
            vec![self.follower(rng)]
        }
    }

    /// A follower at random.
    fn follower(&self, rng: &mut Rng) -> usize {
        self.followers[rng.below(self.followers.len() as u64) as usize]
    }
}

/// What a part says when it gave back a pause another part still held.
fn kept_by_another(resumed: bool) -> &'static str {
    if resumed {
        ""
    } else {
        " (left paused: another part holds it paused too)"
    }
}

/// Sleeps until `at` (a fault's planned instant; at once when it has passed).
fn sleep_until(at: Instant) {
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
}

/// Milliseconds since `t0`, for a fault's steps.
fn ms_since(t0: Instant) -> u128 {
    t0.elapsed().as_millis()
}

/// A fault's detail on one log line: its lines joined by ` / ` (an error
/// from a server may carry the tail of its log).
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" / ")
}

#[cfg(test)]
mod tests {
    use super::{one_line, Book};

    #[test]
    fn a_detail_goes_on_one_line() {
        assert_eq!(
            one_line("did not start:\n  log line 1\n\nlog line 2"),
            "did not start: / log line 1 / log line 2"
        );
        assert_eq!(one_line("plain"), "plain");
    }

    fn feed(book: &mut Book, line: &str) {
        let f: Vec<&str> = line.split(' ').collect();
        book.line(&f);
    }

    #[test]
    fn the_book_keeps_the_sections_under_way_and_the_grants() {
        let mut b = Book::default();
        feed(&mut b, "S 10 0 1 /campaign/mutex multi 5 1a 100 _c_x-lock-0000000005");
        feed(&mut b, "S 10 0 1 /campaign/sem multi 7 1a 100 _c_x-lease-0000000007");
        feed(
            &mut b,
            "S 11 2 4 /campaign/election leader 90 2b 150 _c_y-latch-0000000001",
        );
        assert_eq!(b.open.len(), 3);
        let o = &b.open[&(11, 2, 4, "/campaign/election".to_string())];
        assert_eq!(
            (o.session, o.start, o.node.as_str()),
            (0x2b, 150, "_c_y-latch-0000000001")
        );
        // The work of the multi-lock's attempt is done: both members go.
        feed(&mut b, "D 10 0 1 200");
        assert_eq!(b.open.len(), 1);
        feed(
            &mut b,
            "E 11 2 4 /campaign/election leader 90 2b 150 300 - - - Held Held 1 ok",
        );
        assert!(b.open.is_empty());
        assert_eq!(b.grants["/campaign/mutex"], [(100, 0x1a)]);
        // Lines it cannot read change nothing.
        feed(&mut b, "S 12 0 1 /l mutex 5 not-hex 100 n");
        feed(&mut b, "S 12");
        feed(&mut b, "D x");
        assert!(b.open.is_empty());
        // Only the latest 64 grants of a lock are kept.
        for i in 0..100u64 {
            feed(&mut b, &format!("S 13 0 {i} /l mutex {i} 3c {i} n"));
        }
        assert_eq!(b.grants["/l"].len(), 64);
        assert_eq!(b.grants["/l"].front(), Some(&(36, 0x3c)));
    }
}
