//! The guarded resources: the znodes holders write to through transactions
//! guarded by their lock (see `worker.rs`), created before the run and read
//! back after it into `resource.log` for the checker (rule 7).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::Duration;

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;

use crate::paths::{resource_path, ELECTION_PATH, MUTEX_PATH, RW_PATH, SEM_PATH};

/// The locks (and the election, whose leaders write with their term) with a resource.
const LOCKS: [&str; 4] = [MUTEX_PATH, RW_PATH, SEM_PATH, ELECTION_PATH];

/// Creates the persistent node `root` (an existing one is kept): the
/// subtree a kind works under.
pub(crate) fn ensure_root(cs: &str, root: &str) -> Result<(), String> {
    let c = client(cs)?;
    let r = match c.check_exists(root) {
        Ok(Some(_)) => Ok(()),
        _ => c
            .create()
            .creating_parents_if_needed()
            .for_path(root)
            .map(|_| ())
            .map_err(|e| format!("{root}: {e}")),
    };
    c.close();
    r
}

/// A coordinator-side client: the campaign's session and retry settings,
/// connected (the resource check's and the cache kind's reads).
pub(crate) fn client(cs: &str) -> Result<CuratorFramework, String> {
    let c = unconnected_client(cs).map_err(|e| e.to_string())?;
    c.block_until_connected(Duration::from_secs(30))
        .map_err(|e| e.to_string())?;
    Ok(c)
}

/// A coordinator-side client, built but not waited for (the leak check
/// waits for it each time it lists).
pub(crate) fn unconnected_client(cs: &str) -> zk_framework::Result<CuratorFramework> {
    CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(5))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 5))
        .build()
}

/// Creates the resource of every lock (persistent; an existing one is kept).
pub(crate) fn prepare(cs: &str) -> Result<(), String> {
    let c = client(cs)?;
    let r = LOCKS.iter().try_for_each(|lock| {
        let path = resource_path(lock);
        match c.check_exists(&path) {
            Ok(Some(_)) => Ok(()),
            _ => c
                .create()
                .creating_parents_if_needed()
                .for_path(&path)
                .map(|_| ())
                .map_err(|e| format!("{path}: {e}")),
        }
    });
    c.close();
    r
}

/// One resource node's name, `t<token>-<pid>-<thread>-<attempt>-<seq>`, as
/// `(seq, token, pid, thread, attempt)`.
fn parse(name: &str) -> Option<(u64, i64, u32, u32, u64)> {
    let f: Vec<&str> = name.strip_prefix('t')?.split('-').collect();
    if f.len() != 5 {
        return None;
    }
    Some((
        f[4].parse().ok()?,
        f[0].parse().ok()?,
        f[1].parse().ok()?,
        f[2].parse().ok()?,
        f[3].parse().ok()?,
    ))
}

/// Lists every resource and writes `resource.log` in `dir` (`V lock seq token
/// pid thread attempt` per write, in order; a lone `V` when there is none).
/// Returns the number of writes.
pub(crate) fn read_back(cs: &str, dir: &Path) -> Result<usize, String> {
    let c = client(cs)?;
    let mut out = String::from("V\n");
    let mut n = 0;
    for lock in LOCKS {
        let kids = c.get_children(&resource_path(lock)).map_err(|e| e.to_string());
        let kids = match kids {
            Ok(k) => k,
            Err(e) => {
                c.close();
                return Err(e);
            }
        };
        let mut writes: Vec<_> = kids.iter().filter_map(|k| parse(k)).collect();
        writes.sort_unstable();
        for (seq, token, pid, thr, att) in writes {
            let _ = writeln!(out, "V {lock} {seq} {token} {pid} {thr} {att}");
            n += 1;
        }
    }
    c.close();
    fs::write(dir.join("resource.log"), out).map_err(|e| e.to_string())?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_resource_node_name() {
        assert_eq!(
            parse("t4294967310-1234-3-17-0000000042"),
            Some((42, 4_294_967_310, 1234, 3, 17))
        );
        assert_eq!(parse("x1-2-3-4-5"), None);
        assert_eq!(parse("t1-2-3-4"), None);
    }
}
