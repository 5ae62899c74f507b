//! The reconfigurable ensemble as the campaign's server (`--reconfigurable`):
//! zk-testing's `ReconfigurableEnsemble` (3 to 7 Apache servers with
//! `reconfigEnabled`), whose members the `rolling-replace` kind replaces one
//! by one on new ports while the other kinds stop, kill, restart and pause
//! the members there are *now*.
//!
//! Servers are named by their server id, never by an index: a member
//! replaced is gone for good, and its successor has another id and other
//! ports. What the parts of a composition share:
//!
//! * **The members**, a snapshot taken under the handle's lock after every
//!   change of membership, read without it (addresses, the leader by `srvr`,
//!   the quorum), so that a part that only looks never waits for a
//!   replacement under way (seconds: a JVM starts, two `reconfig`s commit).
//! * **The handle** (`ReconfigurableEnsemble`, behind one lock): a
//!   replacement holds it for its whole step; a kill, a restart, a pause
//!   take it briefly. A node fault that comes during a step waits for the
//!   step's end (its start delayed; its window, counted from its own first
//!   act, kept).
//! * **A whole ensemble before each step**: a step starts only when every
//!   member runs, none is paused by a part ([`crate::faults::Switches`]'s
//!   pauses, by pid) and none has been taken down by a part that will
//!   restart it ([`Reconf::downs`]); it waits (bounded) for that outside the
//!   handle's lock, and checks it again under the lock. So a step never
//!   removes a member another part has stopped and means to restart, and a
//!   reconfiguration never waits for a quorum a paused leader withholds
//!   while it holds the handle.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use zk_testing::apache::{ApacheConfig, ReconfigurableEnsemble};

use crate::holds::HoldBook;

/// A member of the ensemble, as the last snapshot has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    /// Its server id.
    pub(crate) id: u64,
    /// Its client address, `127.0.0.1:port`.
    pub(crate) addr: String,
    /// Its `zoo.cfg` (what its JVM's command line names: how its pid is
    /// found).
    cfg: PathBuf,
    /// How long the node fault that picked it waited for the handle
    /// (another part's replacement step or restart) before it acted; zero in
    /// a snapshot.
    pub(crate) waited_for_handle: Duration,
}

/// One step of a rolling replacement: `old` replaced by `new`.
#[derive(Debug, Clone)]
pub(crate) struct Replaced {
    pub(crate) old: u64,
    pub(crate) old_addr: String,
    /// `leader` or `follower` (`srvr`), when it answered.
    pub(crate) old_mode: Option<String>,
    pub(crate) new: u64,
    pub(crate) new_addr: String,
    /// How long the step took (the new server started, added, the old one
    /// removed and stopped, a quorum).
    pub(crate) took: Duration,
}

/// The reconfigurable ensemble (see the module).
pub(crate) struct Reconf {
    handle: Mutex<ReconfigurableEnsemble>,
    members: Mutex<Vec<Member>>,
    /// Members a part stopped or killed and will restart: not whole.
    downs: Mutex<HashSet<u64>>,
}

/// The file (in the run's directory) in which the coordinator writes the
/// final members' addresses (`ADDR,ADDR,...`) before the stop file: each
/// worker then checks where its client is (`EW`).
pub(crate) const FINAL_MEMBERS: &str = "final-members";

/// How long a worker waits at its end for its client to be connected to a
/// final member with only final members in its server list: the tracker's
/// delay, then a connection timeout (the workers': one session) to move,
/// another session for a change seen late (a watch re-set on a new
/// connection, a sync and a read), and 2 s of round trips.
pub(crate) fn end_bound(session: Duration, tracker_delay: Duration) -> Duration {
    tracker_delay + session * 2 + Duration::from_secs(2)
}

/// How long a member's `srvr` may take to answer.
const SRVR_TIMEOUT: Duration = Duration::from_millis(1500);

