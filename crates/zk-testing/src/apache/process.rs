//! The operating system side of a server process: free ports, and signals sent with `kill`.

use std::fs;
use std::io;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::probe::POLL_INTERVAL;

/// Picks `n` distinct free ports on 127.0.0.1 (all listeners are held until every port is
/// picked, so they differ, then released).
pub(super) fn free_ports(n: usize) -> io::Result<Vec<u16>> {
    let listeners = hold_free_ports(n)?;
    ports_of(&listeners)
}

/// Binds `n` listeners on free ports of 127.0.0.1 and keeps them: whoever needs more ports
/// (the ensemble's link proxies) binds them while these are held, so no port is picked twice;
/// dropping the listeners frees the ports for the servers.
pub(super) fn hold_free_ports(n: usize) -> io::Result<Vec<TcpListener>> {
    (0..n).map(|_| TcpListener::bind("127.0.0.1:0")).collect()
}

/// The ports of `listeners`, in order.
pub(super) fn ports_of(listeners: &[TcpListener]) -> io::Result<Vec<u16>> {
    listeners.iter().map(|l| l.local_addr().map(|a| a.port())).collect()
}

/// Whether `e` says a server exited because one of its ports was taken (another process
/// bound it between the pick and the server's own bind).
pub(super) fn is_port_clash(e: &io::Error) -> bool {
    e.to_string().contains("Address already in use")
}

/// Waits (polling, until `deadline`) until `port` can be bound on 127.0.0.1 (with
/// SO_REUSEADDR, as the JVM does). Returns whether it became free.
pub(super) fn wait_port_free(port: u16, deadline: Instant) -> bool {
    loop {
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(POLL_INTERVAL);
    }
}

pub(super) fn send_signal(pid: u32, sig: &str) -> io::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("`kill -{sig} {pid}` failed: {status}")))
    }
}

/// Polls `/proc/PID/task/*/stat` until every thread of `pid` is in state `T` (stopped) or `t`,
/// or until `deadline`. Returns whether they all stopped (`false` too where `/proc` is absent).
pub(super) fn wait_all_threads_stopped(pid: u32, deadline: Instant) -> bool {
    let task_dir = PathBuf::from(format!("/proc/{pid}/task"));
    loop {
        let all_stopped = fs::read_dir(&task_dir).ok().is_some_and(|entries| {
            entries.filter_map(Result::ok).all(|task| {
                fs::read_to_string(task.path().join("stat"))
                    .ok()
                    .and_then(|stat| {
                        stat.rsplit_once(')')
                            .map(|(_, rest)| rest.trim_start().starts_with(['T', 't']))
                    })
                    .unwrap_or(true) // a thread that just exited does not count
            })
        });
        if all_stopped {
            return true;
        }
        if Instant::now() >= deadline || !task_dir.exists() {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct() {
        let mut ports = free_ports(9).unwrap();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 9);
    }
}
