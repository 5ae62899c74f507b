//! The worker processes and their fault proxies: spawning, killing, waiting.

use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zk_testing::proxy::FaultProxy;

use crate::record::{now_ns, LineLog};

pub(crate) struct Proc {
    child: Child,
    pid: u32,
}

pub(crate) struct Slot {
    pub(crate) proxies: Vec<FaultProxy>,
    pub(crate) proc_: Mutex<Option<Proc>>,
    pub(crate) gen: AtomicUsize,
}

/// The worker processes and their proxies. Dropping it kills every worker still
/// running (also when the coordinator panics).
pub(crate) struct Fleet {
    /// Whether workers connect straight to the servers (the reconfigurable
    /// ensemble: its members change, and the workers' clients follow them)
    /// rather than through their proxies (a slot then has none).
    pub(crate) direct: bool,
    pub(crate) exe: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) stop_file: PathBuf,
    pub(crate) slots: Vec<Slot>,
    pub(crate) common: Vec<String>,
    pub(crate) log: Arc<LineLog>,
}

impl Fleet {
    /// Starts the worker of `slot` (its next generation), connected through
    /// its proxies, or straight to `servers` (a connect string: the servers
    /// now) when the fleet is [`Fleet::direct`]. Returns its pid.
    pub(crate) fn spawn(&self, slot: usize, servers: &str) -> io::Result<u32> {
        let s = &self.slots[slot];
        let gen = s.gen.fetch_add(1, Ordering::SeqCst);
        let log = self.dir.join(format!("worker-{slot}-{gen}.log"));
        let connect = if self.direct {
            servers.to_string()
        } else {
            s.proxies
                .iter()
                .map(FaultProxy::connect_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let child = Command::new(&self.exe)
            .arg("--worker")
            .args(["--slot", &slot.to_string()])
            .args(["--connect", &connect])
            .arg("--log")
            .arg(&log)
            .arg("--stop")
            .arg(&self.stop_file)
            .args(&self.common)
            .args(["--seed", &(gen as u64 * 7919 + slot as u64).to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(match std::env::var_os("ZK_CAMPAIGN_WORKER_STDERR") {
                Some(_) => Stdio::from(std::fs::File::create(
                    self.dir.join(format!("worker-{slot}-{gen}.err")),
                )?),
                None => Stdio::inherit(),
            })
            .spawn()?;
        let pid = child.id();
        *s.proc_.lock().unwrap_or_else(|e| e.into_inner()) = Some(Proc { child, pid });
        Ok(pid)
    }

    /// `kill -9` of the worker in `slot`; returns its pid. The time logged is
    /// taken after the process is reaped, so it is certainly dead by then.
    pub(crate) fn kill(&self, slot: usize) -> Option<u32> {
        let mut g = self.slots[slot].proc_.lock().unwrap_or_else(|e| e.into_inner());
        let mut p = g.take()?;
        let _ = p.child.kill();
        let _ = p.child.wait();
        self.log.line(&format!("K {slot} {} {}", p.pid, now_ns()));
        Some(p.pid)
    }

    /// Sends `sig` (`STOP`, `CONT`) to the worker in `slot`.
    pub(crate) fn signal(&self, slot: usize, sig: &str) -> io::Result<u32> {
        let pid = self
            .pid(slot)
            .ok_or_else(|| io::Error::other(format!("worker {slot} is not running")))?;
        send_signal(pid, sig)?;
        if sig == "STOP" {
            // kill(2) returns before every thread has stopped: wait until
            // they all have, so that the time logged after this is one at
            // which the worker can do nothing.
            wait_stopped(pid, Instant::now() + Duration::from_secs(5));
        }
        Ok(pid)
    }

    /// Lets every worker continue (after a fault that paused one) and opens
    /// every proxy.
    pub(crate) fn thaw_all(&self) {
        for (slot, s) in self.slots.iter().enumerate() {
            let _ = self.signal(slot, "CONT");
            for p in &s.proxies {
                p.freeze(false);
            }
        }
    }

    pub(crate) fn pid(&self, slot: usize) -> Option<u32> {
        self.slots[slot]
            .proc_
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|p| p.pid)
    }

    /// Waits for every worker to exit by itself (after the stop file), until
    /// `deadline`; kills and reports the rest. Returns the number of stragglers.
    pub(crate) fn wait_all(&self, deadline: Instant) -> usize {
        let mut stragglers = 0;
        for (slot, s) in self.slots.iter().enumerate() {
            let mut g = s.proc_.lock().unwrap_or_else(|e| e.into_inner());
            let Some(p) = g.as_mut() else { continue };
            let status = loop {
                match p.child.try_wait() {
                    Ok(Some(st)) => break Some(st),
                    Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                    _ => break None,
                }
            };
            match status {
                Some(st) => {
                    let code = st.code().map_or("signal".to_string(), |c| c.to_string());
                    self.log.line(&format!("W {} exit={code}", p.pid));
                }
                None => {
                    eprintln!("zk-campaign: worker {slot} (pid {}) did not stop; killing it", p.pid);
                    let _ = p.child.kill();
                    let _ = p.child.wait();
                    self.log.line(&format!("W {} straggler", p.pid));
                    stragglers += 1;
                }
            }
            *g = None;
        }
        stragglers
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for s in &self.slots {
            if let Some(mut p) = s.proc_.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
            for p in &s.proxies {
                p.freeze(false);
            }
        }
    }
}

/// Sends `sig` (`STOP`, `CONT`, ...) to process `pid` (`kill -SIG PID`).
pub(crate) fn send_signal(pid: u32, sig: &str) -> io::Result<()> {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if st.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("kill -{sig} {pid} failed: {st}")))
    }
}

/// Whether process `pid` is alive: it exists and has not exited (a zombie
/// waiting to be reaped has).
pub(crate) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| {
            st.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}

/// Polls `/proc/PID/task/*/stat` until every thread of `pid` is stopped (`T`
/// or `t`), or until `deadline`.
fn wait_stopped(pid: u32, deadline: Instant) -> bool {
    let dir = std::path::PathBuf::from(format!("/proc/{pid}/task"));
    loop {
        let all = std::fs::read_dir(&dir).ok().is_some_and(|entries| {
            entries.filter_map(Result::ok).all(|task| {
                std::fs::read_to_string(task.path().join("stat"))
                    .ok()
                    .and_then(|st| {
                        st.rsplit_once(')')
                            .map(|(_, rest)| rest.trim_start().starts_with(['T', 't']))
                    })
                    .unwrap_or(true)
            })
        });
        if all {
            return true;
        }
        if Instant::now() >= deadline || !dir.exists() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Lets a process stopped by SIGSTOP go on (SIGCONT); a process that is
/// gone meanwhile (a node stopped or killed by another part) is no error.
pub(crate) fn resume_pid(pid: u32) -> io::Result<()> {
    match send_signal(pid, "CONT") {
        Err(_) if !std::path::Path::new(&format!("/proc/{pid}")).exists() => Ok(()),
        r => r,
    }
}