impl Reconf {
    /// Starts `n` servers and waits for their quorum.
    pub(crate) fn start(n: usize) -> io::Result<Reconf> {
        let e = ReconfigurableEnsemble::start(n, ApacheConfig::default())?;
        let members = snapshot(&e);
        Ok(Reconf {
            handle: Mutex::new(e),
            members: Mutex::new(members),
            downs: Mutex::new(HashSet::new()),
        })
    }

    /// The handle, locked: see the module for who holds it how long.
    pub(crate) fn handle(&self) -> MutexGuard<'_, ReconfigurableEnsemble> {
        self.handle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The members, as the last snapshot has them (without the handle).
    pub(crate) fn members(&self) -> Vec<Member> {
        self.members.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The members' client addresses (without the handle).
    pub(crate) fn addrs(&self) -> Vec<String> {
        self.members().into_iter().map(|m| m.addr).collect()
    }

    fn resnapshot(&self, e: &ReconfigurableEnsemble) {
        *self.members.lock().unwrap_or_else(|e| e.into_inner()) = snapshot(e);
    }

    fn downs(&self) -> MutexGuard<'_, HashSet<u64>> {
        self.downs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Each member's `Mode:` (`None`: it does not answer), without the
    /// handle.
    pub(crate) fn modes(&self) -> Vec<(Member, Option<String>)> {
        self.members()
            .into_iter()
            .map(|m| {
                let mode = mode(&m.addr);
                (m, mode)
            })
            .collect()
    }

    /// Waits until more than half of the members serve, one of them as the
    /// leader (their `srvr`, without the handle; polled every 100 ms: the
    /// modes are other processes' state, told by nothing else).
    pub(crate) fn wait_quorum(&self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let modes = self.modes();
            let leaders = modes.iter().filter(|(_, m)| m.as_deref() == Some("leader")).count();
            let serving = modes
                .iter()
                .filter(|(_, m)| matches!(m.as_deref(), Some("leader" | "follower")))
                .count();
            if leaders == 1 && serving > modes.len() / 2 {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let seen: Vec<String> = modes
                    .iter()
                    .map(|(m, mode)| format!("{}:{}", m.id, mode.as_deref().unwrap_or("not serving")))
                    .collect();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no quorum within {timeout:?} (modes: {})", seen.join(", ")),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Why the ensemble is not whole (see the module), under the handle
    /// `e`; `None`: it is.
    fn not_whole(&self, e: &ReconfigurableEnsemble, paused: &HoldBook<Option<u32>>) -> Option<String> {
        let downs = self.downs().clone();
        snapshot(e).into_iter().find_map(|m| {
            if downs.contains(&m.id) {
                return Some(format!("server {} is down (another part will restart it)", m.id));
            }
            if !e.is_running(m.id) {
                return Some(format!("server {} is not running", m.id));
            }
            match pid_of(&m.cfg) {
                Some(pid) if paused.is_held(&Some(pid)) => Some(format!("server {} is paused", m.id)),
                Some(_) => None,
                None => Some(format!("server {} has no process", m.id)),
            }
        })
    }

    /// Waits (up to `patience`) until the ensemble is whole and has a
    /// quorum, and returns its handle, locked (checked under the lock), and
    /// how long it waited.
    pub(crate) fn whole(
        &self,
        paused: &HoldBook<Option<u32>>,
        patience: Duration,
    ) -> io::Result<(MutexGuard<'_, ReconfigurableEnsemble>, Duration)> {
        let t0 = Instant::now();
        let deadline = t0 + patience;
        loop {
            let quorum = self.wait_quorum(deadline.saturating_duration_since(Instant::now()));
            let why = {
                let e = self.handle();
                match (&quorum, self.not_whole(&e, paused)) {
                    (Ok(()), None) => return Ok((e, t0.elapsed())),
                    (Err(q), _) => q.to_string(),
                    (Ok(()), Some(why)) => why,
                }
            };
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the ensemble was not whole within {patience:?}: {why}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Replaces member `old` through the locked handle `e`: a new server on
    /// new ports added, `old` removed and stopped (`replace_server`). The
    /// snapshot follows the membership, also when the step failed halfway.
    pub(crate) fn replace(&self, e: &mut ReconfigurableEnsemble, old: u64) -> io::Result<Replaced> {
        let port = e
            .client_port(old)
            .ok_or_else(|| io::Error::other(format!("server {old} is unknown")))?;
        let old_addr = format!("127.0.0.1:{port}");
        let old_mode = mode(&old_addr);
        let t0 = Instant::now();
        let r = e.replace_server(old);
        self.resnapshot(e);
        let new = r?;
        let new_addr = format!(
            "127.0.0.1:{}",
            e.client_port(new)
                .ok_or_else(|| io::Error::other(format!("server {new} has no port")))?
        );
        Ok(Replaced {
            old,
            old_addr,
            old_mode,
            new,
            new_addr,
            took: t0.elapsed(),
        })
    }

    /// Under the handle (a replacement step under way ends first): waits
    /// (up to 15 s) for a quorum, takes the member that leads now (`leader`)
    /// or one that follows (`choose(n)` picks among the `n` followers), and
    /// does `act` to it. So a node fault acts on a member there is when it
    /// acts, never on one a step removed while it waited. Says how long it
    /// waited for the handle.
    fn act_on<T>(
        &self,
        leader: bool,
        choose: impl FnOnce(usize) -> usize,
        act: impl FnOnce(&mut ReconfigurableEnsemble, &Member) -> io::Result<T>,
    ) -> io::Result<(Member, T)> {
        let t0 = Instant::now();
        let mut e = self.handle();
        let waited = t0.elapsed();
        self.wait_quorum(Duration::from_secs(15))?;
        let want = if leader { "leader" } else { "follower" };
        let found: Vec<Member> = snapshot(&e)
            .into_iter()
            .filter(|m| mode(&m.addr).as_deref() == Some(want))
            .collect();
        if found.is_empty() {
            return Err(io::Error::other(format!("no {want} (no quorum?)")));
        }
        let m = found[choose(found.len()).min(found.len() - 1)].clone();
        let r = act(&mut e, &m)?;
        Ok((
            Member {
                waited_for_handle: waited,
                ..m
            },
            r,
        ))
    }

    /// Kills the member that leads (or a follower, `choose`n), to be
    /// restarted by the same part; returns it.
    pub(crate) fn kill(&self, leader: bool, choose: impl FnOnce(usize) -> usize) -> io::Result<Member> {
        let (m, ()) = self.act_on(leader, choose, |e, m| {
            self.downs().insert(m.id);
            e.kill(m.id)
        })?;
        Ok(m)
    }

    /// Stops the member that leads (or a follower, `choose`n) gracefully,
    /// to be restarted by the same part: SIGTERM, its exit awaited without
    /// the handle, then reaped by the handle's `stop`; returns it.
    pub(crate) fn stop(&self, leader: bool, choose: impl FnOnce(usize) -> usize) -> io::Result<Member> {
        let (m, pid) = self.act_on(leader, choose, |_, m| {
            self.downs().insert(m.id);
            Ok(pid_of(&m.cfg))
        })?;
        if let Some(pid) = pid {
            // A paused JVM cannot handle SIGTERM: let it continue first.
            let _ = crate::fleet::send_signal(pid, "CONT");
            if crate::fleet::send_signal(pid, "TERM").is_ok() {
                zk_testing::wait_until(Duration::from_secs(15), || !crate::fleet::alive(pid));
            }
        }
        self.handle().stop(m.id)?;
        Ok(m)
    }

    /// Restarts member `id` if it is still a member (`Ok(None)`: removed
    /// meanwhile, left stopped), and waits until it serves. Returns how long
    /// it waited for the handle.
    pub(crate) fn restart(&self, id: u64) -> io::Result<Option<Duration>> {
        let t0 = Instant::now();
        let mut e = self.handle();
        let waited = t0.elapsed();
        if !e.members().contains(&id) {
            self.downs().remove(&id);
            return Ok(None);
        }
        let r = e.restart(id);
        if r.is_ok() {
            self.downs().remove(&id);
        }
        r.map(|()| Some(waited))
    }

    /// Pauses the member that leads now (SIGSTOP), counted in `paused` by
    /// its pid, under the handle (so that a step's check of a whole
    /// ensemble sees it). Returns it and the pid, by which it is resumed
    /// without the handle.
    pub(crate) fn pause_leader(&self, paused: &HoldBook<Option<u32>>) -> io::Result<(Member, u32)> {
        self.act_on(
            true,
            |_| 0,
            |_, m| {
                let pid = pid_of(&m.cfg).ok_or_else(|| io::Error::other(format!("server {} has no process", m.id)))?;
                paused.take(&[Some(pid)], |_| crate::fleet::send_signal(pid, "STOP"), |_| {})?;
                Ok(pid)
            },
        )
    }

    /// Undoes what a fault may have left: every member resumed, those not
    /// running restarted; then a quorum.
    pub(crate) fn heal(&self) -> io::Result<()> {
        {
            let mut e = self.handle();
            for m in snapshot(&e) {
                if let Some(pid) = pid_of(&m.cfg) {
                    let _ = crate::fleet::resume_pid(pid);
                }
                if !e.is_running(m.id) {
                    e.restart(m.id)?;
                }
            }
            self.downs().clear();
            self.resnapshot(&e);
        }
        self.wait_quorum(Duration::from_secs(60))
    }

    /// The members' addresses and the configuration's version after it is
    /// read again from the servers (the end of a run).
    pub(crate) fn final_members(&self) -> io::Result<(Vec<String>, u64)> {
        let mut e = self.handle();
        let version = e.refresh_config()?.version();
        self.resnapshot(&e);
        Ok((snapshot(&e).into_iter().map(|m| m.addr).collect(), version))
    }
}

/// The members of `e`'s last configuration known.
fn snapshot(e: &ReconfigurableEnsemble) -> Vec<Member> {
    e.members()
        .into_iter()
        .filter_map(|id| {
            Some(Member {
                id,
                addr: format!("127.0.0.1:{}", e.client_port(id)?),
                cfg: e.log_path(id)?.parent()?.join("zoo.cfg"),
                waited_for_handle: Duration::ZERO,
            })
        })
        .collect()
}

/// A server's `Mode:` from its `srvr`.
fn mode(addr: &str) -> Option<String> {
    zk_testing::fourlw::four_letter_word(addr, "srvr", SRVR_TIMEOUT)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Mode:"))
        .map(|m| m.trim().to_string())
}

/// The pid of the live process whose command line names `cfg` (a server's
/// JVM names its `zoo.cfg` last).
fn pid_of(cfg: &Path) -> Option<u32> {
    let want = cfg.as_os_str().as_encoded_bytes();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        (cmdline.split(|b| *b == 0).any(|arg| arg == want) && crate::fleet::alive(pid)).then_some(pid)
    })
}

#[cfg(test)]
mod tests {
    use super::pid_of;

    #[test]
    fn a_process_is_found_by_the_file_its_command_line_names() {
        let dir = std::env::temp_dir().join(format!("zk-campaign-pid-of-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("zoo.cfg");
        std::fs::write(&cfg, "").unwrap();
        assert_eq!(pid_of(&cfg), None);
        let mut child = std::process::Command::new("tail")
            .arg("-f")
            .arg(&cfg)
            .spawn()
            .expect("tail");
        assert_eq!(pid_of(&cfg), Some(child.id()));
        assert_eq!(pid_of(&dir.join("other.cfg")), None);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(pid_of(&cfg), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
